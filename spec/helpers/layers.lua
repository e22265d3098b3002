-- spec/helpers/layers.lua -- the layer rules of core/ (docs/architecture.md,
-- CMakeLists.txt): base < proto < io < engine < drivers < lua; core/test and
-- core/bench sit above them all.
--
--   layers.scan(root)           -> files: { ["core/x/y.c"] = source, ... }
--   layers.check(files)         -> problems: list of
--       { kind = "upward", file =, include = }   a header of a higher layer
--       { kind = "cycle", path = { f1, f2, ..., f1 } }   file-level cycle
--       { kind = "lua_in_pure", file =, include = }   lua.h & co outside core/lua
--       { kind = "unknown", file =, include = }   a quoted include not in core/
--       { kind = "engine_names", file =, line =, text = }   the engine layer
--           names a protocol or an execution mode
--   layers.format(problem)      -> one line for a failure message
-- Only `#include "..."` lines count as edges (system headers are no layer);
-- a quoted include is a path under core/.
local M = {}

M.ORDER = { "base", "proto", "io", "engine", "drivers", "lua", "test", "bench" }
local RANK = {}
for i, name in ipairs(M.ORDER) do RANK[name] = i end
M.RANK = RANK

-- Pure layers never see the Lua C API.
local LUA_HEADERS = { ["lua.h"] = true, ["lauxlib.h"] = true, ["lualib.h"] = true,
                      ["luajit.h"] = true, ["lua.hpp"] = true }

-- What the engine layer must not name (case-insensitive, as git grep -i).
M.ENGINE_WORDS = { "tcp", "udp", "tls", "ssl", "%f[%w]ws%f[%W]", "websocket", "http", "coro",
                   "callback", "lua", "hooks" }

local function layer_of(path)
    return path:match("^core/([^/]+)/")
end

local function includes(source)
    local quoted, system = {}, {}
    for line in (source .. "\n"):gmatch("([^\n]*)\n") do
        local q = line:match('^%s*#%s*include%s+"([^"]+)"')
        if q then quoted[#quoted + 1] = q end
        local s = line:match("^%s*#%s*include%s+<([^>]+)>")
        if s then system[#system + 1] = s end
    end
    return quoted, system
end

function M.scan(root)
    local files = {}
    local p = assert(io.popen("cd '" .. root .. "' && find core -type f \\( -name '*.c' -o -name '*.h' \\) | sort"))
    for path in p:lines() do
        local f = assert(io.open(root .. "/" .. path, "rb"))
        files[path] = f:read("*a")
        f:close()
    end
    p:close()
    return files
end

local function sorted_keys(t)
    local keys = {}
    for k in pairs(t) do keys[#keys + 1] = k end
    table.sort(keys)
    return keys
end

-- Every cycle reachable in the include graph, each reported once (by the
-- back edge that closes it).
local function cycles(graph)
    local found, state, stack = {}, {}, {}
    local function visit(node)
        state[node] = "open"
        stack[#stack + 1] = node
        for _, nxt in ipairs(graph[node] or {}) do
            if state[nxt] == "open" then
                local path, start = {}, nil
                for i = #stack, 1, -1 do
                    if stack[i] == nxt then start = i break end
                end
                for i = start, #stack do path[#path + 1] = stack[i] end
                path[#path + 1] = nxt
                found[#found + 1] = { kind = "cycle", path = path }
            elseif state[nxt] == nil then
                visit(nxt)
            end
        end
        stack[#stack] = nil
        state[node] = "done"
    end
    for _, node in ipairs(sorted_keys(graph)) do
        if state[node] == nil then visit(node) end
    end
    return found
end

function M.check(files)
    local problems, graph = {}, {}
    for _, path in ipairs(sorted_keys(files)) do
        local layer = layer_of(path)
        local quoted, system = includes(files[path])
        graph[path] = {}
        for _, inc in ipairs(quoted) do
            local target = "core/" .. inc
            local tl = layer_of(target)
            if files[target] == nil then
                problems[#problems + 1] = { kind = "unknown", file = path, include = inc }
            else
                graph[path][#graph[path] + 1] = target
                if RANK[tl] and RANK[layer] and RANK[tl] > RANK[layer] then
                    problems[#problems + 1] = { kind = "upward", file = path, include = inc }
                end
            end
        end
        if layer ~= "lua" and RANK[layer] and RANK[layer] < RANK.lua then
            for _, inc in ipairs(system) do
                if LUA_HEADERS[inc] then
                    problems[#problems + 1] = { kind = "lua_in_pure", file = path, include = inc }
                end
            end
        end
        if layer == "engine" then
            local n = 0
            for line in (files[path] .. "\n"):gmatch("([^\n]*)\n") do
                n = n + 1
                local low = line:lower()
                for _, w in ipairs(M.ENGINE_WORDS) do
                    if low:find(w) then
                        problems[#problems + 1] = { kind = "engine_names", file = path, line = n, text = line }
                        break
                    end
                end
            end
        end
    end
    for _, c in ipairs(cycles(graph)) do problems[#problems + 1] = c end
    return problems
end

function M.format(p)
    if p.kind == "cycle" then return "include cycle: " .. table.concat(p.path, " -> ") end
    if p.kind == "engine_names" then
        return ("%s:%d: the engine names a protocol or execution: %s"):format(p.file, p.line, p.text)
    end
    local what = { upward = "includes a higher layer's header",
                   lua_in_pure = "is a pure layer and includes",
                   unknown = "includes a header that is not under core/" }
    return ("%s %s %s"):format(p.file, what[p.kind] or p.kind, p.include)
end

-- The problems of one kind.
function M.only(problems, kind)
    local out = {}
    for _, p in ipairs(problems) do
        if p.kind == kind then out[#out + 1] = p end
    end
    return out
end

return M
