-- fixtures_help_spec.lua -- every fixture program under spec/fixtures (the
-- Python peers and checkers, fake_worker.sh) answers --help with what it is
-- and how it is called (its own header), exit 0, before it opens anything.
local ROOT = os.getenv("ARKBENCH_ROOT") or "."
package.path = ROOT .. "/spec/?.lua;" .. package.path
local proc = require("helpers.proc")
local peers = require("helpers.peers")
local shq = proc.shq

local function programs()
    local out = {}
    local list = proc.sh_out("cd " .. shq(ROOT) .. " && ls spec/fixtures/*/*.py spec/fixtures/*.sh")
    for f in list:gmatch("[^\n]+") do
        if not f:match("/_[^/]*$") then out[#out + 1] = f end
    end
    return out
end

describe("fixture programs", function()
    it("all answer --help with their own name first, exit 0", function()
        local list = programs()
        assert.is_true(#list >= 30, #list .. " programs")
        for _, f in ipairs(list) do
            local run = f:match("%.py$") and (peers.PY .. " " .. shq(f)) or ("sh " .. shq(f))
            local text = proc.sh_out("cd " .. shq(ROOT) .. " && timeout 20 " .. run
                .. " --help 2>&1; echo \"rc=$?\"")
            local name = f:match("[^/]+$")
            assert.truthy(text:match("rc=0\n$"), f .. ": " .. text)
            assert.are.equal(name, text:match("^(%S+)"), f .. ": " .. text)
        end
    end)
end)
