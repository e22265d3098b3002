-- degraded_spec.lua -- issue 10, acceptance 2 and 7: a fault keeps the
-- measurement. 100 connections against a peer that resets one of them
-- after 50 echoes (spec/fixtures/misbehaving/tcp_reset_after.py): the run
-- is `degraded`, its errors name the reset class once, its round trips/s
-- are in the terminal table, summary.json, report.md and `compare` with a
-- mark. A run that connects nowhere: the terminal gives the failure's errno
-- class and per-class counts whole, within 80 columns, and the empty
-- latency fields are null in runs.jsonl. Notes count only threads with
-- work (a client-only run's work pool has none).
--
-- Needs: /usr/bin/python3 ($ARKBENCH_PYTHON overrides it).
-- Runtime: ~10 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")
local peers = require("helpers.peers")

local ROOT, PY, cjson = ark.ROOT, peers.PY, ark.cjson
local brief, assert_identity = ark.brief, ark.assert_identity

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

local FIX = ROOT .. "/spec/fixtures/misbehaving"

-- Writes scenario text to a temp folder and runs it into DIR/out; returns
-- rc, stdout, stderr, the out folder and its runs.
local function run_into(text, name)
    local d = files.tmpdir()
    local path = d .. "/" .. name .. ".lua"
    files.write_file(path, text)
    local out = d .. "/out"
    local rc, so, se = proc.run_cmd({ ark.BIN, "run", path, "--out", out }, { limit = 60 })
    return rc, so, se, out, ark.read_runs(out .. "/runs.jsonl")
end

local function lines_of(s)
    local out = {}
    for l in (s or ""):gmatch("([^\n]*)\n") do out[#out + 1] = l end
    return out
end

---------------------------------------------------------------------------
describe("100 connections, the peer resets one of them after 50 echoes", function()
    local rc, so, se, out, runs, peer

    setup(function()
        local srv = proc.spawn({ PY, FIX .. "/tcp_reset_after.py", "1", "50", "64" },
                               { name = "tcp_reset_after.py" })
        local port = peers.wait_listening(srv)
        rc, so, se, out, runs = run_into(string.format([[
return { name = "reset_one", protocol = "tcp", framing = "raw", target = "127.0.0.1:%d",
         payload = 64, clients = 100, window = 1, warmup = 0, duration = 1, timeout = 2,
         repetitions = 1 }
]], port), "reset_one")
        proc.sleep(0.3)
        peer = peers.last_json(proc.stop(srv), srv.name)
    end)

    it("is degraded, names the reset class once and keeps its counts", function()
        assert.are.equal(1, #runs, "runs; stderr:\n" .. se)
        local r = runs[1]
        assert.are.equal(1, peer.resets, cjson.encode(peer))
        assert.are.equal("degraded", r.status, brief(r))
        assert.is_false(r.ok, brief(r))
        local classes = {}
        for k in pairs(r.errors) do classes[#classes + 1] = k end
        assert.are.equal(1, #classes, "errors: " .. cjson.encode(r.errors))
        assert.matches("RESET", classes[1])
        assert.are.equal(1, r.errors[classes[1]], brief(r))
        assert.are.equal(1, r.message_errors, brief(r))
        assert.is_true(r.completed > 50, brief(r))
        assert.is_true(r.round_trips_per_s > 0, brief(r))
        assert.matches("reset", r.error)
        assert_identity(r)
        -- degraded: exit code 1 (README.md, exit codes)
        assert.are.equal(1, rc, se)
    end)

    it("has its round trips/s in summary.json's medians, listed as degraded", function()
        local s = cjson.decode(files.read_file(out .. "/summary.json"))
        local c = s.cases[1]
        assert.are.equal(1, c.runs_ok)
        assert.are.equal(1, c.runs_degraded)
        assert.are.equal(0, #c.failed)
        assert.are.equal(runs[1].round_trips_per_s, c.metrics.round_trips_per_s.median)
        assert.are.equal("degraded", c.degraded[1].status)
        assert.are.same(runs[1].errors, c.degraded[1].errors)
        assert.are.equal(1, s.runs_degraded)
        assert.are.equal(0, s.runs_failed)
    end)

    it("shows round trips/s with the mark and the class in the terminal table and report.md", function()
        local rt = ark.cjson.encode(math.floor(runs[1].round_trips_per_s + 0.5))
        rt = rt:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", "")
        local ls = lines_of(so)
        assert.matches("^" .. rt .. " %[" .. rt .. ", " .. rt .. "%]#", ls[3], so)
        local class = next(runs[1].errors)
        assert.truthy(so:find("# degraded (rep 1): ", 1, true), so)
        assert.truthy(so:find("errors: " .. class .. " 1", 1, true), so)
        local md = files.read_file(out .. "/report.md")
        assert.truthy(md:find("| " .. rt .. " [" .. rt .. ", " .. rt .. "] # |", 1, true), md)
        -- (a busy machine may also mark the run generator-bound: a client
        -- loop >= 95 % busy, docs/load-models.md)
        assert.truthy(md:find("| 1/1 (1 degraded) |", 1, true)
                      or md:find("| 1/1 (1 degraded, 1 generator-bound) |", 1, true), md)
        assert.truthy(md:find("## Degraded runs", 1, true), md)
        assert.truthy(md:find("| default | 1 | degraded | ", 1, true), md)
    end)

    it("is paired by compare, with the mark, not excluded", function()
        local crc, cout, cerr = ark.run({ "compare", out, out })
        assert.are.equal(0, crc, cerr)
        assert.matches("default%s+[%d,]+ #%s+[%d,]+ #%s+1%.00x", cout)
        assert.is_nil(cout:find("excluded", 1, true), cout)
        assert.truthy(cout:find("median of per-case throughput ratios: 1.00x over 1 case", 1, true), cout)
    end)
end)

---------------------------------------------------------------------------
describe("a run that connects nowhere (ECONNREFUSED)", function()
    local rc, so, se, runs, _

    setup(function()
        -- a port that was just listening and is closed now
        local srv = proc.spawn({ PY, FIX .. "/tcp_reset_after.py" }, { name = "tcp_reset_after.py" })
        local port = peers.wait_listening(srv)
        proc.stop(srv)
        rc, so, se, _, runs = run_into(string.format([[
return { name = "refused", protocol = "tcp", target = "127.0.0.1:%d", payload = 64,
         clients = 4, window = 1, warmup = 0, duration = 0.2, repetitions = 1 }
]], port), "refused")
    end)

    it("prints the errno class and the per-class counts whole, within 80 columns", function()
        assert.are.equal(1, #runs, se)
        local r = runs[1]
        assert.are.equal("failed", r.status, brief(r))
        assert.are.equal(1, rc, se)
        local ls = lines_of(so)
        assert.matches("FAILED %(failed, below%)%s+0/1$", ls[3])
        local block = {}
        for i = 4, #ls do
            if ls[i] == "" then break end
            block[#block + 1] = ls[i]
            assert.is_true(#ls[i] <= 80, "longer than 80 columns: " .. ls[i])
        end
        local text = table.concat(block, " "):gsub("%s+", " ")
        assert.truthy(text:find("FAILED (failed: " .. r.error:gsub("%s+", " "), 1, true), so)
        assert.truthy(text:find("(ECONNREFUSED)", 1, true), so)
        assert.truthy(text:find("; errors: ECONNREFUSED " .. r.errors.ECONNREFUSED .. ")", 1, true), so)
        assert.is_true(r.errors.ECONNREFUSED >= 1, brief(r))
    end)

    it("writes the empty latency fields as null", function()
        local r = runs[1]
        assert.are.equal(0, r.rtt_us.count)
        for _, k in ipairs({ "min", "p50", "p90", "p95", "p99", "p999", "max", "mean", "stdev" }) do
            assert.are.equal(cjson.null, r.rtt_us[k], "rtt_us." .. k)
        end
    end)
end)

---------------------------------------------------------------------------
describe("oversubscription notes", function()
    -- the engine counts sysconf(_SC_NPROCESSORS_ONLN) logical CPUs
    local ncpu = tonumber(proc.sh_out("getconf _NPROCESSORS_ONLN"):match("%d+"))
    local n = ncpu + 2

    local function notes_of(r)
        return table.concat(type(r.notes) == "table" and r.notes or {}, " | ")
    end

    it("do not count a client-only run's work pool, which has no work", function()
        local srv = proc.spawn({ PY, FIX .. "/tcp_reset_after.py", "0" }, { name = "tcp_reset_after.py" })
        local port = peers.wait_listening(srv)
        local _, _, se, _, runs = run_into(string.format([[
return { name = "pool", protocol = "tcp", framing = "raw", target = "127.0.0.1:%d", payload = 64,
         clients = 1, window = 1, warmup = 0, duration = 0.2, topology = "pool:%d", repetitions = 1 }
]], port, n), "pool")
        proc.stop(srv)
        assert.are.equal(1, #runs, se)
        assert.are.equal("ok", runs[1].status, brief(runs[1]))
        assert.is_nil(notes_of(runs[1]):find("oversubscribed", 1, true), notes_of(runs[1]))
    end)

    it("count the pool where it serves, and only the loops that hold a connection", function()
        local _, _, se, _, runs = run_into(string.format([[
return { name = "both", protocol = "tcp", payload = 64, clients = 1, window = 1, warmup = 0,
         duration = 0.2, topology = { "pool:%d", "sharded:%d" }, repetitions = 1 }
]], n, n), "both")
        assert.are.equal(2, #runs, se)
        -- pool:n in one process: 1 loop + n pool threads with work
        assert.truthy(notes_of(runs[1]):find(string.format("%d busy threads on %d logical CPUs: oversubscribed",
            n + 1, ncpu), 1, true), notes_of(runs[1]))
        -- sharded:n with 1 client: n - 1 idle loops, 1 busy thread
        assert.truthy(notes_of(runs[2]):find(string.format("%d of %d loops have no connection", n - 1, n), 1, true),
            notes_of(runs[2]))
        assert.is_nil(notes_of(runs[2]):find("oversubscribed", 1, true), notes_of(runs[2]))
    end)
end)
