-- exports_spec.lua -- `arkbench report DIR --hgrm --openmetrics` (issue
-- 14, docs/reports.md "Exports"), read by real consumers: the .hgrm files
-- by a strict Python reader of HdrHistogram's percentile-distribution
-- text, their percentiles against the summary's merged histogram; the
-- OpenMetrics file by a strict checker of the format, its values against
-- summary.json. A tagged result (the Lua light form against arkbench's own
-- echo) adds the per-tag views: an .hgrm per case and tag, tags.csv, and
-- the tag label in OpenMetrics. Runtime: ~8 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")

local cjson, run = ark.cjson, ark.run
local FIX = ark.ROOT .. "/spec/fixtures/exports/"

teardown(function() files.remove_tmpdirs() end)

local function python(script, arg)
    local rc, out, err = proc.capture("", { "python3", FIX .. script, arg })
    assert.equals(0, rc, script .. " " .. arg .. ": " .. tostring(err))
    return cjson.decode(out)
end

-- one result folder with a closed-loop and an open-loop case
local function result()
    local d = files.tmpdir("_exports")
    local path = d .. "/ex.lua"
    files.write_file(path, [[
return {
    { name = "ex", protocol = "tcp", payload = { 64, 512 }, clients = 2, window = 4,
      warmup = 0.05, duration = 0.3, repetitions = 2 },
    { name = "ex", protocol = "tcp", payload = 64, clients = 2, window = 4, rate = 2000,
      warmup = 0.05, duration = 0.3, repetitions = 1, rate_strict = false },
}
]])
    local rc, _, err = run({ "run", path, "--out", d .. "/out" })
    assert.equals(0, rc, err)
    return d .. "/out"
end

local DIR

describe("arkbench report --hgrm --openmetrics", function()
    setup(function()
        DIR = result()
        -- a trailing slash is the same folder (no "DIR//hgrm")
        local rc, _, err = run({ "report", DIR .. "/", "--hgrm", "--openmetrics" })
        assert.equals(0, rc, err)
        assert.truthy(err:find("wrote 4 .hgrm files in " .. DIR .. "/hgrm", 1, true), err)
        assert.truthy(err:find("wrote " .. DIR .. "/metrics.om", 1, true), err)
    end)

    it("writes an .hgrm per case whose percentiles are the summary's", function()
        local summary = cjson.decode(files.read_file(DIR .. "/summary.json"))
        assert.equals(3, #summary.cases)
        for _, c in ipairs(summary.cases) do
            local slug = c.case_id:gsub("[^%w=%.%-]", "_")
            local h = python("read_hgrm.py", DIR .. "/hgrm/" .. slug .. ".rtt_us.hgrm")
            local m = c.rtt_merged_us
            assert.equals(m.count, h.count)
            assert.equals(m.max, h.max)
            assert.equals(m.min, h.rows[1][1])
            local at = {}
            for _, r in ipairs(h.rows) do at[string.format("%.4f", r[2])] = r[1] end
            assert.equals(m.p50, at["0.5000"], c.case_id)
            assert.equals(m.p90, at["0.9000"], c.case_id)
            assert.equals(m.p95, at["0.9500"], c.case_id)
            assert.is_true(math.abs(h.mean - m.mean) < 0.0006, c.case_id)
            -- every count is the nearest rank of its percentile
            for _, r in ipairs(h.rows) do
                local rank = math.max(1, math.ceil(r[2] * m.count - 1e-9))
                assert.equals(rank, r[3])
            end
            local raw = files.exists(DIR .. "/hgrm/" .. slug .. ".rtt_raw_us.hgrm")
            assert.equals(c.load_model == "open", raw, c.case_id)
            if raw then
                local hr = python("read_hgrm.py", DIR .. "/hgrm/" .. slug .. ".rtt_raw_us.hgrm")
                assert.equals(c.rtt_raw_merged_us.count, hr.count)
                assert.equals(c.rtt_raw_merged_us.max, hr.max)
            end
        end
    end)

    it("writes an OpenMetrics file a strict checker accepts, with the summary's numbers", function()
        local summary = cjson.decode(files.read_file(DIR .. "/summary.json"))
        local samples = python("check_openmetrics.py", DIR .. "/metrics.om")
        local by = {}
        for _, s in ipairs(samples) do
            local name, labels, v = s[1], s[2], s[3]
            assert.equals("ex", labels.scenario)
            local key = name .. "|" .. labels.case .. "|" .. (labels.quantile or "")
            by[key] = v
        end
        for _, c in ipairs(summary.cases) do
            local rt = by["arkbench_round_trips_per_second|" .. c.case_id .. "|"]
            assert.is_true(math.abs(rt - c.metrics.round_trips_per_s.median) <= 1e-9 * rt, c.case_id)
            assert.equals(c.rtt_merged_us.count, by["arkbench_rtt_seconds_count|" .. c.case_id .. "|"])
            local p99 = by["arkbench_rtt_seconds|" .. c.case_id .. "|0.99"]
            assert.is_true(math.abs(p99 - c.rtt_merged_us.p99 / 1e6) < 1e-12, c.case_id)
            assert.equals(c.runs, by["arkbench_runs|" .. c.case_id .. "|"])
        end
    end)
end)

local function split(line, sep)
    local out = {}
    for cell in (line .. sep):gmatch("([^" .. sep .. "]*)" .. sep) do out[#out + 1] = cell end
    return out
end

-- a tagged result: two repetitions of a light-form case whose messages are
-- tagged "get", "set" or "get key" (a tag whose file name needs a _), and
-- some untagged
local function tagged_result()
    local d = files.tmpdir("_exports_tags")
    local path = d .. "/tg.lua"
    files.write_file(path, [[
local MSG = string.rep("m", 64)
return { name = "tg", execution = "lua", framing = "raw", payload = 64, clients = 2, window = 4,
    warmup = 0.05, duration = 0.3, repetitions = 2,
    message = function(i)
        if i % 5 == 0 then return MSG end
        if i % 5 == 1 then return MSG, "set" end
        if i % 5 == 2 then return MSG, "get key" end
        return MSG, "get"
    end,
    expect = 64,
}
]])
    local rc, _, err = run({ "run", path, "--out", d .. "/out" })
    assert.equals(0, rc, err)
    rc, _, err = run({ "report", d .. "/out", "--csv", "--hgrm", "--openmetrics" })
    assert.equals(0, rc, err)
    assert.truthy(err:find("wrote 4 .hgrm files in " .. d .. "/out/hgrm", 1, true), err)
    assert.truthy(err:find("intervals.csv and " .. d .. "/out/tags.csv", 1, true), err)
    return d .. "/out"
end

describe("exports of a tagged case", function()
    local TD, summary, case, runs
    setup(function()
        TD = tagged_result()
        summary = cjson.decode(files.read_file(TD .. "/summary.json"))
        case = summary.cases[1]
        runs = ark.read_runs(TD .. "/runs.jsonl")
    end)

    it("writes an .hgrm per tag whose percentiles are the merge of the runs' tag histograms", function()
        assert.equals(1, #summary.cases)
        assert.equals(3, #case.tags)
        local slug = case.case_id:gsub("[^%w=%.%-]", "_")
        for _, t in ipairs(case.tags) do
            local file = TD .. "/hgrm/" .. slug .. ".tag=" .. t.tag:gsub(" ", "_") .. ".rtt_us.hgrm"
            local h = python("read_hgrm.py", file)
            local m = t.rtt_merged_us
            -- the merge of the two runs' tag histograms (run object tags.NAME.rtt_us)
            local count, max, min = 0, 0, math.huge
            for _, r in ipairs(runs) do
                local rt = r.tags[t.tag].rtt_us
                count, max, min = count + rt.count, math.max(max, rt.max), math.min(min, rt.min)
            end
            assert.is_true(count > 0, t.tag)
            assert.equals(count, m.count)
            assert.equals(count, h.count)
            assert.equals(max, h.max)
            assert.equals(min, h.rows[1][1])
            local at = {}
            for _, r in ipairs(h.rows) do at[string.format("%.4f", r[2])] = r[1] end
            assert.equals(m.p50, at["0.5000"], t.tag)
            assert.equals(m.p90, at["0.9000"], t.tag)
            assert.equals(m.p95, at["0.9500"], t.tag)
            assert.is_true(math.abs(h.mean - m.mean) < 0.0006, t.tag)
            -- the tag's own distribution, not the case's
            assert.is_true(h.count < case.rtt_merged_us.count, t.tag)
        end
        assert.is_true(files.exists(TD .. "/hgrm/" .. slug .. ".rtt_us.hgrm"))
    end)

    it("writes tags.csv: one row per case and tag, the summary's numbers", function()
        local lines = {}
        for l in files.read_file(TD .. "/tags.csv"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
        assert.equals(1 + #case.tags, #lines)
        local head = {}
        for i, name in ipairs(split(lines[1], ",")) do head[name] = i end
        for j, t in ipairs(case.tags) do
            local cells = split(lines[1 + j], ",")
            assert.equals(case.case_id, cells[head.case_id])
            assert.equals(t.tag, cells[head.tag])
            assert.equals(t.sent, tonumber(cells[head.sent]))
            assert.equals(t.errors, tonumber(cells[head.errors]))
            assert.equals(t.round_trips_per_s.median, tonumber(cells[head.round_trips_per_s_median]))
            assert.equals(t.rtt_merged_us.p99, tonumber(cells[head.merged_rtt_p99_us]))
            assert.equals(t.rtt_merged_us.count, tonumber(cells[head.merged_rtt_count]))
        end
    end)

    it("labels the tags' samples in OpenMetrics, and the checker accepts them", function()
        local samples = python("check_openmetrics.py", TD .. "/metrics.om")
        local by, tagged = {}, 0
        for _, s in ipairs(samples) do
            local name, labels, v = s[1], s[2], s[3]
            by[name .. "|" .. (labels.tag or "") .. "|" .. (labels.quantile or "")] = v
            if labels.tag then tagged = tagged + 1 end
        end
        -- per tag: rt/s, 6 quantiles, _count, _sum
        assert.equals(9 * #case.tags, tagged)
        for _, t in ipairs(case.tags) do
            local rt = by["arkbench_round_trips_per_second|" .. t.tag .. "|"]
            assert.is_true(math.abs(rt - t.round_trips_per_s.median) <= 1e-9 * rt, t.tag)
            assert.equals(t.rtt_merged_us.count, by["arkbench_rtt_seconds_count|" .. t.tag .. "|"])
            local p99 = by["arkbench_rtt_seconds|" .. t.tag .. "|0.99"]
            assert.is_true(math.abs(p99 - t.rtt_merged_us.p99 / 1e6) < 1e-12, t.tag)
        end
        -- the case's own samples stay, without the label
        assert.equals(case.rtt_merged_us.count, by["arkbench_rtt_seconds_count||"])
    end)
end)

describe("hgrm.levels", function()
    local hgrm = require("arkbench.report.hgrm")
    it("follows HdrHistogram's 5 ticks per half distance, and ends at 100", function()
        local l = hgrm.levels(1000000)
        assert.same({ 0, 10, 20, 30, 40, 50, 55, 60, 65, 70, 75, 77.5, 80, 82.5, 85, 87.5, 88.75 },
            { l[1], l[2], l[3], l[4], l[5], l[6], l[7], l[8], l[9], l[10], l[11], l[12], l[13],
              l[14], l[15], l[16], l[17] })
        assert.equals(100, l[#l])
        for i = 2, #l do assert.is_true(l[i] > l[i - 1]) end
        assert.same({ 0, 100 }, hgrm.levels(1))
    end)
end)
