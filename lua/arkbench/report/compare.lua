-- compare.lua -- `arkbench compare A B` and `arkbench compare DIR --pair KEY`.
--
--   compare.load(dir) -> side | nil, err
--       side = { dir, runs, summary, env (nil without env.json) }
--   compare.pair_key(case [, skip]) -> "clients=1 payload=64 ..."
--       every resolved scalar key of a case but IGNORED (and skip), sorted:
--       the identity of a case across result folders.
--   compare.refusals(a, b) -> { "hostname differs: A vm, B other", ... }
--       what makes two folders incomparable without --force: the host
--       (env cpu_model, hostname, logical_cpus), duration, repetitions.
--   compare.ratio(ca, cb, metric) -> { r, lo, hi } | nil
--       B median / A median, lo = B min / A max, hi = B max / A min; nil
--       when a side has no ok run or no positive value (failed cases are
--       never part of a ratio; a degraded run counts as ok here, its rt/s
--       marked report.DEGRADED_MARK in compare.format).
--   compare.folders(a, b) -> result;  compare.within(side, key) -> result | nil, err
--   compare.format(result) -> text
--   compare.run(opts) -> exit code, text, err
--       opts = { dirs = { A [, B] }, force = bool, pair = KEY, svg = FILE (A B: the
--                paired cases' latency by percentile, report/svg_pct.lua),
--                max_regression = fraction (0.05 for --max-regression 5%) }
--       2 with err for a refusal or bad input; 3 when max_regression is given
--       and compare.regressions finds one (each printed); 0 otherwise.
--   compare.regressions(result, max) -> { "regression: throughput ...", ... }
--
-- result = { title, a_name, b_name, rows = { { label, a = case, b = case,
--   rt, p99, cpu (ratios), why = "failed in A", tags = { { tag, rt, p50,
--   p99 (ratios; compare.tag_ratio), a_rt, b_rt } } for the tags both
--   cases have, tags_a_only, tags_b_only = { name } } }, medians = { rt, p99,
--   cpu, n }, by_value = { { value, rt = median, n } } (for --pair),
--   by_axis = { { key, values = { { value, rt = median, n } } } } (for
--   --pair: the median throughput ratio per value of each other key that
--   takes 2+ values among the paired cases, e.g. per payload and per
--   topology), only_a = { case_id }, only_b = { case_id } }

local stats = require("arkbench.report.stats")
local json = require("arkbench.util.json")
local report = require("arkbench.report.report")

local type, ipairs, pairs, tostring = type, ipairs, pairs, tostring
local format, rep = string.format, string.rep
local concat, sort = table.concat, table.sort

local num, stat = report.num, report.stat

local _M = {}
local key_difference, tags_text

_M.IGNORED = {
    warmup = true, duration = true, repetitions = true, index = true, case_id = true, name = true,
    max_error_rate = true,
}
_M.HOST_KEYS = { "cpu_model", "hostname", "logical_cpus" }

function _M.load(dir)
    local runs, err, warning = stats.read_jsonl(dir .. "/runs.jsonl")
    if not runs then return nil, "not a result folder: " .. tostring(err) end
    -- a run still writing there: its numbers are not all in yet
    local busy = require("arkbench.run.folder").live_lock(dir)
    if busy then return nil, busy end
    local env, eerr = require("arkbench.report.runfile").read_json(dir .. "/env.json")
    if eerr then return nil, eerr end
    if warning then io.stderr:write("arkbench: warning: ", warning, "\n") end
    return {
        dir = dir, runs = runs, summary = stats.summarize(runs, {}),
        env = env,
    }
end

local function scalar_text(v)
    local t = type(v)
    if t == "number" then return v == v and json.number_text(v) or nil end
    if t == "string" then return v end
    if t == "boolean" then return tostring(v) end
    if t == "table" then return json.encode(v) end
    return nil
end

function _M.pair_key(case, skip)
    if type(case) ~= "table" then return "" end
    local parts = {}
    for k, v in pairs(case) do
        if type(k) == "string" and not _M.IGNORED[k] and k ~= skip then
            local t = scalar_text(v)
            if t then parts[#parts + 1] = k .. "=" .. t end
        end
    end
    sort(parts)
    return concat(parts, " ")
end

local function values_of(side, key)
    local seen, out = {}, {}
    for _, c in ipairs(side.summary.cases) do
        local t = type(c.case) == "table" and scalar_text(c.case[key]) or nil
        -- repetitions: more when the folder holds more runs (--append)
        local runs, reps = tonumber(c.runs), type(c.case) == "table" and tonumber(c.case[key])
        if key == "repetitions" and runs and reps and runs > reps then t = scalar_text(runs) end
        t = t or "-"
        if not seen[t] then seen[t] = true; out[#out + 1] = t end
    end
    sort(out)
    return concat(out, ", ")
end

function _M.refusals(a, b)
    local out = {}
    if not a.env or not b.env then
        out[#out + 1] = format("host unknown: %s has no env.json", not a.env and "A" or "B")
    else
        for _, k in ipairs(_M.HOST_KEYS) do
            local va, vb = scalar_text(a.env[k]) or "-", scalar_text(b.env[k]) or "-"
            if va ~= vb then out[#out + 1] = format("host differs: %s is A %s, B %s", k, va, vb) end
        end
    end
    for _, k in ipairs({ "duration", "repetitions" }) do
        local va, vb = values_of(a, k), values_of(b, k)
        if va ~= vb then out[#out + 1] = format("%s differs: A %s, B %s", k, va, vb) end
    end
    return out
end

function _M.ratio(ca, cb, metric)
    if (num(ca.runs_ok) or 0) == 0 or (num(cb.runs_ok) or 0) == 0 then return nil end
    local ma, la, ha = stat(ca, metric)
    local mb, lb, hb = stat(cb, metric)
    if not (ma and mb) or ma <= 0 then return nil end
    local r = { r = mb / ma }
    if la and ha and lb and hb and la > 0 then r.lo, r.hi = lb / ha, hb / la end
    return r
end

local function why_excluded(result, ca, cb)
    if (num(ca.runs_ok) or 0) == 0 then return result.a_failed end
    if (num(cb.runs_ok) or 0) == 0 then return result.b_failed end
    return nil
end

-- The tags of a summary case by name, and their names in its order.
local function tags_by_name(c)
    local by, order = {}, {}
    for _, t in ipairs(type(c.tags) == "table" and c.tags or {}) do
        if type(t) == "table" and type(t.tag) == "string" and not by[t.tag] then
            by[t.tag] = t
            order[#order + 1] = t.tag
        end
    end
    return by, order
end

-- B/A of one tag of a pair (summary cases[i].tags entries ta, tb): rt/s
-- as compare.ratio does it (medians, B min / A max .. B max / A min), p50
-- and p99 of the merged histograms (one number each side, so no range).
function _M.tag_ratio(ta, tb)
    local ra = type(ta.round_trips_per_s) == "table" and ta.round_trips_per_s or {}
    local rb = type(tb.round_trips_per_s) == "table" and tb.round_trips_per_s or {}
    local out = { a_rt = num(ra.median), b_rt = num(rb.median) }
    local ma, mb = num(ra.median), num(rb.median)
    if ma and mb and ma > 0 then
        out.rt = { r = mb / ma }
        local la, ha, lb, hb = num(ra.min), num(ra.max), num(rb.min), num(rb.max)
        if la and ha and lb and hb and la > 0 then out.rt.lo, out.rt.hi = lb / ha, hb / la end
    end
    local ha = type(ta.rtt_merged_us) == "table" and ta.rtt_merged_us or {}
    local hb = type(tb.rtt_merged_us) == "table" and tb.rtt_merged_us or {}
    for _, k in ipairs({ "p50", "p99" }) do
        local a, b = num(ha[k]), num(hb[k])
        if a and b and a > 0 then out[k] = { r = b / a } end
    end
    return out
end

-- Per tag both cases of a paired row have: row.tags = { { tag, rt, p50,
-- p99, a_rt, b_rt } } (A's order); row.tags_a_only / tags_b_only: names.
local function tag_rows(row)
    local by_a, order_a = tags_by_name(row.a)
    local by_b, order_b = tags_by_name(row.b)
    if #order_a == 0 and #order_b == 0 then return end
    row.tags, row.tags_a_only, row.tags_b_only = {}, {}, {}
    for _, name in ipairs(order_a) do
        if by_b[name] then
            local r = _M.tag_ratio(by_a[name], by_b[name])
            r.tag = name
            row.tags[#row.tags + 1] = r
        else
            row.tags_a_only[#row.tags_a_only + 1] = name
        end
    end
    for _, name in ipairs(order_b) do
        if not by_a[name] then row.tags_b_only[#row.tags_b_only + 1] = name end
    end
end

local function add_pair(result, label, ca, cb)
    local row = { label = label, a = ca, b = cb, why = why_excluded(result, ca, cb) }
    if not row.why then
        row.rt = _M.ratio(ca, cb, "round_trips_per_s")
        row.p99 = _M.ratio(ca, cb, "rtt_p99_us")
        row.cpu = _M.ratio(ca, cb, "cpu_percent")
        if not row.rt then row.why = "no throughput value" end
    end
    if not row.why then tag_rows(row) end
    result.rows[#result.rows + 1] = row
    return row
end

local function medians(rows)
    local rt, p99, cpu = {}, {}, {}
    for _, row in ipairs(rows) do
        if not row.why then
            rt[#rt + 1] = row.rt.r
            if row.p99 then p99[#p99 + 1] = row.p99.r end
            if row.cpu then cpu[#cpu + 1] = row.cpu.r end
        end
    end
    return { rt = stats.median(rt), p99 = stats.median(p99), cpu = stats.median(cpu), n = #rt }
end

local function index_cases(side, skip)
    local by, order = {}, {}
    for _, c in ipairs(side.summary.cases) do
        local k = _M.pair_key(c.case, skip)
        if by[k] == nil then
            by[k] = c
            order[#order + 1] = k
        end
    end
    return by, order
end

local function case_id(c)
    return type(c.case_id) == "string" and c.case_id or "(no case_id)"
end

function _M.folders(a, b)
    local result = {
        title = "B/A per case (B = " .. b.dir .. ", A = " .. a.dir .. ")",
        a_name = "A", b_name = "B", a_failed = "failed in A", b_failed = "failed in B",
        rows = {}, only_a = {}, only_b = {},
    }
    local by_a, order_a = index_cases(a)
    local by_b, order_b = index_cases(b)
    for _, k in ipairs(order_a) do
        if by_b[k] then
            add_pair(result, case_id(by_a[k]), by_a[k], by_b[k])
        else
            result.only_a[#result.only_a + 1] = case_id(by_a[k])
        end
    end
    for _, k in ipairs(order_b) do
        if not by_a[k] then result.only_b[#result.only_b + 1] = case_id(by_b[k]) end
    end
    result.medians = medians(result.rows)
    return result
end

-- The median throughput ratio per value of every key but `skip` that takes
-- 2+ values among the rows with a ratio (report.sort_axes order; values in
-- the order of the rows).
local function by_axis(rows, skip)
    local per, keys = {}, {}
    for _, row in ipairs(rows) do
        if not row.why and type(row.b.case) == "table" then
            for k, v in pairs(row.b.case) do
                local t = type(k) == "string" and not _M.IGNORED[k] and k ~= skip and scalar_text(v)
                if t then
                    local p = per[k]
                    if not p then
                        p = { order = {}, ratios = {} }
                        per[k] = p
                        keys[#keys + 1] = k
                    end
                    if not p.ratios[t] then p.ratios[t] = {}; p.order[#p.order + 1] = t end
                    local l = p.ratios[t]
                    l[#l + 1] = row.rt.r
                end
            end
        end
    end
    report.sort_axes(keys)
    local out = {}
    for _, k in ipairs(keys) do
        local p = per[k]
        if #p.order > 1 then
            local vals = {}
            for i, t in ipairs(p.order) do
                vals[i] = { value = t, rt = stats.median(p.ratios[t]), n = #p.ratios[t] }
            end
            out[#out + 1] = { key = k, values = vals }
        end
    end
    return out
end

function _M.within(side, key)
    local cases = side.summary.cases
    local values, seen = {}, {}
    for _, c in ipairs(cases) do
        local v = type(c.case) == "table" and scalar_text(c.case[key]) or nil
        if v and not seen[v] then seen[v] = true; values[#values + 1] = v end
    end
    if #values < 2 then
        return nil, format("--pair %s: '%s' does not vary in %s (values: %s)", key, key, side.dir,
            #values == 0 and "none" or concat(values, ", "))
    end
    local base_value = values[1]
    local result = {
        title = format("%s: each value against %s=%s (baseline), per case", side.dir, key, base_value),
        a_name = key .. "=" .. base_value, b_name = "this case", a_failed = "baseline failed",
        b_failed = "failed", rows = {}, only_a = {}, only_b = {},
        by_value = {}, pair = key, base = base_value,
    }
    local groups, order = {}, {}
    for _, c in ipairs(cases) do
        local k = _M.pair_key(c.case, key)
        if not groups[k] then groups[k] = {}; order[#order + 1] = k end
        local v = type(c.case) == "table" and scalar_text(c.case[key]) or "-"
        if groups[k][v] == nil then groups[k][v] = c end
    end
    local per_value = {}
    for _, k in ipairs(order) do
        local g = groups[k]
        local base = g[base_value]
        for _, v in ipairs(values) do
            local c = g[v]
            if v ~= base_value and c then
                if base then
                    local row = add_pair(result, case_id(c), base, c)
                    row.value = v
                    if not row.why then
                        per_value[v] = per_value[v] or {}
                        local l = per_value[v]
                        l[#l + 1] = row.rt.r
                    end
                else
                    result.only_b[#result.only_b + 1] = case_id(c) .. " (no " .. key .. "=" .. base_value .. " case)"
                end
            end
        end
    end
    for _, v in ipairs(values) do
        if v ~= base_value then
            local l = per_value[v] or {}
            result.by_value[#result.by_value + 1] = { value = v, rt = stats.median(l), n = #l }
        end
    end
    result.by_axis = by_axis(result.rows, key)
    result.medians = medians(result.rows)
    return result
end

-- Formatting -------------------------------------------------------------------

local function x(v) return v and format("%.2fx", v) or "-" end

local function ratio_text(r)
    if not r then return "-" end
    if r.lo and r.hi then return format("%s [%s, %s]", x(r.r), x(r.lo), x(r.hi)) end
    return x(r.r)
end

local function width(s)
    local _, cont = s:gsub("[\128-\191]", "")
    return #s - cont
end

local function aligned(header, rows, right)
    local w = {}
    for j, h in ipairs(header) do w[j] = width(h) end
    for _, r in ipairs(rows) do
        for j = 1, #header do
            if width(r[j]) > w[j] then w[j] = width(r[j]) end
        end
    end
    local lines = {}
    local function emit(cells)
        local out = {}
        for j = 1, #header do
            local gap = rep(" ", w[j] - width(cells[j]))
            out[j] = right[j] and (gap .. cells[j]) or (cells[j] .. gap)
        end
        lines[#lines + 1] = require("arkbench.report.report").rstrip(concat(out, "  "))
    end
    emit(header)
    local rule = {}
    for j = 1, #header do rule[j] = rep("-", w[j]) end
    emit(rule)
    for _, r in ipairs(rows) do emit(r) end
    return concat(lines, "\n") .. "\n"
end

-- The per-tag table under the cases' (tags both cases of a pair have), and
-- a line per case naming the tags only one side has; nil without tags.
tags_text = function(result)
    local rows, one_side = {}, {}
    for _, row in ipairs(result.rows) do
        for _, t in ipairs(row.tags or {}) do
            rows[#rows + 1] = { row.label, t.tag, report.format_count(t.a_rt), report.format_count(t.b_rt),
                ratio_text(t.rt), ratio_text(t.p50), ratio_text(t.p99) }
        end
        for _, side in ipairs({ { "A", row.tags_a_only }, { "B", row.tags_b_only } }) do
            if side[2] and #side[2] > 0 then
                one_side[#one_side + 1] = format("tags only in %s for %s: %s",
                    side[1] == "A" and result.a_name or result.b_name, row.label, concat(side[2], ", "))
            end
        end
    end
    if #rows == 0 and #one_side == 0 then return nil end
    local out = {}
    if #rows > 0 then
        out[1] = "per tag, B/A (tags both sides have; p50 and p99 of the merged histograms):\n"
        out[2] = aligned({ "case", "tag", result.a_name .. " rt/s", result.b_name .. " rt/s",
            "rt/s ratio [min, max]", "p50 ratio", "p99 ratio" }, rows,
            { false, false, true, true, false, false, false })
    end
    for _, l in ipairs(one_side) do out[#out + 1] = l .. "\n" end
    return concat(out)
end

function _M.format(result)
    local out = { result.title, "" }
    local header = { "case", result.a_name .. " rt/s", result.b_name .. " rt/s",
        "rt/s ratio [min, max]", "p99 ratio [min, max]", "CPU ratio [min, max]" }
    local rows = {}
    local marked = false
    -- a side whose median holds a degraded run: its rt/s with the mark
    local function side(c, m)
        if (num(c.runs_ok) or 0) == 0 then return "FAILED" end
        if (num(c.runs_degraded) or 0) > 0 then
            marked = true
            return report.format_count(m) .. " " .. report.DEGRADED_MARK
        end
        return report.format_count(m)
    end
    for _, row in ipairs(result.rows) do
        local ma = stat(row.a, "round_trips_per_s")
        local mb = stat(row.b, "round_trips_per_s")
        rows[#rows + 1] = {
            row.label,
            side(row.a, ma),
            side(row.b, mb),
            row.why and ("excluded: " .. row.why) or ratio_text(row.rt),
            row.why and "" or ratio_text(row.p99), row.why and "" or ratio_text(row.cpu),
        }
    end
    out[#out + 1] = aligned(header, rows, { false, true, true, false, false, false })
    local tagged = tags_text(result)
    if tagged then out[#out + 1] = tagged end
    local m = result.medians
    -- one line per value of the key; with a single value that line would
    -- repeat the overall median below, so it is left out
    if result.by_value and #result.by_value > 1 then
        for _, bv in ipairs(result.by_value) do
            out[#out + 1] = format("median throughput ratio %s=%s / %s=%s: %s over %d case%s",
                result.pair, bv.value, result.pair, result.base, x(bv.rt), bv.n, bv.n == 1 and "" or "s")
        end
    end
    for _, ax in ipairs(result.by_axis or {}) do
        local parts = {}
        for i, v in ipairs(ax.values) do parts[i] = format("%s %s (%d)", v.value, x(v.rt), v.n) end
        out[#out + 1] = format("median throughput ratio by %s (cases): %s", ax.key, concat(parts, ", "))
    end
    out[#out + 1] = format("median of per-case throughput ratios: %s over %d case%s (p99: %s, CPU: %s)",
        x(m.rt), m.n, m.n == 1 and "" or "s", x(m.p99), x(m.cpu))
    if marked then
        out[#out + 1] = report.DEGRADED_MARK .. " degraded: some run had errors, timeouts or reconnects;"
            .. " its numbers are in the median and the ratios"
    end
    local excluded = 0
    for _, row in ipairs(result.rows) do if row.why then excluded = excluded + 1 end end
    if excluded > 0 then
        out[#out + 1] = format("%d case%s excluded from the ratios (failed or no value)", excluded,
            excluded == 1 and "" or "s")
    end
    if #result.only_a > 0 then
        out[#out + 1] = format("only in A (%d): %s", #result.only_a, concat(result.only_a, "; "))
    end
    if #result.only_b > 0 then
        out[#out + 1] = format("%s (%d): %s", result.pair and "without a baseline" or "only in B",
            #result.only_b, concat(result.only_b, "; "))
    end
    return concat(out, "\n") .. "\n"
end

-- The resolved keys whose values differ between the first cases of A and
-- B (at most 4): "topology (A sharded:1, B sharded:2)", or nil.
key_difference = function(a, b)
    local ca = a.summary and a.summary.cases and a.summary.cases[1]
    local cb = b.summary and b.summary.cases and b.summary.cases[1]
    if type(ca) ~= "table" or type(cb) ~= "table" or type(ca.case) ~= "table"
       or type(cb.case) ~= "table" then
        return nil
    end
    local SKIP = { warmup = true, duration = true, repetitions = true, index = true, case_id = true,
        name = true }
    local keys, seen = {}, {}
    for _, t in ipairs({ ca.case, cb.case }) do
        for k in pairs(t) do
            if type(k) == "string" and not SKIP[k] and not seen[k] then seen[k] = true; keys[#keys + 1] = k end
        end
    end
    table.sort(keys)
    local out = {}
    for _, k in ipairs(keys) do
        local va, vb = ca.case[k], cb.case[k]
        local ta = type(va) == "table" and json.encode(va) or tostring(va)
        local tb = type(vb) == "table" and json.encode(vb) or tostring(vb)
        if ta ~= tb and #out < 4 then out[#out + 1] = format("%s (A %s, B %s)", k, ta, tb) end
    end
    if #out == 0 then return nil end
    return concat(out, ", ")
end

-- Why A and B have no case in common, in words: each side's cases and how
-- the first ones differ. Two cases with the same id (the one-liner's
-- "default") are said to be named alike but different, not "in common".
local function no_common_text(a, b, result)
    local na, nb = #a.summary.cases, #b.summary.cases
    local diff = key_difference(a, b)
    local ida, idb = result.only_a[1], result.only_b[1]
    local head
    if na == 1 and nb == 1 then
        head = ida == idb
            and format("%s and %s have no case in common: each has one case, both named '%s', but"
                .. " they differ in %s", a.dir, b.dir, ida, diff or "their resolved keys")
            or format("%s and %s have no case in common: A's one case '%s' and B's '%s' differ in %s",
                a.dir, b.dir, ida, idb, diff or "their resolved keys")
        return head .. "; --force pairs the single cases anyway"
    end
    head = format("%s and %s have no case in common (A's: %s; B's: %s)", a.dir, b.dir,
        #result.only_a > 0 and concat(result.only_a, ", ") or "none",
        #result.only_b > 0 and concat(result.only_b, ", ") or "none")
    if diff then head = head .. "; their first cases differ in " .. diff end
    return head .. "; compare the results of one scenario, or use compare DIR --pair KEY within one result"
end

function _M.run(opts)
    local dirs = opts.dirs or {}
    if opts.pair then
        if #dirs ~= 1 then return 2, nil, "compare --pair KEY takes one result folder" end
        local side, err = _M.load(dirs[1])
        if not side then return 2, nil, dirs[1] .. ": " .. err end
        local result, perr = _M.within(side, opts.pair)
        if not result then return 2, nil, perr end
        return 0, _M.format(result)
    end
    if #dirs ~= 2 then return 2, nil, "compare needs two result folders: arkbench compare A B" end
    local a, aerr = _M.load(dirs[1])
    if not a then return 2, nil, dirs[1] .. ": " .. aerr end
    local b, berr = _M.load(dirs[2])
    if not b then return 2, nil, dirs[2] .. ": " .. berr end
    local refusals = _M.refusals(a, b)
    local note = ""
    if #refusals > 0 then
        if not opts.force then
            return 2, nil, "refusing to compare " .. a.dir .. " and " .. b.dir .. ": "
                .. concat(refusals, "; ") .. " (--force compares anyway)"
        end
        note = "compared with --force despite: " .. concat(refusals, "; ") .. "\n"
    end
    local result = _M.folders(a, b)
    if #result.rows == 0 then
        local single = #a.summary.cases == 1 and #b.summary.cases == 1
        if opts.force and single then
            -- two one-case results (two one-liner runs): --force pairs them,
            -- saying what differs
            local diff = key_difference(a, b)
            local ca, cb = a.summary.cases[1], b.summary.cases[1]
            local id_a, id_b = result.only_a[1], result.only_b[1]
            result.only_a, result.only_b = {}, {}
            add_pair(result, id_a == id_b and id_a or (id_a .. " / " .. id_b), ca, cb)
            result.medians = medians(result.rows)
            note = note .. "paired the single cases with --force; they differ in "
                .. (diff or "their resolved keys") .. "\n"
        else
            -- nothing to pair: no ratio could be printed, so it is an error of
            -- the command line, not a comparison that found nothing
            return 2, nil, no_common_text(a, b, result)
        end
    end
    local text = note .. _M.format(result)
    if opts.svg then
        -- the paired cases' latency by percentile, A solid, B dashed
        local ch = require("arkbench.report.svg_pct").compare_chart(result, a, b)
        if not ch then return 2, nil, "--svg: no paired case has a latency histogram in both folders" end
        local f, ferr = io.open(opts.svg, "wb")
        if not f then return 1, nil, "--svg: " .. tostring(ferr) end
        local ok, werr = f:write(ch.svg)
        f:close()
        if not ok then return 1, nil, "--svg: " .. tostring(werr) end
        text = text .. format("wrote %s (latency by percentile, A solid, B dashed)\n", opts.svg)
    end
    if opts.max_regression then
        local worse = _M.regressions(result, opts.max_regression)
        if #worse > 0 then
            return 3, text .. "\n" .. concat(worse, "\n") .. "\n"
        end
        text = text .. format("\nno regression beyond %s%% (throughput and p99, median of per-case"
            .. " ratios)\n", json.number_text(opts.max_regression * 100))
    end
    return 0, text
end

-- The regressions past `max` (a fraction: 0.05 = 5 %) in the median of the
-- per-case ratios B/A: throughput below 1 - max, p99 above 1 + max. No case
-- in both folders is a regression too: nothing can be vouched for.
function _M.regressions(result, max)
    local m, out = result.medians or {}, {}
    local pct = json.number_text(max * 100)
    if (m.n or 0) == 0 then
        out[1] = "regression: no case has an ok run in both folders, so nothing can be compared"
        return out
    end
    if m.rt and m.rt < 1 - max then
        out[#out + 1] = format("regression: throughput %.2fx of A (%.1f %% lower), more than %s %%"
            .. " (median over %d cases)", m.rt, (1 - m.rt) * 100, pct, m.n)
    end
    if m.p99 and m.p99 > 1 + max then
        out[#out + 1] = format("regression: p99 %.2fx of A (%.1f %% higher), more than %s %%"
            .. " (median over %d cases)", m.p99, (m.p99 - 1) * 100, pct, m.n)
    end
    return out
end

return _M
