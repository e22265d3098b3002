-- arkbench.scenario.lines: where a key is written in a scenario's source
-- text, so that arkbench.scenario.load's messages can start with `path:line:`.
--
-- The source is scanned once with comments and the insides of strings
-- blanked out (newlines kept), so `-- try payload = 64` in a comment or
-- "clients = 5" in a message string is never taken for the key. Among the
-- lines where `key =` appears, one at table depth 1 (inside `return { ... }`)
-- wins over depth 0 (`s.key = ...`), which wins over deeper ones (a
-- `load = {{clients = 1}}` pair), so the line is the top-level key's.

local ipairs = ipairs
local str_find, str_match, str_gmatch, str_gsub, str_sub =
      string.find, string.match, string.gmatch, string.gsub, string.sub
local tbl_concat = table.concat

local _M = {}

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

-- source text -> lines (comments and string insides blanked), depths (the
-- table depth at the start of each line)
_M.index = index_source
_M.key_line = find_key_line
_M.return_line = find_return_line

return _M
