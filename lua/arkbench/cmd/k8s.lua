-- arkbench.cmd.k8s: `arkbench k8s FILE --shards N --image IMG --target
-- HOST:PORT [--start-in 60s] [--out DIR] [--name JOB] [--cpu C] [--set k=v]...
-- [--filter k=v]... [--quick]` writes the Kubernetes manifests that run N shards of a
-- scenario (docs/distributed.md, "Kubernetes") and prints the commands
-- that apply them, collect the results and merge them.
--
--   DIR/configmap.yaml  a ConfigMap holding the scenario file and the
--                       modules beside it that it requires (by a literal
--                       name, transitively: _M.modules), mounted where
--                       the pod's `require` finds them
--   DIR/job.yaml        an Indexed Job (completionMode: Indexed,
--                       completions = parallelism = N) whose pod i runs
--                       shard i: `arkbench run --shard auto` finds
--                       JOB_COMPLETION_INDEX and ARKBENCH_SHARDS, then its
--                       result folder goes to stdout as a base64 tar
--                       between two marker lines, for `kubectl logs`;
--                       the pods spread over the nodes (a preferred
--                       topologySpreadConstraint by hostname), with
--                       --cpu a CPU request each
--
-- A pod whose shard ran exits 0 whatever its run came to (its own code
-- 1, 3 or 130: degraded, failed, a threshold crossed, interrupted by a
-- SIGTERM -- `merge` decides on the whole); only a shard that could not
-- run (refused: 2; killed) fails its pod, and with backoffLimit 0 the Job. The collect command
-- waits for the Job's Complete or Failed condition, whichever comes. The
-- apply command deletes a Job of the same name first (a Job's pod
-- template cannot be changed in place). DIR must be new or empty.
--
-- The scenario is loaded and checked here first (a target every shard
-- reaches, enough clients for N shards): what the pods would refuse is
-- refused now, exit 2. With --start-in, the Job's ARKBENCH_START_AT is
-- "@START_AT@", filled in by the printed apply command with the epoch
-- second of `now + start-in` when it is applied: every pod then gets the
-- same --start-at.

local shard = require("arkbench.run.shard")
local units = require("arkbench.util.units")

local format = string.format
local ipairs, tostring, tonumber = ipairs, tostring, tonumber
local io_stderr, io_stdout = io.stderr, io.stdout

local _M = {}

_M.BEGIN = "-----BEGIN ARKBENCH RESULTS-----"
_M.END = "-----END ARKBENCH RESULTS-----"
-- where the pod sees the scenario and writes its results
_M.SCENARIO = "/etc/arkbench/scenario.lua"
_M.RESULTS = "/tmp/arkbench-results"

local function die(msg)
    io_stderr:write("arkbench: k8s: ", msg, "\n")
    return 2
end

local function parse(args)
    local o = { sets = {}, filters = {} }
    local i = 2
    while i <= #args do
        local a = args[i]
        local v = args[i + 1]
        local function need()
            if v == nil then error(a .. " needs a value", 0) end
            i = i + 2
            return v
        end
        if a == "--shards" then o.shards = need()
        elseif a == "--image" then o.image = need()
        elseif a == "--target" then o.target = need()
        elseif a == "--start-in" then o.start_in = need()
        elseif a == "--out" then o.out = need()
        elseif a == "--name" then o.name = need()
        elseif a == "--cpu" then o.cpu = need()
        elseif a == "--set" then o.sets[#o.sets + 1] = need()
        elseif a == "--filter" then o.filters[#o.filters + 1] = need()
        elseif a == "--quick" then o.quick = true; i = i + 1
        elseif a:sub(1, 1) == "-" then error("unknown option '" .. a .. "' (see arkbench help k8s)", 0)
        elseif not o.path then o.path = a; i = i + 1
        else error("unexpected argument '" .. a .. "'", 0) end
    end
    if not o.path then error("k8s needs a scenario file: arkbench k8s FILE --shards N --image IMG"
                             .. " --target HOST:PORT", 0) end
    local n = tonumber(o.shards or "")
    if not n or n < 1 or n > shard.MAX_COUNT or n ~= math.floor(n) then
        error(string.format("--shards %s: expected a whole number from 1 to %d", tostring(o.shards),
                            shard.MAX_COUNT), 0)
    end
    o.n = n
    if o.name and (#o.name > 52 or not o.name:match("^[a-z0-9][-a-z0-9]*$") or o.name:match("%-$")) then
        error("--name " .. o.name .. ": expected a Kubernetes name: lower-case letters, digits and '-',"
              .. " at most 52 characters (the Job adds its pods' suffixes)", 0)
    end
    if o.cpu and not (o.cpu:match("^%d+m$") or o.cpu:match("^%d+%.?%d*$")) or o.cpu == "0" then
        error("--cpu " .. o.cpu .. ": expected a Kubernetes CPU quantity: 2, 1.5 or 500m", 0)
    end
    if not o.image or o.image == "" then error("--image IMG: the container image with arkbench installed", 0) end
    if not o.target or not (o.target:match("^[^:]+:%d+$") or o.target:match("^%[.+%]:%d+$")) then
        error("--target HOST:PORT: the server every pod drives (host:port, [v6]:port)", 0)
    end
    if o.start_in then
        local s = units.seconds(o.start_in)
        if type(s) ~= "number" or not (s >= 1) or s == math.huge then
            error("--start-in " .. tostring(o.start_in) .. ": expected a duration of at least 1s (e.g. 60s)", 0)
        end
        o.start_s = math.ceil(s)
    end
    return o
end

-- a YAML double-quoted scalar (control characters, quotes and
-- backslashes as \xNN escapes)
local function q(s)
    return '"' .. tostring(s):gsub('[%c"\\]', function(c)
        return format("\\x%02x", c:byte())
    end) .. '"'
end

local function block(text, indent)
    local pad = string.rep(" ", indent)
    local out = {}
    for line in (text:gsub("\n$", "") .. "\n"):gmatch("([^\n]*)\n") do
        out[#out + 1] = line == "" and "" or (pad .. line)
    end
    return table.concat(out, "\n")
end

local function shq(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- The modules the scenario at path requires by a literal name that lie in
-- its own folder (where `require` looks first: scenario/search_path.lua),
-- and what they require, transitively: { { name, file, rel } ... } in the
-- order found, and the names found nowhere there (arkbench's own
-- modules excepted): the pods would not have those.
local BUILTIN = { ffi = true, bit = true, jit = true, string = true, table = true, math = true, io = true,
                  os = true, debug = true, coroutine = true, package = true, arkbench = true }

function _M.modules(path, text)
    local dir = path:match("^(.*)/[^/]*$") or "."
    if dir == "" then dir = "/" end
    local found, missing, seen = {}, {}, {}
    local function scan(src)
        for name in src:gmatch("require%s*%(?%s*[\"']([^\"']+)[\"']") do
            if not seen[name] and name:match("^[%w_][%w_.%-]*$") and not BUILTIN[name]
                and not name:match("^arkbench%.") and not name:match("^jit%.") then
                seen[name] = true
                local base = name:gsub("%.", "/")
                local hit
                for _, rel in ipairs({ base .. ".lua", base .. "/init.lua" }) do
                    local f = io.open(dir .. "/" .. rel, "rb")
                    if f then
                        hit = { name = name, file = dir .. "/" .. rel, rel = rel, text = f:read("*a") or "" }
                        f:close()
                        break
                    end
                end
                if hit and seen[hit.rel] then -- luacheck: ignore 542
                    -- one file under two names: carried once
                elseif hit then
                    seen[hit.rel] = true
                    found[#found + 1] = hit
                    scan(hit.text)
                else
                    missing[#missing + 1] = name
                end
            end
        end
    end
    scan(text)
    return found, missing
end

-- the container's shell script: run the shard, then its folder as a tar
function _M.script(o)
    local words = { "arkbench", "run", '"$ARKBENCH_SCENARIO"', "--shard", "auto",
                    "--set", shq("target=" .. o.target), "--out", '"$ARKBENCH_RESULTS"' }
    for _, kv in ipairs(o.sets) do words[#words + 1] = "--set"; words[#words + 1] = shq(kv) end
    for _, kv in ipairs(o.filters) do words[#words + 1] = "--filter"; words[#words + 1] = shq(kv) end
    if o.quick then words[#words + 1] = "--quick" end
    local lines = {
        "set -u",
        'start=""',
        'if [ -n "${ARKBENCH_START_AT:-}" ]; then start="--start-at $ARKBENCH_START_AT"; fi',
        "# the run's own output goes to stderr: stdout carries the results",
        table.concat(words, " ") .. " $start >&2",
        "rc=$?",
        "echo " .. shq(_M.BEGIN),
        'tar -C "$ARKBENCH_RESULTS" -cf - . | base64',
        "echo " .. shq(_M.END),
        "# the shard ran (0 ok, 1 degraded or failed, 3 a threshold, 130 interrupted):",
        "# its folder is above and merge decides; anything else fails the pod",
        'echo "arkbench: the shard exited $rc" >&2',
        'case $rc in 0|1|3|130) exit 0;; *) exit $rc;; esac',
    }
    return table.concat(lines, "\n") .. "\n"
end

-- the ConfigMap key of a module (keys cannot hold '/')
local function mod_key(m) return "mod-" .. m.rel:gsub("/", ".") end

function _M.manifests(o, scenario_text, modules)
    local name = o.name
    modules = modules or {}
    local mod_lines = {}
    for _, m in ipairs(modules) do
        mod_lines[#mod_lines + 1] = "  " .. mod_key(m) .. ": |2"
        mod_lines[#mod_lines + 1] = block(m.text, 4)
    end
    local cm = table.concat({
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata:",
        "  name: " .. q(name),
        "  labels:",
        "    app.kubernetes.io/name: arkbench",
        "data:",
        "  scenario.lua: |2",
        block(scenario_text, 4),
        #mod_lines > 0 and table.concat(mod_lines, "\n") or nil,
    }, "\n") .. "\n"
    -- the modules at their paths beside the scenario file
    local items = ""
    if #modules > 0 then
        local it = { "            items:", "              - key: scenario.lua", "                path: scenario.lua" }
        for _, m in ipairs(modules) do
            it[#it + 1] = "              - key: " .. q(mod_key(m))
            it[#it + 1] = "                path: " .. q(m.rel)
        end
        items = "\n" .. table.concat(it, "\n")
    end
    local env = {
        { "ARKBENCH_SHARDS", tostring(o.n) },
        { "ARKBENCH_SCENARIO", _M.SCENARIO },
        { "ARKBENCH_RESULTS", _M.RESULTS },
    }
    if o.start_s then env[#env + 1] = { "ARKBENCH_START_AT", "@START_AT@" } end
    local env_lines = {}
    for _, e in ipairs(env) do
        env_lines[#env_lines + 1] = "            - name: " .. e[1]
        env_lines[#env_lines + 1] = "              value: " .. q(e[2])
    end
    local dir = _M.SCENARIO:match("^(.*)/[^/]+$")
    -- a request, no limit: a CPU limit throttles the load generator
    local resources = o.cpu and ("          resources:\n            requests:\n              cpu: " .. q(o.cpu))
        or "          # resources: {requests: {cpu: \"2\"}} (arkbench k8s --cpu 2)"
    local job = table.concat({
        "apiVersion: batch/v1",
        "kind: Job",
        "metadata:",
        "  name: " .. q(name),
        "  labels:",
        "    app.kubernetes.io/name: arkbench",
        "spec:",
        "  completionMode: Indexed",
        "  completions: " .. o.n,
        "  parallelism: " .. o.n,
        "  backoffLimit: 0",
        "  template:",
        "    metadata:",
        "      labels:",
        "        app.kubernetes.io/name: arkbench",
        "        app.kubernetes.io/instance: " .. q(name),
        "    spec:",
        "      restartPolicy: Never",
        "      # one shard per node where the nodes allow it",
        "      topologySpreadConstraints:",
        "        - maxSkew: 1",
        "          topologyKey: kubernetes.io/hostname",
        "          whenUnsatisfiable: ScheduleAnyway",
        "          labelSelector:",
        "            matchLabels:",
        "              app.kubernetes.io/instance: " .. q(name),
        "      containers:",
        "        - name: arkbench",
        "          image: " .. q(o.image),
        resources,
        "          command: [\"/bin/sh\", \"-c\"]",
        "          args:",
        "            - |",
        block(_M.script(o), 14),
        "          env:",
        table.concat(env_lines, "\n"),
        "          volumeMounts:",
        "            - name: scenario",
        "              mountPath: " .. q(dir),
        "              readOnly: true",
        "      volumes:",
        "        - name: scenario",
        "          configMap:",
        "            name: " .. q(name) .. items,
    }, "\n") .. "\n"
    return cm, job
end

function _M.commands(o, dir)
    -- a Job's template cannot change in place: an earlier Job of this
    -- name (and its pods) goes first
    local apply = format("kubectl delete job/%s --ignore-not-found --wait=true && ", o.name)
    if o.start_s then
        apply = apply .. format("sed \"s/@START_AT@/$(( $(date +%%s) + %d ))/\" %s/job.yaml"
                                .. " | kubectl apply -f %s/configmap.yaml -f -",
                                o.start_s, dir, dir)
    else
        apply = apply .. format("kubectl apply -f %s/configmap.yaml -f %s/job.yaml", dir, dir)
    end
    -- until the Job is Complete or Failed (a `kubectl wait` for one
    -- condition would wait out its timeout on the other)
    local collect = format("until kubectl get job/%s -o jsonpath='{.status.conditions[?(@.status==\"True\")].type}'"
        .. " | grep -qE 'Complete|Failed'; do sleep 5; done; mkdir -p %s/results;"
        .. " for i in $(seq 0 %d); do kubectl logs --tail=-1"
        .. " -l job-name=%s,batch.kubernetes.io/job-completion-index=$i"
        .. " | sed -n '/^%s$/,/^%s$/p' | sed '1d;$d' | base64 -d | tar -C %s/results -xf -; done",
        o.name, dir, o.n - 1, o.name, _M.BEGIN, _M.END, dir)
    local merge = format("arkbench merge %s/merged %s/results", dir, dir)
    return apply, collect, merge
end

function _M.main(args, cli)
    local ok, o = pcall(parse, args)
    if not ok then return die(tostring(o)) end
    -- every pod would refuse what is refused here
    local sets = {}
    for _, kv in ipairs(o.sets) do sets[#sets + 1] = kv end
    sets[#sets + 1] = "target=" .. o.target
    local spec, cases, lcode = cli.load_cases({ path = o.path, sets = sets, filters = o.filters, quick = o.quick })
    if not spec then
        io_stderr:write(cases, "\n")
        return lcode or 2
    end
    local bad = shard.check(cases, { index = 0, count = o.n })
    if bad then return die(o.path .. ": " .. bad) end
    local f = io.open(o.path, "rb")
    local text = f and f:read("*a")
    if f then f:close() end
    if not text then return die("cannot read " .. o.path) end
    local folder = require("arkbench.run.folder")
    if not o.name then
        local base = folder.sanitize(spec.name):lower():gsub("[^a-z0-9-]", "-"):sub(1, 40):gsub("%-+$", "")
        o.name = base ~= "" and ("arkbench-" .. base) or "arkbench"
    end
    local dir = o.out or ("k8s-" .. folder.sanitize(spec.name))
    -- a folder of earlier manifests (and results) is not overwritten
    local core = require("arkbench.core")
    local kind = core.file_kind(dir)
    if kind and kind ~= "directory" then return die(dir .. ": exists and is not a folder") end
    local names = kind and core.dir_entries(dir) or {}
    if #names > 0 then
        table.sort(names)
        return die(format("%s: holds files (%s%s): choose an empty or new folder (--out DIR)", dir,
                          table.concat(names, ", ", 1, math.min(#names, 5)), #names > 5 and ", ..." or ""))
    end
    local made, merr = folder.mkdir_p(dir)
    if not made then return die("cannot create " .. tostring(merr)) end
    local modules, missing = _M.modules(o.path, text)
    for _, m in ipairs(missing) do
        io_stderr:write(format("arkbench: k8s: warning: %s requires \"%s\", which is not beside it"
                               .. " (%s.lua): the ConfigMap carries only the scenario's folder, so the"
                               .. " pods' image must have it\n", o.path, m, (m:gsub("%.", "/"))))
    end
    local cm, job = _M.manifests(o, text, modules)
    for _, w in ipairs({ { "configmap.yaml", cm }, { "job.yaml", job } }) do
        local wok, werr = cli.write_file(dir .. "/" .. w[1], w[2])
        if not wok then
            io_stderr:write("arkbench: k8s: cannot write ", tostring(werr), "\n")
            return 1
        end
    end
    local apply, collect, merge = _M.commands(o, dir)
    io_stdout:write(format("wrote %s/configmap.yaml and %s/job.yaml: %d shards of %s (%d cases) against %s\n",
                           dir, dir, o.n, spec.name, #cases, o.target))
    for _, m in ipairs(modules) do
        io_stdout:write(format("  with the module %s (%s)\n", m.name, m.file))
    end
    io_stdout:write("\n")
    io_stdout:write("# 1. apply", o.start_s and format(" (every pod starts its plan %d s after this)", o.start_s) or "",
                    "\n", apply, "\n\n# 2. collect each pod's result folder\n", collect,
                    "\n\n# 3. merge\n", merge, "\n")
    return 0
end

return _M
