-- k8s_spec.lua -- `arkbench k8s` (issue 22, acceptance 5; docs/distributed.md,
-- "Kubernetes"): the manifests it writes parse (python3-yaml) and hold what
-- a cluster needs (a ConfigMap with the scenario, an Indexed Job with
-- completions = parallelism = N, ARKBENCH_SHARDS, the scenario volume);
-- then each index's container command runs here, with exactly the
-- environment the Job gives its pod (JOB_COMPLETION_INDEX = i, the Job's
-- env with @START_AT@ filled in as the printed apply command does; only the
-- two mount points are local folders), against one `arkbench serve`; their
-- stdout goes through the printed collect pipeline and `arkbench merge`
-- joins the folders exactly. No cluster is needed.
--
-- Needs: /usr/bin/python3 with yaml (packages.txt [test] python3-yaml),
-- tar, base64. Runtime: ~15 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local ark = require("helpers.arkbench")
local files = require("helpers.files")
local proc = require("helpers.proc")
local peers = require("helpers.peers")

local shq, sh_ok, sh_out = files.shq, proc.sh_ok, proc.sh_out

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

-- one `arkbench serve` on a port it chooses itself (helpers.peers)
local function start_serve()
    return peers.wait_listening(peers.serve("tcp", { "--payload", "512", "--topology", "sharded:1" }))
end

local SCENARIO = [[
-- a scenario as a user writes it: the target comes from `arkbench k8s`
return {
    name = "k8s shards", protocol = "tcp", payload = 512,
    clients = 12, window = 1, rate = 1200, rate_strict = false,
    warmup = 0.1, duration = 1, repetitions = 1,
}
]]

local function yaml_docs(paths)
    local cmd = "/usr/bin/python3 -c " .. shq("import sys, json, yaml\n"
        .. "print(json.dumps([yaml.safe_load(open(p)) for p in sys.argv[1:]]))")
    for _, p in ipairs(paths) do cmd = cmd .. " " .. shq(p) end
    local out = sh_out(cmd .. " 2>&1")
    local ok, v = pcall(ark.cjson.decode, out)
    assert(ok and type(v) == "table", "the manifests do not parse: " .. out)
    return v
end

describe("arkbench k8s", function()
    it("writes manifests whose pods, run here with the Job's env, merge exactly", function()
        assert.is_true(sh_ok("/usr/bin/python3 -c 'import yaml' 2>/dev/null"),
                       "python3-yaml is needed (apt-get install python3-yaml)")
        local port = start_serve()
        local d = files.tmpdir("_k8s")
        local scn = d .. "/shards.lua"
        files.write_file(scn, SCENARIO)
        local N = 3
        local rc, so, se = ark.run({ "k8s", scn, "--shards", tostring(N), "--image", "registry.example/arkbench:0.1",
                                     "--target", "127.0.0.1:" .. port, "--start-in", "3s", "--out", d .. "/m",
                                     "--cpu", "1500m" })
        assert(rc == 0, "k8s exited " .. tostring(rc) .. "\n" .. so .. se)
        assert.truthy(so:find("kubectl apply", 1, true), so)
        assert.truthy(so:find("kubectl logs", 1, true), so)
        assert.truthy(so:find("arkbench merge", 1, true), so)
        -- apply: an earlier Job of the name goes first (its template is immutable)
        local apply = so:match("\n# 1%. [^\n]*\n([^\n]+)")
        assert.truthy(apply:find("^kubectl delete job/[%w-]+ %-%-ignore%-not%-found %-%-wait=true && "), apply)
        -- collect: until Complete or Failed, never one condition for 24 h
        local wait = so:match("\n# 2%. [^\n]*\n([^\n]+)")
        assert.truthy(wait:find("grep -qE 'Complete|Failed'", 1, true), wait)
        assert.is_nil(wait:find("condition=complete", 1, true), wait)

        local docs = yaml_docs({ d .. "/m/configmap.yaml", d .. "/m/job.yaml" })
        local cm, job = docs[1], docs[2]
        assert.are.equal("ConfigMap", cm.kind)
        assert.are.equal(SCENARIO, cm.data["scenario.lua"])
        assert.are.equal("batch/v1", job.apiVersion)
        assert.are.equal("Job", job.kind)
        assert.are.equal("Indexed", job.spec.completionMode)
        assert.are.equal(N, job.spec.completions)
        assert.are.equal(N, job.spec.parallelism)
        local pod = job.spec.template.spec
        assert.are.equal("Never", pod.restartPolicy)
        -- spread by node, preferred: the pods of this Job, by its instance label
        local spread = pod.topologySpreadConstraints[1]
        assert.are.same({ 1, "kubernetes.io/hostname", "ScheduleAnyway" },
                        { spread.maxSkew, spread.topologyKey, spread.whenUnsatisfiable })
        assert.are.equal(job.metadata.name, spread.labelSelector.matchLabels["app.kubernetes.io/instance"])
        assert.are.equal(job.metadata.name, job.spec.template.metadata.labels["app.kubernetes.io/instance"])
        local c = pod.containers[1]
        assert.are.equal("registry.example/arkbench:0.1", c.image)
        assert.are.same({ requests = { cpu = "1500m" } }, c.resources)
        local env = {}
        for _, e in ipairs(c.env) do env[e.name] = e.value end
        assert.are.equal(tostring(N), env.ARKBENCH_SHARDS)
        assert.are.equal("@START_AT@", env.ARKBENCH_START_AT)
        -- the scenario volume is the ConfigMap, mounted where the command reads it
        assert.are.equal(cm.metadata.name, pod.volumes[1].configMap.name)
        assert.are.equal(pod.volumes[1].name, c.volumeMounts[1].name)
        local mount = c.volumeMounts[1].mountPath
        assert.are.equal(mount .. "/scenario.lua", env.ARKBENCH_SCENARIO)
        local argv = {}
        for _, a in ipairs(c.command) do argv[#argv + 1] = a end
        for _, a in ipairs(c.args or {}) do argv[#argv + 1] = a end
        assert.are.equal("/bin/sh", argv[1])

        -- each index's pod, here: `arkbench` on PATH, the ConfigMap's file
        -- at a local mount point, a results folder of its own
        local bin = files.tmpdir("_bin")
        assert(sh_ok("ln -s " .. shq(ark.BIN) .. " " .. shq(bin .. "/arkbench")))
        local vol = files.tmpdir("_vol")
        files.write_file(vol .. "/scenario.lua", cm.data["scenario.lua"])
        local start_at = tostring(math.floor(tonumber(sh_out("date +%s"))) + 3)
        local pods = {}
        for i = 0, N - 1 do
            local res = files.tmpdir("_res" .. i)
            local e = { "env", "PATH=" .. bin .. ":" .. os.getenv("PATH"), "JOB_COMPLETION_INDEX=" .. i,
                        "ARKBENCH_ROOT=" .. ark.ROOT }
            for _, x in ipairs(c.env) do
                local v = x.value
                if x.name == "ARKBENCH_START_AT" then v = start_at end
                if x.name == "ARKBENCH_SCENARIO" then v = vol .. "/scenario.lua" end
                if x.name == "ARKBENCH_RESULTS" then v = res end
                e[#e + 1] = x.name .. "=" .. v
            end
            for _, a in ipairs(argv) do e[#e + 1] = a end
            pods[i] = proc.spawn(e, { name = "pod " .. i, limit = 120 })
        end
        for i = 0, N - 1 do
            assert(proc.wait_for(function() return not proc.alive(pods[i].pid) end, 90), "pod " .. i .. " did not end")
        end
        -- the collect step: each pod's log through the printed pipeline
        local collect = so:match("\n# 2%. [^\n]*\n([^\n]+)")
        local pipe = collect:match("(sed %-n .-tar %-C) ")
        assert.truthy(pipe, collect)
        local results = d .. "/results"
        assert(sh_ok("mkdir -p " .. shq(results)))
        local sum = 0
        for i = 0, N - 1 do
            local log = pods[i].dir .. "/stdout"
            assert(sh_ok("cat " .. shq(log) .. " | " .. pipe .. " " .. shq(results) .. " -xf -"),
                   "pod " .. i .. ": " .. proc.stderr_of(pods[i]))
            local r = ark.read_runs(results .. "/shard-" .. i .. "-of-" .. N .. "/runs.jsonl")[1]
            assert.is_table(r, "pod " .. i .. " wrote no run: " .. proc.stderr_of(pods[i]))
            assert.are.equal("ok", r.status, ark.brief(r))
            assert.are.equal(i, r.shard.index)
            assert.is_number(r.plan.start_offset_us)
            sum = sum + r.completed
        end
        local mrc, mso, mse = ark.run({ "merge", d .. "/merged", results })
        assert(mrc == 0, "merge exited " .. tostring(mrc) .. "\n" .. mso .. mse)
        local m = ark.read_runs(d .. "/merged/runs.jsonl")[1]
        assert.are.equal("ok", m.status)
        assert.are.equal(sum, m.completed)
        assert.are.equal(12, m.load_applied.clients)
        assert.are.same({ 12, 0, 11, 66 }, { m.connection_ids.count, m.connection_ids.min,
                                             m.connection_ids.max, m.connection_ids.sum })
        assert.is_number(m.start_skew_us)
    end)

    it("lets a pod whose run was degraded or failed exit 0 with its folder: merge decides", function()
        local d = files.tmpdir("_k8s3")
        local scn = d .. "/s.lua"
        files.write_file(scn, SCENARIO)
        -- a port nothing listens on: every connect refused
        local rc, so, se = ark.run({ "k8s", scn, "--shards", "2", "--image", "x", "--target", "127.0.0.1:9",
                                     "--quick", "--out", d .. "/m" })
        assert(rc == 0, so .. se)
        local job = yaml_docs({ d .. "/m/job.yaml" })[1]
        local c = job.spec.template.spec.containers[1]
        local bin = files.tmpdir("_bin")
        assert(sh_ok("ln -s " .. shq(ark.BIN) .. " " .. shq(bin .. "/arkbench")))
        files.write_file(d .. "/scenario.lua", SCENARIO)
        local e = { "env", "PATH=" .. bin .. ":" .. os.getenv("PATH"), "JOB_COMPLETION_INDEX=1",
                    "ARKBENCH_ROOT=" .. ark.ROOT }
        for _, x in ipairs(c.env) do
            local v = x.value
            if x.name == "ARKBENCH_SCENARIO" then v = d .. "/scenario.lua" end
            if x.name == "ARKBENCH_RESULTS" then v = d .. "/res" end
            e[#e + 1] = x.name .. "=" .. v
        end
        for _, a in ipairs(c.command) do e[#e + 1] = a end
        for _, a in ipairs(c.args) do e[#e + 1] = a end
        local prc, pso, pse = proc.run_cmd(e, { limit = 60 })
        assert.are.equal(0, prc, pse)
        assert.truthy(pse:find("the shard exited 1", 1, true), pse)
        assert.truthy(pso:find("-----BEGIN ARKBENCH RESULTS-----", 1, true), pso)
        local r = ark.read_runs(d .. "/res/shard-1-of-2/runs.jsonl")[1]
        assert.is_table(r, pse)
        assert.is_true(r.status ~= "ok", ark.brief(r))
        -- what could not run at all still fails the pod (and the Job)
        local bad = {}
        for i, a in ipairs(e) do bad[i] = a:gsub("^ARKBENCH_SHARDS=2$", "ARKBENCH_SHARDS=x") end
        local brc = proc.run_cmd(bad, { limit = 60 })
        assert.are.equal(2, brc)
    end)

    it("merge refuses shards run with different --set, naming both folders", function()
        local port = start_serve()
        local d = files.tmpdir("_sets")
        local scn = d .. "/s.lua"
        files.write_file(scn, SCENARIO)
        local target = "target=127.0.0.1:" .. port
        local rc0 = ark.run({ "run", scn, "--shard", "0/2", "--set", target, "--quick", "--out", d .. "/a" })
        local rc1 = ark.run({ "run", scn, "--shard", "1/2", "--set", target, "--set", "window=2", "--quick",
                              "--out", d .. "/a" })
        assert.are.same({ 0, 0 }, { rc0, rc1 })
        local rc, _, se = ark.run({ "merge", d .. "/m", d .. "/a" })
        assert.are.equal(2, rc)
        assert.truthy(se:find(d .. "/a/shard-0-of-2 and " .. d .. "/a/shard-1-of-2: different settings", 1, true), se)
        assert.truthy(se:find("window=2", 1, true), se)
        assert.is_false(files.exists(d .. "/m/runs.jsonl"))
    end)

    it("refuses what every pod would refuse, before writing anything", function()
        local d = files.tmpdir("_k8s2")
        local scn = d .. "/s.lua"
        files.write_file(scn, 'return { name = "few", protocol = "tcp", clients = 2 }\n')
        local rc, _, se = ark.run({ "k8s", scn, "--shards", "4", "--image", "x", "--target", "127.0.0.1:9",
                                    "--out", d .. "/m" })
        assert.are.equal(2, rc)
        assert.truthy(se:find("2 clients cannot be split into 4 shards", 1, true), se)
        assert.is_false(files.exists(d .. "/m/job.yaml"))
        -- a folder holding earlier manifests is not overwritten
        files.write_file(scn, 'return { name = "few", protocol = "tcp", clients = 4 }\n')
        assert.are.equal(0, (ark.run({ "k8s", scn, "--shards", "4", "--image", "x", "--target", "127.0.0.1:9",
                                       "--out", d .. "/m" })))
        local rc3, _, se3 = ark.run({ "k8s", scn, "--shards", "2", "--image", "x", "--target", "127.0.0.1:9",
                                      "--out", d .. "/m" })
        assert.are.equal(2, rc3)
        assert.truthy(se3:find(d .. "/m: holds files (configmap.yaml, job.yaml): choose an empty or new folder",
                               1, true), se3)
        assert.truthy(files.read_file(d .. "/m/job.yaml"):find("completions: 4", 1, true))
        local rc4, _, se4 = ark.run({ "k8s", scn, "--shards", "2", "--image", "x", "--target", "127.0.0.1:9",
                                      "--cpu", "lots", "--out", d .. "/n" })
        assert.are.equal(2, rc4)
        assert.truthy(se4:find("--cpu lots: expected a Kubernetes CPU quantity", 1, true), se4)
        local rc2, _, se2 = ark.run({ "k8s", scn, "--shards", "2", "--image", "x" })
        assert.are.equal(2, rc2)
        assert.truthy(se2:find("--target", 1, true), se2)
    end)
end)
