-- compare_spec.lua -- pairing by resolved keys, ratio ranges, refusals
-- (host, duration, repetitions) and --force, failed cases excluded, cases
-- in one side only, and --pair KEY within one result.
local stats = require("arkbench.report.stats")
local json = require("arkbench.util.json")
local compare = require("arkbench.report.compare")

local function case(payload, topology, duration, reps)
    return {
        name = "unit", protocol = "tcp", payload = payload, clients = 1, window = 1,
        topology = topology, warmup = 0.05, duration = duration or 1, repetitions = reps or 2,
        index = 7, case_id = string.format("payload=%d topology=%s", payload, topology),
    }
end

-- values: list of { rt, p99, cpu } per repetition; false = a failed run
local function runs_of(c, values)
    local out = {}
    for rep, v in ipairs(values) do
        if v then
            out[#out + 1] = {
                case_id = c.case_id, case = c, repetition = rep, ok = true, status = "ok",
                round_trips_per_s = v[1], rtt_us = { p99 = v[2] }, cpu_percent = v[3],
            }
        else
            out[#out + 1] = { case_id = c.case_id, case = c, repetition = rep, ok = false, status = "crashed" }
        end
    end
    return out
end

local ENV = { cpu_model = "Test CPU", hostname = "h1", logical_cpus = 2 }

local function side(dir, list, env)
    local runs = {}
    for _, l in ipairs(list) do
        for _, r in ipairs(l) do runs[#runs + 1] = r end
    end
    return { dir = dir, runs = runs, summary = stats.summarize(runs, {}), env = env or ENV }
end

local function approx(expected, got, what)
    assert.is_not_nil(got, what)
    assert.is_true(math.abs(expected - got) < 1e-9, (what or "") .. ": expected " .. expected .. ", got " .. got)
end

describe("compare.pair_key", function()
    it("uses every resolved key but warm-up, duration, repetitions, index, case_id and name", function()
        local a = case(64, "shared:1", 1, 3)
        local b = case(64, "shared:1", 0.2, 1)
        b.warmup, b.index, b.name, b.case_id = 1, 99, "other", "x"
        assert.are.equal(compare.pair_key(a), compare.pair_key(b))
        assert.are.equal("clients=1 payload=64 protocol=tcp topology=shared:1 window=1", compare.pair_key(a))
        assert.are_not.equal(compare.pair_key(a), compare.pair_key(case(1024, "shared:1")))
        assert.are.equal("clients=1 payload=64 protocol=tcp window=1", compare.pair_key(a, "topology"))
    end)
end)

describe("compare.ratio", function()
    it("is B/A of the medians, from B min / A max to B max / A min", function()
        local a = side("A", { runs_of(case(64, "shared:1"), { { 100, 10, 50 }, { 200, 30, 50 }, { 150, 20, 50 } }) })
        local b = side("B", { runs_of(case(64, "shared:1"), { { 300, 10, 100 }, { 450, 20, 100 }, { 600, 40, 100 } }) })
        local r = compare.ratio(a.summary.cases[1], b.summary.cases[1], "round_trips_per_s")
        approx(3, r.r, "median")
        approx(300 / 200, r.lo, "lo")
        approx(600 / 100, r.hi, "hi")
        approx(1, compare.ratio(a.summary.cases[1], b.summary.cases[1], "rtt_p99_us").r)
        approx(2, compare.ratio(a.summary.cases[1], b.summary.cases[1], "cpu_percent").r)
    end)

    it("has no ratio for a case without an ok run", function()
        local a = side("A", { runs_of(case(64, "shared:1"), { { 100, 10, 50 } }) })
        local b = side("B", { runs_of(case(64, "shared:1"), { false, false }) })
        assert.is_nil(compare.ratio(a.summary.cases[1], b.summary.cases[1], "round_trips_per_s"))
    end)
end)

describe("compare.folders", function()
    local function sides()
        local a = side("A", {
            runs_of(case(64, "shared:1"), { { 100, 10, 50 }, { 100, 10, 50 } }),
            runs_of(case(64, "sharded:2"), { { 200, 10, 50 }, { 200, 10, 50 } }),
            runs_of(case(1024, "shared:1"), { { 100, 10, 50 }, { 100, 10, 50 } }),
            runs_of(case(1024, "sharded:2"), { { 100, 10, 50 }, { 100, 10, 50 } }),
            runs_of(case(16, "shared:1"), { { 1, 1, 1 } }),
        })
        local b = side("B", {
            runs_of(case(64, "shared:1"), { { 110, 10, 50 }, { 110, 10, 50 } }),
            runs_of(case(64, "sharded:2"), { { 100, 10, 50 }, { 100, 10, 50 } }),
            runs_of(case(1024, "shared:1"), { { 300, 10, 50 }, { 300, 10, 50 } }),
            -- one failed repetition: the case still pairs, on its ok run
            runs_of(case(1024, "sharded:2"), { { 120, 10, 50 }, false }),
            runs_of(case(4096, "shared:1"), { false }),
        })
        return a, b
    end

    it("pairs by key and takes the median of per-case throughput ratios", function()
        local r = compare.folders(sides())
        assert.are.equal(4, #r.rows)
        local got = {}
        for _, row in ipairs(r.rows) do got[#got + 1] = row.rt.r end
        approx(1.1, got[1]); approx(0.5, got[2]); approx(3, got[3]); approx(1.2, got[4])
        approx((1.1 + 1.2) / 2, r.medians.rt, "median of 0.5, 1.1, 1.2, 3")
        assert.are.equal(4, r.medians.n)
        assert.are.same({ "payload=16 topology=shared:1" }, r.only_a)
        assert.are.same({ "payload=4096 topology=shared:1" }, r.only_b)
    end)

    it("excludes a case that failed on one side from every median", function()
        local a, b = sides()
        b = side("B", {
            runs_of(case(64, "shared:1"), { { 110, 10, 50 } }),
            runs_of(case(64, "sharded:2"), { false, false }),
        })
        local r = compare.folders(a, b)
        assert.are.equal("failed in B", r.rows[2].why)
        approx(1.1, r.medians.rt)
        assert.are.equal(1, r.medians.n)
        local text = compare.format(r)
        assert.truthy(text:find("payload=64 topology=sharded:2%s+200%s+FAILED%s+excluded: failed in B"), text)
        assert.truthy(text:find("median of per-case throughput ratios: 1.10x over 1 case", 1, true), text)
        assert.truthy(text:find("1 case excluded from the ratios", 1, true), text)
    end)

    it("prints the ratios with their ranges and the cases of one side only", function()
        local text = compare.format(compare.folders(sides()))
        assert.truthy(text:find("payload=1024 topology=shared:1%s+100%s+300%s+3.00x %[3.00x, 3.00x%]"), text)
        assert.truthy(text:find("median of per-case throughput ratios: 1.15x over 4 cases (p99: 1.00x, CPU: 1.00x)", 1, true), text)
        assert.truthy(text:find("only in A (1): payload=16 topology=shared:1\n", 1, true), text)
        assert.truthy(text:find("only in B (1): payload=4096 topology=shared:1\n", 1, true), text)
    end)
end)

describe("compare.refusals", function()
    local function one(env, duration, reps)
        return side("X", { runs_of(case(64, "shared:1", duration, reps), { { 1, 1, 1 } }) }, env)
    end

    it("names nothing for the same host, duration and repetitions", function()
        assert.are.same({}, compare.refusals(one(ENV), one(ENV)))
    end)

    it("names a different duration, repetition count or host", function()
        assert.are.same({ "duration differs: A 1, B 0.2" }, compare.refusals(one(ENV, 1), one(ENV, 0.2)))
        assert.are.same({ "repetitions differs: A 2, B 3" }, compare.refusals(one(ENV, 1, 2), one(ENV, 1, 3)))
        local other = { cpu_model = "Test CPU", hostname = "h2", logical_cpus = 4 }
        assert.are.same({
            "host differs: hostname is A h1, B h2", "host differs: logical_cpus is A 2, B 4",
        }, compare.refusals(one(ENV), one(other)))
        local no_env = one(ENV)
        no_env.env = nil
        assert.are.same({ "host unknown: B has no env.json" }, compare.refusals(one(ENV), no_env))
    end)
end)

describe("compare.within (--pair)", function()
    local function result()
        return side("D", {
            runs_of(case(64, "shared:1"), { { 100, 10, 50 } }),
            runs_of(case(64, "shared:2"), { { 50, 20, 50 } }),
            runs_of(case(64, "sharded:2"), { { 200, 5, 100 } }),
            runs_of(case(1024, "shared:1"), { { 100, 10, 50 } }),
            runs_of(case(1024, "shared:2"), { { 25, 20, 50 } }),
            runs_of(case(1024, "sharded:2"), { false }),
            runs_of(case(4096, "sharded:2"), { { 1, 1, 1 } }),
        })
    end

    it("pairs cases that differ only in KEY against its first value", function()
        local r = assert(compare.within(result(), "topology"))
        assert.are.equal("shared:1", r.base)
        local labels = {}
        for _, row in ipairs(r.rows) do labels[#labels + 1] = row.label end
        assert.are.same({
            "payload=64 topology=shared:2", "payload=64 topology=sharded:2",
            "payload=1024 topology=shared:2", "payload=1024 topology=sharded:2",
        }, labels)
        approx(0.5, r.rows[1].rt.r); approx(2, r.rows[2].rt.r); approx(0.25, r.rows[3].rt.r)
        assert.are.equal("failed", r.rows[4].why)
        assert.are.equal("shared:2", r.by_value[1].value)
        approx(0.375, r.by_value[1].rt)
        assert.are.equal(2, r.by_value[1].n)
        approx(2, r.by_value[2].rt)
        assert.are.equal(1, r.by_value[2].n)
        approx(0.5, r.medians.rt)
        assert.are.same({ "payload=4096 topology=sharded:2 (no topology=shared:1 case)" }, r.only_b)
        -- per value of the other keys: payload 64 (0.5, 2), 1024 (0.25; sharded:2 failed)
        assert.are.equal(1, #r.by_axis)
        assert.are.equal("payload", r.by_axis[1].key)
        assert.are.same({ "64", "1024" }, { r.by_axis[1].values[1].value, r.by_axis[1].values[2].value })
        approx(1.25, r.by_axis[1].values[1].rt)
        assert.are.equal(2, r.by_axis[1].values[1].n)
        approx(0.25, r.by_axis[1].values[2].rt)
        assert.are.equal(1, r.by_axis[1].values[2].n)
        local text = compare.format(r)
        assert.truthy(text:find("median throughput ratio topology=shared:2 / topology=shared:1: 0.38x over 2 cases",
            1, true), text)
        assert.truthy(text:find("median throughput ratio by payload (cases): 64 1.25x (2), 1024 0.25x (1)\n",
            1, true), text)
    end)

    it("prints no per-value line when the key has one value besides the base (it would repeat the median)", function()
        local r = assert(compare.within(side("D", {
            runs_of(case(64, "shared:1"), { { 100, 10, 50 } }),
            runs_of(case(64, "shared:2"), { { 50, 20, 50 } }),
            runs_of(case(1024, "shared:1"), { { 100, 10, 50 } }),
            runs_of(case(1024, "shared:2"), { { 25, 20, 50 } }),
        }), "topology"))
        assert.are.equal(1, #r.by_value)
        local text = compare.format(r)
        assert.is_nil(text:find("median throughput ratio topology", 1, true), text)
        assert.truthy(text:find("median of per-case throughput ratios: 0.38x over 2 cases", 1, true), text)
    end)

    it("refuses a key that does not vary", function()
        local r, err = compare.within(result(), "execution")
        assert.is_nil(r)
        assert.are.equal("--pair execution: 'execution' does not vary in D (values: none)", err)
        r, err = compare.within(result(), "protocol")
        assert.is_nil(r)
        assert.are.equal("--pair protocol: 'protocol' does not vary in D (values: tcp)", err)
    end)
end)

describe("compare.run", function()
    local dirs = {}
    local function folder(runs, env)
        local d = os.tmpname()
        os.remove(d)
        assert(os.execute("mkdir -p '" .. d .. "'"))
        dirs[#dirs + 1] = d
        local f = assert(io.open(d .. "/runs.jsonl", "w"))
        for _, r in ipairs(runs) do
            r.schema_version = r.schema_version or 1
            f:write(json.encode(r), "\n")
        end
        f:close()
        if env then
            f = assert(io.open(d .. "/env.json", "w"))
            f:write(json.encode(env))
            f:close()
        end
        return d
    end
    teardown(function()
        for _, d in ipairs(dirs) do os.execute("rm -rf '" .. d .. "'") end
    end)

    it("refuses different durations with exit 2 naming them, and --force overrides", function()
        local a = folder(runs_of(case(64, "shared:1", 1), { { 100, 10, 50 } }), ENV)
        local b = folder(runs_of(case(64, "shared:1", 0.5), { { 150, 10, 50 } }), ENV)
        local code, text, err = compare.run({ dirs = { a, b } })
        assert.are.equal(2, code)
        assert.is_nil(text)
        assert.are.equal("refusing to compare " .. a .. " and " .. b .. ": duration differs: A 1, B 0.5 "
            .. "(--force compares anyway)", err)
        code, text, err = compare.run({ dirs = { a, b }, force = true })
        assert.are.equal(0, code)
        assert.is_nil(err)
        assert.truthy(text:find("^compared with %-%-force despite: duration differs: A 1, B 0.5\n"), text)
        assert.truthy(text:find("median of per-case throughput ratios: 1.50x over 1 case", 1, true), text)
    end)

    it("refuses a folder without runs.jsonl and wrong argument counts", function()
        local a = folder(runs_of(case(64, "shared:1"), { { 1, 1, 1 } }), ENV)
        local code, _, err = compare.run({ dirs = { a, a .. "/nope" } })
        assert.are.equal(2, code)
        assert.truthy(err:find("^" .. (a .. "/nope"):gsub("%p", "%%%0") .. ": not a result folder"), err)
        code, _, err = compare.run({ dirs = { a } })
        assert.are.equal(2, code)
        assert.are.equal("compare needs two result folders: arkbench compare A B", err)
        code, _, err = compare.run({ dirs = { a, a }, pair = "topology" })
        assert.are.equal(2, code)
        assert.are.equal("compare --pair KEY takes one result folder", err)
    end)
end)

describe("compare per tag", function()
    -- runs of a case whose messages carry tags: tags = { name = { rt, p50, p99 } }
    local function tagged(c, reps)
        local out = {}
        for rep, tags in ipairs(reps) do
            local r = { case_id = c.case_id, case = c, repetition = rep, ok = true, status = "ok",
                round_trips_per_s = 1000, rtt_us = { p99 = 10 }, cpu_percent = 50, tags = {} }
            for name, v in pairs(tags) do
                r.tags[name] = { sent = v[1], completed = v[1], drained = 0, errors = 0, warmup_sent = 0,
                    round_trips_per_s = v[1] }
            end
            out[#out + 1] = r
        end
        return out
    end

    it("gives B/A of each tag both sides have, and names the tags of one side only", function()
        local c = case(64, "shared:1")
        local a = side("A", { tagged(c, { { get = { 900 }, set = { 100 } }, { get = { 700 }, set = { 100 } } }) })
        local b = side("B", { tagged(c, { { get = { 1600 }, del = { 5 } }, { get = { 1600 }, del = { 5 } } }) })
        -- the merged latency: set the summaries' percentiles by hand (the
        -- unit runs have no histograms)
        local function get(sd)
            for _, t in ipairs(sd.summary.cases[1].tags) do if t.tag == "get" then return t end end
        end
        get(a).rtt_merged_us = { p50 = 10, p99 = 40 }
        get(b).rtt_merged_us = { p50 = 5, p99 = 80 }
        local result = compare.folders(a, b)
        local row = result.rows[1]
        assert.are.equal(1, #row.tags)
        local t = row.tags[1]
        assert.are.equal("get", t.tag)
        approx(2, t.rt.r, "rt/s ratio (1600 / median 800)")
        approx(1600 / 900, t.rt.lo, "lo")
        approx(1600 / 700, t.rt.hi, "hi")
        approx(0.5, t.p50.r, "p50")
        approx(2, t.p99.r, "p99")
        assert.same({ "set" }, row.tags_a_only)
        assert.same({ "del" }, row.tags_b_only)
        local text = compare.format(result)
        assert.truthy(text:find("per tag, B/A", 1, true), text)
        assert.truthy(text:find("payload=64 topology=shared:1  get     800   1,600  2.00x [1.78x, 2.29x]   0.50x      2.00x", 1, true), text)
        assert.truthy(text:find("tags only in A for payload=64 topology=shared:1: set", 1, true), text)
        assert.truthy(text:find("tags only in B for payload=64 topology=shared:1: del", 1, true), text)
        -- tags do not enter the per-case medians
        approx(1, result.medians.rt)
    end)

    it("prints no tag table when no case has tags", function()
        local c = case(64, "shared:1")
        local a = side("A", { runs_of(c, { { 100, 10, 50 } }) })
        local b = side("B", { runs_of(c, { { 200, 10, 50 } }) })
        local text = compare.format(compare.folders(a, b))
        assert.falsy(text:find("per tag", 1, true), text)
        assert.falsy(text:find("tags only", 1, true), text)
    end)
end)
