-- spec/unit/exec_spec.lua -- the Lua side of execution = "lua" that each
-- loop's state loads (core/lua/lua_exec.c): arkbench.exec.boot picks the
-- scenario part's hooks, arkbench.exec.conn builds the conn methods over
-- the C primitives (stubbed here).

local boot = require("arkbench.exec.boot")
local conn = require("arkbench.exec.conn")

local FIX = "spec/fixtures/lua_exec/"
local HERE = debug.getinfo(1, "S").short_src  -- how errors name this file

describe("arkbench.exec.boot.hooks", function()
    it("returns the scenario's hooks for a one-part scenario", function()
        local h = assert(boot.hooks("spec/fixtures/scenarios/hooks.lua", {}, false))
        assert.equals("ping 2\n", h.message(2))
        assert.equals("line", h.expect)
    end)

    it("picks the part that holds the case index, checking its case_id", function()
        local path = FIX .. "script_error.lua"
        local one = assert(boot.hooks(path, {}, true, 1, "clients=1"))
        local two = assert(boot.hooks(path, {}, true, 2, "clients=2"))
        assert.is_function(one.client)
        assert.is_function(two.client)
        assert.are_not.equal(one.client, two.client)
        assert.equals(one.server ~= nil, two.server ~= nil)
    end)

    it("refuses a case the scenario, as loaded, does not have", function()
        local path = FIX .. "script_error.lua"
        local h, err = boot.hooks(path, {}, true, 2, "clients=9")
        assert.is_nil(h)
        assert.equals(path .. ": case clients=9 (index 2) is not in the scenario as loaded by"
            .. " the worker", err)
        h, err = boot.hooks(path, { "clients=3" }, true, 3, nil)
        assert.is_nil(h)
        -- --set clients=3 makes both parts the same case: the loader refuses it
        assert.equals(path .. ": scenario parts 1 and 2 both define the case 'default' (the same value"
            .. " for every key that names a case); give each part its own label, e.g. label = \"part 2\"", err)
        h, err = boot.hooks(path, {}, true, 3, nil)
        assert.is_nil(h)
        assert.equals(path .. ": case nil (index 3) is not in the scenario as loaded by the worker", err)
    end)

    it("returns the loader's error for a scenario that does not load", function()
        local h, err = boot.hooks("spec/fixtures/scenarios/zero_clients.lua", {}, false)
        assert.is_nil(h)
        assert.equals("spec/fixtures/scenarios/zero_clients.lua:4: key 'clients': got 0; "
            .. "expected an integer from 1 to 100000", err)
    end)
end)

describe("arkbench.exec.conn.metatable", function()
    local sent
    local C = {
        own = function() return true end,
        send = function(k, data) sent[#sent + 1] = k .. ":" .. data; return true end,
        phase = function() return "measure" end,
    }
    local mt = conn.metatable(C)

    it("gives conn methods over the primitives, and conn.phase", function()
        sent = {}
        local c = setmetatable({ _k = "k1", id = 7 }, mt)
        assert.is_true(c:send("hi"))
        assert.same({ "k1:hi" }, sent)
        assert.equals("measure", c.phase)
        assert.equals("arkbench conn 7", tostring(c))
        assert.is_false(getmetatable(c))
    end)

    it("names the caller's line for misuse", function()
        local c = setmetatable({ _k = "k1" }, mt)
        local line = debug.getinfo(1, "l").currentline + 1
        local ok, err = pcall(function() c:send(42) end)
        assert.is_false(ok)
        assert.equals(HERE .. ":" .. line .. ": bad argument #1 to 'send' (string expected, "
            .. "got number)", err)
        line = debug.getinfo(1, "l").currentline + 1
        ok, err = pcall(function() c.send({}, "x") end)
        assert.is_false(ok)
        assert.is_truthy(err:find(HERE .. ":" .. line .. ": bad self to conn:send (call it as "
            .. "conn:send(...))", 1, true), err)
        line = debug.getinfo(1, "l").currentline + 1
        ok, err = pcall(function() c:call("x", 0) end)
        assert.is_false(ok)
        assert.equals(HERE .. ":" .. line .. ": conn:call is for client connections (a server"
            .. " answers with conn:send)", err)
    end)
end)
