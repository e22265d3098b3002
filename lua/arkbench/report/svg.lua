-- report_svg.lua -- charts/*.svg, written by hand from Lua (docs/reports.md).
--
--   report_svg.charts(model) -> { chart, ... }
--       model: report_model.build(...).  For every chart partition (one
--       protocol x load x ...; see report_model) a grouped bar chart of
--       round trips/s and one of p99 RTT, bars grouped by the x axis
--       (payload when it varies) and coloured by topology, with min/max
--       whiskers and value labels; plus a line chart over payload (MiB/s)
--       or window (round trips/s) when the partition has 2+ such values.
--       chart = { file = "tcp-c1-w1-throughput.svg", kind = "throughput" |
--                 "p99" | "line", part = <model part>, title = "...",
--                 svg = <file text>, inline = <the <svg> element alone>,
--                 cases = <bars>, points = <line points> }
--       Then report_svg_load's latency-vs-load charts, which have
--       `section` = "load" instead of `part` (its time series are not
--       files: report_html draws them inline).
--   report_svg.esc(s) -> s with & < > " ' escaped for XML
--   report_svg.COLORS
--
-- Self-describing for tests and the HTML self-check: the root element has
-- class "chart", data-kind and data-part ("protocol=tcp clients=1 ...");
-- bar charts hold <g class="bars" data-cases="N"> with exactly one
-- <rect class="bar"> per case (a failed case's bar has height 0, class
-- "bar missing", and a "failed" mark); line charts hold
-- <g class="lines" data-points="N"> with one <circle class="point"> per
-- case that has a value.
-- No fonts, scripts or links: generic font families only.  Coordinates are
-- printed with one decimal so equal input gives equal bytes.

local report = require("arkbench.report.report")

local type, ipairs, tostring = type, ipairs, tostring
local format = string.format
local concat = table.concat
local floor, ceil, log10, max, min = math.floor, math.ceil, math.log10, math.max, math.min

local num, axis_text = report.num, report.axis_text
local stat = report.stat

local _M = {}

-- Okabe-Ito, readable for the common colour-vision deficiencies, then four
-- of Paul Tol's muted scheme.  Past 12 rows the colours repeat, drawn
-- lighter with a dark outline (bar_style).
_M.COLORS = {
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#7F7F7F", "#000000",
    "#882255", "#44AA99", "#999933", "#332288",
}

-- Line charts: a dash pattern per series as well, for overlapping lines.
local DASHES = { "", "7 4", "2 3", "10 3 2 3", "4 4", "1 2", "12 4", "6 2 2 2" }

local FONT = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif"
local LABEL_PX = 6.6  -- mean advance of a character at 11 px, for layout

function _M.esc(s)
    return (tostring(s):gsub("[&<>\"']", {
        ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;",
    }))
end
local esc = _M.esc

local function f1(v)
    local s = format("%.1f", v)
    if s == "-0.0" then s = "0.0" end
    return s
end

local function color(model, label)
    local i = model.row_index[label] or 1
    return _M.COLORS[(i - 1) % #_M.COLORS + 1]
end

-- fill (and outline past the first round of colours) of a bar or swatch
local function bar_style(model, label)
    local i = model.row_index[label] or 1
    local c = color(model, label)
    if i <= #_M.COLORS then return format('fill="%s"', c) end
    return format('fill="%s" fill-opacity="0.45" stroke="%s" stroke-width="1.5"', c, c)
end

local function dash_attr(model, label)
    local i = model.row_index[label] or 1
    local d = DASHES[(i - 1) % #DASHES + 1]
    return d ~= "" and (' stroke-dasharray="' .. d .. '"') or ""
end

-- Ticks from 0: a step of 1, 2, 2.5 or 5 x 10^k giving about 5 intervals.
local function nice_scale(top)
    if not top or top <= 0 then return 1, 0.2 end
    local raw = top / 5
    local mag = 10 ^ floor(log10(raw))
    local step = mag * 10
    for _, m in ipairs({ 1, 2, 2.5, 5, 10 }) do
        if m * mag >= raw then step = m * mag break end
    end
    return ceil(top / step - 1e-9) * step, step
end
-- shared with report/svg_load.lua's axes
_M.nice_scale = nice_scale

local function label_width(s)
    local _, cont = s:gsub("[\128-\191]", "")
    return (#s - cont) * LABEL_PX
end

local function part_attr(model, part)
    local bits = {}
    for _, k in ipairs(model.part_axes) do
        bits[#bits + 1] = k .. "=" .. axis_text(part.values[k])
    end
    return concat(bits, " ")
end

-- The frame every chart shares: title, subtitle, legend, y grid and axis
-- titles.  Returns the output list and the plot box.
local function frame(o)
    local out = {}
    local w, h = o.width, o.height
    out[#out + 1] = format('<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-kind="%s" '
        .. 'data-part="%s" width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s" font-size="12" '
        .. 'role="img" aria-label="%s">', o.kind, esc(o.part_attr), w, h, w, h, FONT, esc(o.title))
    out[#out + 1] = format("<title>%s</title>", esc(o.title))
    out[#out + 1] = format('<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>', w, h)
    out[#out + 1] = format('<text x="16" y="24" font-size="16" font-weight="bold" fill="#111">%s</text>',
        esc(o.title))
    out[#out + 1] = format('<text x="16" y="44" fill="#444">%s</text>', esc(o.subtitle))

    -- legend: one swatch per row label, wrapped to the width
    local lx, ly = 16, 66
    out[#out + 1] = '<g class="legend">'
    for _, label in ipairs(o.labels) do
        local lw = 22 + label_width(label) + 18
        if lx + lw > w - 16 and lx > 16 then lx, ly = 16, ly + 20 end
        if o.lines then
            out[#out + 1] = format('<path d="M%s %sh16" stroke="%s" stroke-width="2.5"%s/>'
                .. '<circle cx="%s" cy="%s" r="3.5" fill="%s" stroke="#fff"/>', f1(lx - 1), f1(ly - 4),
                color(o.model, label), dash_attr(o.model, label), f1(lx + 7), f1(ly - 4), color(o.model, label))
        else
            out[#out + 1] = format('<rect x="%s" y="%s" width="14" height="14" %s/>',
                f1(lx), f1(ly - 11), bar_style(o.model, label))
        end
        out[#out + 1] = format('<text x="%s" y="%s" fill="#111">%s</text>', f1(lx + 20), f1(ly), esc(label))
        lx = lx + lw
    end
    out[#out + 1] = "</g>"

    local box = { x = 84, y = ly + 26, w = w - 84 - 24 }
    box.h = h - box.y - (o.bottom or 64)
    -- y grid, tick labels, y title
    out[#out + 1] = '<g class="y-axis" fill="#333">'
    for i = 0, floor(o.top / o.step + 0.5) do
        local v = i * o.step
        local y = box.y + box.h - v / o.top * box.h
        out[#out + 1] = format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1"/>',
            f1(box.x), f1(y), f1(box.x + box.w), f1(y), i == 0 and "#333" or "#e2e2e2")
        out[#out + 1] = format('<text x="%s" y="%s" text-anchor="end" font-size="11">%s</text>',
            f1(box.x - 6), f1(y + 4), esc(report.compact(v)))
    end
    local cy = box.y + box.h / 2
    out[#out + 1] = format('<text x="18" y="%s" text-anchor="middle" transform="rotate(-90 18 %s)" '
        .. 'font-size="12">%s</text>', f1(cy), f1(cy), esc(o.y_title))
    out[#out + 1] = "</g>"
    out[#out + 1] = format('<text x="%s" y="%d" text-anchor="middle" fill="#333">%s</text>',
        f1(box.x + box.w / 2), h - 14, esc(o.x_title))
    return out, box
end

local function whisker(out, x, y_lo, y_hi, half, stroke)
    if y_lo - y_hi < 0.5 then return end
    -- a white under-stroke keeps the whisker visible over any bar colour
    for _, s in ipairs({ { "#ffffff", 3.5 }, { stroke or "#111111", 1.5 } }) do
        out[#out + 1] = format('<path class="whisker" d="M%s %sV%sM%s %sH%sM%s %sH%s" stroke="%s" '
            .. 'stroke-width="%s" fill="none"/>', f1(x), f1(y_lo), f1(y_hi),
            f1(x - half), f1(y_hi), f1(x + half), f1(x - half), f1(y_lo), f1(x + half), s[1], s[2])
    end
end

local function value_tip(c, what, med, lo, hi, fmt)
    local s = format("%s: %s %s", type(c.case_id) == "string" and c.case_id or "-", fmt(med), what)
    if lo and hi then s = s .. format(" [min %s, max %s]", fmt(lo), fmt(hi)) end
    local degraded = num(c.runs_degraded) or 0
    return s .. format(" (%d/%d runs ok%s)", num(c.runs_ok) or 0, num(c.runs) or 0,
                       degraded > 0 and format(", %d degraded", degraded) or "")
end

local function x_text(x)
    return axis_text(x)
end

local function case_id(c)
    return type(c.case_id) == "string" and c.case_id or "-"
end

-- Whiskers past CLIP x the largest median of a chart are clipped; a case
-- whose repetitions' max / min exceeds SPREAD is flagged with "*".
_M.CLIP = 2
_M.SPREAD = 1.5

-- Whether case c's repetitions spread more than SPREAD x in `metric`.
function _M.spread(c, metric)
    local _, lo, hi = stat(c, metric)
    return lo ~= nil and hi ~= nil and lo > 0 and hi / lo > _M.SPREAD
end

-- Grouped bars: x groups = part.tables, a bar per case coloured by row.
local function bar_chart(model, part, o)
    local groups = part.tables
    local n_cases = #part.cases
    local labels, seen = {}, {}
    for _, label in ipairs(model.rows) do
        for _, c in ipairs(part.cases) do
            if model.label_of[c] == label and not seen[label] then seen[label] = true; labels[#labels + 1] = label end
        end
    end
    local width = max(640, min(1280, 140 + n_cases * 46 + #groups * 24))
    local height, bottom = 460, 64
    if #groups == 1 and not groups[1].title then
        -- bar labels under the axis, slanted when wider than a bar's slot
        local slot0, widest = (width - 108) * 0.84 / max(1, #groups[1].cases), 0
        for _, c in ipairs(part.cases) do widest = max(widest, label_width(model.label_of[c])) end
        if widest > slot0 then
            local extra = ceil(widest * 0.43)
            height, bottom = height + extra, bottom + extra
        end
    end

    -- the axis covers every median and every whisker up to CLIP x the
    -- largest median; a whisker past that is clipped at the top, marked
    -- (one repetition far off must not flatten every other bar)
    local med_max, ymax = 0, 0
    for _, c in ipairs(part.cases) do
        local med = stat(c, o.metric)
        med_max = max(med_max, med or 0)
    end
    local clip_at = med_max > 0 and med_max * _M.CLIP or math.huge
    local any_cut = false
    for _, c in ipairs(part.cases) do
        local med, _, hi = stat(c, o.metric)
        if hi and hi > clip_at then any_cut = true end
        ymax = max(ymax, min(hi or med or 0, clip_at))
    end
    local top, step = nice_scale(ymax)
    local subtitle = o.subtitle

    -- layout first (needs the plot box) to know whether labels stand upright
    local _, box = frame({
        model = model, kind = o.kind, part_attr = part_attr(model, part), width = width,
        height = height, title = o.title, subtitle = subtitle, labels = labels, top = top,
        step = step, y_title = o.y_title, x_title = o.x_title, bottom = bottom,
    })
    local group_w = box.w / max(1, #groups)
    local max_in_group = 1
    for _, g in ipairs(groups) do max_in_group = max(max_in_group, #g.cases) end
    local slot = group_w * 0.84 / max_in_group
    local bar_w = slot * 0.82
    local longest = 0
    for _, c in ipairs(part.cases) do
        local med = stat(c, o.metric)
        if med then longest = max(longest, label_width(report.compact(med) .. "*")) end
    end
    local upright = longest + 4 <= slot
    -- head room for the labels above the tallest bar
    local need = (upright and 16 or longest + 10) / box.h
    while med_max > 0 and med_max / top > 1 - need do top = top + step end
    while any_cut and ymax / top > 1 - 12 / box.h do top = top + step end
    local clipped, spread_n = 0, 0
    for _, c in ipairs(part.cases) do
        local _, _, hi = stat(c, o.metric)
        if hi and hi > top then clipped = clipped + 1 end
        if _M.spread(c, o.metric) then spread_n = spread_n + 1 end
    end
    if clipped > 0 then
        subtitle = subtitle .. format("; %d whisker%s cut at the top (^: max off the axis)", clipped,
            clipped == 1 and "" or "s")
    end
    if spread_n > 0 then
        subtitle = subtitle .. format("; * repetitions spread more than %gx (max/min)", _M.SPREAD)
    end
    local out
    out, box = frame({
        model = model, kind = o.kind, part_attr = part_attr(model, part), width = width,
        height = height, title = o.title, subtitle = subtitle, labels = labels, top = top,
        step = step, y_title = o.y_title, x_title = o.x_title, bottom = bottom,
    })
    local function y_of(v) return box.y + box.h - v / top * box.h end

    out[#out + 1] = format('<g class="bars" data-cases="%d">', n_cases)
    local labels_out, marks = {}, {}
    for gi, g in ipairs(groups) do
        local gx = box.x + (gi - 1) * group_w + group_w * 0.08 + (max_in_group - #g.cases) * slot / 2
        for bi, c in ipairs(g.cases) do
            local label = model.label_of[c]
            local cx = gx + (bi - 0.5) * slot
            local med, lo, hi = stat(c, o.metric)
            local tip
            if med then
                tip = value_tip(c, o.unit, med, lo, hi, o.fmt)
            else
                tip = case_id(c) .. ((num(c.runs_ok) or 0) == 0 and ": failed, no ok run" or ": no value")
            end
            local y = med and y_of(med) or y_of(0)
            out[#out + 1] = format('<rect class="bar%s" x="%s" y="%s" width="%s" height="%s" %s '
                .. 'data-case="%s"><title>%s</title></rect>', med and "" or " missing", f1(cx - bar_w / 2),
                f1(y), f1(bar_w), f1(y_of(0) - y), bar_style(model, label), esc(case_id(c)), esc(tip))
            if med then
                if lo and hi then
                    local cut = hi > top
                    whisker(marks, cx, y_of(lo), y_of(cut and top or hi), min(bar_w * 0.3, 8))
                    if cut then
                        marks[#marks + 1] = format('<text class="clipped" x="%s" y="%s" text-anchor="middle" '
                            .. 'font-size="11" fill="#b00020">^<title>%s: max %s %s, off the axis</title></text>',
                            f1(cx), f1(y_of(top) + 10), esc(case_id(c)), esc(o.fmt(hi)), esc(o.unit))
                    end
                end
                -- the label sits on the bar (the median), not on its whisker
                local ty = y_of(med) - 5
                local text = esc(report.compact(med) .. (_M.spread(c, o.metric) and "*" or ""))
                if upright then
                    labels_out[#labels_out + 1] = format('<text class="value" x="%s" y="%s" text-anchor="middle">%s</text>',
                        f1(cx), f1(ty), text)
                else
                    labels_out[#labels_out + 1] = format('<text class="value" x="%s" y="%s" '
                        .. 'transform="rotate(-90 %s %s)" dy="4">%s</text>', f1(cx), f1(ty), f1(cx), f1(ty), text)
                end
            else
                local ty = y_of(0) - 6
                labels_out[#labels_out + 1] = format('<text class="failed-mark" x="%s" y="%s" fill="#b00020" '
                    .. 'font-weight="bold" transform="rotate(-90 %s %s)" dy="4">%s</text>', f1(cx), f1(ty),
                    f1(cx), f1(ty), (num(c.runs_ok) or 0) == 0 and "failed" or "no value")
            end
        end
        if g.title then
            out[#out + 1] = format('<text class="group" x="%s" y="%s" text-anchor="middle" fill="#111">%s</text>',
                f1(box.x + (gi - 0.5) * group_w), f1(box.y + box.h + 20), esc(x_text(g.x)))
        else
            -- no x axis: each bar says which row it is
            for bi, c in ipairs(g.cases) do
                local label = model.label_of[c]
                local cx, ty = gx + (bi - 0.5) * slot, box.y + box.h + 18
                if label_width(label) <= slot then
                    out[#out + 1] = format('<text class="group" x="%s" y="%s" text-anchor="middle" font-size="11" '
                        .. 'fill="#111">%s</text>', f1(cx), f1(ty), esc(label))
                else
                    out[#out + 1] = format('<text class="group" x="%s" y="%s" text-anchor="end" font-size="11" '
                        .. 'fill="#111" transform="rotate(-25 %s %s)">%s</text>', f1(cx), f1(ty - 4), f1(cx),
                        f1(ty - 4), esc(label))
                end
            end
        end
    end
    out[#out + 1] = "</g>"
    out[#out + 1] = '<g class="whiskers">' .. concat(marks) .. "</g>"
    out[#out + 1] = '<g class="values" font-size="11" fill="#111">' .. concat(labels_out) .. "</g>"
    out[#out + 1] = "</svg>"
    return concat(out, "\n"), n_cases
end

-- Lines over the x axis, a line per row, whiskers min/max.
local function line_chart(model, part, o)
    local xs = part.tables
    local labels, seen = {}, {}
    for _, label in ipairs(model.rows) do
        for _, c in ipairs(part.cases) do
            if model.label_of[c] == label and not seen[label] then seen[label] = true; labels[#labels + 1] = label end
        end
    end
    local width, height = max(640, min(1100, 240 + #xs * 140)), 440
    local ymax = 0
    for _, c in ipairs(part.cases) do
        local med, _, hi = stat(c, o.metric)
        ymax = max(ymax, hi or med or 0)
    end
    local top, step = nice_scale(ymax * 1.05)
    local out, box = frame({
        model = model, kind = "line", lines = true, part_attr = part_attr(model, part), width = width,
        height = height, title = o.title, subtitle = o.subtitle, labels = labels, top = top,
        step = step, y_title = o.y_title, x_title = o.x_title,
    })
    local function y_of(v) return box.y + box.h - v / top * box.h end
    local function x_of(i) return box.x + (i - 0.5) * box.w / #xs end
    for i, g in ipairs(xs) do
        out[#out + 1] = format('<text class="group" x="%s" y="%s" text-anchor="middle" fill="#111">%s</text>',
            f1(x_of(i)), f1(box.y + box.h + 20), esc(x_text(g.x)))
    end
    local points, lines, marks, all_dots = 0, {}, {}, {}
    for _, label in ipairs(labels) do
        local pts, dots = {}, {}
        for i, g in ipairs(xs) do
            for _, c in ipairs(g.cases) do
                if model.label_of[c] == label then
                    local med, lo, hi = stat(c, o.metric)
                    if med then
                        local x, y = x_of(i), y_of(med)
                        pts[#pts + 1] = f1(x) .. "," .. f1(y)
                        points = points + 1
                        if lo and hi then whisker(marks, x, y_of(lo), y_of(hi), 5, color(model, label)) end
                        dots[#dots + 1] = format('<circle class="point" cx="%s" cy="%s" r="4.5" fill="%s" '
                            .. 'stroke="#fff" stroke-width="1.5" data-case="%s"><title>%s</title></circle>',
                            f1(x), f1(y), color(model, label),
                            esc(case_id(c)), esc(value_tip(c, o.unit, med, lo, hi, o.fmt)))
                    end
                end
            end
        end
        if #pts > 1 then
            lines[#lines + 1] = format('<polyline class="line" points="%s" fill="none" stroke="%s" '
                .. 'stroke-width="2.5"%s/>', concat(pts, " "), color(model, label), dash_attr(model, label))
        end
        all_dots[#all_dots + 1] = concat(dots)
    end
    out[#out + 1] = format('<g class="lines" data-series="%d" data-points="%d">', #labels, points)
    out[#out + 1] = '<g class="whiskers">' .. concat(marks) .. "</g>"
    out[#out + 1] = concat(lines, "\n")
    out[#out + 1] = concat(all_dots, "\n")
    out[#out + 1] = "</g>"
    out[#out + 1] = "</svg>"
    return concat(out, "\n"), points
end

local function reps_text(part)
    local lo, hi
    for _, c in ipairs(part.cases) do
        local n = num(c.runs_ok)
        if n then lo = lo and min(lo, n) or n; hi = hi and max(hi, n) or n end
    end
    if not lo then return "no ok runs" end
    if lo == hi then return format("%d ok run%s per case", lo, lo == 1 and "" or "s") end
    return format("%d-%d ok runs per case", lo, hi)
end

local function count_fmt(v) return report.format_count(v) end

function _M.charts(model)
    local out = {}
    local x_title = model.x_axis and (require("arkbench.report.model").AXIS_TITLE[model.x_axis]
        or model.x_axis) or concat(model.row_axes, " / ")
    for _, part in ipairs(model.parts) do
        local reps = reps_text(part)
        local whisk = "bar = median, whisker = min-max over repetitions"
        local specs = {
            { kind = "throughput", metric = "round_trips_per_s", unit = "round trips/s", fmt = count_fmt,
                title = part.title .. ": throughput", y_title = "round trips per second",
                subtitle = "higher is better; " .. whisk .. "; " .. reps },
            { kind = "p99", metric = "rtt_p99_us", unit = "µs p99", fmt = report.format_us,
                title = part.title .. ": p99 round-trip time", y_title = "p99 RTT (µs)",
                subtitle = "lower is better; " .. whisk .. "; " .. reps },
        }
        -- no one-bar chart: a part with a single case is its table's row
        local ncases = 0
        for _, t in ipairs(part.tables or {}) do ncases = ncases + #t.cases end
        if ncases <= 1 then specs = {} end
        for _, s in ipairs(specs) do
            s.x_title = x_title
            local svg, n = bar_chart(model, part, s)
            out[#out + 1] = {
                file = part.slug .. "-" .. s.kind .. ".svg", kind = s.kind, part = part, title = s.title,
                inline = svg, svg = '<?xml version="1.0" encoding="UTF-8"?>\n' .. svg .. "\n", cases = n,
            }
        end
        local x = model.x_axis
        if x and #part.tables >= 2 then
            local s = x == "payload" and {
                metric = "payload_mib_per_s", unit = "MiB/s", fmt = function(v) return report.format_fixed(v, 1) end,
                title = part.title .. ": MiB/s by payload", y_title = "payload MiB/s (echoed, one direction)",
            } or {
                metric = "round_trips_per_s", unit = "round trips/s", fmt = count_fmt,
                title = part.title .. ": round trips/s by " .. x, y_title = "round trips per second",
            }
            s.subtitle = "point = median, whisker = min-max over repetitions; " .. reps
            s.x_title = x_title
            local svg, n = line_chart(model, part, s)
            out[#out + 1] = {
                file = part.slug .. "-by-" .. x .. ".svg", kind = "line", part = part, title = s.title,
                inline = svg, svg = '<?xml version="1.0" encoding="UTF-8"?>\n' .. svg .. "\n", points = n,
            }
        end
    end
    -- latency by percentile, per part (report/svg_pct.lua)
    for _, ch in ipairs(require("arkbench.report.svg_pct").charts(model)) do
        out[#out + 1] = ch
    end
    -- latency vs load (report/svg_load.lua): no `part`, a `section`; the
    -- time series are drawn into report.html alone (two per case)
    for _, ch in ipairs(require("arkbench.report.svg_load").latency_vs_load(model)) do
        out[#out + 1] = ch
    end
    return out
end

return _M
