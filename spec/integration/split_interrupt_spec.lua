-- split_interrupt_spec.lua -- the servers a split case starts (placement =
-- "split", processes = N) stop on their worker's SIGTERM only, once the
-- clients drained: a Ctrl-C to the process group reaches them too, and
-- when they stopped on it first the clients counted the closed
-- connections (ECLOSED, ECONNRESET, then ECONNREFUSED on the reopens) as
-- the peer's errors of an interrupted run (docs/run-object.md,
-- "Interrupted runs"). Runtime: ~10 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")
local session = require("helpers.session")

local wait_for, pid_alive = proc.wait_for, proc.exists

teardown(function()
    session.kill_unfinished()
    files.remove_tmpdirs()
end)

local SCEN = [[
return { payload = 64, clients = 8, window = 4, placement = "split", processes = 2,
         warmup = 0.1, duration = %s, interval = 0.25, repetitions = 1, timeout = 5 }
]]

-- the pids of the `arkbench serve` processes of the session's group
local function serve_pids(r)
    local out = {}
    local f = io.popen("ps -eo pid=,pgid=,args=")
    for line in f:lines() do
        local pid, pgid, args = line:match("^%s*(%d+)%s+(%d+)%s+(.*)$")
        if pid and tonumber(pgid) == r.pgid and args:find(" serve ", 1, true) then
            out[#out + 1] = tonumber(pid)
        end
    end
    f:close()
    return out
end

local function measuring(r)
    -- the serve parent and its 2 children
    return wait_for(function() return #serve_pids(r) >= 3 end, 30)
end

describe("split, processes = 2: the servers", function()
    it("ignore a SIGINT of their own: the run ends ok, without errors", function()
        local r = session.start("sigint_serve", SCEN:format("2"), { suffix = "_split_intr" })
        assert.is_truthy(measuring(r), files.read_file(r.dir .. "/stderr"))
        os.execute("sleep 0.8")
        for _, pid in ipairs(serve_pids(r)) do os.execute("kill -INT " .. pid) end
        local rc = session.exit_code(r, 60)
        local runs = ark.read_runs(r.out .. "/runs.jsonl")
        assert.equals(0, rc, files.read_file(r.dir .. "/stderr"))
        local run = runs[1]
        assert.equals("ok", run.status, run.error)
        assert.same({}, run.errors)
        assert.equals(0, run.reconnects)
    end)

    it("outlast the clients on a Ctrl-C to the group: interrupted, no peer error", function()
        local r = session.start("sigint_group", SCEN:format("5"), { suffix = "_split_intr" })
        assert.is_truthy(measuring(r), files.read_file(r.dir .. "/stderr"))
        os.execute("sleep 1")
        os.execute("kill -INT -" .. r.pgid)
        assert.equals(130, session.exit_code(r, 30))
        assert.is_truthy(wait_for(function() return #serve_pids(r) == 0 end, 5))
        local run = ark.read_runs(r.out .. "/runs.jsonl")[1]
        assert.equals("interrupted", run.status)
        assert.same({}, run.errors)
        assert.truthy(run.error:find("interrupted after", 1, true), run.error)
        assert.equals(run.sent, run.completed + run.drained + run.timed_out + run.message_errors
                      + run.unfinished)
        assert.is_true(run.server.messages >= run.completed)
    end)
end)
