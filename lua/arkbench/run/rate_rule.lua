-- arkbench.run.rate_rule: the one definition of an open-loop run's
-- `rate_achieved` and `rate_met` (docs/load-models.md, "Rate accounting,
-- never silent"), applied to a single process's run object, to each part
-- of a run with `processes` > 1 and to the merge of the parts
-- (arkbench.run.merge) alike, from the counters each of them has:
--
--   rate_achieved = rate_asked x sent / (sent + unsent)
--   rate_met      = unsent == 0 and rate_achieved >= 0.99 x rate_asked
--
-- `sent` counts the measure phase's messages, the deadline's edge
-- (`sent_late`) included; `sent + unsent` is every message the schedule
-- intended before the deadline. A ratio of counts, not sent / measured_s: a
-- schedule of ceil(rate x duration) sends would otherwise read as more than
-- asked when rate x duration is small (one send in 1 s at 0.5/s is "1/s"),
-- and a merge of parts would read otherwise than one process (issue 27).
--
--   rate_rule.apply(run) -> run: sets both fields when run.rate_asked is a
--       number (an open-loop run), else leaves run as it is.

local type = type

local _M = {}

_M.MET_SHARE = 0.99

function _M.achieved(asked, sent, unsent)
    local slots = sent + unsent
    if slots <= 0 then return 0 end
    return asked * sent / slots
end

function _M.apply(run)
    if type(run) ~= "table" or type(run.rate_asked) ~= "number" then return run end
    local sent = type(run.sent) == "number" and run.sent or 0
    local unsent = type(run.unsent) == "number" and run.unsent or 0
    local measured = type(run.measured_s) == "number" and run.measured_s or 0
    run.rate_achieved = measured > 0 and _M.achieved(run.rate_asked, sent, unsent) or 0
    run.rate_met = unsent == 0 and run.rate_achieved >= _M.MET_SHARE * run.rate_asked
    return run
end

return _M
