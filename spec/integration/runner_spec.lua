-- runner_spec.lua -- arkbench.run.runner against spec/fixtures/fake_worker.sh:
-- order, appending, crashes, timeouts, garbage, and Ctrl-C of a whole
-- orchestrator (spec/fixtures/interrupt_driver_spec.lua in its own session).
local runner = require("arkbench.run.runner")
local json = require("arkbench.util.json")
local core = require("arkbench.core")

local ROOT = os.getenv("ARKBENCH_ROOT") or "."
local FAKE = ROOT .. "/spec/fixtures/fake_worker.sh"

package.path = ROOT .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local shq, read_file = files.shq, files.read_file
local sh_ok = proc.sh_ok
local function tmpdir() return files.tmpdir("_runner") end

local function read_lines(path)
    local lines = {}
    for line in (read_file(path) or ""):gmatch("[^\n]+") do lines[#lines + 1] = line end
    return lines
end

local function read_runs(dir)
    local runs = {}
    for i, line in ipairs(read_lines(dir .. "/runs.jsonl")) do
        runs[i] = assert(json.decode(line), "runs.jsonl line " .. i .. " is not strict JSON")
    end
    return runs
end

local function case(id, fake, extra)
    local c = { case_id = id, fake = fake, index = 1, repetitions = 1, warmup = 0,
                duration = 0.01, payload = 64, hook = function() end }
    for k, v in pairs(extra or {}) do c[k] = v end
    return c
end

local function plan(dir, cases, extra)
    local p = {
        spec = { name = "fake", path = FAKE, keys = { repetitions = 3 } },
        cases = cases,
        out_dir = dir,
        exe = FAKE,
    }
    for k, v in pairs(extra or {}) do p[k] = v end
    return p
end

local function sleep(s) os.execute("sleep " .. s) end

teardown(function()
    files.remove_tmpdirs()
end)

describe("runner.last_line", function()
    it("returns the last non-blank line, trimmed", function()
        assert.are.equal("b", runner.last_line("a\nb\n\n  \n"))
        assert.are.equal("{x}", runner.last_line("  {x}  "))
        assert.is_nil(runner.last_line(" \n\n"))
        assert.is_nil(runner.last_line(""))
    end)
end)

describe("runner.run", function()
    it("runs the repetition loop outermost and appends one line per run", function()
        local dir = tmpdir() .. "/nested/out"
        local log = dir .. ".log"
        local progress = {}
        local code, runs = runner.run(plan(dir, {
            case("a", "ok", { repetitions = 2, log = log }),
            case("b", "ok", { repetitions = 1, log = log }),
            case("c", "ok", { repetitions = 2, log = log }),
        }, {
            sets = { "payload=64", "x=y" },
            quick = true,
            on_run = function(run, done, total)
                progress[#progress + 1] = { run.case_id, run.repetition, done, total }
            end,
        }))
        assert.are.equal(0, code)
        assert.are.equal(5, #runs)
        local lines = read_lines(dir .. "/runs.jsonl")
        assert.are.equal(5, #lines)
        local order = {}
        for i, line in ipairs(lines) do
            local r = json.decode(line)
            order[i] = r.case_id .. r.repetition
            assert.is_true(r.ok)
            assert.are.equal("--repetition " .. r.repetition .. " --set payload=64 --set x=y --quick",
                             r.args)
            -- written as the worker printed it: the empty array stays an array
            assert.truthy(line:find('"notes":[]', 1, true))
        end
        assert.are.same({ "a1", "b1", "c1", "a2", "c2" }, order)
        assert.are.same({ { "a", 1, 1, 5 }, { "b", 1, 2, 5 }, { "c", 1, 3, 5 },
                          { "a", 2, 4, 5 }, { "c", 2, 5, 5 } }, progress)
        -- the case reached the worker as JSON, without its functions
        local argv = read_lines(log)
        assert.are.equal(5, #argv)
        assert.truthy(argv[1]:find('^worker ' .. FAKE:gsub("%p", "%%%0") .. ' %-%-case%-json {'))
        assert.truthy(argv[1]:find('"case_id":"a"', 1, true))
        assert.falsy(argv[1]:find("hook", 1, true))
    end)

    it("records a worker killed by SIGKILL and keeps running the other cases", function()
        local dir = tmpdir()
        local code, runs = runner.run(plan(dir, {
            case("dies", "kill9"), case("lives", "ok"),
        }))
        assert.are.equal(1, code)
        local r = read_runs(dir)
        assert.are.equal(2, #r)
        assert.are.equal("dies", r[1].case_id)
        assert.are.equal(1, r[1].repetition)
        assert.is_false(r[1].ok)
        assert.are.equal("crashed", r[1].status)
        assert.are.equal("SIGKILL", r[1].signal)
        assert.are.equal(1, r[1].schema_version)
        assert.are.same({ name = "fake", path = FAKE, sha256 = core.sha256_file(FAKE) }, r[1].scenario)
        assert.are.equal("kill9", r[1].case.fake)
        assert.is_nil(r[1].case.hook)
        assert.is_number(r[1].elapsed_s)
        assert.truthy(r[1].error:find("killed by SIGKILL", 1, true))
        assert.truthy(r[1].error:find("about to die", 1, true))
        assert.is_true(r[2].ok)
        assert.are.equal("lives", r[2].case_id)
        assert.are.equal(2, #runs)
    end)

    it("kills a hanging worker at the timeout and records status timeout", function()
        local dir = tmpdir()
        local t0 = core.now_ns()
        local code = runner.run(plan(dir, { case("hangs", "sleep") }, { timeout_s = 1 }))
        local took = (core.now_ns() - t0) / 1e9
        assert.are.equal(1, code)
        assert.is_true(took >= 0.95 and took < 2.5, "took " .. took .. " s")
        local r = read_runs(dir)
        assert.are.equal(1, #r)
        assert.are.equal("timeout", r[1].status)
        assert.is_false(r[1].ok)
        assert.are.equal("SIGTERM", r[1].signal)
        assert.truthy(r[1].error:find("hard limit of 1 s", 1, true))
        assert.is_true(r[1].elapsed_s >= 0.95 and r[1].elapsed_s < 2.5)
    end)

    it("records garbage on stdout as crashed, quoting it", function()
        local dir = tmpdir()
        local code = runner.run(plan(dir, { case("junk", "garbage") }))
        assert.are.equal(1, code)
        local r = read_runs(dir)[1]
        assert.are.equal("crashed", r.status)
        assert.is_false(r.ok)
        assert.are.equal(json.null, r.signal)
        assert.truthy(r.error:find("exited with code 0", 1, true))
        assert.truthy(r.error:find("this is not json {", 1, true))
    end)

    it("names the exit code and quotes the end of stderr, at most 2000 bytes", function()
        local dir = tmpdir()
        runner.run(plan(dir, { case("three", "exit3") }))
        local r = read_runs(dir)[1]
        assert.are.equal("crashed", r.status)
        assert.truthy(r.error:find("exited with code 3", 1, true))
        assert.truthy(r.error:find("wrote nothing on its result channel (fd 3)", 1, true))
        assert.truthy(r.error:find("END-OF-STDERR", 1, true))
        assert.is_true(#r.error < 2300)
    end)

    it("keeps a worker's own failure and exits 1", function()
        local dir = tmpdir()
        local code = runner.run(plan(dir, { case("refused", "fail"), case("fine", "ok") }))
        assert.are.equal(1, code)
        local r = read_runs(dir)
        assert.are.equal("failed", r[1].status)
        assert.are.equal("ECONNREFUSED: connection refused", r[1].error)
        assert.is_true(r[2].ok)
    end)

    it("fills in case_id and repetition and writes NaN as null", function()
        local dir = tmpdir()
        local code = runner.run(plan(dir, { case("n", "nan", { repetitions = 2 }) }))
        assert.are.equal(0, code)
        local r = read_runs(dir)
        assert.are.equal(2, #r)
        assert.are.equal("n", r[2].case_id)
        assert.are.equal(2, r[2].repetition)
        assert.are.equal(json.null, r[2].cpu_percent)
    end)

    it("records a worker that cannot be started", function()
        local dir = tmpdir()
        local code = runner.run(plan(dir, { case("x", "ok") }, { exe = dir .. "/no-such-binary" }))
        assert.are.equal(1, code)
        local r = read_runs(dir)[1]
        assert.are.equal("crashed", r.status)
        assert.truthy(r.error:find("cannot start the worker: ENOENT", 1, true))
    end)

    -- The hanging worker ignores the signal: it is killed after the grace a
    -- worker has to write what it measured (AB_PROC_INTR_GRACE_MS, 1 s:
    -- a drain of at most 0.5 s, then the merge and the write), so the
    -- runner ends within that grace and a little.
    it("stops at Ctrl-C within 1.5 s, keeps finished runs and kills the worker", function()
        local dir = tmpdir()
        local cmd = string.format(
            "cd %s && (AB_DRIVER_OUT=%s setsid -w %s dev-busted spec/fixtures/interrupt_driver_spec.lua"
            .. " >%s 2>&1; echo $? >%s) </dev/null >/dev/null 2>&1 &",
            shq(ROOT), shq(dir), shq(assert(core.exe_path())),
            shq(dir .. "/driver.log"), shq(dir .. "/exit_code"))
        assert(sh_ok(cmd))
        -- wait for the first run to be written and the hanging worker to start
        local deadline = core.now_ns() + 20e9
        while core.now_ns() < deadline do
            if #read_lines(dir .. "/runs.jsonl") >= 1 and read_file(dir .. "/worker.pid")
               and read_file(dir .. "/worker.pid"):match("%d+") then
                break
            end
            sleep(0.02)
        end
        local driver_pid = assert(tonumber((read_file(dir .. "/driver.pid") or ""):match("%d+")),
                                  "no driver pid; log: " .. tostring(read_file(dir .. "/driver.log")))
        local worker_pid = assert(tonumber((read_file(dir .. "/worker.pid") or ""):match("%d+")),
                                  "the hanging worker did not start; log: "
                                  .. tostring(read_file(dir .. "/driver.log")))
        assert.are.equal(1, #read_lines(dir .. "/runs.jsonl"))

        local t0 = core.now_ns()
        assert(sh_ok("kill -s INT -- -" .. driver_pid))
        local exit_code
        while core.now_ns() - t0 < 5e9 do
            exit_code = tonumber((read_file(dir .. "/exit_code") or ""):match("%d+"))
            if exit_code then break end
            sleep(0.01)
        end
        local took = (core.now_ns() - t0) / 1e9
        local log = read_file(dir .. "/driver.log") or ""
        assert.are.equal(130, exit_code, "driver log: " .. log)
        assert.is_true(took < 1.5, "took " .. took .. " s")

        local r = read_runs(dir)
        assert.are.equal(2, #r)
        assert.are.equal("fast", r[1].case_id)
        assert.is_true(r[1].ok)
        assert.are.equal("hang", r[2].case_id)
        assert.are.equal("interrupted", r[2].status)
        assert.is_false(r[2].ok)
        assert.are.equal("SIGKILL", r[2].signal) -- it ignores SIGTERM
        assert.truthy(r[2].error:find("interrupted by SIGINT", 1, true))
        assert.is_false(sh_ok("kill -0 " .. worker_pid .. " 2>/dev/null"),
                        "worker " .. worker_pid .. " is still alive")
        -- a successful worker's stderr is forwarded with a prefix
        assert.truthy(log:find("[fast rep 1] warning: fake worker warns", 1, true), log)
    end)
end)
