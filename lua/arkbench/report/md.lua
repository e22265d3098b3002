-- report_md.lua -- report.md of a result folder (docs/reports.md).
--
--   report_md.render(model, charts) -> string
--       model: report_model.build(...); charts: report_svg.charts(model)
--       (linked as charts/<file>).
--   report_md.case_rows(model, cases) -> header, rows
--       the cells of one case table (also used by report_html):
--       header = { { title, right } }, rows = { { cells = {...}, case = c,
--       failed = bool, sort = { number|nil per cell } } }
--   report_md.finding_cells(f) / report_md.FINDING_HEADER
--   report_md.findings_text(model) -> string: the key findings as plain
--       lines for the terminal (`arkbench run` prints them), "" when none
--   report_md.failed_cells(f) / report_md.FAILED_HEADER
--
-- Numbers: round trips/s `median [min, max]` over the ok repetitions; the
-- other columns are medians of the per-run values (the same numbers as
-- summary.json cases[i].metrics.<name>.median, formatted as the terminal
-- table formats them).  A case without an ok run shows FAILED instead of
-- numbers; a case with some failed runs shows its ok/total runs.  Failed
-- runs are listed apart with their counters and never averaged in.
-- Degraded runs (status degraded) are averaged in: their case's round
-- trips/s carries report.DEGRADED_MARK, its runs cell says how many, and
-- they are listed apart too ("Degraded runs"), with their error classes.

local report = require("arkbench.report.report")

local type, ipairs, tostring = type, ipairs, tostring
local format = string.format
local concat = table.concat

local num, stat = report.num, report.stat
local fmt_count, fmt_us, fmt_fixed = report.format_count, report.format_us, report.format_fixed

local _M = {}

local function cell(s)
    s = tostring(s):gsub("[\r\n\t]+", " ")
    return (s:gsub("([\\|*_`<>])", "\\%1"))
end

local function table_md(header, rows)
    local out = {}
    local h, rule = {}, {}
    for i, col in ipairs(header) do
        h[i] = col[1]
        rule[i] = col[2] and "--:" or "---"
    end
    out[#out + 1] = "| " .. concat(h, " | ") .. " |"
    out[#out + 1] = "|" .. concat(rule, "|") .. "|"
    for _, r in ipairs(rows) do
        local cells = {}
        for i = 1, #header do cells[i] = cell(r[i] == nil and "" or r[i]) end
        out[#out + 1] = "| " .. concat(cells, " | ") .. " |"
    end
    return concat(out, "\n") .. "\n"
end
_M.table_md = table_md

local function failure_status(c)
    local counts, order = {}, {}
    for _, f in ipairs(type(c.failed) == "table" and c.failed or {}) do
        local s = type(f) == "table" and type(f.status) == "string" and f.status or "failed"
        if not counts[s] then order[#order + 1] = s; counts[s] = 0 end
        counts[s] = counts[s] + 1
    end
    local parts = {}
    for i, s in ipairs(order) do parts[i] = counts[s] > 1 and (s .. " x" .. counts[s]) or s end
    return #parts > 0 and concat(parts, ", ") or "failed"
end

-- the first interrupted run of a case that has its numbers, when every
-- one of its runs that did not count was interrupted
local function interrupted_entry(c)
    local first
    for _, f in ipairs(type(c.failed) == "table" and c.failed or {}) do
        if type(f) ~= "table" or f.status ~= "interrupted" then return nil end
        if not first and type(f.round_trips_per_s) == "number" then first = f end
    end
    return first
end

-- Open-loop columns (model.open): after RSS, before runs ok.
local OPEN_COLS = {
    { "rate asked/s", "rate_asked", fmt_count }, { "rate achieved/s", "rate_achieved", fmt_count },
    { "unsent", "unsent", fmt_count }, { "raw p99 µs (from actual send)", "rtt_raw_p99_us", fmt_us },
    { "send lag p99 µs", "send_lag_p99_us", fmt_us },
}
_M.OPEN_COLS = OPEN_COLS

-- Churn columns (a case with requests_per_connection): before runs ok.
local CHURN_COLS = {
    { "connections/s", "connections_per_s", fmt_count },
    { "connect p50 µs", "connect_p50_us", fmt_us },
    { "handshake p50 µs", "handshake_p50_us", fmt_us },
}
_M.CHURN_COLS = CHURN_COLS

function _M.case_rows(model, cases)
    local header = {}
    for _, k in ipairs(model.row_axes) do header[#header + 1] = { k, false } end
    local first = #header + 1
    local open = model.open == true
    local rtt = open and " (corrected)" or ""
    for _, t in ipairs({
        "round trips/s median [min, max]", "MiB/s", "p50 µs" .. rtt, "p95 µs" .. rtt, "p99 µs" .. rtt,
        "CPU %", "machine %", "RSS MiB",
    }) do
        header[#header + 1] = { t, true }
    end
    if open then
        for _, oc in ipairs(OPEN_COLS) do header[#header + 1] = { oc[1], true } end
        header[#header + 1] = { "rate met", false }
    end
    -- churn (requests_per_connection): connection setup rate and times
    local churn = false
    for _, c in ipairs(cases) do
        churn = churn or report.case_value(c, "requests_per_connection") ~= nil
    end
    if churn then
        for _, cc in ipairs(CHURN_COLS) do header[#header + 1] = { cc[1], true } end
    end
    header[#header + 1] = { "runs ok", true }
    local last = #header
    local rows = {}
    for _, c in ipairs(cases) do
        local r, sortv = {}, {}
        for _, k in ipairs(model.row_axes) do
            r[#r + 1] = report.axis_text(report.case_value(c, k))
        end
        local runs_ok, runs = num(c.runs_ok) or 0, num(c.runs) or 0
        local runs_text = format("%d/%d", runs_ok, runs)
        local intr = interrupted_entry(c)
        if runs_ok == 0 and intr then
            -- interrupted, with what it measured until then (never a median)
            r[first] = format("interrupted: %s rt/s over %s s", fmt_count(intr.round_trips_per_s),
                fmt_fixed(num(intr.measured_s), 2))
            for j = first + 1, last - 1 do r[j] = "" end
            r[first + 4] = fmt_us(num(intr.rtt_p99_us))
            r[last] = runs_text
            rows[#rows + 1] = { cells = r, case = c, failed = true, sort = sortv }
        elseif runs_ok == 0 then
            r[first] = "FAILED (" .. failure_status(c) .. ")"
            for j = first + 1, last - 1 do r[j] = "" end
            r[last] = runs_text
            rows[#rows + 1] = { cells = r, case = c, failed = true, sort = sortv }
        else
            local med, lo, hi = stat(c, "round_trips_per_s")
            local degraded = num(c.runs_degraded) or 0
            r[first] = (med and (fmt_count(med) .. " [" .. fmt_count(lo) .. ", " .. fmt_count(hi) .. "]") or "-")
                .. (degraded > 0 and (" " .. report.DEGRADED_MARK) or "")
            sortv[first] = med
            local cols = {
                { "payload_mib_per_s", function(v) return fmt_fixed(v, 1) end },
                { "rtt_p50_us", fmt_us }, { "rtt_p95_us", fmt_us }, { "rtt_p99_us", fmt_us },
                { "cpu_percent", function(v) return fmt_fixed(v, 0) end },
                { "cpu_machine_percent", function(v) return fmt_fixed(v, 1) end },
                { "rss_peak_bytes", function(v) return fmt_fixed(v and v / 1048576, 1) end },
            }
            for j, col in ipairs(cols) do
                local v = stat(c, col[1])
                r[first + j] = col[2](v)
                sortv[first + j] = v
            end
            if open then
                local j = first + #cols
                for _, oc in ipairs(OPEN_COLS) do
                    j = j + 1
                    local v = stat(c, oc[2])
                    r[j] = oc[3](v)
                    sortv[j] = v
                end
                local missed, n = num(c.rate_missed) or 0, num(c.rate_runs) or 0
                r[j + 1] = c.load_model ~= "open" and "closed loop"
                    or n == 0 and "-"
                    or missed > 0 and format("NO (missed in %d of %d)", missed, n)
                    or "yes"
            end
            if churn then
                local j = last - #CHURN_COLS - 1
                for _, cc in ipairs(CHURN_COLS) do
                    j = j + 1
                    local v = stat(c, cc[2])
                    r[j] = cc[3](v)
                    sortv[j] = v
                end
            end
            local notes = {}
            if runs_ok < runs then notes[#notes + 1] = (runs - runs_ok) .. " failed" end
            if degraded > 0 then notes[#notes + 1] = degraded .. " degraded" end
            local gb = num(c.generator_bound_runs) or 0
            if gb > 0 then notes[#notes + 1] = gb .. " generator-bound" end
            r[last] = #notes > 0 and (runs_text .. " (" .. concat(notes, ", ") .. ")") or runs_text
            rows[#rows + 1] = { cells = r, case = c, sort = sortv, degraded = degraded > 0 }
        end
        sortv[last] = runs_ok
    end
    return header, rows
end

_M.FINDING_HEADER = {
    { "group", false }, { "one thread", false }, { "best round trips/s", false },
    { "× one thread: median [min, max]", true }, { "over", true }, { "lowest p99", false },
}

local function ratio(v)
    return v and format("%.2f×", v) or "-"
end

function _M.finding_cells(f)
    local over = format("%d %s%s", f.n, f.x_axis or "case", f.n == 1 and "" or "s")
    return {
        f.title, f.one_thread and f.base or (f.base .. " (first; no 1-thread topology)"),
        f.best, format("%s [%s, %s]", ratio(f.ratio), ratio(f.ratio_min), ratio(f.ratio_max)),
        over,
        f.lowest_p99 and format("%s (%d of %d)", f.lowest_p99, f.lowest_p99_n, f.groups) or "-",
    }
end

-- "tcp, 16 clients, window 16: sharded:2 1.75x [1.50x, 2.00x] over 2 payloads
--  vs sharded:1; lowest p99 sharded:2 (2 of 2)", one line per finding
_M.GENERATOR_NOTE = "Runs whose load generator fell behind (docs/load-models.md, generator-bound"
    .. " runs): their corrected latency includes the generator's own lag, not only the server's."

-- "CASE rep N: generator-bound: the load generator fell behind by ...",
-- one per measured run that was generator-bound (report/openloop.lua)
function _M.generator_lines(model)
    local openloop, status = require("arkbench.report.openloop"), require("arkbench.run.status")
    local out = {}
    for _, r in ipairs(model.runs or {}) do
        if type(r) == "table" and r.generator_bound == true and status.measured(r) then
            -- the run's own note (as the worker wrote it), else worked out again
            local w
            for _, n in ipairs(type(r.notes) == "table" and r.notes or {}) do
                if type(n) == "string" and n:find("^generator%-bound: ") then w = n end
            end
            w = w or openloop.generator_warning(r) or "generator-bound"
            out[#out + 1] = format("%s rep %s: %s", tostring(r.case_id), tostring(r.repetition), w)
        end
    end
    return out
end

-- "rate sweep, payload=64: knee at 4,000 msg/s: ...", one per group with
-- 2+ rates (report/knee.lua)
function _M.knee_lines(model)
    local knee, out = require("arkbench.report.knee"), {}
    for _, k in ipairs(model.knees or {}) do
        out[#out + 1] = (k.title ~= "" and (k.title .. ": ") or "") .. knee.text(k.knee)
    end
    return out
end

function _M.findings_text(model)
    local knees = _M.knee_lines(model)
    if #model.findings == 0 and #knees == 0 then return "" end
    local lines = {}
    if #model.findings > 0 then
        lines[1] = "key findings: best topology by round trips/s, the median [min, max] of its per-"
            .. (model.x_axis or "case") .. " ratios to the one-thread topology"
    end
    for _, f in ipairs(model.findings) do
        local c = _M.finding_cells(f)
        lines[#lines + 1] = format("  %s: %s %s over %s vs %s; lowest p99 %s", c[1], c[3], c[4], c[5], c[2], c[6])
    end
    if #knees > 0 then
        lines[#lines + 1] = "key findings: the knee of each rate sweep (the highest asked rate before"
            .. " corrected p99 rises past 2x its low-load value)"
        for _, l in ipairs(knees) do lines[#lines + 1] = "  " .. l end
    end
    return concat(lines, "\n") .. "\n"
end

_M.FAILED_HEADER = {
    { "case", false }, { "rep", true }, { "status", false }, { "error", false }, { "errors", false },
    { "sent", true }, { "completed", true }, { "drained", true }, { "timed out", true },
    { "msg errors", true }, { "unfinished", true },
}

function _M.failed_cells(f)
    local why = f.error or ""
    if f.signal then why = why ~= "" and (why .. " (" .. f.signal .. ")") or f.signal end
    local r = {
        f.case_id, f.repetition and fmt_count(f.repetition) or "-", f.status, why ~= "" and why or "-",
        f.errors,
    }
    for _, k in ipairs(require("arkbench.report.model").FAILED_COUNTERS) do
        r[#r + 1] = f[k] and fmt_count(f[k]) or "-"
    end
    return r
end

local function cells_only(rows)
    local out = {}
    for i, r in ipairs(rows) do out[i] = r.cells end
    return out
end

-- Chart sections after the case tables: { section, title, note }
_M.SECTIONS = {
    { "load", "Latency vs load", "p50, p99 and p999 RTT from intended send (corrected) against the"
      .. " asked rate, per group of the other keys, the achieved rate dashed on the right axis; a"
      .. " hollow red ring marks a rate not met, a larger orange ring a generator-bound run, a dashed"
      .. " line the knee." },
    { "time", "Time series", "Round trips/s and p99 per interval of the measure phase, every"
      .. " repetition overlaid (report.html only)." },
}

_M.DEGRADED_NOTE = "Runs with errors, timeouts or reconnects that still completed round trips"
    .. " (status degraded): their numbers are in the tables, medians, charts and ratios, the case"
    .. " marked " .. report.DEGRADED_MARK .. "; counters are the run's own (messages)."

_M.OPEN_NOTE = "RTT from intended send (corrected for coordinated omission); raw p99 is from the"
    .. " actual send, as a closed-loop tool would show it; rate met = every run achieved at least"
    .. " 99 % of its asked rate with nothing left unsent (docs/load-models.md)"

-- a code span: its text is literal, so only a backquote needs care
local function code(s)
    return "`" .. tostring(s):gsub("[\r\n\t]+", " "):gsub("`", "'") .. "`"
end

-- Markdown of the thresholds and of an SLO search (both views use the
-- texts): a list of lines, each ending with a blank line.
function _M.gate_lines(model)
    local out = {}
    local th = model.thresholds
    if th then
        out[#out + 1] = "## Thresholds\n\n"
        local crossed = {}
        for _, r in ipairs(type(th.results) == "table" and th.results or {}) do
            if r.crossed == true then crossed[#crossed + 1] = r end
        end
        local rules = {}
        for i, t in ipairs(type(th.rules) == "table" and th.rules or {}) do rules[i] = code(t) end
        out[#out + 1] = format("Rules: %s, checked per case on the median over its ok repetitions"
            .. " (rate_met: every ok repetition).\n\n", concat(rules, ", "))
        if #crossed == 0 then
            out[#out + 1] = "Every threshold held in every case.\n\n"
        else
            local rows = {}
            for i, r in ipairs(crossed) do
                rows[i] = { tostring(r.case_id), tostring(r.rule), tostring(r.why or "-") }
            end
            out[#out + 1] = format("**%d threshold%s crossed** (exit code 3 when every run was"
                .. " ok):\n\n", #crossed,
                                   #crossed == 1 and "" or "s")
            out[#out + 1] = table_md({ { "case", false }, { "rule", false }, { "value", false } }, rows) .. "\n"
        end
    end
    local se = model.search
    if se then
        out[#out + 1] = "## SLO search\n\n"
        local slo = {}
        for i, t in ipairs(type(se.slo) == "table" and se.slo or {}) do slo[i] = tostring(t) end
        out[#out + 1] = format("SLO %s and rate met, rate %s .. %s /s: answer **%s**%s.\n\n",
            code(concat(slo, " and ")), fmt_count(se.from), fmt_count(se.to),
            num(se.answer) and (fmt_count(se.answer) .. " messages/s")
                or (type(se.stopped) == "string" and ("none, " .. se.stopped) or "none"),
            type(se.reason) == "string" and (" (" .. se.reason .. ")") or "")
        if (num(se.answer_failed) or 0) > 0 then
            out[#out + 1] = format("**%d of %d repetitions at the answer did not pass**: the knee is"
                .. " noisy here.\n\n", se.answer_failed, num(se.answer_runs) or 0)
        end
        local rows = {}
        for i, p in ipairs(type(se.probes) == "table" and se.probes or {}) do
            rows[i] = { tostring(i), fmt_count(p.rate), p.pass == true and "pass" or "fail",
                        type(p.why) == "string" and p.why or "-" }
        end
        out[#out + 1] = table_md({ { "probe", true }, { "rate/s", true }, { "result", false },
                                   { "why", false } }, rows) .. "\n"
    end
    return out
end

function _M.render(model, charts)
    local out = {}
    local function add(s) out[#out + 1] = s end
    local env = model.env
    add("# arkbench report: " .. cell(model.scenario) .. "\n\n")
    local host = {}
    if type(env.hostname) == "string" then host[#host + 1] = env.hostname end
    if type(env.cpu_model) == "string" then host[#host + 1] = env.cpu_model end
    if num(env.logical_cpus) then host[#host + 1] = report.axis_text(env.logical_cpus) .. " logical CPUs" end
    add(format("Scenario `%s`, %s to %s (UTC)%s.\n\n",
        type(env.scenario_path) == "string" and env.scenario_path or model.scenario,
        type(env.started_utc) == "string" and env.started_utc or "?",
        type(env.ended_utc) == "string" and env.ended_utc or "?",
        -- a merge over several hosts: its sentence below names them
        #host > 0 and not (model.shards and model.shards.multi_host)
            and (", on " .. cell(concat(host, ", "))) or ""))
    add(cell(model.settings) .. ".\n\n")
    local sh = model.shards and require("arkbench.report.shards")
    if sh then
        add(sh.sentence(model.shards) .. " See [Shards](#shards).\n\n")
        if model.shards.multi_host then add(sh.CPU_NOTE .. "\n\n") end
    end
    add("Round trips/s is `median [min, max]` over the ok repetitions (each in a fresh process); "
        .. "the other columns are medians of the per-run values. CPU % is user + sys time over the "
        .. "measured interval (100 = one core); machine % divides it by the logical CPUs. "
        .. "Failed runs are listed apart and never averaged in"
        .. (#model.degraded > 0 and ("; degraded runs (errors, timeouts or reconnects, numbers kept)"
            .. " are averaged in and their cases marked " .. report.DEGRADED_MARK) or "") .. ".\n\n")
    if model.interrupted then
        add("**This run was interrupted**: cases or repetitions after the interruption are missing.\n\n")
    end
    if model.env_missing then add("(env.json is missing: no environment recorded.)\n\n") end
    if model.open then
        add("Open-loop cases (a `rate`): the p50/p95/p99 columns are the " .. _M.OPEN_NOTE .. ".\n\n")
    end
    for _, s in ipairs(_M.gate_lines(model)) do add(s) end
    local gen = _M.generator_lines(model)
    if #gen > 0 then
        add("## Generator-bound runs\n\n" .. _M.GENERATOR_NOTE .. "\n\n")
        for _, l in ipairs(gen) do add("- " .. cell(l) .. "\n") end
        add("\n")
    end

    if #model.findings > 0 then
        add("## Key findings\n\n")
        add("Best topology by round trips/s in each group, as the median of its per-"
            .. (model.x_axis or "case") .. " ratios to the one-thread topology (min and max of those "
            .. "ratios in brackets); lowest p99: the topology with the lowest median p99 in most "
            .. (model.x_axis or "case") .. " groups.\n\n")
        local rows = {}
        for i, f in ipairs(model.findings) do rows[i] = _M.finding_cells(f) end
        add(table_md(_M.FINDING_HEADER, rows) .. "\n")
    end
    local knees = _M.knee_lines(model)
    if #knees > 0 then
        if #model.findings == 0 then add("## Key findings\n\n") end
        add("The knee of each rate sweep: the highest asked rate before the corrected p99 rises past"
            .. " 2× its value at the lowest rate.\n\n")
        for _, l in ipairs(knees) do add("- " .. cell(l) .. "\n") end
        add("\n")
    end

    local by_part, by_section = {}, { load = {}, time = {} }
    for _, ch in ipairs(charts or {}) do
        if ch.section then
            local l = by_section[ch.section]
            l[#l + 1] = ch
        end
    end
    for _, ch in ipairs(charts or {}) do
        if not ch.part then goto next_chart end
        by_part[ch.part] = by_part[ch.part] or {}
        do
            local l = by_part[ch.part]
            l[#l + 1] = ch
        end
        ::next_chart::
    end
    for _, part in ipairs(model.parts) do
        add("## " .. cell(part.title) .. "\n\n")
        for _, t in ipairs(part.tables) do
            if t.title then add("### " .. cell(t.title) .. "\n\n") end
            local header, rows = _M.case_rows(model, t.cases)
            add(table_md(header, cells_only(rows)) .. "\n")
        end
        for _, ch in ipairs(by_part[part] or {}) do
            add(format("![%s](charts/%s)\n\n", cell(ch.title), ch.file))
        end
    end

    if #(model.tag_rows or {}) > 0 then
        local tags = require("arkbench.report.tags")
        add("## Tags\n\n" .. tags.NOTE .. "\n\n")
        add(table_md(tags.HEADER, cells_only(model.tag_rows)) .. "\n")
    end

    for _, sec in ipairs(_M.SECTIONS) do
        if #by_section[sec[1]] > 0 then
            add("## " .. sec[2] .. "\n\n" .. sec[3] .. "\n\n")
            for _, ch in ipairs(by_section[sec[1]]) do
                add(format("![%s](charts/%s)\n\n", cell(ch.title), ch.file))
            end
        end
    end

    add("## Failed runs\n\n")
    if #model.failed == 0 then
        add(#model.degraded > 0 and "None: every run measured (the degraded ones are below).\n\n"
            or "None: every run was ok.\n\n")
    else
        add("Not part of any median, chart or ratio. Counters are the run's own (messages).\n\n")
        local rows = {}
        for i, f in ipairs(model.failed) do rows[i] = _M.failed_cells(f) end
        add(table_md(_M.FAILED_HEADER, rows) .. "\n")
    end

    if #model.degraded > 0 then
        add("## Degraded runs\n\n")
        add(_M.DEGRADED_NOTE .. "\n\n")
        local rows = {}
        for i, f in ipairs(model.degraded) do rows[i] = _M.failed_cells(f) end
        add(table_md(_M.FAILED_HEADER, rows) .. "\n")
    end

    if sh then
        add("## Shards\n\n" .. sh.NOTE .. "\n\n")
        add(table_md(sh.HEADER, sh.cells(model.shards)) .. "\n")
        add(table_md(sh.SKEW_HEADER, sh.skew_cells(model.shards)) .. "\n")
    end

    add("## Environment\n\n")
    add(table_md({ { "item", false }, { "value", false } }, model.env_rows))
    return (concat(out):gsub("\n+$", "\n"))
end

return _M
