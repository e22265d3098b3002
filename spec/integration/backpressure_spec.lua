-- backpressure_spec.lua -- plain tcp's own socket IO (core/io/sockio.c) under
-- peers that do not keep up or go away, found by a break-it pass:
--   1. a client that floods `serve` and never reads: the server's memory
--      stays bounded (it stops reading while its unsent replies and, in
--      pool:N, its requests waiting for the work pool are over the bound
--      of core/io/sockio.h), another client
--      is still served, and the flooder's final reset is counted under
--      `resets`, not as a server error;
--   2. a server that resets after its last echoes reached the client: the
--      client still counts every reply that arrived (a failed send used to
--      end the connection first), in callback and coroutine execution;
--   3. a client that half-closes after its requests: serve still sends
--      every reply (pool:N used to close on the EOF with work in the pool);
--      so does the coroutine server when the FIN comes with ~1.8 MiB of
--      replies still in its pending output (it closed at once, dropping
--      them, with nothing counted).
--
-- Needs: /usr/bin/python3 ($ARKBENCH_PYTHON overrides it).
-- Runtime: ~30 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")
local peers = require("helpers.peers")

local ROOT, PY, cjson = ark.ROOT, peers.PY, ark.cjson
local assert_identity, brief = ark.assert_identity, ark.brief

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

local FIX = ROOT .. "/spec/fixtures/regress"
local MiB = 1024 * 1024

-- 1: serve meets the flooder's reset when it reads again: at once in
-- sharded:1, and in pool:2 once the pool has answered the requests held
-- when reading stopped down to the low-water mark (io/sockio.h: 4 MiB
-- down to 1 MiB, ~3000 requests at --work 100000, ~0.4 s on an idle
-- machine): `settle` leaves it 2 s.  With empty requests (--empty) each
-- held byte is one pool job: what the pool keeps per job counts too
-- (AB__POOL_JOB_BYTES), where 4 MiB of held bytes alone was 4 million
-- jobs (~75 MiB); that case checks the memory only (a million one-byte
-- requests through the pool take the loop seconds, so the probe and the
-- reset are left to the cases above).
for _, case in ipairs({ { "sharded:1", "0", 0.3 }, { "pool:2", "100000", 2 }, { "pool:2", "1000", 2, "--empty" } }) do
    local topo, work, settle, empty = case[1], case[2], case[3], case[4]
    describe("1. a client that never reads" .. (empty and " (empty requests)" or "") .. ", against serve --topology "
        .. topo .. " --work " .. work, function()
        local flood, serve_json

        setup(function()
            local srv = peers.serve("tcp", { "--topology", topo, "--work", work })
            local port = peers.wait_listening(srv)
            local rc, out, err = proc.run_cmd({ PY, FIX .. "/flood_client.py", "127.0.0.1", tostring(port), "3",
                empty }, { limit = 30 })
            assert.are.equal(0, rc, "flood_client.py failed:\n" .. err)
            flood = peers.last_json(out, "flood_client.py")
            proc.sleep(settle)
            serve_json = peers.last_json(proc.stop(srv), "serve")
        end)

        it("the flooder got its bytes in, so the server was pushed", function()
            assert.is_true(flood.sent_bytes > 1 * MiB, cjson.encode(flood))
        end)

        it("serve's memory stays bounded (peak RSS < 64 MiB)", function()
            assert.is_true(serve_json.rss_peak_bytes < 64 * MiB,
                "rss_peak_bytes " .. tostring(serve_json.rss_peak_bytes) .. " after the flooder sent "
                .. tostring(flood.sent_bytes) .. " bytes")
        end)

        if empty then return end

        it("another client is served meanwhile", function()
            assert.is_true(flood.probe_ok, cjson.encode(flood))
            assert.is_true(flood.probe_s < 2, cjson.encode(flood))
        end)

        it("the flooder's reset is counted as a reset, not a server error", function()
            assert.is_true(serve_json.ok, cjson.encode(serve_json))
            assert.are.same({}, serve_json.errors, cjson.encode(serve_json))
            assert.is_true(serve_json.resets >= 1, cjson.encode(serve_json))
        end)
    end)
end

for _, case in ipairs({ { "sharded:1", "0" }, { "pool:2", "100000" } }) do
    local topo, work = case[1], case[2]
    describe("3. a client that half-closes after its requests (echo ... | nc), serve --topology " .. topo, function()
        it("gets every reply before the server closes, for 1 and 3000 requests", function()
            local srv = peers.serve("tcp", { "--topology", topo, "--work", work })
            local port = peers.wait_listening(srv)
            for _, n in ipairs({ 1, 3000 }) do
                local rc, out, err = proc.run_cmd({ PY, FIX .. "/halfclose_client.py", "127.0.0.1", tostring(port),
                    tostring(n) }, { limit = 30 })
                assert.are.equal(0, rc, "halfclose_client.py failed:\n" .. err)
                local c = peers.last_json(out, "halfclose_client.py")
                assert.are.equal(c.sent_bytes, c.echoed_bytes, n .. " requests: " .. cjson.encode(c))
                assert.is_true(c.intact, n .. " requests: " .. cjson.encode(c))
            end
            local j = peers.last_json(proc.stop(srv), "serve")
            assert.is_true(j.ok, cjson.encode(j))
            assert.are.equal(3001, j.messages, cjson.encode(j))
        end)
    end)
end

-- 6000 x 1003 B: more than the client's 64 KiB receive buffer and the
-- server's kernel send buffer (at most net.ipv4.tcp_wmem's 4 MiB) hold,
-- less than the 4 MiB bound that stops the server's reads, so the server
-- reads the FIN with replies in its own pending output; the client reads
-- only 0.3 s after its half-close (or after 5 s of sending, should the
-- server have stopped reading first: then the case proves less, but holds).
-- The same over http (the stream driver's server, and the coroutine's
-- codec path): it closed at once on the FIN, dropping what was unsent.
for _, pe in ipairs({ { "callback", "tcp" }, { "coroutine", "tcp" }, { "callback", "http" },
                      { "coroutine", "http" } }) do
    local exec, proto = pe[1], pe[2]
    describe("3. a half-closed client whose replies wait in the server's output, " .. proto
             .. ", execution = " .. exec, function()
        it("gets every reply before the server closes", function()
            local srv = proc.spawn({ ark.BIN, "dev-lua", FIX .. "/serve_exec.lua", exec, proto, "sharded:1", "0" },
                { name = exec .. " server" })
            local port = peers.wait_listening(srv)
            local rc, out, err = proc.run_cmd({ PY, FIX .. "/halfclose_client.py", "127.0.0.1", tostring(port),
                "6000", "0.3", proto == "http" and "http" or "length" }, { limit = 30 })
            assert.are.equal(0, rc, "halfclose_client.py failed:\n" .. err)
            local c = peers.last_json(out, "halfclose_client.py")
            assert.are.equal(c.sent_bytes, c.echoed_bytes, cjson.encode(c))
            assert.is_true(c.intact, cjson.encode(c))
            local j = peers.last_json(proc.stop(srv), srv.name)
            assert.is_true(j.ok, cjson.encode(j))
            assert.are.equal(6000, j.messages, cjson.encode(j))
        end)
    end)
end

for _, exec in ipairs({ "callback", "coroutine" }) do
    describe("2. a server that resets after its last echoes arrived, execution = " .. exec, function()
        local res, peer

        setup(function()
            local srv = proc.spawn({ PY, FIX .. "/echo_then_reset.py", "0.3" }, { name = "echo_then_reset.py" })
            local port = peers.wait_listening(srv)
            res = ark.run_scenario(string.format([[
return { name = "echo_then_reset", protocol = "tcp", framing = "raw", target = "127.0.0.1:%d",
         payload = 1048576, clients = 2, window = 16, warmup = 0, duration = 3, timeout = 5,
         execution = %q, repetitions = 1 }
]], port, exec), { name = "echo_then_reset_" .. exec })
            proc.sleep(0.3)
            peer = peers.last_json(proc.stop(srv), srv.name)
        end)

        it("counts every echoed reply as completed, then the reset as the error", function()
            assert.are.equal(1, #res.runs, "runs; stderr:\n" .. res.stderr)
            local r = res.runs[1]
            assert.is_true(peer.echoed >= 2, "the fixture echoed too little: " .. cjson.encode(peer))
            assert.are.equal(peer.echoed, r.completed + r.drained, brief(r) .. "; fixture: " .. cjson.encode(peer))
            assert.are.equal("degraded", r.status, brief(r))
            local resets = (r.errors.ECONNRESET or 0) + (r.errors.EPIPE or 0)
            assert.is_true(resets >= 1, brief(r))
            assert_identity(r)
        end)
    end)
end
