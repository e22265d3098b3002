-- calibrate_spec.lua -- arkbench calibrate's command line and its warning
-- for round trips too slow for the warm-up and measure (large messages,
-- many in flight: a short run then counts its ramp-up, not the floor).
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/lua/?.lua;" .. package.path
local calibrate = require("arkbench.cmd.calibrate")

describe("calibrate command line", function()
    it("has the documented defaults", function()
        local o = assert(calibrate._parse({ "calibrate" }))
        assert.are.equal(5, o.pairs)
        assert.are.equal(0.25, o.warmup)
        assert.are.equal(1, o.duration)
        assert.is_nil(o.payload)
    end)

    it("takes --opt value and --opt=value, and the flags", function()
        local o = assert(calibrate._parse({ "--pairs", "3", "--payload=4096", "--floor-only", "--no-pin", "--cpu", "0" }))
        assert.are.equal(3, o.pairs)
        assert.are.equal(4096, o.payload)
        assert.is_true(o.floor_only)
        assert.is_true(o.no_pin)
        assert.are.equal(0, o.cpu)
    end)

    it("refuses values out of range, naming the option and the range", function()
        local o, err = calibrate._parse({ "--pairs", "0" })
        assert.is_nil(o)
        assert.are.equal("--pairs must be an integer 1 .. 100, got '0'", err)
        o, err = calibrate._parse({ "--window" })
        assert.is_nil(o)
        assert.are.equal("--window needs a value", err)
        o, err = calibrate._parse({ "--bogus" })
        assert.is_nil(o)
        assert.are.equal("unknown argument '--bogus'", err)
    end)
end)

describe("calibrate --timer", function()
    it("takes --timer and --rate", function()
        local o = assert(calibrate._parse({ "--timer", "--rate", "500", "--duration", "0.1" }))
        assert.is_true(o.timer)
        assert.are.equal(500, o.rate)
        local _, err = calibrate._parse({ "--timer", "--rate", "0" })
        assert.are.equal("--rate must be a number 1 .. 1000000, got '0'", err)
    end)

    it("measures the timer floor through core.timer_floor", function()
        local core = require("arkbench.core")
        local f = assert(core.timer_floor(20, 200))
        assert.are.equal(20, f.wakes)
        assert.are.equal(200, f.gap_us)
        assert.is_true(f.p50_us >= 0 and f.p99_us >= f.p50_us and f.max_us >= f.p99_us)
        assert.is_true(f.cpu_us >= 0)
        local none, err, code = core.timer_floor(0, 200)
        assert.is_nil(none)
        assert.are.equal("EINVAL", code, err)
    end)
end)

describe("calibrate's slow round trip warning", function()
    local opts = { warmup = 0.25, duration = 1 }

    it("is silent for the default configurations' round trips", function()
        assert.is_nil(calibrate.slow_round_trip_warning({ 13.1, 210 }, opts))
        assert.is_nil(calibrate.slow_round_trip_warning({ 20000 }, opts)) -- 20 ms: at the limits
    end)

    it("warns past 2 % of the measure or 10 % of the warm-up, with the options to use", function()
        local w = calibrate.slow_round_trip_warning({ 80000, 120000 }, opts)
        assert.are.equal("warning: one round trip takes up to 0.12 s here, too long for a 0.25 s warm-up"
            .. " and 1 s measure (ramp-up and too few round trips decide the numbers); use at least"
            .. " --warmup 1.2 --duration 6", w)
        assert.is_truthy(calibrate.slow_round_trip_warning({ 30000 }, { warmup = 10, duration = 1 }))
        assert.is_nil(calibrate.slow_round_trip_warning({ 120000 }, { warmup = 2, duration = 10 }))
    end)
end)
