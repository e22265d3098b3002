-- rate_rule_spec.lua -- arkbench.run.rate_rule, the one rule of
-- rate_achieved and rate_met (issue 27), and the merge of parts
-- (arkbench.run.merge) following it: parts that each met their share merge
-- to a run that met the whole, read the same as one process would.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local rule = require("arkbench.run.rate_rule")
local merge = require("arkbench.run.merge")

describe("rate_rule.apply", function()
    it("is the share of the intended sends that went out, times the asked rate", function()
        local r = rule.apply({ rate_asked = 1000, sent = 990, unsent = 10, measured_s = 1 })
        assert.near(990, r.rate_achieved, 1e-9)
        assert.is_false(r.rate_met)
        r = rule.apply({ rate_asked = 0.5, sent = 2, unsent = 0, measured_s = 4 })
        assert.equals(0.5, r.rate_achieved)
        assert.is_true(r.rate_met)
        -- few sends in a short phase: not more than asked (not sent / measured_s)
        r = rule.apply({ rate_asked = 0.5, sent = 1, unsent = 0, measured_s = 1 })
        assert.equals(0.5, r.rate_achieved)
        -- unsent > 0 fails it even when the share rounds to 99 %
        r = rule.apply({ rate_asked = 100, sent = 100000, unsent = 1, measured_s = 1000 })
        assert.is_true(r.rate_achieved >= 99)
        assert.is_false(r.rate_met)
        -- nothing measured
        r = rule.apply({ rate_asked = 10, sent = 0, unsent = 0, measured_s = 0 })
        assert.equals(0, r.rate_achieved)
        -- closed loop: untouched
        r = rule.apply({ sent = 5 })
        assert.is_nil(r.rate_achieved)
        assert.is_nil(r.rate_met)
    end)

    it("gives the merge of parts what one process with their counts reads", function()
        local function part(asked, sent, unsent)
            return rule.apply({ rate_asked = asked, sent = sent, unsent = unsent, measured_s = 4,
                                completed = sent, drained = 0, timed_out = 0, message_errors = 0,
                                unfinished = 0, load_model = "open" })
        end
        local merged = merge.parts({ part(0.25, 1, 0), part(0.25, 1, 0) })
        local single = rule.apply({ rate_asked = 0.5, sent = 2, unsent = 0, measured_s = 4 })
        assert.near(single.rate_achieved, merged.rate_achieved, 1e-12)
        assert.equals(single.rate_met, merged.rate_met)
        assert.is_true(merged.rate_met)
        merged = merge.parts({ part(500, 500, 0), part(500, 480, 20) })
        assert.near(1000 * 980 / 1000, merged.rate_achieved, 1e-9)
        assert.is_false(merged.rate_met)
    end)
end)
