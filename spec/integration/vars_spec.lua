-- vars_spec.lua -- the user axes (scenario key vars, issue 14) reach the
-- Lua workloads: message = function(i, id, vars) gets them as its third
-- argument and client = function(conn) finds them in conn.vars, the value
-- of its own case (against the built-in raw echo, which sends back exactly
-- what the function sent: a wrong value fails the run). Runtime: ~5 s.
local ROOT = os.getenv("ARKBENCH_ROOT") or "."
package.path = ROOT .. "/spec/?.lua;" .. package.path
local ark = require("helpers.arkbench")
local files = require("helpers.files")

teardown(function() files.remove_tmpdirs() end)

local SCENARIO = [[
local base = { name = "vars", execution = "lua", protocol = "tcp", framing = "raw", payload = 16,
    duration = 0.2, warmup = 0.05, repetitions = 1, clients = 2,
    vars = { word = { "abcdabcdabcdabcd", "wxyzwxyzwxyzwxyz" } } }
local function part(t) for k, v in pairs(base) do t[k] = v end return t end
return {
    part { label = "light",
        message = function(i, id, vars) return vars.word end,
        expect = function(buf)
            if #buf < 16 then return nil end
            return 16
        end },
    part { label = "full",
        client = function(conn)
            while true do
                local r = conn:call(conn.vars.word, 16)
                if not r then return end
                if r ~= conn.vars.word then error("echo of another word: " .. r) end
            end
        end },
}
]]

describe("vars in Lua workloads", function()
    it("are the case's own values in message(i, id, vars) and conn.vars", function()
        local res = ark.run_scenario(SCENARIO, { name = "vars" })
        assert.are.equal(0, res.rc, res.stdout .. res.stderr)
        assert.are.equal(4, #res.runs)
        local seen = {}
        for _, r in ipairs(res.runs) do
            assert.is_true(r.ok, ark.brief(r))
            assert.is_true(r.completed > 0, ark.brief(r))
            -- the echo's bytes are the word: 16 per round trip
            assert.is_true(math.abs(r.payload_mib_per_s * 1048576 * r.measured_s - 16 * r.completed)
                < 1, ark.brief(r))
            seen[r.case.label .. " " .. r.case.vars.word] = true
            assert.truthy(r.case_id:find("word=" .. r.case.vars.word, 1, true), r.case_id)
        end
        assert.same({ ["light abcdabcdabcdabcd"] = true, ["light wxyzwxyzwxyzwxyz"] = true,
            ["full abcdabcdabcdabcd"] = true, ["full wxyzwxyzwxyzwxyz"] = true }, seen)
    end)
end)
