-- search_path_spec.lua -- arkbench.scenario.search_path (docs/lua-api.md
-- "Sharing a workload"): the folders a scenario's require searches, in
-- order, and package.path after apply (arkbench's own tree first, a
-- second apply replacing the first's entries).
local sp = require("arkbench.scenario.search_path")

local function env(t) return function(k) return t[k] end end

describe("search_path", function()
    it("lists the scenario's folder, ARKBENCH_PATH's and LuaRocks' user tree, in that order", function()
        local dirs = sp.dirs("/a/b/s.lua", env({ ARKBENCH_PATH = "/x::/y/", HOME = "/home/u" }))
        assert.are.same({ "/a/b", "/x", "/y", "/home/u/.luarocks/share/lua/5.1" }, dirs)
        assert.are.same({ "/s" }, { sp.dirs("/s/f.lua", env({}))[1] })
        -- a relative path is made absolute from the current folder
        local rel = sp.dirs("f.lua", env({}))[1]
        assert.are.equal("/", rel:sub(1, 1))
    end)

    it("puts them after arkbench's own tree, and replaces them on the next apply", function()
        local saved = package.path
        local root = rawget(_G, "ARKBENCH_ROOT")
        sp.apply("/one/s.lua")
        local p1 = package.path
        assert.truthy(p1:find("/one/?.lua;/one/?/init.lua;", 1, true))
        if root then
            local own = root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;"
            local at = assert(p1:find(own, 1, true))
            assert.are.equal(at + #own, p1:find("/one/?.lua;", 1, true))
        end
        sp.apply("/two/s.lua")
        assert.falsy(package.path:find("/one/?.lua", 1, true))
        assert.truthy(package.path:find("/two/?.lua", 1, true))
        package.path = saved
    end)

    describe("a module load error, as scenario.load reports it", function()
        local load = require("arkbench.scenario.load")
        local dir = os.tmpname()
        os.remove(dir)
        os.execute("mkdir -p '" .. dir .. "'")
        local function write(name, text)
            local f = assert(io.open(dir .. "/" .. name, "w"))
            f:write(text)
            f:close()
        end
        teardown(function() os.execute("rm -rf '" .. dir .. "'") end)

        it("keeps a module's syntax error with its file and line", function()
            write("broken_mod.lua", "local x = 1\nlocal y = = 2\nreturn {}\n")
            write("uses_broken.lua", "require('broken_mod')\nreturn { protocol = 'tcp' }\n")
            local spec, err = load.load(dir .. "/uses_broken.lua")
            assert.is_nil(spec)
            assert.matches("error loading module 'broken_mod'", err, 1, true)
            assert.matches("broken_mod.lua:2:", err, 1, true)
            assert.matches("unexpected symbol", err, 1, true)
        end)

        it("keeps the list of places a missing module was searched in", function()
            write("uses_missing.lua", "require('team_missing_mod')\nreturn { protocol = 'tcp' }\n")
            local spec, err = load.load(dir .. "/uses_missing.lua")
            assert.is_nil(spec)
            assert.matches("module 'team_missing_mod' not found:", err, 1, true)
            -- the scenario's own folder is among the places searched, each on its line
            assert.matches("\n[^\n]*" .. dir:gsub("%p", "%%%0") .. "/team_missing_mod%.lua", err)
            local lines = select(2, err:gsub("\n", "\n"))
            assert.is_true(lines >= 3, err)
        end)
    end)
end)
