-- arkbench.report.openloop: what the views say about open-loop runs
-- (docs/load-models.md).
--
--   openloop.is_open_run(run) -> bool           load_model == "open"
--   openloop.is_open_case(c) -> bool            a summary case
--   openloop.any_open(cases) -> bool
--   openloop.missed_cause(run) -> "window full" | "generator behind" | nil
--   openloop.rate_warning(run) -> sentence | nil  for a run with rate_met = false
--   openloop.rate_text(c) -> "asked 5,000/s, achieved 4,990/s" | nil
--   openloop.RTT_NOTE
--
-- The cause of a missed rate comes from the run object alone: intended sends
-- left unsent at the deadline by a full window (unsent_window_full) mean
-- every slot was waiting for a reply (the server, or the window, is the
-- limit); a rate missed otherwise -- nothing unsent, or sends left unsent
-- with a slot free -- means the sender itself fell behind its schedule (the
-- client's CPU: see send_lag_us). A run object without unsent_window_full
-- (an older arkbench) counts every unsent send as the window's.

local report = require("arkbench.report.report")

local type, ipairs = type, ipairs
local format = string.format

local num = report.num

local _M = {}

_M.RTT_NOTE = "RTT from intended send (corrected)"

function _M.is_open_run(run)
    return type(run) == "table" and run.load_model == "open"
end

function _M.is_open_case(c)
    return type(c) == "table" and c.load_model == "open"
end

function _M.any_open(cases)
    for _, c in ipairs(cases or {}) do
        if _M.is_open_case(c) then return true end
    end
    return false
end

function _M.missed_cause(run)
    if type(run) ~= "table" or run.rate_met ~= false then return nil end
    local full = num(run.unsent_window_full)
    if full == nil then full = num(run.unsent) end
    if (full or 0) > 0 then return "window full" end
    return "generator behind"
end

local function lag_p99(run)
    local t = run.send_lag_us
    return type(t) == "table" and num(t.p99) or nil
end

function _M.rate_warning(run)
    local cause = _M.missed_cause(run)
    if not cause then return nil end
    local asked, got = num(run.rate_asked), num(run.rate_achieved)
    local s = format("rate not met: asked %s/s, achieved %s/s", report.format_count(asked),
                     report.format_count(got))
    local unsent = num(run.unsent) or 0
    if cause == "window full" then
        s = s .. format(", %s unsent: window full (every slot waited for a reply; the server or"
            .. " the window is the limit)", report.format_count(unsent))
    else
        local lag = lag_p99(run)
        s = s .. (unsent > 0 and format(", %s unsent", report.format_count(unsent)) or "")
            .. ": generator behind ("
            .. (unsent > 0 and "sends left unsent with a window slot free: the sender fell behind"
                           or "nothing left unsent, but the sender fell behind")
            .. " its schedule" .. (lag and (", send lag p99 " .. report.format_us(lag) .. " µs") or "")
            .. ")"
    end
    return s
end

-- median asked and achieved rate of a summary case
function _M.rate_text(c)
    if not _M.is_open_case(c) then return nil end
    local asked = report.stat(c, "rate_asked")
    local got = report.stat(c, "rate_achieved")
    local s = format("asked %s/s, achieved %s/s", report.format_count(asked), report.format_count(got))
    local missed = num(c.rate_missed) or 0
    if missed > 0 then
        s = s .. format(" (rate not met in %d of %d runs)", missed, num(c.rate_runs) or 0)
    end
    return s
end

return _M
