-- error_classes_spec.lua -- issue 10 acceptance 4: the same peer behaviour
-- always lands in the same error class (docs/run-object.md, `errors`).
--
--   * a server that closes in order (FIN) after N echoes, while requests
--     are in flight: the client meets its FIN on a read or, by timing, the
--     RST its kernel sends after the FIN on a write (EPIPE); every run
--     counts one class, ECLOSED (closed by peer), once per close (a
--     closed connection is reopened) -- 10 runs in callback mode, 5 in
--     coroutine mode;
--   * a client that resets a serve connection mid-stream (SO_LINGER 0), on
--     every serve protocol, and for tls, https and wss also after sending
--     its close_notify (what a TLS library closing with SO_LINGER 0 does):
--     24 tries each, every one a reset (server_resets), never a server
--     error.
--
-- Fixtures: spec/fixtures/misbehaving/tcp_fin_after.py,
-- spec/fixtures/regress/reset_midstream_client.py.
-- Needs: /usr/bin/python3 ($ARKBENCH_PYTHON overrides it).
-- Runtime: ~30 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")
local peers = require("helpers.peers")

local ROOT, PY, cjson = ark.ROOT, peers.PY, ark.cjson
local brief, assert_identity = ark.brief, ark.assert_identity

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

---------------------------------------------------------------------------
describe("a server that closes in order (FIN) after 50 echoes", function()
    local CLIENTS = 4
    local by_exec = {}

    setup(function()
        for _, m in ipairs({ { "callback", 10 }, { "coroutine", 5 } }) do
            local res, peer = peers.scenario_against_python(ROOT .. "/spec/fixtures/misbehaving/tcp_fin_after.py",
                function(port)
                    return string.format([[
return { name = "fin_after", protocol = "tcp", framing = "raw", target = "127.0.0.1:%d", payload = 64,
         execution = "%s", clients = %d, window = 8, warmup = 0, duration = 0.3, timeout = 1,
         repetitions = %d }
]], port, m[1], CLIENTS, m[2])
                end, { name = "fin_after_" .. m[1], settle = 0.2 })
            by_exec[m[1]] = { res = res, peer = peer, n = m[2] }
        end
    end)

    for _, exec in ipairs({ "callback", "coroutine" }) do
        it(exec .. ": every run counts one class, ECLOSED, once per close", function()
            local t = by_exec[exec]
            assert.are.equal(t.n, #t.res.runs, "runs; stderr:\n" .. t.res.stderr)
            local seen, closed = {}, 0
            for _, r in ipairs(t.res.runs) do
                assert.are.same({ "ECLOSED" }, ark.keys(r.errors), brief(r))
                -- each connection at least once (a closed one is reopened,
                -- and closed again after its 50 echoes)
                assert.is_true(r.errors.ECLOSED >= CLIENTS, brief(r))
                closed = closed + r.errors.ECLOSED
                assert.are.same({}, r.local_errors, brief(r))
                assert.is_truthy(r.error_reasons.ECLOSED, brief(r))
                assert.is_true(r.message_errors > 0, "no request was in flight at the FIN: " .. brief(r))
                assert_identity(r)
                for k in pairs(r.errors) do seen[k] = true end
            end
            assert.are.same({ ECLOSED = true }, seen)
            -- every close counted was the fixture's FIN (one may come after
            -- a run has stopped counting)
            assert.is_true(closed <= t.peer.fins, closed .. " closes counted; " .. cjson.encode(t.peer))
            assert.is_true(t.peer.echoed >= 50 * t.peer.fins, cjson.encode(t.peer))
        end)
    end
end)

---------------------------------------------------------------------------
describe("a client that resets a serve connection mid-stream", function()
    local TRIES = 24
    local cases = {
        { "tcp" }, { "ws" }, { "http" },
        { "tls" }, { "https" }, { "wss" },
        { "tls", "--notify" }, { "https", "--notify" }, { "wss", "--notify" },
    }
    local got = {}

    setup(function()
        for i, c in ipairs(cases) do
            local srv = peers.serve(c[1], nil, "serve " .. c[1] .. (c[2] and " " .. c[2] or ""))
            local port = peers.wait_listening(srv)
            local argv = { PY, ROOT .. "/spec/fixtures/regress/reset_midstream_client.py", "127.0.0.1",
                           tostring(port), c[1], tostring(TRIES), "64" }
            if c[2] then argv[#argv + 1] = c[2] end
            local rc, out, err = proc.run_cmd(argv, { limit = 60 })
            proc.sleep(0.3) -- serve handles the last connections
            got[i] = { rc = rc, out = out, err = err, serve = proc.stop(srv), srv = srv }
        end
    end)

    for i, c in ipairs(cases) do
        local name = c[1] .. (c[2] and " (close_notify first)" or "")
        it(name .. ": " .. TRIES .. " tries, every one a reset, never a server error", function()
            local g = got[i]
            assert.are.equal(0, g.rc, "client exit code; stderr:\n" .. g.err)
            local cl = peers.last_json(g.out, "the client's output")
            assert.are.equal(TRIES, cl.rounds, g.out)
            assert.are.equal(TRIES, cl.replied, "rounds that saw a reply before the reset: " .. g.out)
            local j = peers.last_json(g.serve, "serve's output; stderr:\n" .. proc.stderr_of(g.srv))
            assert.are.equal(TRIES, j.connections, cjson.encode(j))
            assert.are.equal(TRIES, j.resets, cjson.encode(j))
            assert.are.same({}, j.errors, cjson.encode(j))
            assert.is_true(j.ok, cjson.encode(j))
        end)
    end
end)
