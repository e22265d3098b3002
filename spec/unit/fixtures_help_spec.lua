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

describe("misbehaving/_peer.py", function()
    -- a SIGTERM handled while the main thread holds the counters' lock (it
    -- counts each accepted connection) still prints the counters: a plain
    -- Lock deadlocked there, and the fixture was killed without its line
    it("prints its JSON line on SIGTERM while the main thread holds the lock", function()
        local text = proc.sh_out("cd " .. shq(ROOT) .. " && timeout -k 1 5 " .. peers.PY .. " -c "
            .. shq("import sys, os, signal; sys.path.insert(0, 'spec/fixtures/misbehaving'); "
                .. "import _peer; signal.signal(signal.SIGTERM, _peer.dump_and_exit); "
                .. "_peer.lock.acquire(); os.kill(os.getpid(), signal.SIGTERM); "
                .. "import time; time.sleep(3)")
            .. " 2>&1; echo \"rc=$?\"")
        assert.truthy(text:match('^{"connections": 0}\nrc=0\n$'), text)
    end)
end)
