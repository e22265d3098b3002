-- core/ is layered (base < proto < io < engine < drivers < lua): no file
-- includes a higher layer's header, the include graph has no cycle, the
-- pure layers never include the Lua C API, and the engine layer names no
-- protocol and no execution mode.  The checker is tested on synthetic trees
-- first, so that the real tree passing means something.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local layers = require("helpers.layers")

local ROOT = os.getenv("ARKBENCH_ROOT") or "."

local function lines(problems)
    local out = {}
    for _, p in ipairs(problems) do out[#out + 1] = layers.format(p) end
    return table.concat(out, "\n")
end

describe("the layer checker", function()
    it("passes a clean synthetic tree", function()
        local files = {
            ["core/base/a.h"] = "#include <stdint.h>\n",
            ["core/proto/b.h"] = '#include "base/a.h"\n',
            ["core/engine/c.c"] = '#include "proto/b.h"\n#include "base/a.h"\n',
        }
        assert.are.same({}, layers.check(files))
    end)

    it("catches an upward include", function()
        local files = {
            ["core/base/a.h"] = '#include "engine/e.h"\n',
            ["core/engine/e.h"] = "",
        }
        local up = layers.only(layers.check(files), "upward")
        assert.are.equal(1, #up)
        assert.are.equal("core/base/a.h", up[1].file)
        assert.are.equal("engine/e.h", up[1].include)
    end)

    it("catches a cycle inside one layer", function()
        local files = {
            ["core/io/a.h"] = '#include "io/b.h"\n',
            ["core/io/b.h"] = '#include "io/c.h"\n',
            ["core/io/c.h"] = '#include "io/a.h"\n',
            ["core/io/d.c"] = '#include "io/a.h"\n',
        }
        local cyc = layers.only(layers.check(files), "cycle")
        assert.are.equal(1, #cyc)
        assert.are.same({ "core/io/a.h", "core/io/b.h", "core/io/c.h", "core/io/a.h" }, cyc[1].path)
    end)

    it("catches lua.h in a pure layer and allows it in core/lua", function()
        local files = {
            ["core/drivers/x.c"] = "#include <lauxlib.h>\n",
            ["core/lua/y.c"] = "#include <lua.h>\n#include <lauxlib.h>\n",
        }
        local bad = layers.only(layers.check(files), "lua_in_pure")
        assert.are.equal(1, #bad)
        assert.are.equal("core/drivers/x.c", bad[1].file)
    end)

    it("catches a protocol or execution name in the engine layer, not elsewhere", function()
        local files = {
            ["core/engine/e.c"] = "int x;\n/* the TLS handshake */\nint ws_frame;\nint news;\n",
            ["core/drivers/d.c"] = "/* tls, tcp, coroutine */\n",
        }
        local bad = layers.only(layers.check(files), "engine_names")
        assert.are.equal(2, #bad)
        assert.are.equal(2, bad[1].line)
        assert.are.equal(3, bad[2].line)
    end)

    it("reports a quoted include that is not in the tree", function()
        local bad = layers.only(layers.check({ ["core/io/a.c"] = '#include "io/nope.h"\n' }), "unknown")
        assert.are.equal(1, #bad)
    end)
end)

-- Engine files that still name protocols or executions (a ratchet: a file
-- listed here that becomes clean fails the spec until it is taken off the
-- list; every other engine file must be clean).  Empty: the drivers' per-
-- connection parts live behind the driver (drivers/drivers_int.h), the
-- engine keeps only the client header (engine/engine_int.h).
local ENGINE_NAMES_PENDING = {}

describe("the real core/ tree", function()
    local problems = layers.check(layers.scan(ROOT))
    for _, kind in ipairs({ "upward", "cycle", "lua_in_pure", "unknown" }) do
        it("has no " .. kind .. " problem", function()
            local bad = layers.only(problems, kind)
            assert.are.equal("", lines(bad))
        end)
    end

    it("names no protocol or execution in the engine layer", function()
        local bad, still = {}, {}
        for _, p in ipairs(layers.only(problems, "engine_names")) do
            if ENGINE_NAMES_PENDING[p.file] then still[p.file] = true
            else bad[#bad + 1] = p end
        end
        assert.are.equal("", lines(bad))
        for file in pairs(ENGINE_NAMES_PENDING) do
            assert.is_true(still[file] == true, file .. " is clean now: take it off ENGINE_NAMES_PENDING")
        end
    end)
end)
