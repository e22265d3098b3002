-- arkbench.cmd.worker: one repetition of one case, in a fresh process.
--
--   arkbench worker FILE (--case-json JSON | --case-file PATH) --repetition N [--set k=v]... [--quick]
--
-- Loads the same scenario file as the orchestrator (so its hooks exist
-- here), runs the case through the C engine and writes exactly one JSON
-- object (docs/run-object.md), even on failure, on its result channel: the
-- descriptor named by ARKBENCH_RESULT_FD (the runner passes 3, a pipe of its
-- own), else stdout (a worker started by hand). The scenario's own prints
-- stay on stdout, which the runner keeps in workers.log. Exit code 0 when
-- the run is ok, 1 otherwise (degraded or failed), 2 when the command line
-- is wrong, 130 when it was interrupted.
--
-- SIGINT/SIGTERM (a terminal's Ctrl-C reaches the whole process group; the
-- orchestrator forwards SIGTERM) end the measurement at once: no more
-- sends, replies drained for at most min(timeout, 0.5 s), and the run
-- object keeps the counts, histograms and intervals measured up to the
-- interrupt, with status "interrupted" (docs/run-object.md).

local core = require("arkbench.core")
local json = require("arkbench.util.json")
local scenario = require("arkbench.scenario.load")
local status = require("arkbench.run.status")
local group = require("arkbench.run.group")
local shard = require("arkbench.run.shard")
local merge_runs = require("arkbench.run.merge")
local sources = require("arkbench.run.sources")
local request = require("arkbench.scenario.request")
local boot = require("arkbench.exec.boot")
local openloop = require("arkbench.report.openloop")

local ipairs, pairs, type, tonumber = ipairs, pairs, type, tonumber
local io_stdout, io_stderr = io.stdout, io.stderr

local _M = {}

-- processes = N: this worker leads N client processes (a part is
-- started with --part and never leads)
local function nproc_of(case, o)
    return (not o.part and tonumber(case.processes)) or 1
end

local function parse(args)
    local o = { sets = {} }
    local i = 1
    while i <= #args do
        local a = args[i]
        if a == "--case-json" then o.case_json = args[i + 1]; i = i + 2
        elseif a == "--case-file" then
            -- a large case comes in a file (arkbench.run.casearg)
            local text, err = require("arkbench.run.casearg").read(tostring(args[i + 1]))
            if not text then return nil, err end
            o.case_json = text
            i = i + 2
        elseif a == "--repetition" then o.repetition = tonumber(args[i + 1]); i = i + 2
        elseif a == "--set" then o.sets[#o.sets + 1] = args[i + 1]; i = i + 2
        elseif a == "--quick" then o.quick = true; i = i + 1
        elseif a == "--part" then
            local pi, pn = tostring(args[i + 1]):match("^(%d+)/(%d+)$")
            if not pi then return nil, "worker: --part expects I/N" end
            o.part = { index = tonumber(pi), count = tonumber(pn) }
            i = i + 2
        elseif a == "--shard" then
            -- this run is shard I of N of the case (arkbench.run.shard)
            local si, sn = tostring(args[i + 1]):match("^(%d+)/(%d+)$")
            if not si then return nil, "worker: --shard expects I/N" end
            o.shard = { index = tonumber(si), count = tonumber(sn) }
            i = i + 2
        elseif a == "--measure-at" then
            -- the wall-clock plan: measure from this instant (unix us),
            -- warm up from LEAD s before it
            o.measure_at = tonumber(args[i + 1])
            o.lead = tonumber(args[i + 2])
            if not o.measure_at or not o.lead then return nil, "worker: --measure-at expects US LEAD_S" end
            i = i + 3
        elseif not o.path and a:sub(1, 2) ~= "--" then o.path = a; i = i + 1
        else return nil, "worker: unexpected argument '" .. a .. "'" end
    end
    if not o.path then return nil, "worker: missing scenario file" end
    if not o.case_json then return nil, "worker: missing --case-json or --case-file" end
    return o
end

-- Copies the engine's result into the run object, keeping its field names.
local function merge(obj, res)
    for k, v in pairs(res) do obj[k] = v end
    if type(obj.notes) == "table" then json.array(obj.notes) end
    if type(obj.connections_per_loop) == "table" then json.array(obj.connections_per_loop) end
end

local function shq(s)
    return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- placement = "split": the server side in its own process (arkbench serve)
-- on an ephemeral loopback port; returns a handle or nil, error.
local TLS_PROTOCOLS = {}  -- the capability table's TLS rows (core/proto/caps.h)
for _, p in ipairs(core.capabilities().protocols) do TLS_PROTOCOLS[p.name] = p.tls end

local function start_server(case, processes)
    local argv = { shq(core.exe_path()), "serve", "--protocol", shq(case.protocol or "tcp"),
        "--listen", "127.0.0.1:0", "--topology", shq(case.topology or "sharded:1"),
        "--work", tostring(case.work or 0), "--framing", shq(case.framing or "length"),
        "--payload", tostring(case.payload or 1024), "--processes", tostring(processes) }
    local cert
    if TLS_PROTOCOLS[case.protocol] then
        -- the server writes its generated certificate; the client trusts it
        cert = os.tmpname()
        os.remove(cert)
        argv[#argv + 1] = "--cert-out"
        argv[#argv + 1] = shq(cert)
        local tls = case.tls or {}
        if tls.version then argv[#argv + 1] = "--tls-version"; argv[#argv + 1] = shq(tls.version) end
        if tls.alpn then
            local a = type(tls.alpn) == "table" and table.concat(tls.alpn, ",") or tls.alpn
            argv[#argv + 1] = "--alpn"
            argv[#argv + 1] = shq(a)
        end
        -- the server issues the tickets a resuming client offers back
        if tls.resume then argv[#argv + 1] = "--tls-resume"; argv[#argv + 1] = "true" end
    end
    local f = io.popen("echo $$; ARKBENCH_SERVE_STOP=SIGTERM ARKBENCH_PARENT_PID=" .. core.getpid()
        .. " exec "
        .. table.concat(argv, " ") .. " 2>&1")
    if not f then return nil, "split: cannot start the server process" end
    local pid = tonumber(f:read("*l") or "")
    local seen = {}
    while true do
        local line = f:read("*l")
        if not line then break end
        local port = line:match("^listening on .*:(%d+)$")
        if port then return { f = f, pid = pid, port = tonumber(port), cert = cert } end
        seen[#seen + 1] = line
    end
    f:close()
    return nil, "split: the server process did not start: " .. table.concat(seen, " | ")
end

local function stop_server(h)
    if h.pid then os.execute("kill -TERM " .. h.pid .. " 2>/dev/null") end
    local rest = h.f:read("*a") or ""
    h.f:close()
    local last
    for line in rest:gmatch("[^\n]+") do last = line end
    local obj = last and json.decode(last)
    if type(obj) ~= "table" then return nil, "split: the server printed no counters: " .. rest end
    return obj
end

-- RSS a side grew by per connection: (peak - before the first connection)
-- / connections, bytes; null without the numbers
local function per_connection(t, clients)
    local peak, base = tonumber(t.rss_peak_bytes), tonumber(t.rss_base_bytes)
    if not peak or not base or not clients or clients <= 0 then return json.null end
    return math.max(peak - base, 0) / clients
end

-- the client side's CPU and RSS (docs/run-object.md, client): with parts,
-- summed, and each process's own in processes_detail
local DETAIL = { "clients", "sent", "completed", "drained", "timed_out", "message_errors",
                 "unfinished", "connections_used", "measured_s", "cpu_percent", "cpu_user_s",
                 "cpu_sys_s", "rss_peak_bytes", "rss_end_bytes", "rss_base_bytes",
                 "rtt_histogram", "status", "error", "pid" }
local function side_of(res, clients, parts)
    local side = { cpu_percent = res.cpu_percent, cpu_user_s = res.cpu_user_s,
                   cpu_sys_s = res.cpu_sys_s, rss_peak_bytes = res.rss_peak_bytes,
                   rss_end_bytes = res.rss_end_bytes, rss_base_bytes = res.rss_base_bytes,
                   processes = parts and #parts or 1,
                   rss_per_connection_bytes = per_connection(res, clients) }
    if parts then
        side.processes_detail = json.array()
        for i, p in ipairs(parts) do
            local d = { process = i }
            for _, k in ipairs(DETAIL) do d[k] = p[k] end
            d.clients = p.case and p.case.clients or group.share(clients, #parts, i)
            side.processes_detail[i] = d
        end
    end
    return side
end

-- the merged result of the parts (arkbench.run.merge) with the status the
-- worst part had, shaped as core.run_case's (status.derive reads it)
-- distinct tags of a case (core/engine/tags.h AB_TAGS_MAX)
local TAGS_MAX = 16
local RANK = { ok = 1, degraded = 2, failed = 3, script_error = 4, interrupted = 5,
               timeout = 6, crashed = 7 }
local function group_result(parts)
    local measured = {}
    for _, p in ipairs(parts) do
        if type(p.sent) == "number" then measured[#measured + 1] = p end
    end
    local res = #measured > 0 and merge_runs.parts(measured) or {}
    local worst, wi = "ok", nil
    for i, p in ipairs(parts) do
        local st = status.of(p)
        if (RANK[st] or 7) > RANK[worst] then worst, wi = st, i end
        if st == "interrupted" then res.interrupted = true end
        if st == "script_error" then res.script_error = true end
    end
    res.status = (worst == "ok" or worst == "degraded") and worst or "failed"
    res.ok = worst == "ok"
    for i, p in ipairs(parts) do
        local e = wi == i and p.error or nil
        if type(e) == "string" then
            res.error = string.format("process %d of %d: %s", i, #parts, e)
        end
    end
    if #measured == 0 then res.sent = 0; res.completed = 0 end
    res.connection_ids = shard.merge_ids(measured)
    -- the measure phase began when the first part began it
    for _, p in ipairs(measured) do
        local t = p.measure_start_unix_us
        if type(t) == "number" and (res.measure_start_unix_us == nil or t < res.measure_start_unix_us) then
            res.measure_start_unix_us = t
        end
    end
    -- each process interns its own tags: together they may pass the
    -- case's limit, which one process would have refused (a script error)
    local names = {}
    for name in pairs(type(res.tags) == "table" and res.tags or {}) do names[#names + 1] = name end
    if #names > TAGS_MAX and not res.script_error then
        table.sort(names)
        res.script_error, res.ok, res.status = true, false, "failed"
        res.error = string.format("a case has at most %d distinct tags; its %d processes had %d"
            .. " together (%s)", TAGS_MAX, #parts, #names, table.concat(names, ", "))
    end
    return res
end

function _M.main(args)
    local t0 = core.now_ns()
    -- a worker never outlives the orchestrator that started it, even when
    -- that one is killed with SIGKILL (prctl PR_SET_PDEATHSIG)
    local opid = tonumber(os.getenv("ARKBENCH_ORCHESTRATOR_PID") or "")
    if opid and core.die_with_parent then core.die_with_parent(opid) end
    -- the handlers only record the signal; the engine polls it
    local sok, serr0 = core.signals_install()
    if not sok then io_stderr:write("arkbench: worker: cannot catch SIGINT/SIGTERM: ", serr0, "\n") end
    local o, err = parse(args)
    if not o then
        io_stderr:write("arkbench: ", err, "\n")
        return 2
    end
    local obj = {
        schema_version = 1,
        scenario = { path = o.path },
        repetition = o.repetition or 1,
        ok = false,
        status = "failed",
    }
    local function finish(code)
        obj.elapsed_s = (core.now_ns() - t0) / 1e9
        if obj.error == nil then obj.error = json.null end
        local line = json.encode(obj) .. "\n"
        io_stdout:flush()
        local fd = tonumber(os.getenv("ARKBENCH_RESULT_FD") or "")
        if fd then
            local ok, werr = core.write_fd(fd, line)
            if not ok then
                io_stderr:write("arkbench: worker: cannot write the run object to fd ",
                                tostring(fd), ": ", werr, "\n")
                return 1
            end
        else
            io_stdout:write(line)
            io_stdout:flush()
        end
        return code
    end

    local case = json.decode(o.case_json)
    if type(case) ~= "table" then
        obj.error = "worker: the case (--case-json/--case-file) is not a JSON object"
        return finish(2)
    end
    obj.case, obj.case_id = case, case.case_id
    local spec, serr = scenario.load(o.path, o.sets)
    if not spec then
        obj.error = serr
        return finish(1)
    end
    obj.scenario = { name = spec.name, path = o.path, sha256 = core.sha256(spec.source) }

    -- a shard runs its part of the case; the run object keeps the case
    -- as written (every shard's the same) and says which part ran
    if o.shard then
        local lo, hi
        case, lo, hi = shard.apply(case, o.shard)
        obj.shard = { index = o.shard.index, count = o.shard.count, clients_from = lo,
                      clients_to = hi, host = core.uname and (core.uname() or {}).nodename or json.null }
    end
    local run = {}
    for k, v in pairs(case) do run[k] = v end
    if o.measure_at and nproc_of(case, o) == 1 then
        run.plan_measure_unix_us, run.plan_lead_s = o.measure_at, o.lead
    end
    -- processes = N: this worker leads N client processes (a part is
    -- started with --part and never leads)
    local nproc = nproc_of(case, o)
    local server
    if case.target then
        run.role, run.target = "client", case.target
    elseif case.placement == "split" then
        local h, herr = start_server(case, nproc)
        if not h then
            obj.error = herr
            return finish(1)
        end
        server = h
        run.role, run.target = "client", "127.0.0.1:" .. h.port
        if h.cert then
            local tls = {}
            for k, v in pairs(case.tls or {}) do tls[k] = v end
            tls.ca = h.cert
            run.tls = tls
        end
    end
    if case.request == request.FUNCTION then
        -- request = function(i, conn): every connection's list, built now,
        -- before anything is timed
        local hooks, herr = boot.hooks(o.path, o.sets, o.quick, case.index, case.case_id)
        local list, counts
        if hooks and type(hooks.request) == "function" then
            -- every connection of the case (a part of processes = N has
            -- the case's ids: clients_total of them)
            list, counts = request.expand_function(hooks.request,
                case.clients_total or case.clients or 1, case.vars)
        else
            counts = herr or "the scenario part of this case has no request function"
        end
        if not list then
            obj.error = counts
            if server then stop_server(server) end
            return finish(1)
        end
        run.request, run.request_conns = list, counts
    end
    if case.execution == "lua" then
        -- the loops load the scenario themselves (their own Lua states)
        run.scenario_path, run.scenario_sets, run.quick = o.path, o.sets, o.quick
    end
    -- the live line: each finished interval on the orchestrator's
    -- progress pipe (ARKBENCH_PROGRESS_FD, runner.lua), while the run goes
    run.progress_fd = tonumber(os.getenv("ARKBENCH_PROGRESS_FD") or "")
    local from = "bind"
    if not o.part then
        local dest = run.target and (run.target:match("^%[(.*)%]:%d+$") or run.target:match("^(.*):%d+$"))
        run.bind, from = sources.pick(case, dest or "127.0.0.1")
    end
    if o.part then
        -- the group's barriers (arkbench.run.group): on the result channel
        -- and stdin
        run.sync_fd = tonumber(os.getenv("ARKBENCH_RESULT_FD") or "") or 1
        run.go_fd = 0
    end
    local res, rerr, parts
    if nproc > 1 then
        parts, rerr = group.run_clients({ exe = core.exe_path(), path = o.path, sets = o.sets,
            quick = o.quick, repetition = o.repetition, case = case, n = nproc,
            plan = o.measure_at and { measure_unix_us = o.measure_at, lead_s = o.lead },
            extra = { target = run.target, tls = run.tls, bind = run.bind or json.null,
                      role = "client" } })
        if parts then res = group_result(parts) end
    else
        res, rerr = core.run_case(run)
        -- rate_achieved and rate_met: the rule the merge of parts follows too
        if res then require("arkbench.run.rate_rule").apply(res) end
    end
    local sobj, serr
    if server then
        sobj, serr = stop_server(server)
        if server.cert then os.remove(server.cert) end
    end
    if not res then
        obj.error = rerr
        return finish(1)
    end
    merge(obj, res)
    -- generator_lag_share, generator_bound and its note (report/openloop.lua)
    openloop.judge_generator(obj)
    -- the engine's ok / degraded / failed, then a Lua error inside a hook
    -- (execution = "lua": script_error), an interrupt and max_error_rate
    -- (arkbench.run.status)
    obj.status, obj.error = status.derive(res, case)
    obj.ok = obj.status == "ok"
    obj.script_error = nil
    obj.interrupted = nil
    obj.source_addresses = json.array(run.bind and run.bind ~= json.null and run.bind or {})
    obj.source_addresses_from = from
    if parts then
        obj.client = side_of(res, case.clients, parts)
    end
    if server then
        -- split: the run's CPU and RSS are the client process's; the
        -- server process's are apart
        obj.server = sobj or json.null
        obj.client = obj.client or side_of(res, case.clients)
        if sobj then sobj.rss_per_connection_bytes = per_connection(sobj, case.clients) end
        if not sobj then
            obj.ok, obj.status, obj.error = false, "failed", serr
        end
    elseif not parts and not case.target then
        -- both ends in this process
        obj.rss_per_connection_bytes = per_connection(res, case.clients)
    end
    if case.target or server then
        obj.server_connections, obj.server_messages, obj.server_bytes = nil, nil, nil
    end
    if res.interrupted then return finish(130) end
    return finish(obj.ok and 0 or 1)
end

return _M
