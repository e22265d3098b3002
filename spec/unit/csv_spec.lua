-- csv_spec.lua -- runs.csv / cases.csv: RFC 4180 quoting, exact numbers,
-- one row per run and per case, failed cases with empty metrics.
local stats = require("arkbench.report.stats")
local json = require("arkbench.util.json")
local csv = require("arkbench.report.csv")

-- A strict RFC 4180 reader: rows of fields.
local function parse(text)
    local rows, row, field, i, n = {}, {}, {}, 1, #text
    local quoted = false
    while i <= n do
        local c = text:sub(i, i)
        if quoted then
            if c == '"' then
                if text:sub(i + 1, i + 1) == '"' then field[#field + 1] = '"'; i = i + 1
                else quoted = false end
            else
                field[#field + 1] = c
            end
        elseif c == '"' then
            assert(#field == 0, "quote inside an unquoted field at " .. i)
            quoted = true
        elseif c == "," then
            row[#row + 1] = table.concat(field); field = {}
        elseif c == "\n" then
            row[#row + 1] = table.concat(field); field = {}
            rows[#rows + 1] = row; row = {}
        else
            field[#field + 1] = c
        end
        i = i + 1
    end
    assert(not quoted, "unterminated quoted field")
    assert(#field == 0 and #row == 0, "last line without a newline")
    return rows
end

local function as_records(text)
    local rows = parse(text)
    local header, out = rows[1], {}
    for i = 2, #rows do
        assert.are.equal(#header, #rows[i], "row " .. i .. " has " .. #rows[i] .. " fields")
        local r = {}
        for j, h in ipairs(header) do r[h] = rows[i][j] end
        out[#out + 1] = r
    end
    return out, header
end

local C1 = { name = "u", protocol = "tcp", payload = 64, clients = 1, window = 1, topology = "shared:1",
             case_id = "payload=64 topology=shared:1", index = 1, repetitions = 2 }
local C2 = { name = "u", protocol = "tcp", payload = 1024, clients = 1, window = 1, topology = "shared:1",
             case_id = "payload=1024 topology=shared:1", index = 2, repetitions = 2 }

local function runs()
    return {
        { case_id = C1.case_id, case = C1, repetition = 1, ok = true, status = "ok", error = json.null,
            round_trips_per_s = 0.1, payload_mib_per_s = 1234567890123, sent = 10, completed = 9,
            drained = 1, timed_out = 0, message_errors = 0, unfinished = 0,
            rtt_us = { p50 = 12.5, p99 = 40, count = 9 }, cpu_percent = 99.5, errors = {} },
        { case_id = C1.case_id, case = C1, repetition = 2, ok = true, status = "ok",
            round_trips_per_s = 0.3, rtt_us = { p50 = 13.5, p99 = 42, count = 9 }, cpu_percent = 98.5 },
        { case_id = C2.case_id, case = C2, repetition = 1, ok = false, status = "error",
            error = 'ECONNRESET: "peer", reset\nsecond line', errors = { ECONNRESET = 2, EPAYLOAD = 1 },
            sent = 5, completed = 3 },
    }
end

describe("csv.field", function()
    it("quotes only what needs it and writes numbers exactly", function()
        assert.are.equal("plain", csv.field("plain"))
        assert.are.equal('"a,b"', csv.field("a,b"))
        assert.are.equal('"say ""hi"""', csv.field('say "hi"'))
        assert.are.equal('"a\nb"', csv.field("a\nb"))
        assert.are.equal('" lead"', csv.field(" lead"))
        assert.are.equal("0.1", csv.field(0.1))
        assert.are.equal("1234567890123", csv.field(1234567890123))
        assert.are.equal("", csv.field(nil))
        assert.are.equal("", csv.field(json.null))
        assert.are.equal("", csv.field(0 / 0))
        assert.are.equal("true", csv.field(true))
    end)
end)

describe("csv.runs", function()
    it("writes one row per run with the case keys and the measurements", function()
        local recs, header = as_records(csv.runs(runs()))
        assert.are.equal(3, #recs)
        assert.are.same({ "case_id", "repetition", "ok", "status", "error", "signal", "payload", "clients",
            "window", "topology", "protocol", "index", "name", "repetitions" },
            { unpack(header, 1, 14) })
        assert.are.equal("payload=64 topology=shared:1", recs[1].case_id)
        assert.are.equal("1", recs[1].repetition)
        assert.are.equal("true", recs[1].ok)
        assert.are.equal("", recs[1].error)
        assert.are.equal("0.1", recs[1].round_trips_per_s)
        assert.are.equal("1234567890123", recs[1].payload_mib_per_s)
        assert.are.equal("12.5", recs[1].rtt_p50_us)
        assert.are.equal("9", recs[1].rtt_count)
        assert.are.equal("", recs[1].errors)
        assert.are.equal("false", recs[3].ok)
        assert.are.equal('ECONNRESET: "peer", reset\nsecond line', recs[3].error)
        assert.are.equal("ECONNRESET=2;EPAYLOAD=1", recs[3].errors)
        assert.are.equal("1024", recs[3].payload)
        assert.are.equal("", recs[3].round_trips_per_s)
    end)
end)

describe("csv.cases", function()
    it("writes one row per case, median/min/max per metric, failed cases empty", function()
        local recs, header = as_records(csv.cases(stats.summarize(runs(), {})))
        assert.are.equal(2, #recs)
        assert.are.equal("case_id", header[1])
        assert.are.equal("2", recs[1].runs)
        assert.are.equal("2", recs[1].runs_ok)
        assert.are.equal("0", recs[1].runs_failed)
        assert.are.equal("0.2", recs[1].round_trips_per_s_median)
        assert.are.equal("0.1", recs[1].round_trips_per_s_min)
        assert.are.equal("0.3", recs[1].round_trips_per_s_max)
        assert.are.equal("13", recs[1].rtt_p50_us_median)
        assert.are.equal("99", recs[1].cpu_percent_median)
        assert.are.equal("1", recs[2].runs)
        assert.are.equal("0", recs[2].runs_ok)
        assert.are.equal("1", recs[2].runs_failed)
        assert.are.equal("failed", recs[2].failed_statuses)
        assert.are.equal("", recs[2].round_trips_per_s_median)
        for _, m in ipairs(stats.METRICS) do
            assert.is_not_nil(recs[1][m .. "_median"], m)
        end
    end)
end)

describe("csv.write", function()
    it("writes runs.csv and cases.csv into the folder", function()
        local d = os.tmpname()
        os.remove(d)
        assert(os.execute("mkdir -p '" .. d .. "'"))
        local rs = runs()
        local paths = assert(csv.write(d, rs, stats.summarize(rs, {})))
        assert.are.same({ d .. "/runs.csv", d .. "/cases.csv", d .. "/intervals.csv" }, paths)
        local f = assert(io.open(paths[1], "rb"))
        assert.are.equal(csv.runs(rs), f:read("*a"))
        f:close()
        os.execute("rm -rf '" .. d .. "'")
        local nope, err = csv.write(d .. "/missing/dir", rs, stats.summarize(rs, {}))
        assert.is_nil(nope)
        assert.is_string(err)
    end)
end)

describe("csv.tags", function()
    local C = { protocol = "tcp", payload = 64, clients = 2, window = 4 }
    local function tagged(rep, get_rate)
        return { case_id = "window=4", case = C, repetition = rep, ok = true, status = "ok",
            round_trips_per_s = 1000, tags = {
                ["get, \"x\""] = { sent = 10, warmup_sent = 2, completed = 9, drained = 1, errors = 0,
                    round_trips_per_s = get_rate },
                set = { sent = 4, warmup_sent = 1, completed = 3, drained = 0, errors = 1,
                    round_trips_per_s = 3 },
            } }
    end

    it("is nil when no case has tags", function()
        assert.is_nil(csv.tags(stats.summarize(runs(), {})))
    end)

    it("has one row per case and tag: counts summed, rt/s median/min/max over the ok runs", function()
        local recs = as_records(csv.tags(stats.summarize({ tagged(1, 9), tagged(2, 11) }, {})))
        assert.are.equal(2, #recs)
        local get, set = recs[1], recs[2]
        assert.are.equal('get, "x"', get.tag) -- quoted on the wire, read back whole
        assert.are.equal("window=4", get.case_id)
        assert.are.equal("64", get.payload)
        assert.are.equal("2", get.runs)
        assert.are.equal("20", get.sent)
        assert.are.equal("4", get.warmup_sent)
        assert.are.equal("10", get.round_trips_per_s_median)
        assert.are.equal("9", get.round_trips_per_s_min)
        assert.are.equal("11", get.round_trips_per_s_max)
        assert.are.equal("", get.merged_rtt_p99_us) -- no histograms in these runs
        assert.are.equal("set", set.tag)
        assert.are.equal("2", set.errors)
    end)

    it("csv.intervals has one row per interval of each run", function()
        local rs = { { case_id = "a", repetition = 1, status = "ok",
                       intervals = { { t_s = 0, duration_s = 1, sent = 5, completed = 4 },
                                     { t_s = 1, duration_s = 0.5, sent = 2, completed = 3, p99_us = 12.5 } } },
                     { case_id = "b", repetition = 2, status = "failed" } }
        local recs, header = as_records(csv.intervals(rs))
        assert.are.same({ "case_id", "repetition", "status", "interval", "t_s", "duration_s", "sent" },
            { unpack(header, 1, 7) })
        assert.are.equal(2, #recs)
        assert.are.equal("2", recs[2].interval)
        assert.are.equal("12.5", recs[2].p99_us)
        assert.are.equal("", recs[1].p99_us)
    end)

    it("is written as tags.csv beside the others when a case has tags", function()
        local d = os.tmpname()
        os.remove(d)
        assert(os.execute("mkdir -p '" .. d .. "'"))
        local rs = { tagged(1, 9) }
        local paths = assert(csv.write(d, rs, stats.summarize(rs, {})))
        assert.are.same({ d .. "/runs.csv", d .. "/cases.csv", d .. "/intervals.csv", d .. "/tags.csv" }, paths)
        os.execute("rm -rf '" .. d .. "'")
    end)
end)
