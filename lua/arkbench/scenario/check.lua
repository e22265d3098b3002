-- arkbench.scenario.check: the rules a scenario table must follow. Each key
-- is checked on its own (a value or a list of values for a matrix axis; the
-- shapes of load, tls, udp and the hooks), then the resolved keys are
-- checked against each other. Problems go into a validation context from
-- arkbench.scenario.msg; arkbench.scenario.load reports them.
--
-- What is allowed -- protocols, executions and which protocols each runs,
-- framings, topology models, limits, whether open-loop rate is built --
-- comes from the capability table in C (core/proto/caps.c) through
-- core.capabilities(); the words users read are here.

local type, pairs, ipairs, tostring, tonumber =
      type, pairs, ipairs, tostring, tonumber
local str_find, str_match, str_format = string.find, string.match, string.format
local str_gmatch = string.gmatch
local tbl_concat, tbl_sort = table.concat, table.sort
local math_floor, math_huge = math.floor, math.huge
local str_upper = string.upper

local core = require("arkbench.core")
local matrix = require("arkbench.scenario.matrix")
local msg = require("arkbench.scenario.msg")
local request = require("arkbench.scenario.request")
local vars = require("arkbench.scenario.vars")
local units = require("arkbench.util.units")

local list_length, describe, unknown_key = msg.list_length, msg.describe, msg.unknown_key
local where, fail, warn = msg.where, msg.fail, msg.warn

local _M = {}

-- Every key a scenario table may hold, in the order they are documented
-- (and listed in "known keys: ...").
_M.KEYS = {
    "name", "label", "vars", "description", "protocol", "framing", "payload", "clients",
    "window", "load", "topology", "execution", "coroutine_stack", "work", "warmup", "duration",
    "repetitions", "rate", "requests_per_connection", "connect_rate", "interval", "timeout",
    "connect_timeout", "placement", "processes", "target", "bind", "tls", "udp",
    "request", "client", "server", "message", "expect", "tag",
    "thresholds", "max_error_rate", "rate_strict",
}
local KNOWN = {}
for _, k in ipairs(_M.KEYS) do KNOWN[k] = true end

-- the capability table (core/proto/caps.h), read once
local CAPS = core.capabilities()
local LIMITS = CAPS.limits
-- the longest time series (core/engine/engine.h AB_MAX_INTERVALS)
local MAX_INTERVALS = 2000
local PROTOCOLS, PROTOCOL_NAMES, TLS_PROTOCOLS, TLS_NAMES = {}, {}, {}, {}
for _, p in ipairs(CAPS.protocols) do
    PROTOCOLS[p.name] = p
    PROTOCOL_NAMES[#PROTOCOL_NAMES + 1] = p.name
    if p.tls then
        TLS_PROTOCOLS[p.name] = true
        TLS_NAMES[#TLS_NAMES + 1] = p.name
    end
end
local INFLIGHT_MAX = LIMITS.inflight_max
-- ca: a PEM file of the certificate(s) to trust, for target = servers
-- verify = false: the client does not check the server's certificate
local TLS_KEYS = { "version", "ciphers", "sni", "alpn", "resume", "ca", "verify" }
-- udp = { send_buffer =, recv_buffer =, server_recv_buffer = } in bytes:
-- the socket buffers to request (defaults 64 KiB send, 4 MiB receive);
-- server_recv_buffer sets the server socket's alone (a tiny one forces loss)
local UDP_KEYS = { "send_buffer", "recv_buffer", "server_recv_buffer" }
local LOAD_KEYS = { "clients", "window" }
local HOOK_KEYS = { "client", "server", "message", "expect", "tag" }
-- a tag name (core/engine/tags.h AB_TAG_NAME_MAX)
local TAG_NAME_MAX = 48

---------------------------------------------------------------------------
-- small helpers

local function is_finite(v)
    return type(v) == "number" and v == v and v > -math_huge and v < math_huge
end

local function is_integer(v)
    return is_finite(v) and v == math_floor(v)
end

local sorted_keys = msg.stray_keys

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
    rate = {
        test = function(v) return is_finite(v) and v > 0 end,
        expected = "a number > 0 (messages per second, all connections together)",
    },
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
    "execution", "work", "warmup", "duration", "rate", "requests_per_connection",
    "connect_rate", "timeout", "placement", "processes", "target",
}

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

local function copy_list(v)
    if type(v) ~= "table" then return v end
    local out = {}
    for i, e in ipairs(v) do out[i] = e end
    return out
end

---------------------------------------------------------------------------
-- Keys with their own shapes

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

-- nil when s can be one ALPN protocol name, else what it must be
local function alpn_name_problem(s)
    if s == "" then return "a non-empty string" end
    if #s > 255 then return "a name of 1 to 255 bytes (got " .. #s .. ")" end
    if str_find(s, ",", 1, true) then return "one name without commas (list names apart)" end
    if str_find(s, "%z") then return "a name without NUL bytes" end
    return nil
end

-- A file path key (tls.ca, the only one): a relative path in a file is
-- from the scenario file's folder, as an include would be; one given with
-- --set stays relative to the current directory (the shell's).
function _M.relative_to_file(ctx, subkey, p)
    if p:sub(1, 1) == "/" or (ctx.set_subs and ctx.set_subs[subkey])
       or type(ctx.path) ~= "string" then
        return p
    end
    local dir = ctx.path:match("^(.*)/[^/]*$")
    if not dir then return p end            -- the file is in the current directory
    if dir == "" then dir = "/" end
    return (dir:gsub("/$", "")) .. "/" .. p
end

local function check_tls(ctx, v)
    local label = "key 'tls'"
    if type(v) ~= "table" then
        local expected = "a table with keys " .. tbl_concat(TLS_KEYS, ", ")
        if ctx.origin.tls then
            expected = expected .. " (on the command line: --set tls.ca=..., one key at a time)"
        end
        fail(ctx, "tls", label .. ": got " .. describe(v) .. "; expected " .. expected)
        return nil
    end
    local ok, out = true, {}
    for _, k in ipairs(sorted_keys(v, TLS_KEYS)) do
        if type(k) ~= "string" then
            fail(ctx, "tls", label .. ": unexpected list entry [" .. tostring(k)
                 .. "]; expected a table with keys " .. tbl_concat(TLS_KEYS, ", "))
        else
            fail(ctx, "tls", label .. ": " .. unknown_key(k, TLS_KEYS))
        end
        ok = false
    end
    for _, k in ipairs(TLS_KEYS) do
        local x = v[k]
        local kl = label .. ": key '" .. k .. "'"
        local expected
        if x == nil then
            -- absent: the worker's default
        elseif k == "version" then
            if x ~= "1.2" and x ~= "1.3" and x ~= "1.2-1.3" then
                expected = '"1.2", "1.3" or "1.2-1.3" (either)'
            end
        elseif k == "ciphers" or k == "sni" or k == "ca" then
            if type(x) ~= "string" or x == "" then expected = "a non-empty string"
            elseif str_find(x, "%z") then expected = "a string without NUL bytes"
            elseif k == "sni" and #x > 253 then expected = "a host name of at most 253 bytes"
            end
        elseif k == "resume" or k == "verify" then
            if type(x) ~= "boolean" then expected = "a boolean" end
        elseif k == "alpn" then
            local n = type(x) == "table" and list_length(x)
            if type(x) == "table" and n and n > 0 then
                for i = 1, n do
                    local why = type(x[i]) ~= "string" and "a non-empty string"
                                or alpn_name_problem(x[i])
                    if why then
                        fail(ctx, "tls", kl .. " element " .. i .. ": got " .. describe(x[i])
                             .. "; expected " .. why)
                        ok = false
                    end
                end
            elseif type(x) ~= "string" or x == "" then
                expected = "a protocol name string or a non-empty list of them"
            else
                -- a string is a comma-separated list, as the worker passes it
                for name in str_gmatch(x .. ",", "([^,]*),") do
                    local why = alpn_name_problem(name)
                    if why then
                        expected = "comma-separated protocol names, each " .. why
                        break
                    end
                end
            end
        end
        if expected then
            fail(ctx, "tls", kl .. ": got " .. describe(x) .. "; expected " .. expected)
            ok = false
        end
        out[k] = copy_list(x)
    end
    -- the cipher list through OpenSSL's own parser, for the version it is for
    -- and one handshake in memory with the certificate a run uses, so that
    -- a list left empty at the security level fails here, not in every run
    if ok and type(out.ciphers) == "string" then
        local core = require("arkbench.core")
        local good, why = core.tls_check({ version = out.version, ciphers = out.ciphers })
        if not good then
            fail(ctx, "tls", label .. ": key 'ciphers': got " .. describe(out.ciphers) .. "; "
                 .. (tostring(why):gsub("^tls ciphers \"[^\n]*\": ", "OpenSSL refuses it: ")
                     :gsub("^the ", "with it the ")))
            ok = false
        end
    end
    if ok and type(out.ca) == "string" then
        local core = require("arkbench.core")
        local given = out.ca
        out.ca = _M.relative_to_file(ctx, "tls.ca", given)
        local good, why = core.tls_check({ ca = out.ca })
        if not good then
            fail(ctx, "tls", label .. ": key 'ca': got " .. describe(given)
                 .. (out.ca ~= given and (" (tried " .. out.ca .. ": a relative path is"
                     .. " from the scenario's folder)") or "") .. "; expected a"
                 .. " readable PEM file of certificates, but it "
                 .. (tostring(why):gsub("^tls ca \"[^\n]*\": ", "")))
            ok = false
        end
    end
    return ok and out or nil
end

-- bind: the client source addresses, one IP address or a list of them
-- (docs/scenarios.md); one family
local function is_ip(a)
    if type(a) ~= "string" then return nil end
    local o = { a:match("^(%d+)%.(%d+)%.(%d+)%.(%d+)$") }
    if #o == 4 then
        for _, x in ipairs(o) do
            if tonumber(x) > 255 then return nil end
        end
        return "v4"
    end
    if a:find(":", 1, true) and a:match("^[%x:%.]+$") then return "v6" end
    return nil
end

local function check_bind(ctx, v)
    local expected = 'an IP address ("127.0.0.2") or a non-empty list of them, of one family'
    local list = type(v) == "table" and v or { v }
    local n = list_length(list)
    if not n or n == 0 then
        fail(ctx, "bind", "key 'bind': got " .. describe(v) .. "; expected " .. expected)
        return nil
    end
    local fam
    for i = 1, n do
        local f = is_ip(list[i])
        local label = type(v) == "table" and ("key 'bind' element " .. i) or "key 'bind'"
        if not f then
            fail(ctx, "bind", label .. ": got " .. describe(list[i]) .. "; expected " .. expected)
            return nil
        elseif fam and f ~= fam then
            fail(ctx, "bind", label .. ": got " .. describe(list[i]) .. ", IP" .. f
                 .. " after IP" .. fam .. " addresses; expected " .. expected)
            return nil
        end
        fam = f
    end
    return copy_list(list)
end

local function check_udp(ctx, v)
    local label = "key 'udp'"
    if type(v) ~= "table" then
        local expected = "a table with keys " .. tbl_concat(UDP_KEYS, ", ")
        if ctx.origin.udp then
            expected = expected .. " (on the command line: --set udp.send_buffer=..., one key at a time)"
        end
        fail(ctx, "udp", label .. ": got " .. describe(v) .. "; expected " .. expected)
        return nil
    end
    local ok, out = true, {}
    for _, k in ipairs(sorted_keys(v, UDP_KEYS)) do
        fail(ctx, "udp", label .. ": " .. (type(k) == "string" and unknown_key(k, UDP_KEYS)
             or ("unexpected list entry [" .. tostring(k) .. "]")))
        ok = false
    end
    for _, k in ipairs(UDP_KEYS) do
        local x = v[k]
        if x ~= nil then
            if type(x) ~= "number" or x ~= math_floor(x) or x < 1 or x > 1073741824 then
                fail(ctx, "udp", label .. ": key '" .. k .. "': got " .. describe(x)
                     .. "; expected an integer from 1 to 1073741824 (bytes) " .. units.SIZE_HINT)
                ok = false
            end
            out[k] = x
        end
    end
    return ok and out or nil
end

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
    return out
end

---------------------------------------------------------------------------
-- Validation of the whole table -> keys, hooks (errors collected in ctx)

local function validate(ctx, t)
    local keys, hooks = {}, {}
    t = with_units(t)

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
            fail(ctx, nil, "unexpected list entry [" .. tostring(k) .. "]: got "
                 .. describe(t[k]) .. "; expected named keys, such as payload = 64")
        end
    end

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
    if t.vars ~= nil then keys.vars = vars.check(ctx, t.vars, KNOWN) end
    if t.description ~= nil then
        if type(t.description) == "string" then
            keys.description = t.description
        else
            fail(ctx, "description", "key 'description': got " .. describe(t.description)
                 .. "; expected a string")
        end
    end

    for _, key in ipairs(AXIS_KEYS) do
        local v = t[key]
        if v ~= nil then
            local rule = RULES[key]
            if key == "payload" and t.protocol ~= nil then rule = payload_rule(t.protocol) end
            if check_axis(ctx, key, v, rule) then keys[key] = copy_list(v) end
        end
    end

    if t.repetitions ~= nil then
        local v = t.repetitions
        if type(v) == "table" then
            fail(ctx, "repetitions", "key 'repetitions': got a list; expected "
                 .. RULES.repetitions.expected .. ", one value (repetitions is not a matrix axis)")
        elseif check_value(ctx, "repetitions", "key 'repetitions'", v, RULES.repetitions) then
            keys.repetitions = v
        end
    end

    if t.load ~= nil then
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

    if t.connect_timeout ~= nil then
        local v = t.connect_timeout
        if type(v) == "table" then
            fail(ctx, "connect_timeout", "key 'connect_timeout': got a list; expected "
                 .. RULES.connect_timeout.expected .. ", one value (connect_timeout is not a matrix"
                 .. " axis)")
        elseif check_value(ctx, "connect_timeout", "key 'connect_timeout'", v, RULES.connect_timeout) then
            keys.connect_timeout = v
        end
    end

    if t.interval ~= nil then
        local v = t.interval
        if type(v) == "table" then
            fail(ctx, "interval", "key 'interval': got a list; expected "
                 .. RULES.interval.expected .. ", one value (interval is not a matrix axis)")
        elseif check_value(ctx, "interval", "key 'interval'", v, RULES.interval) then
            keys.interval = v
        end
    end

    if t.coroutine_stack ~= nil then
        local v = t.coroutine_stack
        if type(v) == "table" then
            fail(ctx, "coroutine_stack", "key 'coroutine_stack': got a list; expected "
                 .. RULES.coroutine_stack.expected .. ", one value (coroutine_stack is not a matrix axis)")
        elseif check_value(ctx, "coroutine_stack", "key 'coroutine_stack'", v, RULES.coroutine_stack) then
            keys.coroutine_stack = v
        end
    end

    if t.bind ~= nil then keys.bind = check_bind(ctx, t.bind) end
    if t.tls ~= nil then keys.tls = check_tls(ctx, t.tls) end
    if t.udp ~= nil then keys.udp = check_udp(ctx, t.udp) end
    if t.request ~= nil then
        keys.request = request.check(ctx, t.request)
        -- the function form stays a hook: the worker calls it (request.lua)
        if keys.request == request.FUNCTION then hooks.request = t.request end
    end
    check_hooks(ctx, t, hooks)
    if t.thresholds ~= nil then keys.thresholds = check_thresholds(ctx, t.thresholds) end
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
    return keys, hooks
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
            fail(ctx, key, str_format('key \'%s\': execution = "%s" runs over protocol%s %s,'
                 .. ' not %s; expected execution %s for protocol %s', key, ex,
                 #runs == 1 and "" or "s", tbl_concat(runs, ", "), pr,
                 or_list(row.executions), pr))
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

-- Checks across keys, on the resolved keys; errors and warnings into ctx.
local function cross_check(ctx, t, spec)
    local keys = spec.keys

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
        return
    end

    -- bind: the source addresses are of the destination's family (a
    -- socket bound to ::1 cannot connect to 127.0.0.1: EINVAL at connect)
    if keys.bind ~= nil then
        local fam = is_ip(keys.bind[1])
        local dests = keys.target ~= nil and values_of(keys.target) or { "127.0.0.1:0" }
        for _, d in ipairs(dests) do
            local host = tostring(d):match("^%[(.*)%]:%d+$") or tostring(d):match("^(.*):%d+$")
            local dfam = host and is_ip(host)
            if dfam and dfam ~= fam then
                fail(ctx, "bind", str_format("key 'bind': got IP%s addresses, but %s is IP%s;"
                     .. " expected source addresses of the destination's family",
                     fam, keys.target ~= nil and ("target " .. d)
                         or "arkbench's own server (127.0.0.1)", dfam))
                break
            end
        end
    end

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
        return
    end

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
        warn(ctx, "topology", str_format("key 'topology': %s: %d of %d cases",
             reason, count[reason], #cases))
    end

    check_executions(ctx, t, cases)
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

    if keys.request then request.cross_check(ctx, keys) end
    if keys.request and spec.hooks.tag ~= nil then
        fail(ctx, "tag", "key 'tag': given with key 'request' (" .. where(ctx, "request")
             .. "); expected a tag in each request entry instead (request = { path = \"/\","
             .. " tag = \"home\" }; docs/protocols.md)")
    end
    if keys.tls and keys.tls.verify == false then
        warn(ctx, "tls", "key 'tls': verify = false: the server's certificate is NOT checked"
             .. " (chain and name), so nothing proves who answers; the run object says"
             .. " tls.verify = false")
    end

    if keys.tls then
        local any = false
        for _, pr in ipairs(values_of(keys.protocol)) do any = any or TLS_PROTOCOLS[pr] == true end
        if not any then
            warn(ctx, "tls", "key 'tls': no case uses protocol " .. or_list(TLS_NAMES)
                 .. ", so it has no effect")
        end
    end

    if keys.coroutine_stack ~= nil and not contains(keys.execution, "coroutine") then
        warn(ctx, "coroutine_stack", "key 'coroutine_stack': used only when execution ="
             .. " \"coroutine\", and no case has it")
    end

    if contains(keys.execution, "lua") then
        check_lua(ctx, spec, wide and window_key)
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

_M.KNOWN = KNOWN
-- the keys whose value is a table of known sub-keys (--set KEY.SUB=value)
_M.SUB_KEYS = { tls = TLS_KEYS, udp = UDP_KEYS, request = { "method", "path", "body" } }
_M.LOAD_KEYS = LOAD_KEYS
_M.is_finite = is_finite
_M.values_of = values_of
_M.validate = validate
_M.cross_check = cross_check

return _M
