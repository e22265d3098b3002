-- arkbench.cmd.search: `arkbench search FILE.lua --slo RULE [--from R0
-- --to R1] [--probes N]` -- the highest rate whose run meets the SLO and
-- its rate (docs/load-models.md, "SLO search").
--
-- The scenario must have one case after --filter (and no rate axis: rate is
-- what is searched). Each probe is that case at one rate, one repetition in
-- a fresh worker (run/runner.lua, as `arkbench run` does); its run object
-- goes into runs.jsonl like any run, with case_id "<case> rate=R". A probe
-- passes when its run is ok, every SLO rule holds on it and rate_met is
-- true; a run object without rate_met (a build without open loop) never
-- passes. Bisection: run/bisect.lua. At the answer the case runs its
-- `repetitions` again (case_id "<case> rate=R answer"). summary.json gets
-- `search` = { slo, from, to, probes = [{rate, pass, why}], answer, reason,
-- answer_runs, answer_failed (repetitions at the answer that did not pass) }.
-- Each probe's case has `search` = "probe", the answer's "answer".
--
-- Exit codes: 0 an answer; 3 no rate in the range meets the SLO; 1 a run of
-- the answer failed or results could not be written; 2 bad command line
-- or scenario; 130 interrupted.
--
-- No answer from what was not measured (issue 27): a probe whose run object
-- could not be saved (runs.jsonl: a full disk) stops the search with exit 1,
-- the write error named and the probes so far printed, and no "answer:"
-- line; Ctrl-C stops it with exit 130 and "interrupted, no answer". The
-- probe cut short is not in summary.json's probes (it neither passed nor
-- failed; its run object, status "interrupted", is in runs.jsonl).

local core = require("arkbench.core")
local cli = require("arkbench.cmd.cli")
local bisect = require("arkbench.run.bisect")
local thresholds = require("arkbench.report.thresholds")

local ipairs, pairs, tostring, tonumber, type = ipairs, pairs, tostring, tonumber, type
local format = string.format
local io_stderr, io_stdout = io.stderr, io.stdout

local _M = {}

_M.FROM, _M.TO, _M.PROBES = 100, 1000000, 10

local function die(msg)
    io_stderr:write("arkbench: search: ", msg, "\n")
    return 2
end

-- args after "search" -> opts | nil, why
function _M.parse(args)
    local o = { slo = {}, probes = _M.PROBES, from = _M.FROM, to = _M.TO }
    local rest = { "run" }
    local i = 2
    while i <= #args do
        local a = args[i]
        local name, inline = a:match("^%-%-(%a+)=(.*)$")
        name = name or a:match("^%-%-(%a+)$")
        if name == "slo" or name == "from" or name == "to" or name == "probes" then
            local v = inline
            if v == nil then v = args[i + 1]; i = i + 1 end
            if v == nil then return nil, "--" .. name .. " needs a value" end
            if name == "slo" then
                local r, why = thresholds.parse(v)
                if not r then return nil, "--slo " .. why end
                o.slo[#o.slo + 1] = r
            else
                local n = tonumber(v)
                if not n or n ~= n or n <= 0 or n == math.huge then
                    return nil, format("--%s '%s': expected a number > 0", name, v)
                end
                if name == "probes" and (n < 2 or n % 1 ~= 0) then
                    return nil, format("--probes '%s': expected an integer >= 2", v)
                end
                o[name] = n
            end
        else
            rest[#rest + 1] = a
        end
        i = i + 1
    end
    if #o.slo == 0 then return nil, "needs --slo RULE, e.g. --slo 'p99_us<1000'" end
    if o.from >= o.to then return nil, format("--from %g must be below --to %g", o.from, o.to) end
    local ro, err = cli.parse_run_args(rest, 2)
    if not ro then return nil, err end
    if ro.list or ro.append or #ro.thresholds > 0 then
        return nil, "--list, --append and --threshold are for run, not search"
    end
    if ro.csv or ro.hgrm or ro.openmetrics or ro.json or ro.metrics_listen then
        return nil, "--csv, --hgrm, --openmetrics, --json and --metrics-listen are for run, not search"
            .. " (arkbench report DIR --csv ... exports a search's folder)"
    end
    for k, v in pairs(ro) do o[k] = v end
    return o
end

-- Did one probe's run pass? -> pass, why (a sentence)
function _M.judge(run, slo)
    if type(run) ~= "table" then return false, "no run object" end
    if run.ok ~= true then
        return false, format("run %s: %s", tostring(run.status or "failed"), tostring(run.error or "-"))
    end
    local summary = require("arkbench.report.stats").summarize({ run }, {})
    local rules = { { text = "rate_met", metric = "rate_met" } }
    for _, r in ipairs(slo) do rules[#rules + 1] = r end
    local parts, pass = {}, true
    for _, res in ipairs(thresholds.check(summary, rules)) do
        if res.crossed then pass = false end
        parts[#parts + 1] = (res.crossed and "crossed " or "held ") .. res.rule .. " (" .. res.why .. ")"
    end
    return pass, table.concat(parts, "; ")
end

-- The case at one rate; `search` ("probe" or "answer") tells the probe and
-- the answer at the same rate apart in the tables (the engine ignores it).
local function probe_case(case, rate, role, reps)
    local c = {}
    for k, v in pairs(case) do c[k] = v end
    c.rate = rate
    c.repetitions = reps
    c.search = role
    c.case_id = (case.case_id == "default" and "" or (case.case_id .. " "))
        .. "rate=" .. tostring(rate) .. (role == "answer" and " answer" or "")
    return c
end

-- The result folder (--out DIR, else results/<name>-search/<UTC>) with its
-- env.json -> dir | nil, why
local function open_results(o, spec, started)
    local env = require("arkbench.util.env")
    local json = require("arkbench.util.json")
    local folder = require("arkbench.run.folder")
    local dir, cerr
    if o.out then
        dir, cerr = folder.claim_out(o.out, { sha256 = core.sha256_file(o.path) })
    else
        dir, cerr = folder.claim_new("results/" .. folder.sanitize(spec.name) .. "-search",
                                     env.utc_stamp(started))
    end
    if not dir then return nil, cerr end
    local envinfo = env.collect({ scenario_path = o.path, started_utc = env.utc_iso(started),
                                  binary = core.exe_path and core.exe_path() or nil })
    local ok, werr = cli.write_file(dir .. "/env.json", json.encode(envinfo, { indent = 2 }) .. "\n")
    if not ok then
        folder.release(dir)
        return nil, "cannot write " .. tostring(werr)
    end
    return dir
end

function _M.main(args)
    local o, err = _M.parse(args)
    if not o then return die(err) end
    local spec, cases = cli.load_cases(o)
    if not spec then
        io_stderr:write(cases, "\n")
        return 2
    end
    if #cases ~= 1 then
        return die(format("%s has %d cases; search takes one (narrow it with --filter key=value)",
                          o.path, #cases))
    end
    local case = cases[1]
    if spec.keys.rate ~= nil then
        return die("the scenario sets rate; search chooses it (remove the rate key)")
    end
    -- every probe's rate within the bounds a run takes (issue 27):
    -- rate x duration >= clients, and at most rate_max
    local rmax = core.capabilities().limits.rate_max or 1e9
    local n, d = tonumber(case.clients), tonumber(case.duration)
    if o.to > rmax then
        return die(format("--to %g: expected at most %g messages/s (rate_max)", o.to, rmax))
    end
    if n and d and o.from * d < n then
        return die(format("--from %g: with clients=%d and duration=%g s a probe would send less than"
            .. " one message per connection; expected --from of at least %g (clients / duration)",
            o.from, n, d, n / d))
    end
    if not core.capabilities().limits.open_loop then
        return die("this build has no open-loop load (rate), so no probe could meet its rate;"
                   .. " nothing was run")
    end

    local env = require("arkbench.util.env")
    local json = require("arkbench.util.json")
    local folder = require("arkbench.run.folder")
    local runner = require("arkbench.run.runner")
    local started = core.wall_s()
    local dir, cerr = open_results(o, spec, started)
    if not dir then return die(cerr) end
    local slo_text = {}
    for i, r in ipairs(o.slo) do slo_text[i] = r.text end
    io_stderr:write(format("arkbench: search %s: %s and rate_met, rate %g .. %g /s, at most %d"
        .. " probes -> %s\n", spec.name, table.concat(slo_text, " and "), o.from, o.to, o.probes, dir))

    if core.signals_install then core.signals_install() end
    local all_runs, code = {}, 0
    local stop_why -- a run object that could not be saved: the write error
    -- on a terminal, the live line of each probe (arkbench.cmd.progress),
    -- cleared before the probe's own line
    local _, on_progress = require("arkbench.cmd.progress").printer(1)
    local function run_cases(list)
        local c, runs, rerr = runner.run({ spec = spec, cases = list, sets = o.sets, quick = o.quick,
                                           out_dir = dir, on_progress = on_progress,
                                           saved_before = #all_runs })
        if on_progress then io_stderr:write("\r\27[K"); io_stderr:flush() end
        for _, r in ipairs(runs or {}) do all_runs[#all_runs + 1] = r end
        if rerr then io_stderr:write("arkbench: ", rerr, "\n") end
        if c == 130 then
            code = 130
        elseif rerr or #(runs or {}) < #list then
            -- not saved (or never run): nothing may be concluded from it
            code, stop_why = 1, rerr or "the runner ran no probe (see above)"
        end
        return c, runs or {}
    end
    local result = bisect.search({
        from = o.from, to = o.to, probes = o.probes,
        probe = function(rate, k)
            local _, runs = run_cases({ probe_case(case, rate, "probe", 1) })
            if code ~= 0 then return nil end
            local pass, why = _M.judge(runs[1], o.slo)
            io_stdout:write(format("probe %d: rate %g/s: %s: %s\n", k, rate, pass and "pass" or "fail", why))
            io_stdout:flush()
            return pass, why
        end,
    })
    if code == 0 and result.answer then
        local reps = tonumber(case.repetitions) or 1
        local _, runs = run_cases({ probe_case(case, result.answer, "answer", reps) })
        for _, r in ipairs(runs) do
            if r.status == "interrupted" then break end -- cut short: not judged
            local pass, why = _M.judge(r, o.slo)
            io_stdout:write(format("answer rep %s: rate %g/s: %s: %s\n", tostring(r.repetition),
                result.answer, pass and "pass" or "fail", why))
            if not pass then result.answer_failed = (result.answer_failed or 0) + 1 end
            if r.ok ~= true and code == 0 then code = 1 end
        end
        result.answer_runs = #runs
    end
    local probes = json.array()
    for i, p in ipairs(result.probes) do
        probes[i] = { rate = p.rate, pass = p.pass, why = type(p.info) == "string" and p.info or json.null }
    end
    local search = {
        slo = json.array(slo_text), from = o.from, to = o.to, probes = probes,
        answer = result.answer or json.null, reason = result.reason or json.null,
        answer_runs = result.answer_runs or 0, answer_failed = result.answer_failed or 0,
    }
    local n_probes = #result.probes
    if code == 130 or stop_why then
        -- stopped: the probes so far are what was measured; no answer
        search.answer, search.stopped = json.null, code == 130 and "interrupted" or stop_why
        io_stdout:write(format("%s, no answer: %d probe%s measured and saved (above)%s\n",
            code == 130 and "interrupted" or "stopped", n_probes, n_probes == 1 and "" or "s",
            stop_why and ("; a run object could not be saved: " .. stop_why) or ""))
        if result.answer_runs and code == 130 then
            io_stdout:write(format("(the answer's repetitions were cut short at %g/s)\n", result.answer))
        end
    elseif result.answer then
        io_stdout:write(format("answer: %g messages/s (%s; %d probes; %s)\n", result.answer,
            table.concat(slo_text, " and "), #result.probes, result.reason))
        if (result.answer_failed or 0) > 0 then
            -- the bisection's answer did not hold every time: say so, the
            -- reader decides whether the margin is enough
            io_stdout:write(format("warning: %d of %d repetitions at the answer did not pass:"
                .. " the knee is noisy here (more duration or repetitions narrow it)\n",
                result.answer_failed, result.answer_runs))
        end
    else
        io_stdout:write(format("answer: none: no rate from %g/s meets %s with its rate met (%d probe%s)\n",
            o.from, table.concat(slo_text, " and "), #result.probes, #result.probes == 1 and "" or "s"))
        code = 3
    end
    local _, wrote = cli.finish_results(dir, spec.name, all_runs, {
        scenario = spec.name, started_utc = env.utc_iso(started), ended_utc = env.utc_iso(core.wall_s()),
        interrupted = code == 130, search = search,
    })
    folder.release(dir)
    io_stderr:write("results: ", dir, "\n")
    if not wrote and code == 0 then code = 1 end
    return code
end

return _M
