local stats = require("arkbench.report.stats")
local json = require("arkbench.util.json")
local core = require("arkbench.core")
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local tmpfile = require("helpers.files").tmpfile

-- ab1: encoding of the given nanosecond values (core/base/histogram.h).
local function bucket(v)
    if v < 128 then return v end
    local msb = 6
    while 2 ^ (msb + 1) <= v do msb = msb + 1 end
    local shift = msb - 6
    return 128 + (shift - 1) * 64 + (math.floor(v / 2 ^ shift) - 64)
end

local function hist(values)
    local counts, idx = {}, {}
    local sum, sumsq, lo, hi = 0, 0, nil, 0
    for _, v in ipairs(values) do
        local i = bucket(v)
        if not counts[i] then
            counts[i] = 0
            idx[#idx + 1] = i
        end
        counts[i] = counts[i] + 1
        sum, sumsq = sum + v, sumsq + v * v
        if lo == nil or v < lo then lo = v end
        if v > hi then hi = v end
    end
    table.sort(idx)
    local parts, prev = {}, 0
    for _, i in ipairs(idx) do
        parts[#parts + 1] = (i - prev) .. "=" .. counts[i]
        prev = i
    end
    return string.format("ab1:%d:%d:%d:0:%x:%x:%s", #values, lo or 0, hi, sum, sumsq,
        table.concat(parts, ","))
end

local function concat_lists(a, b)
    local out = {}
    for _, v in ipairs(a) do out[#out + 1] = v end
    for _, v in ipairs(b) do out[#out + 1] = v end
    return out
end

-- A run object as a worker writes it, with latencies `ns` (nanoseconds).
local function run(case_id, rep, fields, ns)
    local case = {}
    for kv in case_id:gmatch("%S+") do
        local k, v = kv:match("^(.-)=(.*)$")
        case[k] = tonumber(v) or v
    end
    ns = ns or { 20000, 21000, 25000, 40000 }
    local enc = hist(ns)
    local r = {
        schema_version = 1,
        scenario = { name = "tcp", path = "scenarios/tcp.lua", sha256 = "00" },
        case_id = case_id, case = case, repetition = rep,
        ok = true, status = "ok", error = json.null, signal = json.null,
        sent = 1000, completed = 990, drained = 10, timed_out = 0, message_errors = 0, unfinished = 0,
        round_trips_per_s = 1000, payload_mib_per_s = 1,
        rtt_us = core.hist_summary(enc), rtt_histogram = enc,
        connect_us = core.hist_summary(hist({ 50000 })), connect_histogram = hist({ 50000 }),
        cpu_percent = 100, cpu_user_s = 0.5, cpu_sys_s = 0.5, cpu_machine_percent = 50,
        rss_peak_bytes = 8388608, rss_end_bytes = 8000000,
        errors = {},
    }
    for k, v in pairs(fields or {}) do r[k] = v end
    return r
end

local function failed_run(case_id, rep, status, err, signal)
    return {
        schema_version = 1, case_id = case_id, case = { payload = 64 }, repetition = rep,
        ok = false, status = status, error = err or json.null, signal = signal or json.null,
        errors = { ECONNRESET = 3 },
        round_trips_per_s = 1e9, rss_peak_bytes = 1e12, rtt_histogram = hist({ 99999999 }),
    }
end

describe("stats.median/min/max", function()
    it("takes the middle value of an odd count", function()
        assert.are.equal(2, stats.median({ 3, 1, 2 }))
        assert.are.equal(7, stats.median({ 7 }))
    end)

    it("takes the mean of the middle two of an even count", function()
        assert.are.equal(2.5, stats.median({ 1, 2, 3, 10 }))
        assert.are.equal(1.5, stats.median({ 2, 1 }))
    end)

    it("ignores nil holes, json.null, NaN and non-numbers", function()
        local list = { 5, nil, 1, json.null, 0 / 0, "7", 9 }
        assert.are.equal(5, stats.median(list))
        assert.are.equal(1, stats.min(list))
        assert.are.equal(9, stats.max(list))
    end)

    it("returns nil without numbers", function()
        assert.is_nil(stats.median({}))
        assert.is_nil(stats.min({ json.null }))
        assert.is_nil(stats.max({}))
        assert.is_nil(stats.median(nil))
    end)

    it("does not reorder the caller's list", function()
        local list = { 3, 1, 2 }
        stats.median(list)
        assert.are.same({ 3, 1, 2 }, list)
    end)
end)

describe("the spec's histogram helper", function()
    it("writes canonical encodings", function()
        assert.are.equal("ab1:2:5:9:0:e:6a:5=1,4=1", hist({ 5, 9 }))
        local enc = hist({ 20000, 21000, 25000, 40000, 130 })
        -- the core pads the hex sums with zeros; compare without them
        local function unpadded(e)
            return (e:gsub("^(ab1:%d+:%d+:%d+:%d+:)0*(%x-):0*(%x-):", "%1%2:%3:"))
        end
        assert.are.equal(enc, unpadded(core.hist_merge({ enc })))
        assert.are.equal(20, core.hist_summary(hist({ 20000 })).p50)
    end)
end)

describe("stats.summarize", function()
    local A = "payload=64 clients=1"
    local B = "payload=1024 clients=1"

    it("groups runs by case_id in first-seen order", function()
        local s = stats.summarize({ run(B, 1), run(A, 1), run(B, 2), run(A, 2) }, { scenario = "tcp" })
        assert.are.equal(2, #s.cases)
        assert.are.equal(B, s.cases[1].case_id)
        assert.are.equal(A, s.cases[2].case_id)
        assert.are.same({ payload = 1024, clients = 1 }, s.cases[1].case)
        assert.are.equal(2, s.cases[1].runs)
        assert.are.equal(2, s.cases[2].runs_ok)
    end)

    it("takes median, min, max and n of every metric over the ok runs", function()
        local s = stats.summarize({
            run(A, 1, { round_trips_per_s = 3000, cpu_percent = 90, sent = 123456789012345 }),
            run(A, 2, { round_trips_per_s = 1000, cpu_percent = 110, sent = 123456789012347 }),
            run(A, 3, { round_trips_per_s = 2000, cpu_percent = 100, sent = 123456789012349 }),
        }, {})
        local m = s.cases[1].metrics
        assert.are.same({ median = 2000, min = 1000, max = 3000, n = 3 }, m.round_trips_per_s)
        assert.are.same({ median = 100, min = 90, max = 110, n = 3 }, m.cpu_percent)
        assert.are.same({ median = 123456789012347, min = 123456789012345, max = 123456789012349, n = 3 },
            m.sent)
        assert.are.same({ median = 8388608, min = 8388608, max = 8388608, n = 3 }, m.rss_peak_bytes)
        for _, name in ipairs(stats.METRICS) do
            assert.is_table(m[name], name)
        end
    end)

    it("flattens rtt_us and connect_us into rtt_*_us and connect_p50/p99_us", function()
        local s = stats.summarize({
            run(A, 1, nil, { 10000, 20000 }),
            run(A, 2, nil, { 30000, 40000 }),
        }, {})
        local m = s.cases[1].metrics
        assert.are.same({ median = 20, min = 10, max = 30, n = 2 }, m.rtt_min_us)
        assert.are.same({ median = 30, min = 20, max = 40, n = 2 }, m.rtt_max_us)
        assert.are.same({ median = 25, min = 15, max = 35, n = 2 }, m.rtt_mean_us)
        assert.are.same({ median = 2, min = 2, max = 2, n = 2 }, m.rtt_count)
        assert.are.equal(50, m.connect_p50_us.median)
        assert.are.equal(50, m.connect_p99_us.max)
        for _, k in ipairs({ "rtt_p50_us", "rtt_p90_us", "rtt_p95_us", "rtt_p99_us", "rtt_p999_us",
            "rtt_stdev_us" }) do
            assert.are.equal(2, m[k].n, k)
        end
    end)

    it("leaves failed runs out of medians and lists them apart", function()
        local s = stats.summarize({
            run(A, 1, { round_trips_per_s = 1000 }),
            failed_run(A, 2, "crashed", "worker died", "SIGSEGV"),
            run(A, 3, { round_trips_per_s = 3000 }),
        }, {})
        local c = s.cases[1]
        assert.are.equal(3, c.runs)
        assert.are.equal(2, c.runs_ok)
        assert.are.same({ median = 2000, min = 1000, max = 3000, n = 2 }, c.metrics.round_trips_per_s)
        assert.are.same({ median = 8388608, min = 8388608, max = 8388608, n = 2 },
            c.metrics.rss_peak_bytes)
        assert.are.same({
            { repetition = 2, status = "crashed", error = "worker died", signal = "SIGSEGV",
                errors = { ECONNRESET = 3 } },
        }, c.failed)
        assert.are.equal(40, c.rtt_merged_us.max) -- not the failed run's 99,999.999 µs
        assert.are.equal(3, s.runs_total)
        assert.are.equal(1, s.runs_failed)
    end)

    it("merges the ok runs' histograms: percentiles of the pooled values", function()
        local a = { 12000, 15000, 18000, 22000, 90000 }
        local b = { 11000, 13000, 14000, 16000, 17000, 19000, 250000 }
        local s = stats.summarize({ run(A, 1, nil, a), run(A, 2, nil, b) }, {})
        local merged = s.cases[1].rtt_merged_us
        local pooled = core.hist_summary(hist(concat_lists(a, b)))
        assert.are.same(pooled, merged)
        assert.are.equal(12, merged.count)
        assert.are.equal(11, merged.min)
        assert.are.equal(250, merged.max)
        assert.are.equal(pooled.p50, merged.p50)
        assert.are.equal(pooled.p99, merged.p99)
        -- the median of per-run p99s is a different number: both are kept
        assert.are_not.equal(merged.p99, s.cases[1].metrics.rtt_p99_us.median)
        assert.are.equal(50, s.cases[1].connect_merged_us.p50)
        assert.are.equal(2, s.cases[1].connect_merged_us.count)
    end)

    it("writes null metrics and histograms for a case without an ok run", function()
        local s = stats.summarize({
            failed_run(A, 1, "timeout", "worker exceeded 31 s", "SIGKILL"),
            failed_run(A, 2, "error", "ECONNREFUSED: connection refused"),
        }, { interrupted = true })
        local c = s.cases[1]
        assert.are.equal(0, c.runs_ok)
        assert.are.equal(2, #c.failed)
        assert.are.equal("timeout", c.failed[1].status)
        assert.are.equal(json.null, c.failed[2].signal)
        for _, name in ipairs(stats.METRICS) do
            assert.are.equal(json.null, c.metrics[name], name)
        end
        assert.are.equal(json.null, c.rtt_merged_us)
        assert.are.equal(json.null, c.connect_merged_us)
        assert.is_true(s.interrupted)
        assert.are.equal(2, s.runs_failed)
    end)

    it("keeps empty histograms and absent values as null, with n = 0", function()
        local empty = hist({})
        local r = run(A, 1, { rtt_histogram = empty, rtt_us = core.hist_summary(empty) })
        r.cpu_percent = nil
        local c = stats.summarize({ r }, {}).cases[1]
        assert.are.same({ median = json.null, min = json.null, max = json.null, n = 0 },
            c.metrics.cpu_percent)
        assert.are.same({ median = json.null, min = json.null, max = json.null, n = 0 },
            c.metrics.rtt_p99_us)
        assert.are.equal(0, c.rtt_merged_us.count)
        assert.are.equal(json.null, c.rtt_merged_us.p99)
    end)

    it("notes an invalid histogram instead of merging part of them", function()
        local c = stats.summarize({ run(A, 1), run(A, 2, { rtt_histogram = "ab1:garbage" }) }, {})
            .cases[1]
        assert.are.equal(json.null, c.rtt_merged_us)
        assert.are.same({ "rtt_histogram: EINVAL: histogram 2 is not a valid encoding" }, c.notes)
    end)

    it("fills the top level from meta, or the scenario name from the runs", function()
        local s = stats.summarize({ run(A, 1) }, {
            scenario = "tcp-matrix", started_utc = "2026-11-30T04:12:30Z",
            ended_utc = "2026-11-30T04:13:01Z",
        })
        assert.are.equal(1, s.schema_version)
        assert.are.equal("tcp-matrix", s.scenario)
        assert.are.equal("2026-11-30T04:12:30Z", s.started_utc)
        assert.are.equal("2026-11-30T04:13:01Z", s.ended_utc)
        assert.is_false(s.interrupted)
        assert.are.equal(1, s.runs_total)
        assert.are.equal(0, s.runs_failed)
        local s2 = stats.summarize({ run(A, 1) })
        assert.are.equal("tcp", s2.scenario)
        assert.are.equal(json.null, s2.started_utc)
    end)

    it("encodes to JSON that decodes to the same summary", function()
        local s = stats.summarize({ run(A, 1), failed_run(B, 1, "error", "boom") }, { scenario = "tcp" })
        local text = json.encode(s)
        assert.matches('"failed":%[%]', text)       -- an ok case's empty list stays a list
        assert.matches('"cases":%[{', text)
        local back = json.decode(text)
        -- cjson decodes [] as an empty table, which encodes as {}
        local again = json.encode(back):gsub('"failed":{}', '"failed":[]'):gsub('"notes":{}', '"notes":[]')
            :gsub('"degraded":{}', '"degraded":[]')
        assert.are.equal(text, again)
    end)

    it("summarizes nothing as no cases", function()
        local s = stats.summarize({}, { scenario = "x" })
        assert.are.equal(0, #s.cases)
        assert.are.equal("[]", json.encode(s.cases))
        assert.are.equal(0, s.runs_total)
    end)
end)

describe("stats.read_jsonl", function()
    it("reads one object per line and skips blank lines", function()
        local path = tmpfile('{"schema_version":1,"case_id":"a","repetition":1,"ok":true}\n\n  \n'
                             .. '{"schema_version":1,"case_id":"b","repetition":1,"ok":false}\r\n')
        local runs, err = stats.read_jsonl(path)
        os.remove(path)
        assert.is_nil(err)
        assert.are.same({ { schema_version = 1, case_id = "a", repetition = 1, ok = true },
                          { schema_version = 1, case_id = "b", repetition = 1, ok = false } }, runs)
    end)

    it("names path:line of a malformed line", function()
        local path = tmpfile('{"schema_version":1,"case_id":"a","repetition":1,"ok":true}\n\n{"ok":tru\n')
        local runs, err = stats.read_jsonl(path)
        os.remove(path)
        assert.is_nil(runs)
        assert.are.equal(path .. ":3: Expected value but found invalid token at character 7", err)
    end)

    it("refuses a line that is not an object", function()
        local path = tmpfile('[1,2]\n')
        local runs, err = stats.read_jsonl(path)
        os.remove(path)
        assert.is_nil(runs)
        assert.are.equal(path .. ":1: not a JSON object", err)
    end)

    it("returns the open error for a missing file", function()
        local runs, err = stats.read_jsonl("/nonexistent/runs.jsonl")
        assert.is_nil(runs)
        assert.are.equal("/nonexistent/runs.jsonl: No such file or directory", err)
    end)
end)
