-- json.lua -- strict JSON for result files.
--
--   json.encode(v [, opts]) -> string        raises on unencodable values
--   json.decode(s)          -> v | nil, err
--   json.null                                 (= cjson.null)
--   json.array(t)           -> t              marks t to encode as an array,
--                                             even when empty
--
-- Decoding is lua-cjson's (strict instance: NaN/Infinity literals refused;
-- run under the C numeric locale whatever the process's is).
-- Encoding is done here rather than by cjson.encode because result files need
-- what cjson does not give:
--   * NaN and +/-inf become null, anywhere in the value, instead of an error;
--   * numbers round-trip exactly: an integral |v| < 1e18 is written as all of
--     its digits (cjson writes 1e+15 and 1.2345678901234e+14 for integers
--     >= 1e14, which loses digits of packet and byte counters); any other
--     number is written with the fewest significant digits (14..17) that read
--     back to the same double (0.1 stays "0.1"); -0 is written as 0;
--   * '.' decimals whatever LC_NUMERIC says (LuaJIT formats numbers itself;
--     a ',' from a C library would be replaced anyway);
--   * object keys sorted, so equal values give byte-identical files;
--   * '/' is not escaped (cjson writes "\/" in paths);
--   * strings are valid UTF-8 whatever the Lua string holds: each byte that
--     is not part of a well-formed UTF-8 sequence (a stray continuation
--     byte, a truncated sequence, an overlong form, a surrogate, a code
--     point past U+10FFFF) is written as \ufffd, one per byte (and U+FFFD
--     itself always as \ufffd, so a replaced byte reads the same in every
--     file whether or not it was decoded in between); valid
--     sequences are written as they are (json.valid_utf8 tells them apart).
-- Tables: a table whose keys are exactly 1..n (n >= 1), or one marked with
-- json.array, is an array (holes up to the largest index are null); any
-- other table is an object whose keys must be strings or numbers (numbers
-- are written as their JSON text).  An empty unmarked table is {}.
-- opts.indent (number of spaces or a string) pretty-prints; default is one
-- line, which runs.jsonl needs.

local cjson = require("cjson")

local type, pairs, next, tostring, tonumber = type, pairs, next, tostring, tonumber
local getmetatable, setmetatable, error, pcall = getmetatable, setmetatable, error, pcall
local floor, huge = math.floor, math.huge
local format, rep, byte = string.format, string.rep, string.byte
local concat, sort = table.concat, table.sort
local setlocale = os.setlocale

local _M = {}

local strict = cjson.new()
strict.decode_invalid_numbers(false)
strict.decode_max_depth(1000)

_M.null = cjson.null

local array_mt = { __jsontype = "array" }

function _M.array(t)
    t = t or {}
    if type(t) ~= "table" then error("json.array: table expected, got " .. type(t), 2) end
    return setmetatable(t, array_mt)
end

function _M.is_array(t)
    return type(t) == "table" and getmetatable(t) == array_mt
end

-- Numbers -----------------------------------------------------------------

local function fix_decimal(s)
    -- A C library under a ',' locale would write 0,5; JSON needs 0.5.
    return (s:gsub(",", "."))
end

local function number_text(v)
    if v ~= v or v == huge or v == -huge then return "null" end
    if v == 0 then return "0" end -- also -0
    if v == floor(v) and v < 1e18 and v > -1e18 then
        return fix_decimal(format("%.0f", v))
    end
    for digits = 14, 16 do
        local s = fix_decimal(format("%." .. digits .. "g", v))
        if tonumber(s) == v then return s end
    end
    return fix_decimal(format("%.17g", v))
end

_M.number_text = number_text

-- Strings -----------------------------------------------------------------

local escapes = {
    ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f",
    ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t",
}

local function escape_char(c)
    return escapes[c] or format("\\u%04x", byte(c))
end

-- Length of the well-formed UTF-8 sequence starting at byte i of s, or nil.
local function utf8_len(s, i)
    local c = byte(s, i)
    local n, lo, hi
    if c < 0x80 then return 1
    elseif c >= 0xC2 and c <= 0xDF then n = 2
    elseif c >= 0xE0 and c <= 0xEF then n = 3
    elseif c >= 0xF0 and c <= 0xF4 then n = 4
    else return nil end
    -- the second byte's range excludes overlongs, surrogates and > U+10FFFF
    lo, hi = 0x80, 0xBF
    if c == 0xE0 then lo = 0xA0 elseif c == 0xED then hi = 0x9F
    elseif c == 0xF0 then lo = 0x90 elseif c == 0xF4 then hi = 0x8F end
    local c2 = byte(s, i + 1)
    if not c2 or c2 < lo or c2 > hi then return nil end
    for k = i + 2, i + n - 1 do
        local ck = byte(s, k)
        if not ck or ck < 0x80 or ck > 0xBF then return nil end
    end
    return n
end

-- s -> true when s is well-formed UTF-8
local function valid_utf8(s)
    local i = s:find("[\128-\255]")
    while i do
        local n = utf8_len(s, i)
        if not n then return false end
        i = s:find("[\128-\255]", i + n)
    end
    return true
end

local function escape_ascii(s)
    return (s:gsub('[%z\1-\31"\\\127]', escape_char))
end

-- The JSON text of s (without quotes) with every byte outside a well-formed
-- sequence written as \ufffd.
local function repaired_text(s)
    local out, from = {}, 1
    local i = s:find("[\128-\255]")
    while i do
        local n = utf8_len(s, i)
        if n then
            i = s:find("[\128-\255]", i + n)
        else
            out[#out + 1] = escape_ascii(s:sub(from, i - 1))
            out[#out + 1] = "\\ufffd"
            from = i + 1
            i = s:find("[\128-\255]", from)
        end
    end
    out[#out + 1] = escape_ascii(s:sub(from))
    return table.concat(out)
end

-- U+FFFD itself is always written as \ufffd: a byte replaced here and one
-- replaced on an earlier encode (and decoded since, as the worker's case
-- is) then read the same in every file.
local function string_text(s)
    if s:find("[\128-\255]") then
        local t = valid_utf8(s) and escape_ascii(s) or repaired_text(s)
        return '"' .. t:gsub("\239\191\189", "\\ufffd") .. '"'
    end
    return '"' .. escape_ascii(s) .. '"'
end

-- Tables ------------------------------------------------------------------

-- Returns n when t is an array of n items (holes allowed), else nil.
local function array_length(t)
    if getmetatable(t) == array_mt then
        local n = 0
        for k in pairs(t) do
            if type(k) ~= "number" or k < 1 or k ~= floor(k) then
                error("json.encode: array-marked table has key " .. tostring(k), 0)
            end
            if k > n then n = k end
        end
        return n
    end
    if next(t) == nil then return nil end
    local n, count = 0, 0
    for k in pairs(t) do
        if type(k) ~= "number" or k < 1 or k ~= floor(k) or k == huge then return nil end
        if k > n then n = k end
        count = count + 1
    end
    -- Very sparse integer keys read better (and stay small) as an object.
    if n > 2 * count and n > 10 then return nil end
    return n
end

local encode_value

local function encode_table(t, out, depth, indent, seen)
    if seen[t] then error("json.encode: table contains a cycle", 0) end
    if depth > 1000 then error("json.encode: nested deeper than 1000", 0) end
    seen[t] = true
    local nl, pad, pad_in, colon = "", "", "", ":"
    if indent then
        nl = "\n"
        pad = rep(indent, depth)
        pad_in = pad .. indent
        colon = ": "
    end
    local n = array_length(t)
    if n then
        if n == 0 then
            out[#out + 1] = "[]"
        else
            out[#out + 1] = "[" .. nl
            for i = 1, n do
                out[#out + 1] = pad_in
                encode_value(t[i], out, depth + 1, indent, seen)
                out[#out + 1] = (i < n and "," or "") .. nl
            end
            out[#out + 1] = pad .. "]"
        end
    else
        local keys, by_text = {}, {}
        for k, v in pairs(t) do
            local kt = type(k)
            local text
            if kt == "string" then
                text = k
            elseif kt == "number" then
                text = number_text(k)
            else
                error("json.encode: cannot use a " .. kt .. " as an object key", 0)
            end
            if by_text[text] ~= nil then
                error("json.encode: duplicate object key " .. string_text(text), 0)
            end
            by_text[text] = v
            keys[#keys + 1] = text
        end
        if #keys == 0 then
            out[#out + 1] = "{}"
        else
            sort(keys)
            out[#out + 1] = "{" .. nl
            for i = 1, #keys do
                local k = keys[i]
                out[#out + 1] = pad_in .. string_text(k) .. colon
                encode_value(by_text[k], out, depth + 1, indent, seen)
                out[#out + 1] = (i < #keys and "," or "") .. nl
            end
            out[#out + 1] = pad .. "}"
        end
    end
    seen[t] = nil
end

encode_value = function(v, out, depth, indent, seen)
    local vt = type(v)
    if vt == "nil" or v == cjson.null then
        out[#out + 1] = "null"
    elseif vt == "boolean" then
        out[#out + 1] = v and "true" or "false"
    elseif vt == "number" then
        out[#out + 1] = number_text(v)
    elseif vt == "string" then
        out[#out + 1] = string_text(v)
    elseif vt == "table" then
        encode_table(v, out, depth, indent, seen)
    else
        error("json.encode: cannot encode a " .. vt, 0)
    end
end

function _M.encode(v, opts)
    local indent
    if opts and opts.indent then
        indent = opts.indent
        if type(indent) == "number" then indent = rep(" ", indent) end
    end
    local out = {}
    local ok, err = pcall(encode_value, v, out, 0, indent, {})
    if not ok then error(err, 2) end
    return concat(out)
end

function _M.decode(s)
    if type(s) ~= "string" then return nil, "json.decode: string expected, got " .. type(s) end
    -- cjson reads numbers with strtod, which follows LC_NUMERIC as it is now
    -- (the host never sets it, but an embedding or a spec might).
    local locale = setlocale(nil, "numeric")
    local switch = locale ~= "C" and locale ~= "POSIX"
    if switch then setlocale("C", "numeric") end
    local ok, v = pcall(strict.decode, s)
    if switch then setlocale(locale, "numeric") end
    if not ok then return nil, tostring(v) end
    return v
end

_M.valid_utf8 = valid_utf8

return _M
