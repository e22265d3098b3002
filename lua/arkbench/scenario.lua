-- arkbench.scenario: load a scenario file (DESIGN.md §3), refuse anything
-- wrong in it before a single socket opens, and fill in the defaults.
--
-- Error convention. Errors in the user's file or command line come back as
-- `nil, message`, never raised. Each line of a message starts with where to
-- look -- `path:line:` (the first line where the key is written `key =`) or
-- the `--set key=value` that caused it -- then names the key, what it got and
-- what it accepts:
--
--   scenarios/x.lua:4: key 'payload': got string "abc"; expected an integer from 16 to 16777216
--
-- Every problem found is reported, one per line, in file order. Misuse of
-- this module's API (a path that is not a string, ...) raises.

local type, pairs, ipairs, tostring, tonumber, error =
      type, pairs, ipairs, tostring, tonumber, error
local loadfile, xpcall, setfenv, setmetatable, rawget =
      loadfile, xpcall, setfenv, setmetatable, rawget
local io_open = io.open
local str_find, str_match, str_gmatch, str_gsub, str_sub, str_format, str_lower, str_byte =
      string.find, string.match, string.gmatch, string.gsub, string.sub,
      string.format, string.lower, string.byte
local tbl_concat, tbl_sort = table.concat, table.sort
local math_floor, math_huge = math.floor, math.huge
local debug_traceback = debug.traceback
local G = _G

local matrix = require("arkbench.matrix")

local _M = {}

-- Every key a scenario table may hold, in the order they are documented
-- (and listed in "known keys: ...").
_M.KEYS = {
    "name", "description", "protocol", "framing", "payload", "clients",
    "window", "load", "topology", "execution", "work", "warmup", "duration",
    "repetitions", "rate", "timeout", "placement", "target", "tls", "udp",
    "client", "server", "message", "expect",
}
local KNOWN = {}
for _, k in ipairs(_M.KEYS) do KNOWN[k] = true end

-- --quick (DESIGN §2): a smoke run, not a measurement.
_M.QUICK = { warmup = 0.05, duration = 0.2, repetitions = 1 }

local DEFAULTS = {
    protocol = "tcp", framing = "length", payload = 1024, clients = 1,
    window = 1, topology = "sharded:1", execution = "callback", work = 0,
    warmup = 0.25, duration = 1, repetitions = 3, placement = "same-process",
}
local TIMEOUT_DEFAULT, TIMEOUT_DEFAULT_UDP = 2, 0.2

local GIB = 1073741824
local UDP_PAYLOAD_MAX = 65507
local TLS_PROTOCOLS = { tls = true, wss = true, https = true }
-- ca: a PEM file of the certificate(s) to trust, for target = servers
local TLS_KEYS = { "version", "ciphers", "sni", "alpn", "resume", "ca" }
-- udp = { send_buffer =, recv_buffer =, server_recv_buffer = } in bytes:
-- the socket buffers to request (defaults 64 KiB send, 4 MiB receive);
-- server_recv_buffer sets the server socket's alone (a tiny one forces loss)
local UDP_KEYS = { "send_buffer", "recv_buffer", "server_recv_buffer" }
local LOAD_KEYS = { "clients", "window" }
local HOOK_KEYS = { "client", "server", "message", "expect" }
-- --set values of these keys are taken as text, never as numbers or lists
local RAW_SET = { name = true, description = true, message = true }

---------------------------------------------------------------------------
-- small helpers

local function is_finite(v)
    return type(v) == "number" and v == v and v > -math_huge and v < math_huge
end

local function is_integer(v)
    return is_finite(v) and v == math_floor(v)
end

local function fmt_number(n)
    if n ~= n then return "nan" end
    if n == math_huge then return "inf" end
    if n == -math_huge then return "-inf" end
    if n == math_floor(n) and n > -2^53 and n < 2^53 then
        return str_format("%d", n)
    end
    return str_format("%.14g", n)
end

local function quote(s)
    if #s > 60 then s = str_sub(s, 1, 57) .. "..." end
    return '"' .. str_gsub(s, '[%c"\\]', function(c)
        if c == "\n" then return "\\n" end
        if c == "\t" then return "\\t" end
        if c == '"' or c == "\\" then return "\\" .. c end
        return str_format("\\%d", str_byte(c))
    end) .. '"'
end

-- n if v is a proper list 1..n (n may be 0), else nil
local function list_length(v)
    local count, max = 0, 0
    for k in pairs(v) do
        if type(k) ~= "number" or k < 1 or k ~= math_floor(k) then return nil end
        count = count + 1
        if k > max then max = k end
    end
    if count ~= max then return nil end
    return count
end

-- How a value is shown after "got".
local function describe(v)
    local t = type(v)
    if t == "number" then return fmt_number(v) end
    if t == "string" then return "string " .. quote(v) end
    if t == "boolean" then return "boolean " .. tostring(v) end
    if t == "nil" then return "nil" end
    if t == "table" then
        local n = list_length(v)
        if n == 0 then return "an empty list" end
        if n then return "a list" end
    end
    return "a " .. t
end

-- the keys of t that are not in known (sorted, for stable messages)
local function sorted_keys(t, known)
    local set, out = {}, {}
    for _, k in ipairs(known) do set[k] = true end
    for k in pairs(t) do
        if not set[k] then out[#out + 1] = k end
    end
    tbl_sort(out, function(a, b) return tostring(a) < tostring(b) end)
    return out
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

local function levenshtein(a, b)
    local prev = {}
    for j = 0, #b do prev[j] = j end
    for i = 1, #a do
        local cur, ca = { [0] = i }, str_byte(a, i)
        for j = 1, #b do
            local v = prev[j - 1] + ((ca == str_byte(b, j)) and 0 or 1)
            if prev[j] + 1 < v then v = prev[j] + 1 end
            if cur[j - 1] + 1 < v then v = cur[j - 1] + 1 end
            cur[j] = v
        end
        prev = cur
    end
    return prev[#b]
end

-- The known key nearest to word, if near enough to be a typo: edit distance
-- at most 2, or at most a third of the key's length.
local function suggest(word, candidates)
    local best, bestd
    local w = str_lower(word)
    for _, c in ipairs(candidates) do
        local d = levenshtein(w, c)
        if (d <= 2 or d <= math_floor(#c / 3)) and (not bestd or d < bestd) then
            best, bestd = c, d
        end
    end
    return best
end

local function unknown_key(key, candidates)
    local near = suggest(key, candidates)
    if near then
        return "unknown key '" .. key .. "'; did you mean '" .. near .. "'?"
    end
    return "unknown key '" .. key .. "'; known keys: " .. tbl_concat(candidates, ", ")
end

---------------------------------------------------------------------------
-- Where a key is written in the source.
--
-- The source is scanned once with comments and the insides of strings
-- blanked out (newlines kept), so `-- try payload = 64` in a comment or
-- "clients = 5" in a message string is never taken for the key. Among the
-- lines where `key =` appears, one at table depth 1 (inside `return { ... }`)
-- wins over depth 0 (`s.key = ...`), which wins over deeper ones (a
-- `load = {{clients = 1}}` pair), so the line is the top-level key's.

local function blank(s)
    return (str_gsub(s, "[^\n]", " "))
end

local function strip(src)
    local out, i, n = {}, 1, #src
    if str_sub(src, 1, 1) == "#" then          -- shebang line, as loadfile
        local e = str_find(src, "\n", 1, true) or n + 1
        out[1] = blank(str_sub(src, 1, e - 1))
        i = e
    end
    while i <= n do
        local p = str_find(src, "[%-\"'%[]", i)
        if not p then
            out[#out + 1] = str_sub(src, i)
            break
        end
        out[#out + 1] = str_sub(src, i, p - 1)
        local c = str_sub(src, p, p)
        local long = str_match(src, "^%[(=*)%[", c == "[" and p or p + 2)
        if c == "-" and str_sub(src, p + 1, p + 1) == "-" then
            local e
            if long then
                local _, close = str_find(src, "]" .. long .. "]", p, true)
                e = close or n
            else
                e = (str_find(src, "\n", p, true) or n + 1) - 1
            end
            out[#out + 1] = blank(str_sub(src, p, e))
            i = e + 1
        elseif c == "[" and long then
            local _, close = str_find(src, "]" .. long .. "]", p + 2 + #long, true)
            close = close or n
            out[#out + 1] = "[" .. blank(str_sub(src, p + 1, close - 1)) .. "]"
            i = close + 1
        elseif c == '"' or c == "'" then
            local j = p + 1
            while j <= n do
                local d = str_sub(src, j, j)
                if d == "\\" then j = j + 2
                elseif d == c or d == "\n" then break
                else j = j + 1 end
            end
            out[#out + 1] = c .. blank(str_sub(src, p + 1, j - 1)) .. c
            i = j + 1
        else
            out[#out + 1] = c
            i = p + 1
        end
    end
    return tbl_concat(out)
end

local function brace_balance(s)
    local _, open = str_gsub(s, "{", "")
    local _, close = str_gsub(s, "}", "")
    return open - close
end

local function index_source(source)
    local lines, depths, depth = {}, {}, 0
    for text in str_gmatch(strip(source) .. "\n", "([^\n]*)\n") do
        lines[#lines + 1] = text
        depths[#depths + 1] = depth
        depth = depth + brace_balance(text)
    end
    return lines, depths
end

-- first line of `word =` (not `==`), preferring table depth 1, then 0, then
-- any; nil if the key is not written as a plain name.
local function find_key_line(lines, depths, word)
    local pat = "%f[%w_]" .. str_gsub(word, "%p", "%%%0") .. "%f[^%w_]%s*=()"
    local best, best_rank
    for ln, text in ipairs(lines) do
        local init = 1
        while true do
            local s, e, after = str_find(text, pat, init)
            if not s then break end
            if str_sub(text, after, after) ~= "=" then
                local d = depths[ln] + brace_balance(str_sub(text, 1, s - 1))
                local rank = (d == 1 and 1) or (d == 0 and 2) or 3
                if not best_rank or rank < best_rank then best, best_rank = ln, rank end
                if rank == 1 then return best end
            end
            init = e + 1
        end
    end
    return best
end

-- the line of the file's last top-level `return`
local function find_return_line(lines, depths)
    local last, any
    for ln, text in ipairs(lines) do
        local init = 1
        while true do
            local s, e = str_find(text, "%f[%w_]return%f[^%w_]", init)
            if not s then break end
            any = any or ln
            if depths[ln] + brace_balance(str_sub(text, 1, s - 1)) == 0 then last = ln end
            init = e + 1
        end
    end
    return last or any
end

---------------------------------------------------------------------------
-- Validation context: collects every error and warning with its place.

local function new_ctx(path, source)
    local lines, depths = index_source(source or "")
    return {
        path = path, lines = lines, depths = depths,
        origin = {},         -- key -> "--set key=value" that gave its value
        errors = {}, warnings = {}, seq = 0, line_cache = {},
    }
end

-- where, rank: "--set k=v" (rank 0) | "path:line" (rank line) | "path"
local function where(ctx, key)
    if key and ctx.origin[key] then return ctx.origin[key], 0 end
    local line
    if key then
        line = ctx.line_cache[key]
        if line == nil then
            line = find_key_line(ctx.lines, ctx.depths, key) or false
            ctx.line_cache[key] = line
        end
    end
    if not line then
        if ctx.return_line == nil then
            ctx.return_line = find_return_line(ctx.lines, ctx.depths) or false
        end
        line = ctx.return_line
    end
    if line then return ctx.path .. ":" .. line, line end
    return ctx.path, math_huge
end

local function push(ctx, list, key, msg)
    local at, rank = where(ctx, key)
    ctx.seq = ctx.seq + 1
    list[#list + 1] = { rank = rank, seq = ctx.seq, text = at .. ": " .. msg }
end

local function fail(ctx, key, msg) push(ctx, ctx.errors, key, msg) end
local function warn(ctx, key, msg) push(ctx, ctx.warnings, key, msg) end

local function fail_at(ctx, at, msg)
    ctx.seq = ctx.seq + 1
    ctx.errors[#ctx.errors + 1] = { rank = 0, seq = ctx.seq, text = at .. ": " .. msg }
end

local function texts(list, sorted)
    if sorted then
        tbl_sort(list, function(a, b)
            if a.rank ~= b.rank then return a.rank < b.rank end
            return a.seq < b.seq
        end)
    end
    local out = {}
    for i, e in ipairs(list) do out[i] = e.text end
    return out
end

---------------------------------------------------------------------------
-- Rules for keys that hold a value or a list of values (matrix axes).

local function int_range(lo, hi, note)
    return {
        test = function(v) return is_integer(v) and v >= lo and v <= hi end,
        expected = str_format("an integer from %d to %d", lo, hi) .. (note or ""),
    }
end

local function one_of(...)
    local names, set = { ... }, {}
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
                   .. " (seconds, at most 3600)",
    }
end

local function valid_target(v)
    if type(v) ~= "string" then return false end
    local host, port = str_match(v, "^%[([%w:%.%%]+)%]:(%d+)$")
    if not host then host, port = str_match(v, "^([%w%.%-_]+):(%d+)$") end
    port = tonumber(port)
    return host ~= nil and port ~= nil and port >= 1 and port <= 65535
end

local RULES = {
    protocol = one_of("tcp", "udp", "ws", "tls", "wss", "http", "https"),
    framing = one_of("length", "raw"),
    payload = int_range(16, 16777216),
    payload_udp = int_range(16, UDP_PAYLOAD_MAX, " (the UDP datagram limit)"),
    clients = int_range(1, 100000),
    window = int_range(1, 4096),
    topology = {
        test = function(v) return matrix.topology(v) ~= nil end,
        expected = '"sharded:N" or "shared:N" with N an integer from 1 to 256',
    },
    execution = one_of("callback", "coroutine", "lua"),
    work = int_range(0, 10000000),
    warmup = seconds(true),
    duration = seconds(false),
    repetitions = int_range(1, 100),
    rate = {
        test = function(v) return is_finite(v) and v > 0 end,
        expected = "a number > 0 (messages per second, all connections together)",
    },
    timeout = seconds(false),
    placement = one_of("same-process", "split"),
    target = {
        test = valid_target,
        expected = 'a string "host:port" with a port from 1 to 65535'
                   .. ' (an IPv6 host in brackets: "[::1]:7000")',
    },
}

-- keys that take a scalar or a list, in validation order (protocol first:
-- the payload limit depends on it)
local AXIS_KEYS = {
    "protocol", "framing", "payload", "clients", "window", "topology",
    "execution", "work", "warmup", "duration", "rate", "timeout", "placement",
    "target",
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

local function check_tls(ctx, v)
    local label = "key 'tls'"
    if type(v) ~= "table" then
        fail(ctx, "tls", label .. ": got " .. describe(v)
             .. "; expected a table with keys " .. tbl_concat(TLS_KEYS, ", "))
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
            if x ~= "1.2" and x ~= "1.3" then expected = '"1.2" or "1.3"' end
        elseif k == "ciphers" or k == "sni" or k == "ca" then
            if type(x) ~= "string" or x == "" then expected = "a non-empty string" end
        elseif k == "resume" then
            if type(x) ~= "boolean" then expected = "a boolean" end
        elseif k == "alpn" then
            local n = type(x) == "table" and list_length(x)
            if type(x) == "table" and n and n > 0 then
                for i = 1, n do
                    if type(x[i]) ~= "string" or x[i] == "" then
                        fail(ctx, "tls", kl .. " element " .. i .. ": got " .. describe(x[i])
                             .. "; expected a non-empty string")
                        ok = false
                    end
                end
            elseif type(x) ~= "string" or x == "" then
                expected = "a protocol name string or a non-empty list of them"
            end
        end
        if expected then
            fail(ctx, "tls", kl .. ": got " .. describe(x) .. "; expected " .. expected)
            ok = false
        end
        out[k] = copy_list(x)
    end
    return ok and out or nil
end

local function check_udp(ctx, v)
    local label = "key 'udp'"
    if type(v) ~= "table" then
        fail(ctx, "udp", label .. ": got " .. describe(v)
             .. "; expected a table with keys " .. tbl_concat(UDP_KEYS, ", "))
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
            if type(x) ~= "number" or x ~= math.floor(x) or x < 1 or x > 1073741824 then
                fail(ctx, "udp", label .. ": key '" .. k .. "': got " .. describe(x)
                     .. "; expected an integer from 1 to 1073741824 (bytes)")
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
    if t.client ~= nil and t.message ~= nil then
        local at = where(ctx, "client")
        fail(ctx, "message", "key 'message': given together with key 'client' (" .. at
             .. "); expected either client = function(conn) or message/expect, not both")
    end
end

---------------------------------------------------------------------------
-- --set key=value

local function parse_scalar(s)
    if s == "true" then return true end
    if s == "false" then return false end
    local n = tonumber(s)
    if is_finite(n) then return n end
    return s
end

-- "true"/"false" -> boolean, a number literal -> number, "a,b" -> list of
-- parsed items, anything else -> the string.
function _M.parse_value(s)
    if type(s) ~= "string" then
        error("scenario.parse_value: expected a string, got " .. type(s), 2)
    end
    if str_find(s, ",", 1, true) then
        local list = {}
        for item in str_gmatch(s .. ",", "([^,]*),") do list[#list + 1] = parse_scalar(item) end
        return list
    end
    return parse_scalar(s)
end

-- load=1x1,16x16 on the command line
local function load_from_set(v)
    local out = {}
    for i, item in ipairs(values_of(v)) do
        local c, w = str_match(tostring(item), "^(%d+)x(%d+)$")
        out[i] = c and { clients = tonumber(c), window = tonumber(w) } or item
    end
    return out
end

local function apply_sets(ctx, t, sets)
    local given = {}
    for _, entry in ipairs(sets) do
        local key, raw = str_match(entry, "^([^=]+)=(.*)$")
        local at = "--set " .. entry
        if not key then
            fail_at(ctx, at, "expected key=value")
        elseif not KNOWN[key] then
            fail_at(ctx, at, unknown_key(key, _M.KEYS))
        else
            local value = RAW_SET[key] and raw or _M.parse_value(raw)
            if key == "load" then value = load_from_set(value) end
            t[key] = value
            ctx.origin[key] = at
            given[key] = true
        end
    end
    -- A command-line clients/window replaces the file's load pairs, and a
    -- command-line load replaces the file's clients/window: the command line
    -- is the user's latest word, and refusing it would leave no way to
    -- override a file that uses load.
    if (given.clients or given.window) and not given.load and t.load ~= nil then
        local note = ""
        if not given.window then note = " (window = 1, its default)" end
        if not given.clients then note = " (clients = 1, its default)" end
        warn(ctx, "load", "key 'load': replaced by "
             .. (ctx.origin.clients or ctx.origin.window) .. note)
        t.load = nil
    end
    if given.load then
        for _, k in ipairs(LOAD_KEYS) do
            if t[k] ~= nil and not given[k] then
                warn(ctx, k, "key '" .. k .. "': replaced by " .. ctx.origin.load)
                t[k] = nil
            end
        end
    end
end

---------------------------------------------------------------------------
-- Validation of the whole table -> keys, hooks (errors collected in ctx)

local function validate(ctx, t)
    local keys, hooks = {}, {}

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
                 .. "; expected a non-empty string without '/' (it names the results folder)")
        end
    end
    if t.description ~= nil then
        if type(t.description) == "string" then
            keys.description = t.description
        else
            fail(ctx, "description", "key 'description': got " .. describe(t.description)
                 .. "; expected a string")
        end
    end

    local udp = t.protocol ~= nil and contains(t.protocol, "udp")
    for _, key in ipairs(AXIS_KEYS) do
        local v = t[key]
        if v ~= nil then
            local rule = RULES[key]
            if key == "payload" and udp then rule = RULES.payload_udp end
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

    if t.tls ~= nil then keys.tls = check_tls(ctx, t.tls) end
    if t.udp ~= nil then keys.udp = check_udp(ctx, t.udp) end
    check_hooks(ctx, t, hooks)
    return keys, hooks
end

local function fill_defaults(keys)
    local defaulted = {}
    for k, v in pairs(DEFAULTS) do
        local skip = keys.load ~= nil and (k == "clients" or k == "window")
        if keys[k] == nil and not skip then
            keys[k] = v
            defaulted[k] = true
        end
    end
    if keys.timeout == nil then
        defaulted.timeout = true
        local udp, other = false, false
        for _, p in ipairs(values_of(keys.protocol)) do
            if p == "udp" then udp = true else other = true end
        end
        -- a protocol axis mixing udp and others: timeout stays nil here and
        -- matrix.expand gives each case its protocol's default
        if not (udp and other) then
            keys.timeout = udp and TIMEOUT_DEFAULT_UDP or TIMEOUT_DEFAULT
        end
    end
    return defaulted
end

local function max_of(v)
    local m
    for _, x in ipairs(values_of(v)) do
        if m == nil or x > m then m = x end
    end
    return m
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
    if c * w * p > GIB then
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
             .. " bytes in flight in one case; expected at most %d (1 GiB)",
             anchor, c, w, p, c * w * p, GIB))
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

    if contains(keys.protocol, "udp") then
        local wide, key = false, keys.load and "load" or "window"
        if keys.load then
            for _, pr in ipairs(keys.load) do wide = wide or pr.window > 1 end
        else
            wide = max_of(keys.window) > 1
        end
        if wide then
            warn(ctx, key, "key '" .. key .. "': udp with window > 1 measures queueing, not RTT")
        end
    end

    if keys.tls then
        local any = false
        for _, pr in ipairs(values_of(keys.protocol)) do any = any or TLS_PROTOCOLS[pr] == true end
        if not any then
            warn(ctx, "tls", "key 'tls': no case uses protocol tls, wss or https, so it has no effect")
        end
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

---------------------------------------------------------------------------
-- Loading

local function read_all(path)
    local f = io_open(path, "rb")
    if not f then return nil end
    local s = f:read("*a")
    f:close()
    return s
end

-- xpcall handler: the message, then the traceback of the scenario's own
-- frames (everything from our xpcall down is cut).
local function traceback(err)
    local msg = tostring(err)
    local tb = debug_traceback("", 2)
    local kept = {}
    for line in str_gmatch(tb, "[^\n]+") do
        if str_find(line, "in function 'xpcall'", 1, true) then break end
        if line ~= "stack traceback:" and not str_find(line, "^%s*%[C%]: in function 'error'") then
            kept[#kept + 1] = line
        end
    end
    if #kept > 0 then
        return msg .. "\nstack traceback:\n" .. tbl_concat(kept, "\n")
    end
    return msg
end

local function file_stem(path)
    local base = str_match(path, "([^/\\]+)$") or path
    return (str_gsub(base, "%.lua$", ""))
end

-- path, { "key=value", ... } -> spec | nil, message
local function load_part(path, source, env, result, sets)
    local ctx = new_ctx(path, source)
    local t = {}
    for k, v in pairs(result) do t[k] = v end     -- the user's table stays as is

    local globals = {}
    for k in pairs(env) do
        if KNOWN[k] and rawget(t, k) == nil then globals[#globals + 1] = k end
    end
    tbl_sort(globals)
    for _, k in ipairs(globals) do
        warn(ctx, k, "global '" .. k .. "' is ignored; scenario keys go in the table the file returns")
    end

    apply_sets(ctx, t, sets)
    local keys, hooks = validate(ctx, t)
    if #ctx.errors > 0 then
        return nil, tbl_concat(texts(ctx.errors, true), "\n")
    end

    keys.name = keys.name or file_stem(path)
    local defaulted = fill_defaults(keys)
    local spec = {
        path = path,
        source = source,
        name = keys.name,
        description = keys.description,
        keys = keys,
        axes = {},
        hooks = hooks,
        defaulted = defaulted,
        warnings = {},
    }
    keys.description = nil
    for _, k in ipairs(matrix.AXES) do
        local v = keys[k]
        if type(v) == "table" and #v > 1 then spec.axes[#spec.axes + 1] = k end
    end

    cross_check(ctx, t, spec)
    if #ctx.errors > 0 then
        return nil, tbl_concat(texts(ctx.errors, true), "\n")
    end
    spec.warnings = texts(ctx.warnings, false)
    return spec
end

function _M.load(path, sets)
    if type(path) ~= "string" then
        error("scenario.load: path must be a string, got " .. type(path), 2)
    end
    if sets ~= nil and type(sets) ~= "table" then
        error("scenario.load: sets must be a list of strings, got " .. type(sets), 2)
    end
    sets = sets or {}
    for i, s in ipairs(sets) do
        if type(s) ~= "string" then
            error("scenario.load: sets[" .. i .. "] must be a string, got " .. type(s), 2)
        end
    end

    local chunk, lerr = loadfile(path)
    if not chunk then return nil, lerr end
    local source = read_all(path) or ""

    -- Globals the file sets land in its own environment, not in ours; a
    -- scenario key set as a global (wrk style) is reported, not lost.
    local env = setmetatable({}, { __index = G })
    setfenv(chunk, env)
    local ok, result = xpcall(chunk, traceback)
    if not ok then
        return nil, path .. ": error while running scenario: " .. result
    end
    if type(result) ~= "table" then
        return nil, path .. ": scenario must return a table, got " .. type(result)
    end

    -- A file may return a list of scenario tables ("parts"): each is
    -- validated on its own and their cases run in order under the first
    -- part's name (all.lua uses it to give UDP its own window).
    if #result > 0 and next(result, #result) == nil and type(result[1]) == "table" then
        local parts = {}
        for i, part in ipairs(result) do
            if type(part) ~= "table" then
                return nil, path .. ": scenario part " .. i .. " must be a table, got " .. type(part)
            end
            local spec, err = load_part(path, source, env, part, sets)
            if not spec then return nil, err end
            parts[i] = spec
        end
        local first = parts[1]
        first.parts = parts
        for i = 2, #parts do
            parts[i].name = first.name
            parts[i].keys.name = first.name
            for _, w in ipairs(parts[i].warnings) do first.warnings[#first.warnings + 1] = w end
        end
        return first
    end
    return load_part(path, source, env, result, sets)
end

-- --quick: override warmup, duration and repetitions (after validation).
function _M.apply_quick(spec)
    if type(spec) ~= "table" or type(spec.keys) ~= "table" then
        error("scenario.apply_quick: expected a spec from scenario.load", 2)
    end
    for k, v in pairs(_M.QUICK) do spec.keys[k] = v end
    local axes = {}
    for _, k in ipairs(spec.axes or {}) do
        if _M.QUICK[k] == nil then axes[#axes + 1] = k end
    end
    spec.axes = axes
    spec.quick = true
    for _, part in ipairs(spec.parts or {}) do
        if part ~= spec then _M.apply_quick(part) end
    end
    return spec
end

return _M
