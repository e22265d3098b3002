-- thresholds_spec.lua -- exit code 3 through the real command line with a
-- closed-loop metric (today's build): a threshold no real run can meet
-- ("p99_us < 0.001") crosses, one every run meets ("p99_us < 1e9") holds;
-- crossed rules are named on stdout and in report.md/report.html;
-- `arkbench report DIR` checks them again; bad syntax is refused before
-- running with file:line (exit 2); compare --max-regression against itself
-- is 0; `arkbench search` (refused before running in a build without open
-- loop) probes, answers and saves; an open-loop run meets rate_met at a low
-- rate and its reports show the corrected view and the open-loop charts.
--
-- Runs $ARKBENCH_BIN (ctest sets it), else $ARKBENCH_ROOT/bin/arkbench.
-- Runtime: ~15 s (one-case runs of 0.2 s and 1 s).
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local core = require("arkbench.core")
local files = require("helpers.files")
local ark = require("helpers.arkbench")

local run, read_file, write_file = ark.run, files.read_file, files.write_file

teardown(function()
    files.remove_tmpdirs()
end)

local SCENARIO = [[
return {
    name = "gate",
    payload = 64,
    warmup = 0.05,
    duration = 0.2,
    repetitions = 1,
    thresholds = { "p99_us < 1e9", "error_rate < 0.5" },
}
]]

describe("thresholds on the command line", function()
    local d = files.tmpdir("_thresholds")
    local path = d .. "/gate.lua"
    write_file(path, SCENARIO)

    it("exit 0 when every threshold holds, and say so", function()
        local rc, out, err = run({ "run", path, "--out", d .. "/pass", "--threshold", "p99_us < 1e9" })
        assert.equals(0, rc, err)
        assert.truthy(out:find("thresholds: all 2 held in every case", 1, true), out)
        local summary = ark.cjson.decode(read_file(d .. "/pass/summary.json"))
        assert.equals(0, summary.thresholds.crossed)
        assert.same({ "p99_us < 1e9", "error_rate < 0.5" }, summary.thresholds.rules)
        assert.truthy(read_file(d .. "/pass/report.md"):find("Every threshold held in every case.", 1, true))
    end)

    it("exit 3 when a threshold is crossed, naming it on stdout and in the reports", function()
        local rc, out, err = run({ "run", path, "--out", d .. "/fail", "--threshold", "p99_us < 0.001" })
        assert.equals(3, rc, err)
        local line = out:match('threshold crossed: default: "p99_us < 0.001" %(p99_us = [%d.e+]+%)')
        assert.truthy(line, out)
        assert.is_nil(out:find('"p99_us < 1e9"', 1, true))
        local runs = ark.read_runs(d .. "/fail/runs.jsonl")
        assert.equals(1, #runs)
        assert.is_true(runs[1].ok)
        local summary = ark.cjson.decode(read_file(d .. "/fail/summary.json"))
        assert.equals(1, summary.thresholds.crossed)
        assert.truthy(read_file(d .. "/fail/report.md"):find("**1 threshold crossed** (exit code 3 when every run was ok)", 1, true))
        assert.truthy(read_file(d .. "/fail/report.html"):find("p99_us &lt; 0.001", 1, true))
        -- report DIR checks the saved rules again
        local rrc = run({ "report", d .. "/fail" })
        assert.equals(3, rrc)
        rrc = run({ "report", d .. "/pass" })
        assert.equals(0, rrc)
    end)

    it("refuse bad syntax before running: file:line on the key, or the --threshold", function()
        local bad = d .. "/bad.lua"
        write_file(bad, "return {\n    payload = 64,\n    thresholds = { \"p99_us <\" },\n}\n")
        local rc, out, err = run({ "run", bad, "--out", d .. "/bad" })
        assert.equals(2, rc)
        assert.truthy(err:find(bad .. ":3: key 'thresholds' element 1: \"p99_us <\"", 1, true), err)
        assert.is_nil(core.file_kind(d .. "/bad/runs.jsonl"))
        rc, out, err = run({ "run", path, "--threshold", "p99 < 5" })
        assert.equals(2, rc)
        assert.truthy(err:find('--threshold "p99 < 5": unknown metric "p99"', 1, true), err)
    end)

    it("compare --max-regression of a result against itself exits 0", function()
        local rc, out = run({ "compare", d .. "/pass", d .. "/pass", "--max-regression", "5%" })
        assert.equals(0, rc, out)
        assert.truthy(out:find("no regression beyond 5%", 1, true), out)
        rc = run({ "compare", d .. "/pass", d .. "/pass", "--max-regression", "abc" })
        assert.equals(2, rc)
    end)

    it("search: probes, the answer's repetitions, all saved like any run", function()
        if not core.capabilities().limits.open_loop then
            local rc, _, err = run({ "search", path, "--slo", "p99_us<1000", "--out", d .. "/search" })
            assert.equals(2, rc)
            assert.truthy(err:find("this build has no open-loop load (rate)", 1, true), err)
            return
        end
        -- a loose SLO at low rates: both ends pass, so the answer is the top
        local rc, out, err = run({ "search", path, "--slo", "p99_us<1e9", "--from", "100", "--to", "400",
                                   "--set", "duration=1", "--out", d .. "/search" })
        assert.equals(0, rc, err)
        assert.truthy(out:find("probe 1: rate 100/s: pass: held rate_met", 1, true), out)
        assert.truthy(out:find("probe 2: rate 400/s: pass", 1, true), out)
        assert.truthy(out:find("answer: 400 messages/s (p99_us<1e9; 2 probes; all pass)", 1, true), out)
        local runs = ark.read_runs(d .. "/search/runs.jsonl")
        assert.equals(3, #runs) -- two probes, one repetition at the answer
        assert.equals("rate=400 answer", runs[3].case_id)
        assert.equals("answer", runs[3].case.search)
        assert.equals("open", runs[3].load_model)
        local summary = ark.cjson.decode(read_file(d .. "/search/summary.json"))
        assert.equals(400, summary.search.answer)
        assert.equals(2, #summary.search.probes)
        assert.truthy(read_file(d .. "/search/report.md"):find("## SLO search", 1, true))
        -- an SLO nothing meets: no answer, exit 3, after the first probe
        rc, out = run({ "search", path, "--slo", "p99_us<0.001", "--from", "100", "--to", "400",
                        "--out", d .. "/search-none" })
        assert.equals(3, rc, out)
        assert.truthy(out:find("answer: none", 1, true), out)
        assert.equals(1, #ark.read_runs(d .. "/search-none/runs.jsonl"))
    end)

    it("open loop: rate_met holds at a low rate, and the reports show the corrected view", function()
        if not core.capabilities().limits.open_loop then return end
        -- 1 s: one send short of a 0.2 s schedule is already below 99 %
        local rc, out, err = run({ "run", path, "--out", d .. "/open", "--set", "rate=200,400",
                                   "--set", "duration=1", "--threshold", "rate_met" })
        assert.equals(0, rc, out .. err)
        assert.truthy(out:find("p99 µs*", 1, true), out)
        assert.truthy(out:find("* open loop: RTT from intended send (corrected", 1, true), out)
        local md = read_file(d .. "/open/report.md")
        assert.truthy(md:find("p99 µs (corrected)", 1, true))
        assert.truthy(md:find("## Latency vs load", 1, true))
        assert.is_string(read_file(d .. "/open/charts/load-all.svg"))
        -- the time series are in report.html: two per case
        local html = read_file(d .. "/open/report.html")
        local n = 0
        for _ in html:gmatch('data%-kind="time%-') do n = n + 1 end
        assert.equals(4, n)
    end)
end)
