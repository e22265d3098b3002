-- arkbench.run.status: what a run came to, and what a set of runs makes of
-- the exit code (docs/run-object.md, "Status"; README.md, exit codes).
--
--   status.STATUSES                 the statuses a run object may carry
--   status.of(run) -> status        "error" (written by an older arkbench)
--                                   reads as "failed"; a run without a status
--                                   (or with "ok" but not ok = true) is "ok"
--                                   when run.ok is true, else "failed"
--   status.measured(run) -> bool    ok or degraded: its numbers count (tables,
--                                   medians, charts, compare, thresholds)
--   status.error_rate(run) -> rate | nil
--                                   (timed_out + message_errors +
--                                   non_success) / sent: messages that got no
--                                   reply, or one whose status is outside the
--                                   success set; nil when nothing was sent
--   status.derive(res, case) -> status, error
--                                   the worker's status for the engine's
--                                   result res (core.run_case) of case
--   status.exit_code(runs) -> 0 | 1 | 130
--                                   0 every run ok, 1 some run failed or
--                                   degraded, or missed its rate (ok with
--                                   rate_met = false), 130 some run was
--                                   interrupted.  A run whose case says
--                                   strict = false counts degraded and a
--                                   missed rate as ok (errors are reported,
--                                   the thresholds decide: README.md, exit
--                                   codes); rate_strict = false does so for
--                                   a missed rate alone.  A run with nothing
--                                   measured (failed, crashed, timeout,
--                                   script_error) is 1 whatever strict says.
--   status.strict(run) -> bool      false when the run's case says
--                                   strict = false
--
-- Nothing here reads a clock or the file system.

local type, ipairs, pairs = type, ipairs, pairs
local format = string.format

local _M = {}

_M.STATUSES = { "ok", "degraded", "failed", "timeout", "crashed", "interrupted", "script_error" }
local KNOWN = {}
for _, s in ipairs(_M.STATUSES) do KNOWN[s] = true end
_M.KNOWN = KNOWN

-- status names of older result folders -> today's
_M.OLD_NAMES = { error = "failed" }

function _M.of(run)
    if type(run) ~= "table" then return "failed" end
    local s = run.status
    if type(s) == "string" then
        s = _M.OLD_NAMES[s] or s
        -- "ok" needs ok = true: a run object that says both is not trusted
        if s == "ok" and run.ok ~= true then return "failed" end
        if KNOWN[s] then return s end
    end
    return run.ok == true and "ok" or "failed"
end

function _M.measured(run)
    local s = _M.of(run)
    return s == "ok" or s == "degraded"
end

local function count(v)
    if type(v) == "number" and v == v and v >= 0 then return v end
    return 0
end

function _M.error_rate(run)
    local sent = type(run) == "table" and run.sent
    if type(sent) ~= "number" or not (sent > 0) then return nil end
    return (count(run.timed_out) + count(run.message_errors) + count(run.non_success)) / sent
end

function _M.strict(run)
    return not (type(run) == "table" and type(run.case) == "table" and run.case.strict == false)
end

-- "ECONNRESET 1, ETIMEDOUT 3" (classes by name), or nil without any
local function classes_text(errors)
    if type(errors) ~= "table" then return nil end
    local keys = {}
    for k, v in pairs(errors) do
        if type(k) == "string" and type(v) == "number" then keys[#keys + 1] = k end
    end
    if #keys == 0 then return nil end
    table.sort(keys)
    local parts = {}
    for i, k in ipairs(keys) do parts[i] = format("%s %.0f", k, errors[k]) end
    return table.concat(parts, ", ")
end
_M.classes_text = classes_text

-- res: core.run_case's result (ok, status "ok"/"degraded"/"failed", error,
-- counters, errors, script_error, interrupted); case: the resolved case
-- (max_error_rate). The engine judges the run; here come what it cannot
-- know: a script error, an interrupt, reconnects (a counter the engine may
-- count without judging it) and the scenario's max_error_rate.
function _M.derive(res, case)
    local err = type(res.error) == "string" and res.error or nil
    if res.interrupted then return "interrupted", err end
    if res.script_error then return "script_error", err end
    local s = res.status
    if s ~= "ok" and s ~= "degraded" and s ~= "failed" then
        s = res.ok == true and "ok" or "failed"
    end
    if s == "ok" and count(res.reconnects) > 0 then
        s = "degraded"
        err = err or format("%.0f connections were reopened (reconnects)", res.reconnects)
    end
    local max = type(case) == "table" and case.max_error_rate or nil
    if (s == "ok" or s == "degraded") and type(max) == "number" then
        local rate = _M.error_rate(res)
        if rate and rate > max then
            local why = format("error rate %.6g ((timed_out %.0f + message_errors %.0f"
                .. " + non_success %.0f) / sent %.0f) is above max_error_rate %.6g", rate,
                count(res.timed_out), count(res.message_errors), count(res.non_success), res.sent, max)
            return "failed", err and (why .. "; first error: " .. err) or why
        end
    end
    return s, err
end

function _M.exit_code(runs)
    local code = 0
    for _, run in ipairs(runs or {}) do
        local s = _M.of(run)
        if s == "interrupted" then return 130 end
        local strict = _M.strict(run)
        if s ~= "ok" and not (s == "degraded" and not strict) then code = 1 end
        if (s == "ok" or s == "degraded") and run.rate_met == false and strict
            and not (type(run.case) == "table" and run.case.rate_strict == false) then
            code = 1
        end
    end
    return code
end

return _M
