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
--   openloop.generator(run) -> { share, bound, lag_us, busy, cause } | nil
--                                the generator's verdict (below)
--   openloop.generator_warning(run) -> sentence | nil  for a generator-bound run
--   openloop.judge_generator(obj)   sets obj.generator_lag_share and
--                                   obj.generator_bound and adds the note
--
-- Generator-bound (docs/load-models.md, "Generator-bound runs"): an open-loop
-- run is generator_bound when the generator's part of the send lag
-- (generator_lag_us: a send's lag counted from its intended time, or from
-- the reply that freed its slot when the window was full -- a wait for the
-- peer is not the generator's) is at p99 at least LAG_SHARE of the
-- corrected p99 and more than FLOOR_FACTOR x the machine's timer floor p99
-- (a lag within the floor is the wake-up, which rate_precision = "spin"
-- removes, not a generator behind), or when a client loop was at least
-- BUSY of its measured time busy.  A closed-loop run with a loop that busy
-- is noted the same way (its throughput is the client's).
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

_M.LAG_SHARE, _M.BUSY, _M.FLOOR_FACTOR = 0.25, 0.95, 2

local function p99_of(t)
    return type(t) == "table" and num(t.p99) or nil
end

function _M.generator(run)
    if type(run) ~= "table" then return nil end
    local busy = num(run.client_loop_busy_max)
    local g = { busy = busy }
    if busy and busy >= _M.BUSY then g.bound, g.cause = true, "busy" end
    if not _M.is_open_run(run) then
        -- closed loop: a loop that serves both ends is busy by design; only
        -- a client apart from its server (target, split) is noted
        local c = type(run.case) == "table" and run.case or {}
        if not (c.target or c.placement == "split") then g.bound = false end
        return busy and g or nil
    end
    local lag = p99_of(run.generator_lag_us) or p99_of(run.send_lag_us)
    local rtt = p99_of(run.rtt_us)
    g.lag_us = lag
    if lag and rtt and rtt > 0 then g.share = lag / rtt end
    local floor = type(run.timer_floor_us) == "table" and num(run.timer_floor_us.p99) or nil
    local above_floor = lag ~= nil and (floor == nil or lag > _M.FLOOR_FACTOR * floor)
    if g.share and g.share >= _M.LAG_SHARE and above_floor then
        g.bound, g.cause = true, g.cause or "lag"
    end
    g.bound = g.bound or false
    return g
end

local function ms(us)
    local v = us / 1000
    if v >= 100 then return format("%.0f", v) end
    if v >= 10 then return format("%.1f", v) end
    if v >= 0.1 then return format("%.2f", v) end
    return format("%.3f", v)
end

function _M.generator_warning(run)
    local g = _M.generator(run)
    if not (g and g.bound) then return nil end
    local busy = g.busy and g.busy >= _M.BUSY
        and format("a client loop was %.0f %% busy", g.busy * 100) or nil
    if not _M.is_open_run(run) then
        return "generator-bound: " .. busy .. ": the throughput is the client's as much as the"
            .. " server's; add threads, processes or shards"
    end
    return format("generator-bound: the load generator fell behind by %s ms at p99%s: the"
        .. " corrected latency includes it; add threads, processes or shards", ms(g.lag_us or 0),
        busy and (" (" .. busy .. ")") or "")
end

function _M.judge_generator(obj)
    local g = _M.generator(obj)
    if not g then return end
    if _M.is_open_run(obj) then
        obj.generator_lag_share = g.share
        obj.generator_bound = g.bound
    elseif g.bound then
        obj.generator_bound = true
    end
    local w = _M.generator_warning(obj)
    if w then
        if type(obj.notes) ~= "table" then obj.notes = {} end
        obj.notes[#obj.notes + 1] = w
    end
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
