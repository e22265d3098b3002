-- arkbench.scenario.check_cases: the checks across keys that look at the
-- matrix: processes against placement, target, clients and protocol;
-- rate and interval against what is built and the durations; the number
-- of cases; then per case, idle loops, the execution and protocol pairs
-- the capability table runs (on shared:N and with churn too), and a
-- datagram window > 1 (over 256 with 1-byte payloads: refused).

local type, ipairs, tostring = type, ipairs, tostring
local str_format = string.format
local tbl_concat = table.concat
local math_huge = math.huge

local base = require("arkbench.scenario.check_base")
local matrix = require("arkbench.scenario.matrix")
local msg = require("arkbench.scenario.msg")

local describe = msg.describe
local fail, warn = msg.fail, msg.warn
local CAPS, LIMITS, PROTOCOLS, TLS_PROTOCOLS = base.CAPS, base.LIMITS, base.PROTOCOLS, base.TLS_PROTOCOLS
local values_of, contains, max_of, or_list = base.values_of, base.contains, base.max_of, base.or_list

local _M = {}

-- the longest time series (core/engine/engine.h AB_MAX_INTERVALS)
local MAX_INTERVALS = 2000

-- rate's lower bound (issue 27): at least one message per connection in the
-- measure phase, rate x duration >= clients (core/proto/caps.h,
-- ab_caps_rate_ok; below it the schedule would send nothing on some
-- connections, and its instants would lie far outside the run). Refused
-- once, for the first case below it.
local function check_rate(ctx, cases)
    for _, c in ipairs(cases) do
        local r, d, n = c.rate, c.duration, c.clients
        if type(r) == "number" and type(d) == "number" and type(n) == "number" and r * d < n then
            fail(ctx, "rate", str_format("key 'rate': got %g messages/s with clients=%d and"
                 .. " duration=%g s: the schedule would send less than one message per"
                 .. " connection in the measure phase; expected a rate from %g (clients /"
                 .. " duration) to %g", r, n, d, n / d, LIMITS.rate_max))
            return
        end
    end
end

-- Each execution runs only the protocols whose row in the capability table
-- names it: refused once per (execution, protocol) pair some case has.
local function check_executions(ctx, t, cases)
    local seen = {}
    for _, c in ipairs(cases) do
        local ex, pr = c.execution, c.protocol
        local id = ex .. "/" .. pr
        local row = PROTOCOLS[pr]
        if not seen[id] and not contains(row.executions, ex) then
            seen[id] = true
            local runs = {}
            for _, p in ipairs(CAPS.protocols) do
                if contains(p.executions, ex) then runs[#runs + 1] = p.name end
            end
            local key = (t.execution ~= nil or ctx.origin.execution) and "execution" or "protocol"
            -- a multiplexed row (h2, h2c) says why the others are not built
            local why = row.streams and str_format(" (%s runs a stream per message, completed"
                .. " out of order; only the callback echo drives that: docs/protocols.md)", pr) or ""
            fail(ctx, key, str_format('key \'%s\': execution = "%s" runs over protocol%s %s,'
                 .. ' not %s; expected execution %s for protocol %s%s', key, ex,
                 #runs == 1 and "" or "s", tbl_concat(runs, ", "), pr,
                 or_list(row.executions), pr, why))
        end
    end
end

-- shared:N with N > 1 (one reactor, N threads) runs only the protocol and
-- execution pairs whose row names them (shared_executions): the others are
-- refused once per (topology, execution, protocol) some case has. The Lua
-- driver keeps one Lua state per loop, which a connection that moves
-- between threads cannot keep (docs/topologies.md).
local function check_shared(ctx, t, cases)
    local seen = {}
    for _, c in ipairs(cases) do
        local model, n = matrix.topology(c.topology)
        local ex, pr = c.execution, c.protocol
        local id = c.topology .. "/" .. ex .. "/" .. pr
        local row = PROTOCOLS[pr]
        if model == "shared" and n > 1 and not seen[id] and not contains(row.shared_executions, ex) then
            seen[id] = true
            -- "execution callback over tcp, ws, ... or https"
            local runs = {}
            for _, e in ipairs(CAPS.executions) do
                local over = {}
                for _, p in ipairs(CAPS.protocols) do
                    if contains(p.shared_executions, e) then over[#over + 1] = p.name end
                end
                if #over > 0 then runs[#runs + 1] = "execution " .. e .. " over " .. or_list(over) end
            end
            local key = (t.topology ~= nil or ctx.origin.topology) and "topology" or "execution"
            fail(ctx, key, str_format('key \'%s\': topology = "%s" runs %s only, not execution'
                 .. ' = "%s" over protocol %s; expected sharded:%d or pool:%d for it'
                 .. ' (docs/topologies.md)', key, c.topology, tbl_concat(runs, "; "), ex, pr, n, n))
        end
    end
end

-- requests_per_connection (churn) runs over the protocol and execution
-- pairs whose row names them (churn_executions), and not on shared:N with
-- N > 1 (it does not reopen connections): refused once per pair.
local function check_churn(ctx, t, cases)
    local seen = {}
    for _, c in ipairs(cases) do
        local k = c.requests_per_connection
        local ex, pr = c.execution, c.protocol
        local model, n = matrix.topology(c.topology)
        local row = PROTOCOLS[pr]
        local id = ex .. "/" .. pr
        if k ~= nil and not seen[id] and not contains(row.churn_executions, ex) then
            seen[id] = true
            local runs = {}
            for _, p in ipairs(CAPS.protocols) do
                if contains(p.churn_executions, ex) then runs[#runs + 1] = p.name end
            end
            local why = row.transport == "datagram"
                and "a datagram protocol has no connection to replace"
                or (ex == "lua" and "a Lua client owns its connection" or "not built")
            fail(ctx, "requests_per_connection", str_format("key 'requests_per_connection': "
                 .. 'execution = "%s" over protocol %s does not churn connections (%s); expected'
                 .. " it only with %s", ex, pr, why,
                 #runs > 0 and ("execution " .. ex .. " over " .. or_list(runs))
                     or "another execution"))
        elseif k ~= nil and model == "shared" and n > 1 and not LIMITS.churn_shared
               and not seen[c.topology] then
            seen[c.topology] = true
            fail(ctx, "requests_per_connection", str_format("key 'requests_per_connection': "
                 .. 'topology = "%s" does not reopen connections; expected sharded:%d or pool:%d'
                 .. " for churn (docs/execution.md)", c.topology, n, n))
        end
    end
end

-- processes, rate, interval and the number of cases: false (a problem in
-- ctx) when the matrix is too large to expand
function _M.check_keys(ctx, spec)
    local keys = spec.keys
    -- processes = N: a side of N processes; the servers are the split
    -- ones (or the target's own)
    if keys.processes ~= nil and max_of(keys.processes) > 1 then
        local n = max_of(keys.processes)
        local split_only = keys.placement ~= nil
        for _, pl in ipairs(values_of(keys.placement)) do
            if pl ~= "split" then split_only = false end
        end
        if keys.target == nil and not split_only then
            fail(ctx, "processes", str_format("key 'processes': got %d; expected 1 unless"
                 .. ' placement = "split" (N client and N server processes) or target is set'
                 .. " (N client processes)", n))
        end
        local least = keys.load and math_huge or nil
        for _, pr in ipairs(keys.load or {}) do
            if pr.clients < least then least = pr.clients end
        end
        for _, cl in ipairs(values_of(keys.clients or 1)) do
            if not least or cl < least then least = cl end
        end
        if least and n > least then
            fail(ctx, "processes", str_format("key 'processes': got %d with clients = %d;"
                 .. " expected at most as many processes as connections", n, least))
        end
        if keys.target == nil then
            for _, pname in ipairs(values_of(keys.protocol or "tcp")) do
                if TLS_PROTOCOLS[pname] then
                    fail(ctx, "processes", str_format("key 'processes': got %d with protocol"
                         .. ' %s and placement = "split"; TLS servers do not run as several'
                         .. " processes yet (expected processes = 1, or target)", n, pname))
                    break
                end
            end
        end
    end

    if keys.rate ~= nil and not LIMITS.open_loop then
        fail(ctx, "rate", "key 'rate': rate (open-loop load) is not built yet; remove it to run"
             .. " closed loop")
    end

    -- the time series: an interval fits in every duration, and no case has
    -- more than MAX_INTERVALS of them (each holds a histogram per loop)
    if keys.interval ~= nil then
        local durations = type(keys.duration) == "table" and keys.duration or { keys.duration or 1 }
        for _, d in ipairs(durations) do
            if keys.interval > d then
                fail(ctx, "interval", str_format("key 'interval': got %s; expected at most the"
                     .. " duration (%s s)", describe(keys.interval), tostring(d)))
                break
            elseif d / keys.interval > MAX_INTERVALS + 1e-9 then
                fail(ctx, "interval", str_format("key 'interval': got %s; expected duration /"
                     .. " interval at most %d (duration %s s)", describe(keys.interval),
                     MAX_INTERVALS, tostring(d)))
                break
            end
        end
    end

    -- bounded: the per-case checks below expand the matrix
    local n = matrix.count(spec)
    if n > matrix.MAX_CASES then
        fail(ctx, nil, str_format("the scenario has %.0f cases; at most %d are allowed"
             .. " (fewer values per axis, or several files)", n, matrix.MAX_CASES))
        return false
    end
    return true
end

-- per case of the expanded matrix: idle loops, executions, shared:N,
-- churn; returns the window key and whether some case has a window > 1
function _M.check_cases(ctx, t, spec)
    local keys = spec.keys
    -- topology vs clients, per case (see matrix.lua): such cases run with
    -- idle loops; say so once per topology/clients pair
    local cases = matrix.expand(spec)
    local order, count = {}, {}
    for _, c in ipairs(cases) do
        local idle = matrix.idle_loops(c)
        if idle > 0 then
            local _, n = matrix.topology(c.topology)
            local reason = str_format("%s with clients=%d: %d of %d loops run without a"
                .. " connection (the load is not changed)", c.topology, c.clients, idle, n)
            if not count[reason] then
                count[reason] = 0
                order[#order + 1] = reason
            end
            count[reason] = count[reason] + 1
        end
    end
    for _, reason in ipairs(order) do
        warn(ctx, "topology", str_format("key 'topology': %s: %d of the scenario's %d cases",
             reason, count[reason], #cases))
    end

    check_executions(ctx, t, cases)
    check_rate(ctx, cases)
    check_shared(ctx, t, cases)
    if keys.requests_per_connection ~= nil then check_churn(ctx, t, cases) end

    local window_key = keys.load and "load" or "window"
    local wide = false
    if keys.load then
        for _, pr in ipairs(keys.load) do wide = wide or pr.window > 1 end
    else
        wide = max_of(keys.window) > 1
    end
    for _, pr in ipairs(values_of(keys.protocol)) do
        if wide and PROTOCOLS[pr].transport == "datagram" then
            warn(ctx, window_key, "key '" .. window_key .. "': " .. pr
                 .. " with window > 1 measures queueing, not RTT")
            break
        end
    end

    -- a 1-byte datagram carries its sequence mod 256 (docs/protocols.md,
    -- "Small payloads"): with more than 256 in flight two messages share
    -- every code, a reply completes the youngest of them and the oldest is
    -- left to time out -- loss and duplicates an exact echo never made
    local maxw = 0
    if keys.load then
        for _, pr in ipairs(keys.load) do
            if pr.window > maxw then maxw = pr.window end
        end
    else
        maxw = max_of(keys.window)
    end
    local pmin
    for _, x in ipairs(values_of(keys.payload)) do
        if pmin == nil or x < pmin then pmin = x end
    end
    local SMALL_CODES = 256
    if pmin == 1 and maxw > SMALL_CODES and not (contains(keys.execution, "lua")
                                             and #values_of(keys.execution) == 1) then
        for _, pr in ipairs(values_of(keys.protocol)) do
            if PROTOCOLS[pr].transport == "datagram" then
                fail(ctx, window_key, str_format("key '%s': window %d with payload = 1 over %s;"
                     .. " expected a window of at most %d (a 1-byte datagram tells only %d"
                     .. " messages in flight apart) or a payload of 2 bytes or more",
                     window_key, maxw, pr, SMALL_CODES, SMALL_CODES))
                break
            end
        end
    end
    return window_key, wide
end

return _M
