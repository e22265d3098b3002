-- arkbench.scenario.check_values: the keys that hold a value, or a list
-- of values for a matrix axis (protocol, payload, clients, ..., target),
-- the one-value keys (name, label, vars, description, repetitions,
-- connect_timeout, interval, coroutine_stack) and the run's verdict keys
-- (thresholds, rate_strict, max_error_rate); the units the seconds and
-- bytes keys take are resolved first.

local type, pairs, ipairs, tostring, tonumber =
      type, pairs, ipairs, tostring, tonumber
local str_find, str_match, str_format = string.find, string.match, string.format
local tbl_concat = table.concat
local str_upper = string.upper

local base = require("arkbench.scenario.check_base")
local matrix = require("arkbench.scenario.matrix")
local msg = require("arkbench.scenario.msg")
local units = require("arkbench.util.units")
local vars = require("arkbench.scenario.vars")

local list_length, describe = msg.list_length, msg.describe
local fail, warn = msg.fail, msg.warn
local CAPS, LIMITS, PROTOCOLS, PROTOCOL_NAMES = base.CAPS, base.LIMITS, base.PROTOCOLS, base.PROTOCOL_NAMES
local is_finite, is_integer, values_of, copy_list = base.is_finite, base.is_integer, base.values_of, base.copy_list
local contains = base.contains
local check_value, check_axis = base.check_value, base.check_axis

local _M = {}

---------------------------------------------------------------------------
-- Rules for keys that hold a value or a list of values (matrix axes).

local function int_range(lo, hi, note)
    return {
        test = function(v) return is_integer(v) and v >= lo and v <= hi end,
        expected = str_format("an integer from %d to %d", lo, hi) .. (note or ""),
    }
end

local function one_of(names)
    local set = {}
    for _, n in ipairs(names) do set[n] = true end
    return {
        test = function(v) return type(v) == "string" and set[v] == true end,
        expected = "one of " .. tbl_concat(names, ", "),
    }
end

local function seconds(min_inclusive)
    return {
        test = function(v)
            return is_finite(v) and v <= 3600 and (v > 0 or (min_inclusive and v == 0))
        end,
        expected = (min_inclusive and "a number >= 0" or "a number > 0")
                   .. " (seconds, at most 3600) " .. units.DURATION_HINT,
    }
end

local function valid_target(v)
    if type(v) ~= "string" then return false end
    local host, port = str_match(v, "^%[([%w:%.%%]+)%]:(%d+)$")
    if not host then host, port = str_match(v, "^([%w%.%-_]+):(%d+)$") end
    port = tonumber(port)
    return host ~= nil and port ~= nil and port >= 1 and port <= 65535
end

local function quoted_models()
    local q = {}
    for i, m in ipairs(CAPS.models) do q[i] = '"' .. m .. ':N"' end
    if #q == 1 then return q[1] end
    return tbl_concat(q, ", ", 1, #q - 1) .. " or " .. q[#q]
end

local RULES = {
    protocol = one_of(PROTOCOL_NAMES),
    framing = one_of(CAPS.framings),
    payload = int_range(LIMITS.payload_min, LIMITS.payload_max, " (bytes) " .. units.SIZE_HINT),
    clients = int_range(LIMITS.clients_min, LIMITS.clients_max),
    window = int_range(LIMITS.window_min, LIMITS.window_max),
    topology = {
        test = function(v) return matrix.topology(v) ~= nil end,
        expected = str_format("%s with N an integer from %d to %d", quoted_models(),
                              LIMITS.threads_min, LIMITS.threads_max),
    },
    execution = one_of(CAPS.executions),
    coroutine_stack = int_range(LIMITS.coroutine_stack_min, LIMITS.coroutine_stack_max,
        str_format(" (bytes per coroutine stack, default %d KiB) %s",
                   LIMITS.coroutine_stack_default / 1024, units.SIZE_HINT)),
    work = int_range(0, LIMITS.work_max),
    warmup = seconds(true),
    duration = seconds(false),
    repetitions = int_range(1, 100),
    -- the lower bound (rate x duration >= clients) is per case:
    -- check_cases.check_rate
    rate = {
        test = function(v) return is_finite(v) and v > 0 and v <= LIMITS.rate_max end,
        expected = str_format("a number > 0 and at most %g (messages per second, all"
                              .. " connections together; at least clients / duration)", LIMITS.rate_max),
    },
    rate_precision = one_of({ "sleep", "spin" }),
    requests_per_connection = int_range(1, LIMITS.requests_per_connection_max,
        " (round trips per connection before it is closed and replaced)"),
    connect_rate = {
        test = function(v) return is_finite(v) and v > 0 and v <= LIMITS.connect_rate_max end,
        expected = str_format("a number > 0 and at most %g (connections opened per second, all"
                              .. " clients together)", LIMITS.connect_rate_max),
    },
    timeout = seconds(false),
    connect_timeout = seconds(false),
    max_error_rate = {
        test = function(v) return is_finite(v) and v >= 0 and v <= 1 end,
        expected = "a number from 0 to 1 (the highest (timed_out + message_errors) / sent a"
                   .. " run may have and not fail)",
    },
    interval = {
        test = function(v) return is_finite(v) and v >= 0.01 and v <= 3600 end,
        expected = "a number from 0.01 to the duration (seconds per interval of the time series) "
                   .. units.DURATION_HINT,
    },
    placement = one_of({ "same-process", "split" }),
    processes = int_range(1, 64, " (processes per side; placement = \"split\" or target)"),
    target = {
        test = valid_target,
        expected = 'a string "host:port" with a port from 1 to 65535'
                   .. ' (an IPv6 host in brackets: "[::1]:7000")',
    },
}

-- The payload rule for the protocols a scenario names: the lowest of their
-- limits (a datagram protocol's is its datagram limit).
local function payload_rule(protocol)
    local low
    for _, name in ipairs(values_of(protocol)) do
        local p = PROTOCOLS[name]
        if p and p.payload_max < LIMITS.payload_max and (not low or p.payload_max < low.payload_max) then
            low = p
        end
    end
    if not low then return RULES.payload end
    local note = low.transport == "datagram"
        and str_format(" (the %s datagram limit)", str_upper(low.name))
        or str_format(" (the limit of protocol %s)", low.name)
    return int_range(LIMITS.payload_min, low.payload_max, note .. " " .. units.SIZE_HINT)
end

-- keys that take a scalar or a list, in validation order (protocol first:
-- the payload limit depends on it)
local AXIS_KEYS = {
    "protocol", "framing", "payload", "clients", "window", "topology",
    "execution", "work", "warmup", "duration", "rate", "rate_precision",
    "requests_per_connection", "connect_rate", "timeout", "placement", "processes", "target",
}

-- thresholds = { "p99_us < 1000", "rate_met" }: rules of
-- arkbench.report.thresholds, checked per case after the run; a string
-- alone is a list of one (as --set thresholds=... gives it)
local function check_thresholds(ctx, v)
    local label = "key 'thresholds'"
    local expected = 'a list of rules such as "p99_us < 1000", "error_rate < 0.001", "rate_met"'
    if type(v) == "string" then v = { v } end
    if type(v) ~= "table" then
        fail(ctx, "thresholds", label .. ": got " .. describe(v) .. "; expected " .. expected)
        return nil
    end
    local n = list_length(v)
    if not n then
        fail(ctx, "thresholds", label .. ": got a table that is not a list; expected " .. expected)
        return nil
    end
    local th = require("arkbench.scenario.rules")
    local out, ok = {}, true
    for i = 1, n do
        local rule, why = th.parse(v[i])
        if rule then
            out[#out + 1] = rule.text
        else
            ok = false
            fail(ctx, "thresholds", label .. " element " .. i .. ": " .. why)
        end
    end
    return ok and out or nil
end

---------------------------------------------------------------------------
-- Units: the keys that take seconds or bytes also take a string with a unit
-- ("250ms", "10s", "16KiB"; arkbench.util.units). They are resolved here,
-- before the rules, so every later step and the results see numbers; a
-- string that is not a unit value is left as it is, for its rule to refuse.

local SECONDS_KEYS = { "warmup", "duration", "timeout", "connect_timeout", "interval" }
local BYTES_KEYS = { "payload", "coroutine_stack" }

local function resolve(v, conv)
    if type(v) == "string" then return conv(v) or v end
    if type(v) ~= "table" then return v end
    local out = {}
    for k, e in pairs(v) do
        out[k] = type(e) == "string" and (conv(e) or e) or e
    end
    return out
end

local function with_units(t)
    local out = {}
    for k, v in pairs(t) do out[k] = v end
    for _, k in ipairs(SECONDS_KEYS) do out[k] = resolve(out[k], units.seconds) end
    for _, k in ipairs(BYTES_KEYS) do out[k] = resolve(out[k], units.bytes) end
    if type(out.udp) == "table" then out.udp = resolve(out.udp, units.bytes) end
    if type(out.h2) == "table" then out.h2 = resolve(out.h2, units.bytes) end
    return out
end

---------------------------------------------------------------------------
-- The keys of a scenario table t into keys (problems into ctx)

-- name, label, vars (its names apart from the known keys) and description
function _M.check_names(ctx, t, keys, known)
    if t.name ~= nil then
        local v = t.name
        if type(v) == "string" and v ~= "" and not str_find(v, "[/\\%c]")
           and v ~= "." and v ~= ".." then
            keys.name = v
        else
            fail(ctx, "name", "key 'name': got " .. describe(v)
                 .. "; expected a non-empty string without '/', '\\' or control characters,"
                 .. " and not '.' or '..' (it names the results folder)")
        end
    end
    if t.label ~= nil then
        local v = t.label
        if type(v) == "string" and str_find(v, "%S") and #v <= 64 and not str_find(v, "%c") then
            keys.label = v
        else
            fail(ctx, "label", "key 'label': got " .. describe(v)
                 .. "; expected a string of 1 to 64 bytes, not only spaces, without control characters"
                 .. " (it names this part's cases in reports)")
        end
    end
    if t.vars ~= nil then keys.vars = vars.check(ctx, t.vars, known) end
    if t.description ~= nil then
        if type(t.description) == "string" then
            keys.description = t.description
        else
            fail(ctx, "description", "key 'description': got " .. describe(t.description)
                 .. "; expected a string")
        end
    end
end

-- key of t, when given: one value by its rule, into keys (a list is
-- refused: the key is not a matrix axis)
local function check_one_value(ctx, t, keys, key)
    local v = t[key]
    if v == nil then return end
    if type(v) == "table" then
        fail(ctx, key, "key '" .. key .. "': got a list; expected " .. RULES[key].expected
             .. ", one value (" .. key .. " is not a matrix axis)")
    elseif check_value(ctx, key, "key '" .. key .. "'", v, RULES[key]) then
        keys[key] = v
    end
end

-- the matrix axes, and repetitions (one value)
function _M.check_axes(ctx, t, keys)
    for _, key in ipairs(AXIS_KEYS) do
        local v = t[key]
        if v ~= nil then
            local rule = RULES[key]
            if key == "payload" and t.protocol ~= nil then rule = payload_rule(t.protocol) end
            if check_axis(ctx, key, v, rule) then keys[key] = copy_list(v) end
        end
    end

    check_one_value(ctx, t, keys, "repetitions")
end

-- connect_timeout, interval and coroutine_stack: one value each
function _M.check_single(ctx, t, keys)
    for _, key in ipairs({ "connect_timeout", "interval", "coroutine_stack" }) do
        check_one_value(ctx, t, keys, key)
    end
end

-- the run's verdict: thresholds, rate_strict, strict, max_error_rate
function _M.check_verdict(ctx, t, keys)
    if t.thresholds ~= nil then keys.thresholds = check_thresholds(ctx, t.thresholds) end
    if t.strict ~= nil then
        if type(t.strict) ~= "boolean" then
            fail(ctx, "strict", "key 'strict': got " .. describe(t.strict)
                 .. "; expected a boolean (false: errors, statuses outside the success set and a"
                 .. " missed rate are reported, and the thresholds alone decide the exit code;"
                 .. " strict is not a matrix axis)")
        else
            keys.strict = t.strict
        end
    end
    if t.rate_strict ~= nil then
        if type(t.rate_strict) ~= "boolean" then
            fail(ctx, "rate_strict", "key 'rate_strict': got " .. describe(t.rate_strict)
                 .. "; expected a boolean (false: a run that misses its rate only warns;"
                 .. " rate_strict is not a matrix axis)")
        else
            keys.rate_strict = t.rate_strict
        end
    end
    if t.max_error_rate ~= nil then
        local v = t.max_error_rate
        if type(v) == "table" then
            fail(ctx, "max_error_rate", "key 'max_error_rate': got a list; expected "
                 .. RULES.max_error_rate.expected .. ", one value (max_error_rate is not a matrix axis)")
        elseif check_value(ctx, "max_error_rate", "key 'max_error_rate'", v, RULES.max_error_rate) then
            keys.max_error_rate = v
        end
    end
end

-- coroutine_stack where no case runs coroutines: a warning
function _M.cross_check(ctx, keys)
    if keys.coroutine_stack ~= nil and not contains(keys.execution, "coroutine") then
        warn(ctx, "coroutine_stack", "key 'coroutine_stack': used only when execution ="
             .. " \"coroutine\", and no case has it")
    end
    if keys.rate_precision ~= nil and keys.rate == nil then
        warn(ctx, "rate_precision", "key 'rate_precision': used only with a rate (open loop),"
             .. " and no case has one")
    end
end

_M.RULES = RULES
_M.with_units = with_units

return _M
