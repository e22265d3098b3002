-- io_models_scenario_spec.lua -- scenarios/io_models.lua is the
-- reference's IO-model matrix: 3 payloads x 2 loads x 6 topologies x 2
-- works x 2 executions = 144 cases, in that order of axes. A build without
-- the pool:N model refuses the file, naming pool:4; a build whose shared:N
-- does not run coroutine execution yet (the capability table's
-- shared_executions, docs/topologies.md) refuses it naming that pair; the
-- rest of the matrix loads with its topologies overridden.
local scenario = require("arkbench.scenario.load")
local matrix = require("arkbench.scenario.matrix")
local core = require("arkbench.core")

local HAS_POOL, SHARED_CO = false, false
for _, m in ipairs(core.capabilities().models) do
    if m == "pool" then HAS_POOL = true end
end
for _, p in ipairs(core.capabilities().protocols) do
    for _, e in ipairs(p.name == "tcp" and p.shared_executions or {}) do
        if e == "coroutine" then SHARED_CO = true end
    end
end

local FILE = "scenarios/io_models.lua"

describe("scenarios/io_models.lua", function()
    it("is the 144-case matrix, or names pool:4 on a build without pool:N", function()
        local spec, err = scenario.load(FILE)
        if HAS_POOL and not SHARED_CO then
            assert.is_nil(spec)
            assert.truthy(tostring(err):find('topology = "shared:2" runs execution callback over', 1, true), err)
            assert.truthy(tostring(err):find('not execution = "coroutine" over protocol tcp', 1, true), err)
        elseif HAS_POOL then
            assert.is_truthy(spec, err)
            assert.same({ "payload", "load", "topology", "execution", "work" }, spec.axes)
            assert.are.equal(144, #matrix.expand(spec))
        else
            assert.is_nil(spec)
            assert.truthy(tostring(err):find('key \'topology\' element 6: got string "pool:4"', 1, true), err)
        end
    end)

    it("holds the reference's axes", function()
        local topo = SHARED_CO and "topology=sharded:1,shared:2,shared:4,sharded:2,sharded:4"
            or "topology=sharded:1,pool:2,pool:4,sharded:2,sharded:4"
        local spec = assert(scenario.load(FILE, { topo }))
        assert.same({ "payload", "load", "topology", "execution", "work" }, spec.axes)
        assert.same({ 64, 1024, 16384 }, spec.keys.payload)
        assert.same({ { clients = 1, window = 1 }, { clients = 16, window = 16 } }, spec.keys.load)
        assert.same({ 0, 10000 }, spec.keys.work)
        assert.same({ "callback", "coroutine" }, spec.keys.execution)
        assert.are.equal(120, #matrix.expand(spec))
    end)
end)
