-- arkbench.scenario.request: the scenario key `request` (http, https
-- request mode; docs/protocols.md "Request mode"): one table { method =,
-- path =, headers = { Name = "value" }, body =, status = { 200, 404 },
-- tag = "name" } or
-- a non-empty list of them, checked field by field and normalised for the
-- case (and core.run_case, core/lua/lua_request.c), or a function(i, conn)
-- that the worker calls up front, once per connection and i = 1, 2, ...
-- until it returns nil, for that connection's own list (expand_function).
-- Problems go into the validation context (arkbench.scenario.msg) under
-- the key 'request'.

local type, pairs, ipairs, tostring, next, pcall = type, pairs, ipairs, tostring, next, pcall
local str_find, str_lower, str_format = string.find, string.lower, string.format
local tbl_concat, tbl_sort = table.concat, table.sort
local math_floor, math_huge = math.floor, math.huge

local msg = require("arkbench.scenario.msg")

local list_length, describe, unknown_key, fail = msg.list_length, msg.describe, msg.unknown_key,
    msg.fail

local _M = {}

_M.KEYS = { "method", "path", "headers", "body", "status", "tag" }

-- a case's tags: at most this many distinct names (core/engine/tags.h),
-- each 1 .. TAG_NAME_MAX bytes without control characters
_M.TAGS_MAX = 16
_M.TAG_NAME_MAX = 48
local REQUEST_KEYS = _M.KEYS

local function is_integer(v)
    return type(v) == "number" and v == v and v > -math_huge and v < math_huge
        and v == math_floor(v)
end

local sorted_keys = msg.stray_keys

-- One request table -> its normalised form (method, path, headers as a
-- sorted list of "Name: value", body or nil, status list or nil), or nil
-- after failing; label names it ("key 'request'" or "... element i").
local function check_request_entry(ctx, v, label)
    local ok = true
    local function bad(what, got, expected)
        fail(ctx, "request", label .. what .. ": got " .. describe(got) .. "; expected " .. expected)
        ok = false
    end
    for _, k in ipairs(sorted_keys(v, REQUEST_KEYS)) do
        if type(k) == "string" then
            fail(ctx, "request", label .. ": " .. unknown_key(k, REQUEST_KEYS))
        else
            fail(ctx, "request", label .. ": unexpected list entry [" .. tostring(k)
                 .. "]; expected a table with keys " .. tbl_concat(REQUEST_KEYS, ", ")
                 .. " (or a list of such tables, without named keys beside them)")
        end
        ok = false
    end
    local out = { method = "GET", path = "/", headers = {} }
    if v.method ~= nil then
        if type(v.method) ~= "string" or not str_find(v.method, "^[!#$%%&'*+%-.^_`|~%w]+$") then
            bad(": key 'method'", v.method, 'an HTTP method token such as "GET" or "POST"')
        else
            out.method = v.method
        end
    end
    if v.path ~= nil then
        if type(v.path) ~= "string" or not str_find(v.path, "^/[%w%p]*$") then
            bad(": key 'path'", v.path, 'a string starting with "/" without spaces or control'
                .. ' characters (percent-encode them)')
        else
            out.path = v.path
        end
    end
    if v.headers ~= nil then
        if type(v.headers) ~= "table" or (next(v.headers) ~= nil and list_length(v.headers)) then
            bad(": key 'headers'", v.headers, 'a table of names to values, { ["User-Agent"] = "x" }')
        else
            local names = {}
            for name in pairs(v.headers) do names[#names + 1] = name end
            tbl_sort(names, function(a, b) return tostring(a) < tostring(b) end)
            for _, name in ipairs(names) do
                local value = v.headers[name]
                local hl = ": key 'headers': header '" .. tostring(name) .. "'"
                local lname = type(name) == "string" and str_lower(name)
                if type(name) ~= "string" or not str_find(name, "^[!#$%%&'*+%-.^_`|~%w]+$") then
                    bad(": key 'headers': name", name, "a header name token (letters, digits, -)")
                elseif lname == "content-length" or lname == "transfer-encoding" then
                    fail(ctx, "request", label .. hl .. ": set by arkbench from the body;"
                         .. " expected no " .. name .. " header")
                    ok = false
                elseif type(value) == "number" then
                    out.headers[#out.headers + 1] = name .. ": " .. tostring(value)
                elseif type(value) ~= "string" or str_find(value, "[\r\n%z]") then
                    bad(hl, value, "a string without CR, LF or NUL")
                else
                    out.headers[#out.headers + 1] = name .. ": " .. value
                end
            end
        end
    end
    if v.body ~= nil then
        if type(v.body) ~= "string" then
            bad(": key 'body'", v.body, "a string (sent with a Content-Length)")
        else
            out.body = v.body
        end
    end
    if v.tag ~= nil then
        if type(v.tag) ~= "string" or #v.tag == 0 or #v.tag > _M.TAG_NAME_MAX
            or str_find(v.tag, "%c") then
            bad(": key 'tag'", v.tag, "a name of 1 to " .. _M.TAG_NAME_MAX .. " bytes without"
                .. " control characters (its counts and latency are reported apart)")
        else
            out.tag = v.tag
        end
    end
    if v.status ~= nil then
        local st = type(v.status) == "number" and { v.status } or v.status
        local n = type(st) == "table" and list_length(st)
        if not n or n == 0 then
            bad(": key 'status'", v.status, "a status code or a non-empty list of them (100 to 599)")
        else
            out.status = {}
            for i = 1, n do
                if not is_integer(st[i]) or st[i] < 100 or st[i] > 599 then
                    bad(": key 'status' element " .. i, st[i], "an integer from 100 to 599")
                else
                    out.status[i] = st[i]
                end
            end
        end
    end
    return ok and out or nil
end

-- What a case's `request` says for the function form: the function itself
-- stays in the scenario's hooks (the worker finds it there), the case
-- carries this string.
_M.FUNCTION = "function"

-- request = one table or a non-empty list of them -> a list of normalised
-- entries (connection i's k-th message uses entry k mod n, from 0); a
-- function -> _M.FUNCTION (expand_function makes the lists)
function _M.check(ctx, v)
    local label = "key 'request'"
    if type(v) == "function" then return _M.FUNCTION end
    if type(v) ~= "table" then
        fail(ctx, "request", label .. ": got " .. describe(v) .. "; expected a table {method=,"
             .. " path=, headers=, body=, status=} or a non-empty list of them")
        return nil
    end
    if v[1] ~= nil then
        local named = {}
        for k in pairs(v) do
            if type(k) == "string" then named[#named + 1] = k end
        end
        if #named > 0 then
            tbl_sort(named)
            fail(ctx, "request", label .. ": got a list of requests and the named keys "
                 .. tbl_concat(named, ", ") .. " beside it; expected one request table or a list"
                 .. " of them (--set request.KEY=... sets a key of a single request table)")
            return nil
        end
    end
    local n = list_length(v)
    if n == 0 and next(v) ~= nil then n = nil end
    if n == nil or n == 0 or v[1] == nil then
        local one = check_request_entry(ctx, v, label)
        return one and { one } or nil
    end
    local out, ok = {}, true
    local tags, ntags = {}, 0
    for i = 1, n do
        local el = label .. " element " .. i
        if type(v[i]) ~= "table" then
            fail(ctx, "request", el .. ": got " .. describe(v[i]) .. "; expected a table"
                 .. " {method=, path=, headers=, body=, status=, tag=}")
            ok = false
        else
            out[i] = check_request_entry(ctx, v[i], el)
            ok = ok and out[i] ~= nil
            local tg = out[i] and out[i].tag
            if tg and not tags[tg] then
                ntags = ntags + 1
                tags[tg] = true
                if ntags == _M.TAGS_MAX + 1 then
                    fail(ctx, "request", el .. ": key 'tag': got '" .. tg .. "', the "
                         .. ntags .. "th distinct tag; expected at most " .. _M.TAGS_MAX
                         .. " distinct tags in a case")
                    ok = false
                end
            end
        end
    end
    return ok and out or nil
end

-- A connection's list holds at most MAX_PER_CONN requests, all
-- connections' at most MAX_TOTAL (they are built before the run, kept for
-- its length).
_M.MAX_PER_CONN = 1000
_M.MAX_TOTAL = 1000000

-- "path:line" where fn is defined
local function defined_at(fn)
    local info = debug.getinfo(fn, "S")
    return tostring(info.short_src) .. ":" .. tostring(info.linedefined)
end

-- request = function(i, conn): called for connection ids 0 .. clients - 1
-- (conn = { id = id, clients = clients, vars = vars }) and i = 1, 2, ...
-- until it returns nil, each entry checked as a table entry is. Returns the
-- entries back to back and each connection's count (core.run_case's
-- `request` and `request_conns`), or nil and one message naming where fn
-- is defined (or where it failed), i and the connection.
function _M.expand_function(fn, clients, vars)
    local at = defined_at(fn)
    local all, counts = {}, {}
    for id = 0, clients - 1 do
        local conn = { id = id, clients = clients, vars = vars }
        local n = 0
        while true do
            local i = n + 1
            local which = str_format("i = %d, connection %d", i, id)
            local ok, v = pcall(fn, i, conn)
            if not ok then
                return nil, str_format("%s: key 'request': the function failed for %s: %s", at,
                                       which, tostring(v))
            end
            if v == nil then break end
            if i > _M.MAX_PER_CONN then
                return nil, str_format("%s: key 'request': the function returned a request for %s;"
                    .. " expected nil by i = %d (a connection's list holds at most %d requests:"
                    .. " return nil after the last)", at, which, _M.MAX_PER_CONN + 1,
                    _M.MAX_PER_CONN)
            end
            if #all >= _M.MAX_TOTAL then
                return nil, str_format("%s: key 'request': the function's lists hold more than %d"
                    .. " requests in all (at %s); expected shorter lists or fewer clients", at,
                    _M.MAX_TOTAL, which)
            end
            if type(v) ~= "table" then
                return nil, str_format("%s: key 'request': the function returned %s for %s;"
                    .. " expected a table {method=, path=, headers=, body=, status=}, or nil after"
                    .. " the last request", at, describe(v), which)
            end
            local ectx = msg.new_ctx(at, "")
            ectx.origin.request = at
            local e = check_request_entry(ectx, v, "key 'request': the function's request for "
                                          .. which)
            if not e then return nil, ectx.errors[1].text end
            all[#all + 1] = e
            n = i
        end
        if n == 0 then
            return nil, str_format("%s: key 'request': the function returned nil for i = 1,"
                .. " connection %d; expected at least one request per connection", at, id)
        end
        counts[id + 1] = n
    end
    return all, counts
end

-- Across keys: every case has protocol http, https, h2 or h2c and the built-in
-- client's execution (callback or coroutine).
function _M.cross_check(ctx, keys)
    local protocols = type(keys.protocol) == "table" and keys.protocol or { keys.protocol or "tcp" }
    for _, pr in ipairs(protocols) do
        if pr ~= "http" and pr ~= "https" and pr ~= "h2" and pr ~= "h2c" then
            fail(ctx, "request", str_format("key 'request': a case has protocol %s; expected"
                 .. " protocol http, https, h2 or h2c (request mode), for every case", pr))
            break
        end
    end
    local execs = type(keys.execution) == "table" and keys.execution or { keys.execution }
    for _, ex in ipairs(execs) do
        if ex == "lua" then
            fail(ctx, "request", "key 'request': a case has execution = \"lua\"; expected"
                 .. " execution callback or coroutine (the built-in http client)")
            break
        end
    end
end

return _M
