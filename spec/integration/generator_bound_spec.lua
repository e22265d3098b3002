-- generator_bound_spec.lua -- issue 25 acceptance 1 (docs/load-models.md,
-- "Generator-bound runs"): a client loop starved by construction (the
-- light form's message function burns 20 ms of CPU per message, at 200
-- msg/s: four times what one loop can give) is generator_bound, its
-- warning names the lag; a peer that stalls each reply 50 ms (a Lua server
-- sleeping, its loop idle) at the same rate is not -- the flag tells the
-- two causes apart.  Asserts on the flag and the fields, never on a speed.
--
-- Runtime: ~5 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")

local brief = ark.brief

teardown(function()
    files.remove_tmpdirs()
end)

local SCENARIO = [[
local MSG = string.rep("m", 64)
local function starve(i)
    -- 20 ms of this process's CPU per message: at 200/s the loop needs 4 s
    -- of CPU a second, on any machine
    local t = os.clock()
    while os.clock() - t < 0.02 do end
    return MSG
end
local function stall(conn)
    while true do
        local m = conn:receive(64)
        if not m then return end
        conn:sleep(0.05)
        conn:send(m)
    end
end
local function case(label, message, server)
    return { name = "gen", label = label, protocol = "tcp", execution = "lua", framing = "raw",
             payload = 64, clients = 2, window = 4, rate = 200, warmup = 0, duration = 2,
             timeout = 10, repetitions = 1, rate_strict = false, expect = 64,
             message = message, server = server, thresholds = { "p99_us < 1000" } }
end
return { case("starved", starve), case("stall", MSG, stall) }
]]

describe("generator-bound runs", function()
    local res, by = nil, {}

    setup(function()
        local d = files.tmpdir()
        files.write_file(d .. "/gen.lua", SCENARIO)
        local rc, so, se = proc.run_cmd({ ark.BIN, "run", d .. "/gen.lua", "--out", d .. "/out" },
                                        { limit = 120 })
        res = { rc = rc, stdout = so, stderr = se, dir = d .. "/out",
                runs = ark.read_runs(d .. "/out/runs.jsonl") }
        for _, r in ipairs(res.runs) do by[r.case.label] = r end
    end)

    it("flags a starved client loop, and says by how much it fell behind", function()
        local r = assert(by.starved, "no starved run; stderr:\n" .. res.stderr)
        assert.is_true(r.generator_bound, brief(r))
        assert.are.equal("number", type(r.generator_lag_share), brief(r))
        assert.are.equal("number", type(r.client_loop_busy_max), brief(r))
        assert.are.equal("table", type(r.generator_lag_us), brief(r))
        assert.are.equal(r.sent, r.generator_lag_us.count, brief(r))
        -- either bound is enough; one of them must hold
        assert.is_true(r.client_loop_busy_max >= 0.95 or r.generator_lag_share >= 0.25, brief(r))
        local note
        for _, n in ipairs(r.notes) do
            if n:find("the load generator fell behind by", 1, true) then note = n end
        end
        assert.is_truthy(note, brief(r))
        assert.is_truthy(note:find("fell behind by [%d.]+ ms at p99"), note)
        assert.is_truthy(note:find("add threads, processes or shards", 1, true), note)
        assert.is_truthy(res.stderr:find("label=starved rep 1: generator%-bound: the load generator"
                                         .. " fell behind by [%d.]+ ms at p99"), res.stderr)
    end)

    it("does not flag a peer that stalls at the same rate", function()
        local r = assert(by.stall, "no stall run; stderr:\n" .. res.stderr)
        assert.are.equal("open", r.load_model, brief(r))
        assert.is_false(r.generator_bound, brief(r))
        assert.are.equal("number", type(r.generator_lag_share), brief(r))
        assert.is_true(r.generator_lag_share < 0.25, brief(r))
        assert.is_true(r.client_loop_busy_max < 0.95, brief(r))
        -- the replies took the stall: latency far above the generator's lag
        assert.is_true(r.rtt_us.p99 >= 50000, brief(r))
        for _, n in ipairs(r.notes) do
            assert.is_nil(n:find("generator", 1, true), n)
        end
        assert.is_nil(res.stderr:find("label=stall rep 1: generator", 1, true), res.stderr)
    end)

    it("says so when a latency threshold fails on a generator-bound run", function()
        local st = {}
        for _, r in ipairs(res.runs) do st[#st + 1] = r.case.label .. " " .. r.status .. " " .. tostring(r.error) end
        assert.are.equal(3, res.rc, table.concat(st, "; ") .. "\n" .. res.stderr)
        local md = assert(io.open(res.dir .. "/report.md")):read("*a")
        assert.is_truthy(md:find("generator-bound", 1, true), md)
        local term = res.stdout .. res.stderr
        assert.is_truthy(term:find("label=starved: \"p99_us < 1000\" %(.-generator%-bound in 1 of 1"), term)
    end)
end)
