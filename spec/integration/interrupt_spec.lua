-- interrupt_spec.lua -- acceptance 7 with the real binary: Ctrl-C of the
-- whole process group (what a terminal does), SIGINT to the orchestrator
-- alone, and a worker killed with SIGKILL in the middle of a run.
--
-- Each run starts in a session of its own through helpers.session's wrapper
-- (it records the process group, the orchestrator's pid and its exit code;
-- arkbench starts with SIGINT at its default disposition, as under a
-- terminal).
-- Runtime: ~20 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")
local session = require("helpers.session")

local cjson = ark.cjson
local read_file = files.read_file
local sh_ok, now_s, wait_for, pid_alive = proc.sh_ok, proc.now, proc.wait_for, proc.exists
local count_lines, worker_lines, exit_code = session.count_lines, session.worker_lines, session.exit_code
local read_runs = ark.read_runs

teardown(function()
    -- never leave a run of ours behind, whatever failed
    session.kill_unfinished()
    files.remove_tmpdirs()
end)

local function start(name, text)
    return session.start(name, text, { suffix = "_e2e_intr" })
end

local SEVERAL = [[
return {
    payload = 64,
    clients = 1,
    window = 1,
    work = { 0, 1, 2, 3 },
    warmup = 0.05,
    duration = 2,
    repetitions = 1,
}
]]

-- Starts SEVERAL, waits for the first finished run and the second worker,
-- then sends SIGINT with `kill_cmd(r)`; checks everything acceptance 7 asks.
local function interrupt_case(name, kill_cmd)
    local r = start(name, SEVERAL)
    local got_line = wait_for(function() return count_lines(r.out .. "/runs.jsonl") >= 1 end, 30)
    assert.is_truthy(got_line, "no run finished within 30 s; stderr:\n" .. (read_file(r.dir .. "/stderr") or ""))
    -- interrupt while a worker is running (the second case)
    local running = wait_for(function() return #worker_lines(r.scen) > 0 end, 5)
    assert.is_truthy(running, "the second worker did not start")
    local finished = count_lines(r.out .. "/runs.jsonl")
    assert.is_true(pid_alive(r.orch))

    local t0 = now_s()
    assert(sh_ok(kill_cmd(r)))
    local gone = wait_for(function() return not pid_alive(r.orch) end, 5, 0.01)
    local took = now_s() - t0
    assert.is_truthy(gone, "the orchestrator still runs 5 s after SIGINT")
    assert.is_true(took < 1.0, string.format("the orchestrator took %.3f s to exit after SIGINT", took))

    local rc = exit_code(r, 5)
    local stderr = read_file(r.dir .. "/stderr") or ""
    assert.are.equal(130, rc, "exit code; stderr:\n" .. stderr)

    -- no worker of this scenario is left
    local left = wait_for(function() return #worker_lines(r.scen) == 0 end, 0.5)
    assert.is_truthy(left, "workers left after the orchestrator exited:\n" .. table.concat(worker_lines(r.scen), "\n"))

    local runs = read_runs(r.out .. "/runs.jsonl")
    assert.is_true(finished >= 1)
    assert.are.equal(finished + 1, #runs, "runs.jsonl should hold the finished runs plus one interrupted run")
    assert.is_true(#runs < 4, "all cases ran: the interrupt did not stop the run")
    for i = 1, #runs - 1 do
        assert.is_true(runs[i].ok, "finished run " .. i .. " is not ok: " .. tostring(runs[i].error))
        assert.are.equal("ok", runs[i].status)
    end
    local last = runs[#runs]
    assert.are.equal("interrupted", last.status, "last run: " .. cjson.encode(last))
    assert.are.equal(false, last.ok)
    assert.are.equal("work=" .. (#runs - 1), last.case_id)
    local interrupted = 0
    for _, run in ipairs(runs) do
        if run.status == "interrupted" then interrupted = interrupted + 1 end
    end
    assert.are.equal(1, interrupted)

    local stext = read_file(r.out .. "/summary.json")
    assert.is_truthy(stext, "summary.json is missing")
    local ok, summary = pcall(cjson.decode, stext)
    assert.is_true(ok, "summary.json is not strict JSON: " .. tostring(summary))
    assert.are.equal(true, summary.interrupted)
    assert.are.equal(#runs, summary.runs_total)
    assert.is_truthy(read_file(r.out .. "/env.json"), "env.json is missing")
    return r
end

describe("arkbench run interrupted (acceptance 7)", function()
    it("Ctrl-C to the process group: exits 130 within 1 s, keeps finished runs, marks the cut one", function()
        interrupt_case("ctrlc_group", function(r) return "kill -INT -" .. r.pgid end)
    end)

    it("SIGINT to the orchestrator alone: the same, and it stops its worker itself", function()
        interrupt_case("sigint_orch", function(r) return "kill -INT " .. r.orch end)
    end)

    it("a worker killed with SIGKILL: the run goes on, records the crash and exits 1", function()
        local r = start("sigkill_worker", [[
return {
    payload = 64,
    clients = 1,
    window = 1,
    work = { 0, 1, 2 },
    warmup = 0.05,
    duration = 1.5,
    repetitions = 1,
}
]])
        local workers = wait_for(function()
            local w = worker_lines(r.scen)
            return #w > 0 and w or nil
        end, 20)
        assert.is_truthy(workers, "no worker appeared; stderr:\n" .. (read_file(r.dir .. "/stderr") or ""))
        assert.are.equal(0, count_lines(r.out .. "/runs.jsonl"), "a run finished before the first worker was seen")
        local wpid = tonumber(workers[1]:match("^(%d+)"))
        local killed_id = workers[1]:match('"case_id":"([^"]*)"') or "work=0"
        assert.are.equal("work=0", killed_id, "the first worker is not the first case")
        local t0 = now_s()
        assert(sh_ok("kill -KILL " .. wpid))

        local rc = exit_code(r, 30)
        local took = now_s() - t0
        local stderr = read_file(r.dir .. "/stderr") or ""
        assert.is_truthy(rc, "the run did not finish within 30 s of the kill; stderr:\n" .. stderr)
        assert.are.equal(1, rc, "exit code; stderr:\n" .. stderr)
        -- the two remaining cases take ~2 x 1.6 s; the killed one is not waited out
        assert.is_true(took < 15, string.format("the run took %.1f s after the kill", took))

        local runs = read_runs(r.out .. "/runs.jsonl")
        assert.are.equal(3, #runs)
        local by = {}
        for _, run in ipairs(runs) do by[run.case_id] = run end
        local k = by[killed_id]
        assert.is_truthy(k, "no run recorded for " .. killed_id)
        assert.are.equal(false, k.ok)
        assert.are.equal("SIGKILL", k.signal)
        assert.are_not.equal("ok", k.status)
        assert.are_not.equal("interrupted", k.status)
        assert.are.equal("string", type(k.error))
        for _, id in ipairs({ "work=1", "work=2" }) do
            assert.is_truthy(by[id], "no run for " .. id)
            assert.is_true(by[id].ok, id .. " is not ok: " .. tostring(by[id].error))
            assert.is_true(by[id].completed > 0)
        end

        local ok, summary = pcall(cjson.decode, read_file(r.out .. "/summary.json") or "")
        assert.is_true(ok, "summary.json is missing or not strict JSON")
        assert.are.equal(false, summary.interrupted)
        assert.are.equal(3, summary.runs_total)
        assert.are.equal(1, summary.runs_failed)
        assert.are.equal(0, #worker_lines(r.scen), "a worker is left")
    end)
end)

-- Acceptance 8 of issue 12: the interrupted run keeps what it measured.
-- One 10 s case (interval 0.5 s), interrupted in the middle, about 5 s
-- into its measure phase; the run object must hold the counts, the
-- histogram and the intervals up to the interrupt (their counts and
-- merged histograms equal the run's), and the identity. Runtime: ~2 x 5.5 s.
local KEEP = [[
return {
    payload = 64,
    clients = 2,
    window = 4,
    warmup = 0.1,
    duration = 10,
    interval = 0.5,
    repetitions = 1,
%s
}
]]

local function keep_case(name, extra, kill_cmd)
    local r = start(name, KEEP:format(extra))
    local running = wait_for(function() return #worker_lines(r.scen) > 0 end, 20)
    assert.is_truthy(running, "no worker started; stderr:\n" .. (read_file(r.dir .. "/stderr") or ""))
    -- warm-up 0.1 s, then about 5 s of the 10 s measure phase
    proc.sleep(5.1)
    local t0 = now_s()
    assert(sh_ok(kill_cmd(r)))
    local rc = exit_code(r, 10)
    local took = now_s() - t0
    local stderr = read_file(r.dir .. "/stderr") or ""
    assert.are.equal(130, rc, "exit code; stderr:\n" .. stderr)
    -- the drain is bounded by min(timeout, 0.5 s)
    assert.is_true(took < 2.0, string.format("the orchestrator took %.3f s to exit", took))
    assert.are.equal(0, #worker_lines(r.scen), "a worker is left")

    local runs = read_runs(r.out .. "/runs.jsonl")
    assert.are.equal(1, #runs)
    local run = runs[1]
    assert.are.equal("interrupted", run.status, cjson.encode(run))
    assert.are.equal(false, run.ok)
    assert.is_truthy(run.error:find("interrupted after", 1, true), run.error)
    -- measured up to the interrupt, not the whole duration, nor nothing
    assert.is_true(run.measured_s > 2.5 and run.measured_s < 9.5,
                   "measured_s = " .. tostring(run.measured_s))
    assert.is_true(run.completed > 0)
    assert.are.equal(run.sent, run.completed + run.drained + run.timed_out
                                + run.message_errors + run.unfinished,
                     "the identity: " .. cjson.encode(run))
    assert.is_true(run.rtt_us.count > 0)
    assert.is_truthy(run.rtt_histogram)
    -- the intervals begun before the interrupt, the last one ending there
    local iv = run.intervals
    assert.are.equal(math.ceil(run.measured_s / 0.5 - 1e-9), #iv)
    local last = iv[#iv]
    assert.is_true(math.abs(last.t_s + last.duration_s - run.measured_s) < 1e-6)
    local sent, completed, errors, timed_out, hists = 0, 0, 0, 0, {}
    for i, v in ipairs(iv) do
        assert.is_true(math.abs(v.t_s - (i - 1) * 0.5) < 1e-9)
        if i < #iv then assert.is_true(v.completed > 0, "interval " .. i .. " is empty") end
        sent, completed = sent + v.sent, completed + v.completed
        errors, timed_out = errors + v.errors, timed_out + v.timed_out
        hists[i] = v.rtt_histogram
    end
    assert.are.equal(run.completed, completed)
    assert.are.equal(run.sent, sent)
    assert.are.equal(run.message_errors, errors)
    assert.are.equal(run.timed_out, timed_out)
    -- the intervals' histograms merged are the run's
    local core = require("arkbench.core")
    local merged = assert(core.hist_merge(hists))
    local m, whole = core.hist_summary(merged), core.hist_summary(run.rtt_histogram)
    assert.are.equal(whole.count, m.count)
    assert.are.equal(run.completed + run.drained, m.count)
    assert.are.equal(whole.max, m.max)
    assert.are.equal(whole.p99, m.p99)
    local ok, summary = pcall(cjson.decode, read_file(r.out .. "/summary.json") or "")
    assert.is_true(ok, "summary.json is missing or not strict JSON")
    assert.are.equal(true, summary.interrupted)
    return run
end

describe("arkbench run interrupted mid-run (issue 12, acceptance 8)", function()
    it("Ctrl-C to the process group: exit 130, the run keeps its counts and intervals", function()
        keep_case("keep_group", "", function(r) return "kill -INT -" .. r.pgid end)
    end)

    it("SIGINT to the orchestrator alone (open loop): it forwards it, the numbers are kept", function()
        local run = keep_case("keep_orch", "    rate = 2000,", function(r) return "kill -INT " .. r.orch end)
        assert.are.equal("open", run.load_model)
        -- the schedule ended at the interrupt: what it meant to send by then went out
        assert.is_true(math.abs(run.rate_achieved - 2000) < 0.05 * 2000,
                       "rate_achieved = " .. tostring(run.rate_achieved))
    end)
end)
