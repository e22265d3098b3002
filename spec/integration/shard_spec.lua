-- shard_spec.lua -- `arkbench merge` of shards run here (issue 22; the
-- defects a user's trial found, docs/distributed.md "A missing or failed
-- shard"): three shards of one open-loop case against one `arkbench
-- serve`, shard 1 interrupted (SIGINT) while it runs. The shard exits 130;
-- the merge is degraded, names "shard 1 of 3: interrupted", keeps the
-- others' numbers, keeps the unsplit rate as rate_asked with rate_met
-- false, says so in the report, and exits 1 (never 130). A second merge
-- into the same OUT is refused in merge's own words. Runtime: ~10 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local ark = require("helpers.arkbench")
local files = require("helpers.files")
local proc = require("helpers.proc")
local peers = require("helpers.peers")

local shq, sh_ok = files.shq, proc.sh_ok

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

-- one `arkbench serve` on a port it chooses itself (helpers.peers)
local function start_serve()
    return peers.wait_listening(peers.serve("tcp", { "--payload", "64", "--topology", "sharded:1" }))
end

local SCENARIO = [[
return {
    name = "three shards", protocol = "tcp", payload = 64,
    clients = 6, window = 1, rate = 600, rate_strict = false,
    warmup = 0.1, duration = 4, repetitions = 1,
}
]]

describe("merge of shards run here", function()
    local d, merged_rc, merged_so, merged_se

    setup(function()
        local port = start_serve()
        d = files.tmpdir("_shards")
        files.write_file(d .. "/s.lua", SCENARIO)
        local function shard(i)
            return shq(ark.BIN) .. " run " .. shq(d .. "/s.lua") .. " --shard " .. i .. "/3 --set target=127.0.0.1:"
                .. port .. " --out " .. shq(d .. "/run") .. " >" .. shq(d .. "/shard" .. i .. ".log") .. " 2>&1"
        end
        -- shard 1 gets SIGINT once its folder exists and a second more
        local script = shard(0) .. " & " .. shard(2) .. " & " .. shard(1) .. " & p=$!; n=0; "
            .. "while [ ! -d " .. shq(d .. "/run/shard-1-of-3") .. " ] && [ $n -lt 200 ]; do sleep 0.1; n=$((n+1)); done; "
            .. "sleep 1; kill -INT $p; wait $p; echo rc1=$?; wait"
        local rc, so = proc.run_cmd({ "bash", "-c", script }, { limit = 60 })
        assert(rc == 0, "the shards' script exited " .. tostring(rc))
        assert.are.equal("130", so:match("rc1=(%d+)"), so .. (files.read_file(d .. "/shard1.log") or ""))
        merged_rc, merged_so, merged_se = ark.run({ "merge", d .. "/merged", d .. "/run" })
    end)

    it("degrades the case naming the interrupted shard, keeps the others' numbers, exits 1", function()
        local own = ark.read_runs(d .. "/run/shard-1-of-3/runs.jsonl")[1]
        assert.is_table(own, files.read_file(d .. "/shard1.log"))
        assert.are.equal("interrupted", own.status)
        assert.are.equal(1, merged_rc, merged_so .. merged_se)
        local m = ark.read_runs(d .. "/merged/runs.jsonl")[1]
        assert.are.equal("degraded", m.status, ark.brief(m))
        assert.truthy(m.error:find("shard 1 of 3: interrupted (", 1, true), m.error)
        assert.truthy(m.error:find("load applied: 4 of 6 connections, 400 of 600 msg/s from 2 of 3 shards", 1, true),
                      m.error)
        local sum = 0
        for _, i in ipairs({ 0, 2 }) do
            local r = ark.read_runs(d .. "/run/shard-" .. i .. "-of-3/runs.jsonl")[1]
            assert.are.equal("ok", r.status, ark.brief(r))
            sum = sum + r.completed
        end
        assert.are.equal(sum, m.completed)
        assert.are.equal("interrupted", m.shards[2].status)
    end)

    it("keeps the unsplit case's rate as rate_asked, rate_met false, and names the shard in the report", function()
        local m = ark.read_runs(d .. "/merged/runs.jsonl")[1]
        assert.are.equal(600, m.rate_asked)
        assert.is_false(m.rate_met)
        assert.are.equal(400, m.load_applied.rate)
        assert.truthy(merged_so:find("# degraded: shard 1 of 3 interrupted (the load applied was less than the"
                                     .. " case's)", 1, true), merged_so)
        assert.is_nil(merged_so:find("some run had errors", 1, true), merged_so)
    end)

    it("says in report.md and report.html that the folder is a merge: shards, hosts, skew", function()
        local md = files.read_file(d .. "/merged/report.md")
        assert.truthy(md:find("Merged by `arkbench merge` from 3 shards on 1 host", 1, true), md)
        assert.truthy(md:find("\n## Shards\n", 1, true), md)
        assert.truthy(md:find("| 1 | [^|]+ | 0/1 | interrupted 1 |"), md)
        assert.truthy(md:find("| default | %d+ |"), md)
        local html = files.read_file(d .. "/merged/report.html")
        assert.truthy(html:find('<h2 id="shards">Shards</h2>', 1, true))
        assert.truthy(html:find("Merged by arkbench merge from 3 shards", 1, true))
    end)

    it("leaves machine % out of a merge over several hosts, each shard's kept", function()
        -- the same folders, shard 2 as if it ran on another host
        local two = d .. "/two"
        assert(sh_ok("mkdir -p " .. shq(two) .. " && cp -r " .. shq(d .. "/run") .. "/shard-* " .. shq(two)))
        local s2 = two .. "/shard-2-of-3"
        local env = ark.cjson.decode(files.read_file(s2 .. "/env.json"))
        local host = env.hostname
        env.hostname = "otherhost"
        files.write_file(s2 .. "/env.json", ark.cjson.encode(env))
        local r = ark.read_runs(s2 .. "/runs.jsonl")[1]
        r.shard.host = "otherhost"
        files.write_file(s2 .. "/runs.jsonl", ark.cjson.encode(r) .. "\n")
        local rc, so, se = ark.run({ "merge", d .. "/merged2", two })
        assert.are.equal(1, rc, so .. se)
        local m = ark.read_runs(d .. "/merged2/runs.jsonl")[1]
        assert.is_true(m.cpu_machine_percent == nil or m.cpu_machine_percent == ark.cjson.null)
        assert.is_number(m.shards[1].cpu_machine_percent)
        local md = files.read_file(d .. "/merged2/report.md")
        assert.truthy(md:find("from 3 shards on 2 hosts (" .. host .. ", otherhost)", 1, true), md)
        assert.truthy(md:find("machine % is left out", 1, true), md)
        assert.is_nil(md:find(", on " .. host, 1, true), md)
    end)

    it("refuses an OUT holding an earlier result in merge's own words", function()
        local rc, _, se = ark.run({ "merge", d .. "/merged", d .. "/run" })
        assert.are.equal(2, rc)
        assert.truthy(se:find("OUT " .. d .. "/merged: holds an earlier arkbench result (its runs.jsonl): choose an"
                              .. " empty or new folder", 1, true), se)
        assert.is_nil(se:find("--append", 1, true), se)
        assert.is_nil(se:find("--out", 1, true), se)
    end)
end)
