-- arkbench.report.knee: open-loop rate sweeps read against the offered load
-- (docs/reports.md, "Latency vs load"; docs/load-models.md).
--
--   knee.groups(model) -> { { title, cases }, ... }
--       the cases grouped by every varying key but rate (first-appearance
--       order); each group's cases sorted by asked rate, ascending
--   knee.points(cases) -> { { rate, achieved, p99, missed, bound, c }, ... }
--       the ok cases of a group by asked rate (x is always the asked rate:
--       an overloaded point never folds back), with the median achieved
--       rate, corrected p99, whether the rate was missed in some run and
--       whether some run was generator-bound
--   knee.of(points) -> { rate, p99, low_p99, low_rate, skipped, next_rate,
--                        next_p99 } | nil
--       the knee: the highest asked rate before corrected p99 rises past
--       FACTOR x its low-load value (the p99 at the lowest rate whose runs
--       were not generator-bound -- skipped says lower ones were left out;
--       the lowest rate when all but the last were); next_* is the first
--       point past it (nil when p99 never rose that far: rate is then the
--       highest tried).  nil with fewer than two points
--   knee.all(model) -> { { title, knee, points }, ... }  groups with 2+ rates
--   knee.text(k) -> "knee at 4,000 msg/s: corrected p99 120 µs (low load
--       55 µs); past it at 5,000 msg/s 2.1 ms"
--
-- Pure: reads the summary cases, writes nothing.

local report = require("arkbench.report.report")

local type, ipairs = type, ipairs
local format = string.format
local concat = table.concat

local num, stat, axis_text, case_value = report.num, report.stat, report.axis_text, report.case_value

local _M = {}

_M.FACTOR = 2

function _M.groups(model)
    local keys = {}
    for _, k in ipairs(model.varying or {}) do
        if k ~= "rate" then keys[#keys + 1] = k end
    end
    local order, by = {}, {}
    for _, c in ipairs(model.cases or {}) do
        local id = {}
        for i, k in ipairs(keys) do id[i] = k .. "=" .. axis_text(case_value(c, k)) end
        local sid = concat(id, " ")
        if not by[sid] then by[sid] = { title = sid, cases = {} }; order[#order + 1] = by[sid] end
        local g = by[sid].cases
        g[#g + 1] = c
    end
    for _, g in ipairs(order) do
        table.sort(g.cases, function(a, b)
            return (num(case_value(a, "rate")) or 0) < (num(case_value(b, "rate")) or 0)
        end)
    end
    return order
end

function _M.points(cases)
    local pts = {}
    for _, c in ipairs(cases) do
        local rate = num(case_value(c, "rate")) or stat(c, "rate_asked")
        if rate and (num(c.runs_ok) or 0) > 0 then
            pts[#pts + 1] = {
                rate = rate, achieved = stat(c, "rate_achieved") or rate, p99 = stat(c, "rtt_p99_us"),
                missed = (num(c.rate_missed) or 0) > 0, bound = (num(c.generator_bound_runs) or 0) > 0,
                c = c,
            }
        end
    end
    table.sort(pts, function(a, b) return a.rate < b.rate end)
    return pts
end

function _M.of(pts)
    if type(pts) ~= "table" or #pts < 2 then return nil end
    -- the low-load value: the lowest rate whose runs were not
    -- generator-bound (a generator behind its schedule inflates p99 at any
    -- load); the lowest rate when every point was
    local first = 1
    for i, p in ipairs(pts) do
        if not p.bound and p.p99 then first = i break end
    end
    if first == #pts then first = 1 end
    local low = pts[first].p99
    if not low or low <= 0 then return nil end
    local k = { rate = pts[first].rate, p99 = low, low_p99 = low, low_rate = pts[first].rate,
                skipped = first > 1 }
    for i = first + 1, #pts do
        local p = pts[i]
        if p.p99 and p.p99 > _M.FACTOR * low then
            k.next_rate, k.next_p99 = p.rate, p.p99
            return k
        end
        if p.p99 then k.rate, k.p99 = p.rate, p.p99 end
    end
    return k
end

function _M.all(model)
    local out = {}
    local varies = false
    for _, k in ipairs(model.varying or {}) do varies = varies or k == "rate" end
    if not varies then return out end
    for _, g in ipairs(_M.groups(model)) do
        local pts = _M.points(g.cases)
        local k = _M.of(pts)
        if k then out[#out + 1] = { title = g.title, knee = k, points = pts } end
    end
    return out
end

local function us(v) return report.format_us(v) .. " µs" end

function _M.text(k)
    local s = format("knee at %s msg/s: corrected p99 %s (low load %s%s)", report.format_count(k.rate),
        us(k.p99), us(k.low_p99), k.skipped and format(", at %s msg/s: the rates below had"
            .. " generator-bound runs", report.format_count(k.low_rate)) or "")
    if k.next_rate then
        return s .. format("; past it, at %s msg/s, %s (more than %d× low load)",
            report.format_count(k.next_rate), us(k.next_p99), _M.FACTOR)
    end
    return s .. format("; p99 stayed within %d× low load up to the highest rate tried", _M.FACTOR)
end

return _M
