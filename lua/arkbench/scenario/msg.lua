-- arkbench.scenario.msg: the text of arkbench.scenario.load's errors and
-- warnings -- how a value is shown after "got", the "did you mean" for a
-- mistyped key, and the validation context that collects every problem with
-- its place (`path:line:` or `--set key=value`; see arkbench.scenario.load for
-- the message convention).

local type, pairs, ipairs, tostring = type, pairs, ipairs, tostring
local str_sub, str_gsub, str_format, str_lower, str_byte =
      string.sub, string.gsub, string.format, string.lower, string.byte
local tbl_concat, tbl_sort = table.concat, table.sort
local math_floor, math_huge = math.floor, math.huge

local source_lines = require("arkbench.scenario.lines")

local _M = {}

---------------------------------------------------------------------------
-- Values and keys in messages

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
-- Validation context: collects every error and warning with its place.

local function new_ctx(path, source)
    local lines, depths = source_lines.index(source or "")
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
            line = source_lines.key_line(ctx.lines, ctx.depths, key) or false
            ctx.line_cache[key] = line
        end
    end
    if not line then
        if ctx.return_line == nil then
            ctx.return_line = source_lines.return_line(ctx.lines, ctx.depths) or false
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

-- Lines of problems (or warnings) printed at most, then "(and N more)".
_M.MAX_LINES = 10

local function texts(list, sorted)
    if sorted then
        tbl_sort(list, function(a, b)
            if a.rank ~= b.rank then return a.rank < b.rank end
            return a.seq < b.seq
        end)
    end
    -- bounded: a file with hundreds of problems gets the first few and a
    -- count, not a screenful per key
    local out = {}
    for i, e in ipairs(list) do
        if i > _M.MAX_LINES then
            out[#out + 1] = "(and " .. (#list - _M.MAX_LINES) .. " more)"
            break
        end
        out[i] = e.text
    end
    return out
end

-- The keys of t that are not in known, sorted (stable messages): a
-- table's stray keys, each to be reported with unknown_key.
local function stray_keys(t, known)
    local set, out = {}, {}
    for _, k in ipairs(known) do set[k] = true end
    for k in pairs(t) do
        if not set[k] then out[#out + 1] = k end
    end
    tbl_sort(out, function(a, b) return tostring(a) < tostring(b) end)
    return out
end

_M.list_length = list_length
_M.describe = describe
_M.unknown_key = unknown_key
_M.stray_keys = stray_keys
_M.new_ctx = new_ctx
_M.where = where
_M.fail = fail
_M.warn = warn
_M.fail_at = fail_at
_M.texts = texts

return _M
