-- shard_spec.lua -- the parts of a case that shards run (arkbench.run.shard)
-- and how their run objects are joined (arkbench.run.shard_join;
-- docs/distributed.md): --shard and --start-at parsing and refusals, the
-- id ranges, the rate shares that add up to the unsplit schedule, a
-- shard's processes splitting its range again, and a missing shard.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local shard = require("arkbench.run.shard")
local join = require("arkbench.run.shard_join")
local group = require("arkbench.run.group")

local function env(t) return function(k) return t[k] end end

describe("--shard", function()
    it("takes I/N with a 0-based index and refuses the rest, saying what it expects", function()
        local s = assert(shard.parse("3/4"))
        assert.are.same({ 3, 4 }, { s.index, s.count })
        local _, e1 = shard.parse("4/4")
        assert.truthy(e1:find("0 <= I < 4", 1, true), e1)
        local _, e2 = shard.parse("x")
        assert.truthy(e2:find("expected I/N", 1, true), e2)
        local _, e3 = shard.parse("1/0")
        assert.truthy(e3:find("between 1 and", 1, true), e3)
        local _, e4 = shard.parse("0/99999999999999999999")
        assert.truthy(e4:find("between 1 and 1000000", 1, true), e4)
    end)

    it("finds auto's index and count in each launcher's environment", function()
        local cases = {
            { { SLURM_PROCID = "2", SLURM_NTASKS = "4" }, 2, 4, "Slurm" },
            { { JOB_COMPLETION_INDEX = "1", ARKBENCH_SHARDS = "3" }, 1, 3, "Kubernetes" },
            { { OMPI_COMM_WORLD_RANK = "0", OMPI_COMM_WORLD_SIZE = "2" }, 0, 2, "Open MPI" },
            { { PMI_RANK = "5", PMI_SIZE = "8" }, 5, 8, "PMI" },
        }
        for _, c in ipairs(cases) do
            local s = assert(shard.parse("auto", env(c[1])))
            assert.are.same({ c[2], c[3] }, { s.index, s.count })
            assert.truthy(s.from:find(c[4], 1, true), s.from)
        end
        local _, e = shard.parse("auto", env({}))
        for _, k in ipairs({ "SLURM_PROCID", "JOB_COMPLETION_INDEX", "ARKBENCH_SHARDS", "OMPI_COMM_WORLD_RANK",
                             "PMI_RANK" }) do
            assert.truthy(e:find(k, 1, true), e)
        end
        local _, e2 = shard.parse("auto", env({ JOB_COMPLETION_INDEX = "1" }))
        assert.truthy(e2:find("ARKBENCH_SHARDS", 1, true), e2)
        -- mpirun inside sbatch: the inner launcher (MPI) wins, both named
        local s2 = assert(shard.parse("auto", env({ SLURM_PROCID = "0", SLURM_NTASKS = "1",
                                                    OMPI_COMM_WORLD_RANK = "3", OMPI_COMM_WORLD_SIZE = "4" })))
        assert.are.same({ 3, 4 }, { s2.index, s2.count })
        assert.truthy(s2.warning and s2.warning:find("SLURM_PROCID=0", 1, true)
                      and s2.warning:find("OMPI_COMM_WORLD_RANK=3", 1, true) and s2.warning:find("disagree", 1, true),
                      s2.warning)
        local d = assert(shard.prepare({ shard = "auto" }, { { case_id = "a", clients = 8, target = "x:1" } }, 0,
            env({ SLURM_PROCID = "0", SLURM_NTASKS = "1", OMPI_COMM_WORLD_RANK = "3", OMPI_COMM_WORLD_SIZE = "4" })))
        assert.are.equal(s2.warning, d.warnings[1])
        -- srun of an MPI program: both agree, no warning
        local s3 = assert(shard.parse("auto", env({ SLURM_PROCID = "2", SLURM_NTASKS = "4", PMI_RANK = "2",
                                                    PMI_SIZE = "4" })))
        assert.is_nil(s3.warning)
    end)

    it("refuses cases without a target and cases with fewer clients than shards, naming the case", function()
        local sh = { index = 0, count = 4 }
        local e1 = shard.check({ { case_id = "a", clients = 8, placement = "split" } }, sh)
        assert.truthy(e1:find("case a", 1, true) and e1:find("split", 1, true) and e1:find("target", 1, true), e1)
        local e2 = shard.check({ { case_id = "b", clients = 8 } }, sh)
        assert.truthy(e2:find("same process", 1, true), e2)
        local e3 = shard.check({ { case_id = "c", clients = 3, target = "127.0.0.1:1" } }, sh)
        assert.truthy(e3:find("case c", 1, true) and e3:find("3 clients", 1, true), e3)
        assert.is_nil(shard.check({ { case_id = "d", clients = 4, target = "127.0.0.1:1" } }, sh))
        -- processes = M: every shard's share must have M clients
        local e4 = shard.check({ { case_id = "p", clients = 10, processes = 3, target = "127.0.0.1:1" } }, sh)
        assert.truthy(e4 and e4:find("case p", 1, true) and e4:find("processes = 3", 1, true)
                      and e4:find("10 clients in 4 shards leave shard 0 only 2", 1, true), e4)
        assert.is_nil(shard.check({ { case_id = "q", clients = 12, processes = 3, target = "127.0.0.1:1" } }, sh))
    end)

    it("splits the ids exactly and the rate so that each connection keeps its own", function()
        for _, C in ipairs({ 4, 7, 64, 1001 }) do
            for _, N in ipairs({ 1, 2, 3, 4 }) do
                if C >= N then
                    local seen, rate = {}, 0
                    for i = 0, N - 1 do
                        local c, lo, hi = shard.apply({ clients = C, rate = 8000 }, { index = i, count = N })
                        assert.are.equal(hi - lo, c.clients)
                        assert.are.equal(C, c.clients_total)
                        assert.are.equal(lo, c.id_base)
                        assert.is_true(math.abs(c.rate / c.clients - 8000 / C) < 1e-9)
                        rate = rate + c.rate
                        for id = lo, hi - 1 do
                            assert.is_nil(seen[id])
                            seen[id] = true
                        end
                    end
                    for id = 0, C - 1 do assert.is_true(seen[id], "id " .. id) end
                    assert.is_true(math.abs(rate - 8000) < 1e-6)
                end
            end
        end
    end)

    it("lets processes = M split a shard's range again, with the case's ids", function()
        local c = shard.apply({ clients = 64, rate = 6400, processes = 3 }, { index = 2, count = 4 })
        local ids = {}
        for i = 1, 3 do
            local p = group.part_case(c, 3, i)
            assert.are.equal(64, p.clients_total)
            for k = 0, p.clients - 1 do ids[#ids + 1] = p.id_base + k * p.id_stride end
            assert.is_true(math.abs(p.rate / p.clients - 100) < 1e-9)
        end
        table.sort(ids)
        assert.are.equal(16, #ids)
        for k = 1, 16 do assert.are.equal(31 + k, ids[k]) end
    end)
end)

describe("--start-at", function()
    local now = 1796400000.25
    it("reads UTC times, epoch seconds and +durations", function()
        assert.are.equal(1796405100, shard.parse_start("2026-12-04T17:25:00Z", now))
        assert.are.equal(1796403000, shard.parse_start("1796403000", now))
        -- +D: rounded up to the grid every shard agrees on
        local t = shard.parse_start("+30s", now)
        assert.is_true(t >= now + 30 and t < now + 30 + shard.GRID_S)
        assert.are.equal(0, t % shard.GRID_S)
    end)

    it("refuses the past and what it cannot read", function()
        local _, e1 = shard.parse_start("2020-01-01T00:00:00Z", now)
        assert.truthy(e1:find("in the past", 1, true), e1)
        local _, e2 = shard.parse_start("soon", now)
        assert.truthy(e2:find("expected a UTC time", 1, true), e2)
        local _, e4 = shard.parse_start("2026-13-04T15:00:00Z", now)
        assert.truthy(e4:find("not a valid UTC time", 1, true), e4)
        local _, e3 = shard.parse_start("+x", now)
        assert.truthy(e3:find("+DURATION", 1, true), e3)
        -- invalid days and fractions without digits
        for _, bad in ipairs({ "2027-02-31T00:00:00Z", "2027-02-29T00:00:00Z", "2027-04-31T00:00:00Z",
                               "2027-12-04T18:00:00.Z", "2027-12-04T18:00:0012Z" }) do
            local t, e = shard.parse_start(bad, now)
            assert.is_nil(t, bad)
            assert.truthy(e:find("not a valid UTC time", 1, true) or e:find("expected a UTC time", 1, true), e)
        end
        -- 29 February of a leap year is a day (within the horizon of this now)
        local leap_now = 1835395200 - 86400
        assert.are.equal(1835395200, shard.parse_start("2028-02-29T00:00:00Z", leap_now))
        -- beyond the horizon: refused, with a hint when it looks like milliseconds
        local _, e5 = shard.parse_start(string.format("%.0f", now * 1000), now)
        assert.truthy(e5:find("more than 7 days ahead", 1, true) and e5:find("milliseconds", 1, true), e5)
        local _, e6 = shard.parse_start("99999999999999999999", now)
        assert.truthy(e6:find("more than 7 days ahead", 1, true), e6)
        local _, e7 = shard.parse_start("+1000000h", now)
        assert.truthy(e7:find("more than 7 days ahead", 1, true), e7)
        assert.truthy(shard.parse_start("+150h", now))
    end)

    it("plans slots long enough for connect, warm-up, measure and drain", function()
        local p = shard.plan_of({ clients = 64, warmup = 0.25, duration = 2, timeout = 2 })
        assert.is_true(p.slot_s >= p.prep_s + p.lead_s + 2)
        assert.are.equal(20, shard.plan_of({ clients = 64, duration = 2 }, 20).slot_s)
    end)
end)

describe("joining shards", function()
    local H = "ab1:1:1000:1000:0:3e8:f4240:8=1"
    local function run(i, extra)
        local r = { schema_version = 1, case_id = "c", repetition = 1, case = { clients = 8, rate = 800 },
                    ok = true, status = "ok", sent = 100, completed = 100, measured_s = 1,
                    rate_asked = 200, measure_start_unix_us = 1e15 + i * 10,
                    shard = { index = i, count = 4, clients_from = 2 * i, clients_to = 2 * i + 2, host = "h" },
                    plan = { start_offset_us = i * 10 }, rtt_histogram = H }
        for k, v in pairs(extra or {}) do r[k] = v end
        return r
    end

    it("sums the counts and reports the skew", function()
        local by = {}
        for i = 0, 3 do by[i] = { dir = "d" .. i, runs = { run(i) } } end
        local runs = join.all(4, by)
        assert.are.equal(1, #runs)
        local m = runs[1]
        assert.are.equal("ok", m.status)
        assert.are.equal(400, m.completed)
        assert.are.equal(30, m.start_skew_us)
        assert.are.equal(4, #m.shards)
        assert.are.equal(8, m.load_applied.clients)
    end)

    it("degrades a run a shard is missing from or failed in, naming it and the load applied", function()
        local by = {}
        for i = 0, 3 do by[i] = { dir = "d" .. i, runs = { run(i) } } end
        by[2] = { dir = "d2", runs = {} }
        by[3].runs[1] = run(3, { ok = false, status = "crashed", error = "killed by SIGKILL" })
        by[3].runs[1].sent = nil
        local m = join.all(4, by)[1]
        assert.are.equal("degraded", m.status)
        assert.truthy(m.error:find("shard 2 of 4: missing", 1, true), m.error)
        assert.truthy(m.error:find("shard 3 of 4: failed (crashed: killed by SIGKILL)", 1, true), m.error)
        assert.truthy(m.error:find("4 of 8 connections, 400 of 800 msg/s", 1, true), m.error)
        assert.are.equal(200, m.completed)
    end)

    it("degrades a run a shard was interrupted in: the others' numbers kept, exit 1, never 130", function()
        local status = require("arkbench.run.status")
        local by = {}
        for i = 0, 3 do by[i] = { dir = "d" .. i, runs = { run(i) } } end
        by[1].runs[1] = run(1, { ok = false, status = "interrupted", error = "interrupted by SIGINT" })
        local m = join.all(4, by)[1]
        assert.are.equal("degraded", m.status)
        assert.truthy(m.error:find("shard 1 of 4: interrupted (interrupted by SIGINT)", 1, true), m.error)
        assert.truthy(m.error:find("6 of 8 connections, 600 of 800 msg/s from 3 of 4 shards", 1, true), m.error)
        assert.are.equal(300, m.completed)
        assert.are.equal(1, status.exit_code({ m }))
    end)

    it("leaves the gap between measure phases started intervals apart empty, never a crash", function()
        local json = require("arkbench.util.json")
        local by = {}
        for i = 0, 1 do
            local iv = { t_s = 0, duration_s = 1, sent = 50, completed = 50, errors = 0, timed_out = 0,
                         connections = 4, rtt_histogram = H }
            -- shard 1 began measuring 3 s (3 intervals) after shard 0
            by[i] = { dir = "d" .. i, runs = { run(i, { measure_start_unix_us = 1e15 + i * 3e6,
                                                       intervals = { iv }, case = { clients = 8, interval = 1 },
                                                       shard = { index = i, count = 2, clients_from = 4 * i,
                                                                 clients_to = 4 * i + 4, host = "h" } }) } }
        end
        local m = join.all(2, by)[1]
        assert.are.equal(4, #m.intervals)
        assert.are.equal(50, m.intervals[1].completed)
        assert.are.equal(50, m.intervals[4].completed)
        for k = 2, 3 do
            assert.are.equal(0, m.intervals[k].completed)
            assert.are.equal(0, m.intervals[k].sent)
            assert.are.equal(json.null, m.intervals[k].p50_us)
            assert.are.equal(json.null, m.intervals[k].rtt_histogram)
        end
        assert.are.equal(3e6, m.start_skew_us)
    end)

    it("keeps the unsplit rate as rate_asked with a shard short, and rate_met false", function()
        local rr = require("arkbench.run.rate_rule")
        local by = {}
        for i = 0, 3 do by[i] = { dir = "d" .. i, runs = { rr.apply(run(i, { unsent = 0 })) } } end
        local whole = join.all(4, by)[1]
        assert.are.equal(800, whole.rate_asked)
        assert.is_true(whole.rate_met)
        by[2] = nil
        local m = join.all(4, by)[1]
        assert.are.equal("degraded", m.status)
        assert.are.equal(800, m.rate_asked)
        assert.is_false(m.rate_met)
        assert.are.equal(600, m.load_applied.rate)
    end)
end)

describe("a merged folder in the reports", function()
    local report = require("arkbench.report.report")
    local shards = require("arkbench.report.shards")

    it("names the shard a degraded run was short of in the table's footer", function()
        local cases = { { degraded = { { error = "shard 2 of 3: missing (no run of this case and repetition"
                                                   .. " in its folder); load applied: 4 of 6 connections" } } } }
        assert.are.same({ "# degraded: shard 2 of 3 missing (the load applied was less than the case's); the"
                          .. " other shards' numbers are kept" }, report.degraded_footer(cases))
        cases[2] = { degraded = { { error = "2 timed out" } } }
        local f = report.degraded_footer(cases)
        assert.are.equal(2, #f)
        assert.truthy(f[2]:find("some run had errors", 1, true))
    end)

    it("lists the shards, their hosts and the one not given", function()
        local env = { run_settings = { merged_shards = 3 },
                      shards = { { shard = 0, hostname = "a" }, { shard = 1, hostname = "b" } } }
        local runs = { { case_id = "c", start_skew_us = 40, shards = {
            { shard = 0, status = "ok", cpu_percent = 50, cpu_machine_percent = 12.5 },
            { shard = 1, status = "interrupted", cpu_percent = 20 },
            { shard = 2, status = "missing" } } } }
        local info = shards.of(env, runs)
        assert.is_true(info.multi_host)
        assert.are.same({ 2 }, info.missing)
        assert.are.equal("Merged by `arkbench merge` from 3 shards on 2 hosts (a, b); missing (no folder given):"
                         .. " shard 2.", shards.sentence(info))
        local rows = shards.cells(info)
        assert.are.same({ "0", "a", "1/1", "-", "50", "12.5" }, rows[1])
        assert.are.same({ "1", "b", "0/1", "interrupted 1", "20", "-" }, rows[2])
        assert.are.same({ "2", "-", "0/1", "missing (no folder given)", "-", "-" }, rows[3])
        assert.are.same({ { "c", "40" } }, shards.skew_cells(info))
        assert.is_nil(shards.of({ run_settings = {} }, runs))
    end)
end)

describe("merge's refusals", function()
    local json = require("arkbench.util.json")
    local core = require("arkbench.core")
    local root = os.tmpname()
    os.remove(root)
    assert(os.execute("mkdir -p '" .. root .. "'"))
    local said = {}
    -- merge.main with its stderr caught: exit code, what it said
    local function merge(...)
        said = {}
        local real = io.stderr
        io.stderr = { -- luacheck: ignore 122
            write = function(_, ...) for _, s in ipairs({ ... }) do said[#said + 1] = s end end }
        package.loaded["arkbench.cmd.merge"] = nil
        local ok, m = pcall(require, "arkbench.cmd.merge")
        io.stderr = real -- luacheck: ignore 122
        assert(ok, m)
        package.loaded["arkbench.cmd.merge"] = nil
        local rc = m.main({ "merge", ... }, {})
        return rc, table.concat(said)
    end
    local function shard_dir(name, rs)
        local d = root .. "/" .. name
        assert(os.execute("mkdir -p '" .. d .. "'"))
        assert(core.write_file(d .. "/env.json", json.encode({ scenario_sha256 = "ab", hostname = "h",
                                                              run_settings = rs })))
        return d
    end
    teardown(function() os.execute("rm -rf '" .. root .. "'") end)

    it("refuses a damaged env.json's shard metadata, naming the file and what it expected", function()
        local d = shard_dir("nocount", { shard = { index = 1 } })
        local rc, e = merge(root .. "/out1", d)
        assert.are.equal(2, rc)
        assert.truthy(e:find(d .. "/env.json: run_settings.shard", 1, true) and e:find("count nil", 1, true), e)
        local d2 = shard_dir("beyond", { shard = { index = 5, count = 2 } })
        local rc2, e2 = merge(root .. "/out2", d2)
        assert.are.equal(2, rc2)
        assert.truthy(e2:find("0 <= index < count", 1, true) and e2:find("index 5, count 2", 1, true), e2)
    end)

    it("releases OUT when an internal error stops it: no .arkbench.lock left behind", function()
        local a = shard_dir("la", { shard = { index = 0, count = 2 } })
        local b = shard_dir("lb", { shard = { index = 1, count = 2 } })
        local sj = require("arkbench.run.shard_join")
        local real = sj.all
        sj.all = function() error("boom") end
        local ok, err = pcall(merge, root .. "/out4", a, b)
        sj.all = real
        assert.is_false(ok)
        assert.truthy(tostring(err):find("boom", 1, true), err)
        assert.are.equal("directory", core.file_kind(root .. "/out4"))
        assert.is_nil(core.file_kind(root .. "/out4/.arkbench.lock"))
    end)

    it("refuses shards planned for different --start-at instants, naming both folders", function()
        local a = shard_dir("a", { shard = { index = 0, count = 2 }, start_at_unix_s = 1796400000 })
        local b = shard_dir("b", { shard = { index = 1, count = 2 }, start_at_unix_s = 1796400600 })
        local rc, e = merge(root .. "/out3", a, b)
        assert.are.equal(2, rc)
        assert.truthy(e:find(a, 1, true) and e:find(b, 1, true) and e:find("different plans", 1, true)
                      and e:find("2026-12-04T16:10:00Z", 1, true), e)
        assert.is_nil(core.file_kind(root .. "/out3"))
    end)
end)

describe("a shard interrupted before its run", function()
    it("is called interrupted before its run in the merge, degraded, never missing", function()
        local H = "ab1:1:1000:1000:0:3e8:f4240:8=1"
        local by = {}
        for i = 0, 1 do
            by[i] = { dir = "d" .. i, runs = { { schema_version = 1, case_id = "c", repetition = 1,
                case = { clients = 4 }, ok = true, status = "ok", sent = 10, completed = 10, measured_s = 1,
                measure_start_unix_us = 1e15, rtt_histogram = H,
                shard = { index = i, count = 3, clients_from = i, clients_to = i + 1, host = "h" } } } }
        end
        by[2] = { dir = "d2", runs = {}, interrupted = true }
        local m = join.all(3, by)[1]
        assert.are.equal("degraded", m.status)
        assert.truthy(m.error:find("shard 2 of 3: interrupted before its run", 1, true), m.error)
        assert.is_nil(m.error:find("missing", 1, true), m.error)
        assert.are.equal("interrupted", m.shards[3].status)
        assert.truthy(join.skew_text({ m }):find("shard 2  interrupted before its run", 1, true))
    end)

    it("a runs.jsonl whose only line is cut: no runs, and the warning", function()
        local path = os.tmpname()
        local f = assert(io.open(path, "wb"))
        f:write('{"schema_version":1,"case_id":"a","rep')
        f:close()
        local runs, err, warning = require("arkbench.report.runfile").read(path)
        os.remove(path)
        assert.is_nil(runs)
        assert.truthy(err:find("holds no runs", 1, true), err)
        assert.truthy(warning and warning:find("the last line is cut", 1, true), warning)
    end)
end)

describe("k8s and a scenario's modules", function()
    it("carries the modules beside the scenario that it requires, at their paths, and names the rest", function()
        local k8s = require("arkbench.cmd.k8s")
        local root = os.tmpname()
        os.remove(root)
        assert(os.execute("mkdir -p '" .. root .. "/lib'"))
        local function put(rel, text)
            local f = assert(io.open(root .. "/" .. rel, "wb"))
            f:write(text)
            f:close()
        end
        put("s.lua", 'local w = require("work")\nlocal j = require "arkbench.util.json"\n'
            .. 'local m = require("elsewhere")\nreturn { name = "s", protocol = "tcp" }\n')
        put("work.lua", 'local u = require("lib.util")\nreturn {}\n')
        put("lib/util.lua", 'local w = require("work")\nreturn { x = 1 }\n')
        local text = assert(io.open(root .. "/s.lua")):read("*a")
        local mods, missing = k8s.modules(root .. "/s.lua", text)
        os.execute("rm -rf '" .. root .. "'")
        assert.are.equal(2, #mods)
        assert.are.same({ "work", "lib.util" }, { mods[1].name, mods[2].name })
        assert.are.same({ "work.lua", "lib/util.lua" }, { mods[1].rel, mods[2].rel })
        assert.are.same({ "elsewhere" }, missing)
        local o = { name = "x", n = 2, image = "i", target = "127.0.0.1:9", sets = {}, filters = {} }
        local cm, job = k8s.manifests(o, text, mods)
        assert.truthy(cm:find("  mod-lib.util.lua: |2\n    local w = require(\"work\")", 1, true), cm)
        assert.truthy(cm:find("  mod-work.lua: |2", 1, true), cm)
        assert.truthy(job:find('- key: "mod-lib.util.lua"\n                path: "lib/util.lua"', 1, true), job)
        assert.truthy(job:find("- key: scenario.lua\n                path: scenario.lua", 1, true), job)
        -- without modules: no items (the whole ConfigMap, as before)
        local _, job2 = k8s.manifests(o, text, {})
        assert.is_nil(job2:find("items:", 1, true))
    end)
end)
