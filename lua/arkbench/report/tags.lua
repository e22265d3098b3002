-- arkbench.report.tags: the per-tag view of a case (docs/reports.md
-- "Tags"; the run object's `tags`, docs/run-object.md).
--
--   tags.summarize(ok_runs) -> json array of { tag, runs, sent, warmup_sent,
--       completed, drained, errors, round_trips_per_s = {median, min, max, n},
--       rtt_merged_us = {count, min, p50, ..., max} } in the order the tags
--       first appear, or nil when no run has tags. Counts are summed over
--       the ok runs (as memcached's or nginx's own counters see them);
--       round trips/s is the median of the per-run values; the latency is
--       the exact merge of the runs' histograms.
--   tags.HEADER, tags.rows(cases) -> the report's "Tags" table: one row per
--       case and tag ({ cells = {...}, sort = {...} }).

local json = require("arkbench.util.json")
local core = require("arkbench.core")
local report = require("arkbench.report.report")

local type, ipairs, pairs, sort = type, ipairs, pairs, table.sort
local null = json.null
local fmt_count, fmt_us = report.format_count, report.format_us

local _M = {}

local COUNTS = { "sent", "warmup_sent", "completed", "drained", "errors", "non_success" }
local RTT_FIELDS = { "count", "overflow", "min", "p50", "p90", "p95", "p99", "p999", "max", "mean",
    "stdev" }

local function median_of(xs)
    if #xs == 0 then return null end
    sort(xs)
    local m = (#xs + 1) / 2
    local lo, hi = xs[math.floor(m)], xs[math.ceil(m)]
    return { median = (lo + hi) / 2, min = xs[1], max = xs[#xs], n = #xs }
end

function _M.summarize(ok_runs)
    local order, by = {}, {}
    for _, run in ipairs(ok_runs) do
        if type(run.tags) == "table" then
            local names = {}
            for name in pairs(run.tags) do names[#names + 1] = name end
            sort(names)
            for _, name in ipairs(names) do
                local t = run.tags[name]
                if type(t) == "table" then
                    local e = by[name]
                    if not e then
                        e = { tag = name, runs = 0, rates = {}, encs = {} }
                        for _, k in ipairs(COUNTS) do e[k] = 0 end
                        by[name] = e
                        order[#order + 1] = e
                    end
                    e.runs = e.runs + 1
                    for _, k in ipairs(COUNTS) do
                        if type(t[k]) == "number" then e[k] = e[k] + t[k] end
                    end
                    if type(t.round_trips_per_s) == "number" then e.rates[#e.rates + 1] = t.round_trips_per_s end
                    if type(t.rtt_histogram) == "string" then e.encs[#e.encs + 1] = t.rtt_histogram end
                end
            end
        end
    end
    if #order == 0 then return nil end
    local out = json.array()
    for _, e in ipairs(order) do
        local rtt = null
        if #e.encs > 0 then
            local enc = core.hist_merge(e.encs)
            local s = enc and core.hist_summary(enc)
            if s then
                rtt = {}
                for _, k in ipairs(RTT_FIELDS) do
                    if s[k] == nil then rtt[k] = null else rtt[k] = s[k] end
                end
            end
        end
        local row = { tag = e.tag, runs = e.runs, round_trips_per_s = median_of(e.rates),
            rtt_merged_us = rtt }
        for _, k in ipairs(COUNTS) do row[k] = e[k] end
        out[#out + 1] = row
    end
    return out
end

_M.HEADER = {
    { "case", false }, { "tag", false }, { "round trips/s", true }, { "sent", true },
    { "completed", true }, { "errors", true }, { "p50 µs", true }, { "p90 µs", true },
    { "p99 µs", true }, { "p99.9 µs", true }, { "max µs", true },
}

local function num(v) return type(v) == "number" and v or nil end

function _M.rows(cases)
    local rows = {}
    for _, c in ipairs(cases or {}) do
        if type(c) == "table" and type(c.tags) == "table" then
            for _, t in ipairs(c.tags) do
                local rtt = type(t.rtt_merged_us) == "table" and t.rtt_merged_us or {}
                local rate = type(t.round_trips_per_s) == "table" and num(t.round_trips_per_s.median)
                local vals = { rate, num(t.sent), num(t.completed), num(t.errors), num(rtt.p50),
                    num(rtt.p90), num(rtt.p99), num(rtt.p999), num(rtt.max) }
                local cells = { type(c.case_id) == "string" and c.case_id or "-", t.tag }
                local fmts = { fmt_count, fmt_count, fmt_count, fmt_count, fmt_us, fmt_us, fmt_us,
                    fmt_us, fmt_us }
                for i, v in ipairs(fmts) do cells[#cells + 1] = v(vals[i]) end
                local sortv = {}
                for i = 1, #fmts do sortv[2 + i] = vals[i] end
                rows[#rows + 1] = { cells = cells, sort = sortv }
            end
        end
    end
    return rows
end

_M.NOTE = "Per tag (conn:call's third argument, the light form message's second value or the"
    .. " scenario's `tag` key, a request entry's `tag`): round trips/s is the median over the ok repetitions, sent,"
    .. " completed and errors (sent − completed − drained: timed out, failed or unfinished) are"
    .. " summed over them, and the latency columns are percentiles of their merged histograms."

return _M
