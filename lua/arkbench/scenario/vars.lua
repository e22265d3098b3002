-- arkbench.scenario.vars: the scenario key `vars`, the user's own axes
-- (docs/scenarios.md "vars: user axes"): { name = value | { value, ... } },
-- a value a string, a number or a boolean. Each name with a list is an
-- axis of the matrix like the built-in ones (a case per value, crossed
-- with the others, `name=value` in the case id when it varies); a case
-- carries one value per name in case.vars, which request = function(i,
-- conn), client/server = function(conn) (conn.vars) and message =
-- function(i, id, vars) read. Problems go into the validation context
-- (arkbench.scenario.msg) under the key 'vars'.

local type, pairs, ipairs, tostring, next = type, pairs, ipairs, tostring, next
local str_find = string.find
local tbl_sort, tbl_concat = table.sort, table.concat

local msg = require("arkbench.scenario.msg")

local list_length, describe, fail = msg.list_length, msg.describe, msg.fail

local _M = {}

local function scalar(v)
    local t = type(v)
    return (t == "string" and not str_find(v, "%c")) or (t == "number" and v == v
        and v > -math.huge and v < math.huge) or t == "boolean"
end

-- what a case holds besides the scenario's keys
local RESERVED = { case_id = true, index = true, vars = true, part = true }

local EXPECTED_VALUE = "a string without control characters, a finite number or a boolean"

-- vars -> { name = { value, ... } } (a lone value as a list of one), or nil
-- after failing; known: the scenario's own keys (a name may not be one).
function _M.check(ctx, v, known)
    local label = "key 'vars'"
    if type(v) ~= "table" or (next(v) ~= nil and list_length(v)) then
        fail(ctx, "vars", label .. ": got " .. describe(v) .. "; expected a table of names to"
             .. " values or lists of values, { op = { \"get\", \"set\" } }")
        return nil
    end
    local names = {}
    for name in pairs(v) do names[#names + 1] = name end
    tbl_sort(names, function(a, b) return tostring(a) < tostring(b) end)
    local out, ok = {}, true
    for _, name in ipairs(names) do
        local nl = label .. ": '" .. tostring(name) .. "'"
        local val = v[name]
        if type(name) ~= "string" or not str_find(name, "^[%a_][%w_]*$") or #name > 32 then
            fail(ctx, "vars", label .. ": name " .. describe(name) .. "; expected a name of"
                 .. " letters, digits and _ (not first), at most 32 bytes")
            ok = false
        elseif known[name] or RESERVED[name] then
            fail(ctx, "vars", nl .. " is a scenario key; expected a name of your own (set '"
                 .. name .. "' as a key of the scenario instead)")
            ok = false
        elseif type(val) == "table" then
            local n = list_length(val)
            if not n or n == 0 then
                fail(ctx, "vars", nl .. ": got " .. describe(val) .. "; expected " .. EXPECTED_VALUE
                     .. ", or a non-empty list of them")
                ok = false
            else
                local list = {}
                for i = 1, n do
                    if not scalar(val[i]) then
                        fail(ctx, "vars", nl .. " element " .. i .. ": got " .. describe(val[i])
                             .. "; expected " .. EXPECTED_VALUE)
                        ok = false
                    end
                    list[i] = val[i]
                end
                out[name] = list
            end
        elseif scalar(val) then
            out[name] = { val }
        else
            fail(ctx, "vars", nl .. ": got " .. describe(val) .. "; expected " .. EXPECTED_VALUE
                 .. ", or a non-empty list of them")
            ok = false
        end
    end
    return ok and out or nil
end

-- The names of checked vars, sorted: the order their axes expand in
-- (after the built-in axes; the last turns fastest) and appear in ids.
function _M.names(vars)
    local names = {}
    for name in pairs(vars or {}) do names[#names + 1] = name end
    tbl_sort(names)
    return names
end

-- Cases times the var axes: how many cases vars multiplies a part by.
function _M.count(vars)
    local n = 1
    for _, list in pairs(vars or {}) do n = n * #list end
    return n
end

-- Every combination of one value per name: a list of { name = value }
-- (one empty table without vars), the last name turning fastest.
function _M.combinations(vars)
    local names = _M.names(vars)
    local out = { {} }
    for _, name in ipairs(names) do
        local next_out = {}
        for _, base in ipairs(out) do
            for _, value in ipairs(vars[name]) do
                local c = {}
                for k, x in pairs(base) do c[k] = x end
                c[name] = value
                next_out[#next_out + 1] = c
            end
        end
        out = next_out
    end
    return out
end

-- " name=value" for each name whose value differs between cases (all,
-- cases with case.vars), appended to each case's case_id.
function _M.name_cases(all)
    local varies, names, seen = {}, {}, {}
    for _, c in ipairs(all) do
        for name in pairs(c.vars or {}) do
            if not seen[name] then seen[name] = true; names[#names + 1] = name end
        end
    end
    tbl_sort(names)
    for _, name in ipairs(names) do
        local first = all[1].vars and tostring(all[1].vars[name])
        for i = 2, #all do
            if (all[i].vars and tostring(all[i].vars[name])) ~= first then varies[name] = true break end
        end
    end
    for _, c in ipairs(all) do
        local id = {}
        for _, name in ipairs(names) do
            if varies[name] and c.vars and c.vars[name] ~= nil then
                id[#id + 1] = name .. "=" .. tostring(c.vars[name])
            end
        end
        if #id > 0 then
            local rest = tbl_concat(id, " ")
            c.case_id = (c.case_id == "default") and rest or (c.case_id .. " " .. rest)
        end
    end
end

return _M
