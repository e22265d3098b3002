-- exports_spec.lua -- arkbench.report.exports: every export asked for is
-- attempted even when one before it failed (a full disk under the CSV
-- files still tries --hgrm and --openmetrics), and every failure is named.
local exports = require("arkbench.report.exports")

local function sink()
    local s = { text = "" }
    function s:write(...)
        for _, x in ipairs({ ... }) do self.text = self.text .. x end
        return self
    end
    return s
end

describe("exports.write", function()
    local saved = {}
    local NAMES = { "arkbench.report.csv", "arkbench.report.hgrm", "arkbench.report.openmetrics" }
    local calls
    before_each(function()
        calls = {}
        for _, n in ipairs(NAMES) do saved[n] = package.loaded[n] end
    end)
    after_each(function()
        for _, n in ipairs(NAMES) do package.loaded[n] = saved[n] end
    end)

    local function stub(csv_ok, hgrm_ok, om_ok)
        package.loaded["arkbench.report.csv"] = { write = function(dir)
            calls[#calls + 1] = "csv"
            if csv_ok then return { dir .. "/runs.csv", dir .. "/intervals.csv" } end
            return nil, dir .. "/runs.csv: ENOSPC: no space left on device"
        end }
        package.loaded["arkbench.report.hgrm"] = { write = function(dir)
            calls[#calls + 1] = "hgrm"
            if hgrm_ok then return { dir .. "/hgrm/a.hgrm" } end
            return nil, dir .. "/hgrm/a.hgrm: ENOSPC: no space left on device"
        end }
        package.loaded["arkbench.report.openmetrics"] = { write = function(dir)
            calls[#calls + 1] = "openmetrics"
            if om_ok then return dir .. "/metrics.txt" end
            return nil, dir .. "/metrics.txt: ENOSPC: no space left on device"
        end }
    end

    it("attempts --hgrm and --openmetrics after the CSV files failed", function()
        stub(false, true, true)
        local out = sink()
        local ok, err = exports.write("/r", {}, {}, { csv = true, hgrm = true, openmetrics = true }, out)
        assert.is_nil(ok)
        assert.are.same({ "csv", "hgrm", "openmetrics" }, calls)
        assert.matches("the CSV files: /r/runs.csv: ENOSPC", err, 1, true)
        assert.matches("wrote 1 .hgrm file in /r/hgrm", out.text, 1, true)
        assert.matches("wrote /r/metrics.txt", out.text, 1, true)
    end)

    it("names every failure", function()
        stub(false, false, false)
        local ok, err = exports.write("/r", {}, {}, { csv = true, hgrm = true, openmetrics = true }, sink())
        assert.is_nil(ok)
        assert.matches("the CSV files: /r/runs.csv", err, 1, true)
        assert.matches("the .hgrm files: /r/hgrm/a.hgrm", err, 1, true)
        assert.matches("the OpenMetrics file: /r/metrics.txt", err, 1, true)
    end)

    it("is true when all asked for were written, and skips what was not asked", function()
        stub(true, false, true)
        local out = sink()
        assert.is_true(exports.write("/r", {}, {}, { csv = true, openmetrics = true }, out))
        assert.are.same({ "csv", "openmetrics" }, calls)
        assert.matches("wrote /r/runs.csv and /r/intervals.csv", out.text, 1, true)
    end)
end)
