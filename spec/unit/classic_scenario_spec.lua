-- classic_scenario_spec.lua -- scenarios/classic.lua is the classic
-- "coroutine library vs Asio async" study (issue 15): tcp, raw framing,
-- 1000 connections, window 1, split processes, payloads 4 .. 4096 B,
-- sharded:1/2/4/8 and shared:2/4/8, callback and coroutine -- coroutine on
-- shared:N only when the capability table says the build runs it.
local scenario = require("arkbench.scenario.load")
local matrix = require("arkbench.scenario.matrix")
local core = require("arkbench.core")

local SHARED_CO = false
for _, p in ipairs(core.capabilities().protocols) do
    for _, e in ipairs(p.name == "tcp" and p.shared_executions or {}) do
        if e == "coroutine" then SHARED_CO = true end
    end
end

describe("scenarios/classic.lua", function()
    local spec = assert(scenario.load("scenarios/classic.lua"))
    local cases = matrix.expand(spec)

    it("holds the study's fixed keys in every case", function()
        for _, c in ipairs(cases) do
            assert.are.equal("tcp", c.protocol)
            assert.are.equal("raw", c.framing)
            assert.are.equal(1000, c.clients)
            assert.are.equal(1, c.window)
            assert.are.equal("split", c.placement)
        end
    end)

    it("is payload x threads x execution, coroutine on shared:N only when the build runs it", function()
        local seen, n = {}, { callback = 0, coroutine = 0 }
        for _, c in ipairs(cases) do
            seen[c.payload .. " " .. c.topology .. " " .. c.execution] = true
            n[c.execution] = n[c.execution] + 1
        end
        for _, p in ipairs({ 4, 32, 128, 1024, 4096 }) do
            for _, t in ipairs({ "sharded:1", "sharded:2", "sharded:4", "sharded:8",
                                 "shared:2", "shared:4", "shared:8" }) do
                assert.is_true(seen[p .. " " .. t .. " callback"], p .. " " .. t .. " callback")
                local shared = t:find("^shared") ~= nil
                assert.are.equal(not shared or SHARED_CO, seen[p .. " " .. t .. " coroutine"] == true,
                    p .. " " .. t .. " coroutine")
            end
        end
        assert.are.equal(35, n.callback)
        assert.are.equal(SHARED_CO and 35 or 20, n.coroutine)
        -- callback comes first: the baseline of the end-of-run comparison
        assert.are.equal("callback", cases[1].execution)
    end)
end)
