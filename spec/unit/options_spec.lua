-- options_spec.lua -- arkbench.cmd.options (docs/one-liner.md "Shell
-- completion"): the data table read from the help tables has every
-- command, and every option with its value and help as the help writes
-- them.
local options = require("arkbench.cmd.options")

local function find(cmds, name)
    for _, c in ipairs(cmds) do if c.name == name then return c end end
end
local function opt(c, name)
    for _, o in ipairs(c.options) do if o.name == name then return o end end
end

describe("options.commands", function()
    local cmds = options.commands()

    it("has every command of the help, the one-liner first", function()
        assert.are.equal("URL", cmds[1].name)
        for _, n in ipairs({ "run", "search", "calibrate", "serve", "report", "compare", "env", "completion", "help" }) do
            assert.truthy(find(cmds, n), n)
        end
        assert.are.equal("FILE.lua", find(cmds, "run").args)
    end)

    it("reads each option's value and help", function()
        local run = find(cmds, "run")
        assert.are.same({ name = "--out", value = "DIR", help = "write results into DIR instead (absent or empty)" },
            opt(run, "--out"))
        assert.is_nil(opt(run, "--quick").value)
        assert.are.equal("HOST:PORT", opt(run, "--metrics-listen").value)
        local url = find(cmds, "URL")
        assert.are.equal("-c", opt(url, "--connections").short)
        assert.are.equal("N", opt(url, "--connections").value)
        assert.are.equal("'N: V'", opt(url, "--header").value)
        -- several options on one line, and search's "as for run"
        assert.are.equal("N", opt(find(cmds, "calibrate"), "--pairs").value)
        assert.are.equal("key=value", opt(find(cmds, "search"), "--set").value)
        assert.are.equal("KEY", opt(find(cmds, "compare"), "--pair").value)
    end)

    it("knows what a value completes to", function()
        assert.are.equal("dir", options.value_kind("DIR"))
        assert.are.equal("file", options.value_kind("FILE"))
        assert.are.equal("lua", options.value_kind("FILE.lua"))
        assert.is_nil(options.value_kind("N"))
    end)
end)
