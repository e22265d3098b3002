-- slurm_spec.lua -- shards launched by a real Slurm (issue 22, acceptance
-- 1 and 2; docs/distributed.md): a single-node Slurm from Debian's
-- slurm-wlm with its own configuration (SLURM_CONF: free ports, its own
-- state and spool folders, proctrack/linuxproc, task/none) and a munged
-- with a key made here (its own socket), both started and stopped by this
-- spec; `srun -n 4 arkbench run FILE --shard auto --start-at +5s --out DIR`
-- against one `arkbench serve` (tcp, 64 connections, 1 KiB, open loop
-- 8,000 msg/s in all, 2 s measured), then `arkbench merge`:
--   * completed is the sum of the shards' exactly, the merged RTT
--     histogram the bucket-wise sum of theirs, the connection ids 0-63
--     each once, start_skew_us present;
--   * the thresholds on the merge decide its exit code (0, 3);
--   * a shard SIGKILLed while it measures: merge exits 1, the case is
--     degraded naming shard 2, the three others' numbers are kept;
--   * folders of two scenarios, or one shard twice: exit 2 naming both.
-- Nothing here asserts a speed (rate_achieved, skew): they are measured
-- by hand (docs/distributed.md).
--
-- Needs: root, slurm-wlm and munge (packages.txt [test]); skipped (pending,
-- with the reason) without them. Runtime: ~45 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local ark = require("helpers.arkbench")
local files = require("helpers.files")
local proc = require("helpers.proc")

local shq, sh_ok, sh_out = files.shq, proc.sh_ok, proc.sh_out

local D -- the spec's folder: slurm.conf, munge/, state/, spool/, logs
local daemons = {}

local function stop_daemons()
    for i = #daemons, 1, -1 do pcall(proc.stop, daemons[i], 5) end
    daemons = {}
end

teardown(function()
    stop_daemons()
    proc.stop_all()
    files.remove_tmpdirs()
end)

local function why_not()
    if not sh_out("id -u"):match("^0") then return "not root (slurmd must run as root)" end
    for _, c in ipairs({ "slurmctld", "slurmd", "srun", "munged", "mungekey", "scontrol" }) do
        if not sh_ok("command -v " .. c .. " >/dev/null 2>&1") then
            return c .. " is not installed (apt-get install slurm-wlm munge)"
        end
    end
    return nil
end

local function listening(port)
    return sh_ok("bash -c 'exec 3<>/dev/tcp/127.0.0.1/" .. port .. "' 2>/dev/null")
end

-- below the ephemeral range, and used by no socket at all (ss)
local next_port = 22000 + (tonumber(sh_out("echo $$")) or 0) % 4000
local function free_port()
    for _ = 1, 200 do
        next_port = next_port + 1
        if not listening(next_port)
            and sh_out("ss -Htan '( sport = :" .. next_port .. " or dport = :" .. next_port
                       .. " )' 2>/dev/null"):match("^%s*$") then
            return next_port
        end
    end
    error("no free port found from 22000 up")
end

local function tail(path) return (files.read_file(path) or ""):sub(-1500) end

local function slurm_env() return { "SLURM_CONF=" .. D .. "/slurm.conf" } end

-- munged with a fresh key, slurmctld and slurmd on free ports: up and the
-- node idle, or an error with their logs
local function start_slurm()
    D = files.tmpdir("_slurm")
    for _, sub in ipairs({ "munge", "state", "spool" }) do assert(sh_ok("mkdir -p " .. shq(D .. "/" .. sub))) end
    -- munged checks its folders: not writable by others, socket folder
    -- searchable
    assert(sh_ok("chmod 755 " .. shq(D) .. " && chmod 700 " .. shq(D .. "/munge")))
    assert(sh_ok("mungekey --create --keyfile=" .. shq(D .. "/munge/munge.key") .. " >/dev/null 2>&1"),
           "mungekey failed")
    local sock = D .. "/munge/sock"
    daemons[#daemons + 1] = proc.spawn({ "munged", "-F", "-f", "--socket=" .. sock,
        "--key-file=" .. D .. "/munge/munge.key", "--log-file=" .. D .. "/munge/log",
        "--pid-file=" .. D .. "/munge/pid", "--seed-file=" .. D .. "/munge/seed" },
        { name = "munged", limit = 600 })
    assert(proc.wait_for(function() return files.exists(sock) end, 10),
           "munged did not start: " .. tail(D .. "/munge/log"))
    local host = sh_out("hostname -s"):gsub("%s+", "")
    local cpus = 4
    local conf = table.concat({
        "ClusterName=arkbenchspec",
        "SlurmctldHost=" .. host .. "(127.0.0.1)",
        "SlurmctldPort=" .. free_port(),
        "SlurmdPort=" .. free_port(),
        "SlurmUser=root", "SlurmdUser=root",
        "AuthType=auth/munge", "CredType=cred/munge", "AuthInfo=socket=" .. sock,
        "StateSaveLocation=" .. D .. "/state", "SlurmdSpoolDir=" .. D .. "/spool",
        "SlurmctldPidFile=" .. D .. "/slurmctld.pid", "SlurmdPidFile=" .. D .. "/slurmd.pid",
        "SlurmctldLogFile=" .. D .. "/slurmctld.log", "SlurmdLogFile=" .. D .. "/slurmd.log",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        "SchedulerType=sched/builtin", "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU",
        -- 4 tasks on a 2-CPU host: the node is declared with 4 CPUs
        "SlurmdParameters=config_overrides",
        "ReturnToService=2", "MpiDefault=none", "JobCompType=jobcomp/none",
        "AccountingStorageType=accounting_storage/none", "JobAcctGatherType=jobacct_gather/none",
        "MailProg=/bin/true",
        "NodeName=" .. host .. " NodeAddr=127.0.0.1 CPUs=" .. cpus .. " State=UNKNOWN",
        "PartitionName=arkbench Nodes=" .. host .. " Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES",
    }, "\n") .. "\n"
    files.write_file(D .. "/slurm.conf", conf)
    local env = "SLURM_CONF=" .. shq(D .. "/slurm.conf")
    daemons[#daemons + 1] = proc.spawn({ "env", "SLURM_CONF=" .. D .. "/slurm.conf", "slurmctld", "-D", "-i" },
                                       { name = "slurmctld", limit = 600 })
    daemons[#daemons + 1] = proc.spawn({ "env", "SLURM_CONF=" .. D .. "/slurm.conf", "slurmd", "-D" },
                                       { name = "slurmd", limit = 600 })
    local up = proc.wait_for(function()
        return sh_out(env .. " sinfo -h -o %t 2>/dev/null"):match("idle") ~= nil
    end, 30, 0.3)
    assert(up, "Slurm did not come up: slurmctld.log: " .. tail(D .. "/slurmctld.log")
        .. "\nslurmd.log: " .. tail(D .. "/slurmd.log"))
end

-- arkbench serve on a free loopback port -> port
local function start_serve()
    for _ = 1, 5 do
        local port = free_port()
        local p = proc.spawn({ ark.BIN, "serve", "--protocol", "tcp", "--listen", "127.0.0.1:" .. port,
                               "--payload", "1024", "--topology", "sharded:1" }, { name = "serve", limit = 600 })
        if proc.wait_for(function() return listening(port) or not proc.alive(p.pid) end, 10)
            and listening(port) then
            return port
        end
        proc.stop(p, 1)
    end
    error("arkbench serve did not start")
end

local function scenario(port, name, duration)
    local path = files.tmpdir("_scn") .. "/" .. name .. ".lua"
    files.write_file(path, string.format([[
return {
    name = %q, protocol = "tcp", payload = 1024,
    clients = 64, window = 1, rate = 8000,
    -- the exit code is the thresholds' here, not the rate's
    rate_strict = false,
    target = "127.0.0.1:%d",
    warmup = 0.2, duration = %s, repetitions = 1,
}
]], name, port, tostring(duration)))
    return path
end

local function srun(args, limit)
    local argv = { "srun", "--kill-on-bad-exit=0", "-n", "4" }
    for _, a in ipairs(args) do argv[#argv + 1] = a end
    return proc.run_cmd(argv, { env = slurm_env(), limit = limit or 90 })
end

local function shard_runs(dir)
    local out = {}
    for i = 0, 3 do out[i] = ark.read_runs(dir .. "/shard-" .. i .. "-of-4/runs.jsonl")[1] end
    return out
end

local skip = why_not()

describe("shards under Slurm (srun -n 4 ... --shard auto --start-at +5s)", function()
    if skip then
        pending("the Slurm spec is skipped: " .. skip)
        return
    end

    local port, scn, OUT
    setup(function()
        start_slurm()
        port = start_serve()
        scn = scenario(port, "slurmshards", 2)
        OUT = files.tmpdir("_runs") .. "/run"
        local rc, so, se = srun({ ark.BIN, "run", scn, "--shard", "auto", "--start-at", "+5s", "--out", OUT }, 120)
        assert(rc == 0, "srun exited " .. tostring(rc) .. "\n" .. so .. se)
    end)

    it("merges exactly: counts, histogram buckets, connection ids, start skew", function()
        local shards = shard_runs(OUT)
        local sum_completed, sum_sent = 0, 0
        local ids = {}
        for i = 0, 3 do
            local r = shards[i]
            assert.is_table(r, "shard " .. i .. " has no run")
            assert.are.equal("ok", r.status, ark.brief(r))
            assert.are.equal(i, r.shard.index)
            assert.are.equal(4, r.shard.count)
            assert.is_number(r.plan.start_offset_us)
            sum_completed, sum_sent = sum_completed + r.completed, sum_sent + r.sent
            -- the ids the engine gave the shard's clients: a whole range,
            -- each once (count, least, largest and sum of a run of ids)
            local c = r.connection_ids
            assert.is_table(c, "shard " .. i .. " reports no connection_ids")
            assert.are.same({ 16, 16 * i, 16 * i + 15, (32 * i + 15) * 8 }, { c.count, c.min, c.max, c.sum })
            assert.are.same({ c.min, c.max + 1 }, { r.shard.clients_from, r.shard.clients_to })
            ids[#ids + 1] = c
        end
        table.sort(ids, function(a, b) return a.min < b.min end)
        for k = 2, #ids do assert.are.equal(ids[k - 1].max + 1, ids[k].min) end
        assert.are.same({ 0, 63 }, { ids[1].min, ids[#ids].max })

        local M = files.tmpdir("_m") .. "/merged"
        local rc, so, se = ark.run({ "merge", M, OUT, "--threshold", "completed > 0" })
        assert(rc == 0, "merge exited " .. tostring(rc) .. "\n" .. so .. se)
        assert.truthy(so:find("start_skew_us", 1, true), so)
        local m = ark.read_runs(M .. "/runs.jsonl")
        assert.are.equal(1, #m)
        m = m[1]
        assert.are.equal("ok", m.status)
        assert.are.equal(sum_completed, m.completed)
        assert.are.equal(sum_sent, m.sent)
        assert.are.equal(64, m.load_applied.clients)
        assert.are.same({ 64, 0, 63, 2016 }, { m.connection_ids.count, m.connection_ids.min,
                                               m.connection_ids.max, m.connection_ids.sum })
        assert.are.equal(4, #m.shards)
        assert.is_number(m.start_skew_us)
        assert.is_true(m.start_skew_us >= 0)
        -- bucket by bucket: the merged histogram against the shards' summed
        -- here, from the encoding (core/base/histogram.h: ab1:count:min:
        -- max:overflow:sum:sumsq:<index delta>=<count>,...)
        local function buckets(enc)
            local head, list = enc:match("^(ab1:[^:]*:[^:]*:[^:]*:[^:]*:[^:]*:[^:]*):?(.*)$")
            assert(head, "not a histogram encoding: " .. tostring(enc))
            local count, mn, mx, over = head:match("^ab1:(%d+):(%d+):(%d+):(%d+)")
            local out, at = {}, 0
            for d, n in list:gmatch("(%d+)=(%d+)") do
                at = at + tonumber(d)
                out[at] = tonumber(n)
            end
            return out, tonumber(count), tonumber(mn), tonumber(mx), tonumber(over)
        end
        local want, wcount, wmin, wmax = {}, 0, math.huge, 0
        for i = 0, 3 do
            local b, c, mn, mx = buckets(shards[i].rtt_histogram)
            for k, v in pairs(b) do want[k] = (want[k] or 0) + v end
            wcount, wmin, wmax = wcount + c, math.min(wmin, mn), math.max(wmax, mx)
        end
        local got, gcount, gmin, gmax = buckets(m.rtt_histogram)
        assert.are.equal(wcount, gcount)
        assert.are.equal(wmin, gmin)
        assert.are.equal(wmax, gmax)
        local nw, ng = 0, 0
        for k, v in pairs(want) do
            nw = nw + 1
            assert.are.equal(v, got[k], "bucket " .. tostring(k))
        end
        for _ in pairs(got) do ng = ng + 1 end
        assert.are.equal(nw, ng)
        assert.is_true(nw > 1)
        -- the merged folder is a result folder as any other
        local rrc = ark.run({ "report", M })
        assert.are.equal(0, rrc)
    end)

    it("lets the thresholds on the merge decide the exit code", function()
        local rc1, so1, se1 = ark.run({ "merge", files.tmpdir("_t") .. "/pass", OUT,
                                        "--threshold", "round_trips_per_s > 1" })
        assert(rc1 == 0, so1 .. se1)
        local rc3, so3, se3 = ark.run({ "merge", files.tmpdir("_t") .. "/fail", OUT,
                                        "--threshold", "round_trips_per_s > 1e9" })
        assert(rc3 == 3, "exit " .. tostring(rc3) .. "\n" .. so3 .. se3)
    end)

    it("refuses two scenarios' folders and one shard twice, naming both folders", function()
        local other = scenario(port, "slurmother", 1)
        local OUT2 = files.tmpdir("_runs2") .. "/run"
        local rc = srun({ ark.BIN, "run", other, "--shard", "auto", "--out", OUT2 })
        assert.are.equal(0, rc)
        local a, b = OUT .. "/shard-0-of-4", OUT2 .. "/shard-1-of-4"
        local rc2, _, se2 = ark.run({ "merge", files.tmpdir("_x") .. "/m", a, b })
        assert.are.equal(2, rc2)
        assert.truthy(se2:find(a, 1, true), se2)
        assert.truthy(se2:find(b, 1, true), se2)
        assert.truthy(se2:find("different scenario", 1, true), se2)
        local dup = files.tmpdir("_dup") .. "/copy"
        assert(sh_ok("cp -r " .. shq(OUT .. "/shard-2-of-4") .. " " .. shq(dup)))
        local rc3, _, se3 = ark.run({ "merge", files.tmpdir("_x") .. "/m", OUT, dup })
        assert.are.equal(2, rc3)
        assert.truthy(se3:find(OUT .. "/shard-2-of-4", 1, true), se3)
        assert.truthy(se3:find(dup, 1, true), se3)
        assert.truthy(se3:find("shard 2 of 4 twice", 1, true), se3)
    end)

    it("degrades the case naming a shard SIGKILLed while it measures", function()
        local OUT3 = files.tmpdir("_runs3") .. "/run"
        local p = proc.spawn({ "env", "SLURM_CONF=" .. D .. "/slurm.conf", "srun", "--kill-on-bad-exit=0", "-n", "4",
                               ark.BIN, "run", scn, "--shard", "auto", "--start-at", "+5s", "--out", OUT3 },
                             { name = "srun", limit = 120 })
        -- shard 2's orchestrator (its srun task), once its plan is known
        local env2 = OUT3 .. "/shard-2-of-4/env.json"
        assert(proc.wait_for(function() return files.exists(env2) end, 30), "shard 2 did not start")
        local e = ark.cjson.decode(files.read_file(env2))
        local t0 = e.run_settings.start_at_unix_s
        local pid
        assert(proc.wait_for(function()
            pid = sh_out("{ for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ | grep -qx SLURM_PROCID=2"
                .. " && tr '\\0' ' ' < $p/cmdline | grep -q " .. shq(" run " .. scn)
                .. " && echo ${p#/proc/}; done; } 2>/dev/null"):match("(%d+)")
            return pid ~= nil
        end, 10), "shard 2's process not found")
        -- mid-measure: the slot's start + connect allowance + warm-up lead,
        -- then 0.8 s into the 2 s measure phase (run/shard.lua plan_of)
        local at = t0 + 1.5 + 64 / 500 + 0.2 + 0.2 + 0.8
        while tonumber(sh_out("date +%s.%N")) < at do proc.sleep(0.05) end
        assert(sh_ok("kill -KILL " .. pid))
        assert(proc.wait_for(function() return not proc.alive(p.pid) end, 60), "srun did not end")
        local M = files.tmpdir("_k") .. "/merged"
        local rc, so, se = ark.run({ "merge", M, OUT3 })
        assert(rc == 1, "merge exited " .. tostring(rc) .. "\n" .. so .. se)
        local m = ark.read_runs(M .. "/runs.jsonl")[1]
        assert.are.equal("degraded", m.status)
        assert.truthy(tostring(m.error):find("shard 2 of 4: missing", 1, true), m.error)
        assert.are.equal(48, m.load_applied.clients)
        assert.are.equal(3, m.load_applied.shards)
        local sum = 0
        for i = 0, 3 do
            local r = ark.read_runs(OUT3 .. "/shard-" .. i .. "-of-4/runs.jsonl")[1]
            if i == 2 then assert.is_nil(r) else sum = sum + r.completed end
        end
        assert.is_true(sum > 0)
        assert.are.equal(sum, m.completed)
        local rep = files.read_file(M .. "/report.md") or ""
        assert.truthy(rep:find("shard 2 of 4", 1, true), "report.md does not name the shard")
    end)

    it("leaves no Slurm daemon running once stopped", function()
        local pids = {}
        for _, f in ipairs({ "/slurmctld.pid", "/slurmd.pid", "/munge/pid" }) do
            local pid = (files.read_file(D .. f) or ""):match("(%d+)")
            assert.truthy(pid, D .. f .. " holds no pid")
            pids[#pids + 1] = pid
        end
        stop_daemons()
        for _, pid in ipairs(pids) do assert.is_false(proc.alive(pid), "pid " .. pid .. " still runs") end
    end)
end)
