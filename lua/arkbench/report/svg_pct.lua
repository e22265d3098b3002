-- arkbench.report.svg_pct: latency by percentile, HdrHistogram's plot
-- (docs/reports.md, "Latency by percentile").
--
--   svg_pct.curve(enc) -> { { pct, us }, ... } | nil
--       the percentiles of LADDER an encoded histogram can say (p is kept
--       when count >= 1 / (1 - p/100): p99.99 needs 10,000 samples), then
--       its max at the last rung
--   svg_pct.chart(o) -> chart | nil
--       o = { title, part, file, series = { { label, curve, dashed } } }:
--       RTT (log scale) against the percentile on HdrHistogram's axis, x =
--       log10(1 / (1 - p/100)) (50 % at 0.3, 90 % at 1, 99 % at 2, 99.9 %
--       at 3 ...); nil when no series has a point
--   svg_pct.compare_chart(result, a, b) -> chart | nil
--       compare A B --svg FILE: the paired cases, A solid and B dashed
--   svg_pct.charts(model) -> { chart, ... }
--       per part (group) of the report, every case overlaid: the merged
--       corrected RTT of its ok runs, and in open loop the raw view from
--       the actual send dashed in the same colour.  chart.kind =
--       "percentile", file "<part slug>-percentiles.svg", chart.part set
--
-- Self-describing like the other line charts: <g class="lines"
-- data-points="N"> with one <circle class="point"> per drawn point.

local core = require("arkbench.core")
local svg = require("arkbench.report.svg")
local report = require("arkbench.report.report")

local type, ipairs, pairs, tostring = type, ipairs, pairs, tostring
local format = string.format
local concat = table.concat
local floor, ceil, log10, max, min = math.floor, math.ceil, math.log10, math.max, math.min

local esc, COLORS = svg.esc, svg.COLORS

local _M = {}

_M.LADDER = { 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.995, 99.999, 99.9999 }
local MAX_SERIES = 24

local FONT = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif"
local W, H = 720, 440
local BOX0 = { x = 84, y = 84, w = W - 84 - 24, h = H - 84 - 64 }

local function f1(v)
    local s = format("%.1f", v)
    return s == "-0.0" and "0.0" or s
end

local function xpos(p) return log10(100 / (100 - p)) end

function _M.curve(enc)
    if type(enc) ~= "string" then return nil end
    local s = core.hist_summary(enc)
    if not s or not s.count or s.count == 0 then return nil end
    local out = {}
    for _, p in ipairs(_M.LADDER) do
        if s.count >= 100 / (100 - p) - 1e-9 then
            local v = core.hist_percentile(enc, p)
            if type(v) == "number" then out[#out + 1] = { p, v } end
        end
    end
    return #out > 0 and out or nil
end

local function pct_text(p)
    local s = format("%.4f", p):gsub("0+$", ""):gsub("%.$", "")
    return s .. "%"
end

function _M.chart(o)
    local ylo, yhi, xmax, n = nil, nil, xpos(99), 0
    for _, s in ipairs(o.series) do
        for _, pt in ipairs(s.curve or {}) do
            local v = pt[2]
            if v > 0 then ylo = ylo and min(ylo, v) or v; yhi = yhi and max(yhi, v) or v end
            xmax = max(xmax, xpos(pt[1]))
        end
    end
    if not ylo then return nil end
    local dlo, dhi = floor(log10(ylo)), ceil(log10(yhi))
    if dhi <= dlo then dhi = dlo + 1 end
    -- the legend's rows push the plot down
    local rows, lw = 1, 16
    for _, s in ipairs(o.series) do
        if not s.dashed then
            local w = 40 + #s.label * 6.6
            if lw + w > W - 16 then rows, lw = rows + 1, 16 end
            lw = lw + w
        end
    end
    local BOX = { x = BOX0.x, y = BOX0.y + (rows - 1) * 14, w = BOX0.w, h = BOX0.h - (rows - 1) * 14 }
    local xlo, xhi = xpos(50), ceil(xmax)
    local function x_of(p) return BOX.x + (xpos(p) - xlo) / (xhi - xlo) * BOX.w end
    local function y_of(v)
        return BOX.y + BOX.h - (log10(max(v, 10 ^ dlo)) - dlo) / (dhi - dlo) * BOX.h
    end
    local out = {}
    local function add(s) out[#out + 1] = s end
    add(format('<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-kind="percentile" data-part="%s"'
        .. ' width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s" font-size="12" role="img"'
        .. ' aria-label="%s">', esc(o.part or ""), W, H, W, H, FONT, esc(o.title)))
    add(format("<title>%s</title>", esc(o.title)))
    add(format('<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>', W, H))
    add(format('<text x="16" y="24" font-size="16" font-weight="bold" fill="#111">%s</text>', esc(o.title)))
    add(format('<text x="16" y="44" fill="#444">%s</text>', esc(o.subtitle or "")))
    -- legend: at most two rows of series
    add('<g class="legend">')
    local lx, ly = 16, 62
    for i, s in ipairs(o.series) do
        if not s.dashed then
            local w = 40 + #s.label * 6.6
            if lx + w > W - 16 then lx, ly = 16, ly + 14 end
            add(format('<path d="M%s %sh16" stroke="%s" stroke-width="2.5"/><text x="%s" y="%s" fill="#111"'
                .. ' font-size="11">%s</text>', f1(lx), f1(ly), s.color or COLORS[(i - 1) % #COLORS + 1],
                f1(lx + 20), f1(ly + 4), esc(s.label)))
            lx = lx + w
        end
    end
    add("</g>")
    add('<g class="y-axis" fill="#333">')
    for d = dlo, dhi do
        local y = y_of(10 ^ d)
        add(format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e2e2e2"/><text x="%s" y="%s"'
            .. ' text-anchor="end" font-size="11">%s</text>', f1(BOX.x), f1(y), f1(BOX.x + BOX.w), f1(y),
            f1(BOX.x - 6), f1(y + 4), esc(report.compact(10 ^ d))))
    end
    local cy = BOX.y + BOX.h / 2
    add(format('<text x="18" y="%s" text-anchor="middle" transform="rotate(-90 18 %s)">RTT (µs)</text>',
        f1(cy), f1(cy)))
    add("</g>")
    add('<g class="x-axis" fill="#333">')
    for k = 0, xhi - 1 do
        local p = 100 - 100 / 10 ^ (k + (k == 0 and xlo or 0))
        if k == 0 then p = 50 end
        local x = x_of(p)
        add(format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e2e2e2"/><text x="%s" y="%s"'
            .. ' text-anchor="middle" font-size="11">%s</text>', f1(x), f1(BOX.y), f1(x), f1(BOX.y + BOX.h),
            f1(x), f1(BOX.y + BOX.h + 18), esc(pct_text(p))))
    end
    do
        local x = x_of(100 - 100 / 10 ^ xhi)
        add(format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e2e2e2"/><text x="%s" y="%s"'
            .. ' text-anchor="middle" font-size="11">%s</text>', f1(x), f1(BOX.y), f1(x), f1(BOX.y + BOX.h),
            f1(x), f1(BOX.y + BOX.h + 18), esc(pct_text(100 - 100 / 10 ^ xhi))))
    end
    add(format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333"/>', f1(BOX.x), f1(BOX.y + BOX.h),
        f1(BOX.x + BOX.w), f1(BOX.y + BOX.h)))
    add(format('<text x="%s" y="%d" text-anchor="middle">percentile (HdrHistogram scale)</text>',
        f1(BOX.x + BOX.w / 2), H - 14))
    add("</g>")
    local lines, dots = {}, {}
    for i, s in ipairs(o.series) do
        local color = s.color or COLORS[(i - 1) % #COLORS + 1]
        local pts = {}
        for _, pt in ipairs(s.curve or {}) do
            local x, y = x_of(pt[1]), y_of(pt[2])
            pts[#pts + 1] = f1(x) .. "," .. f1(y)
            n = n + 1
            dots[#dots + 1] = format('<circle class="point" cx="%s" cy="%s" r="2.5" fill="%s"><title>%s:'
                .. ' p%s %s µs</title></circle>', f1(x), f1(y), color, esc(s.label), pct_text(pt[1]):sub(1, -2),
                report.format_us(pt[2]))
        end
        if #pts > 1 then
            lines[#lines + 1] = format('<polyline class="line" points="%s" fill="none" stroke="%s"'
                .. ' stroke-width="2"%s/>', concat(pts, " "), color, s.dashed and ' stroke-dasharray="5 3"' or "")
        end
    end
    add(format('<g class="lines" data-series="%d" data-points="%d">', #o.series, n))
    add(concat(lines, "\n"))
    add(concat(dots, "\n"))
    add("</g>")
    add("</svg>")
    local text = concat(out, "\n")
    return { file = o.file, kind = "percentile", part = o.part_obj, title = o.title, inline = text,
             svg = '<?xml version="1.0" encoding="UTF-8"?>\n' .. text .. "\n", points = n }
end

-- the ok runs' merged histogram field of each case
local function merged_by_case(model, field)
    local status = require("arkbench.run.status")
    local encs = {}
    for _, r in ipairs(model.runs or {}) do
        if type(r) == "table" and status.measured(r) and type(r[field]) == "string" then
            local l = encs[r.case_id] or {}
            l[#l + 1] = r[field]
            encs[r.case_id] = l
        end
    end
    local out = {}
    for id, l in pairs(encs) do out[id] = core.hist_merge(l) end
    return out
end

function _M.charts(model)
    local out = {}
    local rtt = merged_by_case(model, "rtt_histogram")
    local raw = merged_by_case(model, "rtt_raw_histogram")
    local row_label = require("arkbench.report.model").row_label
    for _, part in ipairs(model.parts or {}) do
        local series, open = {}, false
        local cases = {}
        for _, t in ipairs(part.tables or {}) do
            for _, c in ipairs(t.cases) do cases[#cases + 1] = { c = c, t = t } end
        end
        for _, e in ipairs(cases) do
            local c = e.c
            if #series >= MAX_SERIES then break end
            local curve = _M.curve(rtt[c.case_id])
            if curve then
                local label = row_label(c, model.row_axes or {})
                if e.t.title then label = e.t.title .. (label ~= "" and (", " .. label) or "") end
                if label == "" then label = tostring(c.case_id) end
                local color = COLORS[(#series / (open and 2 or 1)) % #COLORS + 1]
                local is_open = c.load_model == "open"
                series[#series + 1] = { label = label .. (is_open and " (corrected)" or ""), curve = curve,
                                        color = color }
                local rc = is_open and _M.curve(raw[c.case_id])
                if rc then
                    open = true
                    series[#series + 1] = { label = label .. " (raw)", curve = rc, dashed = true, color = color }
                end
            end
        end
        if #series > 0 then
            local ch = _M.chart({
                title = part.title .. ": latency by percentile", part = part.title, part_obj = part,
                file = part.slug .. "-percentiles.svg", series = series,
                subtitle = "every case's ok runs merged; log RTT" .. (open
                    and "; solid = corrected (from intended send), dashed = raw (from actual send)" or ""),
            })
            if ch then out[#out + 1] = ch end
        end
    end
    return out
end

-- compare A B --svg FILE: each paired case's merged corrected RTT by
-- percentile, A solid and B dashed in the case's colour (at most
-- MAX_SERIES / 2 pairs, in the comparison's order).  a, b: the sides
-- (report/compare.lua's load), result: compare.folders'.
function _M.compare_chart(result, a, b)
    local ra = merged_by_case({ runs = a.runs }, "rtt_histogram")
    local rb = merged_by_case({ runs = b.runs }, "rtt_histogram")
    local series = {}
    for _, row in ipairs(result.rows or {}) do
        if #series >= MAX_SERIES then break end
        local ca = row.a and _M.curve(ra[row.a.case_id])
        local cb = row.b and _M.curve(rb[row.b.case_id])
        if ca and cb then
            local color = COLORS[(#series / 2) % #COLORS + 1]
            series[#series + 1] = { label = tostring(row.label) .. " (A)", curve = ca, color = color }
            series[#series + 1] = { label = tostring(row.label) .. " (B)", curve = cb, color = color,
                                    dashed = true }
        end
    end
    if #series == 0 then return nil end
    return _M.chart({ title = "latency by percentile: A vs B", part = "compare", file = "compare.svg",
        series = series, subtitle = "solid = A (" .. tostring(a.dir) .. "), dashed = B ("
            .. tostring(b.dir) .. "); every case's ok runs merged; log RTT" })
end

return _M
