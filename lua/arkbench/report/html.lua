-- report_html.lua -- report.html: one self-contained page (docs/reports.md).
--
--   report_html.render(model, charts) -> string
--       model: report_model.build(...); charts: report_svg.charts(model),
--       inlined as <svg> elements; plus the time series of
--       report_svg_load.time_series(model), drawn here alone.
--
-- Everything is inline (CSS, SVG, a few lines of JS); nothing is fetched.
-- The JS sorts a table when its header is clicked (numeric columns by the
-- cell's data-v), and fills <pre id="selfcheck"> with a JSON line: per chart
-- the bars (or points) it declares and the ones in the DOM, the script
-- errors caught by window.onerror, and whether a test sort worked.  The
-- Chromium spec reads that line from the dumped DOM.

local report = require("arkbench.report.report")
local md = require("arkbench.report.md")
local esc = require("arkbench.report.svg").esc

local type, ipairs = type, ipairs
local format = string.format
local concat = table.concat

local _M = {}

local CSS = [[
body{font-family:"DejaVu Sans","Liberation Sans",Arial,Helvetica,sans-serif;margin:0 auto;
max-width:1320px;padding:0 24px 48px;color:#111;background:#fff;line-height:1.4}
h1{margin:24px 0 4px}h2{margin-top:36px;border-bottom:2px solid #ddd;padding-bottom:4px}
h3{margin:20px 0 6px}
table{border-collapse:collapse;margin:6px 0 14px;font-size:14px}
th,td{border:1px solid #d4d4d4;padding:3px 8px;vertical-align:top}
th{background:#f2f2f2;text-align:left;white-space:normal;vertical-align:bottom}
table.sortable th{cursor:pointer}
table.sortable th[aria-sort=ascending]::after{content:" \25B2"}
table.sortable th[aria-sort=descending]::after{content:" \25BC"}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}td.num{white-space:nowrap}
tr.failed td{background:#fde8e8;color:#8b0000;font-weight:bold}
td.partial{color:#8b0000;font-weight:bold}
nav ul{columns:2;padding-left:20px;margin:6px 0}
.charts{display:flex;flex-wrap:wrap;gap:16px}
figure{margin:0;flex:0 0 calc(50% - 8px)}figcaption{font-size:12px;color:#555}
@media (max-width:1100px){figure{flex-basis:100%}}
svg.chart,svg.series{width:100%;height:auto;border:1px solid #e4e4e4}
pre{background:#f7f7f7;border:1px solid #e0e0e0;padding:10px;overflow-x:auto;font-size:13px}
.note{color:#444}
#selfcheck{font-size:11px;color:#666;background:none;border:none;padding:0}
]]

-- Head: catch errors from the first script on.
local JS_HEAD = [[
window.__abErrors=[];window.onerror=function(m,s,l){window.__abErrors.push(String(m)+" @"+l);};
]]

local JS = [[
(function(){
function key(td,num){if(!td)return num?-Infinity:"";if(!num)return td.textContent.toLowerCase();var v=td.getAttribute("data-v");
return v===null||v===""?-Infinity:parseFloat(v);}
function sortBy(th){var table=th.closest("table"),body=table.tBodies[0],i=th.cellIndex;
var num=th.classList.contains("num"),dir=th.getAttribute("aria-sort")==="descending"?1:-1;
if(!num&&!th.getAttribute("aria-sort"))dir=1;
var rows=Array.prototype.slice.call(body.rows);
rows.sort(function(a,b){var x=key(a.cells[i],num),y=key(b.cells[i],num);return x<y?-dir:x>y?dir:0;});
rows.forEach(function(r){body.appendChild(r);});
Array.prototype.forEach.call(th.parentNode.cells,function(c){c.removeAttribute("aria-sort");});
th.setAttribute("aria-sort",dir>0?"ascending":"descending");}
Array.prototype.forEach.call(document.querySelectorAll("table.sortable th"),function(th){
th.addEventListener("click",function(){sortBy(th);});});
var res=[],bad=0,charts=document.querySelectorAll("svg.chart");
Array.prototype.forEach.call(charts,function(s){var g=s.querySelector("g.bars"),l=s.querySelector("g.lines");
var r={kind:s.getAttribute("data-kind"),part:s.getAttribute("data-part")};
if(g){r.declared=+g.getAttribute("data-cases");r.found=g.querySelectorAll("rect.bar").length;}
else if(l){r.declared=+l.getAttribute("data-points");r.found=l.querySelectorAll("circle.point").length;}
else{r.declared=-1;r.found=0;}
if(r.declared!==r.found||r.found<1)bad++;res.push(r);});
var sorted=null,t=document.querySelector("table.cases");
if(t){var th=t.querySelector("th.rt"),body=t.tBodies[0],orig=Array.prototype.slice.call(body.rows);
sortBy(th);var last=Infinity;sorted=true;
Array.prototype.forEach.call(body.rows,function(r){var v=key(r.cells[th.cellIndex],true);
if(v>last)sorted=false;last=v;});
orig.forEach(function(r){body.appendChild(r);});th.removeAttribute("aria-sort");}
var errs=window.__abErrors,vw=document.documentElement.clientWidth,over=[];
Array.prototype.forEach.call(document.querySelectorAll("table th"),function(th){
var b=th.getBoundingClientRect();if(b.right>vw+0.5)over.push(th.textContent);});
document.getElementById("selfcheck").textContent=JSON.stringify({status:bad===0&&errs.length===0&&
sorted!==false&&res.length>0?"ok":"fail",charts:res.length,bad:bad,sorted:sorted,errors:errs,detail:res,
viewport:vw,overflow:over});
})();
]]

local function h(s) return esc(s) end
local split_open

local function html_table(header, rows, opts)
    opts = opts or {}
    local out = {}
    out[#out + 1] = format('<table class="%s">', opts.class or "sortable")
    out[#out + 1] = "<thead><tr>"
    for i, col in ipairs(header) do
        local cls = {}
        if col[2] then cls[#cls + 1] = "num" end
        if opts.rt_col == i then cls[#cls + 1] = "rt" end
        out[#out + 1] = format("<th%s>%s</th>", #cls > 0 and (' class="' .. concat(cls, " ") .. '"') or "",
            h(col[1]))
    end
    out[#out + 1] = "</tr></thead><tbody>"
    for _, r in ipairs(rows) do
        local cells = r.cells or r
        out[#out + 1] = r.failed and '<tr class="failed">' or "<tr>"
        for i = 1, #header do
            local v = cells[i]
            if v == nil then v = "" end
            local attrs = {}
            if header[i][2] then
                attrs[#attrs + 1] = 'class="num' .. ((r.partial and i == #header) and " partial" or "") .. '"'
                local sv = r.sort and r.sort[i]
                if type(sv) == "number" and sv == sv then
                    attrs[#attrs + 1] = 'data-v="' .. require("arkbench.util.json").number_text(sv) .. '"'
                end
            end
            out[#out + 1] = format("<td%s>%s</td>", #attrs > 0 and (" " .. concat(attrs, " ")) or "", h(v))
        end
        out[#out + 1] = "</tr>"
    end
    out[#out + 1] = "</tbody></table>"
    return concat(out, "\n")
end

-- The open-loop columns (report_md.OPEN_COLS and "rate met") of a case
-- table go into a table of their own under it, with the same first
-- columns (the row axes), so every column of both fits a 1280 px window.
-- Returns main header, main rows, and the open-loop header and rows (nil
-- without open-loop columns).
local OPEN_NAMES = { ["rate met"] = true }
for _, oc in ipairs(md.OPEN_COLS) do OPEN_NAMES[oc[1]] = true end
split_open = function(header, rows, nkeys)
    local keep, move = {}, {}
    for i, col in ipairs(header) do
        if OPEN_NAMES[col[1]] then move[#move + 1] = i else keep[#keep + 1] = i end
    end
    if #move == 0 then return header, rows end
    for i = nkeys, 1, -1 do table.insert(move, 1, i) end
    local function pick(idx)
        local hd, rs = {}, {}
        for j, i in ipairs(idx) do hd[j] = header[i] end
        for k, r in ipairs(rows) do
            local cells, sort = {}, {}
            for j, i in ipairs(idx) do cells[j] = (r.cells or r)[i]; sort[j] = r.sort and r.sort[i] end
            rs[k] = { cells = cells, sort = sort, failed = r.failed, case = r.case, partial = r.partial }
        end
        return hd, rs
    end
    local mh, mr = pick(keep)
    local oh, orr = pick(move)
    for _, r in ipairs(orr) do r.partial = nil end
    return mh, mr, oh, orr
end

-- Thresholds and an SLO search (the texts of report_md.gate_lines).
local function gates(model, add)
    local th = model.thresholds
    if th then
        add('<h2 id="thresholds">Thresholds</h2>')
        local rules = {}
        for i, t in ipairs(type(th.rules) == "table" and th.rules or {}) do rules[i] = "<code>" .. h(t) .. "</code>" end
        add("<p>Rules: " .. concat(rules, ", ") .. ", checked per case on the median over its ok"
            .. " repetitions (rate_met: every ok repetition).</p>")
        local rows = {}
        for _, r in ipairs(type(th.results) == "table" and th.results or {}) do
            if r.crossed == true then
                rows[#rows + 1] = { cells = { tostring(r.case_id), tostring(r.rule), tostring(r.why or "-") },
                                    failed = true }
            end
        end
        if #rows == 0 then
            add("<p>Every threshold held in every case.</p>")
        else
            add(format('<p class="crossed"><b>%d threshold%s crossed</b> (exit code 3 when every run'
                       .. ' was ok):</p>', #rows,
                       #rows == 1 and "" or "s"))
            add(html_table({ { "case", false }, { "rule", false }, { "value", false } }, rows,
                           { class = "thresholds" }))
        end
    end
    local se = model.search
    if se then
        add('<h2 id="search">SLO search</h2>')
        local slo = {}
        for i, t in ipairs(type(se.slo) == "table" and se.slo or {}) do slo[i] = tostring(t) end
        add(format("<p>SLO <code>%s</code> and rate met, rate %s .. %s /s: answer <b>%s</b>%s.</p>",
            h(concat(slo, " and ")), h(report.format_count(se.from)), h(report.format_count(se.to)),
            report.num(se.answer) and h(report.format_count(se.answer) .. " messages/s")
                or (type(se.stopped) == "string" and h("none, " .. se.stopped) or "none"),
            type(se.reason) == "string" and (" (" .. h(se.reason) .. ")") or ""))
        local rows = {}
        for i, p in ipairs(type(se.probes) == "table" and se.probes or {}) do
            rows[i] = { cells = { tostring(i), report.format_count(p.rate), p.pass == true and "pass" or "fail",
                                  type(p.why) == "string" and p.why or "-" }, sort = { i, p.rate } }
        end
        add(html_table({ { "probe", true }, { "rate/s", true }, { "result", false }, { "why", false } }, rows))
    end
end

function _M.render(model, charts)
    local env = model.env
    local out = {}
    local function add(s) out[#out + 1] = s end
    local title = "arkbench report: " .. model.scenario
    add('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">')
    add('<meta name="viewport" content="width=device-width, initial-scale=1">')
    add("<title>" .. h(title) .. "</title>")
    add("<style>\n" .. CSS .. "</style>")
    add("<script>\n" .. JS_HEAD .. "</script>")
    add("</head>\n<body>")
    add("<h1>" .. h(title) .. "</h1>")
    local host = {}
    for _, k in ipairs({ "hostname", "cpu_model" }) do
        if type(env[k]) == "string" then host[#host + 1] = env[k] end
    end
    if report.num(env.logical_cpus) then host[#host + 1] = report.axis_text(env.logical_cpus) .. " logical CPUs" end
    add(format('<p>Scenario <code>%s</code>, %s to %s (UTC)%s.<br>%s.</p>',
        h(type(env.scenario_path) == "string" and env.scenario_path or model.scenario),
        h(type(env.started_utc) == "string" and env.started_utc or "?"),
        h(type(env.ended_utc) == "string" and env.ended_utc or "?"),
        #host > 0 and not (model.shards and model.shards.multi_host)
            and (", on " .. h(concat(host, ", "))) or "", h(model.settings)))
    add('<p class="note">Round trips/s is <i>median [min, max]</i> over the ok repetitions (each in a '
        .. "fresh process); the other columns are medians of the per-run values. CPU % is user + sys "
        .. "time over the measured interval (100 = one core); machine % divides it by the logical CPUs. "
        .. "Failed runs are listed apart and never averaged in. Click a column header to sort.</p>")
    local sh = model.shards and require("arkbench.report.shards")
    if sh then
        add("<p>" .. h((sh.sentence(model.shards):gsub("`", ""))) .. ' See <a href="#shards">Shards</a>.</p>')
        if model.shards.multi_host then add('<p class="note">' .. h(sh.CPU_NOTE) .. "</p>") end
    end
    if model.interrupted then
        add("<p><b>This run was interrupted</b>: cases or repetitions after the interruption are missing.</p>")
    end
    if model.open then
        add('<p class="note">Open-loop cases (a <code>rate</code>): the p50/p95/p99 columns are the '
            .. h(md.OPEN_NOTE) .. ".</p>")
    end
    gates(model, add)

    -- contents
    add("<nav><ul>")
    if #model.findings > 0 or #(model.knees or {}) > 0 then
        add('<li><a href="#findings">Key findings</a></li>')
    end
    for _, part in ipairs(model.parts) do
        add(format('<li><a href="#%s">%s</a></li>', h(part.slug), h(part.title)))
    end
    add('<li><a href="#failed">Failed runs</a></li>'
        .. (#model.degraded > 0 and '<li><a href="#degraded">Degraded runs</a></li>' or "")
        .. (model.shards and '<li><a href="#shards">Shards</a></li>' or "")
        .. '<li><a href="#environment">Environment</a></li>'
        .. '<li><a href="#scenario">Scenario source</a></li>')
    add("</ul></nav>")

    if #model.findings > 0 then
        add('<h2 id="findings">Key findings</h2>')
        add('<p class="note">Best topology by round trips/s in each group, as the median of its per-'
            .. h(model.x_axis or "case") .. " ratios to the one-thread topology (min and max of those ratios "
            .. "in brackets); lowest p99: the topology with the lowest median p99 in most groups.</p>")
        local rows = {}
        for i, f in ipairs(model.findings) do
            rows[i] = { cells = md.finding_cells(f), sort = { nil, nil, nil, f.ratio, f.n } }
        end
        add(html_table(md.FINDING_HEADER, rows))
    end
    local knees = md.knee_lines(model)
    if #knees > 0 then
        if #model.findings == 0 then add('<h2 id="findings">Key findings</h2>') end
        add('<p class="note">The knee of each rate sweep: the highest asked rate before the corrected'
            .. " p99 rises past 2× its value at the lowest rate.</p><ul class=\"knees\">")
        for _, l in ipairs(knees) do add("<li>" .. h(l) .. "</li>") end
        add("</ul>")
    end
    local gen = md.generator_lines(model)
    if #gen > 0 then
        add('<h2 id="generator">Generator-bound runs</h2><p class="note">' .. h(md.GENERATOR_NOTE) .. "</p><ul>")
        for _, l in ipairs(gen) do add("<li>" .. h(l) .. "</li>") end
        add("</ul>")
    end

    local by_part, by_section = {}, { load = {}, time = {} }
    for _, ch in ipairs(charts or {}) do
        local l
        if ch.part then
            by_part[ch.part] = by_part[ch.part] or {}
            l = by_part[ch.part]
        else
            l = by_section[ch.section] or {}
        end
        l[#l + 1] = ch
    end
    -- the time series: inline only, two per case with intervals
    for _, ch in ipairs(require("arkbench.report.svg_load").time_series(model)) do
        local l = by_section.time
        l[#l + 1] = ch
    end
    for _, part in ipairs(model.parts) do
        add(format('<section id="%s">\n<h2>%s</h2>', h(part.slug), h(part.title)))
        for _, t in ipairs(part.tables) do
            if t.title then add("<h3>" .. h(t.title) .. "</h3>") end
            local header, rows = md.case_rows(model, t.cases)
            local first = #model.row_axes + 1
            for _, r in ipairs(rows) do
                local c = r.case
                r.partial = not r.failed and (report.num(c.runs_ok) or 0) < (report.num(c.runs) or 0)
            end
            local main, mrows, open, orows = split_open(header, rows, #model.row_axes)
            add(html_table(main, mrows, { class = "sortable cases", rt_col = first }))
            if open then
                add('<p class="note">Open loop, the same rows: the rate asked and achieved, sends left'
                    .. " unsent, the raw p99 (from the actual send) and the send lag.</p>")
                add(html_table(open, orows, { class = "sortable open" }))
            end
        end
        add('<div class="charts">')
        for _, ch in ipairs(by_part[part] or {}) do
            add("<figure>\n" .. ch.inline .. "\n<figcaption>charts/" .. h(ch.file) .. "</figcaption></figure>")
        end
        add("</div>\n</section>")
    end

    if #(model.tag_rows or {}) > 0 then
        local tags = require("arkbench.report.tags")
        add('<section id="tags">\n<h2>Tags</h2>\n<p class="note">' .. h(tags.NOTE) .. '</p>')
        add(html_table(tags.HEADER, model.tag_rows))
        add("</section>")
    end

    for _, sec in ipairs(md.SECTIONS) do
        if #by_section[sec[1]] > 0 then
            add(format('<section id="%s">\n<h2>%s</h2>\n<p class="note">%s</p>\n<div class="charts">',
                sec[1], h(sec[2]), h(sec[3])))
            for _, ch in ipairs(by_section[sec[1]]) do
                add("<figure>\n" .. ch.inline .. "\n<figcaption>charts/" .. h(ch.file) .. "</figcaption></figure>")
            end
            add("</div>\n</section>")
        end
    end

    add('<h2 id="failed">Failed runs</h2>')
    if #model.failed == 0 then
        add(#model.degraded > 0 and "<p>None: every run measured (the degraded ones are below).</p>"
            or "<p>None: every run was ok.</p>")
    else
        add('<p class="note">Not part of any median, chart or ratio. Counters are the run\'s own (messages).</p>')
        local rows = {}
        for i, f in ipairs(model.failed) do
            local sortv = { nil, f.repetition, nil, nil, nil }
            for _, k in ipairs(require("arkbench.report.model").FAILED_COUNTERS) do sortv[#sortv + 1] = f[k] end
            rows[i] = { cells = md.failed_cells(f), sort = sortv, failed = false }
        end
        add(html_table(md.FAILED_HEADER, rows))
    end

    if #model.degraded > 0 then
        add('<h2 id="degraded">Degraded runs</h2>')
        add('<p class="note">' .. h(md.DEGRADED_NOTE) .. '</p>')
        local rows = {}
        for i, f in ipairs(model.degraded) do
            local sortv = { nil, f.repetition, nil, nil, nil }
            for _, k in ipairs(require("arkbench.report.model").FAILED_COUNTERS) do sortv[#sortv + 1] = f[k] end
            rows[i] = { cells = md.failed_cells(f), sort = sortv, failed = false }
        end
        add(html_table(md.FAILED_HEADER, rows))
    end

    if sh then
        add('<h2 id="shards">Shards</h2>')
        add('<p class="note">' .. h(sh.NOTE) .. "</p>")
        add(html_table(sh.HEADER, sh.cells(model.shards), { class = "env" }))
        add(html_table(sh.SKEW_HEADER, sh.skew_cells(model.shards), { class = "env" }))
    end
    add('<h2 id="environment">Environment</h2>')
    if model.env_missing then add("<p>env.json is missing: no environment recorded.</p>") end
    add(html_table({ { "item", false }, { "value", false } }, model.env_rows, { class = "env" }))

    add('<h2 id="scenario">Scenario source</h2>')
    local src = env.scenario_source
    if type(src) == "string" then
        add("<pre><code>" .. h(src) .. "</code></pre>")
    else
        add("<p>Not recorded (env.json has no scenario_source).</p>")
    end
    add('<pre id="selfcheck">self-check did not run</pre>')
    add("<script>\n" .. JS .. "</script>")
    add("</body>\n</html>\n")
    return concat(out, "\n")
end

return _M
