-- backpressure_protocols_spec.lua -- the backpressure rule (core/io/sockio.h:
-- a connection stops reading while its unsent output -- replies, pongs,
-- requests held for the pool:N pool -- is over 4 MiB, and resumes at
-- 1 MiB) on every stream protocol, execution mode and topology:
--   1. a client that sends valid requests and never reads its replies
--      (spec/fixtures/regress/never_read_client.py), for tcp, tls, ws, wss,
--      http, https x sharded:1 / pool:2 x callback (`arkbench serve`) /
--      coroutine (its built-in echo, serve_exec.lua; `execution = "lua"`
--      without a server function runs the same), and a WebSocket client
--      that floods pings and never reads the pongs: the server stays under
--      64 MiB (VmHWM, /proc/PID/status) and a second, well-behaved
--      connection of the same protocol is answered within 2 s;
--   2. the ws client of `arkbench run` (callback and coroutine) against a
--      server that floods pings and never reads
--      (spec/fixtures/misbehaving/ws_ping_flood.py): the client process
--      stays under 64 MiB.
-- The code before the rule grew serve to 0.4-3 GiB (pool:2 held
-- requests, coroutine tls) and the ws client by ~450 MiB a second.
--
-- Time bound: acceptance asks for 10 s of flooding; here each flood lasts
-- FLOOD_S = 3 s ($ARKBENCH_FLOOD_S overrides it: 10 gives the acceptance
-- form), and the cases run 4 at a time, each against its own server (the
-- 6 protocols + 2 ping floods of one execution x topology in 2 batches):
-- 8 batches of ~4 s, then the two clients at once for ~FLOOD_S + 2 s.
-- Once a server has pushed back, its flooder is blocked in send and costs
-- nothing, so a batch shares the machine's cores only in its first
-- second; the work per message in pool:2 is small (--work 10000: the
-- old code still grew past the bound with it) so that the held requests a
-- probe waits behind take well under a second even then.  A process past 512 MiB is killed at once (the spec
-- then fails), so running this against code without the rule cannot
-- exhaust a shared machine.
--
-- $ARKBENCH_BP_VERBOSE=1 prints each case's VmHWM and probe time to
-- stderr (for the by-hand acceptance run).
--
-- Needs: /usr/bin/python3 ($ARKBENCH_PYTHON overrides it).
-- Runtime: ~40 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")
local peers = require("helpers.peers")

local ROOT, PY, cjson = ark.ROOT, peers.PY, ark.cjson

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

local MiB = 1024 * 1024
local LIMIT = 64 * MiB
local KILL_AT = 512 * MiB
local FLOOD_S = tonumber(os.getenv("ARKBENCH_FLOOD_S") or "3")
local REGRESS = ROOT .. "/spec/fixtures/regress"
local MISBEHAVING = ROOT .. "/spec/fixtures/misbehaving"
-- The cases of one execution x topology, in two batches run one after the
-- other (each case of a batch has its own server, all at once).
local BATCHES = {
    { { protocol = "tcp" }, { protocol = "tls" }, { protocol = "ws" }, { protocol = "ws", pings = true } },
    { { protocol = "wss" }, { protocol = "http" }, { protocol = "https" }, { protocol = "wss", pings = true } },
}

-- ---- process memory, from /proc -----------------------------------------

-- A /proc/PID/status field in bytes (VmRSS, VmHWM), nil when pid is gone.
local function status_bytes(pid, key)
    local st = files.read_file("/proc/" .. pid .. "/status")
    local kib = st and st:match(key .. ":%s*(%d+) kB")
    return kib and tonumber(kib) * 1024 or nil
end

-- pid and its descendants (proc.spawn's pid is the `timeout` wrapping the
-- command; the command, and a run's worker, are below it).
local function tree(pid, out)
    out = out or {}
    out[#out + 1] = pid
    local kids = files.read_file("/proc/" .. pid .. "/task/" .. pid .. "/children") or ""
    for kid in kids:gmatch("%d+") do tree(tonumber(kid), out) end
    return out
end

-- Samples w's process tree: the largest VmRSS and VmHWM seen (w.rss,
-- w.hwm); a process past KILL_AT is killed (w.killed).
local function sample(w)
    for _, pid in ipairs(tree(w.p.pid)) do
        local rss, hwm = status_bytes(pid, "VmRSS"), status_bytes(pid, "VmHWM")
        if rss and rss > w.rss then w.rss = rss end
        if hwm and hwm > w.hwm then w.hwm = hwm end
        if rss and rss > KILL_AT and pid ~= w.p.pid then
            w.killed = true
            os.execute("kill -KILL " .. pid .. " 2>/dev/null")
        end
    end
end

-- Samples every watched tree every 0.1 s while any of `until_gone` runs
-- (at most `limit` s).
local function watch_while(watched, until_gone, limit)
    local t_end = proc.now() + limit
    repeat
        for _, w in ipairs(watched) do sample(w) end
        local running = false
        for _, p in ipairs(until_gone) do running = running or proc.alive(p.pid) end
        if not running then break end
        proc.sleep(0.1)
    until proc.now() > t_end
    for _, w in ipairs(watched) do sample(w) end
end

local function mib(b) return string.format("%.1f MiB", b / MiB) end

local function note(fmt, ...)
    if os.getenv("ARKBENCH_BP_VERBOSE") then io.stderr:write(string.format(fmt, ...), "\n") end
end

-- The last JSON line of a process that may have died without one (its
-- peer killed past KILL_AT): the decoded object, or { missing = why }.
local function json_of(p, text)
    local ok, v = pcall(peers.last_json, text, p.name)
    if ok then return v end
    return { missing = p.name .. " printed no JSON; stderr: " .. proc.stderr_of(p):sub(1, 300), sent_bytes = 0 }
end

-- ---- 1. servers against clients that never read -------------------------

-- The server of one case: `arkbench serve` (callback) or serve_exec.lua.
local function start_server(exec, protocol, topo, work)
    if exec == "callback" then
        return peers.serve(protocol, { "--topology", topo, "--work", work })
    end
    return proc.spawn({ ark.BIN, "dev-lua", REGRESS .. "/serve_exec.lua", exec, protocol, topo, work },
        { name = exec .. " server " .. protocol })
end

-- Runs one batch: every case's server, then all the flooders at once;
-- returns the cases with .rss/.hwm/.killed, .flood (the client's JSON) and
-- .served (the server's JSON after it was stopped).
local function run_batch(exec, topo, work, batch)
    local cases = {}
    for i, c in ipairs(batch) do cases[i] = { protocol = c.protocol, pings = c.pings } end
    for _, c in ipairs(cases) do
        c.name = c.protocol .. (c.pings and " (ping flood)" or "")
        c.p = start_server(exec, c.protocol, topo, work)
        c.rss, c.hwm = 0, 0
    end
    local flooders = {}
    for _, c in ipairs(cases) do
        local port = peers.wait_listening(c.p)
        local argv = { PY, REGRESS .. "/never_read_client.py", c.protocol, "127.0.0.1", tostring(port),
                       tostring(FLOOD_S) }
        if c.pings then argv[#argv + 1] = "--pings" end
        c.client = proc.spawn(argv, { name = "never_read_client.py " .. c.name, limit = FLOOD_S + 30 })
        flooders[#flooders + 1] = c.client
    end
    watch_while(cases, flooders, FLOOD_S + 30)
    for _, c in ipairs(cases) do
        c.flood = json_of(c.client, proc.stdout_of(c.client))
        c.served = json_of(c.p, proc.stop(c.p))
        note("%s %s %-18s VmHWM %s  probe %s s  sent %s%s", exec, topo, c.name, mib(c.hwm),
            tostring(c.flood.probe_s), mib(c.flood.sent_bytes or 0), c.killed and "  KILLED" or "")
    end
    return cases
end

for _, exec in ipairs({ "callback", "coroutine" }) do
    for _, t in ipairs({ { "sharded:1", "0" }, { "pool:2", "10000" } }) do
        local topo, work = t[1], t[2]
        describe("1. clients that never read, " .. exec .. " servers, " .. topo, function()
            local cases

            setup(function()
                cases = {}
                for _, batch in ipairs(BATCHES) do
                    for _, c in ipairs(run_batch(exec, topo, work, batch)) do cases[#cases + 1] = c end
                end
            end)

            it("each flooder pushed its server: it sent more than the bound", function()
                for _, c in ipairs(cases) do
                    assert.is_true(c.flood.sent_bytes > 4 * MiB, c.name .. ": " .. cjson.encode(c.flood))
                end
            end)

            it("every server stays under 64 MiB (VmHWM)", function()
                for _, c in ipairs(cases) do
                    assert.is_false(c.killed or false, c.name .. ": killed past " .. mib(KILL_AT))
                    assert.is_true(c.hwm > 0, c.name .. ": no VmHWM read")
                    assert.is_true(c.hwm < LIMIT, c.name .. ": VmHWM " .. mib(c.hwm) .. ", VmRSS up to "
                        .. mib(c.rss) .. " after the flooder sent " .. mib(c.flood.sent_bytes))
                end
            end)

            it("a second, well-behaved connection is answered within 2 s", function()
                for _, c in ipairs(cases) do
                    assert.is_true(c.flood.probe_ok, c.name .. ": " .. cjson.encode(c.flood))
                    assert.is_true(c.flood.probe_s < 2, c.name .. ": " .. cjson.encode(c.flood))
                end
            end)

            it("the server reports no error of its own", function()
                for _, c in ipairs(cases) do
                    assert.is_true(c.served.ok, c.name .. ": " .. cjson.encode(c.served))
                    assert.are.same({}, c.served.errors, c.name .. ": " .. cjson.encode(c.served))
                end
            end)
        end)
    end
end

-- ---- 2. the ws client against a server that floods pings ----------------

describe("2. the ws client of arkbench run against a server that floods pings and never reads", function()
    local runs = {}

    setup(function()
        local watched, gone = {}, {}
        for _, exec in ipairs({ "callback", "coroutine" }) do
            local srv = peers.python(MISBEHAVING .. "/ws_ping_flood.py")
            local port = peers.wait_listening(srv)
            local d = files.tmpdir()
            local path = d .. "/ping_flood_" .. exec .. ".lua"
            -- timeout = duration: the one request the server never
            -- answers ends the connection only when the flood has lasted
            files.write_file(path, string.format([[
return { name = "ping_flood", protocol = "ws", target = "127.0.0.1:%d", payload = 1024,
         clients = 1, window = 1, warmup = 0, duration = %g, timeout = %g,
         execution = %q, repetitions = 1 }
]], port, FLOOD_S, FLOOD_S, exec))
            local w = { exec = exec, srv = srv, out = d .. "/out", rss = 0, hwm = 0,
                        p = proc.spawn({ ark.BIN, "run", path, "--out", d .. "/out" },
                            { name = "arkbench run (" .. exec .. ")", limit = FLOOD_S + 60 }) }
            watched[#watched + 1] = w
            gone[#gone + 1] = w.p
        end
        watch_while(watched, gone, FLOOD_S + 60)
        for _, w in ipairs(watched) do
            w.peer = json_of(w.srv, proc.stop(w.srv))
            w.runs = ark.read_runs(w.out .. "/runs.jsonl")
            runs[w.exec] = w
            note("ws client %s: VmHWM %s after %s of pings%s", w.exec, mib(w.hwm),
                mib(w.peer.pings_bytes or 0), w.killed and "  KILLED" or "")
        end
    end)

    for _, exec in ipairs({ "callback", "coroutine" }) do
        it("stays under 64 MiB, execution = " .. exec, function()
            local w = runs[exec]
            assert.is_true((w.peer.pings_bytes or 0) > 4 * MiB,
                "the client read too few pings to be pushed: " .. cjson.encode(w.peer))
            assert.is_false(w.killed or false, "killed past " .. mib(KILL_AT))
            assert.is_true(w.hwm > 0, "no VmHWM read")
            assert.is_true(w.hwm < LIMIT, "VmHWM " .. mib(w.hwm) .. ", VmRSS up to " .. mib(w.rss)
                .. " after " .. mib(w.peer.pings_bytes) .. " of pings")
            assert.are.equal(1, #w.runs, "the run wrote no run object")
            assert.is_true(w.runs[1].rss_peak_bytes < LIMIT, ark.brief(w.runs[1]))
        end)
    end
end)
