-- arkbench.scenario.check_base: what the scenario checks share (the
-- arkbench.scenario.check_* modules): the capability table as they read
-- it, the value helpers, and the check of one value or one matrix axis
-- against a rule ({test =, expected =}).

local type, ipairs, tostring = type, ipairs, tostring
local str_format = string.format
local tbl_concat = table.concat
local math_floor, math_huge = math.floor, math.huge

local core = require("arkbench.core")
local msg = require("arkbench.scenario.msg")

local list_length, describe = msg.list_length, msg.describe
local fail = msg.fail

local _M = {}

-- the capability table (core/proto/caps.h), read once
local CAPS = core.capabilities()
local PROTOCOLS, PROTOCOL_NAMES, TLS_PROTOCOLS, TLS_NAMES = {}, {}, {}, {}
for _, p in ipairs(CAPS.protocols) do
    PROTOCOLS[p.name] = p
    PROTOCOL_NAMES[#PROTOCOL_NAMES + 1] = p.name
    if p.tls then
        TLS_PROTOCOLS[p.name] = true
        TLS_NAMES[#TLS_NAMES + 1] = p.name
    end
end
_M.CAPS, _M.LIMITS = CAPS, CAPS.limits
_M.PROTOCOLS, _M.PROTOCOL_NAMES = PROTOCOLS, PROTOCOL_NAMES
_M.TLS_PROTOCOLS, _M.TLS_NAMES = TLS_PROTOCOLS, TLS_NAMES
-- a tag name (core/engine/tags.h AB_TAG_NAME_MAX)
_M.TAG_NAME_MAX = 48

---------------------------------------------------------------------------
-- small helpers

local function is_finite(v)
    return type(v) == "number" and v == v and v > -math_huge and v < math_huge
end

local function is_integer(v)
    return is_finite(v) and v == math_floor(v)
end

local function values_of(v)
    if type(v) == "table" then return v end
    return { v }
end

local function contains(v, x)
    for _, e in ipairs(values_of(v)) do
        if e == x then return true end
    end
    return false
end

local function copy_list(v)
    if type(v) ~= "table" then return v end
    local out = {}
    for i, e in ipairs(v) do out[i] = e end
    return out
end

local function max_of(v)
    local m
    for _, x in ipairs(values_of(v)) do
        if m == nil or x > m then m = x end
    end
    return m
end

-- "a, b or c"
local function or_list(names)
    if #names < 2 then return names[1] or "" end
    return tbl_concat(names, ", ", 1, #names - 1) .. " or " .. names[#names]
end

-- 1073741824 -> "1 GiB"
local function binary_size(n)
    for _, u in ipairs({ { 2^30, "GiB" }, { 2^20, "MiB" }, { 2^10, "KiB" } }) do
        if n >= u[1] and n % u[1] == 0 then return str_format("%d %s", n / u[1], u[2]) end
    end
    return str_format("%d bytes", n)
end

---------------------------------------------------------------------------
-- one value, or a matrix axis, against a rule

local function check_value(ctx, key, label, v, rule)
    if rule.test(v) then return true end
    fail(ctx, key, label .. ": got " .. describe(v) .. "; expected " .. rule.expected)
    return false
end

-- a scalar, or a non-empty list of distinct values, each passing rule
local function check_axis(ctx, key, v, rule)
    local label = "key '" .. key .. "'"
    if type(v) ~= "table" then return check_value(ctx, key, label, v, rule) end
    local n = list_length(v)
    if not n or n == 0 then
        fail(ctx, key, label .. ": got " .. (n and "an empty list" or "a table that is not a list")
             .. "; expected " .. rule.expected .. ", or a non-empty list of them")
        return false
    end
    local ok, seen = true, {}
    for i = 1, n do
        local e, el = v[i], label .. " element " .. i
        if not check_value(ctx, key, el, e, rule) then
            ok = false
        else
            local id = type(e) .. ":" .. tostring(e)
            if seen[id] then
                fail(ctx, key, el .. ": got " .. describe(e) .. " again (element " .. seen[id]
                     .. "); expected distinct values, one case each")
                ok = false
            else
                seen[id] = i
            end
        end
    end
    return ok
end

_M.is_finite, _M.is_integer, _M.values_of, _M.contains = is_finite, is_integer, values_of, contains
_M.copy_list, _M.max_of, _M.or_list, _M.binary_size = copy_list, max_of, or_list, binary_size
_M.check_value, _M.check_axis = check_value, check_axis

return _M
