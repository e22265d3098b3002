-- thresholds_spec.lua -- the threshold rule language (report/thresholds.lua),
-- its check over a summary (closed- and open-loop fixtures), the scenario
-- key with file:line, and compare --max-regression.
local stats = require("arkbench.report.stats")
local json = require("arkbench.util.json")
local th = require("arkbench.report.thresholds")
local compare = require("arkbench.report.compare")
local scenario = require("arkbench.scenario.load")

local F = "spec/fixtures/scenarios/"

-- a closed-loop run object as today's build writes it (no open-loop field)
local function closed(case_id, rep, p99, extra)
    local r = {
        case_id = case_id, case = { protocol = "tcp", payload = 64 }, repetition = rep, ok = true,
        status = "ok", round_trips_per_s = 1000 * rep, rtt_us = { p50 = p99 / 2, p99 = p99 },
        sent = 1000, completed = 1000, timed_out = 0, message_errors = 0,
    }
    for k, v in pairs(extra or {}) do r[k] = v end
    return r
end

-- an open-loop run object with the fields of docs/load-models.md
local function open(case_id, rep, p99, asked, achieved, unsent)
    return closed(case_id, rep, p99, {
        load_model = "open", rate_asked = asked, rate_achieved = achieved, unsent = unsent,
        rate_met = achieved >= 0.99 * asked and unsent == 0,
        rtt_raw_us = { p50 = 10, p99 = 20 }, send_lag_us = { p50 = 2, p99 = 9 },
    })
end

local function rules(list)
    local r, errs = th.parse_list(list)
    assert.is_nil(errs)
    return r
end

describe("threshold rules", function()
    it("parse a comparison, a number in any Lua form and a boolean metric", function()
        local r = th.parse("  p99_us<1000 ")
        assert.same({ text = "p99_us<1000", metric = "p99_us", op = "<", value = 1000 }, r)
        assert.equals(1e9, th.parse("p99_us < 1e9").value)
        assert.equals(0.001, th.parse("error_rate <= 0.001").value)
        assert.equals(">=", th.parse("round_trips_per_s >= 5000").op)
        assert.equals("!=", th.parse("unsent != 0").op)
        assert.same({ text = "rate_met", metric = "rate_met" }, th.parse("rate_met"))
        assert.is_table(th.parse("rtt_p999_us < 5"))
        assert.is_table(th.parse("send_lag_p99_us < 20"))
    end)

    it("refuse bad syntax, unknown metrics and misused booleans, saying what is expected", function()
        local cases = {
            { "p99_us << 5", 'unknown operator "<<"' },
            { "p99_us < abc", '"abc" is not a finite number' },
            { "p99_us < inf", "not a finite number" },
            { "p99 < 5", 'unknown metric "p99"; did you mean' },
            { "frob < 5", 'unknown metric "frob"; known metrics: p50_us' },
            { "rate_met < 1", "rate_met is true or false" },
            { "p99_us", "p99_us is a number; expected a comparison" },
            { "", 'expected "METRIC OP NUMBER"' },
            { "p99_us < 1 extra", 'expected "METRIC OP NUMBER"' },
        }
        for _, c in ipairs(cases) do
            local r, why = th.parse(c[1])
            assert.is_nil(r, c[1])
            assert.truthy(why:find(c[2], 1, true), c[1] .. " -> " .. tostring(why))
        end
        local r, why = th.parse(42)
        assert.is_nil(r)
        assert.truthy(why:find("got a number", 1, true))
    end)
end)

describe("the metric names of the rule language", function()
    it("are exactly the summary's metrics (scenario/rules.lua keeps its own list)", function()
        local rules = require("arkbench.scenario.rules")
        assert.same(stats.METRICS, rules.NAMES)
    end)
end)

describe("threshold checks", function()
    local runs = {
        closed("a", 1, 800), closed("a", 2, 900), closed("a", 3, 5000),
        closed("b", 1, 2000), closed("b", 2, 3000),
    }
    local summary = stats.summarize(runs, {})

    it("use the median over the ok repetitions of each case", function()
        local res = th.check(summary, rules({ "p99_us < 1000" }))
        assert.equals(2, #res)
        assert.equals("a", res[1].case_id)
        assert.equals(900, res[1].value)
        assert.is_false(res[1].crossed)
        assert.equals(2500, res[2].value)
        assert.is_true(res[2].crossed)
        assert.equals("p99_us = 2500", res[2].why)
        assert.equals(1, #th.crossed(res))
        assert.equals('threshold crossed: b: "p99_us < 1000" (p99_us = 2500)\n', th.format(res))
    end)

    it("compute error_rate from message_errors + timed_out over sent", function()
        local s = stats.summarize({ closed("e", 1, 1, { message_errors = 3, timed_out = 2 }) }, {})
        local res = th.check(s, rules({ "error_rate < 0.001", "error_rate < 0.01" }))
        assert.equals(0.005, res[1].value)
        assert.is_true(res[1].crossed)
        assert.is_false(res[2].crossed)
    end)

    it("cross a rule that has no value: closed loop has no rate_met, a failed case no p99", function()
        local s = stats.summarize({ closed("c", 1, 5),
            { case_id = "f", repetition = 1, ok = false, status = "crashed" } }, {})
        local res = th.check(s, rules({ "rate_met", "p99_us < 1e9" }))
        assert.is_true(res[1].crossed)
        assert.truthy(res[1].why:find("closed loop has no rate", 1, true))
        assert.is_false(res[2].crossed)
        assert.is_true(res[3].crossed)
        assert.equals("no ok run", res[3].why)
        assert.is_true(res[4].crossed)
    end)

    it("hold rate_met only when every ok repetition met its rate", function()
        local s = stats.summarize({
            open("met", 1, 100, 1000, 999, 0), open("met", 2, 100, 1000, 995, 0),
            open("missed", 1, 100, 1000, 1000, 0), open("missed", 2, 100, 1000, 500, 30),
        }, {})
        local res = th.check(s, rules({ "rate_met", "unsent == 0", "rate_achieved >= 990" }))
        assert.is_false(res[1].crossed)
        assert.is_false(res[2].crossed)
        assert.is_false(res[3].crossed)
        assert.is_true(res[4].crossed)
        assert.equals("1 of 2 ok runs missed their rate", res[4].why)
        assert.is_true(res[5].crossed) -- median unsent 15
        assert.is_true(res[6].crossed) -- median achieved 750
    end)
end)

describe("the thresholds key", function()
    it("is validated at load with file:line, the key and the element", function()
        local spec, err = scenario.load(F .. "bad_threshold.lua")
        assert.is_nil(spec)
        assert.equals(F .. "bad_threshold.lua:4: key 'thresholds' element 2: \"p99_us << 5\":"
            .. ' unknown operator "<<"; expected one of < <= > >= == !=', err)
    end)

    it("keeps valid rules in spec.keys, and --set gives them as a list", function()
        local spec = assert(scenario.load(F .. "thresholds.lua"))
        assert.same({ "p99_us < 1000", "error_rate<0.001", "rate_met" }, spec.keys.thresholds)
        spec = assert(scenario.load(F .. "minimal.lua", { "thresholds=p99_us<5,rate_met" }))
        assert.same({ "p99_us<5", "rate_met" }, spec.keys.thresholds)
        local bad, err = scenario.load(F .. "minimal.lua", { "thresholds=p99<5" })
        assert.is_nil(bad)
        assert.truthy(err:find("--set thresholds=p99<5: key 'thresholds' element 1: \"p99<5\": unknown metric",
                               1, true), err)
    end)

    it("is merged with --threshold rules, each once (cli.threshold_rules)", function()
        local cli = require("arkbench.cmd.cli")
        local spec = assert(scenario.load(F .. "thresholds.lua"))
        assert.same({ "p99_us < 1000", "error_rate<0.001", "rate_met", "p50_us < 5" },
                    cli.threshold_rules(spec, { "rate_met", "p50_us < 5" }))
    end)
end)

describe("compare --max-regression", function()
    local function side(dir, rt, p99)
        local runs = {}
        for i, id in ipairs({ "x", "y", "z" }) do
            runs[i] = { case_id = id, case = { payload = i }, repetition = 1, ok = true, status = "ok",
                        round_trips_per_s = rt[i], rtt_us = { p99 = p99[i] } }
        end
        return { dir = dir, runs = runs, summary = stats.summarize(runs, {}), env = {} }
    end
    local A = side("A", { 1000, 1000, 1000 }, { 100, 100, 100 })

    it("finds nothing within the limit", function()
        local B = side("B", { 960, 1100, 990 }, { 104, 90, 100 })
        assert.same({}, compare.regressions(compare.folders(A, B), 0.05))
    end)

    it("names a throughput regression past the limit (median of per-case ratios)", function()
        local B = side("B", { 900, 1200, 940 }, { 100, 100, 100 })
        local worse = compare.regressions(compare.folders(A, B), 0.05)
        assert.equals(1, #worse)
        assert.equals("regression: throughput 0.94x of A (6.0 % lower), more than 5 % (median over 3 cases)",
                      worse[1])
    end)

    it("names a p99 regression past the limit", function()
        local B = side("B", { 1000, 1000, 1000 }, { 110, 200, 90 })
        local worse = compare.regressions(compare.folders(A, B), 0.05)
        assert.equals(1, #worse)
        assert.truthy(worse[1]:find("^regression: p99 1.10x of A %(10.0 %% higher%)"))
    end)

    it("counts no comparable case as a regression", function()
        local B = side("B", { 1000, 1000, 1000 }, { 100, 100, 100 })
        for _, r in ipairs(B.runs) do r.case = { payload = 99 } end
        B.summary = stats.summarize(B.runs, {})
        local worse = compare.regressions(compare.folders(A, B), 0.05)
        assert.truthy(worse[1]:find("no case has an ok run in both folders", 1, true))
    end)

    it("exits 3 from compare.run on folders, 0 within the limit", function()
        local base = os.tmpname()
        os.remove(base)
        local function folder(name, rt)
            local dir = base .. "-" .. name
            assert(os.execute("mkdir -p " .. dir) == 0)
            local f = assert(io.open(dir .. "/runs.jsonl", "w"))
            for i, id in ipairs({ "x", "y" }) do
                f:write(json.encode({ schema_version = 1, case_id = id,
                    case = { payload = i, duration = 1, repetitions = 1 },
                    repetition = 1, ok = true, status = "ok", round_trips_per_s = rt,
                    rtt_us = { p99 = 100 } }), "\n")
            end
            f:close()
            f = assert(io.open(dir .. "/env.json", "w"))
            f:write(json.encode({ cpu_model = "Test CPU", hostname = "h1", logical_cpus = 2 }), "\n")
            f:close()
            return dir
        end
        local a, b = folder("a", 1000), folder("b", 800)
        local code, text = compare.run({ dirs = { a, b }, max_regression = 0.05 })
        assert.equals(3, code)
        assert.truthy(text:find("regression: throughput 0.80x of A", 1, true))
        code, text = compare.run({ dirs = { a, b }, max_regression = 0.25 })
        assert.equals(0, code)
        assert.truthy(text:find("no regression beyond 25%", 1, true))
        code = compare.run({ dirs = { a, b } })
        assert.equals(0, code)
        os.execute("rm -rf " .. a .. " " .. b)
    end)
end)

-- thresholds by tag (issue #24): METRIC{tag=NAME} over report/tags.lua's
-- summary of a case's tags
describe("threshold rules by tag", function()
    -- one tag's numbers in a run object: n replies of `us` µs each
    local function tag(sent, completed, non_success, us, rate)
        local ns = us * 1000
        local hex = function(v) return string.format("%x", v) end
        local idx = 128 + (math.floor(math.log(ns) / math.log(2)) - 7) * 64
            + math.floor(ns / 2 ^ (math.floor(math.log(ns) / math.log(2)) - 6)) - 64
        return { sent = sent, warmup_sent = 0, completed = completed, drained = 0,
                 errors = sent - completed, non_success = non_success, round_trips_per_s = rate,
                 rtt_histogram = ("ab1:%d:%d:%d:0:%s:%s:%d=%d"):format(completed, ns, ns,
                     hex(ns * completed), hex(ns * ns * completed), idx, completed) }
    end

    it("parse METRIC{tag=NAME} OP NUMBER, quoted or not, for the metrics a tag keeps", function()
        local r = assert(th.parse("p99_us{tag=get} < 500"))
        assert.same({ text = "p99_us{tag=get} < 500", metric = "p99_us", op = "<", value = 500, tag = "get" }, r)
        r = assert(th.parse(' error_rate{ tag = "set" }<=0.01 '))
        assert.equals("set", r.tag)
        assert.equals("error_rate", r.metric)
        assert.equals("<=", r.op)
        assert.equals("round_trips_per_s", assert(th.parse("round_trips_per_s{tag=a} > 1")).metric)
        local none, why = th.parse("cpu_percent{tag=get} < 50")
        assert.is_nil(none)
        assert.truthy(why:find("cpu_percent is not kept per tag", 1, true), why)
        none, why = th.parse("p99_us{host=a} < 5")
        assert.is_nil(none)
        assert.truthy(why:find("expected {tag=NAME}", 1, true), why)
        none, why = th.parse("p99_us{tag=} < 5")
        assert.is_nil(none)
        none, why = th.parse("rate_met{tag=a}")
        assert.is_nil(none)
    end)

    it("evaluate on the tag's summed counts, median rate and merged latency", function()
        local runs = {
            closed("t", 1, 100, { tags = { get = tag(100, 100, 0, 250, 50), set = tag(40, 30, 10, 2000, 15) } }),
            closed("t", 2, 100, { tags = { get = tag(100, 90, 0, 250, 70), set = tag(60, 60, 0, 2000, 25) } }),
        }
        local s = stats.summarize(runs, {})
        local res = th.check(s, rules({ "p99_us{tag=get} < 500", "p99_us{tag=set} < 500",
            "error_rate{tag=set} < 0.05", "error_rate{tag=get} < 0.1", "round_trips_per_s{tag=get} == 60",
            "non_success{tag=set} == 10", "p50_us{tag=nope} < 1" }))
        assert.equals(7, #res)
        -- get: 250 µs (within the histogram's 1 %)
        assert.is_false(res[1].crossed)
        assert.is_true(math.abs(res[1].value - 250) <= 2.5, tostring(res[1].value))
        assert.equals("get", res[1].tag)
        assert.is_true(res[2].crossed)
        assert.truthy(res[2].why:find("^p99_us{tag=set} = 2"), res[2].why)
        -- set: (errors 10 + non_success 10) / sent 100
        assert.equals(0.2, res[3].value)
        assert.is_true(res[3].crossed)
        -- get: errors 10 / sent 200
        assert.equals(0.05, res[4].value)
        assert.is_false(res[4].crossed)
        assert.equals(60, res[5].value)
        assert.is_false(res[5].crossed)
        assert.is_false(res[6].crossed)
        -- a tag no message had: crossed, saying so
        assert.is_true(res[7].crossed)
        assert.truthy(res[7].why:find("tag 'nope'", 1, true), res[7].why)
    end)

    it("are accepted in a scenario's thresholds and by --threshold", function()
        local cli = require("arkbench.cmd.cli")
        assert.is_truthy(cli.parse_run_args({ "run", "x.lua", "--threshold", "p99_us{tag=get}<500" }, 2))
        local o, err = cli.parse_run_args({ "run", "x.lua", "--threshold", "cpu_percent{tag=get}<5" }, 2)
        assert.is_nil(o)
        assert.truthy(err:find("not kept per tag", 1, true), err)
    end)
end)
