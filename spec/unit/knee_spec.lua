-- knee_spec.lua -- issue 25 acceptance 4's logic on a synthetic rate sweep
-- (spec/fixtures/knee/runs.jsonl: 6 asked rates, written out of order, a
-- server whose capacity lies between 4,000 and 5,000 msg/s; the two top
-- points miss their rate, one run at 6,000 is generator-bound): the
-- latency-vs-load chart's x is the asked rate, monotone; overloaded
-- points are marked; the knee is 4,000 msg/s and named in the key
-- findings (report.md, report.html, the terminal's findings text).
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local cjson = require("cjson")
local stats = require("arkbench.report.stats")
local model_of = require("arkbench.report.model")
local md = require("arkbench.report.md")
local html = require("arkbench.report.html")
local svg = require("arkbench.report.svg")
local knee = require("arkbench.report.knee")

local ROOT = os.getenv("ARKBENCH_ROOT") or "."

local function sweep()
    local runs = {}
    for line in io.lines(ROOT .. "/spec/fixtures/knee/runs.jsonl") do runs[#runs + 1] = cjson.decode(line) end
    local summary = stats.summarize(runs, {})
    return model_of.build(summary, runs, {})
end

local function load_chart(m)
    for _, ch in ipairs(svg.charts(m)) do
        if ch.kind == "latency-vs-load" then return ch end
    end
end

describe("a rate sweep against offered load", function()
    it("finds the knee: the highest asked rate before p99 passes 2x its low-load value", function()
        local m = sweep()
        assert.equals(1, #m.knees)
        local k = m.knees[1].knee
        assert.equals(4000, k.rate)
        assert.equals(5000, k.next_rate)
        assert.near(101.5, k.low_p99, 1e-9)
        local rates = {}
        for i, p in ipairs(m.knees[1].points) do rates[i] = p.rate end
        assert.same({ 1000, 2000, 3000, 4000, 5000, 6000 }, rates)
    end)

    it("says when p99 never rose that far, and needs two points", function()
        local k = knee.of({ { rate = 1, p99 = 10 }, { rate = 2, p99 = 19 } })
        assert.equals(2, k.rate)
        assert.is_nil(k.next_rate)
        assert.truthy(knee.text(k):find("stayed within 2× low load", 1, true))
        assert.is_nil(knee.of({ { rate = 1, p99 = 10 } }))
    end)

    it("takes the low-load value from the lowest rate that was not generator-bound", function()
        -- 100/s: the generator's lag inflated p99; 200/s is the low-load value
        local pts = { { rate = 100, p99 = 50, bound = true }, { rate = 200, p99 = 10 },
                      { rate = 300, p99 = 15 }, { rate = 400, p99 = 30 } }
        local k = knee.of(pts)
        assert.equals(300, k.rate)
        assert.equals(10, k.low_p99)
        assert.equals(200, k.low_rate)
        assert.equals(400, k.next_rate)
        assert.truthy(knee.text(k):find("(low load 10.0 µs, at 200 msg/s: the rates below had"
            .. " generator-bound runs)", 1, true), knee.text(k))
        -- every point but the last bound: the lowest rate after all
        k = knee.of({ { rate = 1, p99 = 10, bound = true }, { rate = 2, p99 = 30 } })
        assert.equals(1, k.rate)
        assert.equals(2, k.next_rate)
        assert.is_false(k.skipped)
    end)

    it("draws x = asked rate, monotone, the achieved rate, and marks overloaded points", function()
        local ch = assert(load_chart(sweep()))
        assert.truthy(ch.svg:find("asked rate (messages/s)", 1, true))
        -- the p99 line's points: x strictly increasing
        local xs = {}
        for cx, title in ch.svg:gmatch('<circle class="point[^"]*" cx="([%d.]+)"[^>]*><title>([^<]*)</title>') do
            if title:find(": p99 ", 1, true) then xs[#xs + 1] = tonumber(cx) end
        end
        assert.equals(6, #xs)
        for i = 2, #xs do assert.is_true(xs[i] > xs[i - 1], ch.svg) end
        -- 5,000 and 6,000 missed their rate (p50, p99, p999 each); 6,000 was generator-bound
        assert.equals(6, select(2, ch.svg:gsub('class="point missed', "")))
        assert.equals(3, select(2, ch.svg:gsub('class="point missed bound"', "")))
        local pts = ch.svg:match('<polyline class="achieved" points="([^"]+)"')
        assert.truthy(pts)
        assert.equals(6, select(2, pts:gsub(",", "")))
        assert.truthy(ch.svg:find('<g class="knee" data-rate="4000">', 1, true))
    end)

    it("names the knee in the key findings of report.md, report.html and the terminal", function()
        local m = sweep()
        local charts = svg.charts(m)
        local text = md.render(m, charts)
        assert.truthy(text:find("## Key findings", 1, true), text)
        assert.truthy(text:find("- knee at 4,000 msg/s: corrected p99 ", 1, true), text)
        assert.truthy(text:find("past it, at 5,000 msg/s", 1, true), text)
        local page = html.render(m, charts)
        assert.truthy(page:find('<ul class="knees">%s*<li>knee at 4,000 msg/s'))
        assert.truthy(md.findings_text(m):find("  knee at 4,000 msg/s", 1, true))
    end)
end)
