-- label_spec.lua -- the `label` key (issue 14): a scenario part's own name,
-- in the case ids, --filter, and the report's titles and chart files.
local scenario = require("arkbench.scenario.load")
local matrix = require("arkbench.scenario.matrix")
local stats = require("arkbench.report.stats")
local model_of = require("arkbench.report.model")
local svg = require("arkbench.report.svg")

local F = "spec/fixtures/scenarios/"

describe("label", function()
    it("names the cases of each part, first in the case id", function()
        local spec = assert(scenario.load(F .. "labels.lua"))
        local cases = matrix.expand(spec)
        local ids = {}
        for i, c in ipairs(cases) do ids[i] = c.case_id end
        assert.same({ "label=small payload=64 window=1", "label=small payload=64 window=4",
            "label=big payload=4096 window=1", "label=big payload=4096 window=4" }, ids)
        assert.equals("small", cases[1].label)
        local kept = matrix.filter(cases, { "label=big" })
        assert.equals(2, #kept)
        for _, c in ipairs(kept) do assert.equals("big", c.label) end
    end)

    it("refuses a label that is not a short plain string", function()
        local spec, err = scenario.load(F .. "label_bad.lua")
        assert.is_nil(spec)
        assert.equals(F .. 'label_bad.lua:1: key \'label\': got string "a\\nb"; expected a string of 1'
            .. " to 64 bytes, not only spaces, without control characters (it names this part's cases"
            .. " in reports)", err)
    end)

    it("heads the report's sections and names the chart files", function()
        local spec = assert(scenario.load(F .. "labels.lua"))
        local runs = {}
        for _, c in ipairs(matrix.expand(spec)) do
            runs[#runs + 1] = { case_id = c.case_id, case = c, repetition = 1, ok = true, status = "ok",
                round_trips_per_s = 1000 * c.window, payload_mib_per_s = 1, rtt_us = { p99 = 10 } }
        end
        local model = model_of.build(stats.summarize(runs, {}), runs, {})
        local titles = {}
        for i, p in ipairs(model.parts) do titles[i] = p.title end
        table.sort(titles)
        assert.same({ "big, tcp, 4 KiB", "small, tcp, 64 B" }, titles)
        local files = {}
        for _, ch in ipairs(svg.charts(model)) do files[#files + 1] = ch.file end
        table.sort(files)
        assert.equals("big-tcp-payload4096-by-window.svg", files[1])
    end)

    it("refuses two parts that define the same case, naming both", function()
        local path = os.tmpname()
        finally(function() os.remove(path) end)
        local f = io.open(path, "w")
        f:write("return { { label = 'a', payload = 64 }, { label = 'b', payload = 64 },"
            .. " { label = 'a', payload = 64 } }\n")
        f:close()
        local spec, err = scenario.load(path)
        assert.is_nil(spec)
        assert.equals(path .. ": scenario parts 1 and 3 both define the case 'label=a' (the same value"
            .. " for every key that names a case); give each part its own label, e.g. label = \"part 3\"", err)
    end)

    it("names parts that differ only in a table key by it, and leaves a missing key out", function()
        local path = os.tmpname()
        finally(function() os.remove(path) end)
        local f = io.open(path, "w")
        f:write("return { { protocol = 'tls', tls = { version = '1.2' } },"
            .. " { protocol = 'tls', tls = { version = '1.3' } }, { protocol = 'tls', rate = 100 } }\n")
        f:close()
        local spec = assert(scenario.load(path))
        local ids = {}
        for i, c in ipairs(matrix.expand(spec)) do ids[i] = c.case_id end
        assert.same({ "tls={version:1.2}", "tls={version:1.3}", "rate=100" }, ids)
        for _, id in ipairs(ids) do assert.is_nil(id:find("nil", 1, true)) end
    end)
end)
