-- spec/unit/units_spec.lua -- durations and sizes with a unit
-- (arkbench.util.units; docs/scenarios.md, "Units"): the parser, and the
-- scenario keys, --set and calibrate flags that take them.

local units = require("arkbench.util.units")
local scenario = require("arkbench.scenario.load")
local matrix = require("arkbench.scenario.matrix")

local F = "spec/fixtures/scenarios/"

describe("units.seconds", function()
    it("reads a number with us, ms, s, m or h, and a bare number as seconds", function()
        assert.equals(0.25, units.seconds("250ms"))
        assert.equals(10, units.seconds("10s"))
        assert.equals(1.5, units.seconds("1.5s"))
        assert.equals(120, units.seconds("2m"))
        assert.equals(3600, units.seconds("1h"))
        assert.equals(5e-6, units.seconds("5us"))
        assert.equals(7, units.seconds("7"))
        assert.equals(3, units.seconds(3))
        assert.equals(0.5, units.seconds(" 500 ms "))
    end)
    it("reads compound durations, largest unit first, each unit once", function()
        assert.equals(90, units.seconds("1m30s"))
        assert.equals(3723, units.seconds("1h2m3s"))
        assert.equals(2.5, units.seconds("2s500ms"))
        assert.equals(3600.25, units.seconds("1h250ms"))
        assert.equals(90, units.seconds(" 1M30S "))
        for _, v in ipairs({ "30s1m", "1m1m", "1m 30s", "1m30", "1mx", "m30s", "1m-30s" }) do
            assert.is_nil(units.seconds(v), v)
        end
    end)
    it("refuses what is not a number and a time unit", function()
        for _, v in ipairs({ "10x", "s", "", "1KiB", "ten s", "1..2s", "inf", {}, true }) do
            assert.is_nil(units.seconds(v), tostring(v))
        end
    end)
end)

describe("units.bytes", function()
    it("reads B, KiB, MiB, GiB (1024) and KB, MB, GB (1000)", function()
        assert.equals(64, units.bytes("64B"))
        assert.equals(16384, units.bytes("16KiB"))
        assert.equals(1536 * 1024, units.bytes("1.5MiB"))
        assert.equals(2 ^ 30, units.bytes("1GiB"))
        assert.equals(2000, units.bytes("2KB"))
        assert.equals(3000000, units.bytes("3MB"))
        assert.equals(100, units.bytes("100"))
        assert.equals(16, units.bytes(16))
    end)
    it("refuses a fractional byte count and unknown units", function()
        for _, v in ipairs({ "1.5B", "0.1KiB", "16k", "16KiBs", "1s", "" }) do
            assert.is_nil(units.bytes(v), v)
        end
    end)
end)

describe("scenario keys with units", function()
    it("resolves them to numbers before the rules, so cases hold numbers", function()
        local spec = assert(scenario.load(F .. "units.lua"))
        local cases = matrix.expand(spec)
        assert.equals(3, #cases)
        local payloads = {}
        for i, c in ipairs(cases) do
            payloads[i] = c.payload
            assert.equals(0.1, c.warmup)
            assert.equals(1.5, c.duration)
            assert.equals(120, c.timeout)
        end
        table.sort(payloads)
        assert.same({ 64, 1024, 2000 }, payloads)
        assert.equals(0.25, spec.keys.interval)
        assert.equals(1048576, spec.keys.udp.recv_buffer)
    end)

    it("takes units in --set too", function()
        local spec = assert(scenario.load(F .. "minimal.lua", { "duration=750ms", "payload=4KiB,64" }))
        local cases = matrix.expand(spec)
        assert.equals(2, #cases)
        for _, c in ipairs(cases) do assert.equals(0.75, c.duration) end
    end)

    it("refuses a bad unit naming file, line, key and the forms it takes", function()
        local spec, err = scenario.load(F .. "units_bad.lua")
        assert.is_nil(spec)
        assert.matches(F .. 'units_bad.lua:4: key \'payload\': got string "1.5B"; expected an integer'
            .. ' from 1 to %d+ %(bytes%) or a size such as "64B", "16KiB", "1MiB"', err)
        assert.matches(F .. 'units_bad.lua:5: key \'duration\': got string "10 parsecs"; expected a'
            .. ' number > 0 %(seconds, at most 3600%) or a duration such as "250ms", "10s", "2m"', err)
    end)

    it("treats \"1KiB\" and 1024 as the same axis value", function()
        local spec, err = scenario.load(F .. "minimal.lua", { "payload=1KiB,1024" })
        assert.is_nil(spec)
        assert.matches("key 'payload' element 2: got 1024 again %(element 1%)", err)
    end)
end)
