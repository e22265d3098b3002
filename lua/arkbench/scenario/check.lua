-- arkbench.scenario.check: the rules a scenario table must follow. Each key
-- is checked on its own (a value or a list of values for a matrix axis; the
-- shapes of load, tls, udp and the hooks), then the resolved keys are
-- checked against each other. Problems go into a validation context from
-- arkbench.scenario.msg; arkbench.scenario.load reports them.
--
-- What is allowed -- protocols, executions and which protocols each runs,
-- framings, topology models, limits, whether open-loop rate is built --
-- comes from the capability table in C (core/proto/caps.c) through
-- core.capabilities(); the words users read are in the rules' modules.
--
-- The rules are grouped by key, one module each (arkbench.scenario.*):
-- check_values (the value and axis keys, units, the verdict keys),
-- check_load (load and the bound in flight), check_net (tls, bind, udp),
-- request (request mode), check_hooks (the Lua driver's keys) and
-- check_cases (the checks that look at the matrix); what they share is
-- check_base. This module holds the known keys and the order of the
-- checks.

local type, pairs, ipairs, tostring = type, pairs, ipairs, tostring
local tbl_sort = table.sort

local base = require("arkbench.scenario.check_base")
local cases = require("arkbench.scenario.check_cases")
local hooks_check = require("arkbench.scenario.check_hooks")
local load = require("arkbench.scenario.check_load")
local msg = require("arkbench.scenario.msg")
local net = require("arkbench.scenario.check_net")
local request = require("arkbench.scenario.request")
local values = require("arkbench.scenario.check_values")

local describe, unknown_key = msg.describe, msg.unknown_key
local fail = msg.fail

local _M = {}

-- Every key a scenario table may hold, in the order they are documented
-- (and listed in "known keys: ...").
_M.KEYS = {
    "name", "label", "vars", "description", "protocol", "framing", "payload", "clients",
    "window", "load", "topology", "execution", "coroutine_stack", "work", "warmup", "duration",
    "repetitions", "rate", "rate_precision", "requests_per_connection", "connect_rate", "interval", "timeout",
    "connect_timeout", "placement", "processes", "target", "bind", "tls", "udp", "h2",
    "request", "client", "server", "message", "expect", "tag",
    "thresholds", "max_error_rate", "rate_strict", "strict",
}
local KNOWN = {}
for _, k in ipairs(_M.KEYS) do KNOWN[k] = true end

---------------------------------------------------------------------------
-- Validation of the whole table -> keys, hooks (errors collected in ctx)

local function validate(ctx, t)
    local keys, hooks = {}, {}
    t = values.with_units(t)

    -- unknown keys and stray list entries; sorted so messages are stable
    local stray = {}
    for k in pairs(t) do
        if type(k) ~= "string" or not KNOWN[k] then stray[#stray + 1] = k end
    end
    tbl_sort(stray, function(a, b) return tostring(a) < tostring(b) end)
    for _, k in ipairs(stray) do
        if type(k) == "string" then
            fail(ctx, k, unknown_key(k, _M.KEYS))
        else
            local hint = type(t[k]) == "table"
                and " (a list of parts takes no keys of its own: give each part its keys,"
                    .. " name included)" or ""
            fail(ctx, nil, "unexpected list entry [" .. tostring(k) .. "]: got "
                 .. describe(t[k]) .. "; expected named keys, such as payload = 64" .. hint)
        end
    end

    values.check_names(ctx, t, keys, KNOWN)
    values.check_axes(ctx, t, keys)
    if t.load ~= nil then load.check(ctx, t, keys) end
    values.check_single(ctx, t, keys)
    net.check(ctx, t, keys)
    if t.request ~= nil then
        keys.request = request.check(ctx, t.request)
        -- the function form stays a hook: the worker calls it (request.lua)
        if keys.request == request.FUNCTION then hooks.request = t.request end
    end
    hooks_check.check(ctx, t, hooks)
    values.check_verdict(ctx, t, keys)
    return keys, hooks
end

-- Checks across keys, on the resolved keys; errors and warnings into ctx.
local function cross_check(ctx, t, spec)
    local keys = spec.keys
    if not load.check_inflight(ctx, t, keys) then return end
    net.check_bind_family(ctx, keys)
    if not cases.check_keys(ctx, spec) then return end
    local window_key, wide = cases.check_cases(ctx, t, spec)

    if keys.request then request.cross_check(ctx, keys) end
    hooks_check.check_request_tag(ctx, spec)
    net.cross_check(ctx, keys)
    values.cross_check(ctx, keys)
    hooks_check.cross_check(ctx, spec, wide and window_key)
end

_M.KNOWN = KNOWN
-- the keys whose value is a table of known sub-keys (--set KEY.SUB=value)
_M.SUB_KEYS = { tls = net.TLS_KEYS, udp = net.UDP_KEYS, h2 = net.H2_KEYS,
                request = { "method", "path", "body" } }
_M.LOAD_KEYS = load.LOAD_KEYS
_M.relative_to_file = net.relative_to_file
_M.is_finite = base.is_finite
_M.values_of = base.values_of
_M.validate = validate
_M.cross_check = cross_check

return _M
