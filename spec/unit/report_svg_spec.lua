-- report_svg_spec.lua -- charts/*.svg: well-formed XML, one bar per case,
-- whiskers only where min < max, value labels, axis titles with units,
-- failed cases marked and never drawn as a value, nothing external,
-- deterministic bytes.
local stats = require("arkbench.report.stats")
local json = require("arkbench.util.json")
local model_of = require("arkbench.report.model")
local svg = require("arkbench.report.svg")

-- A small XML well-formedness checker (enough for SVG as we write it):
-- one root, nested tags, quoted unique attributes, known entities, no
-- stray '<' or '&'.  Returns the elements { name, attrs, parent, text }
-- or nil, error.
local ENTITIES = { amp = true, lt = true, gt = true, quot = true, apos = true }
local function check_entities(s)
    for ent in s:gmatch("&([^;]*);?") do
        if not (ENTITIES[ent] or ent:match("^#%d+$") or ent:match("^#x%x+$")) then
            return nil, "bad entity &" .. ent
        end
    end
    local bare = s:gsub("&[#%w]+;", "")
    if bare:find("&", 1, true) then return nil, "bare &" end
    return true
end

local function parse_xml(s)
    local i, n, stack, elements, roots = 1, #s, {}, {}, 0
    if s:sub(1, 5) == "<?xml" then
        local e = s:find("?>", 1, true)
        if not e then return nil, "unterminated XML declaration" end
        i = e + 2
    end
    while i <= n do
        local lt = s:find("<", i, true)
        local text = s:sub(i, (lt or n + 1) - 1)
        local ok, err = check_entities(text)
        if not ok then return nil, err .. " in text at " .. i end
        if #stack == 0 and text:find("%S") then return nil, "text outside the root at " .. i end
        if #stack > 0 and text:find("%S") then
            local top = elements[stack[#stack]]
            top.text = (top.text or "") .. text
        end
        if not lt then break end
        if s:sub(lt, lt + 3) == "<!--" then
            local e = s:find("-->", lt + 4, true)
            if not e then return nil, "unterminated comment" end
            i = e + 3
        elseif s:sub(lt, lt + 1) == "</" then
            local name, e = s:match("^</([%a_:][%w_:%.%-]*)%s*>()", lt)
            if not name then return nil, "bad end tag at " .. lt end
            local top = elements[stack[#stack]]
            if not top or top.name ~= name then return nil, "</" .. name .. "> does not close an open " .. name end
            stack[#stack] = nil
            i = e
        else
            local name, p = s:match("^<([%a_:][%w_:%.%-]*)()", lt)
            if not name then return nil, "bad tag at " .. lt end
            local el = { name = name, attrs = {}, parent = stack[#stack] }
            local closed = false
            while true do
                local ws, p2 = s:match("^(%s*)()", p)
                p = p2
                if s:sub(p, p + 1) == "/>" then closed = true; p = p + 2; break end
                if s:sub(p, p) == ">" then p = p + 1; break end
                if ws == "" then return nil, "attribute without a space before it at " .. p end
                local an, q, p3 = s:match("^([%a_:][%w_:%.%-]*)%s*=%s*([\"'])()", p)
                if not an then return nil, "bad attribute at " .. p end
                if el.attrs[an] then return nil, "duplicate attribute " .. an end
                local close = s:find(q, p3, true)
                if not close then return nil, "unterminated attribute " .. an end
                local val = s:sub(p3, close - 1)
                if val:find("<", 1, true) then return nil, "'<' in attribute " .. an end
                local eok, eerr = check_entities(val)
                if not eok then return nil, eerr .. " in attribute " .. an end
                el.attrs[an] = val
                p = close + 1
            end
            if #stack == 0 then
                roots = roots + 1
                if roots > 1 then return nil, "more than one root element" end
            end
            elements[#elements + 1] = el
            if not closed then stack[#stack + 1] = #elements end
            i = p
        end
    end
    if #stack > 0 then return nil, "unclosed <" .. elements[stack[#stack]].name .. ">" end
    if roots ~= 1 then return nil, "no root element" end
    return elements
end

local function has_class(el, c)
    local cls = el.attrs.class
    return cls ~= nil and (" " .. cls .. " "):find(" " .. c .. " ", 1, true) ~= nil
end

local function find(elements, name, class)
    local out = {}
    for _, el in ipairs(elements) do
        if el.name == name and (class == nil or has_class(el, class)) then out[#out + 1] = el end
    end
    return out
end

local function case(payload, clients, topology)
    return {
        name = "unit", protocol = "tcp", payload = payload, clients = clients, window = clients,
        topology = topology, warmup = 0.05, duration = 0.2, repetitions = 3,
        case_id = string.format("payload=%d clients=%d window=%d topology=%s", payload, clients, clients, topology),
    }
end

local function ok(c, rep, rt)
    return {
        case_id = c.case_id, case = c, repetition = rep, ok = true, status = "ok",
        round_trips_per_s = rt, payload_mib_per_s = rt * c.payload / 1048576,
        rtt_us = { p50 = 1e6 / rt, p95 = 1.5e6 / rt, p99 = 2e6 / rt }, cpu_percent = 90,
    }
end

local A, B = case(64, 1, "shared:1"), case(64, 1, "sharded:2")
local C, D = case(1024, 1, "shared:1"), case(1024, 1, "sharded:2")
local E, F = case(64, 16, "shared:1"), case(64, 16, "sharded:2")

local function runs()
    local out = {}
    for rep, rt in ipairs({ 100000, 110000, 90000 }) do out[#out + 1] = ok(A, rep, rt) end
    for rep, rt in ipairs({ 200000, 220000, 180000 }) do out[#out + 1] = ok(B, rep, rt) end
    for rep, rt in ipairs({ 50000, 40000, 60000 }) do out[#out + 1] = ok(C, rep, rt) end
    for rep = 1, 3 do out[#out + 1] = ok(D, rep, 75000) end
    for rep = 1, 3 do out[#out + 1] = ok(E, rep, 300000) end
    out[#out + 1] = {
        case_id = F.case_id, case = F, repetition = 1, ok = false, status = "timeout",
        error = "worker exceeded 31 s",
    }
    return out
end

local function charts(rs)
    rs = rs or runs()
    return svg.charts(model_of.build(stats.summarize(rs, {}), rs, {}))
end

local function by_file(list)
    local out = {}
    for _, ch in ipairs(list) do out[ch.file] = ch end
    return out
end

describe("report_svg.charts", function()
    it("makes a throughput and a p99 bar chart per protocol x load, and a line chart over payload", function()
        local files = {}
        for _, ch in ipairs(charts()) do files[#files + 1] = ch.file end
        assert.are.same({
            "tcp-c1-w1-throughput.svg", "tcp-c1-w1-p99.svg", "tcp-c1-w1-by-payload.svg",
            "tcp-c16-w16-throughput.svg", "tcp-c16-w16-p99.svg",
        }, files)
        -- 16x16 ran one payload only: no line to draw there
    end)

    it("writes well-formed XML with no scripts, links, images or external fonts", function()
        for _, ch in ipairs(charts()) do
            local els, err = parse_xml(ch.svg)
            assert.is_not_nil(els, ch.file .. ": " .. tostring(err))
            assert.are.equal("svg", els[1].name)
            assert.are.equal("http://www.w3.org/2000/svg", els[1].attrs.xmlns)
            assert.truthy(els[1].attrs.viewBox:match("^0 0 %d+ %d+$"))
            assert.truthy(ch.svg:match('^<%?xml version="1.0" encoding="UTF%-8"%?>\n<svg '))
            assert.are.equal(ch.inline, ch.svg:match("^<%?xml[^\n]*\n(.*)\n$"))
            for _, bad in ipairs({ "<script", "href", "url(", "@import", "@font-face", "<image", "<foreignObject" }) do
                assert.is_nil(ch.svg:find(bad, 1, true), ch.file .. " has " .. bad)
            end
            assert.truthy(els[1].attrs["font-family"]:find("sans-serif", 1, true))
        end
    end)

    it("draws one bar per case, heights proportional to the medians", function()
        local ch = by_file(charts())["tcp-c1-w1-throughput.svg"]
        local els = assert(parse_xml(ch.svg))
        local g = find(els, "g", "bars")
        assert.are.equal(1, #g)
        assert.are.equal("4", g[1].attrs["data-cases"])
        local bars = find(els, "rect", "bar")
        assert.are.equal(4, #bars)
        local h = {}
        for _, b in ipairs(bars) do h[b.attrs["data-case"]] = tonumber(b.attrs.height) end
        assert.is_true(math.abs(h[B.case_id] - 2 * h[A.case_id]) < 0.2)
        assert.is_true(math.abs(h[D.case_id] - 1.5 * h[C.case_id]) < 0.2)
        -- bars sit on one baseline
        local base = tonumber(bars[1].attrs.y) + tonumber(bars[1].attrs.height)
        for _, b in ipairs(bars) do
            assert.is_true(math.abs(tonumber(b.attrs.y) + tonumber(b.attrs.height) - base) < 0.11)
        end
    end)

    it("labels each bar with its median and draws whiskers only where min < max", function()
        local ch = by_file(charts())["tcp-c1-w1-throughput.svg"]
        local els = assert(parse_xml(ch.svg))
        local values = {}
        for _, t in ipairs(find(els, "text", "value")) do values[#values + 1] = t.text end
        assert.are.same({ "100k", "200k", "50k", "75k" }, values)
        -- A, B and C vary (3 whiskers, each a halo and a stroke); D does not
        assert.are.equal(6, #find(els, "path", "whisker"))
        local tips = {}
        for _, b in ipairs(find(els, "rect", "bar")) do
            for _, t in ipairs(els) do
                if t.name == "title" and els[t.parent] == b then tips[#tips + 1] = t.text end
            end
        end
        assert.are.equal(A.case_id .. ": 100,000 round trips/s [min 90,000, max 110,000] (3/3 runs ok)", tips[1])
    end)

    it("keeps value labels inside the plot and apart from each other", function()
        for _, ch in ipairs(charts()) do
            local els = assert(parse_xml(ch.svg))
            local top = math.huge
            for _, l in ipairs(find(els, "line")) do top = math.min(top, tonumber(l.attrs.y1)) end
            local labels = find(els, "text", "value")
            for i, t in ipairs(labels) do
                local y = tonumber(t.attrs.y)
                assert.is_true(y - 11 >= top - 1, ch.file .. ": label " .. t.text .. " above the plot")
                for j = i + 1, #labels do
                    local u = labels[j]
                    local dx = math.abs(tonumber(t.attrs.x) - tonumber(u.attrs.x))
                    local dy = math.abs(y - tonumber(u.attrs.y))
                    if not t.attrs.transform then
                        assert.is_true(dx >= (#t.text + #u.text) * 6.6 / 2 or dy >= 11,
                            ch.file .. ": labels " .. t.text .. " and " .. u.text .. " overlap")
                    end
                end
            end
        end
    end)

    it("has axis titles with units", function()
        local list = by_file(charts())
        local function texts(file)
            local out = {}
            for _, t in ipairs(find(assert(parse_xml(list[file].svg)), "text")) do out[t.text or ""] = true end
            return out
        end
        local t = texts("tcp-c1-w1-throughput.svg")
        assert.is_true(t["round trips per second"])
        assert.is_true(t["payload (bytes)"])
        assert.is_true(texts("tcp-c1-w1-p99.svg")["p99 RTT (µs)"])
        assert.is_true(texts("tcp-c1-w1-by-payload.svg")["payload MiB/s (echoed, one direction)"])
    end)

    it("marks a failed case with a zero-height bar and 'failed', never a value", function()
        local ch = by_file(charts())["tcp-c16-w16-throughput.svg"]
        local els = assert(parse_xml(ch.svg))
        assert.are.equal("2", find(els, "g", "bars")[1].attrs["data-cases"])
        local missing = find(els, "rect", "missing")
        assert.are.equal(1, #missing)
        assert.are.equal(F.case_id, missing[1].attrs["data-case"])
        assert.are.equal("0.0", missing[1].attrs.height)
        local marks = find(els, "text", "failed-mark")
        assert.are.equal(1, #marks)
        assert.are.equal("failed", marks[1].text)
        assert.are.equal(1, #find(els, "text", "value"))
    end)

    it("draws a line per topology with a point per case that has a value", function()
        local ch = by_file(charts())["tcp-c1-w1-by-payload.svg"]
        local els = assert(parse_xml(ch.svg))
        local g = find(els, "g", "lines")[1]
        assert.are.equal("4", g.attrs["data-points"])
        assert.are.equal("2", g.attrs["data-series"])
        assert.are.equal(4, #find(els, "circle", "point"))
        assert.are.equal(2, #find(els, "polyline", "line"))
    end)

    it("gives the same bytes twice and from a summary read back from JSON", function()
        local rs = runs()
        local a = charts(rs)
        local b = svg.charts(model_of.build(json.decode(json.encode(stats.summarize(rs, {}))), rs, {}))
        assert.are.equal(#a, #b)
        for i = 1, #a do assert.are.equal(a[i].svg, b[i].svg) end
        local c = charts(runs())
        for i = 1, #a do assert.are.equal(a[i].svg, c[i].svg) end
    end)

    it("escapes text for XML", function()
        assert.are.equal("a &amp; b &lt;c&gt; &quot;d&quot; &#39;e&#39;", svg.esc("a & b <c> \"d\" 'e'"))
        local x = case(64, 1, "shared:1")
        x.topology = "a<b&c"
        x.case_id = "topology=a<b&c"
        local rs = runs()
        rs[#rs + 1] = ok(x, 1, 1000)
        for _, ch in ipairs(charts(rs)) do
            assert.is_not_nil(parse_xml(ch.svg), ch.file)
        end
    end)

    it("keeps the axis to 2x the largest median when one repetition is far off, and marks it", function()
        -- C's p99 in one repetition is 20x the others: its whisker is cut at
        -- the top and marked, the axis is set by the medians, every value
        -- label sits at its bar (the median), and C and A are flagged as
        -- spread (max/min > 1.5)
        local rs = runs()
        for _, r in ipairs(rs) do
            if r.case_id == C.case_id and r.repetition == 2 then r.rtt_us.p99 = 20 * r.rtt_us.p99 end
        end
        local ch = by_file(charts(rs))["tcp-c1-w1-p99.svg"]
        local els = assert(parse_xml(ch.svg))
        local clipped = find(els, "text", "clipped")
        assert.are.equal(1, #clipped)
        assert.truthy(ch.svg:find("1 whisker cut at the top", 1, true), ch.svg)
        assert.truthy(ch.svg:find("* repetitions spread more than 1.5x", 1, true))
        -- the axis: the largest tick is below the cut whisker's max
        local ticks = {}
        for _, el in ipairs(find(els, "text")) do
            local parent = els[el.parent]
            if parent and has_class(parent, "y-axis") and el.text then ticks[#ticks + 1] = el.text end
        end
        local top_tick = 0
        for _, t in ipairs(ticks) do if t:match("^[%d%.]+$") then top_tick = math.max(top_tick, tonumber(t)) end end
        -- C's p99 medians are 33..50 µs, its outlier 1000 µs: the axis stops near 2 x 50
        assert.is_true(top_tick <= 120, "axis top " .. top_tick)
        local spread_labels, plain = 0, 0
        for _, el in ipairs(find(els, "text", "value")) do
            if el.text:find("*", 1, true) then spread_labels = spread_labels + 1 else plain = plain + 1 end
        end
        -- C (20x) and A (p99 from 90k..110k: 1.22x, not flagged); B 1.22x; D 1x
        assert.are.equal(1, spread_labels)
        assert.are.equal(3, plain)
        -- without the outlier nothing is cut or flagged
        local ch2 = by_file(charts())["tcp-c1-w1-p99.svg"]
        assert.is_nil(ch2.svg:find('class="clipped"', 1, true))
        assert.is_nil(ch2.svg:find("spread more than", 1, true))
    end)

    it("the checker refuses what is not well-formed", function()
        assert.is_nil(parse_xml("<svg><g></svg>"))
        assert.is_nil(parse_xml('<svg a="1" a="2"/>'))
        assert.is_nil(parse_xml("<svg>a & b</svg>"))
        assert.is_nil(parse_xml("<svg/><svg/>"))
        assert.is_nil(parse_xml('<svg a="<"/>'))
        assert.is_not_nil(parse_xml('<?xml version="1.0"?>\n<svg a="&amp;"><g/>x &lt; y</svg>\n'))
    end)
end)
