-- interrupt_spec.lua -- acceptance 7 with the real binary: Ctrl-C of the
-- whole process group (what a terminal does), SIGINT to the orchestrator
-- alone, and a worker killed with SIGKILL in the middle of a run.
--
-- Each run starts in a session of its own (`setsid -f`, so its process group
-- can be signalled without touching busted) through a small wrapper script
-- that records the wrapper's pid (= the process group), the orchestrator's
-- pid (a shell that writes $$ and execs arkbench) and the orchestrator's exit
-- code. The wrapper traps SIGINT (so it survives the group's Ctrl-C and can
-- record $?); arkbench itself starts with SIGINT at its default disposition,
-- as under a terminal. (A plain `cmd &` from a non-interactive shell would
-- start arkbench with SIGINT ignored, which a terminal never does.)
-- Runtime: ~10 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")

local BIN, cjson = ark.BIN, ark.cjson
local shq, read_file, write_file = files.shq, files.read_file, files.write_file
local sh_ok, capture, now_s, wait_for, pid_alive = proc.sh_ok, proc.sh_out, proc.now, proc.wait_for, proc.exists

local groups = {}
local function tmpdir() return files.tmpdir("_e2e_intr") end

teardown(function()
    -- never leave a run of ours behind, whatever failed (a wrapper that wrote
    -- its rc has ended: its group id may belong to someone else by now)
    for _, g in ipairs(groups) do
        if not read_file(g.dir .. "/rc") then os.execute("kill -KILL -" .. g.pgid .. " 2>/dev/null") end
    end
    files.remove_tmpdirs()
end)

local WRAPPER = [[
#!/bin/sh
# $1 = folder, $2 = arkbench, $3 = scenario
trap : INT
echo $$ > "$1/pgid.tmp" && mv "$1/pgid.tmp" "$1/pgid"
sh -c 'echo $$ > "$1/orch.pid.tmp" && mv "$1/orch.pid.tmp" "$1/orch.pid" && exec "$2" run "$3" --out "$1/out"' \
  sh "$1" "$2" "$3" >"$1/stdout" 2>"$1/stderr" </dev/null
echo $? > "$1/rc.tmp" && mv "$1/rc.tmp" "$1/rc"
]]

local function count_lines(path)
    local n = 0
    for _ in (read_file(path) or ""):gmatch("[^\n]+") do n = n + 1 end
    return n
end

-- "[a]rkbench" matches arkbench but not the pgrep/sh command line itself.
local function worker_lines(scen)
    local out = capture("pgrep -af " .. shq("[a]rkbench worker " .. scen) .. " 2>/dev/null")
    local list = {}
    for line in out:gmatch("[^\n]+") do list[#list + 1] = line end
    return list
end

local function start(name, text)
    local d = tmpdir()
    local scen = d .. "/" .. name .. ".lua"
    write_file(scen, text)
    write_file(d .. "/wrapper.sh", WRAPPER)
    assert(sh_ok("setsid -f sh " .. shq(d .. "/wrapper.sh") .. " " .. shq(d) .. " " .. shq(BIN) .. " "
        .. shq(scen) .. " </dev/null >/dev/null 2>&1"))
    local pgid = wait_for(function() return tonumber((read_file(d .. "/pgid") or ""):match("%d+")) end, 10)
    assert.is_truthy(pgid, "the wrapper did not start")
    groups[#groups + 1] = { pgid = pgid, dir = d }
    local orch = wait_for(function() return tonumber((read_file(d .. "/orch.pid") or ""):match("%d+")) end, 10)
    assert.is_truthy(orch, "the orchestrator did not start")
    return { dir = d, scen = scen, pgid = pgid, orch = orch, out = d .. "/out" }
end

local function read_runs(path)
    local runs = {}
    local i = 0
    for line in (read_file(path) or ""):gmatch("[^\n]+") do
        i = i + 1
        local ok, v = pcall(cjson.decode, line)
        assert.is_true(ok, "runs.jsonl line " .. i .. " is not strict JSON: " .. tostring(v))
        runs[i] = v
    end
    return runs
end

local function exit_code(r, timeout)
    return wait_for(function() return tonumber((read_file(r.dir .. "/rc") or ""):match("%d+")) end, timeout)
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
