-- arkbench.exec.boot: what a Lua driver's state runs first (one state per
-- event loop, core/lua/lua_exec.c): it loads the scenario the worker runs,
-- as the worker loaded it (same --set values, --quick), and picks the hooks
-- (client/server functions, message/expect) of the scenario part that the
-- case belongs to.

local ipairs, pairs, tostring, type, next = ipairs, pairs, tostring, type, next
local str_format = string.format

local scenario = require("arkbench.scenario.load")
local matrix = require("arkbench.scenario.matrix")

local _M = {}

-- path, sets (list of "key=value"), quick, index (the case's 1-based index
-- in the expanded matrix, or nil), case_id (or nil)
--   -> hooks | nil, message
-- hooks with the case's user axes (scenario key vars) made visible:
-- client/server = function(conn) find them in conn.vars, message =
-- function(i, id, vars) gets them as its third argument. Unchanged without
-- vars.
local function with_vars(hooks, v)
    if type(v) ~= "table" or next(v) == nil then return hooks end
    local out = {}
    for k, f in pairs(hooks) do out[k] = f end
    for _, k in ipairs({ "client", "server" }) do
        local f = hooks[k]
        if type(f) == "function" then
            out[k] = function(conn)
                conn.vars = v
                return f(conn)
            end
        end
    end
    local m = hooks.message
    if type(m) == "function" then out.message = function(i, id) return m(i, id, v) end end
    return out
end

local function has_vars(spec)
    for _, part in ipairs(spec.parts or { spec }) do
        if part.keys and part.keys.vars then return true end
    end
    return false
end

function _M.hooks(path, sets, quick, index, case_id)
    local spec, err = scenario.load(path, sets)
    if not spec then return nil, err end
    if quick then scenario.apply_quick(spec) end
    local several = spec.parts and #spec.parts >= 2
    if not index or (not several and not has_vars(spec)) then return spec.hooks end
    local all = matrix.expand(spec)
    local case = all[index]
    if not case or (case_id and case.case_id ~= case_id) then
        return nil, str_format("%s: case %s (index %d) is not in the scenario as loaded by"
            .. " the worker", path, tostring(case_id), index)
    end
    if not several then return with_vars(spec.hooks, case.vars) end
    -- the parts' cases come in part order: find the part holding index
    local n = 0
    for _, part in ipairs(spec.parts) do
        local copy = {}
        for k, v in pairs(part) do copy[k] = v end
        copy.parts = nil
        n = n + #matrix.expand(copy)
        if index <= n then return with_vars(part.hooks, case.vars) end
    end
    return nil, path .. ": case index " .. index .. " is past the last scenario part"
end

return _M
