-- rate_rule_spec.lua -- issue 27, acceptance 3: one definition of
-- rate_achieved and rate_met (arkbench.run.rate_rule) for a single
-- process, each part and the merge of parts. The same 0.5 msg/s case with
-- processes = 1 and processes = 2: the same status, rate_achieved equal
-- within 1 %, rate_met equal, and each run's fields what the rule gives
-- from its own counts. (Whether a loaded host sends every message in time
-- is not asserted: both runs must agree, whatever they read.)
-- Runtime: ~15 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local ark = require("helpers.arkbench")
local rule = require("arkbench.run.rate_rule")

teardown(function() files.remove_tmpdirs() end)

-- 2 connections at 0.5 msg/s for 4 s: each connection's schedule has
-- messages in the measure phase (rate x duration >= clients)
local CASE = [[
return { name = "half", protocol = "tcp", clients = 2, window = 1, payload = 64,
         placement = "split", processes = %d, rate = 0.5,
         warmup = 0.1, duration = 4, repetitions = 1, timeout = 5 }
]]

local function one(n)
    local r = ark.run_scenario(CASE:format(n), { name = "half" .. n, limit = 120 })
    assert.equals(1, #r.runs, r.stderr)
    return r.runs[1], r
end

describe("rate at 0.5 msg/s with processes = 1 and 2", function()
    it("reads the same status, rate_achieved (within 1 %) and rate_met", function()
        if not require("arkbench.core").capabilities().limits.open_loop then
            return pending("this build has no open loop")
        end
        local a, ra = one(1)
        local b, rb = one(2)
        local where = ("processes=1: %s %s/%s met=%s sent=%s unsent=%s; processes=2: %s %s/%s met=%s"
            .. " sent=%s unsent=%s\n%s\n%s"):format(a.status, a.rate_achieved, a.rate_asked,
            tostring(a.rate_met), a.sent, a.unsent, b.status, b.rate_achieved, b.rate_asked,
            tostring(b.rate_met), b.sent, b.unsent, ra.stderr, rb.stderr)
        assert.equals(0.5, a.rate_asked, where)
        assert.near(0.5, b.rate_asked, 1e-9, where)
        assert.equals(a.status, b.status, where)
        assert.is_true(math.abs(a.rate_achieved - b.rate_achieved) <= 0.01 * a.rate_asked, where)
        assert.equals(a.rate_met, b.rate_met, where)
        -- each is the rule applied to its own counts (the merge's too)
        for _, r in ipairs({ a, b }) do
            local c = rule.apply({ rate_asked = r.rate_asked, sent = r.sent, unsent = r.unsent,
                                   measured_s = r.measured_s })
            assert.near(c.rate_achieved, r.rate_achieved, 1e-9, where)
            assert.equals(c.rate_met, r.rate_met, where)
            -- the schedule: connection 0 at 0 s, connection 1 at 2 s (one
            -- process) or each at 0 s (one per process): 2 intended sends
            assert.equals(2, r.sent + r.unsent, where)
        end
    end)
end)
