-- vars_spec.lua -- the `vars` key (issue 14): the user's own axes, expanded
-- in the matrix like any key (case ids, --filter, the terminal table's
-- columns), each case holding one value per name in case.vars; and what
-- the check refuses, with file:line.
local scenario = require("arkbench.scenario.load")
local matrix = require("arkbench.scenario.matrix")
local report = require("arkbench.report.report")

-- a scenario file with the given body (a Lua table constructor)
local function file_with(body)
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write("return " .. body .. "\n")
    f:close()
    return path
end

local function load(body)
    local path = file_with(body)
    finally(function() os.remove(path) end)
    local spec, err = scenario.load(path)
    return spec, err, path
end

describe("vars", function()
    it("expands each list as an axis after the built-in ones, one value per case", function()
        local spec = assert(load([[{ protocol = "tcp", payload = { 64, 128 },
            vars = { op = { "get", "set" }, n = 3, fast = { true } } }]]))
        local cases = matrix.expand(spec)
        local ids = {}
        for i, c in ipairs(cases) do ids[i] = c.case_id end
        assert.same({ "payload=64 op=get", "payload=64 op=set", "payload=128 op=get",
            "payload=128 op=set" }, ids)
        assert.same({ fast = true, n = 3, op = "set" }, cases[2].vars)
        for i, c in ipairs(cases) do assert.equals(i, c.index) end
        assert.equals(4, matrix.count(spec))
        local kept = assert(matrix.filter(cases, { "op=set" }))
        assert.equals(2, #kept)
        for _, c in ipairs(kept) do assert.equals("set", c.vars.op) end
        local _, ferr = matrix.filter(cases, { "op=put" })
        assert.equals("--filter left no cases (values of op in this scenario: get, set)", ferr)
    end)

    it("names the cases of several parts by their vars too", function()
        local spec = assert(load([[{ { label = "a", protocol = "tcp", vars = { k = { 1, 2 } } },
            { label = "b", protocol = "tcp", vars = { k = { 1, 2 } } } }]]))
        local ids = {}
        for i, c in ipairs(matrix.expand(spec)) do ids[i] = c.case_id end
        assert.same({ "label=a k=1", "label=a k=2", "label=b k=1", "label=b k=2" }, ids)
    end)

    it("is a column of the terminal table when it varies", function()
        local spec = assert(load([[{ protocol = "tcp", vars = { op = { "get", "set" } } }]]))
        local cases = {}
        for _, c in ipairs(matrix.expand(spec)) do cases[#cases + 1] = { case = c } end
        assert.same({ "op" }, report.axes({ cases = cases }))
        assert.equals("set", report.case_value(cases[2], "op"))
    end)

    it("refuses what is not a table of names to values, with file:line", function()
        local _, err, path = load([[{ protocol = "tcp",
            vars = { op = {}, clients = { 1, 2 }, ["a-b"] = 1, x = { {} } } }]])
        assert.equals(table.concat({
            path .. ":2: key 'vars': name string \"a-b\"; expected a name of letters, digits and _"
                .. " (not first), at most 32 bytes",
            path .. ":2: key 'vars': 'clients' is a scenario key; expected a name of your own (set"
                .. " 'clients' as a key of the scenario instead)",
            path .. ":2: key 'vars': 'op': got an empty list; expected a string without control"
                .. " characters, a finite number or a boolean, or a non-empty list of them",
            path .. ":2: key 'vars': 'x' element 1: got an empty list; expected a string without"
                .. " control characters, a finite number or a boolean",
        }, "\n"), err)
        _, err, path = load([[{ protocol = "tcp", vars = { "get", "set" } }]])
        assert.equals(path .. ":1: key 'vars': got a list; expected a table of names to values or"
            .. " lists of values, { op = { \"get\", \"set\" } }", err)
    end)
end)
