-- arkbench.scenario.check_net: the keys of the network below the
-- messages: tls (version, ciphers, sni, alpn, resume, ca, verify; the
-- cipher list and the CA file tried with OpenSSL), bind (the client source
-- addresses, of the destinations' family) and udp (the socket buffers),
-- and the warnings about tls across the other keys.

local type, ipairs, tostring, tonumber = type, ipairs, tostring, tonumber
local str_find, str_gmatch, str_format = string.find, string.gmatch, string.format
local tbl_concat = table.concat
local math_floor = math.floor

local base = require("arkbench.scenario.check_base")
local msg = require("arkbench.scenario.msg")
local units = require("arkbench.util.units")

local list_length, describe, unknown_key = msg.list_length, msg.describe, msg.unknown_key
local fail, warn = msg.fail, msg.warn
local sorted_keys = msg.stray_keys
local copy_list, values_of, or_list = base.copy_list, base.values_of, base.or_list
local TLS_PROTOCOLS, TLS_NAMES = base.TLS_PROTOCOLS, base.TLS_NAMES

local _M = {}

-- ca: a PEM file of the certificate(s) to trust, for target = servers
-- verify = false: the client does not check the server's certificate
local TLS_KEYS = { "version", "ciphers", "sni", "alpn", "resume", "ca", "verify" }
-- udp = { send_buffer =, recv_buffer =, server_recv_buffer = } in bytes:
-- the socket buffers to request (defaults 64 KiB send, 4 MiB receive);
-- server_recv_buffer sets the server socket's alone (a tiny one forces loss)
local UDP_KEYS = { "send_buffer", "recv_buffer", "server_recv_buffer" }
-- h2 = { ... }: the SETTINGS arkbench sends on h2/h2c connections (RFC 9113
-- 6.5.2), each with its allowed range (docs/scenarios.md)
local H2_KEYS = { "max_concurrent_streams", "initial_window_size", "max_frame_size",
                  "header_table_size" }
local H2_RANGES = {
    max_concurrent_streams = { 1, 2147483647 },
    initial_window_size = { 0, 2147483647 },
    max_frame_size = { 16384, 16777215 },
    header_table_size = { 0, 2147483647 },
}

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

-- What tls key k's value x must be when it is not (nil: it is fine); an ALPN
-- list's bad elements are refused one by one in ctx (ok false then).
local function tls_value_problem(ctx, kl, k, x)
    local expected, ok = nil, true
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
    return expected, ok
end

-- the cipher list through OpenSSL's own parser, for the version it is for
-- and one handshake in memory with the certificate a run uses, so that
-- a list left empty at the security level fails here, not in every run
local function tls_openssl_check(ctx, label, out)
    local ok = true
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
    return ok
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
        local expected, good = tls_value_problem(ctx, kl, k, x)
        if not good then ok = false end
        if expected then
            fail(ctx, "tls", kl .. ": got " .. describe(x) .. "; expected " .. expected)
            ok = false
        end
        out[k] = copy_list(x)
    end
    if ok then ok = tls_openssl_check(ctx, label, out) end
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

local function check_h2(ctx, v)
    local label = "key 'h2'"
    if type(v) ~= "table" then
        fail(ctx, "h2", label .. ": got " .. describe(v) .. "; expected a table with keys "
             .. tbl_concat(H2_KEYS, ", "))
        return nil
    end
    local ok, out = true, {}
    for _, k in ipairs(sorted_keys(v, H2_KEYS)) do
        fail(ctx, "h2", label .. ": " .. (type(k) == "string" and unknown_key(k, H2_KEYS)
             or ("unexpected list entry [" .. tostring(k) .. "]")))
        ok = false
    end
    for _, k in ipairs(H2_KEYS) do
        local x, r = v[k], H2_RANGES[k]
        if x ~= nil then
            if type(x) ~= "number" or x ~= math_floor(x) or x < r[1] or x > r[2] then
                fail(ctx, "h2", label .. ": key '" .. k .. "': got " .. describe(x)
                     .. "; expected an integer from " .. r[1] .. " to " .. r[2]
                     .. (k == "max_concurrent_streams" and " (streams)" or " (bytes)"))
                ok = false
            end
            out[k] = x
        end
    end
    return ok and out or nil
end

-- bind, tls, udp and h2 of t into keys
function _M.check(ctx, t, keys)
    if t.h2 ~= nil then keys.h2 = check_h2(ctx, t.h2) end
    if t.bind ~= nil then keys.bind = check_bind(ctx, t.bind) end
    if t.tls ~= nil then keys.tls = check_tls(ctx, t.tls) end
    if t.udp ~= nil then keys.udp = check_udp(ctx, t.udp) end
end

-- bind against the destinations' address family
function _M.check_bind_family(ctx, keys)
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
end

-- tls across the other keys: verify = false, and tls without a TLS protocol
function _M.cross_check(ctx, keys)
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
end

_M.TLS_KEYS, _M.UDP_KEYS, _M.H2_KEYS = TLS_KEYS, UDP_KEYS, H2_KEYS

return _M
