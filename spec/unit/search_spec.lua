-- search_spec.lua -- the SLO search: bisection on rate with a fake probe
-- (run/bisect.lua), how one probe's run object is judged (cmd/search.lua),
-- with and without the open-loop fields, and its command line.
local bisect = require("arkbench.run.bisect")
local search = require("arkbench.cmd.search")
local th = require("arkbench.report.thresholds")

local function capacity_probe(cap, log)
    return function(rate, k)
        log[#log + 1] = { rate = rate, k = k }
        return rate <= cap, rate <= cap and "held" or "crossed"
    end
end

describe("bisect.search", function()
    it("converges to within 10 % of the knee in at most 10 probes, over four decades", function()
        for _, cap in ipairs({ 137, 2500, 37000, 512345, 999000 }) do
            local log = {}
            local res = bisect.search({ from = 100, to = 1e6, probes = 10, probe = capacity_probe(cap, log) })
            assert.is_true(#res.probes <= 10, "probes for " .. cap)
            assert.equals(#log, #res.probes)
            assert.is_number(res.answer)
            assert.is_true(res.answer <= cap, "the answer passed")
            assert.is_true(res.answer >= cap / 1.1, string.format("%g within 10%% of %g", res.answer, cap))
            for i, p in ipairs(res.probes) do
                assert.equals(p.rate <= cap, p.pass)
                assert.equals(i, log[i].k)
            end
            -- the answer is the highest passing probe
            for _, p in ipairs(res.probes) do
                if p.pass then assert.is_true(p.rate <= res.answer) end
            end
        end
    end)

    it("probes from, then to, then the geometric middle, rounded to 3 digits", function()
        local log = {}
        local res = bisect.search({ from = 100, to = 10000, probes = 3, probe = capacity_probe(5000, log) })
        assert.same({ 100, 10000, 1000 }, { log[1].rate, log[2].rate, log[3].rate })
        assert.equals("probes", res.reason)
        assert.equals(1000, res.answer)
        assert.same({ 1000, 10000 }, res.bracket)
    end)

    it("stops at once when nothing passes, or when the top of the range passes", function()
        local res = bisect.search({ from = 100, to = 1e6, probe = function() return false end })
        assert.equals(1, #res.probes)
        assert.is_nil(res.answer)
        assert.equals("none passes", res.reason)
        res = bisect.search({ from = 100, to = 1e6, probe = function() return true end })
        assert.equals(2, #res.probes)
        assert.equals(1e6, res.answer)
        assert.equals("all pass", res.reason)
    end)

    it("stops when a probe returns nil (interrupted), not recording that probe", function()
        local n = 0
        local res = bisect.search({ from = 100, to = 1e6, probe = function(rate)
            n = n + 1
            if n == 3 then return nil end
            return rate < 1000
        end })
        assert.equals("stopped", res.reason)
        assert.equals(100, res.answer)
        -- the third probe was not measured: neither pass nor fail
        assert.equals(2, #res.probes)
        assert.is_true(res.probes[1].pass)
        assert.is_false(res.probes[2].pass)
    end)

    it("converges before the probes run out on a narrow range", function()
        local res = bisect.search({ from = 1000, to = 1040, probes = 10, probe = capacity_probe(1020, {}) })
        assert.equals("converged", res.reason)
        assert.equals(2, #res.probes)
    end)

    it("refuses a bad range (misuse raises)", function()
        assert.has_error(function() bisect.search({ from = 10, to = 5, probe = function() end }) end)
        assert.has_error(function() bisect.search({ from = 0, to = 5, probe = function() end }) end)
        assert.has_error(function() bisect.search({ from = 1, to = 5, probes = 1, probe = function() end }) end)
    end)

    it("rounds to 3 significant digits", function()
        assert.equals(31600, bisect.round(31622.8))
        assert.equals(100, bisect.round(100.4))
        assert.equals(0.5, bisect.round(0.5))
    end)
end)

describe("search.judge", function()
    local slo = { (th.parse("p99_us < 1000")) }
    local function run(extra)
        local r = { case_id = "c rate=5000", repetition = 1, ok = true, status = "ok",
                    rtt_us = { p99 = 800 }, sent = 100, completed = 100 }
        for k, v in pairs(extra or {}) do r[k] = v end
        return r
    end

    it("passes when the SLO holds and the rate was met", function()
        local pass, why = search.judge(run({ load_model = "open", rate_met = true, rate_asked = 5000,
                                            rate_achieved = 5000, unsent = 0 }), slo)
        assert.is_true(pass)
        assert.equals("held rate_met (every ok run met its rate); held p99_us < 1000 (p99_us = 800)", why)
    end)

    it("fails when the rate was missed or the SLO crossed", function()
        local pass, why = search.judge(run({ load_model = "open", rate_met = false, unsent = 9 }), slo)
        assert.is_false(pass)
        assert.truthy(why:find("crossed rate_met (1 of 1 ok runs missed their rate)", 1, true))
        pass = search.judge(run({ load_model = "open", rate_met = true, rtt_us = { p99 = 1500 } }), slo)
        assert.is_false(pass)
    end)

    it("never passes a run object without rate fields (a build without open loop)", function()
        local pass, why = search.judge(run(), slo)
        assert.is_false(pass)
        assert.truthy(why:find("no run reports rate_met (closed loop has no rate)", 1, true))
    end)

    it("fails a failed run, naming its status", function()
        local pass, why = search.judge({ ok = false, status = "crashed", error = "boom" }, slo)
        assert.is_false(pass)
        assert.equals("run crashed: boom", why)
        assert.is_false((search.judge(nil, slo)))
    end)
end)

describe("search command line", function()
    it("takes --slo (repeatable), --from, --to, --probes and run's options", function()
        local o = assert(search.parse({ "search", "x.lua", "--slo", "p99_us<1000", "--from=10",
                                        "--to", "5000", "--probes", "8", "--quick", "--set", "payload=64" }))
        assert.equals("x.lua", o.path)
        assert.equals("p99_us<1000", o.slo[1].text)
        assert.equals(10, o.from)
        assert.equals(5000, o.to)
        assert.equals(8, o.probes)
        assert.is_true(o.quick)
        assert.same({ "payload=64" }, o.sets)
    end)

    it("refuses what it cannot do, before running", function()
        local cases = {
            { { "search", "x.lua" }, "needs --slo RULE" },
            { { "search", "x.lua", "--slo", "p99 < 5" }, '--slo "p99 < 5": unknown metric' },
            { { "search", "x.lua", "--slo", "p99_us<5", "--from", "0" }, "--from '0': expected a number > 0" },
            { { "search", "x.lua", "--slo", "p99_us<5", "--from", "9", "--to", "5" }, "must be below" },
            { { "search", "x.lua", "--slo", "p99_us<5", "--probes", "1.5" }, "expected an integer >= 2" },
            { { "search", "x.lua", "--slo", "p99_us<5", "--list" }, "are for run, not search" },
            { { "search", "--slo", "p99_us<5" }, "needs a scenario file" },
        }
        for _, c in ipairs(cases) do
            local o, err = search.parse(c[1])
            assert.is_nil(o)
            assert.truthy(err:find(c[2], 1, true), table.concat(c[1], " ") .. " -> " .. tostring(err))
        end
    end)
end)
