-- arkbench.scenario.check_hooks: the Lua driver's keys (client, server,
-- message, expect, tag; docs/lua-api.md): each one's shape, what
-- execution = "lua" needs of them together, and the hooks given where no
-- case runs them.

local type, ipairs = type, ipairs
local str_find, str_format = string.find, string.format

local base = require("arkbench.scenario.check_base")
local msg = require("arkbench.scenario.msg")

local describe = msg.describe
local where, fail, warn = msg.where, msg.fail, msg.warn
local is_integer, contains = base.is_integer, base.contains
local TAG_NAME_MAX = base.TAG_NAME_MAX

local _M = {}

local HOOK_KEYS = { "client", "server", "message", "expect", "tag" }

local function check_hooks(ctx, t, hooks)
    local function want(key, ok, expected)
        local v = t[key]
        if v == nil then return end
        if ok(v) then
            hooks[key] = v
        else
            fail(ctx, key, "key '" .. key .. "': got " .. describe(v) .. "; expected " .. expected)
        end
    end
    local function is_function(v) return type(v) == "function" end
    want("client", is_function, "a function(conn)")
    want("server", is_function, "a function(conn)")
    want("message", function(v)
        return type(v) == "function" or (type(v) == "string" and v ~= "")
    end, "a non-empty string or a function(i)")
    want("expect", function(v)
        return type(v) == "function" or v == "line" or (is_integer(v) and v > 0)
    end, 'a function(buf), a positive integer (bytes) or "line"')
    -- tag = "get": the tag of every message of a constant message
    -- (docs/lua-api.md "Tags"); which message it needs is check_lua's
    want("tag", function(v)
        return type(v) == "string" and #v >= 1 and #v <= TAG_NAME_MAX and not str_find(v, "%c")
    end, str_format("a tag name: a string of 1 to %d bytes without control characters",
        TAG_NAME_MAX))
    if t.client ~= nil and t.message ~= nil then
        local at = where(ctx, "client")
        fail(ctx, "message", "key 'message': given together with key 'client' (" .. at
             .. "); expected either client = function(conn) or message/expect, not both")
    end
end

-- execution = "lua" needs a driver: client = function(conn), or a message
-- (a function message needs an expect to know where a reply ends).
-- docs/lua-api.md is the reference.
local function check_lua(ctx, spec, window_key)
    local h = spec.hooks
    if h.client == nil and h.message == nil then
        fail(ctx, "execution", "key 'execution': execution = \"lua\" needs client ="
             .. " function(conn) or message (with expect); see docs/lua-api.md")
    end
    if type(h.message) == "function" and h.expect == nil then
        fail(ctx, "message", "key 'message': message is a function, so expect is needed (a"
             .. " length, \"line\" or function(buf)); see docs/lua-api.md")
    end
    if h.tag ~= nil and type(h.message) ~= "string" then
        local why
        if h.client ~= nil then
            why = "client = function(conn) tags each round trip itself: conn:call(request, expect, tag)"
        elseif type(h.message) == "function" then
            why = "a function message returns its tag as its second value: return bytes, tag"
        else
            why = "no message is given"
        end
        fail(ctx, "tag", "key 'tag': given without a string message (" .. why .. "); expected"
             .. " message = the request's bytes, each of which then carries the tag; see"
             .. " docs/lua-api.md")
    end
    -- the server process of a split case is `arkbench serve`, the
    -- built-in echo: it has no Lua state to run server in (it answered
    -- with the echo, and a client of another protocol timed out)
    if h.server ~= nil and contains(spec.keys.placement, "split") then
        fail(ctx, "server", "key 'server': given with placement = \"split\" (" .. where(ctx, "placement")
             .. "); the split server process is arkbench serve's built-in echo and does not run"
             .. " a server function; expected placement = \"same-process\"")
    end
    if h.client ~= nil and window_key then
        warn(ctx, window_key, "key '" .. window_key .. "': window is not used by client ="
             .. " function(conn) (each conn:call is one round trip at a time)")
    end
end

-- a tag with request mode: refused (each request entry has its own)
function _M.check_request_tag(ctx, spec)
    local keys = spec.keys
    if keys.request and spec.hooks.tag ~= nil then
        fail(ctx, "tag", "key 'tag': given with key 'request' (" .. where(ctx, "request")
             .. "); expected a tag in each request entry instead (request = { path = \"/\","
             .. " tag = \"home\" }; docs/protocols.md)")
    end
end

-- execution = "lua": check_lua; else hooks given are unused (window_key:
-- the key of a window > 1, or false)
function _M.cross_check(ctx, spec, window_key)
    local keys = spec.keys
    if contains(keys.execution, "lua") then
        check_lua(ctx, spec, window_key)
    end

    if not contains(keys.execution, "lua") then
        for _, k in ipairs(HOOK_KEYS) do
            if spec.hooks[k] ~= nil then
                warn(ctx, k, "key '" .. k .. "': used only when execution = \"lua\", and no case has it")
                break
            end
        end
    end
end

_M.check = check_hooks
_M.HOOK_KEYS = HOOK_KEYS

return _M
