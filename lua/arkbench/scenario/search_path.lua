-- arkbench.scenario.search_path: where `require` looks from a scenario
-- file (docs/lua-api.md, "Sharing a workload").
--
--   search_path.dirs(scenario_path [, getenv]) -> { dir, ... }
--       the folders searched for a scenario's modules, in order: the
--       scenario file's own folder, each folder of ARKBENCH_PATH (separated
--       by ':'; empty entries skipped), LuaRocks' user tree
--       ($HOME/.luarocks/share/lua/5.1) -- after arkbench's own lua/ tree,
--       so a scenario cannot shadow arkbench's modules by accident; LuaRocks'
--       system tree (/usr/local/share/lua/5.1) and Debian's are on LuaJIT's
--       default path already, after these.
--   search_path.apply(scenario_path)
--       puts those folders (each as DIR/?.lua;DIR/?/init.lua) into
--       package.path right after arkbench's own entries, and LuaRocks' user
--       tree's C modules into package.cpath; calling it again for another
--       scenario replaces what the last call added. scenario/load.lua
--       calls it before it runs the file, in every process that loads one:
--       the loader child, the worker, and each event loop's Lua state (which
--       loads the scenario again, arkbench.exec.boot), so the same modules
--       are found everywhere.

local _M = {}

local added_path, added_cpath = "", ""

local function absolute(dir)
    if dir:sub(1, 1) == "/" then return dir end
    local ok, core = pcall(require, "arkbench.core")
    local cwd = ok and core.getcwd and core.getcwd() or os.getenv("PWD")
    if not cwd then return dir end
    if dir == "." then return cwd end
    return (cwd:gsub("/$", "")) .. "/" .. dir:gsub("^%./", "")
end

function _M.dirs(scenario_path, getenv)
    getenv = getenv or os.getenv
    local out = {}
    local dir = type(scenario_path) == "string" and scenario_path:match("^(.*)/[^/]*$") or "."
    if dir == "" then dir = "/" end
    out[#out + 1] = absolute(dir)
    for d in ((getenv("ARKBENCH_PATH") or "") .. ":"):gmatch("([^:]*):") do
        if d ~= "" then out[#out + 1] = absolute((d:gsub("/+$", ""))) end
    end
    local home = getenv("HOME")
    if home and home ~= "" then out[#out + 1] = (home:gsub("/+$", "")) .. "/.luarocks/share/lua/5.1" end
    return out
end

local function plain(s) return (s:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")) end

function _M.apply(scenario_path)
    local entries = {}
    for _, d in ipairs(_M.dirs(scenario_path)) do
        entries[#entries + 1] = d .. "/?.lua;" .. d .. "/?/init.lua;"
    end
    local add = table.concat(entries)
    local path = package.path
    if added_path ~= "" then path = path:gsub(plain(added_path), "", 1) end
    -- right after arkbench's own lua/ tree (ab_lua_host_setup puts it first)
    local root = rawget(_G, "ARKBENCH_ROOT")
    local own = root and (root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;")
    local at = own and path:find(own, 1, true)
    if at then
        package.path = path:sub(1, at + #own - 1) .. add .. path:sub(at + #own)
    else
        package.path = add .. path
    end
    added_path = add
    local home = os.getenv("HOME")
    local cadd = home and home ~= "" and ((home:gsub("/+$", "")) .. "/.luarocks/lib/lua/5.1/?.so;") or ""
    local cpath = package.cpath
    if added_cpath ~= "" then cpath = cpath:gsub(plain(added_cpath), "", 1) end
    package.cpath = cadd .. cpath
    added_cpath = cadd
end

return _M
