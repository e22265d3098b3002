-- arkbench.util.units: durations and sizes written with a unit, wherever a
-- scenario key, --set or a command-line flag takes seconds or bytes
-- (docs/scenarios.md, "Units").
--
--   units.seconds(v) -> number | nil
--       v a number (seconds, returned as is) or a string: a number followed
--       by one of us, ms, s, m, h ("250ms", "10s", "1.5s", "2m", "1h"), or
--       such parts one after another, largest unit first, each unit once
--       ("1m30s", "1h2m3s", "2s500ms"); a bare number in a string ("10")
--       is seconds too.
--   units.bytes(v) -> number | nil
--       v a number (bytes) or a string: a number followed by B, KiB, MiB,
--       GiB (powers of 1024) or KB, MB, GB (powers of 1000), e.g. "16KiB",
--       "1.5MiB", "64B"; a bare number in a string is bytes. A fractional
--       byte count is refused (nil).
--   units.DURATION_HINT, units.SIZE_HINT: the words error messages use.
--
-- Anything else gives nil, and the caller's rule reports the value as given.

local type, tonumber = type, tonumber
local str_match, str_lower = string.match, string.lower
local math_floor, math_huge = math.floor, math.huge

local _M = {}

_M.DURATION_HINT = 'or a duration such as "250ms", "10s", "2m"'
_M.SIZE_HINT = 'or a size such as "64B", "16KiB", "1MiB"'

-- sub-second units divide (250 / 1000 is exactly 0.25; 250 * 0.001 is not)
local PER_SECOND = { us = 1e6, ms = 1e3 }
local SECONDS = { s = 1, m = 60, h = 3600 }
local BYTES = {
    b = 1, kib = 1024, mib = 1024 ^ 2, gib = 1024 ^ 3,
    kb = 1000, mb = 1000 ^ 2, gb = 1000 ^ 3,
}

local function finite(n)
    return n ~= nil and n == n and n > -math_huge and n < math_huge
end

-- "12.5ms" -> 12.5, "ms"; nil when the text is not a number and a unit.
local function split(s)
    local num, unit = str_match(s, "^%s*([%d%.]+[eE]?[%-+]?%d*)%s*(%a*)%s*$")
    if not num then return nil end
    local n = tonumber(num)
    if not finite(n) then return nil end
    return n, str_lower(unit)
end

-- seconds of n units (nil for an unknown unit)
local function in_seconds(n, unit)
    if PER_SECOND[unit] then return n / PER_SECOND[unit] end
    local f = unit == "" and 1 or SECONDS[unit]
    if not f then return nil end
    return n * f
end

-- a unit's size, for the order of a compound duration's parts
local RANK = { h = 5, m = 4, s = 3, ms = 2, us = 1 }

-- "1m30s", "1h2m", "2s500ms": parts with a unit each, largest first, each
-- unit once; nil for anything else
local function compound(v)
    local s = str_lower((v:gsub("^%s+", ""):gsub("%s+$", "")))
    if s == "" then return nil end
    local total, pos, last = 0, 1, math_huge
    while pos <= #s do
        local num, unit, stop = s:match("^(%d+%.?%d*)(%a+)()", pos)
        if not num then return nil end
        local rank = RANK[unit]
        if not rank or rank >= last then return nil end
        last = rank
        total = total + in_seconds(tonumber(num), unit)
        pos = stop
    end
    return total
end

function _M.seconds(v)
    if type(v) == "number" then return v end
    if type(v) ~= "string" then return nil end
    local n, unit = split(v)
    if not n then return compound(v) end
    return in_seconds(n, unit)
end

function _M.bytes(v)
    if type(v) == "number" then return v end
    if type(v) ~= "string" then return nil end
    local n, unit = split(v)
    if not n then return nil end
    local f = unit == "" and 1 or BYTES[unit]
    if not f then return nil end
    local b = n * f
    if b ~= math_floor(b) then return nil end
    return b
end

return _M
