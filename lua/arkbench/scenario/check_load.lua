-- arkbench.scenario.check_load: the load key (a list of {clients=,
-- window=} pairs, or clients and window as axes, never both) and the
-- bound on what a case holds in flight, clients x window x payload.

local type, ipairs, tostring = type, ipairs, tostring
local str_format = string.format
local tbl_concat = table.concat

local base = require("arkbench.scenario.check_base")
local msg = require("arkbench.scenario.msg")
local values = require("arkbench.scenario.check_values")

local list_length, describe, unknown_key = msg.list_length, msg.describe, msg.unknown_key
local where, fail = msg.where, msg.fail
local sorted_keys = msg.stray_keys
local RULES = values.RULES
local check_value, max_of, binary_size = base.check_value, base.max_of, base.binary_size
local INFLIGHT_MAX = base.LIMITS.inflight_max

local _M = {}

local LOAD_KEYS = { "clients", "window" }

local function check_load(ctx, v)
    local label = "key 'load'"
    local expected = "a non-empty list of {clients=, window=} pairs"
    if ctx.origin.load then expected = expected .. " (on the command line: load=1x1,16x16)" end
    if type(v) ~= "table" then
        fail(ctx, "load", label .. ": got " .. describe(v) .. "; expected " .. expected)
        return nil
    end
    -- a single pair may be written without the outer list
    if v.clients ~= nil or v.window ~= nil then v = { v } end
    local n = list_length(v)
    if not n or n == 0 then
        fail(ctx, "load", label .. ": got " .. (n and "an empty list" or "a table that is not a list")
             .. "; expected " .. expected)
        return nil
    end
    local out, ok, seen = {}, true, {}
    for i = 1, n do
        local p, el = v[i], label .. " element " .. i
        if type(p) ~= "table" then
            fail(ctx, "load", el .. ": got " .. describe(p) .. "; expected a table {clients=, window=}")
            ok = false
        else
            for _, k in ipairs(sorted_keys(p, LOAD_KEYS)) do
                local what = type(k) == "string" and unknown_key(k, LOAD_KEYS)
                    or ("unexpected list entry [" .. tostring(k) .. "]; expected {clients=, window=}")
                fail(ctx, "load", el .. ": " .. what)
                ok = false
            end
            local c = p.clients == nil and 1 or p.clients
            local w = p.window == nil and 1 or p.window
            local good = check_value(ctx, "load", el .. ": key 'clients'", c, RULES.clients)
            good = check_value(ctx, "load", el .. ": key 'window'", w, RULES.window) and good
            if good then
                local id = c .. "x" .. w
                if seen[id] then
                    fail(ctx, "load", str_format("%s: got clients=%d, window=%d again (element %d);"
                         .. " expected distinct pairs, one case each", el, c, w, seen[id]))
                    ok = false
                else
                    seen[id] = i
                end
            end
            ok = ok and good
            out[i] = { clients = c, window = w }
        end
    end
    return ok and out or nil
end

-- load, and given with clients or window: refused
function _M.check(ctx, t, keys)
    keys.load = check_load(ctx, t.load)
    local both = {}
    for _, k in ipairs(LOAD_KEYS) do
        if t[k] ~= nil then both[#both + 1] = "key '" .. k .. "' (" .. where(ctx, k) .. ")" end
    end
    if #both > 0 then
        fail(ctx, "load", "key 'load': given together with " .. tbl_concat(both, " and ")
             .. "; expected either load pairs or clients/window, not both")
    end
end

-- Memory in flight, worst case of the matrix: false (and a problem in ctx)
-- when over the bound.
function _M.check_inflight(ctx, t, keys)
    -- memory in flight, worst case of the matrix
    local c, w
    if keys.load then
        for _, p in ipairs(keys.load) do
            if not c or p.clients * p.window > c * w then c, w = p.clients, p.window end
        end
    else
        c, w = max_of(keys.clients), max_of(keys.window)
    end
    local p = max_of(keys.payload)
    if c * w * p > INFLIGHT_MAX then
        local anchor
        for _, k in ipairs({ "payload", "load", "clients", "window" }) do
            if ctx.origin[k] then anchor = k break end
        end
        if not anchor then
            for _, k in ipairs({ "payload", "load", "clients", "window" }) do
                if t[k] ~= nil then anchor = k break end
            end
        end
        fail(ctx, anchor, str_format("key '%s': clients x window x payload = %d x %d x %d = %d"
             .. " bytes in flight in one case; expected at most %d (%s)",
             anchor, c, w, p, c * w * p, INFLIGHT_MAX, binary_size(INFLIGHT_MAX)))
        return false
    end
    return true
end

_M.LOAD_KEYS = LOAD_KEYS

return _M
