-- stats.lua -- aggregation of run objects into summary.json.
--
--   stats.median(list) / stats.min(list) / stats.max(list) -> number | nil
--       over the numbers in list (nil holes, json.null, NaN and non-numbers
--       are ignored); the median of an even count is the mean of the two
--       middle values.  nil when there is no number.
--   stats.summarize(runs, meta) -> summary
--       runs: run objects (docs/run-object.md) in file order;
--       meta: { scenario=, started_utc=, ended_utc=, interrupted= }.
--   stats.read_jsonl(path) -> runs, nil, warning | nil, err
--       report/runfile.lua's read: blank lines skipped; a line that is not a
--       run object is an error "path:line: reason".
--   stats.METRICS: the metric names of summary cases[i].metrics, in order.
--   stats.metric_of(run, name) -> the value of metric `name` in one run
--   stats.counted(run) -> whether the run's numbers count in a case's
--       medians and merged histograms
--
-- Open loop (docs/load-models.md): a case also gets `load_model` ("open"
-- when any of its runs is), `rate_runs` (ok runs that report rate_met) and
-- `rate_missed` (ok runs with rate_met = false), and rtt_raw_merged_us.
--
-- The summary holds json.null (not nil) wherever a value is missing, so its
-- shape is the same in memory as in summary.json, and a summary decoded from
-- the file works wherever a fresh one does.  The numbers are over the runs
-- that measured (arkbench.run.status.measured: status ok or degraded):
-- `runs_ok` counts them, `runs_degraded` those of them that are degraded
-- (each listed in `degraded` with its error and classes, and its numbers
-- kept).  Failed runs (every other status) are counted in `failed` and
-- listed, never folded into medians or merged histograms.

local json = require("arkbench.util.json")
local core = require("arkbench.core")
local status = require("arkbench.run.status")

local type, pairs, ipairs, tostring, next = type, pairs, ipairs, tostring, next
local sort = table.sort

local null = json.null

local _M = {}

local function numbers(list)
    local out = {}
    if type(list) ~= "table" then return out end
    for _, v in pairs(list) do
        if type(v) == "number" and v == v then out[#out + 1] = v end
    end
    return out
end

function _M.median(list)
    local xs = numbers(list)
    local n = #xs
    if n == 0 then return nil end
    sort(xs)
    if n % 2 == 1 then return xs[(n + 1) / 2] end
    return (xs[n / 2] + xs[n / 2 + 1]) / 2
end

function _M.min(list)
    local m
    for _, v in ipairs(numbers(list)) do
        if m == nil or v < m then m = v end
    end
    return m
end

function _M.max(list)
    local m
    for _, v in ipairs(numbers(list)) do
        if m == nil or v > m then m = v end
    end
    return m
end

-- Metric name -> function(run) -> value, in summary order.
local RTT_FIELDS = { "min", "p50", "p90", "p95", "p99", "p999", "max", "mean", "stdev" }

local METRICS = {}
local getters = {}

local function add_field(name)
    METRICS[#METRICS + 1] = name
    getters[name] = function(run) return run[name] end
end

local function add_sub(name, field, sub)
    METRICS[#METRICS + 1] = name
    getters[name] = function(run)
        local t = run[field]
        if type(t) ~= "table" then return nil end
        return t[sub]
    end
end

for _, name in ipairs({
    "round_trips_per_s", "payload_mib_per_s",
    "cpu_percent", "cpu_user_s", "cpu_sys_s", "cpu_machine_percent",
    "rss_peak_bytes", "rss_end_bytes",
    "sent", "completed", "drained", "timed_out", "message_errors", "unfinished",
}) do
    add_field(name)
end
for _, f in ipairs(RTT_FIELDS) do add_sub("rtt_" .. f .. "_us", "rtt_us", f) end
add_sub("rtt_count", "rtt_us", "count")
add_sub("connect_p50_us", "connect_us", "p50")
add_sub("connect_p99_us", "connect_us", "p99")

-- open loop (docs/load-models.md): absent in closed-loop runs, so their
-- metrics have n = 0 and a null median
for _, name in ipairs({ "rate_asked", "rate_achieved", "unsent" }) do add_field(name) end
for _, f in ipairs({ "p50", "p99", "p999", "max" }) do
    add_sub("rtt_raw_" .. f .. "_us", "rtt_raw_us", f)
end
for _, f in ipairs({ "p50", "p99", "max" }) do
    add_sub("send_lag_" .. f .. "_us", "send_lag_us", f)
end
-- connection churn and setup (docs/execution.md, "Connection churn"):
-- connections opened per second of the measure phase, TLS resumption, the
-- session setup percentiles (absent without a handshake: n = 0)
for _, name in ipairs({ "connections_per_s", "connections_opened", "tls_handshakes",
                        "tls_resumed" }) do
    add_field(name)
end
add_sub("handshake_p50_us", "handshake_us", "p50")
add_sub("handshake_p99_us", "handshake_us", "p99")
-- (message_errors + timed_out + non_success) / sent of one run; nil when nothing was sent
METRICS[#METRICS + 1] = "error_rate"
getters.error_rate = status.error_rate
-- replies outside the success set, and the bytes each way (counters.h)
for _, name in ipairs({ "non_success", "bytes_sent", "bytes_received", "transfer_mib_per_s" }) do
    add_field(name)
end

_M.METRICS = METRICS

function _M.metric_of(run, name)
    local get = getters[name]
    if not get or type(run) ~= "table" then return nil end
    return get(run)
end

local SUMMARY_FIELDS = {
    "count", "overflow", "min", "p50", "p90", "p95", "p99", "p999", "max", "mean", "stdev",
}

local function or_null(v)
    if v == nil then return null end
    return v
end

-- {median, min, max, n} of one metric over the ok runs; null without ok runs.
local function metric(ok_runs, get)
    if #ok_runs == 0 then return null end
    local xs = {}
    for _, run in ipairs(ok_runs) do
        local v = get(run)
        if type(v) == "number" and v == v then xs[#xs + 1] = v end
    end
    return {
        median = or_null(_M.median(xs)),
        min = or_null(_M.min(xs)),
        max = or_null(_M.max(xs)),
        n = #xs,
    }
end

-- core.hist_summary of the merge of the runs' `field` encodings, with
-- every summary field present (null when the pooled histogram is empty).
-- Returns null when no run has an encoding; null plus a note when one is
-- not a valid encoding (a partial merge would misstate the percentiles).
local function merged(ok_runs, field)
    local encs = {}
    for _, run in ipairs(ok_runs) do
        if type(run[field]) == "string" then encs[#encs + 1] = run[field] end
    end
    if #encs == 0 then return null end
    local enc, err = core.hist_merge(encs)
    local s
    if enc then s, err = core.hist_summary(enc) end
    if not s then return null, field .. ": " .. tostring(err) end
    local out = {}
    for _, k in ipairs(SUMMARY_FIELDS) do out[k] = or_null(s[k]) end
    return out
end

local function failed_entry(run)
    local errors = run.errors
    if type(errors) ~= "table" then errors = null end
    local e = {
        repetition = or_null(run.repetition),
        status = status.of(run),
        error = or_null(run.error),
        signal = or_null(run.signal),
        errors = errors,
    }
    -- our own failures, apart from the peer's, when the run has any
    if type(run.local_errors) == "table" and next(run.local_errors) ~= nil then
        e.local_errors = run.local_errors
    end
    -- an interrupted run keeps what it measured up to the interrupt: the
    -- report shows it, titled interrupted (never averaged in)
    if e.status == "interrupted" and type(run.round_trips_per_s) == "number" then
        e.round_trips_per_s = run.round_trips_per_s
        e.measured_s = or_null(run.measured_s)
        e.rtt_p99_us = type(run.rtt_us) == "table" and or_null(run.rtt_us.p99) or null
    end
    return e
end

-- Whether a run's numbers count in the medians and merged histograms: it
-- measured (status ok or degraded; arkbench.run.status).
function _M.counted(run)
    return status.measured(run)
end

-- a degraded run: what went wrong beside its kept numbers
local function degraded_entry(run)
    local e = failed_entry(run)
    e.signal = nil
    for _, k in ipairs({ "timed_out", "message_errors", "unfinished", "reconnects", "non_success" }) do
        if type(run[k]) == "number" then e[k] = run[k] end
    end
    return e
end

local function summarize_case(id, runs)
    local case = null
    for _, run in ipairs(runs) do
        if type(run.case) == "table" then case = run.case break end
    end
    local ok_runs, failed, degraded, notes = {}, json.array(), json.array(), json.array()
    for _, run in ipairs(runs) do
        if _M.counted(run) then
            ok_runs[#ok_runs + 1] = run
            if status.of(run) == "degraded" then degraded[#degraded + 1] = degraded_entry(run) end
        else
            failed[#failed + 1] = failed_entry(run)
        end
    end
    local metrics = {}
    for _, name in ipairs(METRICS) do metrics[name] = metric(ok_runs, getters[name]) end
    local rtt, rtt_note = merged(ok_runs, "rtt_histogram")
    local conn, conn_note = merged(ok_runs, "connect_histogram")
    local raw, raw_note = merged(ok_runs, "rtt_raw_histogram")
    notes[#notes + 1] = rtt_note
    notes[#notes + 1] = conn_note
    notes[#notes + 1] = raw_note
    -- open loop: the load model of the case (closed when no run says),
    -- and how many ok runs missed their rate (rate_met = false)
    local load_model, rate_runs, rate_missed = "closed", 0, 0
    for _, run in ipairs(ok_runs) do
        if run.load_model == "open" then load_model = "open" end
        if type(run.rate_met) == "boolean" then
            rate_runs = rate_runs + 1
            if run.rate_met == false then rate_missed = rate_missed + 1 end
        end
    end
    -- generator-bound ok runs (report/openloop.lua: generator_bound)
    local generator_bound = 0
    for _, run in ipairs(ok_runs) do
        if run.generator_bound == true then generator_bound = generator_bound + 1 end
    end
    if load_model == "closed" then
        for _, run in ipairs(runs) do
            if run.load_model == "open" then load_model = "open" end
        end
    end
    return {
        case_id = id,
        case = case,
        runs = #runs,
        runs_ok = #ok_runs,
        runs_degraded = #degraded,
        failed = failed,
        degraded = degraded,
        metrics = metrics,
        rtt_merged_us = rtt,
        connect_merged_us = conn,
        rtt_raw_merged_us = raw,
        load_model = load_model,
        rate_runs = rate_runs,
        rate_missed = rate_missed,
        generator_bound_runs = generator_bound,
        -- per tag (report/tags.lua), absent when no run has tags
        tags = require("arkbench.report.tags").summarize(ok_runs),
        notes = notes,
    }
end

function _M.summarize(runs, meta)
    meta = meta or {}
    local order, groups = {}, {}
    local failed_total, degraded_total = 0, 0
    for _, run in ipairs(runs) do
        local id = run.case_id
        if type(id) ~= "string" then id = "(no case_id)" end
        if not groups[id] then
            groups[id] = {}
            order[#order + 1] = id
        end
        local g = groups[id]
        g[#g + 1] = run
        if not status.measured(run) then failed_total = failed_total + 1 end
        if status.of(run) == "degraded" then degraded_total = degraded_total + 1 end
    end
    local cases = json.array()
    for _, id in ipairs(order) do cases[#cases + 1] = summarize_case(id, groups[id]) end

    local scenario = meta.scenario
    if scenario == nil and runs[1] and type(runs[1].scenario) == "table" then
        scenario = runs[1].scenario.name
    end
    return {
        schema_version = 1,
        scenario = or_null(scenario),
        started_utc = or_null(meta.started_utc),
        ended_utc = or_null(meta.ended_utc),
        interrupted = meta.interrupted == true,
        cases = cases,
        runs_total = #runs,
        runs_failed = failed_total,
        runs_degraded = degraded_total,
    }
end

-- One run object per line, checked (report/runfile.lua): a cut last line is
-- skipped with a warning, the third return value; any other bad line is an
-- error naming it.
_M.read_jsonl = require("arkbench.report.runfile").read

return _M
