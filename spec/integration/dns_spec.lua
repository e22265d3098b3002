-- dns_spec.lua -- issue 14 acceptance 3: scenarios/custom/dns.lua (A
-- queries over udp, execution = "lua": a client function with conn:call
-- and the light form) against a real resolver, Debian's dnsmasq, serving
-- bench.test on a free loopback port with no upstream.
--
-- 1. Straight to dnsmasq: both parts run ok with every reply's ID, RCODE
--    and question checked, nothing lost, and the queries dnsmasq says it
--    answered ("queries answered locally", its SIGUSR1 statistics) are
--    exactly the queries the runs sent (warm-up included).
-- 2. Through spec/fixtures/misbehaving/udp_lossy_proxy.py, which drops
--    every 40th reply and holds every 29th back 0.6 s (past the 0.3 s
--    timeout): the runs stay ok (loss is measured), the dropped and held
--    replies' queries are timed out (`udp.lost`), the held replies that
--    come back are counted `udp.late` and no datagram is taken for the
--    reply of another query (no ESEQ).
-- 3. A closed port: every query is lost, ECONNREFUSED is counted, the run
--    ends with status failed (nothing completed) and its counts kept.
--
-- Needs: dnsmasq (Debian dnsmasq-base), /usr/bin/python3.
-- Runtime: ~15 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")
local peers = require("helpers.peers")

local assert_identity, brief = ark.assert_identity, ark.brief

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

local SCENARIO = ark.ROOT .. "/scenarios/custom/dns.lua"
local PROXY = ark.ROOT .. "/spec/fixtures/misbehaving/udp_lossy_proxy.py"

-- A loopback port free for UDP and TCP right now (dnsmasq binds both),
-- below the ephemeral range, where the other tests' connections take
-- their source ports.
local FREE_PORT_PY = [[
import random, socket
for _ in range(200):
    p = random.randint(20000, 32000)
    try:
        for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
            s = socket.socket(socket.AF_INET, kind)
            s.bind(("127.0.0.1", p))
            s.close()
    except OSError:
        continue
    print(p)
    break
]]
local function free_port()
    local out = proc.sh_out(peers.PY .. " -c " .. files.shq(FREE_PORT_PY))
    return assert(tonumber(out:match("(%d+)")), "no free port: " .. tostring(out))
end

-- Starts dnsmasq serving bench.test on a free port; returns a handle
-- { port, pid (dnsmasq's own), log }.
local function start_dnsmasq()
    for _ = 1, 5 do
        local d = files.tmpdir("_dns")
        local port = free_port()
        local log, pidf = d .. "/dnsmasq.log", d .. "/dnsmasq.pid"
        local p = proc.spawn({ "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null",
            "--no-hosts", "--no-resolv", "--port=" .. port, "--listen-address=127.0.0.1",
            "--bind-interfaces", "--address=/bench.test/127.0.0.1", "--log-facility=" .. log,
            "--pid-file=" .. pidf }, { name = "dnsmasq" })
        local pid
        proc.wait_for(function()
            pid = tonumber((files.read_file(pidf) or ""):match("(%d+)"))
            return (pid and (files.read_file(log) or ""):find("started, version")) or not proc.alive(p.pid)
        end, 10)
        if pid and proc.alive(p.pid) then return { port = port, pid = pid, log = log, proc = p } end
        proc.stop(p) -- the port was taken meanwhile: another one
    end
    error("dnsmasq did not start")
end

-- dnsmasq's count of the queries it answered itself (it logs its
-- statistics on SIGUSR1).
local function answered(dns)
    local before = select(2, (files.read_file(dns.log) or ""):gsub("answered locally", ""))
    os.execute("kill -USR1 " .. dns.pid)
    local n
    proc.wait_for(function()
        local text = files.read_file(dns.log) or ""
        if select(2, text:gsub("answered locally", "")) <= before then return false end
        for v in text:gmatch("queries answered locally (%d+)") do n = tonumber(v) end
        return true
    end, 10)
    return assert(n, "dnsmasq logged no statistics:\n" .. tostring(files.read_file(dns.log)))
end

-- Runs dns.lua with the --set values `sets` (and `extra` arguments);
-- returns the exit code, the runs by label and stderr.
local function run_dns(sets, extra)
    local out = files.tmpdir("_dns") .. "/out"
    local argv = { ark.BIN, "run", SCENARIO, "--out", out }
    for _, s in ipairs(sets) do argv[#argv + 1] = "--set"; argv[#argv + 1] = s end
    for _, a in ipairs(extra or {}) do argv[#argv + 1] = a end
    local rc, _, se = proc.run_cmd(argv, { limit = 90 })
    local by = {}
    for _, r in ipairs(ark.read_runs(out .. "/runs.jsonl")) do by[r.case_id:match("label=(%S+)") or r.case_id] = r end
    return rc, by, se
end

local LABELS = { "call", "pipelined" }

---------------------------------------------------------------------------
describe("dns.lua straight to dnsmasq", function()
    local dns, rc, runs, err, count
    setup(function()
        dns = start_dnsmasq()
        rc, runs, err = run_dns({ "target=127.0.0.1:" .. dns.port, "warmup=0.2", "duration=0.5",
            "repetitions=1", "timeout=2" })
        count = answered(dns)
    end)

    it("runs both parts ok: every reply's ID, RCODE and question checked", function()
        assert.are.equal(0, rc, err)
        for _, label in ipairs(LABELS) do
            local r = runs[label]
            assert.is_truthy(r, label .. " did not run; stderr:\n" .. err)
            assert.are.equal("ok", r.status, brief(r))
            assert.is_true(r.completed > 100, brief(r))
            assert_identity(r)
            assert.are.equal(0, r.udp.lost, brief(r))
            assert.are.equal(0, ark.sum_values(r.errors), brief(r))
            assert.are.equal(r.completed + r.drained, r.rtt_us.count, brief(r))
        end
        assert.is_truthy(runs.pipelined.case_id:find("window=8", 1, true), runs.pipelined.case_id)
    end)

    it("sent exactly the queries dnsmasq answered", function()
        local sent, done, settled = 0, 0, true
        for _, label in ipairs(LABELS) do
            local r = runs[label]
            sent = sent + r.sent + r.warmup_completed
            done = done + r.completed + r.drained + r.warmup_completed
            settled = settled and r.timed_out == 0 and r.unfinished == 0
        end
        if settled then
            assert.are.equal(sent, count, "dnsmasq answered " .. count .. " queries, the runs sent " .. sent)
        else -- a warm-up query overdue on a busy machine is answered, not counted
            assert.is_true(count >= done, "dnsmasq answered " .. count .. " < " .. done)
        end
    end)
end)

---------------------------------------------------------------------------
describe("dns.lua through a proxy that drops every 40th reply and holds every 29th back", function()
    local dns, proxy, rc, runs, err, pstats, count
    setup(function()
        dns = start_dnsmasq()
        proxy = peers.python(PROXY, { tostring(dns.port), "drop=40", "delay=29", "hold=0.6" })
        local port = peers.wait_listening(proxy)
        rc, runs, err = run_dns({ "target=127.0.0.1:" .. port, "warmup=0.2", "duration=1.5",
            "repetitions=1", "timeout=0.3", "clients=4" })
        proc.sleep(0.7) -- the held replies have gone out
        pstats = peers.last_json(proc.stop(proxy), "the proxy's output")
        count = answered(dns)
    end)

    it("stays ok: the lost queries are measured, not errors", function()
        assert.are.equal(0, rc, err)
        assert.is_true(pstats.dropped > 0 and pstats.delayed > 0, ark.cjson.encode(pstats))
        for _, label in ipairs(LABELS) do
            local r = runs[label]
            assert.is_truthy(r, label .. " did not run; stderr:\n" .. err)
            assert.are.equal("ok", r.status, brief(r))
            assert.is_true(r.completed > 0, brief(r))
            assert_identity(r)
            -- a held reply is never taken for another query's (no ESEQ)
            assert.are.equal(0, ark.sum_values(r.errors), brief(r))
        end
    end)

    it("counts the dropped and held replies' queries lost, and the held ones late", function()
        for _, label in ipairs(LABELS) do
            local r = runs[label]
            assert.is_true(r.timed_out > 0, brief(r))
            assert.are.equal(r.timed_out, r.udp.lost, brief(r))
            assert.is_true(r.udp.late > 0, label .. ": late " .. r.udp.late)
            -- each late reply is one of a lost query's
            assert.is_true(r.udp.late <= r.udp.lost, label .. ": late " .. r.udp.late .. " > lost "
                .. r.udp.lost)
            assert.are.equal(r.late, r.udp.late)
        end
        -- the proxy relayed what dnsmasq answered, its queries included
        -- every one the runs counted
        assert.are.equal(count, pstats.replies)
        local sent = 0
        for _, label in ipairs(LABELS) do sent = sent + runs[label].sent + runs[label].warmup_completed end
        assert.is_true(pstats.queries >= sent, pstats.queries .. " < " .. sent)
        local lost = runs.call.udp.lost + runs.pipelined.udp.lost
        local late = runs.call.udp.late + runs.pipelined.udp.late
        assert.is_true(late <= pstats.delayed, late .. " late > " .. pstats.delayed .. " held back")
        assert.is_true(lost >= late, lost .. " lost < " .. late .. " late")
    end)
end)

---------------------------------------------------------------------------
describe("dns.lua against a closed port", function()
    local rc, runs, err
    setup(function()
        rc, runs, err = run_dns({ "target=127.0.0.1:" .. free_port(), "warmup=0.05", "duration=0.5",
            "repetitions=1", "timeout=0.1", "clients=2" })
    end)

    it("loses every query, counts ECONNREFUSED and ends failed with its counts", function()
        assert.are.equal(1, rc, err)
        for _, label in ipairs(LABELS) do
            local r = runs[label]
            assert.is_truthy(r, label .. " did not run; stderr:\n" .. err)
            assert.are.equal("failed", r.status, brief(r))
            assert.are.equal(0, r.completed, brief(r))
            assert.is_true(r.sent > 0, brief(r))
            assert_identity(r)
            assert.are.equal(r.sent, r.timed_out + r.unfinished, brief(r))
            assert.are.equal(r.timed_out, r.udp.lost, brief(r))
            assert.is_true((r.errors.ECONNREFUSED or 0) > 0, brief(r))
        end
    end)
end)
