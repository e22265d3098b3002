-- report_layout_spec.lua -- issue 25's report layout (docs/reports.md): no
-- one-bar chart for a part with one case, the open-loop columns in a table
-- of their own in report.html, a latency-by-percentile chart per part
-- (corrected and raw for open loop), and an interrupted run titled
-- interrupted with the numbers it measured.
local cjson = require("cjson")
local stats = require("arkbench.report.stats")
local model_of = require("arkbench.report.model")
local md = require("arkbench.report.md")
local html = require("arkbench.report.html")
local svg = require("arkbench.report.svg")
local svg_pct = require("arkbench.report.svg_pct")


local ROOT = os.getenv("ARKBENCH_ROOT") or "."

local function sweep_runs()
    local runs = {}
    for line in io.lines(ROOT .. "/spec/fixtures/knee/runs.jsonl") do runs[#runs + 1] = cjson.decode(line) end
    return runs
end

local function build(runs)
    return model_of.build(stats.summarize(runs, {}), runs, {})
end

describe("report layout", function()
    it("draws no one-bar chart for a single-case report", function()
        local runs = sweep_runs()
        local one = {}
        for _, r in ipairs(runs) do if r.case_id == "rate=1000" then one[#one + 1] = r end end
        for _, r in ipairs(one) do r.case.rate = 1000 end
        local m = build(one)
        for _, ch in ipairs(svg.charts(m)) do
            assert.is_not.equal("throughput", ch.kind)
            assert.is_not.equal("p99", ch.kind)
        end
        -- the sweep (6 cases in one part) has them, and a chart by rate
        local kinds = {}
        for _, ch in ipairs(svg.charts(build(runs))) do kinds[ch.kind] = (kinds[ch.kind] or 0) + 1 end
        assert.equals(1, kinds.throughput)
        assert.equals(1, kinds.p99)
        assert.equals(1, kinds.line)
    end)

    it("puts the open-loop columns in a table of their own in report.html", function()
        local m = build(sweep_runs())
        local page = html.render(m, svg.charts(m))
        local n = select(2, page:gsub('<table class="sortable open">', ""))
        assert.equals(6, n)
        local main = page:match('<table class="sortable cases">(.-)</table>')
        assert.is_nil(main:find("rate achieved", 1, true))
        local open = page:match('<table class="sortable open">(.-)</table>')
        for _, col in ipairs({ "topology", "rate asked/s", "rate achieved/s", "unsent", "send lag p99 µs",
                               "rate met" }) do
            assert.truthy(open:find(">" .. col .. "</th>", 1, true), col)
        end
    end)

    it("lists the generator-bound runs with their notes", function()
        local runs = sweep_runs()
        for _, r in ipairs(runs) do
            if r.generator_bound then
                r.notes = { "generator-bound: the load generator fell behind by 9.00 ms at p99: the corrected"
                    .. " latency includes it; add threads, processes or shards" }
            end
        end
        local m = build(runs)
        local text = md.render(m, {})
        assert.truthy(text:find("## Generator-bound runs", 1, true), text)
        assert.truthy(text:find("- rate=6000 rep 1: generator-bound: the load generator fell behind by 9.00 ms"
            .. " at p99", 1, true), text)
        assert.equals(1, select(2, text:gsub("\n%- rate=%d+ rep %d: generator%-bound", "")))
        local page = html.render(m, {})
        assert.truthy(page:find('<h2 id="generator">Generator-bound runs</h2>', 1, true))
    end)

    it("titles an interrupted case interrupted, with its numbers", function()
        local runs = sweep_runs()
        local r = runs[1]
        r.status, r.ok, r.error = "interrupted", false, "interrupted after 0.700 s of the 2 s measure phase"
        r.round_trips_per_s, r.measured_s = 1234, 0.7
        for _, x in ipairs(runs) do
            if x.case_id == r.case_id and x ~= r then x.status, x.ok = "interrupted", false end
        end
        local m = build(runs)
        local text = md.render(m, {})
        assert.truthy(text:find("| sharded:1 | interrupted: 1,234 rt/s over 0.70 s |", 1, true), text)
    end)
end)

describe("latency by percentile", function()
    it("keeps the percentiles a histogram can say", function()
        local runs = sweep_runs()
        local m = build(runs)
        local charts = svg_pct.charts(m)
        assert.equals(0, #charts) -- the fixture's runs carry no histograms
        local c = svg_pct.chart({ title = "t", file = "f.svg", part = "p", series = {
            { label = "a", curve = { { 50, 10 }, { 90, 20 }, { 99, 80 }, { 99.9, 400 } } },
            { label = "a (raw)", curve = { { 50, 9 }, { 90, 15 }, { 99, 30 } }, dashed = true } } })
        assert.equals("percentile", c.kind)
        assert.equals(7, c.points)
        assert.truthy(c.svg:find('data-points="7"', 1, true))
        assert.equals(7, select(2, c.svg:gsub('<circle class="point"', "")))
        assert.equals(1, select(2, c.svg:gsub('stroke%-dasharray="5 3"', "")))
        for _, t in ipairs({ ">50%<", ">90%<", ">99%<", ">99.9%<" }) do assert.truthy(c.svg:find(t, 1, true), t) end
    end)
end)

