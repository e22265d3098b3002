-- arkbench.proto.memcached: memcached's text protocol for execution =
-- "lua" scenarios: encode requests, find where a reply ends, decode it --
-- in both Lua forms (docs/lua-api.md, "Sharing a workload").
--
--   mc.get(key, ...) / mc.gets(key, ...) -> bytes
--   mc.set(key, value [, flags [, exptime]]) -> bytes   (also add, replace,
--                                              append, prepend: same arguments)
--   mc.cas(key, value, cas [, flags [, exptime]]) -> bytes
--   mc.delete(key) / mc.incr(key, n) / mc.decr(key, n) / mc.touch(key, exptime)
--   mc.expect(buf) -> n | nil     where the first reply in buf ends (nil:
--                                 incomplete); an `expect` for both forms;
--                                 raises on bytes that are no reply
--   mc.expect_ok(buf) -> n | nil  the same, raising on an error reply
--                                 (ERROR, CLIENT_ERROR, SERVER_ERROR): the
--                                 light form's check (a script error)
--   mc.decode(buf [, pos]) -> reply, next | nil
--       a retrieval: { values = { { key =, flags =, value = [, cas =] }... } }
--       (an empty list: a miss); a number (incr/decr); otherwise the status
--       line as a string: "STORED", "NOT_STORED", "EXISTS", "NOT_FOUND",
--       "DELETED", "TOUCHED", "OK", "VERSION 1.6.18", "ERROR",
--       "CLIENT_ERROR ...", "SERVER_ERROR ..."
--   mc.is_error(reply) -> bool    ERROR, CLIENT_ERROR, SERVER_ERROR
--   mc.call(conn, request [, tag]) -> reply | nil, err, code
--       the full form: conn:call(request, mc.expect, tag), decoded
--   mc.reader() -> r   incremental: r:push(bytes); r:next() -> reply | nil
--
-- Replies may arrive split anywhere: expect and decode answer nil for any
-- prefix of a reply (spec/unit/proto_memcached_spec.lua splits at every
-- byte).

local sub, find, format, match = string.sub, string.find, string.format, string.match
local tostring, tonumber, select, setmetatable, error = tostring, tonumber, select, setmetatable, error
local type, ipairs = type, ipairs
local concat = table.concat

local _M = {}

local function keys(verb, ...)
    local n = select("#", ...)
    if n == 0 then error("memcached." .. verb .. ": needs a key", 2) end
    return verb .. " " .. concat({ ... }, " ") .. "\r\n"
end
function _M.get(...) return keys("get", ...) end
function _M.gets(...) return keys("gets", ...) end

local function storage(verb)
    return function(key, value, flags, exptime)
        value = tostring(value)
        return format("%s %s %d %d %d\r\n%s\r\n", verb, key, flags or 0, exptime or 0, #value, value)
    end
end
_M.set, _M.add, _M.replace = storage("set"), storage("add"), storage("replace")
_M.append, _M.prepend = storage("append"), storage("prepend")

function _M.cas(key, value, cas, flags, exptime)
    value = tostring(value)
    return format("cas %s %d %d %d %s\r\n%s\r\n", key, flags or 0, exptime or 0, #value, tostring(cas), value)
end
function _M.delete(key) return "delete " .. key .. "\r\n" end
function _M.incr(key, n) return format("incr %s %s\r\n", key, tostring(n or 1)) end
function _M.decr(key, n) return format("decr %s %s\r\n", key, tostring(n or 1)) end
function _M.touch(key, exptime) return format("touch %s %d\r\n", key, exptime or 0) end

-- the status lines (whole first word) and the words a reply may start with
local STATUS = {
    STORED = true, NOT_STORED = true, EXISTS = true, NOT_FOUND = true, DELETED = true,
    TOUCHED = true, OK = true, ERROR = true, END = true,
}
local PREFIXES = { "VALUE ", "END\r\n", "STORED\r\n", "NOT_STORED\r\n", "EXISTS\r\n", "NOT_FOUND\r\n",
    "DELETED\r\n", "TOUCHED\r\n", "OK\r\n", "ERROR\r\n", "CLIENT_ERROR ", "SERVER_ERROR ", "VERSION " }

local function bad(buf, pos, why)
    error(format("memcached: %s at byte %d: %q", why, pos, sub(buf, pos, pos + 40)), 0)
end

-- an incomplete line at pos must still be able to become a reply
local function check_prefix(buf, pos)
    local rest = sub(buf, pos)
    if #rest > 8192 then bad(buf, pos, "a line longer than 8 KiB") end
    if match(rest, "^%d*$") or match(rest, "^%d+\r$") then return end -- incr/decr
    for _, p in ipairs(PREFIXES) do
        local n = #rest < #p and #rest or #p
        if sub(rest, 1, n) == sub(p, 1, n) then return end
    end
    bad(buf, pos, "not a reply")
end

-- reply at pos -> reply, next | nil; with decode false only next matters
local function parse(buf, pos, decode)
    local e = find(buf, "\r\n", pos, true)
    if not e then check_prefix(buf, pos); return nil end
    local first = sub(buf, pos, e - 1)
    if sub(first, 1, 6) ~= "VALUE " then
        local word = match(first, "^(%S+)")
        if word == "END" and first == "END" then return decode and { values = {} } or true, e + 2 end
        if STATUS[word] and first == word then return first, e + 2 end
        if word == "CLIENT_ERROR" or word == "SERVER_ERROR" or word == "VERSION" then return first, e + 2 end
        local n = match(first, "^(%d+)$")
        if n then return tonumber(n), e + 2 end
        bad(buf, pos, "not a reply")
    end
    -- VALUE <key> <flags> <bytes> [<cas>]\r\n<data>\r\n ... END\r\n
    local values, p = decode and {} or nil, pos
    while true do
        e = find(buf, "\r\n", p, true)
        if not e then check_prefix(buf, p); return nil end
        local head = sub(buf, p, e - 1)
        if head == "END" then return decode and { values = values } or true, e + 2 end
        local k, flags, n, cas = match(head, "^VALUE (%S+) (%d+) (%d+) ?(%d*)$")
        if not k then bad(buf, p, "not a VALUE line") end
        n = tonumber(n)
        local data_end = e + 2 + n
        if #buf < data_end + 1 then return nil end
        if sub(buf, data_end, data_end + 1) ~= "\r\n" then bad(buf, data_end, "data not ended by CR LF") end
        if decode then
            values[#values + 1] = { key = k, flags = tonumber(flags), value = sub(buf, e + 2, data_end - 1),
                                    cas = cas ~= "" and tonumber(cas) or nil }
        end
        p = data_end + 2
    end
end

function _M.expect(buf)
    local _, nxt = parse(buf, 1, false)
    return nxt and nxt - 1 or nil
end

function _M.expect_ok(buf)
    local n = _M.expect(buf)
    if n and (sub(buf, 1, 5) == "ERROR" or sub(buf, 1, 12) == "CLIENT_ERROR" or sub(buf, 1, 12) == "SERVER_ERROR") then
        error(format("memcached: error reply %q", sub(buf, 1, n - 2)), 0)
    end
    return n
end

function _M.decode(buf, pos)
    return parse(buf, pos or 1, true)
end

function _M.is_error(r)
    if type(r) ~= "string" then return false end
    return r == "ERROR" or find(r, "^CLIENT_ERROR") ~= nil or find(r, "^SERVER_ERROR") ~= nil
end

function _M.call(conn, request, tag)
    local r, err, code = conn:call(request, _M.expect, tag)
    if not r then return nil, err, code end
    return (parse(r, 1, true))
end

local Reader = {}
Reader.__index = Reader
function Reader:push(bytes) self.buf = self.buf .. bytes end
function Reader:next()
    local v, nxt = parse(self.buf, self.pos, true)
    if v == nil then return nil end
    self.pos = nxt
    if self.pos > 4096 and self.pos > #self.buf / 2 then
        self.buf, self.pos = sub(self.buf, self.pos), 1
    end
    return v
end
function Reader:pending() return sub(self.buf, self.pos) end

function _M.reader()
    return setmetatable({ buf = "", pos = 1 }, Reader)
end

return _M
