-- arkbench.run.runner: run every case `repetitions` times, each time in a fresh
-- worker process, and append each run object to runs.jsonl as soon as its
-- worker ends (docs/run-object.md).
--
--   runner.run(plan) -> exit_code, runs
--
-- plan = {
--   spec    = scenario spec (spec.path, spec.name; spec.sha256 optional),
--   cases   = list of cases (case.case_id, case.repetitions, case.warmup,
--             case.duration, ...; functions are stripped before encoding),
--   sets    = list of "k=v", passed on as `--set k=v`,
--   quick   = bool, passed on as `--quick`,
--   out_dir = folder for runs.jsonl (created),
--   exe     = host binary (default core.exe_path()),
--   on_run  = optional function(run, done, total), after each append,
--   on_start = optional function(case, rep, done, total): a worker is about
--             to start (the live metrics name the running case from here),
--   on_progress = optional function(iv, case, rep, done, total): each
--             finished interval of the running worker's measure phase but
--             the last, while it runs (iv: the worker's progress line,
--             decoded: interval, intervals, t_s, duration_s, sent,
--             completed, errors, timed_out, round_trips_per_s, p50_us,
--             p99_us, max_us; done: runs finished before this one),
--   timeout_s = optional override of the per-run hard limit (tests),
--   rep_base = optional {case_id -> n}: repetitions are numbered from n + 1
--             (an --append continues a folder's numbering),
--   shard   = optional {index, count}: every worker runs that shard of its
--             case (`--shard I/N`, arkbench.run.shard),
--   schedule = optional wall-clock plan (arkbench.run.shard.schedule):
--             run k waits for its slot and measures from its planned
--             instant (`--measure-at`); the run object gets `plan`,
--   saved_before = optional count of runs already in runs.jsonl (search
--             runs one probe per call): the "earlier run(s)" of a failed
--             append count them,
-- }
-- exit_code: 0 every run ok, 1 some run failed or degraded (any status but
-- ok: arkbench.run.status.exit_code), 130 interrupted (SIGINT or
-- SIGTERM; finished runs are kept and the cut-short one is written with
-- status "interrupted": the worker got SIGTERM too, ended its measurement
-- and wrote what it measured up to the interrupt, within the 2 s it has
-- before SIGKILL, core/io/proc.h), 2 out_dir cannot be created, 1 runs.jsonl cannot
-- be written (the message names the file and the errno; a third return
-- value holds it).
-- runs: the run objects in the order they were appended.
--
-- Order: the repetition loop is outermost, so the repetitions of one case are
-- spread over the whole run; a case with fewer repetitions drops out early.
--
-- Each worker is `exe worker <spec.path> --case-json <case> --repetition <r>
-- [--set k=v]... [--quick]`, with stdin from /dev/null, a hard limit of
-- warmup + duration + 30 s (SIGTERM, SIGKILL 500 ms later) and the
-- environment variable ARKBENCH_ORCHESTRATOR_PID, so that the worker can call
-- core.die_with_parent(pid) and not outlive an orchestrator that is killed
-- outright. Every other way out of the orchestrator kills and reaps the
-- current worker first (core/io/proc.h).
--
-- The run object comes on a private channel: the worker's fd 3 is a pipe
-- (core.spawn_wait's `channel`, ARKBENCH_RESULT_FD=3 in its environment),
-- so that whatever the user's scenario prints on stdout -- while loading, in
-- a hook -- never mixes with it. The run object is the LAST non-empty line
-- written on that channel. When it is a JSON object with a boolean `ok` it is
-- written as sent, unless it must be amended: `case_id`/`repetition`
-- missing or different, NaN/Infinity in it (written as null), or a worker that
-- sent ok = true yet exited non-zero, died of a signal, hit the timeout or
-- was interrupted (then ok = false, with the reason in `error`). Without such
-- an object the runner writes one: ok = false, status "timeout", "crashed" or
-- "interrupted", `signal`, `elapsed_s`, and an `error` sentence that names
-- the signal or exit code and quotes the end of the worker's stderr.
-- With plan.on_progress the worker's fd 4 is a progress pipe too
-- (ARKBENCH_PROGRESS_FD=4, core.spawn_wait's on_progress): one JSON line
-- per finished interval, read while it runs; a line that is not a JSON
-- object is ignored.
-- The worker's stdout and stderr go to `workers.log` in out_dir, each line
-- prefixed with "[<case_id> rep <r>] " (stdout lines with "stdout: ").
-- The worker's stderr is also forwarded to ours, each line prefixed with
-- "[<case_id> rep <r>] ", whenever its own run object was read; otherwise it
-- goes into `error`.
--
-- Writes: runs.jsonl gets one complete line per run with one write(2) on an
-- O_APPEND descriptor, fsync'd (core.append_line, in C, so that no result
-- of a write is lost to a JIT trace). A failed append stops the run: exit 1
-- and "arkbench: cannot append to <path>: ENOSPC: no space left on device".

local core = require("arkbench.core")
local cjson = require("cjson")
local json = require("arkbench.util.json")
local casearg = require("arkbench.run.casearg")
local status = require("arkbench.run.status")

local type, pairs, ipairs, tostring, tonumber = type, pairs, ipairs, tostring, tonumber
local pcall, error = pcall, error
local format = string.format
local huge = math.huge
local io_open, stderr = io.open, io.stderr

local _M = {}

-- Seconds a worker gets beyond warmup + duration (connect, drain, start-up);
-- the environment variable ARKBENCH_RUN_TIMEOUT_EXTRA (seconds > 0)
-- overrides it, e.g. for tests of runs that hang.
_M.GRACE_S = 30
do
    local extra = tonumber(os.getenv("ARKBENCH_RUN_TIMEOUT_EXTRA") or "")
    if extra and extra > 0 and extra < math.huge then _M.GRACE_S = extra end
end
-- Connections a worker is allowed to open per second, for its hard limit
-- past the first 1000 (a busy 2-core host opened ~500/s when 100,000
-- were set up at once).
_M.CONNECT_PER_S = 250
-- Bytes of a failed worker's stderr quoted in `error`.
_M.STDERR_TAIL = 2000
-- Bytes of an unreadable last stdout line quoted in `error`.
local STDOUT_QUOTE = 500

-- Lenient reader: a worker that prints NaN still has its run kept (the NaN
-- is written back as null by json.encode).
local lenient = cjson.new()

-- A copy of v without functions, coroutines and userdata (cjson.null stays),
-- for --case-json and the `case` field.
local function strip(v)
    local t = type(v)
    if t == "table" then
        local out = {}
        for k, x in pairs(v) do
            local kt = type(k)
            if kt == "string" or kt == "number" then
                local sx = strip(x)
                if sx ~= nil then out[k] = sx end
            end
        end
        if json.is_array(v) then json.array(out) end
        return out
    elseif t == "function" or t == "thread" then
        return nil
    elseif t == "userdata" then
        if v == cjson.null then return v end
        return nil
    end
    return v
end
_M.strip = strip

local function is_space(b) return b == 32 or b == 9 or b == 10 or b == 13 end

-- The last line of s that is not blank, without surrounding blanks, or nil.
local function last_line(s)
    local e = #s
    while e > 0 and is_space(s:byte(e)) do e = e - 1 end
    if e == 0 then return nil end
    local b = e
    while b > 0 and s:byte(b) ~= 10 do b = b - 1 end
    b = b + 1
    while is_space(s:byte(b)) do b = b + 1 end
    return s:sub(b, e)
end
_M.last_line = last_line

-- seconds for retrying first connects that failed (core/engine/connect.c:
-- up to 6 tries and 1.55 s of backoff per round of 256 connects in flight
-- on a loop): the rounds past the first (the grace covers one), at most
-- CONNECT_RETRY_MAX_S (the limit is for a worker that hangs)
_M.CONNECT_RETRY_MAX_S = 120
local function retry_allowance(case)
    local c = tonumber(case.clients) or 0
    local t = tonumber(case.timeout) or 2
    local ct = tonumber(case.connect_timeout) or (t > 3 and t or 3)
    return math.min((math.ceil(c / 256) - 1) * (6 * ct + 1.55), _M.CONNECT_RETRY_MAX_S)
end

-- seconds for opening the connections past the first 1000, and for
-- retrying failed first connects (retry_allowance)
local function connect_allowance(case)
    local c = tonumber(case.clients) or 0
    return (c > 1000 and (c - 1000) / _M.CONNECT_PER_S or 0) + math.max(retry_allowance(case), 0)
end

local function tail(s, n)
    if #s <= n then return s end
    return "..." .. s:sub(-n)
end

local function has_nonfinite(v)
    if type(v) == "number" then
        return v ~= v or v == huge or v == -huge
    elseif type(v) == "table" then
        for _, x in pairs(v) do
            if has_nonfinite(x) then return true end
        end
    end
    return false
end

-- line -> obj, exact (obj is a run object; exact: line is strict JSON and
-- may be written as it is) | nil, why
local function read_run_object(line)
    if line == nil then return nil, "wrote nothing on its result channel (fd 3)" end
    local ok, obj = pcall(lenient.decode, line)
    if not ok then
        return nil, format("wrote a last result line that is not JSON (%s): %s",
                           (tostring(obj):gsub("^.-: ", "")), tail(line, STDOUT_QUOTE))
    end
    if type(obj) ~= "table" or type(obj.ok) ~= "boolean" then
        return nil, format("wrote a last result line that is not a run object"
                           .. " (no boolean \"ok\"): %s", tail(line, STDOUT_QUOTE))
    end
    return obj, not has_nonfinite(obj) and json.decode(line) ~= nil
end

local function stderr_quote(res)
    local err = res and res.stderr or ""
    if err:match("^%s*$") then return "its stderr was empty" end
    return "its stderr ends: " .. tail(err, _M.STDERR_TAIL)
end

-- How the process ended, as status and a sentence; nil when it exited 0.
local function ending(res, limit_s, case)
    if res.interrupted and res.pid == 0 then
        return "interrupted", format("the run was interrupted by %s before its worker started",
                                     core.interrupted() or "a signal")
    elseif res.interrupted then
        return "interrupted", format("the run was interrupted by %s; the worker was stopped%s",
                                     core.interrupted() or "a signal",
                                     res.term_signal and (" with " .. res.term_signal) or "")
    elseif res.timed_out then
        return "timeout", format("the worker did not finish within its hard limit of %g s"
                                 .. " (warmup + duration + 3 x timeout + %g s%s) and was killed with %s",
                                 limit_s, _M.GRACE_S, connect_allowance(case or {}) > 0
                                     and format(" + (clients - 1000) / %g + connect retries",
                                                _M.CONNECT_PER_S) or "",
                                 res.term_signal or "SIGTERM")
    elseif res.term_signal then
        return "crashed", "the worker was killed by " .. res.term_signal
    elseif res.exit_code ~= 0 then
        return "crashed", format("the worker exited with code %s", tostring(res.exit_code))
    end
    return nil
end

local function forward_stderr(text, prefix)
    if text == nil or text == "" then return end
    for line in text:gmatch("([^\n]*)\n?") do
        if line ~= "" then stderr:write(prefix, line, "\n") end
    end
end

local function append_line(path, line)
    local ok, err = core.append_line(path, line)
    if not ok then return nil, err end
    return true
end

-- Appends the worker's output to workers.log; a failure there is a warning
-- (the measurement itself is in runs.jsonl).
local function log_output(ctx, prefix, res)
    if not res or res.pid == 0 then return end
    local parts = {}
    for _, s in ipairs({ { res.stdout, "stdout: " }, { res.stderr, "" } }) do
        local text = s[1] or ""
        for l in text:gmatch("([^\n]*)\n?") do
            if l ~= "" then parts[#parts + 1] = prefix .. s[2] .. l end
        end
    end
    if #parts == 0 or ctx.log_failed then return end
    local ok, err = core.append_line(ctx.log_path, table.concat(parts, "\n"))
    if not ok then
        ctx.log_failed = true
        stderr:write(format("arkbench: warning: cannot append to %s: %s\n", ctx.log_path, err))
    end
end

local function worker_argv(plan, exe, case_args, rep, slot)
    local argv = { exe, "worker", plan.spec.path, case_args[1], case_args[2],
                   "--repetition", tostring(rep) }
    if plan.shard then
        argv[#argv + 1] = "--shard"
        argv[#argv + 1] = plan.shard.index .. "/" .. plan.shard.count
    end
    if slot then
        argv[#argv + 1] = "--measure-at"
        argv[#argv + 1] = format("%.0f", slot.measure_unix_us)
        argv[#argv + 1] = format("%.6f", slot.lead_s)
    end
    for _, kv in ipairs(plan.sets or {}) do
        argv[#argv + 1] = "--set"
        argv[#argv + 1] = kv
    end
    if plan.quick then argv[#argv + 1] = "--quick" end
    return argv
end

local function mkdir_p(dir)
    local res, err = core.spawn_wait({ "mkdir", "-p", "--", dir }, { timeout_s = 30 })
    if not res then return nil, err end
    -- the caller sees core.interrupted() (mkdir may have died of the same
    -- Ctrl-C: not a failure to report)
    if res.interrupted or core.interrupted() then return true end
    if res.exit_code ~= 0 then
        return nil, (res.stderr:gsub("%s+$", ""))
    end
    return true
end

-- One worker run -> run object (ready to append) and its JSON line.
local function run_one(plan, ctx, case, case_json, rep, done, total, slot)
    local case_id = case.case_id
    -- the engine itself may wait up to three reply timeouts (connect,
    -- warm-up drain, measure drain) on top of warm-up and duration, and
    -- paced connects (connect_rate) take clients / connect_rate, and
    -- opening many connections takes its time (connect_allowance)
    local pace_s = case.connect_rate and (tonumber(case.clients) or 1) / case.connect_rate or 0
    local limit_s = plan.timeout_s
        or (tonumber(case.warmup) or 0) + (tonumber(case.duration) or 0)
           + 3 * (tonumber(case.timeout) or 2) + pace_s + _M.GRACE_S + connect_allowance(case)
    -- a large case goes in a file (E2BIG on argv): arkbench.run.casearg
    local case_args, case_done = casearg.args(case_json)
    if not case_args then case_args, case_done = { "--case-json", case_json }, function() end end
    local argv = worker_argv(plan, ctx.exe, case_args, rep, slot)
    local t0 = core.now_ns()
    local opts = { timeout_s = limit_s, env = ctx.env, channel = true }
    if plan.on_progress then
        opts.env = ctx.env_progress
        opts.on_progress = function(line)
            local ok, iv = pcall(cjson.decode, line)
            if ok and type(iv) == "table" then plan.on_progress(iv, case, rep, done, total) end
        end
    end
    local res, spawn_err = core.spawn_wait(argv, opts)
    case_done()
    local prefix = format("[%s rep %d] ", tostring(case_id), rep)
    log_output(ctx, prefix, res)

    local obj, exact_or_why
    if res and res.pid ~= 0 then
        obj, exact_or_why = read_run_object(last_line(res.channel or ""))
    end

    if obj then
        local exact = exact_or_why
        forward_stderr(res.stderr, prefix)
        if obj.case_id ~= case_id then obj.case_id = case_id; exact = false end
        if obj.repetition ~= rep then obj.repetition = rep; exact = false end
        local status, why = ending(res, limit_s, case)
        if status == "crashed" and res.term_signal == nil then
            -- A non-zero exit mirrors ok = false; with ok = true it is a bug.
            if obj.ok == true then
                status, why = "failed", why .. " although it reported ok"
            else
                status = nil
            end
        end
        if status then
            -- It printed a result but did not end as a finished run does.
            local previous = obj.error
            obj.ok = false
            obj.status = status
            obj.signal = res.term_signal or json.null
            obj.error = why .. (type(previous) == "string"
                                and ("; the worker reported: " .. previous) or "")
            exact = false
        end
        return obj, exact and last_line(res.channel) or json.encode(obj)
    end

    -- No run object: write one.
    local status, why
    if not res then
        status, why = "crashed", "cannot start the worker: " .. tostring(spawn_err)
    else
        status, why = ending(res, limit_s, case)
        if status == nil then
            status, why = "crashed", "the worker exited with code 0"
        end
        if res.pid ~= 0 then
            why = format("%s; it %s; %s", why, exact_or_why, stderr_quote(res))
        end
    end
    local elapsed = res and res.pid ~= 0 and res.elapsed_s or (core.now_ns() - t0) / 1e9
    obj = {
        schema_version = 1,
        scenario = ctx.scenario,
        case_id = case_id,
        case = ctx.case_objs[case],
        repetition = rep,
        ok = false,
        status = status,
        error = why,
        signal = res and res.term_signal or json.null,
        elapsed_s = elapsed,
    }
    return obj, json.encode(obj)
end

function _M.run(plan)
    if type(plan) ~= "table" or type(plan.spec) ~= "table" or type(plan.cases) ~= "table" then
        error("runner.run: expected a plan with spec and cases", 2)
    end
    if type(plan.out_dir) ~= "string" then error("runner.run: plan.out_dir must be a string", 2) end
    local spec = plan.spec
    if type(spec.path) ~= "string" then error("runner.run: plan.spec.path must be a string", 2) end

    local ok, ierr = core.signals_install()
    if not ok then stderr:write("arkbench: warning: cannot catch Ctrl-C: ", ierr, "\n") end

    local exe = plan.exe
    if exe == nil then
        local perr
        exe, perr = core.exe_path()
        if not exe then error("runner.run: cannot find the arkbench binary: " .. perr, 2) end
    end

    local runs = {}
    local made, merr = mkdir_p(plan.out_dir)
    if not made then
        stderr:write(format("arkbench: cannot create %s: %s\n", plan.out_dir, merr))
        return 2, runs
    end
    if core.interrupted() then return 130, runs end
    local runs_path = plan.out_dir .. "/runs.jsonl"

    local scenario = { name = spec.name, path = spec.path }
    scenario.sha256 = spec.sha256 or (spec.path and core.sha256_file(spec.path)) or nil
    local ctx = {
        exe = exe,
        env = { "ARKBENCH_ORCHESTRATOR_PID=" .. tostring(core.getpid()),
                "ARKBENCH_RESULT_FD=3" },
        log_path = plan.out_dir .. "/workers.log",
        scenario = scenario,
        case_objs = {},
    }
    ctx.env_progress = { ctx.env[1], ctx.env[2], "ARKBENCH_PROGRESS_FD=4" }

    local function reps_of(case)
        return tonumber(case.repetitions)
            or (spec.keys and tonumber(spec.keys.repetitions)) or 1
    end
    local jsons, max_rep, total = {}, 0, 0
    for i, case in ipairs(plan.cases) do
        local reps = reps_of(case)
        local c = strip(case)
        ctx.case_objs[case] = c
        jsons[i] = json.encode(c)
        if reps > max_rep then max_rep = reps end
        total = total + reps
    end

    local done, interrupted = 0, false
    for rep = 1, max_rep do
        for i, case in ipairs(plan.cases) do
            if reps_of(case) >= rep then
                if core.interrupted() then interrupted = true; break end
                -- an --append continues each case's repetition numbers
                local base = plan.rep_base and plan.rep_base[case.case_id] or 0
                if plan.on_start then plan.on_start(case, base + rep, done, total) end
                local slot = plan.schedule and plan.schedule:wait(case, done)
                if core.interrupted() then interrupted = true; break end
                local obj, line = run_one(plan, ctx, case, jsons[i], base + rep, done, total, slot)
                if plan.shard and obj.shard == nil then
                    -- a run object the runner wrote still names its shard
                    obj.shard = { index = plan.shard.index, count = plan.shard.count }
                    if slot then plan.schedule:mark(obj, slot) end
                    line = json.encode(obj)
                elseif slot then
                    -- the worker's line as it wrote it, with the plan added
                    plan.schedule:mark(obj, slot)
                    line = line:gsub("}%s*$", "") .. ',"plan":' .. json.encode(obj.plan) .. "}"
                end
                local wok, werr = append_line(runs_path, line)
                if not wok then
                    -- the runs before this one are complete lines in the file
                    stderr:write(format("arkbench: cannot append to %s: %s; %d earlier run(s)"
                                        .. " are in it, this one (%s rep %d) is lost\n",
                                        runs_path, werr, done + (tonumber(plan.saved_before) or 0),
                                        tostring(case.case_id), base + rep))
                    return 1, runs, runs_path .. ": " .. werr
                end
                runs[#runs + 1] = obj
                done = done + 1
                if obj.status == "interrupted" then interrupted = true end
                if plan.on_run then plan.on_run(obj, done, total) end
                if interrupted then break end
            end
        end
        if interrupted then break end
    end

    if interrupted or core.interrupted() then return 130, runs end
    return status.exit_code(runs), runs
end

return _M
