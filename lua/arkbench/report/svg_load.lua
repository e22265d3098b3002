-- report_svg_load.lua -- the open-loop charts (docs/reports.md,
-- docs/load-models.md):
--
--   svg_load.latency_vs_load(model) -> { chart, ... }
--       when `rate` varies: per group of the other varying keys with 2+
--       rates, p50/p99/p999 RTT (corrected; summary medians) against the
--       asked rate (monotone), y on a log scale, the achieved rate (median
--       rate_achieved) a dashed line on the right axis, the knee
--       (report/knee.lua) a dashed vertical line; a point whose rate was
--       not met in some run is drawn hollow with a red ring (class "point
--       missed"), one with a generator-bound run with a larger orange ring
--       (class "point bound").
--       chart.kind = "latency-vs-load", file "load-<slug>.svg", section = "load"
--   svg_load.time_series(model) -> { chart, ... }
--       per case whose ok runs have `intervals`: round trips/s and p99 per
--       interval against t_s (the interval's start), a line per repetition
--       (overlaid).
--       chart.kind = "time-throughput" | "time-p99", file (a name only:
--       report_html inlines them, nothing writes them to charts/)
--       "time-<case slug>-throughput.svg" / "-p99.svg", section = "time"
--
-- Like report_svg's line charts they hold <g class="lines" data-points="N">
-- with one <circle class="point"> per drawn point (the HTML self-check
-- counts them). Coordinates have one decimal; no clock, no randomness.

local svg = require("arkbench.report.svg")
local report = require("arkbench.report.report")

local type, ipairs, pairs, tostring = type, ipairs, pairs, tostring
local format = string.format
local concat = table.concat
local floor, ceil, log10, max, min = math.floor, math.ceil, math.log10, math.max, math.min

local esc, COLORS = svg.esc, svg.COLORS
local num, stat, axis_text, case_value = report.num, report.stat, report.axis_text, report.case_value

local _M = {}

local FONT = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif"
local W, H = 720, 440
local BOX = { x = 84, y = 84, w = W - 84 - 24, h = H - 84 - 64 }

local function f1(v)
    local s = format("%.1f", v)
    return s == "-0.0" and "0.0" or s
end

local function slug(s)
    s = tostring(s):gsub("[^%w%.%-_]+", "_")
    if #s > 80 then s = s:sub(1, 67) .. "-" .. require("arkbench.core").sha256(s):sub(1, 12) end
    return s
end

-- 0 .. top with about 5 steps of 1, 2, 2.5 or 5 x 10^k (report/svg.lua's)
local linear = require("arkbench.report.svg").nice_scale

-- The page: title, subtitle, legend of series { label, color }, axes.
local function frame(o)
    local out = {}
    -- class "chart": a chart of charts/ (the report's self-check counts
    -- those); "series": a time series, drawn inline in report.html only
    out[#out + 1] = format('<svg xmlns="http://www.w3.org/2000/svg" class="%s" data-kind="%s" '
        .. 'data-part="%s" width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s" font-size="12" '
        .. 'role="img" aria-label="%s">', o.class or "chart", o.kind, esc(o.part), W, H, W, H, FONT,
        esc(o.title))
    out[#out + 1] = format("<title>%s</title>", esc(o.title))
    out[#out + 1] = format('<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>', W, H)
    out[#out + 1] = format('<text x="16" y="24" font-size="16" font-weight="bold" fill="#111">%s</text>',
        esc(o.title))
    out[#out + 1] = format('<text x="16" y="44" fill="#444">%s</text>', esc(o.subtitle))
    out[#out + 1] = '<g class="legend">'
    local lx = 16
    for _, s in ipairs(o.series) do
        out[#out + 1] = format('<path d="M%s 62h16" stroke="%s" stroke-width="2.5"/>'
            .. '<text x="%s" y="66" fill="#111">%s</text>', f1(lx), s.color, f1(lx + 20), esc(s.label))
        lx = lx + 40 + #s.label * 6.6
    end
    out[#out + 1] = "</g>"
    out[#out + 1] = '<g class="y-axis" fill="#333">'
    for _, t in ipairs(o.yticks) do
        local y = o.y_of(t)
        out[#out + 1] = format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e2e2e2"/>'
            .. '<text x="%s" y="%s" text-anchor="end" font-size="11">%s</text>', f1(BOX.x), f1(y),
            f1(BOX.x + BOX.w), f1(y), f1(BOX.x - 6), f1(y + 4), esc(report.compact(t)))
    end
    local cy = BOX.y + BOX.h / 2
    out[#out + 1] = format('<text x="18" y="%s" text-anchor="middle" transform="rotate(-90 18 %s)">%s</text>',
        f1(cy), f1(cy), esc(o.y_title))
    out[#out + 1] = "</g>"
    out[#out + 1] = '<g class="x-axis" fill="#333">'
    for _, t in ipairs(o.xticks) do
        local x = o.x_of(t)
        out[#out + 1] = format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333"/>'
            .. '<text x="%s" y="%s" text-anchor="middle" font-size="11">%s</text>', f1(x),
            f1(BOX.y + BOX.h), f1(x), f1(BOX.y + BOX.h + 5), f1(x), f1(BOX.y + BOX.h + 18),
            esc(report.compact(t)))
    end
    out[#out + 1] = format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333"/>', f1(BOX.x),
        f1(BOX.y + BOX.h), f1(BOX.x + BOX.w), f1(BOX.y + BOX.h))
    out[#out + 1] = format('<text x="%s" y="%d" text-anchor="middle">%s</text>', f1(BOX.x + BOX.w / 2),
        H - 14, esc(o.x_title))
    out[#out + 1] = "</g>"
    return out
end

local function finish(out, lines, dots, npoints, nseries)
    out[#out + 1] = format('<g class="lines" data-series="%d" data-points="%d">', nseries, npoints)
    out[#out + 1] = concat(lines, "\n")
    out[#out + 1] = concat(dots, "\n")
    out[#out + 1] = "</g>"
    out[#out + 1] = "</svg>"
    return concat(out, "\n")
end

local function chart(file, kind, title, text, extra)
    local c = { file = file, kind = kind, title = title, inline = text,
                svg = '<?xml version="1.0" encoding="UTF-8"?>\n' .. text .. "\n" }
    for k, v in pairs(extra or {}) do c[k] = v end
    return c
end

-- Latency vs load -----------------------------------------------------------

local PCTS = { { "p50", "rtt_p50_us", COLORS[1] }, { "p99", "rtt_p99_us", COLORS[2] },
               { "p999", "rtt_p999_us", COLORS[4] } }
local ACHIEVED_COLOR, BOUND_COLOR, MISSED_COLOR = "#555555", "#e07000", "#d00000"

local knee_mod = require("arkbench.report.knee")

local load_chart

function _M.latency_vs_load(model)
    local out = {}
    local rate_varies = false
    for _, k in ipairs(model.varying or {}) do rate_varies = rate_varies or k == "rate" end
    if not rate_varies then return out end
    for gi, g in ipairs(knee_mod.groups(model)) do
        local ch = load_chart(g, gi)
        if ch then out[#out + 1] = ch end
    end
    return out
end

-- a point's marker: filled; hollow with a red ring when the rate was not
-- met; an orange ring, larger, when a run was generator-bound (hollow and
-- orange when both)
local function marker(p, x, y, color, what, v)
    local cls = "point" .. (p.missed and " missed" or "") .. (p.bound and " bound" or "")
    local tip = format("%s: %s %s µs at %s/s asked (%s/s achieved)%s%s", tostring(p.c.case_id), what,
        report.format_us(v), report.format_count(p.rate), report.format_count(p.achieved),
        p.missed and " (rate not met)" or "", p.bound and " (generator-bound)" or "")
    local stroke = p.bound and BOUND_COLOR or p.missed and MISSED_COLOR or "#ffffff"
    return format('<circle class="%s" cx="%s" cy="%s" r="%s" fill="%s" stroke="%s" stroke-width="%s"'
        .. ' data-case="%s"><title>%s</title></circle>', cls, f1(x), f1(y), p.bound and "6" or "4.5",
        p.missed and "#ffffff" or color, stroke, (p.missed or p.bound) and "2.5" or "1.5",
        esc(tostring(p.c.case_id)), esc(tip))
end

-- One group's chart, or nil (fewer than two rates, or nothing to draw): x
-- is the asked rate (monotone: an overloaded point never folds back), the
-- corrected p50/p99/p999 on a log scale, the achieved rate as a dashed line
-- on the right axis (same scale as x: on the diagonal while the rate is
-- met), the knee (report/knee.lua) a dashed vertical line.
load_chart = function(g, gi)
    local pts = knee_mod.points(g.cases)
    local rates = {}
    for _, c in ipairs(g.cases) do rates[axis_text(case_value(c, "rate"))] = true end
    local nrates = 0
    for _ in pairs(rates) do nrates = nrates + 1 end
    if #pts < 1 or nrates < 2 then return nil end
    local ylo, yhi, xhi = nil, nil, 0
    for _, p in ipairs(pts) do
        xhi = max(xhi, p.rate, p.achieved)
        for _, q in ipairs(PCTS) do
            local v = stat(p.c, q[2])
            if v and v > 0 then ylo = ylo and min(ylo, v) or v; yhi = yhi and max(yhi, v) or v end
        end
    end
    ylo, yhi = ylo or 1, yhi or 10
    local dlo, dhi = floor(log10(ylo)), ceil(log10(yhi))
    if dhi <= dlo then dhi = dlo + 1 end
    local xtop, xstep = linear(xhi * 1.05)
    local function x_of(v) return BOX.x + v / xtop * BOX.w end
    local function y_of(v)
        return BOX.y + BOX.h - (log10(max(v, 10 ^ dlo)) - dlo) / (dhi - dlo) * BOX.h
    end
    local function y2_of(v) return BOX.y + BOX.h - v / xtop * BOX.h end
    local yticks, xticks = {}, {}
    for d = dlo, dhi do yticks[#yticks + 1] = 10 ^ d end
    for i = 0, floor(xtop / xstep + 0.5) do xticks[#xticks + 1] = i * xstep end
    local title = "latency vs offered load" .. (g.title ~= "" and (": " .. g.title) or "")
    local series = {}
    for i, q in ipairs(PCTS) do series[i] = { label = q[1] .. " (corrected)", color = q[3] } end
    series[#series + 1] = { label = "achieved rate (right)", color = ACHIEVED_COLOR }
    local o = frame({ kind = "latency-vs-load", part = g.title, title = title,
        subtitle = "x: asked rate; corrected RTT, median, log; red ring = rate not met, orange"
            .. " ring = generator-bound", series = series, yticks = yticks,
        xticks = xticks, x_of = x_of, y_of = y_of, y_title = "RTT (µs)",
        x_title = "asked rate (messages/s)" })
    -- the right axis: achieved messages/s on x's scale
    o[#o + 1] = '<g class="y2-axis" fill="#555">'
    for i = 0, floor(xtop / xstep + 0.5) do
        local v = i * xstep
        o[#o + 1] = format('<text x="%s" y="%s" text-anchor="end" font-size="10">%s</text>',
            f1(W - 2), f1(y2_of(v) + 4), esc(report.compact(v)))
    end
    o[#o + 1] = "</g>"
    local lines, dots, n = {}, {}, 0
    for _, q in ipairs(PCTS) do
        local line = {}
        for _, p in ipairs(pts) do
            local v = stat(p.c, q[2])
            if v then
                local x, y = x_of(p.rate), y_of(v)
                line[#line + 1] = f1(x) .. "," .. f1(y)
                n = n + 1
                dots[#dots + 1] = marker(p, x, y, q[3], q[1], v)
            end
        end
        if #line > 1 then
            lines[#lines + 1] = format('<polyline class="line" points="%s" fill="none" stroke="%s"'
                .. ' stroke-width="2.5"/>', concat(line, " "), q[3])
        end
    end
    local ach = {}
    for _, p in ipairs(pts) do ach[#ach + 1] = f1(x_of(p.rate)) .. "," .. f1(y2_of(p.achieved)) end
    lines[#lines + 1] = format('<polyline class="achieved" points="%s" fill="none" stroke="%s"'
        .. ' stroke-width="1.5" stroke-dasharray="5 3"/>', concat(ach, " "), ACHIEVED_COLOR)
    local k = knee_mod.of(pts)
    if k and k.next_rate then
        local x = x_of(k.rate)
        lines[#lines + 1] = format('<g class="knee" data-rate="%s"><line x1="%s" y1="%s" x2="%s" y2="%s"'
            .. ' stroke="#888" stroke-dasharray="3 3"/><text x="%s" y="%s" font-size="11" fill="#444">knee'
            .. '</text></g>', tostring(k.rate), f1(x), f1(BOX.y), f1(x), f1(BOX.y + BOX.h), f1(x + 4),
            f1(BOX.y + 12))
    end
    if n == 0 then return nil end
    local name = "load-" .. (g.title ~= "" and slug(g.title) or "all")
    if gi > 1 and g.title == "" then name = name .. "-" .. gi end
    return chart(name .. ".svg", "latency-vs-load", title, finish(o, lines, dots, n, #PCTS),
        { section = "load", points = n, knee = k })
end

-- Time series ---------------------------------------------------------------

local function runs_by_case(model)
    local by = {}
    for _, r in ipairs(model.runs or {}) do
        if type(r) == "table" and require("arkbench.run.status").measured(r)
            and type(r.intervals) == "table" and #r.intervals > 0 then
            local id = r.case_id
            by[id] = by[id] or {}
            local l = by[id]
            l[#l + 1] = r
        end
    end
    return by
end

local TS = {
    { kind = "time-throughput", field = "round_trips_per_s", what = "round trips/s",
      y_title = "round trips per second", fmt = report.format_count },
    { kind = "time-p99", field = "p99_us", what = "p99 µs", y_title = "p99 RTT (µs)", fmt = report.format_us },
}

function _M.time_series(model)
    local out = {}
    local by = runs_by_case(model)
    for _, c in ipairs(model.cases or {}) do
        local runs = by[c.case_id]
        if runs then
            local open = c.load_model == "open"
            for _, spec in ipairs(TS) do
                local tmax, ymax = 0, 0
                for _, r in ipairs(runs) do
                    for _, iv in ipairs(r.intervals) do
                        local t, v = num(iv.t_s), num(iv[spec.field])
                        if t and v then tmax = max(tmax, t); ymax = max(ymax, v) end
                    end
                end
                local ytop, ystep = linear(ymax * 1.05)
                local xtop, xstep = linear(tmax)
                local function x_of(v) return BOX.x + v / xtop * BOX.w end
                local function y_of(v) return BOX.y + BOX.h - v / ytop * BOX.h end
                local yticks, xticks = {}, {}
                for i = 0, floor(ytop / ystep + 0.5) do yticks[#yticks + 1] = i * ystep end
                for i = 0, floor(xtop / xstep + 0.5) do xticks[#xticks + 1] = i * xstep end
                local series = {}
                for i, r in ipairs(runs) do
                    series[i] = { label = "rep " .. axis_text(r.repetition), color = COLORS[(i - 1) % #COLORS + 1] }
                end
                local title = tostring(c.case_id) .. ": " .. spec.what .. " over time"
                local o = frame({ class = "series", kind = spec.kind, part = tostring(c.case_id), title = title,
                    subtitle = "per interval, every repetition overlaid"
                        .. (spec.kind == "time-p99" and open and "; RTT from intended send (corrected)" or ""),
                    series = series, yticks = yticks, xticks = xticks, x_of = x_of, y_of = y_of,
                    y_title = spec.y_title, x_title = "interval start (s into the measure phase)" })
                local lines, dots, n = {}, {}, 0
                for i, r in ipairs(runs) do
                    local col, line = series[i].color, {}
                    for _, iv in ipairs(r.intervals) do
                        local t, v = num(iv.t_s), num(iv[spec.field])
                        if t and v then
                            local x, y = x_of(t), y_of(v)
                            line[#line + 1] = f1(x) .. "," .. f1(y)
                            n = n + 1
                            dots[#dots + 1] = format('<circle class="point" cx="%s" cy="%s" r="2.5" fill="%s">'
                                .. '<title>rep %s, t %s s: %s %s</title></circle>', f1(x), f1(y), col,
                                axis_text(r.repetition), axis_text(t), spec.fmt(v), spec.what)
                        end
                    end
                    if #line > 1 then
                        lines[#lines + 1] = format('<polyline class="line" points="%s" fill="none" stroke="%s"'
                            .. ' stroke-width="2"/>', concat(line, " "), col)
                    end
                end
                if n > 0 then
                    out[#out + 1] = chart("time-" .. slug(c.case_id) .. "-" .. spec.kind:sub(6) .. ".svg",
                        spec.kind, title, finish(o, lines, dots, n, #runs),
                        { section = "time", points = n, case = c })
                end
            end
        end
    end
    return out
end

return _M
