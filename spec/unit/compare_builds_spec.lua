-- compare_builds_spec.lua -- bench/compare_builds.sh's command line (it
-- refuses before building anything) and bench/compare_builds.lua's
-- summaries: ratios, medians, the calibrate table parser and the PASS/FAIL
-- lines. No benchmark runs here.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")

local cb = dofile(files.ROOT .. "/bench/compare_builds.lua")
local SCRIPT = files.ROOT .. "/bench/compare_builds.sh"

local function run(...)
    return proc.run_cmd({ SCRIPT, ... }, { limit = 20 })
end

local function find(lines, prefix)
    for _, l in ipairs(lines) do
        if l:sub(1, #prefix) == prefix then return l end
    end
    return nil
end

describe("bench/compare_builds.sh command line", function()
    after_each(function() files.remove_tmpdirs() end)

    it("prints its usage with --help and exits 0", function()
        local rc, out = run("--help")
        assert.are.equal(0, rc)
        assert.is_truthy(out:find("bench/compare_builds.sh [--quick] [--out DIR] OLD_REV", 1, true))
        assert.is_truthy(out:find("--quick:", 1, true))
    end)

    it("refuses a missing, unknown or second argument with exit 2 and the usage", function()
        local usage = "usage: bench/compare_builds.sh [--quick] [--out DIR] OLD_REV\n"
        local rc, out, err = run()
        assert.are.equal(2, rc)
        assert.are.equal("", out)
        assert.are.equal("compare_builds: OLD_REV is missing (e.g. 9b3b5dc)\n" .. usage, err)
        rc, _, err = run("--bogus", "HEAD")
        assert.are.equal(2, rc)
        assert.are.equal("compare_builds: unknown option '--bogus'\n" .. usage, err)
        rc, _, err = run("HEAD", "HEAD~1")
        assert.are.equal(2, rc)
        assert.are.equal("compare_builds: one OLD_REV only (got 'HEAD' and 'HEAD~1')\n" .. usage, err)
        rc, _, err = run("--out")
        assert.are.equal(2, rc)
        assert.are.equal("compare_builds: --out needs a directory\n" .. usage, err)
    end)

    it("refuses a revision that is not a commit, and a non-empty --out, before building", function()
        local rc, _, err = run("no-such-rev-xyz")
        assert.are.equal(2, rc)
        assert.is_truthy(err:find("compare_builds: 'no-such-rev-xyz' is not a commit of ", 1, true))
        local d = files.tmpdir()
        files.write_file(d .. "/keep", "x")
        rc, _, err = run("--out", d, "HEAD")
        assert.are.equal(2, rc)
        assert.is_truthy(err:find("compare_builds: --out " .. d .. " is not empty", 1, true))
        assert.are.equal("x", files.read_file(d .. "/keep"))
    end)
end)

local function runs_of(list)
    local out = {}
    for _, r in ipairs(list) do
        out[#out + 1] = { ok = r[3] ~= false, round_trips_per_s = r[2],
                          case = { protocol = r[1], execution = r[4] } }
    end
    return out
end

describe("bench/compare_builds.lua throughput summary", function()
    it("takes the median of the ok runs and divides new by old", function()
        assert.are.equal(2, cb.median({ 3, 1, 2 }))
        assert.are.equal(2.5, cb.median({ 4, 1, 2, 3 }))
        assert.is_nil(cb.median({}))
        local old = runs_of({ { "tcp", 100 }, { "tcp", 300 }, { "tcp", 200 }, { "tcp", 1e9, false } })
        local new = runs_of({ { "tcp", 190 }, { "tcp", 210 }, { "tcp", 0 } })
        local s = cb.throughput_summary(old, new, { "tcp" })
        assert.are.equal(200, s.rows[1].old)
        assert.are.equal(200, s.rows[1].new) -- the 0 rt/s run is no sample
        assert.are.equal(1, s.ratios.tcp)
    end)

    it("passes the goals: layered median >= 1.03, none below 0.97, tcp >= 0.97", function()
        local old, new = {}, {}
        local want = { tcp = 0.98, tls = 1.10, ws = 1.00, wss = 1.05, http = 0.99, https = 1.20 }
        for p, r in pairs(want) do
            old[#old + 1] = { p, 1000 }
            new[#new + 1] = { p, 1000 * r }
        end
        local s = cb.throughput_summary(runs_of(old), runs_of(new),
            { "tcp", "tls", "ws", "wss", "http", "https", "udp" })
        assert.are.equal("tcp", s.rows[1].protocol)
        assert.are.equal(6, #s.rows) -- udp is in neither folder
        assert.is_true(math.abs(s.median - 1.05) < 1e-12)
        assert.are.equal("PASS  median of the layered protocols >= 1.03 (1.050x)",
            find(s.lines, "PASS  median"))
        assert.are.equal("PASS  no layered protocol below 0.97", find(s.lines, "PASS  no layered"))
        assert.are.equal("PASS  tcp >= 0.97 (0.980x)", find(s.lines, "PASS  tcp"))
    end)

    it("fails each goal it misses, naming the low protocols and the missing ones", function()
        local old = runs_of({ { "tcp", 1000 }, { "tls", 1000 }, { "ws", 1000 }, { "wss", 1000 }, { "http", 1000 } })
        local new = runs_of({ { "tcp", 960 }, { "tls", 960 }, { "ws", 1000 }, { "wss", 1020 }, { "http", 1040 },
                              { "https", 1000 } })
        local s = cb.throughput_summary(old, new, { "tcp", "tls", "ws", "wss", "http", "https" })
        assert.are.equal("median of tls, ws, wss, http, https: 1.010x (no ratio for https)",
            find(s.lines, "median of"))
        assert.are.equal("FAIL  median of the layered protocols >= 1.03 (1.010x)", find(s.lines, "FAIL  median"))
        assert.are.equal("FAIL  no layered protocol below 0.97 (tls 0.960)", find(s.lines, "FAIL  no layered"))
        assert.are.equal("FAIL  tcp >= 0.97 (0.960x)", find(s.lines, "FAIL  tcp"))
    end)
end)

describe("bench/compare_builds.lua calibrate summary", function()
    -- the shape of `arkbench calibrate`'s stdout (lua/arkbench/cmd/calibrate.lua)
    local TEXT = table.concat({
        "arkbench calibrate: loopback TCP echo, ...",
        "host: Linux 6.1 x86_64; pinned to CPU 1; 5 alternating pairs (floor, then arkbench), ...",
        "",
        "| config | floor round trips/s | arkbench round trips/s | ratio of medians | median of pair ratios |",
        "|---|---|---|---|---|",
        "| (a) 1024 B, 16 clients, window 16 | 1,267,354 [1, 2] | 1,200,000 [1, 2] | 0.95 | 0.94 |",
        "| (b) 64 B, 1 client, window 1 | 76,709 [1, 2] | 70,000 [1, 2] | 0.91 | 0.90 |",
        "",
        "| config | floor mean RTT µs | arkbench p50 RTT µs | ratio of medians | median of pair ratios |",
        "|---|---|---|---|---|",
        "| (b) 64 B, 1 client, window 1 | 13.0 [12.4, 14.0] | 13.3 [13.1, 13.9] | 1.02 | 1.01 |",
        "",
        "median [min, max] over the runs. ...",
    }, "\n")

    it("reads (a)'s throughput ratio and (b)'s RTT ratio, the median of pair ratios", function()
        local got = cb.parse_calibrate(TEXT)
        assert.are.equal(0.94, got.throughput)
        assert.are.equal(1.01, got.rtt)
        assert.are.same({}, cb.parse_calibrate("arkbench calibrate: a run failed\n"))
    end)

    it("says new is no worse when its throughput ratio is not lower and its RTT ratio not higher", function()
        local s = cb.calibrate_summary(
            { { throughput = 0.90, rtt = 1.02 }, { throughput = 0.94, rtt = 1.00 }, { throughput = 0.92, rtt = 1.01 } },
            { { throughput = 0.95, rtt = 1.01 }, { throughput = 0.91, rtt = 1.05 }, { throughput = 0.93 } })
        assert.are.equal(0.92, s.old.throughput)
        assert.are.equal(0.93, s.new.throughput)
        assert.is_true(math.abs(s.new.rtt - 1.03) < 1e-12) -- the median of the two RTT ratios there are
        assert.are.equal("new: (a) throughput ratio 0.93 [runs: 0.95 0.91 0.93]"
            .. "   (b) RTT ratio 1.03 [runs: 1.01 1.05 n/a]",
            find(s.lines, "new:"))
        assert.are.equal("PASS  (a) throughput ratio: new no worse than old (new 0.93, old 0.92)",
            find(s.lines, "PASS"))
        assert.are.equal("FAIL  (b) RTT ratio: new no worse than old (new 1.03, old 1.01; lower is better)",
            find(s.lines, "FAIL"))
    end)
end)

describe("bench/compare_builds.lua execution summary", function()
    it("divides coroutine by callback and passes at 0.95", function()
        local runs = runs_of({ { "tcp", 1000, true, "callback" }, { "tcp", 1100, true, "callback" },
                               { "tcp", 1000, true, "callback" }, { "tcp", 950, true, "coroutine" } })
        local s = cb.execution_summary(runs)
        assert.are.equal(0.95, s.ratio)
        assert.are.equal("PASS  new coroutine/callback >= 0.95 (0.950x)", s.lines[#s.lines])
        runs[4].round_trips_per_s = 949
        s = cb.execution_summary(runs)
        assert.are.equal("FAIL  new coroutine/callback >= 0.95 (0.949x)", s.lines[#s.lines])
        s = cb.execution_summary(runs_of({ { "tcp", 1000, true, "callback" } }))
        assert.is_nil(s.ratio)
        assert.are.equal("FAIL  new coroutine/callback >= 0.95 (n/a)", s.lines[#s.lines])
    end)
end)
