-- processes_spec.lua -- processes = N (issue 15): the client side as N
-- processes, the servers as N processes on one port (SO_REUSEPORT), one
-- timeline, merged exactly into one run object: the merged counts are
-- the sums of the parts', the merged histogram is the merge of the parts'
-- histograms, and each process's CPU and RSS are listed. Runtime: ~10 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local core = require("arkbench.core")
local files = require("helpers.files")
local ark = require("helpers.arkbench")

teardown(function() files.remove_tmpdirs() end)

local SUMMED = { "sent", "completed", "drained", "timed_out", "message_errors", "unfinished",
                 "connections_used" }

describe("processes = 4", function()
    local run

    setup(function()
        local r = ark.run_scenario([[
return { name = "procs", protocol = "tcp", clients = 42, window = 2, payload = 64,
         placement = "split", processes = 4, rate = 4000, rate_strict = false,
         warmup = 0.3, duration = 1.5, interval = 0.5, repetitions = 1, timeout = 5 }
]], { name = "procs", limit = 120 })
        assert.equals(0, r.rc, r.stderr)
        assert.equals(1, #r.runs)
        run = r.runs[1]
    end)

    it("runs ok with the identity holding and every connection used", function()
        assert.equals("ok", run.status, run.error)
        assert.equals(run.sent, run.completed + run.drained + run.timed_out + run.message_errors
                      + run.unfinished)
        assert.equals(42, run.connections_used)
        assert.is_true(run.completed > 0)
        -- the shares of the rate add up to it (whether a loaded host met it
        -- is not asserted)
        assert.near(4000, run.rate_asked, 1e-6)
    end)

    it("lists each client process, its connections and its CPU and RSS", function()
        local c = run.client
        assert.equals(4, c.processes)
        assert.equals(4, #c.processes_detail)
        local clients, cpu, rss = 0, 0, 0
        for i, d in ipairs(c.processes_detail) do
            assert.equals(i, d.process)
            -- connections i-1, i+3, ...: 11, 11, 10, 10 of 42
            assert.equals(i <= 2 and 11 or 10, d.clients)
            assert.is_true(d.pid > 0)
            assert.is_true(d.rss_peak_bytes > 0 and d.cpu_user_s + d.cpu_sys_s > 0)
            clients, cpu, rss = clients + d.clients, cpu + d.cpu_percent, rss + d.rss_peak_bytes
        end
        assert.equals(42, clients)
        assert.near(cpu, c.cpu_percent, 1e-6)
        assert.equals(rss, c.rss_peak_bytes)
        assert.is_true(c.rss_per_connection_bytes >= 0)
    end)

    it("sums the parts' counters into the run's", function()
        for _, k in ipairs(SUMMED) do
            local sum = 0
            for _, d in ipairs(run.client.processes_detail) do sum = sum + d[k] end
            assert.equals(sum, run[k], k)
        end
    end)

    it("merges the parts' histograms into the run's exactly", function()
        local encs = {}
        for i, d in ipairs(run.client.processes_detail) do encs[i] = d.rtt_histogram end
        local merged = assert(core.hist_merge(encs))
        assert.equals(merged, run.rtt_histogram)
        local s = core.hist_summary(merged)
        assert.equals(run.completed + run.drained, s.count)
        assert.equals(s.p99, run.rtt_us.p99)
        assert.equals(s.max, run.rtt_us.max)
        -- the time series: aligned intervals, merged
        local ivs, sum = {}, 0
        for i, iv in ipairs(run.intervals) do
            ivs[i] = iv.rtt_histogram
            sum = sum + iv.completed
        end
        assert.equals(3, #run.intervals)
        assert.equals(merged, assert(core.hist_merge(ivs)))
        -- an interval's `completed` counts the replies inside the deadline
        -- (the drained ones are in its histogram only)
        assert.equals(run.completed, sum)
    end)

    it("serves from 4 processes on one port, each listed", function()
        local s = run.server
        assert.equals(4, s.processes)
        assert.equals(4, #s.processes_detail)
        local conns, msgs = 0, 0
        for _, d in ipairs(s.processes_detail) do
            conns, msgs = conns + d.connections, msgs + d.messages
            assert.is_true(d.rss_peak_bytes > 0)
        end
        assert.equals(42, conns)
        assert.equals(s.connections, conns)
        assert.equals(s.messages, msgs)
        assert.is_true(msgs >= run.completed)
    end)
end)

describe("processes", function()
    it("needs placement = \"split\" or a target", function()
        local r = ark.run_scenario('return { name = "p", clients = 4, processes = 2 }\n', { name = "p" })
        assert.equals(2, r.rc)
        assert.truthy(r.stderr:find("key 'processes': got 2; expected 1 unless placement = \"split\"", 1, true),
                      r.stderr)
    end)

    it("serve --processes 2 listens once and sums both processes", function()
        local d = files.tmpdir("_serve")
        local cmd = string.format("%s serve --processes 2 --listen 127.0.0.1:0 > %s/out 2>%s/err &"
            .. " echo $!", ark.BIN, d, d)
        local pid = tonumber(io.popen(cmd):read("*l"))
        local port
        for _ = 1, 100 do
            port = (files.read_file(d .. "/out") or ""):match("listening on 127%.0%.0%.1:(%d+)")
            if port then break end
            os.execute("sleep 0.1")
        end
        assert.truthy(port, files.read_file(d .. "/err"))
        local scen = d .. "/t.lua"
        files.write_file(scen, string.format('return { name = "t", target = "127.0.0.1:%s", clients = 8,'
            .. ' processes = 2, warmup = 0.1, duration = 0.5, repetitions = 1 }\n', port))
        local rc, _, err = ark.run({ "run", scen, "--out", d .. "/res" })
        os.execute("kill -TERM " .. pid)
        for _ = 1, 100 do
            if (files.read_file(d .. "/out") or ""):find("}%s*$") then break end
            os.execute("sleep 0.1")
        end
        assert.equals(0, rc, err)
        local out = files.read_file(d .. "/out")
        local _, nlisten = out:gsub("listening on", "")
        assert.equals(1, nlisten, out)
        local obj = ark.cjson.decode(out:match("\n(%b{})%s*$"))
        assert.equals(2, obj.processes)
        assert.equals(8, obj.connections)
        assert.equals(obj.processes_detail[1].connections + obj.processes_detail[2].connections, 8)
        local runs = ark.read_runs(d .. "/res/runs.jsonl")
        assert.equals(2, runs[1].client.processes)
        assert.equals(8, runs[1].connections_used)
    end)
end)

-- tags (docs/run-object.md, "Tags") survive the merge of the processes:
-- every message is tagged, so the tags' counts add up to the run's and
-- their histograms merge to the run's
describe("processes = 2 with tags", function()
    it("merges each tag's counts and histogram over the processes", function()
        local r = ark.run_scenario([[
return { name = "ptags", protocol = "tcp", framing = "raw", execution = "lua", payload = 1,
         clients = 4, placement = "split", processes = 2,
         client = function(conn)
             local i = 0
             while true do
                 i = i + 1
                 if not conn:call("x", 1, i % 2 == 0 and "even" or "odd") then return end
             end
         end,
         warmup = 0.1, duration = 0.5, repetitions = 1, timeout = 5 }
]], { name = "ptags", limit = 120 })
        assert.equals(0, r.rc, r.stderr)
        local run = r.runs[1]
        assert.equals("ok", run.status, run.error)
        assert.is_table(run.tags)
        local sent, done, encs = 0, 0, {}
        for _, name in ipairs({ "even", "odd" }) do
            local t = run.tags[name]
            assert.is_table(t, name)
            assert.is_true(t.completed > 0)
            assert.equals(t.completed + t.drained, t.rtt_us.count)
            sent, done = sent + t.sent, done + t.completed
            encs[#encs + 1] = t.rtt_histogram
        end
        assert.equals(run.sent, sent)
        assert.equals(run.completed, done)
        assert.equals(core.hist_summary(run.rtt_histogram).count,
                      core.hist_summary(core.hist_merge(encs)).count)
    end)
end)

-- each process interns its own tags: 16 per process, 32 together, which
-- one process refuses (docs/lua-api.md, "Tags"); the merged run passed
describe("processes = 2 with 16 tags per process", function()
    it("is a script error: a case has at most 16 distinct tags", function()
        local r = ark.run_scenario([[
return { name = "ptags32", protocol = "tcp", framing = "raw", execution = "lua", payload = 1,
         clients = 2, placement = "split", processes = 2,
         message = function(i, id) return "a", "c" .. id .. "t" .. (i % 16) end, expect = 1,
         warmup = 0.1, duration = 0.3, repetitions = 1, timeout = 5 }
]], { name = "ptags32", limit = 120 })
        assert.equals(1, r.rc, r.stderr)
        local run = r.runs[1]
        assert.equals("script_error", run.status, run.error)
        assert.truthy(run.error:find("at most 16 distinct tags; its 2 processes had 32", 1, true),
                      run.error)
        -- the numbers are kept
        assert.is_true(run.completed > 0)
        assert.equals(run.sent, run.completed + run.drained + run.timed_out + run.message_errors
                      + run.unfinished)
    end)
end)

-- connect_rate over the processes: client i starts at i / connect_rate in
-- whichever process holds it; each part took a share of the rate but
-- spaced its clients by their case ids, N times too far apart (1.4 s here)
describe("processes = 4 with connect_rate", function()
    it("keeps the case's connect schedule: 8 at 20/s take 7/20 s, not 4 times that", function()
        local r = ark.run_scenario([[
return { name = "pconn", protocol = "tcp", clients = 8, placement = "split", processes = 4,
         connect_rate = 20, warmup = 0, duration = 0.3, repetitions = 1, timeout = 5 }
]], { name = "pconn", limit = 120 })
        assert.equals(0, r.rc, r.stderr)
        local run = r.runs[1]
        assert.equals("ok", run.status, run.error)
        assert.equals(8, run.connect_us.count)
        assert.is_true(run.connect_phase_s >= 7 / 20, tostring(run.connect_phase_s))
        -- the wrong schedule's last connect was due at 1.4 s (a timer:
        -- never early); the slack is for a loaded host
        assert.is_true(run.connect_phase_s < 1.35, tostring(run.connect_phase_s))
    end)
end)
