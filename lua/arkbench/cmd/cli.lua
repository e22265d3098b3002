-- arkbench.cmd.cli: the command line (README.md; docs/scenarios.md).
--
--   arkbench run FILE.lua [--set k=v]... [--filter k=v]... [--out DIR [--append]]
--                         [--quick] [--list] [--threshold RULE]... [--no-strict]
--   arkbench search FILE.lua --slo RULE [--from R0 --to R1] [--probes N]
--                                  the highest rate meeting an SLO (cmd/search.lua)
--   arkbench worker ...            (internal: one run in a fresh process)
--   arkbench calibrate [...]       the physical floor vs arkbench
--   arkbench report DIR [--csv] [--hgrm] [--openmetrics]
--                                  rebuild summary.json, report.md,
--                                  report.html, charts/ (+ runs.csv, cases.csv)
--   arkbench compare A B [--force] [--max-regression P%] [--svg FILE]
--                                  per-case ratios B/A; --pair KEY in one DIR
--   arkbench env                   print the environment as env.json has it
--   arkbench help
--
-- Exit codes: 0 all runs ok; 1 some run failed or degraded (status other
-- than ok: arkbench.run.status.exit_code), or a file could not be written
-- (any command); 2 the scenario or command line is wrong; 3 a threshold was
-- crossed (or compare --max-regression found a regression) and every run
-- was ok; 130 interrupted (results so far kept). strict = false (--no-strict)
-- counts degraded runs and a missed rate as ok (status.exit_code).

local core = require("arkbench.core")

local ipairs, tostring, tonumber, type = ipairs, tostring, tonumber, type
local io_stderr, io_stdout = io.stderr, io.stdout
local str_format = string.format

local _M = {}

-- Per-command help (arkbench help CMD, CMD --help); USAGE is all of them.
local HELP_ORDER = { "URL", "run", "search", "calibrate", "serve", "report", "compare", "merge", "k8s",
                     "env", "version", "help" }
local HELP = {
    URL = [[
  URL [-c N] [-t N] [-d D] [-R R] [-H 'N: V'] [-m M] [-b B] [--json] ...
                      one case against a server, wrk-style: http(s):// any
                      server, ws(s):// tcp:// tls:// udp:// arkbench's echo
                      (docs/one-liner.md; arkbench URL --help)
]],
    run = [[
  run FILE.lua        run every case of a scenario, each repetition in a
                      fresh process; results go to results/<name>/<UTC>/
      --set key=value     override a scenario key (repeatable; a,b,c = axis;
                          seconds and bytes take units: 250ms, 10s, 16KiB)
      --filter key=value  keep only matching cases (repeatable)
      --out DIR           write results into DIR instead (absent or empty)
      --append            with --out: add runs to an earlier result there
                          (same scenario file, --set, --filter, --quick)
      --quick             warmup=0.05 duration=0.2 repetitions=1
      --list              print the cases and exit
      --threshold RULE    a pass/fail rule checked per case after the run,
                          e.g. 'p99_us < 1000' (repeatable; adds to the
                          scenario's thresholds); crossed -> exit 3
      --shard I/N|auto    run the I-th (0-based) of N parts of every case's
                          clients, against its target; auto: Slurm, k8s
                          Indexed Job, MPI (docs/distributed.md)
      --start-at TIME     start case k rep r at a planned wall-clock slot:
                          2026-12-04T15:00:00Z, epoch seconds, or +30s
      --slot D            the length of each planned slot (with --start-at)
      --no-strict         errors, statuses outside the success set and a
                          missed rate are reported, not failures: the
                          thresholds alone decide the exit code (as
                          --set strict=false)
      --csv               also write runs.csv, cases.csv, intervals.csv (and
                          tags.csv), as report DIR --csv does
      --hgrm              also write hgrm/*.hgrm, as report DIR --hgrm does
      --openmetrics       also write metrics.om, as report DIR --openmetrics
      --json              print summary.json on stdout (the table goes to stderr)
      --metrics-listen HOST:PORT
                          serve live OpenMetrics at http://HOST:PORT/metrics
                          while the run goes (port 0: one is chosen and
                          printed; docs/reports.md "Live metrics")
]],
    search = [[
  search FILE.lua     the highest rate whose runs meet an SLO (bisection,
                      a fresh worker per probe, repetitions at the answer)
      --slo RULE          e.g. 'p99_us<1000' (rate_met is always required)
      --from R0 --to R1   the rate range in messages/s (default 100 .. 1000000)
      --probes N          at most N probes (default 10)
      --set, --filter, --out, --quick as for run
]],
    calibrate = [[
  calibrate           raw epoll echo floor vs arkbench, same process
      --pairs N --duration S --warmup S --payload B --clients C --window W
                          (S and B take units: 500ms, 16KiB)
      --floor-only        the floor alone;  --cpu N | --no-pin  placement
]],
    serve = [[
  serve               only the server side, until SIGINT/SIGTERM
      --protocol P --listen HOST:PORT --topology T --work N --framing F --payload B
      --cert-out FILE (TLS: write the generated certificate) --tls-version V --alpn LIST
      --tls-resume true|false  issue session tickets (default false)
      --processes N       serve from N processes on one port (SO_REUSEPORT)
      --reuse-port 1      share the port with other processes (SO_REUSEPORT)
]],
    report = [[
  report DIR          rebuild summary.json, report.md, report.html and charts/
                      from runs.jsonl (+ env.json) and print the table
      --csv               also write runs.csv (per run), cases.csv (per case),
                          intervals.csv (per interval of each run), and
                          tags.csv (per case and tag) when messages had tags
      --hgrm              also write hgrm/<case>.rtt_us.hgrm (HdrHistogram
                          percentile distributions; open loop: .rtt_raw_us too;
                          per tag: hgrm/<case>.tag=<tag>.rtt_us.hgrm)
      --openmetrics       also write metrics.om (OpenMetrics text of the summary)
]],
    compare = [[
  compare A B         per-case ratios B/A (throughput, p99, CPU) and their median
      --force             compare different hosts, durations or repetitions
      --max-regression P% exit 3 when B's throughput or p99 is more than P %
                          worse than A's in the median of per-case ratios
      --svg FILE          also write FILE: latency by percentile of the paired
                          cases, A solid, B dashed (HdrHistogram's axis)
  compare DIR --pair KEY
                      within one result: cases differing only in KEY against
                      its first value (e.g. --pair topology, --pair execution)
]],
    merge = [[
  merge OUT DIR...    join the shards' result folders (run --shard) into one:
                      DIR is a shard's folder or holds shard-I-of-N/ folders
      --threshold RULE    checked on the merged result (with the shards')
]],
    k8s = [[
  k8s FILE.lua        Kubernetes manifests for N shards of a scenario (a
                      ConfigMap and an Indexed Job) and the commands to
                      apply, collect and merge (docs/distributed.md)
      --shards N --image IMG --target HOST:PORT [--start-in 60s]
      [--out DIR] [--name JOB] [--cpu C] [--set k=v]... [--filter k=v]...
      [--quick]
]],
    env = [[
  env                 print this host's environment (as env.json)
]],
    version = [[
  version             arkbench's version, git commit and the LuaJIT, libuv and
                      OpenSSL it runs on (also: arkbench --version)
]],
    help = [[
  help [COMMAND]      this text, or one command's (also: COMMAND --help)
]],
}

-- arkbench completion (cmd/completion.lua): before help in the list
HELP.completion = [[
  completion SHELL    print a completion script for bash, zsh or fish, made
                      from these help tables (docs/one-liner.md, "Shell
                      completion"): eval "$(arkbench completion bash)"
]]
table.insert(HELP_ORDER, #HELP_ORDER, "completion")
-- the help tables, for arkbench.cmd.options (completion, man page)
_M.HELP, _M.HELP_ORDER = HELP, HELP_ORDER

local EXIT_CODES = [[
exit codes: 0 every run ok, 1 some run failed or degraded or a write failed,
2 bad scenario or command line, 3 a threshold crossed (every run ok),
130 interrupted (finished runs are kept)
]]
-- run's (and the one-liner's) caveat: a paragraph of its own after the list
local STRICT_NOTE = [[
With strict = false (--no-strict), degraded runs and a missed rate count
as ok for the exit code: the thresholds decide.
]]
local EXIT_TEXT = EXIT_CODES .. "\n" .. STRICT_NOTE

local function usage()
    local parts = { "usage: arkbench <command> [options]\n\ncommands:\n" }
    for _, c in ipairs(HELP_ORDER) do parts[#parts + 1] = HELP[c] end
    parts[#parts + 1] = "\n" .. EXIT_TEXT
    return table.concat(parts)
end
local USAGE = usage()

-- One command's help: its usage line and options, and the exit codes.
-- Commands whose exit codes are not run's.
local EXIT_CODES_OF = {
    k8s = [[
exit codes: 0 the manifests were written, 1 a file could not be written,
2 bad scenario or command line (what every pod would refuse)
]],
    serve = [[
exit codes: 0 stopped by SIGINT/SIGTERM after serving, 1 the server failed
(its JSON line's error says why), 2 bad command line
]],
    report = [[
exit codes: 0 the files were rebuilt (whatever the runs' statuses: a failed
or degraded run is in the report, not in the exit code), 1 a file could not
be written, 2 bad command line or not a result folder (or one in use),
3 a threshold saved in summary.json is crossed (whatever the runs'
statuses)
]],
    merge = [[
exit codes: 0 every merged run ok, 1 some merged run degraded or failed (a
shard missing, failed or interrupted, or its own run degraded) or a write
failed, 2 bad command line, shards that cannot be joined or an OUT holding
files, 3 a threshold crossed (every merged run ok)

A merge is never 130: an interrupted shard is a shard short (exit 1).
strict = false in the scenario counts degraded runs as ok, as for run.
]],
}

local function command_help(cmd)
    return "usage: arkbench " .. cmd .. " [options]\n\n" .. HELP[cmd] .. "\n"
        .. (EXIT_CODES_OF[cmd] or (cmd == "run" and EXIT_TEXT or EXIT_CODES))
end

-- Options whose next argument is their value (so a value "-h" is no help).
local VALUE_OPTS = {
    ["--set"] = true, ["--filter"] = true, ["--out"] = true, ["--threshold"] = true,
    ["--slo"] = true, ["--from"] = true, ["--to"] = true, ["--probes"] = true,
    ["--pair"] = true, ["--max-regression"] = true, ["--protocol"] = true, ["--listen"] = true,
    ["--topology"] = true, ["--work"] = true, ["--framing"] = true, ["--payload"] = true,
    ["--cert-out"] = true, ["--tls-version"] = true, ["--alpn"] = true, ["--pairs"] = true,
    ["--duration"] = true, ["--warmup"] = true, ["--clients"] = true, ["--window"] = true,
    ["--cpu"] = true, ["--shard"] = true, ["--start-at"] = true, ["--slot"] = true, ["--shards"] = true,
    ["--image"] = true, ["--target"] = true, ["--start-in"] = true,
    ["--cpu"] = true, ["--metrics-listen"] = true,
}

local function wants_help(args)
    for i = 2, #args do
        if (args[i] == "--help" or args[i] == "-h") and not VALUE_OPTS[args[i - 1]] then
            return true
        end
    end
    return false
end

-- arkbench --version: what a bug report needs.
local function version_text()
    local env = require("arkbench.util.env")
    local b = core.build_info() or {}
    local root = _G.ARKBENCH_ROOT or os.getenv("ARKBENCH_ROOT")
    local commit, dirty = env.git(root)
    return str_format("arkbench %s (git %s%s)\n%s, libuv %s, %s\n", env.VERSION,
        commit and commit:sub(1, 12) or "unknown", dirty and ", with uncommitted changes" or "",
        tostring(b.luajit or "LuaJIT ?"), tostring(b.libuv or "?"), tostring(b.openssl or "OpenSSL ?"))
end

-- The help's text and option tables, for what is generated from them
-- (the man page, cmake/manpage.lua; shell completion): the one place they
-- are read from outside. The tables are the live ones: do not change them.
function _M.help_data()
    return {
        order = HELP_ORDER,           -- command names, in the help's order
        help = HELP,                  -- name -> its block of `arkbench help`
        exit_codes = EXIT_TEXT,       -- the exit codes, then run's strict note
        exit_codes_of = EXIT_CODES_OF, -- name -> its own, when not run's
        value_opts = VALUE_OPTS,      -- option -> true when it takes a value
        url_usage = require("arkbench.cmd.url").USAGE, -- `arkbench URL --help`
        version = require("arkbench.util.env").VERSION,
    }
end

local function die(msg)
    io_stderr:write("arkbench: ", msg, "\n")
    return 2
end

-- Durable and checked (core.write_file: a temporary name, fsync, rename):
-- nil, "<path>: ENOSPC: no space left on device" on failure.
local function write_file(path, text)
    local ok, err = core.write_file(path, text)
    if not ok then return nil, path .. ": " .. tostring(err) end
    return true
end

-- run's flags without a value: option -> field of the parsed options
local RUN_FLAGS = { ["--csv"] = "csv", ["--hgrm"] = "hgrm", ["--openmetrics"] = "openmetrics",
                    ["--json"] = "json" }

local function parse_run_args(args, first)
    local o = { sets = {}, filters = {}, thresholds = {} }
    local i = first
    while i <= #args do
        local a = args[i]
        local function value()
            local v = args[i + 1]
            if v == nil then return nil end
            i = i + 2
            return v
        end
        if a == "--set" or a == "--filter" or a == "--out" or a == "--threshold" then
            local v = value()
            if v == nil or (v:match("^%-%-%a") and a ~= "--threshold") then return nil, a .. " needs a value" end
            if a == "--out" then o.out = v
            elseif a == "--threshold" then o.thresholds[#o.thresholds + 1] = v
            elseif a == "--set" then o.sets[#o.sets + 1] = v
            else o.filters[#o.filters + 1] = v end
        elseif a:match("^%-%-set=") then o.sets[#o.sets + 1] = a:sub(7); i = i + 1
        elseif a:match("^%-%-filter=") then o.filters[#o.filters + 1] = a:sub(10); i = i + 1
        elseif a:match("^%-%-out=") then o.out = a:sub(7); i = i + 1
        elseif a:match("^%-%-threshold=") then o.thresholds[#o.thresholds + 1] = a:sub(13); i = i + 1
        elseif a == "--shard" or a == "--start-at" or a == "--slot" then
            -- distributed runs (arkbench.run.shard, docs/distributed.md)
            local v = value()
            if v == nil then return nil, a .. " needs a value" end
            o[a:sub(3):gsub("%-", "_")] = v
        elseif a:match("^%-%-shard=") or a:match("^%-%-start%-at=") or a:match("^%-%-slot=") then
            local k, v = a:match("^%-%-([%w%-]+)=(.*)$")
            o[k:gsub("%-", "_")] = v
            i = i + 1
        elseif a == "--quick" then o.quick = true; i = i + 1
        elseif a == "--no-strict" then o.sets[#o.sets + 1] = "strict=false"; i = i + 1
        elseif RUN_FLAGS[a] then o[RUN_FLAGS[a]] = true; i = i + 1
        elseif a == "--metrics-listen" then
            local v = value()
            if v == nil or v:match("^%-%-%a") then return nil, "--metrics-listen needs HOST:PORT" end
            o.metrics_listen = v
        elseif a:match("^%-%-metrics%-listen=") then o.metrics_listen = a:sub(18); i = i + 1
        elseif a == "--append" then o.append = true; i = i + 1
        elseif a == "--list" then o.list = true; i = i + 1
        elseif a:sub(1, 1) == "-" then return nil, "unknown option '" .. a .. "' (see arkbench help)"
        elseif not o.path then o.path = a; i = i + 1
        else return nil, "unexpected argument '" .. a .. "'" end
    end
    if not o.path then return nil, "run needs a scenario file: arkbench run scenarios/tcp.lua" end
    for _, t in ipairs(o.thresholds) do
        local ok, why = require("arkbench.report.thresholds").parse(t)
        if not ok then return nil, "--threshold " .. why end
    end
    if o.append and not o.out then return nil, "--append needs --out DIR (the result to add to)" end
    if o.metrics_listen then
        local ok, why = require("arkbench.run.live_metrics").parse_addr(o.metrics_listen)
        if not ok then return nil, "--metrics-listen " .. why end
    end
    if o.out and o.out:sub(1, 1) == "-" then
        return nil, "--out '" .. o.out .. "': looks like an option; write ./" .. o.out
            .. " for a folder of that name"
    end
    return o
end

-- The scenario is loaded, validated and expanded in a child process with
-- CPU, memory and time limits (arkbench.cmd.loader): the user's file never
-- runs in this one.
local function load_cases(o)
    return require("arkbench.cmd.loader").load_cases(o)
end

-- The per-run line and, on a terminal, the live line (arkbench.cmd.progress).
local function progress_printer(total_runs)
    return require("arkbench.cmd.progress").printer(total_runs)
end

-- The threshold rules of a run: the scenario's (every part's) then the
-- command line's, each once, in that order.
local function threshold_rules(spec, extra)
    local texts, seen = {}, {}
    local function add(t)
        if not seen[t] then seen[t] = true; texts[#texts + 1] = t end
    end
    for _, part in ipairs(spec and (spec.parts or { spec }) or {}) do
        for _, t in ipairs(part.keys and part.keys.thresholds or {}) do add(t) end
    end
    for _, t in ipairs(extra or {}) do add(t) end
    return texts
end
_M.threshold_rules = threshold_rules

-- summary.thresholds = { rules = {text}, results = {...}, crossed = n }
-- (report/thresholds.lua); prints the crossed ones. -> crossed count
local function apply_thresholds(summary, texts)
    if not texts or #texts == 0 then return 0 end
    local th = require("arkbench.report.thresholds")
    local json = require("arkbench.util.json")
    local rules = th.parse_list(texts)
    if not rules then return 0 end -- checked before the run
    local results = th.check(summary, rules)
    local crossed = th.crossed(results)
    local saved = json.array()
    for i, r in ipairs(results) do
        saved[i] = { case_id = r.case_id, rule = r.rule, crossed = r.crossed, why = r.why,
                     value = r.value == nil and json.null or r.value }
    end
    summary.thresholds = { rules = json.array(texts), results = saved, crossed = #crossed }
    return #crossed
end

-- Where the run's table goes (the one-liner's --json sends it to stderr).
local table_out = io_stdout
-- The one-liner prints the threshold verdict itself, after its summary.
local thresholds_later = false

-- The verdict of summary.thresholds: each crossed rule, or that all held.
function _M.threshold_text(t)
    if (t.crossed or 0) > 0 then return require("arkbench.report.thresholds").format(t.results) end
    return str_format("thresholds: all %d held in every case\n", #t.rules)
end

local function finish_results(dir, spec_name, runs, meta, rules)
    local stats = require("arkbench.report.stats")
    local json = require("arkbench.util.json")
    local report = require("arkbench.report.report")
    local summary = stats.summarize(runs, meta)
    summary.scenario = summary.scenario or spec_name
    if meta and meta.search then summary.search = meta.search end
    local crossed = apply_thresholds(summary, rules)
    local ok, err = write_file(dir .. "/summary.json", json.encode(summary, { indent = 2 }) .. "\n")
    if not ok then io_stderr:write("arkbench: cannot write ", tostring(err), "\n") end
    local written, rerr, model = report.write_reports(dir, runs, summary)
    if not written then io_stderr:write("arkbench: cannot write ", tostring(rerr), "\n") end
    table_out:write(report.terminal_table(summary), "\n")
    -- the key findings of report.md (best topology per group and its ratio
    -- to one thread), when more than one topology ran
    local findings = require("arkbench.report.md").findings_text(
        model or require("arkbench.report.model").build(summary, runs, nil))
    if findings ~= "" then table_out:write(findings) end
    -- execution as an axis: the reference's table, callback -> coroutine
    -- per case with the ratio, and the median of the per-case ratios
    local compare = require("arkbench.report.compare")
    local paired = compare.within({ dir = dir, summary = summary }, "execution")
    if paired then table_out:write("\n", compare.format(paired)) end
    if summary.thresholds and not thresholds_later then
        table_out:write("\n", _M.threshold_text(summary.thresholds))
    end
    return summary, written ~= nil and ok == true, crossed
end
_M.finish_results = finish_results

_M.parse_run_args = parse_run_args
_M.load_cases = load_cases
_M.progress_printer = progress_printer
_M.write_file = write_file

-- ropts (the one-liner): { table_out = file } sends the table there;
-- thresholds_later: the threshold verdict is not printed (the caller
-- prints it at the end, from summary.json).
-- Returns the exit code and, once a results folder exists, its path.
function _M.run(args, ropts)
    table_out = ropts and ropts.table_out or io_stdout
    thresholds_later = ropts and ropts.thresholds_later or false
    -- a Ctrl-C from the start on ends the run with 130 (main.c installs the
    -- handlers for `run` before the Lua state exists; this is a no-op then)
    if core.signals_install then core.signals_install() end
    local o, err = parse_run_args(args, 2)
    if not o then return die(err) end
    -- run --json: the summary is the one document on stdout
    if o.json then table_out = io_stderr end
    local spec, cases, lcode = load_cases(o)
    if not spec then
        io_stderr:write(cases, "\n")
        return lcode or 2
    end
    if core.interrupted() then
        io_stderr:write("arkbench: interrupted by ", core.interrupted(), " before the first run\n")
        return 130
    end
    -- an idle-loop warning ("sharded:4 with clients=1: ...") is about the
    -- whole matrix: after --filter, only when a kept case has that pair.
    -- Printed once the run is past every refusal (exit 2 says the one
    -- thing that is wrong), or with --list.
    local kept = {}
    for _, c in ipairs(cases) do kept[tostring(c.topology) .. " " .. tostring(c.clients)] = true end
    local function print_warnings()
        for _, w in ipairs(spec.warnings or {}) do
            local topo, clients = w:match("(%l+:%d+) with clients=(%d+): %d+ of %d+ loops run without")
            if ropts and ropts.hide_path then
                -- the one-liner's scenario is a temporary file: name the key only
                w = w:gsub("^" .. ropts.hide_path:gsub("%p", "%%%0") .. ":%d*:? ?", "")
            end
            if not topo or kept[topo .. " " .. clients] then io_stderr:write("warning: ", w, "\n") end
        end
    end
    local runs_total = 0
    for _, c in ipairs(cases) do runs_total = runs_total + (c.repetitions or 1) end
    -- --shard / --start-at / --slot (arkbench.run.shard): refused now
    local dist = {}
    if o.shard or o.start_at or o.slot then
        local derr
        dist, derr = require("arkbench.run.shard").prepare(o, cases, core.wall_s())
        if not dist then return die(o.path .. ": " .. derr) end
    end
    if o.list then
        print_warnings()
        for _, c in ipairs(cases) do
            io_stdout:write(str_format("%3d  %s  (x%d)\n", c.index, c.case_id, c.repetitions or 1))
        end
        io_stdout:write(str_format("%d cases, %d runs\n", #cases, runs_total))
        return 0
    end
    -- --metrics-listen: the live OpenMetrics, listening before anything runs
    -- (a port in use is exit 2 with nothing written)
    local live
    if o.metrics_listen then
        local lm = require("arkbench.run.live_metrics")
        local lerr
        live, lerr = lm.start(o.metrics_listen, spec.name, runs_total)
        if not live then return die(lerr) end
        if not lm.is_loopback(live.host) then
            io_stderr:write("arkbench: warning: --metrics-listen ", o.metrics_listen,
                ": not a loopback address; anyone who reaches this host can read the metrics\n")
        end
        io_stderr:write("arkbench: live metrics at ", live.url, "\n")
    end

    -- file descriptors per process: a connection is a client and a server
    -- end in one worker (same-process), or one end in each of the two
    -- processes (split), or only the client end (target); processes = N
    -- splits each side's share N ways (the servers' by the kernel's
    -- SO_REUSEPORT hash: room for its spread). The soft limit is the hard
    -- one already (main.c); refuse now, naming the case that needs most
    -- and the processes that would fit
    local fds = require("arkbench.run.fds")
    local need, worst = 0, nil
    for _, c in ipairs(cases) do
        -- a shard opens only its part of the connections
        local n = fds.need(dist.shard and require("arkbench.run.shard").apply(c, dist.shard) or c)
        if n > need then need, worst = n, c end
    end
    local soft = core.nofile_limit(need)
    if worst and soft < need then
        return die(str_format("%s: %s%s", o.path,
            #cases > 1 and ("case " .. worst.case_id .. ": ") or "", fds.refusal(worst, need, soft)))
    end

    local env = require("arkbench.util.env")
    local json = require("arkbench.util.json")
    local runner = require("arkbench.run.runner")
    local started = core.wall_s()
    local folder = require("arkbench.run.folder")
    local sha = core.sha256_file(o.path)
    -- what an --append must match (env.json records it)
    local settings = { sets = json.array(), filters = json.array(), quick = o.quick == true }
    for _, v in ipairs(o.sets) do settings.sets[#settings.sets + 1] = v end
    for _, v in ipairs(o.filters) do settings.filters[#settings.filters + 1] = v end
    local dir, cerr, prior
    -- a shard writes its own folder: every shard may get the same --out
    -- (a shared filesystem) and `arkbench merge` joins them
    local sh = dist.shard
    local sub = sh and str_format("shard-%d-of-%d", sh.index, sh.count)
    if sh then
        settings.shard = { index = sh.index, count = sh.count, from = sh.from }
        settings.start_at_unix_s = dist.start_s
        settings.thresholds = json.array(threshold_rules(spec, o.thresholds))
    end
    if o.out then
        dir, cerr, prior = folder.claim_out(sub and (o.out .. "/" .. sub) or o.out,
                                            { append = o.append, sha256 = sha, settings = settings })
    else
        dir, cerr, prior = folder.claim_new("results/" .. folder.sanitize(spec.name),
                                            env.utc_stamp(started) .. (sub and ("-" .. sub) or ""))
    end
    if not dir then
        if prior == true then -- a mkdir failed: a write failure
            io_stderr:write("arkbench: ", cerr, "\n")
            return 1
        end
        return die(cerr)
    end
    if type(prior) ~= "table" then prior = nil end
    if prior then
        -- a cut last line would end up in the middle of the file, where
        -- readers refuse it: take it off first (it holds no complete run);
        -- a whole last run without its newline gets the newline
        local rpath = dir .. "/runs.jsonl"
        local f = io.open(rpath, "rb")
        local text = f and f:read("*a")
        if f then f:close() end
        if text and #text > 0 and text:sub(-1) ~= "\n" then
            local keep = prior.warning and (text:match("^(.*\n)") or "") or text .. "\n"
            local ok, werr = write_file(rpath, keep)
            if not ok then
                folder.release(dir)
                io_stderr:write("arkbench: cannot write ", tostring(werr), "\n")
                return 1
            end
            if prior.warning then
                io_stderr:write(str_format("arkbench: warning: %s: removed a cut last line (%d bytes)\n",
                                           rpath, #text - #keep))
            end
        end
    end
    print_warnings()
    -- a busy machine makes every number wrong: say so before measuring
    local busy = env.busy_warning()
    if busy then io_stderr:write(busy, "\n") end
    local envinfo = env.collect({ scenario_path = o.path, started_utc = env.utc_iso(started),
                                  binary = core.exe_path and core.exe_path() or nil })
    envinfo.run_settings = settings
    -- an append keeps the first run's environment and lists each append's
    local this_env = envinfo
    if prior and prior.env then
        envinfo = prior.env
        if type(envinfo.appends) ~= "table" then envinfo.appends = json.array() end
        envinfo.appends[#envinfo.appends + 1] = this_env
    end
    local ok, werr = write_file(dir .. "/env.json", json.encode(envinfo, { indent = 2 }) .. "\n")
    if not ok then
        folder.release(dir)
        io_stderr:write("arkbench: cannot write ", tostring(werr), "\n")
        return 1
    end
    io_stderr:write(str_format("arkbench: %s: %d cases, %d runs -> %s\n", spec.name, #cases, runs_total, dir))
    for _, w in ipairs(dist.warnings or {}) do io_stderr:write("warning: ", w, "\n") end
    if dist.start_s then
        io_stderr:write(str_format("arkbench: the plan starts at %s (in %.1f s)\n",
                                   os.date("!%Y-%m-%dT%H:%M:%SZ", math.floor(dist.start_s)),
                                   dist.start_s - core.wall_s()))
    end

    if core.signals_install then core.signals_install() end
    local on_run, on_progress = progress_printer(runs_total)
    local on_start
    if live then
        on_run, on_progress = require("arkbench.run.live_metrics").chain(live, on_run, on_progress)
        on_start = live.on_start
    end
    local code, runs, rerr = runner.run({
        spec = spec, cases = cases, sets = o.sets, quick = o.quick, out_dir = dir,
        on_run = on_run, on_progress = on_progress, on_start = on_start,
        rep_base = prior and require("arkbench.report.runfile").last_repetitions(prior.runs),
        shard = sh,
        schedule = dist.start_s and require("arkbench.run.shard").schedule(dist.start_s, dist.slot_s),
    })
    if live then live.close() end
    local ended = core.wall_s()
    this_env.ended_utc = env.utc_iso(ended)
    this_env.load_average_end = env.load_average() or json.null
    -- after an append the folder's time range ends with this run
    if this_env ~= envinfo then envinfo.ended_utc = this_env.ended_utc end
    local eok, eerr = write_file(dir .. "/env.json", json.encode(envinfo, { indent = 2 }) .. "\n")
    if not eok then io_stderr:write("arkbench: cannot write ", tostring(eerr), "\n") end
    runs = runs or {}
    if prior then
        -- the summary covers every run in the folder, earlier ones too
        local all, aerr, warning = require("arkbench.report.stats").read_jsonl(dir .. "/runs.jsonl")
        if warning then io_stderr:write("arkbench: warning: ", warning, "\n") end
        if all then runs = all elseif aerr then io_stderr:write("arkbench: ", aerr, "\n") end
    end
    -- a shard's thresholds are checked on the merge (its numbers are a part)
    local summary, wrote, crossed = finish_results(dir, spec.name, runs, {
        scenario = spec.name, started_utc = envinfo.started_utc, ended_utc = this_env.ended_utc,
        interrupted = code == 130,
    }, not sh and threshold_rules(spec, o.thresholds) or nil)
    -- the exports asked for on the command line, as `report DIR` writes them
    local exports = require("arkbench.report.exports")
    if exports.any(o) and summary then
        local xok, xerr = exports.write(dir, runs, summary, o)
        if not xok then
            io_stderr:write("arkbench: cannot write ", xerr, "\n")
            wrote = false
        end
    end
    folder.release(dir)
    if o.json and summary then
        io_stdout:write(json.encode(summary, { indent = 2 }), "\n")
    end
    io_stdout:flush()
    io_stderr:write("results: ", dir, "\n")
    local html = io.open(dir .. "/report.html", "r")
    if html then
        html:close()
        io_stderr:write("report:  ", dir, "/report.html\n")
    end
    if rerr then
        io_stderr:write("arkbench: stopped: cannot write ", rerr, "\n")
    end
    if (not wrote or not eok) and code == 0 then code = 1 end
    if code == 0 and crossed > 0 then code = 3 end
    return code, dir
end

function _M.report(args)
    local dir, want_csv, want_hgrm, want_om
    for i = 2, #args do
        local a = args[i]
        if a == "--csv" then want_csv = true
        elseif a == "--hgrm" then want_hgrm = true
        elseif a == "--openmetrics" then want_om = true
        elseif a:sub(1, 1) == "-" then return die("unknown option '" .. a .. "' (see arkbench help)")
        elseif not dir then dir = a
        else return die("unexpected argument '" .. a .. "'") end
    end
    if not dir then return die("report needs a result folder: arkbench report results/tcp/<UTC>") end
    if #dir > 1 then dir = dir:gsub("/+$", "") end
    local stats = require("arkbench.report.stats")
    local runfile = require("arkbench.report.runfile")
    local runs, err, warning = stats.read_jsonl(dir .. "/runs.jsonl")
    if not runs then return die(err) end
    local e, eerr = runfile.read_json(dir .. "/env.json")
    if eerr then return die(eerr) end
    -- a live run (or report) is writing there: refuse; a stale lock is cleared
    local folder = require("arkbench.run.folder")
    local locked, lerr, wfail = folder.lock_existing(dir)
    if not locked and wfail then
        io_stderr:write("arkbench: ", lerr, "\n")
        return 1
    end
    if not locked then return die(lerr) end
    if warning then io_stderr:write("arkbench: warning: ", warning, "\n") end
    -- an interrupted run says so in its own records
    local interrupted = false
    for _, r in ipairs(runs) do
        if r.status == "interrupted" then interrupted = true end
    end
    local meta = { interrupted = interrupted }
    if e then
        meta.started_utc, meta.ended_utc = e.started_utc, e.ended_utc
        -- after --append the last append ended last
        local last = type(e.appends) == "table" and e.appends[#e.appends]
        if type(last) == "table" and last.ended_utc then meta.ended_utc = last.ended_utc end
    end
    -- the rules the run was checked against are in its summary.json
    local rules
    local old = runfile.read_json(dir .. "/summary.json")
    if type(old) == "table" then
        if type(old.thresholds) == "table" and type(old.thresholds.rules) == "table" then
            rules = {}
            for _, t in ipairs(old.thresholds.rules) do
                if type(t) == "string" then rules[#rules + 1] = t end
            end
        end
    end
    local summary, wrote, crossed = finish_results(dir, nil, runs, meta, rules)
    -- the exports asked for: each writes its files or says why it could
    -- not (a write failure, like the other files': exit 1)
    local xok, xerr = require("arkbench.report.exports").write(dir, runs, summary,
        { csv = want_csv, hgrm = want_hgrm, openmetrics = want_om })
    if not xok then
        folder.release(dir)
        io_stderr:write("arkbench: cannot write ", xerr, "\n")
        return 1
    end
    folder.release(dir)
    if not wrote then return 1 end
    return crossed > 0 and 3 or 0
end

function _M.compare(args)
    local o = { dirs = {} }
    local i = 2
    while i <= #args do
        local a = args[i]
        if a == "--force" then o.force = true
        elseif a == "--pair" then
            o.pair = args[i + 1]
            if o.pair == nil then return die("--pair needs a key, e.g. --pair topology") end
            i = i + 1
        elseif a:match("^%-%-pair=") then o.pair = a:sub(8)
        elseif a == "--svg" then
            o.svg = args[i + 1]
            if o.svg == nil then return die("--svg needs a file name, e.g. --svg compare.svg") end
            i = i + 1
        elseif a == "--max-regression" or a:match("^%-%-max%-regression=") then
            local v = a:match("^%-%-max%-regression=(.*)$")
            if not v then v = args[i + 1]; i = i + 1 end
            local n = v and tonumber((v:gsub("%%$", "")))
            if not n or n < 0 or n ~= n or n == math.huge then
                return die("--max-regression needs a percentage, e.g. --max-regression 5%")
            end
            o.max_regression = n / 100
        elseif a:sub(1, 1) == "-" then return die("unknown option '" .. a .. "' (see arkbench help)")
        else o.dirs[#o.dirs + 1] = a end
        i = i + 1
    end
    local code, text, err = require("arkbench.report.compare").run(o)
    if err then return die(err) end
    io_stdout:write(text)
    return code
end

function _M.env()
    local env = require("arkbench.util.env")
    local json = require("arkbench.util.json")
    io_stdout:write(json.encode(env.collect({}), { indent = 2 }), "\n")
    return 0
end

local function dev_busted(args)
    arg = { [0] = "/usr/bin/busted" }
    for i = 2, #args do arg[i - 1] = args[i] end
    -- busted ends with os.exit, which on Lua 5.1 raises a nil error for a
    -- failing suite (its standalone interpreter then exits 1)
    local ok, e = pcall(dofile, "/usr/bin/busted")
    if not ok then
        if e ~= nil then io_stderr:write(tostring(e), "\n") end
        return 1
    end
    return 0
end

function _M.main(args)
    local cmd = args[1]
    if cmd == "help" and (args[2] == "--help" or args[2] == "-h") then
        io_stdout:write(command_help("help"))
        return 0
    elseif cmd == "help" and args[2] ~= nil and require("arkbench.cmd.url").is_url(args[2]) then
        io_stdout:write(require("arkbench.cmd.url").USAGE)
        return 0
    elseif cmd == "help" and args[2] ~= nil then
        if not HELP[args[2]] then
            return die("help: unknown command '" .. tostring(args[2]) .. "' (see arkbench help)")
        end
        io_stdout:write(command_help(args[2]))
        return 0
    elseif cmd == nil or cmd == "help" or cmd == "--help" or cmd == "-h" then
        io_stdout:write(USAGE)
        return cmd == nil and 2 or 0
    elseif cmd == "--version" or cmd == "version" then
        io_stdout:write(version_text())
        return 0
    elseif require("arkbench.cmd.url").is_url(cmd) then
        return require("arkbench.cmd.url").main(args, _M)
    elseif HELP[cmd] and wants_help(args) then
        io_stdout:write(command_help(cmd))
        return 0
    elseif cmd == "run" then
        return _M.run(args)
    elseif cmd == "worker" then
        local a = {}
        for i = 2, #args do a[#a + 1] = args[i] end
        return require("arkbench.cmd.worker").main(a)
    elseif cmd == "serve" then
        local a = {}
        for i = 2, #args do a[#a + 1] = args[i] end
        return require("arkbench.cmd.serve").main(a)
    elseif cmd == "calibrate" then
        local a = {}
        for i = 2, #args do a[#a + 1] = args[i] end
        return require("arkbench.cmd.calibrate").main(a)
    elseif cmd == "report" then
        return _M.report(args)
    elseif cmd == "compare" then
        return _M.compare(args)
    elseif cmd == "merge" then
        return require("arkbench.cmd.merge").main(args, _M)
    elseif cmd == "k8s" then
        return require("arkbench.cmd.k8s").main(args, _M)
    elseif cmd == "search" then
        return require("arkbench.cmd.search").main(args)
    elseif cmd == "env" then
        return _M.env()
    elseif cmd == "completion" then
        return require("arkbench.cmd.completion").main(args)
    elseif cmd == "dev-load" then
        local a = {}
        for i = 2, #args do a[#a + 1] = args[i] end
        return require("arkbench.cmd.loader").child(a)
    elseif cmd == "dev-busted" then
        return dev_busted(args)
    elseif cmd == "dev-lua" then
        arg = { [0] = args[2] }
        for i = 3, #args do arg[i - 2] = args[i] end
        dofile(args[2])
        return 0
    end
    return die("unknown command '" .. tostring(cmd) .. "' (see arkbench help)")
end

return _M
