-- report_model.lua -- what report.md, charts/*.svg and report.html share.
--
--   report_model.build(summary, runs, env) -> model
--       summary: stats.summarize(runs) (fresh or decoded from summary.json);
--       runs: the run objects (for the counters of failed runs; may be nil);
--       env: env.json decoded (may be nil).
--   report_model.varying(cases) -> { key, ... }
--   report_model.value_text(key, v) -> "64 B", "16 clients", "window 16"
--   report_model.ROW_AXES, report_model.AXIS_TITLE, report_model.FAILED_COUNTERS
--
-- Layout: a row (table row, bar, line) per topology (and execution when it
-- varies); a table per protocol x every other varying key (clients, window,
-- payload, work, ...); a chart partition per table group minus the x axis
-- (the first of payload, window, clients, work that takes 2+ values inside
-- a partition: a window zipped with clients by `load` does not), so one bar
-- chart shows every topology at every payload for one protocol and load.
-- Groups keep the scenario's order of values.  Nothing here reads a clock.

local report = require("arkbench.report.report")
local status = require("arkbench.run.status")

local type, ipairs, pairs, next = type, ipairs, pairs, next
local format = string.format
local concat, sort = table.concat, table.sort

local num, axis_text, case_value, cases_of = report.num, report.axis_text, report.case_value, report.cases_of
local median_of = report.stat

local _M = {}

-- Bytes of a part's slug, the stem of its chart file names.
_M.SLUG_MAX = 96

-- The model the file reports share ------------------------------------------

-- Keys of a resolved case that never set cases apart in a report.

-- One row per value of these (a table row, a bar, a line).
_M.ROW_AXES = { "topology", "execution" }
-- The keys that split tables and charts, outermost first.
local GROUP_ORDER = {
    "label", "protocol", "framing", "placement", "processes", "rate", "work", "clients", "window",
    "payload",
}
-- The x axis of a chart: the first of these that varies.
local X_AXES = { "payload", "window", "clients", "work", "rate" }

local ONE_THREAD = { ["shared:1"] = true, ["sharded:1"] = true, ["pool:1"] = true }

local function scalar(v)
    local t = type(v)
    if t == "number" then return v == v and v or nil end
    if t == "string" or t == "boolean" then return v end
    return nil
end

-- Case keys whose values differ between cases (the terminal table's too)
_M.varying = report.varying

local function bytes_text(v)
    if v >= 1048576 and v % 1048576 == 0 then return format("%.0f MiB", v / 1048576) end
    if v >= 1024 and v % 1024 == 0 then return format("%.0f KiB", v / 1024) end
    return format("%s B", axis_text(v))
end

-- "64 B", "16 clients", "window 16", "tcp", "work 10000"
function _M.value_text(key, v)
    v = scalar(v)
    if v == nil then return key .. " -" end
    if key == "payload" and type(v) == "number" then return bytes_text(v) end
    if key == "clients" then return axis_text(v) .. (v == 1 and " client" or " clients") end
    if key == "protocol" or key == "label" then return axis_text(v) end
    return key .. " " .. axis_text(v)
end

-- Axis titles with units, for charts and headings.
_M.AXIS_TITLE = {
    payload = "payload (bytes)", window = "window (messages in flight per connection)",
    clients = "clients (connections)", work = "work (CPU iterations per echo)",
    rate = "asked rate (messages/s)",
}

function _M.row_label(c, row_axes)
    local parts = {}
    for _, key in ipairs(row_axes) do parts[#parts + 1] = axis_text(scalar(case_value(c, key))) end
    return concat(parts, " / ")
end

-- Splits cases by the values of keys; groups come in the order of the first
-- appearance of each value, key by key (the scenario's own order).
local function partition(cases, keys)
    local rank = {}
    for _, key in ipairs(keys) do
        local r, n = {}, 0
        for _, c in ipairs(cases) do
            local t = axis_text(scalar(case_value(c, key)))
            if not r[t] then n = n + 1; r[t] = n end
        end
        rank[key] = r
    end
    local groups, by_id = {}, {}
    for _, c in ipairs(cases) do
        local id, values, order = {}, {}, {}
        for i, key in ipairs(keys) do
            local v = scalar(case_value(c, key))
            local t = axis_text(v)
            id[i] = t
            values[key] = v
            order[i] = rank[key][t]
        end
        local sid = concat(id, "\0")
        local g = by_id[sid]
        if not g then
            g = { values = values, order = order, cases = {} }
            by_id[sid] = g
            groups[#groups + 1] = g
        end
        g.cases[#g.cases + 1] = c
    end
    sort(groups, function(a, b)
        for i = 1, #keys do
            if a.order[i] ~= b.order[i] then return a.order[i] < b.order[i] end
        end
        return false
    end)
    return groups
end

local function title_of(values, keys)
    local parts = {}
    for _, key in ipairs(keys) do
        local v = _M.value_text(key, values[key])
        -- a part named after its protocol ("tcp", protocol tcp) says it once
        if v ~= parts[#parts] then parts[#parts + 1] = v end
    end
    return concat(parts, ", ")
end

-- Best row of one group of cases (a chart partition, or a part of one:
-- finding_groups) against its one-thread row, by the median over x values
-- of the per-x throughput ratios.
local function finding(part, model)
    local stats = require("arkbench.report.stats")
    local base
    for _, label in ipairs(model.rows) do
        for _, c in ipairs(part.cases) do
            if model.label_of[c] == label and ONE_THREAD[case_value(c, "topology")] then base = label break end
        end
        if base then break end
    end
    local one_thread = base ~= nil
    if not base then base = model.label_of[part.cases[1]] end
    local xs = partition(part.cases, model.x_axis and { model.x_axis } or {})
    local ratios, p99_best = {}, {}
    for _, g in ipairs(xs) do
        local base_rt
        for _, c in ipairs(g.cases) do
            if model.label_of[c] == base then base_rt = (median_of(c, "round_trips_per_s")) end
        end
        local lo_p99, lo_label
        for _, c in ipairs(g.cases) do
            local label = model.label_of[c]
            local rt = median_of(c, "round_trips_per_s")
            if base_rt and base_rt > 0 and rt then
                ratios[label] = ratios[label] or {}
                local r = ratios[label]
                r[#r + 1] = rt / base_rt
            end
            local p99 = median_of(c, "rtt_p99_us")
            if p99 and (lo_p99 == nil or p99 < lo_p99) then lo_p99, lo_label = p99, label end
        end
        if lo_label then p99_best[lo_label] = (p99_best[lo_label] or 0) + 1 end
    end
    local best, best_r
    for _, label in ipairs(model.rows) do
        local r = ratios[label]
        if r and #r > 0 then
            local m = stats.median(r)
            if best_r == nil or m > best_r then best, best_r = label, m end
        end
    end
    if not best then return nil end
    local lowest, lowest_n = nil, 0
    for _, label in ipairs(model.rows) do
        if (p99_best[label] or 0) > lowest_n then lowest, lowest_n = label, p99_best[label] end
    end
    return {
        title = part.title, base = base, one_thread = one_thread, best = best,
        ratio = best_r, ratio_min = stats.min(ratios[best]), ratio_max = stats.max(ratios[best]),
        n = #ratios[best], groups = #xs, x_axis = model.x_axis,
        lowest_p99 = lowest, lowest_p99_n = lowest_n,
    }
end

-- The groups a part's findings compare topologies in: the part itself, or,
-- when topology and another row axis (execution) both vary, one group per
-- value of the other row axes, so that a topology is compared with the
-- one-thread topology of its own execution, never across executions.
local function finding_groups(part, model)
    local others, has_topology = {}, false
    for _, k in ipairs(model.row_axes) do
        if k == "topology" then has_topology = true else others[#others + 1] = k end
    end
    if not has_topology or #others == 0 then return { part } end
    local out = {}
    for _, g in ipairs(partition(part.cases, others)) do
        out[#out + 1] = { title = part.title .. ", " .. title_of(g.values, others), cases = g.cases }
    end
    return out
end

local function counters_text(errors)
    if type(errors) ~= "table" then return "-" end
    local keys = {}
    for k, v in pairs(errors) do
        if type(k) == "string" and type(v) == "number" then keys[#keys + 1] = k end
    end
    if #keys == 0 then return "-" end
    sort(keys)
    local parts = {}
    for i, k in ipairs(keys) do parts[i] = k .. " " .. report.format_count(errors[k]) end
    return concat(parts, ", ")
end

_M.FAILED_COUNTERS = { "sent", "completed", "drained", "timed_out", "message_errors", "unfinished" }

-- The failed runs (want = "failed": every run that did not measure) or the
-- degraded ones (want = "degraded"), from the run objects when there are
-- any, else from the summary's per-case lists.
local function listed_runs(runs, cases, want)
    local out = {}
    local function wanted(run)
        if want == "degraded" then return status.of(run) == "degraded" end
        return not status.measured(run)
    end
    if runs then
        for _, run in ipairs(runs) do
            if type(run) == "table" and wanted(run) then
                local f = {
                    case_id = type(run.case_id) == "string" and run.case_id or "(no case_id)",
                    repetition = num(run.repetition),
                    status = status.of(run),
                    error = type(run.error) == "string" and run.error or nil,
                    signal = type(run.signal) == "string" and run.signal or nil,
                    errors = counters_text(run.errors),
                }
                for _, k in ipairs(_M.FAILED_COUNTERS) do f[k] = num(run[k]) end
                out[#out + 1] = f
            end
        end
        return out
    end
    for _, c in ipairs(cases) do
        local list = want == "degraded" and c.degraded or c.failed
        for _, e in ipairs(type(list) == "table" and list or {}) do
            out[#out + 1] = {
                case_id = c.case_id, repetition = num(e.repetition),
                status = type(e.status) == "string" and e.status or "failed",
                error = type(e.error) == "string" and e.error or nil,
                signal = type(e.signal) == "string" and e.signal or nil,
                errors = counters_text(e.errors),
            }
        end
    end
    return out
end

local function text_or(v, missing)
    if type(v) == "string" and v ~= "" then return v end
    if type(v) == "number" then return axis_text(v) end
    if type(v) == "boolean" then return v and "yes" or "no" end
    return missing or "-"
end

local function env_rows(env)
    local mem = num(env.memory_bytes)
    local git = text_or(env.git_commit)
    if env.git_dirty == true then git = git .. " (dirty: uncommitted changes)" end
    return {
        { "CPU", text_or(env.cpu_model) },
        { "logical CPUs", text_or(env.logical_cpus) },
        { "memory", mem and format("%.1f GiB", mem / 1073741824) or "-" },
        { "OS", text_or(env.os) },
        { "kernel", text_or(env.kernel) },
        { "machine", text_or(env.machine) },
        { "host", text_or(env.hostname) },
        { "compiler", text_or(env.compiler) },
        { "C flags", text_or(env.c_flags) },
        { "build type", text_or(env.build_type) },
        { "sanitizers", text_or(env.sanitizers) },
        { "LuaJIT", text_or(env.luajit) },
        { "libuv", text_or(env.libuv) },
        { "OpenSSL", text_or(env.openssl) },
        { "arkbench", text_or(env.arkbench_version) },
        { "git commit", git },
        { "binary SHA-256", text_or(env.binary_sha256) },
        { "scenario", text_or(env.scenario_path) },
        { "scenario SHA-256", text_or(env.scenario_sha256) },
        { "started (UTC)", text_or(env.started_utc) },
        { "ended (UTC)", text_or(env.ended_utc) },
    }
end

local function distinct(cases, key)
    local out, seen = {}, {}
    for _, c in ipairs(cases) do
        local t = axis_text(scalar(case_value(c, key)))
        if not seen[t] then seen[t] = true; out[#out + 1] = t end
    end
    return concat(out, "/")
end

-- The repetitions per case, as distinct(): the scenario's `repetitions`,
-- or the runs the folder holds when more (after an --append).
local function distinct_runs(cases)
    local out, seen = {}, {}
    for _, c in ipairs(cases) do
        local reps, runs = num(scalar(case_value(c, "repetitions"))), num(c.runs)
        local t = axis_text(scalar(case_value(c, "repetitions")))
        if reps and runs and runs > reps then t = tostring(runs) end
        if not seen[t] then seen[t] = true; out[#out + 1] = t end
    end
    return concat(out, "/")
end

-- model = {
--   scenario, env, env_rows = { {label, text} }, settings = "...",
--   cases, varying, row_axes, rows = { label }, row_index = {label -> i},
--   label_of = {case -> label}, group_axes, x_axis (or nil), part_axes,
--   parts = { { title, values, cases, slug,
--               tables = { { title, x (value or nil), cases } } } },
--   findings = { finding }, failed = { failed run }, degraded = { degraded
--   run } (same fields: case_id, repetition, status, error, signal, errors,
--   the FAILED_COUNTERS), interrupted,
--   open (any open-loop case), thresholds (summary.thresholds or nil),
--   search (summary.search or nil), runs (the run objects, or {}),
-- }
function _M.build(summary, runs, env)
    env = type(env) == "table" and env or {}
    local cases = cases_of(summary)
    local varying = _M.varying(cases)
    local is_varying = {}
    for _, k in ipairs(varying) do is_varying[k] = true end

    local row_axes, is_row = {}, {}
    for _, k in ipairs(_M.ROW_AXES) do
        if is_varying[k] then row_axes[#row_axes + 1] = k; is_row[k] = true end
    end
    if #row_axes == 0 then row_axes[1] = "topology"; is_row.topology = true end

    -- a scenario's own part names (label) come first in every title
    local group_axes, in_group = {}, {}
    if is_varying.label then group_axes[1], in_group.label = "label", true end
    group_axes[#group_axes + 1], in_group.protocol = "protocol", true
    for _, k in ipairs(GROUP_ORDER) do
        if is_varying[k] and not in_group[k] and not is_row[k] then
            group_axes[#group_axes + 1] = k; in_group[k] = true
        end
    end
    for _, k in ipairs(varying) do
        if not in_group[k] and not is_row[k] then group_axes[#group_axes + 1] = k; in_group[k] = true end
    end
    -- the x axis must vary inside a partition: window zipped with clients
    -- (load pairs) does not, as every load has one window
    local function others(skip)
        local out = {}
        for _, k in ipairs(group_axes) do
            if k ~= skip then out[#out + 1] = k end
        end
        return out
    end
    local x_axis
    for _, k in ipairs(X_AXES) do
        if is_varying[k] and not is_row[k] then
            for _, p in ipairs(partition(cases, others(k))) do
                if #partition(p.cases, { k }) > 1 then x_axis = k break end
            end
            if x_axis then break end
        end
    end
    local part_axes = others(x_axis)

    local m = {
        scenario = text_or(runs and runs[1] and type(runs[1].scenario) == "table"
            and runs[1].scenario.name or nil, text_or(summary and summary.scenario, "scenario")),
        env = env, env_rows = env_rows(env), env_missing = next(env) == nil,
        shards = require("arkbench.report.shards").of(env, runs),
        cases = cases, varying = varying, row_axes = row_axes,
        group_axes = group_axes, x_axis = x_axis, part_axes = part_axes,
        rows = {}, row_index = {}, label_of = {},
    }
    for _, c in ipairs(cases) do
        local label = _M.row_label(c, row_axes)
        m.label_of[c] = label
        if not m.row_index[label] then
            m.rows[#m.rows + 1] = label
            m.row_index[label] = #m.rows
        end
    end

    m.parts = partition(cases, part_axes)
    local slugs = {}
    for _, p in ipairs(m.parts) do
        p.title = title_of(p.values, part_axes)
        local bits = {}
        for _, k in ipairs(part_axes) do
            local v = axis_text(scalar(p.values[k]))
            if k == "protocol" or k == "label" then bits[#bits + 1] = v
            elseif k == "clients" then bits[#bits + 1] = "c" .. v
            elseif k == "window" then bits[#bits + 1] = "w" .. v
            else bits[#bits + 1] = k .. v end
        end
        local slug = concat(bits, "-"):gsub("[^%w%.%-_]", "_")
        -- file names: at most SLUG_MAX bytes (a long case value would pass
        -- NAME_MAX), the cut ones told apart by a hash of the whole name
        if #slug > _M.SLUG_MAX then
            local h = require("arkbench.core").sha256(slug):sub(1, 12)
            slug = slug:sub(1, _M.SLUG_MAX - 13) .. "-" .. h
        end
        local base, n = slug, 1
        while slugs[slug] do
            n = n + 1
            slug = base .. "-" .. n
        end
        slugs[slug] = true
        p.slug = slug
        p.tables = {}
        for _, g in ipairs(partition(p.cases, x_axis and { x_axis } or {})) do
            local x = x_axis and g.values[x_axis]
            p.tables[#p.tables + 1] = {
                x = x, cases = g.cases,
                title = x_axis and ((x_axis == "payload" and "payload " or "") .. _M.value_text(x_axis, x)) or nil,
            }
        end
    end

    -- findings compare topologies: rows that differ only in execution (or
    -- another row axis) are the case tables' business, not a "best topology"
    m.findings = {}
    if #m.rows > 1 and is_varying.topology then
        for _, p in ipairs(m.parts) do
            for _, g in ipairs(finding_groups(p, m)) do m.findings[#m.findings + 1] = finding(g, m) end
        end
    end

    -- open loop (report/openloop.lua), thresholds and an SLO search, as the
    -- summary has them (cmd/cli.lua, cmd/search.lua)
    m.open = require("arkbench.report.openloop").any_open(cases)
    m.thresholds = type(summary) == "table" and type(summary.thresholds) == "table"
        and summary.thresholds or nil
    m.search = type(summary) == "table" and type(summary.search) == "table" and summary.search or nil
    -- rate sweeps: each group's knee against the asked rate (report/knee.lua)
    m.knees = require("arkbench.report.knee").all(m)
    m.runs = runs or {}

    m.tag_rows = require("arkbench.report.tags").rows(cases)
    m.failed = listed_runs(runs, cases, "failed")
    m.degraded = listed_runs(runs, cases, "degraded")
    m.interrupted = false
    for _, run in ipairs(runs or {}) do
        if type(run) == "table" and run.status == "interrupted" then m.interrupted = true end
    end
    local n_runs, n_failed, n_degraded = 0, 0, 0
    for _, c in ipairs(cases) do
        n_runs = n_runs + (num(c.runs) or 0)
        n_failed = n_failed + (num(c.runs) or 0) - (num(c.runs_ok) or 0)
        n_degraded = n_degraded + (num(c.runs_degraded) or 0)
    end
    m.settings = format("warm-up %s s, measured %s s, %s repetition(s) per case in fresh processes; "
        .. "%d cases, %d runs, %d failed%s", distinct(cases, "warmup"), distinct(cases, "duration"),
        distinct_runs(cases), #cases, n_runs, n_failed,
        n_degraded > 0 and format(", %d degraded", n_degraded) or "")
    return m
end

return _M
