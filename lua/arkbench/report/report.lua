-- report.lua -- human-readable views of a summary (stats.summarize).
--
--   report.terminal_table(summary [, axes]) -> string (ends with "\n")
--   report.axes(summary) -> { key, ... }   every case key whose value differs
--                                          between cases (report.varying)
--   report.varying(cases) -> the same over a list of summary cases
--   report.AXIS_ORDER
--   report.sort_axes(keys) -> keys, sorted in place: AXIS_ORDER first, the
--                             rest by name
--   report.format_count(v) / format_us(v) / format_fixed(v, decimals)
--       number formatters shared by every view ("-" for a missing value)
--
-- The summary may come fresh from stats.summarize or decoded from
-- summary.json: a missing value is nil or json.null, both shown as "-".
-- Output is UTF-8: text from the scenario (labels, vars, case ids, reasons)
-- keeps its characters, control characters and invalid bytes show as "?";
-- widths are counted in characters (code points), not bytes, so columns
-- line up on a UTF-8 terminal.
--
-- The files of a result folder (docs/reports.md):
--   report.write_reports(dir, runs, summary) -> { path, ... }, nil, model | nil, err
--       (model: the report_model the files were made from)
--       writes report.md, charts/*.svg and report.html from runs (the
--       objects of runs.jsonl), summary (stats.summarize of those runs) and
--       dir/env.json when present.  Nothing else goes into them (no clock,
--       no randomness), so `arkbench report DIR` rewrites them byte for byte.
--       Other .svg files in charts/ (an earlier layout's) are removed.
--       The views are report_md, report_svg and report_html over the model
--       of report_model (tables, chart partitions, findings, failed runs).
--   report.read_env(dir) -> env.json decoded | nil
--   report.compact(v) -> "914k" / "1.45M" / "53.5"   chart labels
--   report.stat(c, metric) -> median, min, max       of a summary case
--   report.num / axis_text / case_value / cases_of    helpers of the views

local type, ipairs, tostring = type, ipairs, tostring
local format, rep = string.format, string.rep
local concat = table.concat
local floor = math.floor
local open = io.open
local remove = os.remove
local core = require("arkbench.core")

local _M = {}

_M.AXIS_ORDER = {
    "label", "payload", "clients", "window", "topology", "execution", "work",
    "protocol", "framing", "rate", "search", "target",
}

function _M.sort_axes(keys)
    local rank = {}
    for i, k in ipairs(_M.AXIS_ORDER) do rank[k] = i end
    table.sort(keys, function(a, b)
        local ra, rb = rank[a], rank[b]
        if ra and rb then return ra < rb end
        if ra or rb then return ra ~= nil end
        return a < b
    end)
    return keys
end

-- Columns of the lines under a row that give a failure's or a degraded
-- run's whole reason and its error classes (wrapped, never cut).
_M.REASON_WIDTH = 80
-- The mark of a case whose numbers hold a degraded run.
_M.DEGRADED_MARK = "#"

-- Formatting ---------------------------------------------------------------

local function num(v)
    if type(v) == "number" and v == v then return v end
    return nil
end

-- "1234567" -> "1,234,567"; keeps a sign and a decimal part.
local function group(s)
    local sign, int, rest = s:match("^([-]?)(%d+)(.*)$")
    if not int then return s end
    int = int:reverse():gsub("(%d%d%d)", "%1,"):reverse()
    if int:sub(1, 1) == "," then int = int:sub(2) end
    return sign .. int .. rest
end

function _M.format_fixed(v, decimals)
    v = num(v)
    if not v then return "-" end
    local s = format("%." .. decimals .. "f", v)
    if s:match("^%-0%.?0*$") then s = s:sub(2) end -- no "-0.0"
    return group(s)
end

function _M.format_count(v)
    return _M.format_fixed(v, 0)
end

-- µs: one decimal below 100, none from 100 up.
function _M.format_us(v)
    v = num(v)
    if not v then return "-" end
    if v < 99.95 then return _M.format_fixed(v, 1) end
    return _M.format_fixed(v, 0)
end

local function width(s)
    -- UTF-8: every byte but continuation bytes starts a character.
    local _, cont = s:gsub("[\128-\191]", "")
    return #s - cont
end

-- The character that starts at byte i of s: its length in bytes and
-- whether it is printable (not a C0 or C1 control, an overlong form or a
-- surrogate); 1, false for a byte that starts no UTF-8 sequence.
local function char_at(s, i)
    local b = s:byte(i)
    if b < 0x80 then return 1, b >= 32 and b ~= 127 end
    local len = (b >= 0xC2 and b <= 0xDF) and 2 or (b >= 0xE0 and b <= 0xEF) and 3
        or (b >= 0xF0 and b <= 0xF4) and 4 or 0
    if len == 0 then return 1, false end
    for k = 1, len - 1 do
        local c = s:byte(i + k)
        if not c or c < 0x80 or c > 0xBF then return 1, false end
    end
    local c = s:byte(i + 1)
    local bad = (b == 0xC2 and c < 0xA0) or (b == 0xE0 and c < 0xA0) or (b == 0xED and c > 0x9F)
        or (b == 0xF0 and c < 0x90) or (b == 0xF4 and c > 0x8F)
    return len, not bad
end

-- s as the terminal should show it: its UTF-8 characters kept, one "?" per
-- control character or byte that is not part of a valid character.
local function printable(s)
    s = tostring(s)
    if not s:find("[^\32-\126]") then return s end
    local out, i, n = {}, 1, #s
    while i <= n do
        local len, ok = char_at(s, i)
        out[#out + 1] = ok and s:sub(i, i + len - 1) or "?"
        i = i + len
    end
    return table.concat(out)
end
_M.printable = printable

-- The first n characters of s (valid UTF-8) and the rest.
local function split_chars(s, n)
    local i = 1
    for _ = 1, n do
        if i > #s then break end
        i = i + (char_at(s, i))
    end
    return s:sub(1, i - 1), s:sub(i)
end

-- s without trailing blanks, in linear time (gsub("%s+$", "") retries the
-- pattern at every blank of a long inner run of them: quadratic)
local function rstrip(s)
    local e = #s
    local b = s:byte(e)
    while e > 0 and (b == 32 or b == 9 or b == 10 or b == 13) do
        e = e - 1
        b = s:byte(e)
    end
    return e == #s and s or s:sub(1, e)
end
_M.rstrip = rstrip

local function pad(s, w, right)
    local gap = w - width(s)
    if gap <= 0 then return s end
    if right then return rep(" ", gap) .. s end
    return s .. rep(" ", gap)
end

-- Axes ---------------------------------------------------------------------

local function cases_of(summary)
    if type(summary) == "table" and type(summary.cases) == "table" then
        return summary.cases
    end
    return {}
end

local function case_value(c, key)
    if type(c.case) ~= "table" then return nil end
    local v = c.case[key]
    -- a user axis (scenario key vars)
    if v == nil and type(c.case.vars) == "table" then v = c.case.vars[key] end
    if type(v) == "number" or type(v) == "string" or type(v) == "boolean" then return v end
    return nil
end

-- Every case key whose value differs between the cases (the matrix's axes,
-- user axes from vars, and any other key that differs between parts):
-- AXIS_ORDER first, then the others by name. Not the case's bookkeeping
-- (index, case_id, name) and no table value.
local NOT_AXES = { index = true, case_id = true, name = true }

local function scalar(v)
    local t = type(v)
    if t == "number" then return v == v and v or nil end
    if t == "string" or t == "boolean" then return v end
    return nil
end

function _M.varying(cases)
    local keys, seen = {}, {}
    for _, c in ipairs(cases) do
        if type(c.case) == "table" then
            for k, v in pairs(c.case) do
                if type(k) == "string" and not NOT_AXES[k] and scalar(v) ~= nil and not seen[k] then
                    seen[k] = true
                    keys[#keys + 1] = k
                end
            end
            -- the user axes (scenario key vars)
            for k, v in pairs(type(c.case.vars) == "table" and c.case.vars or {}) do
                if type(k) == "string" and scalar(v) ~= nil and not seen[k] then
                    seen[k] = true
                    keys[#keys + 1] = k
                end
            end
        end
    end
    _M.sort_axes(keys)
    local out = {}
    for _, key in ipairs(keys) do
        local first, differs = nil, false
        for i, c in ipairs(cases) do
            local v = scalar(case_value(c, key))
            if i == 1 then first = v elseif v ~= first then differs = true break end
        end
        if differs then out[#out + 1] = key end
    end
    return out
end

function _M.axes(summary)
    return _M.varying(cases_of(summary))
end

local function axis_text(v)
    if v == nil then return "-" end
    if type(v) == "number" then
        if v == floor(v) and v > -1e15 and v < 1e15 then return format("%.0f", v) end
        return format("%.14g", v)
    end
    return printable(v)
end

-- Terminal table -----------------------------------------------------------

local function median_of(c, name)
    local m = type(c.metrics) == "table" and c.metrics[name]
    if type(m) ~= "table" then return nil end
    return num(m.median), num(m.min), num(m.max)
end

-- "ECONNRESET 1, ETIMEDOUT 3", or nil
local classes_text = require("arkbench.run.status").classes_text

-- One line of text (blanks collapsed) as lines of at most `width`
-- characters (code points): the first begins with `first`, the others with `rest`;
-- breaks at blanks, and inside a word only when it alone is too long.
local chars = width

local function wrap(text, width, first, rest)
    local out, line, lead = {}, first, first
    for word in text:gmatch("%S+") do
        local sep = line == lead and "" or " "
        if chars(line) + #sep + chars(word) <= width then
            line = line .. sep .. word
        else
            if line ~= lead then
                out[#out + 1] = line
                line, lead = rest, rest
            end
            while chars(line) + chars(word) > width do
                local head, tail = split_chars(word, width - chars(line))
                out[#out + 1] = line .. head
                word = tail
                line, lead = rest, rest
            end
            line = line .. word
        end
    end
    if line ~= lead or #out == 0 then out[#out + 1] = line end
    return out
end
_M.wrap = wrap

-- A run's reason in full: "status: error (signal); errors: CLASS n, ...;
-- local errors: NAME n, ...; timed out n; reconnects n" (each part only
-- when the run has it)
local function reason_text(f, with_status)
    local status = type(f.status) == "string" and f.status or "failed"
    local why = type(f.error) == "string" and f.error or nil
    if type(f.signal) == "string" then why = why and (why .. " (" .. f.signal .. ")") or f.signal end
    local s = with_status and (why and (status .. ": " .. why) or status) or (why or status)
    local classes = classes_text(f.errors)
    if classes then s = s .. "; errors: " .. classes end
    local ours = classes_text(f.local_errors)
    if ours then s = s .. "; local errors: " .. ours end
    -- a degraded run's other faults, when it has them
    for _, k in ipairs({ { "timed_out", "timed out" }, { "reconnects", "reconnects" } }) do
        local n = num(f[k[1]])
        if n and n > 0 then s = s .. format("; %s %s", k[2], _M.format_count(n)) end
    end
    return printable(s:gsub("%s+", " "))
end

-- The row's text of a case without an ok run, and the whole of it.
local function failure_text(c)
    local f = type(c.failed) == "table" and c.failed[1] or nil
    if type(f) ~= "table" then return "FAILED", "FAILED" end
    local status = type(f.status) == "string" and f.status or "failed"
    local whole = "FAILED (" .. reason_text(f, true) .. ")"
    return whole, "FAILED (" .. printable(status) .. ", below)"
end

-- The lines under a row: a failure that did not fit it, and each degraded
-- run of the case, whole, wrapped at REASON_WIDTH.
local function reason_lines(c, failed_whole)
    local out = {}
    local function add(text)
        for _, l in ipairs(wrap(text, _M.REASON_WIDTH, "  ", "    ")) do out[#out + 1] = l end
    end
    if failed_whole then add(failed_whole) end
    for _, d in ipairs(type(c.degraded) == "table" and c.degraded or {}) do
        if type(d) == "table" then
            local rep = num(d.repetition)
            add(format("%s degraded (rep %s): %s", _M.DEGRADED_MARK, rep and format("%d", rep) or "-",
                reason_text(d, false)))
        end
    end
    return out
end

-- The lines under a tagged case's row: per tag (summary cases[i].tags, in
-- their order) "tag get: 93,266 rt/s, p50 5.9 µs, p99 34.6 µs" (and ",
-- errors n" when not 0), wrapped at REASON_WIDTH.
local function tag_lines(c)
    local out = {}
    for _, t in ipairs(type(c.tags) == "table" and c.tags or {}) do
        if type(t) == "table" and type(t.tag) == "string" then
            local rt = type(t.round_trips_per_s) == "table" and t.round_trips_per_s.median or nil
            local h = type(t.rtt_merged_us) == "table" and t.rtt_merged_us or {}
            -- "\1": a blank the lines do not break at (a number and its unit)
            local text = format("tag %s: %s\1rt/s, p50\1%s\1µs, p99\1%s\1µs", printable(t.tag),
                _M.format_count(rt), _M.format_us(h.p50), _M.format_us(h.p99))
            local errors = num(t.errors)
            if errors and errors > 0 then text = text .. ", errors\1" .. _M.format_count(errors) end
            for _, l in ipairs(wrap(text, _M.REASON_WIDTH, "  ", "    ")) do
                out[#out + 1] = (l:gsub("\1", " "))
            end
        end
    end
    return out
end

function _M.terminal_table(summary, axes)
    local cases = cases_of(summary)
    axes = axes or _M.axes(summary)

    -- columns: { title, right-aligned? }; first the axes (or case_id).
    local cols, rows = {}, {}
    local key_cols = {}
    if #axes == 0 and #cases > 1 then
        key_cols[1] = { title = "case", get = function(c) return printable(c.case_id or "-") end }
    else
        for _, key in ipairs(axes) do
            local all_numbers = true
            for _, c in ipairs(cases) do
                local v = case_value(c, key)
                if v ~= nil and type(v) ~= "number" then all_numbers = false end
            end
            key_cols[#key_cols + 1] = {
                title = key, right = all_numbers,
                get = function(c) return axis_text(case_value(c, key)) end,
            }
        end
    end
    for _, kc in ipairs(key_cols) do cols[#cols + 1] = { title = kc.title, right = kc.right } end
    local first_num = #cols + 1
    -- open loop: the asked and achieved rate, "!" where some run missed it
    local open = false
    for _, c in ipairs(cases) do open = open or c.load_model == "open" end
    -- churn (requests_per_connection): connections opened per second and
    -- the session setup's p50 (handshakes: TLS, WebSocket upgrade)
    local churn = false
    for _, c in ipairs(cases) do churn = churn or case_value(c, "requests_per_connection") ~= nil end
    local titles = { "round trips/s", "MiB/s", "p50 µs", "p99 µs", "CPU %", "RSS MiB" }
    if open then
        titles[3], titles[4] = "p50 µs*", "p99 µs*"
        titles[#titles + 1] = "rate asked/s"
        titles[#titles + 1] = "achieved/s"
    end
    if churn then
        titles[#titles + 1] = "conn/s"
        titles[#titles + 1] = "handshake p50 µs"
    end
    for _, t in ipairs(titles) do
        cols[#cols + 1] = { title = t, right = true }
    end
    local last_num = #cols
    cols[#cols + 1] = { title = "runs", right = true }

    -- round trips/s is "median [min, max]" with each part aligned on its own;
    -- a case holding a degraded run gets the mark after it
    local rt_w = { 0, 0, 0 }
    local rt = {}
    local marked = false
    for i, c in ipairs(cases) do
        local med, lo, hi = median_of(c, "round_trips_per_s")
        if med then
            rt[i] = { _M.format_count(med), _M.format_count(lo), _M.format_count(hi) }
            for j = 1, 3 do
                if #rt[i][j] > rt_w[j] then rt_w[j] = #rt[i][j] end
            end
        end
        if (num(c.runs_ok) or 0) > 0 and (num(c.runs_degraded) or 0) > 0 then marked = true end
    end

    for i, c in ipairs(cases) do
        local row = {}
        for _, kc in ipairs(key_cols) do row[#row + 1] = kc.get(c) end
        local runs_ok, runs = num(c.runs_ok) or 0, num(c.runs) or 0
        if runs_ok == 0 then
            row.failed, row.failed_short = failure_text(c)
            for _ = first_num, last_num do row[#row + 1] = "" end
        else
            local r = rt[i]
            local mark = marked and ((num(c.runs_degraded) or 0) > 0 and _M.DEGRADED_MARK or " ") or ""
            row[#row + 1] = (r and (pad(r[1], rt_w[1], true) .. " [" .. pad(r[2], rt_w[2], true)
                .. ", " .. pad(r[3], rt_w[3], true) .. "]") or "-") .. mark
            -- the echoed payload; a case that echoes none (http request
            -- mode) shows the bytes it read instead (transfer_mib_per_s)
            local mib = median_of(c, "payload_mib_per_s")
            if not mib or mib == 0 then mib = median_of(c, "transfer_mib_per_s") or mib end
            row[#row + 1] = _M.format_fixed(mib, 1)
            row[#row + 1] = _M.format_us((median_of(c, "rtt_p50_us")))
            row[#row + 1] = _M.format_us((median_of(c, "rtt_p99_us")))
            row[#row + 1] = _M.format_fixed((median_of(c, "cpu_percent")), 0)
            local rss = median_of(c, "rss_peak_bytes")
            row[#row + 1] = _M.format_fixed(rss and rss / 1048576, 1)
            if open then
                row[#row + 1] = _M.format_count((median_of(c, "rate_asked")))
                row[#row + 1] = _M.format_count((median_of(c, "rate_achieved")))
                    .. ((num(c.rate_missed) or 0) > 0 and "!" or "")
            end
            if churn then
                row[#row + 1] = _M.format_count((median_of(c, "connections_per_s")))
                row[#row + 1] = _M.format_us((median_of(c, "handshake_p50_us")))
            end
        end
        row[#row + 1] = format("%d/%d", runs_ok, runs)
        row.case = c
        rows[#rows + 1] = row
    end

    -- widths from content; a FAILED text spans the number columns; one that
    -- does not fit there, or that names error classes, goes whole under its
    -- row, wrapped (as does each degraded run's reason), so that no column
    -- is widened by it.
    local w = {}
    for j, col in ipairs(cols) do w[j] = width(col.title) end
    for _, row in ipairs(rows) do
        for j = 1, #cols do
            if width(row[j]) > w[j] then w[j] = width(row[j]) end
        end
    end
    local function span_width()
        local s = 2 * (last_num - first_num)
        for j = first_num, last_num do s = s + w[j] end
        return s
    end

    local lines = {}
    local function emit(cells)
        lines[#lines + 1] = rstrip(concat(cells, "  "))
    end
    local head, rule = {}, {}
    for j, col in ipairs(cols) do
        head[j] = pad(col.title, w[j], col.right)
        rule[j] = rep("-", w[j])
    end
    emit(head)
    emit(rule)
    for _, row in ipairs(rows) do
        local cells = {}
        for j = 1, first_num - 1 do cells[#cells + 1] = pad(row[j], w[j], cols[j].right) end
        local below
        if row.failed and (width(row.failed) > span_width() or row.failed:find("; errors: ", 1, true)) then
            below = row.failed
            cells[#cells + 1] = pad(row.failed_short, span_width(), false)
        elseif row.failed then
            cells[#cells + 1] = pad(row.failed, span_width(), false)
        else
            for j = first_num, last_num do cells[#cells + 1] = pad(row[j], w[j], true) end
        end
        cells[#cells + 1] = pad(row[#cols], w[#cols], true)
        emit(cells)
        for _, l in ipairs(reason_lines(row.case, below)) do lines[#lines + 1] = l end
        for _, l in ipairs(tag_lines(row.case)) do lines[#lines + 1] = l end
    end
    if open then
        lines[#lines + 1] = "* open loop: RTT from intended send (corrected for coordinated omission);"
            .. " ! = rate not met in some run"
    end
    if marked then
        for _, l in ipairs(_M.degraded_footer(cases)) do lines[#lines + 1] = l end
    end
    return concat(lines, "\n") .. "\n"
end

-- The footer of a table with degraded runs: the shards a merged run was
-- short of ("shard 1 of 3: interrupted", docs/distributed.md) when that is
-- why, the generic reason for the other degraded runs.
function _M.degraded_footer(cases)
    local shards, seen, other = {}, {}, false
    for _, c in ipairs(cases) do
        for _, d in ipairs(type(c.degraded) == "table" and c.degraded or {}) do
            local any = false
            for what, why in tostring(type(d) == "table" and d.error or ""):gmatch(
                    "(shard %d+ of %d+): (%a+) %(") do
                if why == "missing" or why == "failed" or why == "interrupted" then
                    any = true
                    what = what .. " " .. why
                    if not seen[what] then seen[what] = true; shards[#shards + 1] = what end
                end
            end
            if not any then other = true end
        end
    end
    local out = {}
    if #shards > 0 then
        out[#out + 1] = _M.DEGRADED_MARK .. " degraded: " .. concat(shards, ", ")
            .. " (the load applied was less than the case's); the other shards' numbers are kept"
    end
    if other or #shards == 0 then
        out[#out + 1] = _M.DEGRADED_MARK .. " degraded: some run had errors, timeouts or reconnects;"
            .. " its numbers are kept"
    end
    return out
end

-- Helpers the file reports share ---------------------------------------------

_M.num = num
_M.axis_text = axis_text
_M.case_value = case_value
_M.cases_of = cases_of
_M.stat = median_of

-- Chart labels: 3 significant digits with k/M/G ("914k", "1.45M", "53.5").
function _M.compact(v)
    v = num(v)
    if not v then return "-" end
    local a, suffix, div = v < 0 and -v or v, "", 1
    for _, u in ipairs({ { 1e9, "G" }, { 1e6, "M" }, { 1e3, "k" } }) do
        if a >= u[1] * 0.9995 then suffix, div = u[2], u[1] break end
    end
    local x = v / div
    local ax = x < 0 and -x or x
    local s
    if ax >= 99.95 then s = format("%.0f", x)
    elseif ax >= 9.995 then s = format("%.1f", x)
    else s = format("%.2f", x) end
    if s:find("%.") then s = s:gsub("0+$", ""):gsub("%.$", "") end
    if s == "-0" then s = "0" end
    return s .. suffix
end

-- Durable and checked, in C (core.write_file: temporary name, fsync,
-- rename): nil, "<path>: ENOSPC: no space left on device" on failure.
local function write_file(path, text)
    local ok, err = core.write_file(path, text)
    if not ok then return nil, path .. ": " .. tostring(err) end
    return true
end
_M.write_file = write_file

function _M.read_env(dir)
    local json = require("arkbench.util.json")
    local f = open(dir .. "/env.json", "rb")
    if not f then return nil end
    local e = json.decode(f:read("*a") or "")
    f:close()
    if type(e) ~= "table" then return nil end
    return e
end

-- charts/<this>: the names of the charts arkbench wrote there, one a line
_M.CHART_MANIFEST = ".arkbench-charts"

function _M.write_reports(dir, runs, summary)
    local md = require("arkbench.report.md")
    local svg = require("arkbench.report.svg")
    local html = require("arkbench.report.html")
    local model = require("arkbench.report.model").build(summary, runs, _M.read_env(dir))
    local charts = svg.charts(model)
    local written, fresh = {}, {}
    local charts_dir = dir .. "/charts"
    local made, merr, code = core.mkdir(charts_dir)
    if not made and code ~= "EEXIST" then return nil, charts_dir .. ": " .. tostring(merr) end
    -- charts/ may hold the user's own files: only the .svg files listed in
    -- our manifest (the charts we wrote last time) are ever removed
    local manifest = charts_dir .. "/" .. _M.CHART_MANIFEST
    local previous = {}
    local mf = open(manifest, "rb")
    if mf then
        for name in mf:lines() do
            if name:match("^[^/]+%.svg$") then previous[#previous + 1] = name end
        end
        mf:close()
    end
    local names = {}
    for _, ch in ipairs(charts) do
        local path = charts_dir .. "/" .. ch.file
        local ok, err = write_file(path, ch.svg)
        if not ok then return nil, err end
        written[#written + 1] = path
        fresh[ch.file] = true
        names[#names + 1] = ch.file
    end
    local ok, err = write_file(manifest, concat(names, "\n") .. (#names > 0 and "\n" or ""))
    if not ok then return nil, err end
    for _, name in ipairs(previous) do
        if not fresh[name] then remove(charts_dir .. "/" .. name) end
    end
    ok, err = write_file(dir .. "/report.md", md.render(model, charts))
    if not ok then return nil, err end
    written[#written + 1] = dir .. "/report.md"
    ok, err = write_file(dir .. "/report.html", html.render(model, charts))
    if not ok then return nil, err end
    written[#written + 1] = dir .. "/report.html"
    return written, nil, model
end

return _M
