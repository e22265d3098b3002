-- shared_spec.lua -- shared:N, one reactor served by N threads (issue 13,
-- docs/topologies.md), end to end:
--   * every stream protocol x {callback, coroutine} on shared:2 and
--     shared:4 with --quick (1 x 1 and 16 x 16; tcp with both framings):
--     every run ok, the identity holds, and the merged RTT histogram
--     counts every completed and drained reply, whichever thread completed
--     it (acceptance 2; TLS, WebSocket and HTTP state travels with the
--     connection, a coroutine's stack with its connection's events);
--   * the stress case, callback and coroutine: 64 connections x window 16
--     on shared:4 for 5 s, every echoed byte checked: no ESEQ, nothing
--     lost or duplicated (the server answered exactly what completed)
--     (acceptance 3);
--   * `serve --topology shared:2` answering a client run against it, and
--     placement = "split" on shared:2;
--   * what shared:N does not run (udp, lua execution) is refused before
--     anything runs, naming file, line, key.
--
-- Runtime: ~60 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")
local peers = require("helpers.peers")
local core = require("arkbench.core")

local run_scenario, assert_identity, brief = ark.run_scenario, ark.assert_identity, ark.brief

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

-- Every run ok, the identity, and the histogram's count; every case once.
local function check_runs(res, want)
    assert.are.equal(want, #res.runs, "runs; stderr:\n" .. res.stderr)
    local seen = {}
    for _, r in ipairs(res.runs) do
        assert.is_nil(seen[r.case_id], r.case_id)
        seen[r.case_id] = true
        assert.is_true(r.ok, brief(r))
        assert_identity(r)
        assert.are.equal(0, r.message_errors, brief(r))
        assert.are.equal(0, r.unfinished, brief(r))
        assert.is_true(r.completed > 0, brief(r))
        local h = assert(core.hist_summary(r.rtt_histogram))
        assert.are.equal(r.completed + r.drained, h.count, r.case_id .. ": histogram count")
        assert.are.equal("shared", r.model, brief(r))
    end
end

-- Each execution once per protocol x load x topology (x framing).
local function check_executions(res, per)
    local n = { callback = 0, coroutine = 0 }
    for _, r in ipairs(res.runs) do n[r.case.execution] = n[r.case.execution] + 1 end
    assert.are.same({ callback = per, coroutine = per }, n)
end

describe("shared:2 and shared:4, callback and coroutine (acceptance 2)", function()
    it("runs tcp 1x1 and 16x16 with both framings; identity and merged histograms hold", function()
        local res = run_scenario([[
return { name = "shared_tcp", protocol = "tcp", payload = 1024, framing = { "length", "raw" },
         load = { { clients = 1, window = 1 }, { clients = 16, window = 16 } },
         topology = { "shared:2", "shared:4" }, execution = { "callback", "coroutine" } }
]], { name = "shared_tcp", args = { "--quick" }, limit = 120 })
        check_runs(res, 16)
        check_executions(res, 8)
        for _, r in ipairs(res.runs) do
            local _, n = r.case.topology:match("^(%l+):(%d+)$")
            assert.are.equal(tonumber(n), r.loops, brief(r))
        end
    end)

    it("runs tls, ws, wss, http and https at 1x1 and 16x16, both executions", function()
        local res = run_scenario([[
return { name = "shared_layers", protocol = { "tls", "ws", "wss", "http", "https" }, payload = 1024,
         load = { { clients = 1, window = 1 }, { clients = 16, window = 16 } },
         topology = { "shared:2", "shared:4" }, execution = { "callback", "coroutine" } }
]], { name = "shared_layers", args = { "--quick" }, limit = 240 })
        check_runs(res, 40)
        check_executions(res, 20)
    end)
end)

describe("the shared:4 stress case (acceptance 3)", function()
    it("runs 64 connections x window 16 for 5 s with every byte checked: no ESEQ, none lost", function()
        local res = run_scenario([[
return { name = "shared_stress", protocol = "tcp", payload = 256, clients = 64, window = 16,
         topology = "shared:4", execution = { "callback", "coroutine" }, warmup = 0.2,
         duration = 5, timeout = 5, repetitions = 1 }
]], { name = "shared_stress", limit = 90 })
        check_runs(res, 2)
        check_executions(res, 1)
        for _, r in ipairs(res.runs) do
            assert.are.same({}, r.errors, brief(r))
            assert.are.equal(0, r.timed_out, brief(r))
            assert.is_true(r.completed > 10000, brief(r))
            -- nothing lost or duplicated: the server answered exactly the
            -- messages the clients completed (every reply checked byte for
            -- byte, in order: a lost or doubled one is an ESEQ)
            assert.are.equal(r.completed + r.drained + r.warmup_completed, r.server_messages, brief(r))
            assert.are.equal(64, r.server_connections, brief(r))
        end
    end)
end)

describe("serve --topology shared:2", function()
    it("serves a client run against it, every byte checked", function()
        local srv = peers.serve("tcp", { "--topology", "shared:2" })
        local port = peers.wait_listening(srv)
        local res = run_scenario(string.format([[
return { name = "shared_serve", protocol = "tcp", payload = 512, clients = 8, window = 8,
         target = "127.0.0.1:%d", warmup = 0.05, duration = 0.3, repetitions = 1 }
]], port), { name = "shared_serve" })
        proc.stop(srv)
        assert.are.equal(1, #res.runs, res.stderr)
        assert.is_true(res.runs[1].ok, brief(res.runs[1]))
        assert_identity(res.runs[1])
    end)

    it("gives back the descriptor of every connection that ended (its home closes it)", function()
        local srv = peers.serve("tcp", { "--topology", "shared:2" })
        local port = peers.wait_listening(srv)
        -- the serve process itself (srv.pid is its `timeout` wrapper)
        local spid = proc.sh_out("pgrep -P " .. srv.pid):match("(%d+)")
        assert.truthy(spid, "serve's pid")
        local function nfd() return tonumber(proc.sh_out("ls /proc/" .. spid .. "/fd | wc -l")) end
        local text = string.format([[
return { name = "shared_fds", protocol = "tcp", payload = 256, clients = 32, window = 4,
         target = "127.0.0.1:%d", warmup = 0, duration = 0.2, repetitions = 1 }
]], port)
        local function one()
            local res = run_scenario(text, { name = "shared_fds" })
            assert.are.equal(1, #res.runs, res.stderr)
            assert.is_true(res.runs[1].ok, brief(res.runs[1]))
            proc.sleep(0.3) -- the server sees each client's close
        end
        one()
        local before = nfd()
        -- 3 x 32 more connections, about half of them ended on another
        -- thread than the one that accepted them
        for _ = 1, 3 do one() end
        local after = nfd()
        proc.stop(srv)
        assert.is_true(after <= before + 2, "descriptors: " .. before .. " after the first run, "
            .. after .. " after 96 more connections")
    end)

    it("runs placement = split on shared:2 (server and client each one reactor, 2 threads)", function()
        local res = run_scenario([[
return { name = "shared_split", protocol = { "tcp", "tls" }, payload = 512, clients = 8, window = 8,
         topology = "shared:2", placement = "split", warmup = 0.05, duration = 0.3,
         repetitions = 1 }
]], { name = "shared_split" })
        assert.are.equal(2, #res.runs, res.stderr)
        for _, r in ipairs(res.runs) do
            assert.is_true(r.ok, brief(r))
            assert_identity(r)
            assert.are.equal("shared", r.model, brief(r))
            assert.is_true(r.server.messages >= r.completed, brief(r))
        end
    end)
end)

describe("what shared:N does not run", function()
    local function refused(text)
        local path = files.tmpdir("_shared") .. "/s.lua"
        files.write_file(path, text)
        local rc, _, err = ark.run({ "run", path, "--list" })
        return rc, err, path
    end

    it("refuses execution = lua on shared:2 before running, naming file, line and key", function()
        local rc, err, path = refused([[
return { name = "x", protocol = "tcp", execution = "lua",
         client = function(conn) end,
         topology = "shared:2" }
]])
        assert.are.equal(2, rc)
        assert.truthy(err:find(path .. ':3: key \'topology\': topology = "shared:2" runs execution'
            .. ' callback over tcp, ws, tls, wss, http, https, h2 or h2c; execution coroutine over tcp, ws, tls,'
            .. ' wss, http or https only, not execution = "lua" over protocol tcp; expected sharded:2 or pool:2 for it',
            1, true), err)
    end)

    it("refuses udp, and lets shared:1 (one thread) run it; accepts coroutine", function()
        local rc, err = refused('return { name = "x", protocol = "udp", topology = "shared:4" }\n')
        assert.are.equal(2, rc)
        assert.truthy(err:find('not execution = "callback" over protocol udp', 1, true), err)
        rc, err = refused('return { name = "x", execution = "coroutine", topology = "shared:2" }\n')
        assert.are.equal(0, rc, err)
        rc = refused('return { name = "x", protocol = "udp", topology = "shared:1" }\n')
        assert.are.equal(0, rc)
    end)
end)
