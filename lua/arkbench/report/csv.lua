-- csv.lua -- runs.csv and cases.csv (`arkbench report DIR --csv`).
--
--   csv.field(v) -> text      one RFC 4180 field: numbers exact (as in
--                             JSON), booleans true/false, nil/null empty,
--                             strings quoted when they hold , " CR or LF
--                             or start/end with a space
--   csv.runs(runs) -> text    header + one row per run object, file order
--   csv.cases(summary) -> text  header + one row per case of the summary
--   csv.tags(summary) -> text | nil  header + one row per case and tag
--                             (summary.json cases[i].tags), nil when no
--                             case has tags
--   csv.intervals(runs) -> text  header + one row per interval of each run
--                             (run.intervals), file order
--   csv.write(dir, runs, summary) -> { path, ... } | nil, err
--                             runs.csv, cases.csv, intervals.csv, and
--                             tags.csv when a case has tags
--
-- Columns: case_id, then every resolved case key found in any case (axis
-- order, then by name), then the measurements.  runs.csv has the run's own
-- fields (rtt_us.p99 becomes rtt_p99_us, errors becomes "ECONNRESET=3;..."),
-- cases.csv has <metric>_median/_min/_max for every stats.METRICS name and
-- the merged-histogram percentiles; a failed case has empty metric cells and
-- its failed statuses.  Lines end with "\n"; the text is UTF-8.

local json = require("arkbench.util.json")
local stats = require("arkbench.report.stats")
local report = require("arkbench.report.report")

local type, ipairs, pairs, tostring = type, ipairs, pairs, tostring
local concat, sort = table.concat, table.sort
local open = io.open

local _M = {}

local SKIP_CASE = { case_id = true }

function _M.field(v)
    local t = type(v)
    if v == nil or v == json.null then return "" end
    if t == "number" then
        if v ~= v or v == math.huge or v == -math.huge then return "" end
        return json.number_text(v)
    end
    if t == "boolean" then return v and "true" or "false" end
    if t == "table" then v = json.encode(v) end
    local s = tostring(v)
    if s:find('[,"\r\n]') or s:find("^%s") or s:find("%s$") then
        s = '"' .. s:gsub('"', '""') .. '"'
    end
    return s
end
local field = _M.field

local function line(cells)
    local out = {}
    for i, c in ipairs(cells) do out[i] = field(c) end
    return concat(out, ",")
end

-- Union of the scalar case keys, axis order first, then by name.
local function case_keys(cases)
    local seen, keys = {}, {}
    for _, c in ipairs(cases) do
        if type(c) == "table" then
            for k, v in pairs(c) do
                local t = type(v)
                if type(k) == "string" and not SKIP_CASE[k] and not seen[k]
                    and (t == "number" or t == "string" or t == "boolean") then
                    seen[k] = true
                    keys[#keys + 1] = k
                end
            end
        end
    end
    return report.sort_axes(keys)
end

local RUN_FIELDS = {
    "elapsed_s", "measured_s", "sent", "completed", "drained", "timed_out", "message_errors",
    "unfinished", "round_trips_per_s", "payload_mib_per_s",
}
local RTT = { "min", "p50", "p90", "p95", "p99", "p999", "max", "mean", "stdev", "count" }
local RUN_TAIL = {
    "cpu_percent", "cpu_user_s", "cpu_sys_s", "cpu_machine_percent", "rss_peak_bytes",
    "rss_end_bytes", "load_model", "model", "loops", "workers", "logical_cpus",
}
-- after `errors` (columns added later go last, so older readers keep
-- theirs): the open-loop fields and the other counters of the run object
local RUN_MORE = {
    "rate_asked", "rate_achieved", "rate_met", "unsent", "unsent_window_full", "late",
    "reconnects", "reconnects_given_up", "connections_opened", "connections_retired",
    "connections_used", "connections_per_s", "server_closes", "warmup_completed",
}
-- open loop only: the raw RTT (from the actual sends) and the send lag
local VIEWS = { { "rtt_raw_us", "rtt_raw_" }, { "send_lag_us", "send_lag_" } }
local VIEW_FIELDS = { "p50", "p90", "p99", "p999", "max", "mean" }

local function errors_text(e)
    if type(e) ~= "table" then return nil end
    local keys = {}
    for k, v in pairs(e) do
        if type(k) == "string" and type(v) == "number" then keys[#keys + 1] = k end
    end
    sort(keys)
    local parts = {}
    for i, k in ipairs(keys) do parts[i] = k .. "=" .. json.number_text(e[k]) end
    return concat(parts, ";")
end

function _M.runs(runs)
    local case_list = {}
    for _, r in ipairs(runs) do case_list[#case_list + 1] = r.case end
    local keys = case_keys(case_list)
    local header = { "case_id", "repetition", "ok", "status", "error", "signal" }
    for _, k in ipairs(keys) do header[#header + 1] = k end
    for _, k in ipairs(RUN_FIELDS) do header[#header + 1] = k end
    for _, k in ipairs(RTT) do header[#header + 1] = k == "count" and "rtt_count" or ("rtt_" .. k .. "_us") end
    header[#header + 1] = "connect_p50_us"
    header[#header + 1] = "connect_p99_us"
    for _, k in ipairs(RUN_TAIL) do header[#header + 1] = k end
    header[#header + 1] = "errors"
    for _, k in ipairs(RUN_MORE) do header[#header + 1] = k end
    for _, v in ipairs(VIEWS) do
        for _, k in ipairs(VIEW_FIELDS) do header[#header + 1] = v[2] .. k .. "_us" end
    end
    local out = { line(header) }
    for _, r in ipairs(runs) do
        -- cells by position: a missing value (nil) still takes its column
        local text, n = {}, 0
        local function put(v) n = n + 1; text[n] = field(v) end
        local case = type(r.case) == "table" and r.case or {}
        put(r.case_id); put(r.repetition); put(r.ok == true); put(r.status); put(r.error); put(r.signal)
        for _, k in ipairs(keys) do put(case[k]) end
        for _, k in ipairs(RUN_FIELDS) do put(r[k]) end
        local rtt = type(r.rtt_us) == "table" and r.rtt_us or {}
        for _, k in ipairs(RTT) do put(rtt[k]) end
        local conn = type(r.connect_us) == "table" and r.connect_us or {}
        put(conn.p50); put(conn.p99)
        for _, k in ipairs(RUN_TAIL) do put(r[k]) end
        put(errors_text(r.errors))
        for _, k in ipairs(RUN_MORE) do put(r[k]) end
        for _, v in ipairs(VIEWS) do
            local t = type(r[v[1]]) == "table" and r[v[1]] or {}
            for _, k in ipairs(VIEW_FIELDS) do put(t[k]) end
        end
        out[#out + 1] = concat(text, ",")
    end
    return concat(out, "\n") .. "\n"
end

-- intervals.csv: the run's time series (run-object.md `intervals`), the
-- histograms left out (they are in runs.jsonl)
local IV_FIELDS = { "t_s", "duration_s", "sent", "completed", "errors", "timed_out", "connections",
    "round_trips_per_s", "p50_us", "p90_us", "p99_us", "max_us", "send_lag_p99_us" }

function _M.intervals(runs)
    local header = { "case_id", "repetition", "status", "interval" }
    for _, k in ipairs(IV_FIELDS) do header[#header + 1] = k end
    local out = { line(header) }
    for _, r in ipairs(runs) do
        for i, iv in ipairs(type(r.intervals) == "table" and r.intervals or {}) do
            if type(iv) == "table" then
                local text, n = {}, 0
                local function put(v) n = n + 1; text[n] = field(v) end
                put(r.case_id); put(r.repetition); put(r.status); put(i)
                for _, k in ipairs(IV_FIELDS) do put(iv[k]) end
                out[#out + 1] = concat(text, ",")
            end
        end
    end
    return concat(out, "\n") .. "\n"
end

local MERGED = { "count", "min", "p50", "p90", "p95", "p99", "p999", "max", "mean" }

function _M.cases(summary)
    local cases = report.cases_of(summary)
    local case_list = {}
    for _, c in ipairs(cases) do case_list[#case_list + 1] = c.case end
    local keys = case_keys(case_list)
    local header = { "case_id" }
    for _, k in ipairs(keys) do header[#header + 1] = k end
    for _, k in ipairs({ "runs", "runs_ok", "runs_failed", "runs_degraded", "failed_statuses" }) do
        header[#header + 1] = k
    end
    for _, m in ipairs(stats.METRICS) do
        for _, s in ipairs({ "median", "min", "max" }) do header[#header + 1] = m .. "_" .. s end
    end
    for _, k in ipairs(MERGED) do
        header[#header + 1] = k == "count" and "merged_rtt_count" or ("merged_rtt_" .. k .. "_us")
    end
    local out = { line(header) }
    for _, c in ipairs(cases) do
        local text, n = {}, 0
        local function put(v) n = n + 1; text[n] = field(v) end
        local case = type(c.case) == "table" and c.case or {}
        put(c.case_id)
        for _, k in ipairs(keys) do put(case[k]) end
        local runs, ok = report.num(c.runs) or 0, report.num(c.runs_ok) or 0
        local statuses = {}
        for _, f in ipairs(type(c.failed) == "table" and c.failed or {}) do
            statuses[#statuses + 1] = type(f) == "table" and type(f.status) == "string" and f.status or "failed"
        end
        put(runs); put(ok); put(runs - ok); put(report.num(c.runs_degraded) or 0)
        put(#statuses > 0 and concat(statuses, ";") or nil)
        local metrics = type(c.metrics) == "table" and c.metrics or {}
        for _, m in ipairs(stats.METRICS) do
            local v = type(metrics[m]) == "table" and metrics[m] or {}
            put(v.median); put(v.min); put(v.max)
        end
        local merged = type(c.rtt_merged_us) == "table" and c.rtt_merged_us or {}
        for _, k in ipairs(MERGED) do put(merged[k]) end
        out[#out + 1] = concat(text, ",")
    end
    return concat(out, "\n") .. "\n"
end

-- tags.csv: the case's columns of cases.csv, then the tag and its numbers
local TAG_COUNTS = { "runs", "sent", "warmup_sent", "completed", "drained", "errors" }

function _M.tags(summary)
    local cases = report.cases_of(summary)
    local any = false
    for _, c in ipairs(cases) do
        if type(c.tags) == "table" and #c.tags > 0 then any = true end
    end
    if not any then return nil end
    local case_list = {}
    for _, c in ipairs(cases) do case_list[#case_list + 1] = c.case end
    local keys = case_keys(case_list)
    local header = { "case_id" }
    for _, k in ipairs(keys) do header[#header + 1] = k end
    header[#header + 1] = "tag"
    for _, k in ipairs(TAG_COUNTS) do header[#header + 1] = k end
    for _, s in ipairs({ "median", "min", "max" }) do header[#header + 1] = "round_trips_per_s_" .. s end
    for _, k in ipairs(MERGED) do
        header[#header + 1] = k == "count" and "merged_rtt_count" or ("merged_rtt_" .. k .. "_us")
    end
    local out = { line(header) }
    for _, c in ipairs(cases) do
        local case = type(c.case) == "table" and c.case or {}
        for _, t in ipairs(type(c.tags) == "table" and c.tags or {}) do
            if type(t) == "table" then
                local text, n = {}, 0
                local function put(v) n = n + 1; text[n] = field(v) end
                put(c.case_id)
                for _, k in ipairs(keys) do put(case[k]) end
                put(t.tag)
                for _, k in ipairs(TAG_COUNTS) do put(t[k]) end
                local rt = type(t.round_trips_per_s) == "table" and t.round_trips_per_s or {}
                put(rt.median); put(rt.min); put(rt.max)
                local merged = type(t.rtt_merged_us) == "table" and t.rtt_merged_us or {}
                for _, k in ipairs(MERGED) do put(merged[k]) end
                out[#out + 1] = concat(text, ",")
            end
        end
    end
    return concat(out, "\n") .. "\n"
end

local function write(path, text)
    local ok, err = require("arkbench.core").write_file(path, text)
    if not ok then return nil, path .. ": " .. tostring(err) end
    return true
end

function _M.write(dir, runs, summary)
    local paths = { dir .. "/runs.csv", dir .. "/cases.csv", dir .. "/intervals.csv" }
    local ok, err = write(paths[1], _M.runs(runs))
    if not ok then return nil, err end
    ok, err = write(paths[2], _M.cases(summary))
    if not ok then return nil, err end
    ok, err = write(paths[3], _M.intervals(runs))
    if not ok then return nil, err end
    local tags = _M.tags(summary)
    if tags then
        paths[4] = dir .. "/tags.csv"
        ok, err = write(paths[4], tags)
        if not ok then return nil, err end
    end
    return paths
end

return _M
