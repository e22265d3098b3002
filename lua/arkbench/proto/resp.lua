-- arkbench.proto.resp: Redis's protocol (RESP2, and the RESP3 reply types
-- a HELLO 3 session adds) for execution = "lua" scenarios: encode
-- commands, find where a reply ends, decode it -- in both Lua forms
-- (docs/lua-api.md, "Sharing a workload").
--
--   resp.command(name, arg, ...) -> bytes      one command: an array of bulk
--                                              strings (arguments tostring'd)
--   resp.expect(buf) -> n | nil                where the first reply in buf
--                                              ends (nil: incomplete); an
--                                              `expect` for both forms; raises
--                                              on bytes that are no reply
--   resp.expect_ok(buf) -> n | nil           the same, raising on an error
--                                              reply (-ERR ..., !n): the light
--                                              form's check (a script error)
--   resp.decode(buf [, pos]) -> value, next | nil
--       the reply at pos (default 1): simple string and bulk string ->
--       string, integer -> number, nil bulk/array -> resp.null, array ->
--       list, error -> resp.error value ({ err = "ERR ..." }), RESP3 map ->
--       { [k] = v }, double -> number, boolean -> boolean, verbatim ->
--       string; nil when incomplete; raises as expect does on bytes
--       that are no reply (the same checks: lengths, integers, CR LF,
--       depth 64)
--   resp.is_error(v) -> bool                   an error reply's value
--   resp.null                                  the nil reply
--   resp.call(conn, args [, tag]) -> value | nil, err, code
--       the full form: conn:call(resp.command(unpack(args)), resp.expect,
--       tag), its reply decoded (an error reply is returned, not raised)
--   resp.reader() -> r   incremental: r:push(bytes); r:next() -> value |
--                        nil (needs more); r:pending() -> bytes kept
--
-- Replies may arrive split anywhere: expect and decode answer nil for any
-- prefix of a reply, and a reader keeps what it was given until a reply is
-- whole (spec/unit/proto_resp_spec.lua splits at every byte).

local sub, find, byte, format = string.sub, string.find, string.byte, string.format
local tostring, tonumber, type, select, setmetatable, getmetatable, error, unpack =
      tostring, tonumber, type, select, setmetatable, getmetatable, error, unpack
local concat = table.concat

local _M = {}

_M.null = setmetatable({}, { __tostring = function() return "resp.null" end })
local ERROR_MT = { __tostring = function(e) return e.err end }

function _M.is_error(v) return type(v) == "table" and getmetatable(v) == ERROR_MT end

local function bulk(a)
    a = tostring(a)
    return "$" .. #a .. "\r\n" .. a .. "\r\n"
end

-- one, two and three arguments (GET k, SET k v) without a table: the
-- light form calls this once per message
function _M.command(...)
    local n = select("#", ...)
    if n == 1 then return "*1\r\n" .. bulk((...)) end
    if n == 2 then
        local a, b = ...
        return "*2\r\n" .. bulk(a) .. bulk(b)
    end
    if n == 3 then
        local a, b, c = ...
        return "*3\r\n" .. bulk(a) .. bulk(b) .. bulk(c)
    end
    local out = { "*" .. n .. "\r\n" }
    for i = 1, n do
        local a = tostring((select(i, ...)))
        out[#out + 1] = "$" .. #a .. "\r\n" .. a .. "\r\n"
    end
    return concat(out)
end

local function bad(buf, pos, why)
    error(format("RESP: %s at byte %d: %q", why, pos, sub(buf, pos, pos + 40)), 0)
end

-- the line at pos (the type byte's line): its text after the type byte,
-- and the position after its CR LF; nil when the line is not complete
local function line(buf, pos)
    local e = find(buf, "\r\n", pos + 1, true)
    if not e then
        if #buf - pos > 65536 then bad(buf, pos, "a line longer than 64 KiB") end
        return nil
    end
    return sub(buf, pos + 1, e - 1), e + 2
end

-- a length: decimal digits, -1 for nil (no sign otherwise, no spaces,
-- no hex, no exponent)
local function count(buf, pos, text)
    if not (find(text, "^%d+$") or text == "-1") or #text > 15 then bad(buf, pos, "not a length") end
    return tonumber(text)
end

local DOUBLE_WORDS = { inf = true, ["-inf"] = true, nan = true }

-- a simple reply's line, checked: integer (:) decimal digits with an
-- optional sign, double (,) a number or inf/-inf/nan, boolean (#) t or f,
-- null (_) empty, big number (() digits with an optional sign
local function check_simple(buf, pos, t, text)
    if t == 58 or t == 40 then
        if not find(text, "^[+-]?%d+$") then bad(buf, pos, "not an integer") end
    elseif t == 44 then
        if not (DOUBLE_WORDS[text] or (find(text, "^[+-]?[%d.]") and tonumber(text))) then
            bad(buf, pos, "not a double")
        end
    elseif t == 35 then
        if text ~= "t" and text ~= "f" then bad(buf, pos, "not a boolean (t or f)") end
    elseif t == 95 then
        if text ~= "" then bad(buf, pos, "not a null") end
    end
end

-- the end of a blob whose line ends at nxt and length is n (nil: not all
-- here); raises when its bytes are not followed by CR LF
local function blob_end(buf, nxt, n)
    local e = nxt + n + 2
    if #buf < e - 1 then return nil end
    if sub(buf, e - 2, e - 1) ~= "\r\n" then bad(buf, e - 2, "a bulk string not ended by CR LF") end
    return e
end

local AGGREGATE = { [42] = 1, [37] = 2, [126] = 1, [62] = 1, [124] = 2 } -- * % ~ > |
local BLOB = { [36] = true, [33] = true, [61] = true }                   -- $ ! =
local SIMPLE = { [43] = true, [45] = true, [58] = true, [95] = true,     -- + - : _
                 [44] = true, [35] = true, [40] = true }                 -- , # (

-- the end (next position) of the reply at pos, or nil
local function skip(buf, pos, depth)
    if pos > #buf then return nil end
    if depth > 64 then bad(buf, pos, "nested deeper than 64") end
    local t = byte(buf, pos)
    local text, nxt = line(buf, pos)
    if not text then
        if not (SIMPLE[t] or BLOB[t] or AGGREGATE[t]) then bad(buf, pos, "not a reply type") end
        return nil
    end
    if SIMPLE[t] then
        check_simple(buf, pos, t, text)
        return nxt
    end
    if BLOB[t] then
        local n = count(buf, pos, text)
        if n < 0 then return nxt end
        return blob_end(buf, nxt, n)
    end
    local per = AGGREGATE[t]
    if not per then bad(buf, pos, "not a reply type") end
    local n = count(buf, pos, text)
    local p = nxt
    for _ = 1, (n < 0 and 0 or n * per) do
        p = skip(buf, p, depth + 1)
        if not p then return nil end
    end
    return p
end

function _M.expect(buf)
    local e = skip(buf, 1, 0)
    return e and e - 1 or nil
end

function _M.expect_ok(buf)
    local n = _M.expect(buf)
    if n then
        local t = byte(buf, 1)
        if t == 45 or t == 33 then error(format("RESP: error reply %q", sub(buf, 1, n - 2)), 0) end
    end
    return n
end

-- the value at pos and the position after it, or nil (incomplete);
-- raises on what skip (expect) raises on
local function decode(buf, pos, depth)
    if pos > #buf then return nil end
    if depth > 64 then bad(buf, pos, "nested deeper than 64") end
    local t = byte(buf, pos)
    local text, nxt = line(buf, pos)
    if not text then
        if not (SIMPLE[t] or BLOB[t] or AGGREGATE[t]) then bad(buf, pos, "not a reply type") end
        return nil
    end
    if SIMPLE[t] then check_simple(buf, pos, t, text) end
    if t == 43 or t == 40 then return text, nxt                               -- + (
    elseif t == 45 then return setmetatable({ err = text }, ERROR_MT), nxt    -- -
    elseif t == 58 then return tonumber(text), nxt                            -- :
    elseif t == 44 then                                                       -- ,
        if text == "inf" then return math.huge, nxt
        elseif text == "-inf" then return -math.huge, nxt
        elseif text == "nan" then return 0 / 0, nxt end
        return tonumber(text), nxt
    elseif t == 95 then return _M.null, nxt                                   -- _
    elseif t == 35 then return text == "t", nxt                               -- #
    elseif BLOB[t] then
        local n = count(buf, pos, text)
        if n < 0 then return _M.null, nxt end
        if not blob_end(buf, nxt, n) then return nil end
        local s = sub(buf, nxt, nxt + n - 1)
        if t == 33 then return setmetatable({ err = s }, ERROR_MT), nxt + n + 2 end
        if t == 61 then s = sub(s, 5) end -- verbatim: "txt:" first
        return s, nxt + n + 2
    end
    local per = AGGREGATE[t]
    if not per then bad(buf, pos, "not a reply type") end
    local n = count(buf, pos, text)
    if n < 0 then return _M.null, nxt end
    local out, p = {}, nxt
    for i = 1, n do
        local v
        if per == 2 then
            local k
            k, p = decode(buf, p, depth + 1)
            if k == nil then return nil end
            v, p = decode(buf, p, depth + 1)
            if v == nil then return nil end
            out[k] = v
        else
            v, p = decode(buf, p, depth + 1)
            if v == nil then return nil end
            out[i] = v
        end
    end
    return out, p
end

function _M.decode(buf, pos)
    return decode(buf, pos or 1, 0)
end

function _M.call(conn, args, tag)
    local r, err, code = conn:call(_M.command(unpack(args)), _M.expect, tag)
    if not r then return nil, err, code end
    return (decode(r, 1, 0))
end

local Reader = {}
Reader.__index = Reader

function Reader:push(bytes)
    self.buf = self.buf .. bytes
end

function Reader:next()
    local v, nxt = decode(self.buf, self.pos, 0)
    if v == nil then return nil end
    self.pos = nxt
    -- drop what was read once it is most of the buffer
    if self.pos > 4096 and self.pos > #self.buf / 2 then
        self.buf, self.pos = sub(self.buf, self.pos), 1
    end
    return v
end

function Reader:pending()
    return sub(self.buf, self.pos)
end

function _M.reader()
    return setmetatable({ buf = "", pos = 1 }, Reader)
end

return _M
