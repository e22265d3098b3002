-- bench_scripts_spec.lua -- issue 15 acceptance 5's scripts run (--quick:
-- one round, 0.3 s per run): bench/churn.sh (arkbench K = 1 vs
-- build/crr_loop), bench/coro_scale.sh (coroutine vs callback, 2000 x
-- 64 KiB) and bench/classic_servers.sh (one client, arkbench serve vs the
-- Asio raw server; pending without asio_echo), and issue 12's
-- bench/open_loop.sh (send lag, open vs closed CPU per round trip). Each must exit 0, print
-- both sides' numbers, a ratio line with its goal, keep summary.txt equal
-- to what it printed, and stop its servers (each ends with its JSON line). No assertion on speed.
--
-- Runtime: ~10 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local ark = require("helpers.arkbench")
local files = require("helpers.files")
local proc = require("helpers.proc")

local BUILD = os.getenv("ARKBENCH_BUILD_DIR")
    or (os.getenv("ARKBENCH_BIN") and os.getenv("ARKBENCH_BIN"):match("^(.*)/[^/]+$"))
    or (files.ROOT .. "/build")
local HAVE_ASIO = proc.sh_ok("test -x " .. files.shq(BUILD .. "/asio_echo"))

teardown(files.remove_tmpdirs)

local function run(script)
    local dir = files.tmpdir("_bench") .. "/out"
    local rc, out, err = proc.run_cmd({ "bash", "bench/" .. script, "--quick", "--out", dir },
        { limit = 240, env = { "ARKBENCH_BUILD_DIR=" .. BUILD } })
    return rc, out, err, dir
end

-- the verdict line: "NAME: R (goal >= G): PASS|BELOW"; returns R
local function verdict(out, name, goal)
    local r = out:match("\n" .. name:gsub("%p", "%%%0") .. ": (%d+%.%d%d) %(goal >= "
        .. goal:gsub("%p", "%%%0") .. "%): [PASSBELOW]+\n")
    assert.truthy(r, "no verdict for " .. name .. " in:\n" .. out)
    return tonumber(r)
end

-- the servers were stopped (SIGTERM by pid) and ended in order: each
-- server-NAME.log ends with the JSON line a server prints when it ends
local function servers_ended(dir, names)
    for _, name in ipairs(names) do
        local log = files.read_file(dir .. "/server-" .. name .. ".log") or ""
        assert.truthy(log:match("\n{[^\n]*}\n?$"), name .. ": " .. log)
    end
end

describe("bench/churn.sh --quick", function()
    it("prints arkbench's and the raw loop's connections/s and their ratio", function()
        local rc, out, err, dir = run("churn.sh")
        assert.equals(0, rc, err .. out)
        local a = out:match("\nround 1: [^\n]-arkbench (%d+) conn/s;")
        local r = out:match("\nround 1: [^\n]-raw loop (%d+) conn/s;")
        assert.truthy(a and r, out)
        assert.is_true(tonumber(a) > 0 and tonumber(r) > 0, out)
        local ratio = verdict(out, "arkbench/raw loop", "0.8")
        assert.near(tonumber(a) / tonumber(r), ratio, 0.006)
        assert.equals(out, files.read_file(dir .. "/summary.txt"))
        servers_ended(dir, { "srv" })
    end)
end)

describe("bench/coro_scale.sh --quick", function()
    it("prints callback and coroutine round trips/s and coroutine/callback", function()
        local rc, out, err, dir = run("coro_scale.sh")
        assert.equals(0, rc, err .. out)
        local cb = out:match("callback (%d+) rt/s %(RSS peak %d+ MiB%)")
        local co = out:match("coroutine (%d+) rt/s %(RSS peak %d+ MiB%)")
        assert.truthy(cb and co, out)
        local ratio = verdict(out, "coroutine/callback", "0.8")
        assert.near(tonumber(co) / tonumber(cb), ratio, 0.006)
        assert.equals(out, files.read_file(dir .. "/summary.txt"))
    end)
end)

describe("bench/open_loop.sh --quick", function()
    it("prints each open-loop run's send lag and rate, and open/closed CPU per round trip", function()
        local rc, out, err, dir = run("open_loop.sh")
        assert.equals(0, rc, err .. out)
        local n = 0
        for lag in out:gmatch("send_lag p50 [%d.]+ us, p99 ([%d.]+) us; achieved/asked [%d.]+") do
            n = n + 1
            assert.is_true(tonumber(lag) > 0, out)
        end
        assert.equals(4, n, out)
        assert.truthy(out:find("spin: worst send_lag p99 [%d.]+ us %(goal <= 5%): %u+"), out)
        assert.truthy(out:find("sleep: worst send_lag p99 [%d.]+ us %(goal <= 1.2 x the timer floor's p99"), out)
        local cap, rate = out:match("capacity %(closed loop%): (%d+) rt/s; open loop at (%d+) msg/s")
        assert.truthy(cap, out)
        assert.near(tonumber(cap) / 2, tonumber(rate), 1)
        local c = out:match("median: closed %d+ rt/s, ([%d.]+) us CPU/rt")
        local o = out:match("; open %d+ rt/s, ([%d.]+) us CPU/rt")
        local r = out:match("open/closed CPU per round trip: ([%d.]+) %(goal <= 1.1%)")
        assert.truthy(c and o and r, out)
        assert.near(tonumber(o) / tonumber(c), tonumber(r), 0.006)
        -- (c): the bare timer wake at both schedules' rates, and (b)'s
        local floors = 0
        for p99, cpu, ark, ratio in out:gmatch("wakes/s: lag p50 [%d.]+ us, p99 ([%d.]+) us, ([%d.]+) us CPU per wake; "
            .. "arkbench's worst send_lag p99 ([%d.]+) us %(([%d.]+) x the floor's; sleep mode, goal <= 1.2%)") do
            floors = floors + 1
            assert.is_true(tonumber(p99) > 0 and tonumber(cpu) > 0, out)
            assert.near(tonumber(ark) / tonumber(p99), tonumber(ratio), 0.006)
        end
        assert.equals(2, floors, out)
        local bcpu, bark, bratio = out:match("%(%(b%)'s rate%): ([%d.]+) us CPU per wake; arkbench's open%-loop CPU per "
            .. "round trip ([%d.]+) us %(([%d.]+) x a wake's; goal <= 1.2%)")
        assert.truthy(bcpu, out)
        assert.near(tonumber(bark), tonumber(o), 0.051)
        assert.near(tonumber(bark) / tonumber(bcpu), tonumber(bratio), 0.006)
        assert.equals(out, files.read_file(dir .. "/summary.txt"))
        servers_ended(dir, { "srv" })
    end)
end)

describe("bench/classic_servers.sh --quick", function()
    local it_asio = HAVE_ASIO and it or pending
    it_asio("prints both servers' round trips/s, served counts and arkbench/asio", function()
        local rc, out, err, dir = run("classic_servers.sh")
        assert.equals(0, rc, err .. out)
        local a = out:match(" ark (%d+) rt/s;")
        local s = out:match(" asio (%d+) rt/s;")
        assert.truthy(a and s, out)
        local ratio = verdict(out, "arkbench/asio", "0.9")
        assert.near(tonumber(a) / tonumber(s), ratio, 0.006)
        local na, ns = out:match("served messages: arkbench (%d+), asio (%d+)")
        assert.is_true(tonumber(na) > 0 and tonumber(ns) > 0, out)
        assert.equals(out, files.read_file(dir .. "/summary.txt"))
        servers_ended(dir, { "ark", "asio" })
    end)
end)
