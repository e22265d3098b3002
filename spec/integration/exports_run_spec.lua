-- exports_run_spec.lua -- exports from the command that ran (issue 24,
-- docs/reports.md "Exports"): `arkbench run ... --csv --hgrm --openmetrics`
-- and the one-liner with the same flags write the files `report DIR`
-- writes; python3-prometheus-client's strict OpenMetrics parser reads
-- metrics.om, an .hgrm reader written here (independent of the writer and
-- of spec/fixtures/exports/read_hgrm.py) reads the .hgrm files, and
-- intervals.csv sums to each run's counts; runs.csv has the open-loop
-- fields. Runtime: ~8 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local peers = require("helpers.peers")
local ark = require("helpers.arkbench")

local cjson, run = ark.cjson, ark.run

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

-- python3-prometheus-client's parser over a file -> samples {name, labels, value}
local function prom(path)
    local rc, out, err = proc.capture("", { peers.PY, ark.ROOT .. "/spec/fixtures/exports/prom_parse.py", path })
    assert.equals(0, rc, "prometheus_client refused " .. path .. ": " .. tostring(err))
    return cjson.decode(out)
end

-- An .hgrm reader from the format: a header line (Value Percentile
-- TotalCount 1/(1-Percentile)), a blank line, rows "value percentile
-- total_count inverse" with percentile and count never decreasing and the
-- 4th column 1/(1-p), the last row at percentile 1 with three columns, then
-- the #[Mean = m, StdDeviation = s] / #[Max = x, Total count = n] /
-- #[Buckets = b, SubBuckets = sb] footer.
local function read_hgrm(path)
    local text = assert(files.read_file(path), path)
    local lines = {}
    for l in text:gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
    assert.truthy(lines[1]:match("^%s*Value%s+Percentile%s+TotalCount%s+1/%(1%-Percentile%)%s*$"), path .. ": header")
    assert.equals("", lines[2], path .. ": blank line after the header")
    local rows, i = {}, 3
    local last_p, last_c = -1, 0
    while lines[i] and not lines[i]:match("^#") do
        local cols = {}
        for w in lines[i]:gmatch("%S+") do cols[#cols + 1] = w end
        local v, p, c = tonumber(cols[1]), tonumber(cols[2]), tonumber(cols[3])
        assert.truthy(v and p and c, path .. ":" .. i .. ": not a row: " .. lines[i])
        assert.is_true(p >= last_p and p <= 1 and c >= last_c, path .. ":" .. i .. ": not increasing")
        if p < 1 then
            local inv = tonumber(cols[4])
            assert.truthy(inv, path .. ":" .. i .. ": no 1/(1-p) column")
            assert.is_true(math.abs(inv - 1 / (1 - p)) <= 0.01 + 1e-9 * inv, path .. ":" .. i .. ": 1/(1-p)")
        else
            assert.equals(3, #cols, path .. ":" .. i .. ": the percentile-1 row has three columns")
        end
        rows[#rows + 1] = { v, p, c }
        last_p, last_c = p, c
        i = i + 1
    end
    assert.is_true(#rows >= 2, path .. ": rows")
    assert.equals(1, rows[#rows][2], path .. ": the last row is percentile 1")
    local mean, sd = (lines[i] or ""):match("^#%[Mean%s*=%s*([%d.]+),%s*StdDeviation%s*=%s*([%d.]+)%]$")
    local max, count = (lines[i + 1] or ""):match("^#%[Max%s*=%s*([%d.]+),%s*Total count%s*=%s*(%d+)%]$")
    assert.truthy(mean and sd and max and count, path .. ": the #[Mean ...] / #[Max ...] footer")
    assert.truthy((lines[i + 2] or ""):match("^#%[Buckets%s*=%s*%d+,%s*SubBuckets%s*=%s*%d+%]$"), path .. ": buckets")
    assert.equals(tonumber(count), rows[#rows][3], path .. ": the last row's count is the total")
    return { rows = rows, mean = tonumber(mean), max = tonumber(max), count = tonumber(count) }
end

-- CSV rows as records (no quoted commas in the columns read here but the
-- case id, which has none)
local function records(path)
    local text = assert(files.read_file(path), path)
    local header, out = nil, {}
    for l in text:gmatch("([^\n]*)\n") do
        local cells = {}
        for c in (l .. ","):gmatch("([^,]*),") do cells[#cells + 1] = c end
        if not header then header = cells
        else
            assert.equals(#header, #cells, path .. ": " .. l)
            local r = {}
            for j, h in ipairs(header) do r[h] = cells[j] end
            out[#out + 1] = r
        end
    end
    return out, header
end

-- The checks every folder written with --csv --hgrm --openmetrics passes.
local function check_folder(dir)
    local runs = ark.read_runs(dir .. "/runs.jsonl")
    local summary = cjson.decode(files.read_file(dir .. "/summary.json"))
    assert.is_true(#runs >= 1)
    -- intervals.csv: one row per interval per run, summing to the run
    local ivs = records(dir .. "/intervals.csv")
    for _, r in ipairs(runs) do
        local sum = { sent = 0, completed = 0, errors = 0, timed_out = 0 }
        local n = 0
        for _, row in ipairs(ivs) do
            if row.case_id == r.case_id and tonumber(row.repetition) == r.repetition then
                n = n + 1
                for k in pairs(sum) do sum[k] = sum[k] + tonumber(row[k]) end
            end
        end
        assert.equals(#r.intervals, n, r.case_id)
        assert.is_true(n >= 1)
        assert.equals(r.sent, sum.sent, r.case_id)
        assert.equals(r.completed, sum.completed, r.case_id)
        assert.equals(r.message_errors, sum.errors, r.case_id)
        assert.equals(r.timed_out, sum.timed_out, r.case_id)
        assert.is_true(r.sent > 0)
    end
    -- runs.csv and cases.csv
    local rr, header = records(dir .. "/runs.csv")
    assert.equals(#runs, #rr)
    local have = {}
    for _, h in ipairs(header) do have[h] = true end
    for _, k in ipairs({ "rate_asked", "rate_achieved", "rate_met", "unsent", "load_model", "send_lag_p99_us",
                         "rtt_raw_p99_us", "rtt_p99_us", "reconnects" }) do
        assert.is_true(have[k] == true, "runs.csv has no " .. k)
    end
    assert.is_true(files.exists(dir .. "/cases.csv"))
    -- metrics.om through prometheus_client
    local samples = prom(dir .. "/metrics.om")
    local counts = {}
    for _, s in ipairs(samples) do
        if s[1] == "arkbench_rtt_seconds_count" then counts[s[2].case] = s[3] end
    end
    -- every case's .hgrm through the reader above, its count the summary's
    for _, c in ipairs(summary.cases) do
        local slug = c.case_id:gsub("[^%w=%.%-]", "_")
        local h = read_hgrm(dir .. "/hgrm/" .. slug .. ".rtt_us.hgrm")
        assert.equals(c.rtt_merged_us.count, h.count)
        assert.equals(c.rtt_merged_us.max, h.max)
        assert.equals(c.rtt_merged_us.count, counts[c.case_id], c.case_id)
        if c.load_model == "open" then
            read_hgrm(dir .. "/hgrm/" .. slug .. ".rtt_raw_us.hgrm")
        end
    end
    return runs, rr
end

describe("exports from the command that ran", function()
    it("arkbench run --csv --hgrm --openmetrics --json writes what report DIR writes", function()
        local out = files.tmpdir("_xr") .. "/out"
        local rc, so, se = run({ "run", "scenarios/tcp.lua", "--quick", "--csv", "--hgrm", "--openmetrics", "--json",
            "--filter", "clients=1", "--filter", "topology=sharded:2", "--set", "payload=64,1024",
            "--out", out })
        assert.equals(0, rc, se)
        assert.truthy(se:find("wrote " .. out .. "/runs.csv, ", 1, true), se)
        assert.truthy(se:find("intervals.csv", 1, true), se)
        assert.truthy(se:find("wrote 2 .hgrm files in " .. out .. "/hgrm", 1, true), se)
        assert.truthy(se:find("wrote " .. out .. "/metrics.om", 1, true), se)
        -- --json: the summary on stdout, strict, and nothing else
        local summary = cjson.decode(so)
        assert.equals(2, #summary.cases)
        local runs = check_folder(out)
        assert.equals(2, #runs)
        -- report DIR --csv writes the same runs.csv and intervals.csv
        local before = files.read_file(out .. "/intervals.csv")
        local rruns = files.read_file(out .. "/runs.csv")
        rc, _, se = run({ "report", out, "--csv" })
        assert.equals(0, rc, se)
        assert.equals(before, files.read_file(out .. "/intervals.csv"))
        assert.equals(rruns, files.read_file(out .. "/runs.csv"))
    end)

    it("an open-loop run puts its fields in runs.csv", function()
        local d = files.tmpdir("_xo")
        files.write_file(d .. "/ol.lua", [[
return { name = "ol", protocol = "tcp", payload = 64, clients = 2, rate = 2000, interval = 0.1,
         warmup = 0.05, duration = 0.4, repetitions = 1, rate_strict = false }
]])
        local rc, _, se = run({ "run", d .. "/ol.lua", "--csv", "--hgrm", "--openmetrics", "--out", d .. "/out" })
        assert.equals(0, rc, se)
        local runs, rr = check_folder(d .. "/out")
        local r = runs[1]
        assert.is_true(#r.intervals >= 4)
        assert.equals("open", rr[1].load_model)
        assert.equals(2000, tonumber(rr[1].rate_asked))
        assert.equals(r.rate_achieved, tonumber(rr[1].rate_achieved))
        assert.equals(tostring(r.rate_met), rr[1].rate_met)
        assert.equals(r.unsent, tonumber(rr[1].unsent))
        assert.equals(r.send_lag_us.p99, tonumber(rr[1].send_lag_p99_us))
        assert.equals(r.rtt_raw_us.p99, tonumber(rr[1].rtt_raw_p99_us))
    end)

    it("the one-liner takes the same flags", function()
        local port = peers.wait_listening(peers.serve("tcp"))
        local out = files.tmpdir("_xu") .. "/out"
        local rc, so, se = run({ "tcp://127.0.0.1:" .. port, "-c", "2", "-d", "300ms", "--warmup", "50ms",
            "--csv", "--hgrm", "--openmetrics", "--json", "--out", out })
        assert.equals(0, rc, se)
        local j = cjson.decode(so)
        local runs = check_folder(out)
        assert.equals(runs[1].completed, j.requests)
        assert.truthy(se:find("wrote " .. out .. "/metrics.om", 1, true), se)
    end)

    it("refuses them on search, naming where they belong", function()
        local rc, _, se = run({ "search", "scenarios/tcp.lua", "--slo", "p99_us<1000", "--csv" })
        assert.equals(2, rc)
        assert.truthy(se:find("are for run, not search", 1, true), se)
    end)
end)
