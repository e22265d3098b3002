-- sharing_spec.lua -- workload modules people share (issue 24,
-- docs/lua-api.md "Sharing a workload"): scenarios/custom/redis_mix.lua, a
-- 90/10 GET/SET mix on arkbench.proto.resp in under 15 lines, runs tagged
-- against a redis-server started here on loopback, and its per-tag counts
-- (sent + warmup_sent, every message it sent) equal redis's own INFO
-- commandstats deltas; a scenario that requires a module from its own
-- folder and one from ARKBENCH_PATH runs in both Lua forms (the worker
-- and every loop find them). Runtime: ~10 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local ark = require("helpers.arkbench")
local files = require("helpers.files")
local proc = require("helpers.proc")
local peers = require("helpers.peers")

local shq, sh_out = files.shq, proc.sh_out

teardown(function()
    peers.stop_started()
    files.remove_tmpdirs()
end)

-- cmdstat_<name> calls from INFO commandstats
local function commandstats(port)
    local text = sh_out("redis-cli -p " .. port .. " INFO commandstats")
    local out = {}
    for name, calls in text:gmatch("cmdstat_(%w+):calls=(%d+)") do out[name] = tonumber(calls) end
    return out
end

local function tag(r, name)
    for k, t in pairs(r.tags or {}) do
        if k == name then return t end
    end
    error("no tag " .. name .. " in " .. ark.brief(r))
end

describe("sharing a workload", function()
    it("redis_mix.lua: 90/10 GET/SET on arkbench.proto.resp, per-tag counts equal INFO commandstats", function()
        assert.is_true(peers.have("redis-server") and peers.have("redis-cli"),
            "redis-server and redis-cli are needed (apt-get install redis-server)")
        local lines = 0
        for _ in files.read_file(ark.ROOT .. "/scenarios/custom/redis_mix.lua"):gmatch("[^\n]*\n") do lines = lines + 1 end
        assert.is_true(lines <= 15, "redis_mix.lua has " .. lines .. " lines")
        local d = files.tmpdir("_share")
        local port = peers.start_on_free_port(function(p)
            return "redis-server --port " .. p .. " --bind 127.0.0.1 --save '' --appendonly no"
                .. " --daemonize no --dir " .. shq(d)
        end, d .. "/redis.log")
        local before = commandstats(port)
        local rc, so, se = proc.run_cmd({ ark.BIN, "run", "scenarios/custom/redis_mix.lua", "--set", "warmup=0.05", "--set", "duration=0.3",
            "--set", "target=127.0.0.1:" .. port, "--set", "repetitions=2", "--out", d .. "/out" }, { limit = 90 })
        assert.equals(0, rc, so .. se)
        local after = commandstats(port)
        local runs = ark.read_runs(d .. "/out/runs.jsonl")
        assert.equals(2, #runs)
        local sent = { get = 0, set = 0 }
        for _, r in ipairs(runs) do
            assert.equals("ok", r.status, ark.brief(r))
            ark.assert_identity(r)
            for name in pairs(sent) do
                local t = tag(r, name)
                sent[name] = sent[name] + t.sent + t.warmup_sent
                assert.is_true(t.completed > 0, name)
            end
            -- one message in ten is a SET: a connection's run of n messages
            -- holds n/10 of them rounded up or down, so the 16 connections'
            -- sum is within 16 of a tenth (warm-up and measure together)
            local g = tag(r, "get").sent + tag(r, "get").warmup_sent
            local s = tag(r, "set").sent + tag(r, "set").warmup_sent
            assert.is_true(s > 0 and math.abs(s - (g + s) / 10) <= 16, g .. " gets, " .. s .. " sets")
        end
        assert.equals((after.get or 0) - (before.get or 0), sent.get)
        assert.equals((after.set or 0) - (before.set or 0), sent.set)
    end)

    it("finds a module next to the scenario and one in ARKBENCH_PATH, in the worker and every loop", function()
        local d = files.tmpdir("_share_mod")
        local lib = files.tmpdir("_share_lib")
        files.write_file(d .. "/my_framing.lua", [[
return {
    message = function(i) return string.format("%07d\n", i % 10000000) end,
    -- a line echo: the server side of the same workload
    server = function(conn)
        while true do
            local line = conn:receive("*l")
            if not line then return end
            conn:send(line .. "\n")
        end
    end,
}
]])
        assert(os.execute("mkdir -p " .. shq(lib .. "/team")))
        files.write_file(lib .. "/team/checks.lua", [[
return { line = function(buf) local e = buf:find("\n", 1, true); return e end }
]])
        files.write_file(d .. "/shared.lua", [[
local framing = require("my_framing")
local checks = require("team.checks")
return {
    { name = "shared", execution = "lua", label = "light", clients = 2, window = 2,
      topology = "sharded:2", message = framing.message, expect = checks.line, server = framing.server },
    { name = "shared", execution = "lua", label = "full", clients = 2, topology = "sharded:2",
      server = framing.server,
      client = function(conn)
          local i = 0
          while true do
              i = i + 1
              local r = conn:call(framing.message(i), checks.line)
              if not r then return end
          end
      end },
}
]])
        -- from another folder, so that neither module is found from the cwd
        local rc, so, se = proc.run_cmd({ "env", "ARKBENCH_PATH=/nonexistent::" .. lib, ark.BIN, "run",
            d .. "/shared.lua", "--quick", "--out", d .. "/out" }, { limit = 60, cwd = "/" })
        assert.equals(0, rc, so .. se)
        local runs = ark.read_runs(d .. "/out/runs.jsonl")
        assert.equals(2, #runs)
        for _, r in ipairs(runs) do
            assert.equals("ok", r.status, ark.brief(r))
            assert.is_true(r.completed > 0)
        end
        -- without ARKBENCH_PATH team.checks is not found: exit 2, the module named
        rc, so, se = proc.run_cmd({ "env", "-u", "ARKBENCH_PATH", ark.BIN, "run", d .. "/shared.lua", "--quick",
            "--out", d .. "/out2" }, { limit = 60, cwd = "/" })
        assert.equals(2, rc, so .. se)
        assert.truthy(se:find("module 'team.checks' not found", 1, true), se)
    end)
end)
