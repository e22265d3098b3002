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
end)
