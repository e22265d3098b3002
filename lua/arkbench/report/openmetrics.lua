-- openmetrics.lua -- the summary as an OpenMetrics text file (`metrics.om`:
-- for Prometheus' textfile collector or a pushgateway): docs/reports.md,
-- "Exports".
--
--   openmetrics.text(summary) -> text
--   openmetrics.write(dir, summary) -> path | nil, err
--
-- One sample per case and metric, labelled with the scenario, the case id
-- and the keys that name a case (payload, clients, window, topology,
-- execution, work, protocol, framing, rate, and any other key that differs
-- between the cases):
--   arkbench_round_trips_per_second     gauge, median over counted runs
--   arkbench_payload_mebibytes_per_second gauge, median
--   arkbench_cpu_percent                gauge, median (100 = one core)
--   arkbench_rss_peak_bytes             gauge, median
--   arkbench_rtt_seconds                summary of the merged histogram:
--       quantile 0.5 0.9 0.95 0.99 0.999 (and 1 for the max), _count, _sum
--   arkbench_runs / arkbench_runs_counted  gauges: runs of the case, and
--       how many count in the numbers
-- A tagged case (summary cases[i].tags) adds, per tag, the same samples of
-- arkbench_round_trips_per_second and arkbench_rtt_seconds with one more
-- label, tag="get" (the case's own samples have none: {tag=""} selects
-- them in PromQL).
-- Seconds are SI (the µs of the summary / 1e6). A missing value (no run
-- counted) is left out rather than written as NaN. The text ends in `# EOF`.

local type, ipairs, tostring = type, ipairs, tostring
local format, concat = string.format, table.concat

local _M = {}

local function escape(v)
    return (tostring(v):gsub("\\", "\\\\"):gsub("\n", "\\n"):gsub('"', '\\"'))
end

local function num(v)
    if type(v) ~= "number" or v ~= v or v == math.huge or v == -math.huge then return nil end
    -- integers without an exponent, the rest with 15 significant digits
    if v == math.floor(v) and v > -2 ^ 53 and v < 2 ^ 53 then return format("%d", v) end
    return format("%.15g", v)
end

-- the label set of a case: scenario, case id, then the keys that name a
-- case in the report (report.AXIS_ORDER, those the case has), and every
-- other key that differs between the cases (report.axes)
local function label_keys(summary)
    local report = require("arkbench.report.report")
    local keys, seen = {}, {}
    for _, k in ipairs(report.AXIS_ORDER) do keys[#keys + 1] = k; seen[k] = true end
    for _, k in ipairs(require("arkbench.report.model").varying(summary.cases or {})) do
        if not seen[k] then keys[#keys + 1] = k; seen[k] = true end
    end
    return keys
end

local function labels(scenario, c, keys)
    local parts = { format('scenario="%s"', escape(scenario or "")),
        format('case="%s"', escape(c.case_id or "")) }
    if type(c.case) == "table" then
        for _, k in ipairs(keys) do
            local v = c.case[k]
            if k:match("^[%a_][%w_]*$") and k ~= "scenario" and k ~= "case" and k ~= "quantile"
               and k ~= "tag"
               and (type(v) == "string" or type(v) == "number" or type(v) == "boolean") then
                parts[#parts + 1] = format('%s="%s"', k, escape(v))
            end
        end
    end
    return concat(parts, ",")
end

-- the tags of a case (summary cases[i].tags), each a table with a name
local function tags_of(c)
    local out = {}
    for _, t in ipairs(type(c.tags) == "table" and c.tags or {}) do
        if type(t) == "table" and type(t.tag) == "string" then out[#out + 1] = t end
    end
    return out
end

local function tag_labels(scenario, c, keys, t)
    return labels(scenario, c, keys) .. format(',tag="%s"', escape(t.tag))
end

local function median(c, name)
    local m = type(c.metrics) == "table" and c.metrics[name]
    return type(m) == "table" and num(m.median) or nil
end

local GAUGES = {
    { "arkbench_round_trips_per_second", "round_trips_per_s", "round trips per second, median" },
    { "arkbench_payload_mebibytes_per_second", "payload_mib_per_s", "payload MiB per second, median" },
    { "arkbench_cpu_percent", "cpu_percent", "CPU percent of the measured interval (100 = one core), median" },
    { "arkbench_rss_peak_bytes", "rss_peak_bytes", "peak resident set size in bytes, median" },
}
local QUANTILES = { { "0.5", "p50" }, { "0.9", "p90" }, { "0.95", "p95" }, { "0.99", "p99" },
    { "0.999", "p999" }, { "1", "max" } }

function _M.text(summary)
    local cases = type(summary.cases) == "table" and summary.cases or {}
    local scenario = summary.scenario
    local keys = label_keys(summary)
    local out = {}
    local function family(name, typ, help, unit)
        out[#out + 1] = format("# TYPE %s %s", name, typ)
        if unit then out[#out + 1] = format("# UNIT %s %s", name, unit) end
        out[#out + 1] = format("# HELP %s %s", name, help)
    end
    for _, g in ipairs(GAUGES) do
        family(g[1], "gauge", g[3], g[1]:match("_bytes$") and "bytes" or nil)
        for _, c in ipairs(cases) do
            local v = median(c, g[2])
            if v then out[#out + 1] = format("%s{%s} %s", g[1], labels(scenario, c, keys), v) end
            if g[2] == "round_trips_per_s" then
                for _, t in ipairs(tags_of(c)) do
                    local r = type(t.round_trips_per_s) == "table" and num(t.round_trips_per_s.median)
                    if r then
                        out[#out + 1] = format("%s{%s} %s", g[1], tag_labels(scenario, c, keys, t), r)
                    end
                end
            end
        end
    end
    family("arkbench_rtt_seconds", "summary", "round-trip time of the merged histogram", "seconds")
    local function rtt(h, l)
        if type(h) ~= "table" or type(h.count) ~= "number" or h.count <= 0 then return end
        for _, q in ipairs(QUANTILES) do
            local v = type(h[q[2]]) == "number" and num(h[q[2]] / 1e6)
            if v then out[#out + 1] = format('arkbench_rtt_seconds{%s,quantile="%s"} %s', l, q[1], v) end
        end
        out[#out + 1] = format("arkbench_rtt_seconds_count{%s} %s", l, num(h.count))
        if type(h.mean) == "number" then
            out[#out + 1] = format("arkbench_rtt_seconds_sum{%s} %s", l, num(h.mean * h.count / 1e6))
        end
    end
    for _, c in ipairs(cases) do
        rtt(c.rtt_merged_us, labels(scenario, c, keys))
        for _, t in ipairs(tags_of(c)) do rtt(t.rtt_merged_us, tag_labels(scenario, c, keys, t)) end
    end
    family("arkbench_runs", "gauge", "runs of the case")
    for _, c in ipairs(cases) do
        if num(c.runs) then out[#out + 1] = format("arkbench_runs{%s} %s", labels(scenario, c, keys), num(c.runs)) end
    end
    family("arkbench_runs_counted", "gauge", "runs of the case whose numbers count")
    for _, c in ipairs(cases) do
        if num(c.runs_ok) then
            out[#out + 1] = format("arkbench_runs_counted{%s} %s", labels(scenario, c, keys), num(c.runs_ok))
        end
    end
    out[#out + 1] = "# EOF"
    return concat(out, "\n") .. "\n"
end

function _M.write(dir, summary)
    local path = dir .. "/metrics.om"
    local ok, err = require("arkbench.core").write_file(path, _M.text(summary))
    if not ok then return nil, path .. ": " .. tostring(err) end
    return path
end

return _M
