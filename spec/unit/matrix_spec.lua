-- spec/unit/matrix_spec.lua -- arkbench.scenario.matrix: topology parsing, matrix
-- expansion (order, case ids, idle loops of sharded:N with fewer clients
-- than loops), filters.

local scenario = require("arkbench.scenario.load")
local matrix = require("arkbench.scenario.matrix")

local F = "spec/fixtures/scenarios/"

local function ids(cases)
    local out = {}
    for i, c in ipairs(cases) do out[i] = c.case_id end
    return out
end

describe("matrix.topology", function()
    it("parses sharded:N, shared:N and pool:N", function()
        assert.same({ "sharded", 4 }, { matrix.topology("sharded:4") })
        assert.same({ "pool", 4 }, { matrix.topology("pool:4") })
        assert.same({ "shared", 1 }, { matrix.topology("shared:1") })
        assert.same({ "shared", 256 }, { matrix.topology("shared:256") })
    end)

    it("returns nil for anything else", function()
        for _, bad in ipairs({ "sharded:0", "sharded:257", "sharded:04", "ring:2", "sharded",
                               "sharded:2 ", "Sharded:2" }) do
            assert.is_nil(matrix.topology(bad), bad)
        end
        assert.is_nil(matrix.topology(4))
    end)
end)

describe("matrix.idle_loops", function()
    it("counts the loops of sharded:N that get no connection", function()
        assert.equals(6, matrix.idle_loops({ topology = "sharded:8", clients = 2 }))
        assert.equals(3, matrix.idle_loops({ topology = "sharded:4", clients = 1 }))
        assert.equals(1, matrix.idle_loops({ topology = "sharded:2", clients = 1 }))
        assert.equals(255, matrix.idle_loops({ topology = "sharded:256", clients = 1 }))
    end)

    it("is 0 when every loop has a connection, and for shared:N", function()
        assert.equals(0, matrix.idle_loops({ topology = "sharded:4", clients = 4 }))
        assert.equals(0, matrix.idle_loops({ topology = "sharded:4", clients = 5 }))
        assert.equals(0, matrix.idle_loops({ topology = "sharded:1", clients = 1 }))
        assert.equals(0, matrix.idle_loops({ topology = "shared:4", clients = 1 }))
        assert.equals(0, matrix.idle_loops({ topology = "shared:256", clients = 1 }))
    end)
end)

describe("matrix.expand", function()
    it("expands the reference matrix to 30 cases, payload slowest, topology fastest", function()
        local spec = assert(scenario.load("scenarios/tcp.lua"))
        local cases, dropped = matrix.expand(spec)
        local want = {}
        for _, p in ipairs({ 64, 1024, 16384 }) do
            for _, l in ipairs({ "clients=1 window=1", "clients=16 window=16" }) do
                for _, t in ipairs({ "sharded:1", "shared:2", "shared:4", "sharded:2", "sharded:4" }) do
                    want[#want + 1] = "payload=" .. p .. " " .. l .. " topology=" .. t
                end
            end
        end
        assert.equals(30, #cases)
        assert.same(want, ids(cases))
        for i, c in ipairs(cases) do assert.equals(i, c.index) end
        assert.same({}, dropped)
        assert.equals(90, #cases * spec.keys.repetitions)
        -- nothing is dropped: sharded:2 and sharded:4 with one client keep
        -- their one client (and window 1); the surplus loops are idle
        assert.equals("payload=64 clients=1 window=1 topology=sharded:2", cases[4].case_id)
        assert.equals(1, matrix.idle_loops(cases[4]))
        assert.equals("payload=64 clients=1 window=1 topology=sharded:4", cases[5].case_id)
        assert.equals(3, matrix.idle_loops(cases[5]))
        assert.equals(1, cases[5].clients)
        assert.equals(1, cases[5].window)
        assert.equals(0, matrix.idle_loops(cases[10]))
        local idle = {}
        for i, c in ipairs(cases) do idle[i] = matrix.idle_loops(c) end
        assert.same({ 0, 0, 0, 1, 3, 0, 0, 0, 0, 0,
                      0, 0, 0, 1, 3, 0, 0, 0, 0, 0,
                      0, 0, 0, 1, 3, 0, 0, 0, 0, 0 }, idle)
    end)

    it("keeps every case with idle loops, load unchanged, in matrix order", function()
        local spec = assert(scenario.load(F .. "idle_loops.lua"))
        local cases, dropped = matrix.expand(spec)
        assert.same({}, dropped)
        assert.same({
            "clients=1 window=1 topology=pool:4", "clients=1 window=1 topology=sharded:4",
            "clients=1 window=4 topology=pool:4", "clients=1 window=4 topology=sharded:4",
            "clients=2 window=1 topology=pool:4", "clients=2 window=1 topology=sharded:4",
            "clients=2 window=4 topology=pool:4", "clients=2 window=4 topology=sharded:4",
            "clients=8 window=1 topology=pool:4", "clients=8 window=1 topology=sharded:4",
            "clients=8 window=4 topology=pool:4", "clients=8 window=4 topology=sharded:4",
        }, ids(cases))
        local idle, load = {}, {}
        for i, c in ipairs(cases) do
            assert.equals(i, c.index)
            idle[i] = matrix.idle_loops(c)
            load[i] = c.clients .. "x" .. c.window
        end
        assert.same({ 0, 3, 0, 3, 0, 2, 0, 2, 0, 0, 0, 0 }, idle)
        assert.same({ "1x1", "1x1", "1x4", "1x4", "2x1", "2x1", "2x4", "2x4",
                      "8x1", "8x1", "8x4", "8x4" }, load)
    end)

    it("resolves every key of a case to a scalar", function()
        local spec = assert(scenario.load("scenarios/tcp.lua"))
        local cases = matrix.expand(spec)
        assert.same({
            name = "tcp", protocol = "tcp", framing = "length", payload = 1024,
            clients = 16, window = 16, topology = "sharded:4", execution = "callback",
            work = 0, warmup = 0.25, duration = 1, repetitions = 3, timeout = 2,
            placement = "same-process",
            case_id = "payload=1024 clients=16 window=16 topology=sharded:4", index = 20,
        }, cases[20])
        assert.is_nil(cases[20].rate)
        assert.is_nil(cases[20].target)
        assert.is_nil(cases[20].tls)
    end)

    it("gives the same 30 cases, without warnings, when no case has idle loops", function()
        local spec = assert(scenario.load("scenarios/tcp.lua",
            { "topology=shared:1,shared:2,shared:4,shared:8,sharded:1" }))
        assert.same({}, spec.warnings)
        local cases, dropped = matrix.expand(spec)
        assert.equals(30, #cases)
        assert.same({}, dropped)
        local want = {}
        for _, p in ipairs({ 64, 1024, 16384 }) do
            for _, l in ipairs({ "clients=1 window=1", "clients=16 window=16" }) do
                for _, t in ipairs({ "shared:1", "shared:2", "shared:4", "shared:8", "sharded:1" }) do
                    want[#want + 1] = "payload=" .. p .. " " .. l .. " topology=" .. t
                end
            end
        end
        assert.same(want, ids(cases))
        assert.equals("payload=64 clients=1 window=1 topology=shared:1", cases[1].case_id)
        assert.equals("payload=16384 clients=16 window=16 topology=sharded:1", cases[30].case_id)
    end)

    it("names a single case 'default' when nothing varies", function()
        local spec = assert(scenario.load(F .. "minimal.lua"))
        local cases = matrix.expand(spec)
        assert.equals(1, #cases)
        assert.equals("default", cases[1].case_id)
        assert.equals("default", matrix.describe(cases[1]))
        assert.equals("minimal", cases[1].name)
    end)

    it("keeps a one-element list out of the case id", function()
        local spec = assert(scenario.load(F .. "one_element.lua"))
        assert.same({ "window" }, spec.axes)
        local cases = matrix.expand(spec)
        assert.same({ "window=1", "window=4" }, ids(cases))
        assert.equals(64, cases[1].payload)
        assert.equals(64, cases[2].payload)
        assert.equals(4, cases[2].window)
    end)

    it("gives each case its protocol's default timeout on a mixed protocol axis", function()
        local spec = assert(scenario.load(F .. "mixed_ok.lua"))
        local cases = matrix.expand(spec)
        assert.equals(12, #cases)
        assert.same({
            "protocol=tcp payload=64 topology=sharded:1",
            "protocol=tcp payload=64 topology=sharded:4",
            "protocol=tcp payload=64 topology=sharded:8",
            "protocol=tcp payload=1024 topology=sharded:1",
            "protocol=tcp payload=1024 topology=sharded:4",
            "protocol=tcp payload=1024 topology=sharded:8",
            "protocol=udp payload=64 topology=sharded:1",
            "protocol=udp payload=64 topology=sharded:4",
            "protocol=udp payload=64 topology=sharded:8",
            "protocol=udp payload=1024 topology=sharded:1",
            "protocol=udp payload=1024 topology=sharded:4",
            "protocol=udp payload=1024 topology=sharded:8",
        }, ids(cases))
        for i = 1, 6 do assert.equals(2, cases[i].timeout) end
        for i = 7, 12 do assert.equals(0.2, cases[i].timeout) end
        -- sharded:8 with clients = 4 stays in the matrix, 4 loops idle
        assert.equals(4, cases[3].clients)
        assert.equals(4, matrix.idle_loops(cases[3]))
        assert.equals(0, matrix.idle_loops(cases[2]))
    end)

    it("raises for something that is not a spec", function()
        assert.has_error(function() matrix.expand({}) end,
            "matrix.expand: expected a spec from scenario.load")
    end)
end)

describe("matrix.filter", function()
    local cases
    before_each(function()
        cases = matrix.expand(assert(scenario.load("scenarios/tcp.lua")))
    end)

    it("returns every case without filters", function()
        assert.equals(cases, matrix.filter(cases, {}))
        assert.equals(cases, matrix.filter(cases, nil))
    end)

    it("ANDs different keys and keeps the original index", function()
        local kept = assert(matrix.filter(cases, { "payload=1024", "topology=sharded:4" }))
        assert.same({ "payload=1024 clients=1 window=1 topology=sharded:4",
                      "payload=1024 clients=16 window=16 topology=sharded:4" }, ids(kept))
        assert.equals(15, kept[1].index)
        assert.equals(20, kept[2].index)
    end)

    it("ORs the same key given twice", function()
        local kept = assert(matrix.filter(cases, { "payload=64", "payload=16384", "clients=1",
                                                   "topology=sharded:1" }))
        assert.same({
            "payload=64 clients=1 window=1 topology=sharded:1",
            "payload=16384 clients=1 window=1 topology=sharded:1",
        }, ids(kept))
    end)

    it("compares as strings, on keys that are not axes too", function()
        assert.equals(30, #assert(matrix.filter(cases, { "warmup=0.25", "name=tcp" })))
    end)

    it("refuses a key that is not a scenario key", function()
        assert.same({ nil, "--filter key 'x' is not a scenario key" },
                    { matrix.filter(cases, { "x=1" }) })
        assert.same({ nil, "--filter key 'paylod' is not a scenario key; did you mean 'payload'?" },
                    { matrix.filter(cases, { "paylod=64" }) })
        assert.same({ nil, "--filter payload: expected key=value" },
                    { matrix.filter(cases, { "payload" }) })
    end)

    it("refuses a filter that leaves no cases, listing the values there are", function()
        assert.same({ nil, "--filter left no cases (values of payload in this scenario: "
                           .. "64, 1024, 16384)" },
                    { matrix.filter(cases, { "payload=65" }) })
        assert.same({ nil, "--filter left no cases (values of window in this scenario with "
                           .. "clients=1: 1)" },
                    { matrix.filter(cases, { "clients=1", "window=16" }) })
        assert.same({ nil, "--filter left no cases (values of topology in this scenario with "
                           .. "payload=64 and clients=1: sharded:1, shared:2, shared:4, sharded:2, "
                           .. "sharded:4)" },
                    { matrix.filter(cases, { "payload=64", "clients=1", "topology=sharded:8" }) })
    end)

    it("finds the cases with idle loops: they are in the matrix", function()
        local kept = assert(matrix.filter(cases, { "clients=1", "topology=sharded:4" }))
        assert.same({
            "payload=64 clients=1 window=1 topology=sharded:4",
            "payload=1024 clients=1 window=1 topology=sharded:4",
            "payload=16384 clients=1 window=1 topology=sharded:4",
        }, ids(kept))
        assert.same({ 5, 15, 25 }, { kept[1].index, kept[2].index, kept[3].index })
    end)
end)
