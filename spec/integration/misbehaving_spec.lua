-- misbehaving_spec.lua -- issue 3 acceptance 3: arkbench against peers that
-- bend or break the protocols (fixtures in spec/fixtures/misbehaving/*.py,
-- small raw-socket Python servers and one client, one behaviour each):
-- a truncated Content-Length body then FIN; a chunked echo trickled one
-- byte per TCP write with a chunk extension and a trailer; 103 Early Hints
-- before the 200; WebSocket replies in 3 fragments with a ping between the
-- first two; an unmasked client frame sent to `serve --protocol ws`; a
-- server that masks its frames. Every fixture reports its own counters as
-- JSON when stopped, so the client's counts are checked against the peer's.
--
-- Needs: /usr/bin/python3 ($ARKBENCH_PYTHON overrides it).
-- Runtime: ~10 s.
local cjson_mod = require("cjson")

local ROOT = os.getenv("ARKBENCH_ROOT") or "."
local BIN = os.getenv("ARKBENCH_BIN") or (ROOT .. "/bin/arkbench")
-- Debian's interpreter, where python3-websockets lives (a python3 earlier
-- on PATH, e.g. a pyenv shim, would not have it).
local PY = os.getenv("ARKBENCH_PYTHON") or "/usr/bin/python3"

local cjson = cjson_mod.new()
cjson.decode_invalid_numbers(false)

local function shq(s)
    return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

local function read_file(path)
    local f = io.open(path, "rb")
    if not f then return nil end
    local s = f:read("*a")
    f:close()
    return s
end

local function write_file(path, text)
    local f = assert(io.open(path, "wb"))
    f:write(text)
    f:close()
end

local function sh_ok(cmd)
    local r = os.execute(cmd)
    return r == true or r == 0
end

local function sh_out(cmd)
    local p = io.popen(cmd)
    local s = p:read("*a")
    p:close()
    return s
end

local okcore, core = pcall(require, "arkbench.core")
local function now()
    if okcore and core.now_ns then return core.now_ns() / 1e9 end
    return tonumber(sh_out("date +%s.%N"))
end

local function sleep(s)
    os.execute("sleep " .. string.format("%.3f", s))
end

local dirs = {}
local function tmpdir()
    local p = os.tmpname()
    os.remove(p)
    p = p .. "_peers"
    assert(sh_ok("mkdir -p " .. shq(p)))
    dirs[#dirs + 1] = p
    return p
end

-- Background processes: each runs under `timeout` (a hard bound even if
-- this spec dies), stdout/stderr to files; proc.pid is timeout's pid,
-- which forwards SIGTERM/SIGINT to the program.
local procs = {}

local function alive(pid)
    if not sh_ok("kill -0 " .. pid .. " 2>/dev/null") then return false end
    local st = read_file("/proc/" .. pid .. "/stat")
    if st and st:match("^%d+ %b() Z") then return false end
    return true
end

local function spawn(argv, opts)
    opts = opts or {}
    local d = tmpdir()
    local cmd = {}
    for _, a in ipairs(argv) do cmd[#cmd + 1] = shq(a) end
    local line = "cd " .. shq(opts.cwd or ROOT) .. " && { PYTHONDONTWRITEBYTECODE=1 timeout -k 3 " .. (opts.limit or 120) .. " "
        .. table.concat(cmd, " ") .. " >" .. shq(d .. "/stdout") .. " 2>" .. shq(d .. "/stderr")
        .. " </dev/null & echo $!; }"
    local pid = tonumber(sh_out(line):match("(%d+)"))
    assert(pid, "could not start " .. table.concat(argv, " "))
    local p = { pid = pid, dir = d, argv = argv, name = opts.name or argv[1] }
    procs[#procs + 1] = p
    return p
end

local function stdout_of(p) return read_file(p.dir .. "/stdout") or "" end
local function stderr_of(p) return read_file(p.dir .. "/stderr") or "" end

-- Waits for `listening on HOST:PORT`; returns the port.
local function wait_listening(p, limit)
    local t_end = now() + (limit or 15)
    while now() < t_end do
        local port = stdout_of(p):match("listening on [%d%.]+:(%d+)")
        if port then return tonumber(port) end
        if not alive(p.pid) then break end
        sleep(0.05)
    end
    error(p.name .. " did not print 'listening on HOST:PORT'; stdout:\n" .. stdout_of(p)
        .. "\nstderr:\n" .. stderr_of(p))
end

-- Stops p (SIGTERM, then SIGKILL after `grace` s); returns its stdout.
local function stop(p, grace)
    if not p.stopped then
        p.stopped = true
        if alive(p.pid) then
            os.execute("kill -TERM " .. p.pid .. " 2>/dev/null")
            local t_end = now() + (grace or 5)
            while alive(p.pid) and now() < t_end do sleep(0.05) end
            if alive(p.pid) then
                p.killed = true
                os.execute("kill -KILL " .. p.pid .. " 2>/dev/null")
            end
        end
    end
    return stdout_of(p)
end

local function stop_all()
    for _, p in ipairs(procs) do pcall(stop, p, 2) end
end

teardown(function()
    stop_all()
    for _, d in ipairs(dirs) do os.execute("rm -rf " .. shq(d)) end
end)

-- The last line of `text` that is a JSON object, decoded.
local function last_json(text, what)
    local last
    for line in (text or ""):gmatch("[^\n]+") do
        if line:match("^%s*{") then last = line end
    end
    assert.is_truthy(last, (what or "output") .. " has no JSON line:\n" .. tostring(text))
    local ok, v = pcall(cjson.decode, last)
    assert.is_true(ok, (what or "output") .. " is not JSON: " .. tostring(v) .. "\n" .. last)
    return v
end

-- Runs a command in the shell with a hard time limit; returns exit code,
-- stdout, stderr, wall seconds.
local function run_cmd(argv, opts)
    opts = opts or {}
    local d = tmpdir()
    local cmd = {}
    for _, a in ipairs(argv) do cmd[#cmd + 1] = shq(a) end
    local line = "cd " .. shq(opts.cwd or ROOT) .. " && PYTHONDONTWRITEBYTECODE=1 timeout -k 3 " .. (opts.limit or 60) .. " "
        .. table.concat(cmd, " ") .. " >" .. shq(d .. "/stdout") .. " 2>" .. shq(d .. "/stderr")
        .. " " .. (opts.stdin and ("<" .. shq(opts.stdin)) or "</dev/null") .. "; echo $?"
    local t0 = now()
    local rc = tonumber(sh_out(line):match("(%d+)"))
    return rc, read_file(d .. "/stdout") or "", read_file(d .. "/stderr") or "", now() - t0
end

-- Writes a scenario and runs it; returns { rc, stdout, stderr, wall, runs }.
local function run_scenario(text, opts)
    opts = opts or {}
    local d = tmpdir()
    local path = d .. "/" .. (opts.name or "peer") .. ".lua"
    write_file(path, text)
    local out = d .. "/out"
    local rc, so, se, wall = run_cmd({ BIN, "run", path, "--out", out }, { limit = opts.limit or 90 })
    local runs = {}
    for line in (read_file(out .. "/runs.jsonl") or ""):gmatch("[^\n]+") do
        local ok, v = pcall(cjson.decode, line)
        assert.is_true(ok, "runs.jsonl line is not JSON: " .. line)
        runs[#runs + 1] = v
    end
    return { rc = rc, stdout = so, stderr = se, wall = wall, runs = runs }
end

local function assert_identity(r)
    local where = tostring(r.case_id)
    for _, k in ipairs({ "sent", "completed", "drained", "timed_out", "message_errors", "unfinished" }) do
        assert.are.equal("number", type(r[k]), where .. ": " .. k .. " is not a number")
    end
    assert.are.equal(r.sent, r.completed + r.drained + r.timed_out + r.message_errors + r.unfinished,
        where .. ": sent ~= completed + drained + timed_out + message_errors + unfinished")
end

local function count_keys(t)
    local n = 0
    for _ in pairs(t or {}) do n = n + 1 end
    return n
end

local function sum_values(t)
    local n = 0
    for _, v in pairs(t or {}) do n = n + v end
    return n
end

local function brief(r)
    return string.format("%s: ok=%s status=%s error=%s sent=%s completed=%s drained=%s timed_out=%s "
        .. "message_errors=%s unfinished=%s errors=%s elapsed_s=%s",
        tostring(r.case_id), tostring(r.ok), tostring(r.status), tostring(r.error), tostring(r.sent),
        tostring(r.completed), tostring(r.drained), tostring(r.timed_out), tostring(r.message_errors),
        tostring(r.unfinished), cjson.encode(r.errors or {}), tostring(r.elapsed_s))
end

local FIX = ROOT .. "/spec/fixtures/misbehaving"

-- Starts fixture NAME, runs the scenario built by make(port), stops the
-- fixture (after a moment, so it has read the client's last bytes) and
-- returns the run result and the fixture's counters.
local function against_fixture(name, make)
    local srv = spawn({ PY, FIX .. "/" .. name }, { name = name })
    local port = wait_listening(srv)
    local res = run_scenario(make(port), { name = name:gsub("%.py$", "") })
    sleep(0.3)
    local peer = last_json(stop(srv), name .. "'s output")
    return res, peer
end

---------------------------------------------------------------------------
describe("http: Content-Length 1000, 600 bytes, then FIN", function()
    local res, peer
    local DURATION = 1

    setup(function()
        -- timeout = 5: waiting for the reply timeout would show as > 6 s
        res, peer = against_fixture("http_short_body.py", function(port)
            return string.format([[
return { name = "short_body", protocol = "http", target = "127.0.0.1:%d", payload = 1000,
         clients = 2, window = 1, warmup = 0, duration = %s, timeout = 5, repetitions = 1 }
]], port, DURATION)
        end)
    end)

    it("is a counted premature-EOF error, not a success", function()
        assert.are.equal(1, #res.runs, "runs; stderr:\n" .. res.stderr)
        local r = res.runs[1]
        assert.is_false(r.ok, brief(r))
        assert.are.equal("error", r.status, brief(r))
        assert.are.equal(0, r.completed, brief(r))
        assert.are.equal(0, r.drained, brief(r))
        assert.is_true(r.message_errors >= 1, brief(r))
        local n = (r.errors.EPROTO or 0) + (r.errors.ECLOSED or 0)
        assert.is_true(n >= 1, "errors has no EPROTO/ECLOSED: " .. brief(r))
        assert.is_truthy(tostring(r.error):lower():match("eof") or tostring(r.error):lower():match("premature"),
            "error: " .. tostring(r.error))
        assert_identity(r)
        assert.are.equal(1, res.rc, "exit code (a run failed)")
        assert.is_true(peer.short_answers >= 1, "the fixture sent no truncated answer: " .. cjson.encode(peer))
    end)

    it("ends within 1 s of the run's end, not a hang", function()
        local r = res.runs[1]
        assert.is_true(r.elapsed_s < DURATION + 1, "worker elapsed_s = " .. tostring(r.elapsed_s))
        assert.is_true(res.wall < DURATION + 3, "whole `arkbench run` took " .. res.wall .. " s")
    end)
end)

---------------------------------------------------------------------------
describe("http: chunked echo, one byte per TCP write, chunk extension and trailer", function()
    local res, peer

    setup(function()
        res, peer = against_fixture("http_chunked_trickle.py", function(port)
            return string.format([[
return { name = "chunked", protocol = "http", target = "127.0.0.1:%d", payload = 64,
         clients = 2, window = 2, warmup = 0, duration = 1, repetitions = 1 }
]], port)
        end)
    end)

    it("runs ok", function()
        assert.are.equal(1, #res.runs, "runs; stderr:\n" .. res.stderr)
        local r = res.runs[1]
        assert.is_true(r.ok, brief(r))
        assert.are.same({}, r.errors, brief(r))
        assert.are.equal(0, r.message_errors, brief(r))
        assert.are.equal(0, r.timed_out, brief(r))
        assert.are.equal(0, r.unfinished, brief(r))
        assert_identity(r)
    end)

    it("counts exactly one completion per response", function()
        local r = res.runs[1]
        assert.is_true(peer.answered >= 4, "responses the fixture finished: " .. cjson.encode(peer))
        assert.are.equal(peer.answered, r.completed + r.drained,
            "completed + drained vs responses answered; " .. brief(r) .. "; fixture " .. cjson.encode(peer))
        assert.are.equal(peer.requests, r.sent, "requests the fixture read vs sent")
        assert.are.equal(r.completed + r.drained, r.rtt_us.count, "RTT samples")
    end)
end)

---------------------------------------------------------------------------
describe("http: 103 Early Hints before the 200", function()
    local res, peer

    setup(function()
        res, peer = against_fixture("http_early_hints.py", function(port)
            return string.format([[
return { name = "early_hints", protocol = "http", target = "127.0.0.1:%d", payload = 1024,
         clients = 2, window = 2, warmup = 0, duration = 0.5, repetitions = 1 }
]], port)
        end)
    end)

    it("runs ok with one completion per request", function()
        assert.are.equal(1, #res.runs, "runs; stderr:\n" .. res.stderr)
        local r = res.runs[1]
        assert.is_true(r.ok, brief(r))
        assert.are.same({}, r.errors, brief(r))
        assert.are.equal(0, r.message_errors, brief(r))
        assert_identity(r)
        assert.is_true(peer.answered >= 2, cjson.encode(peer))
        assert.are.equal(peer.answered, peer.hints)
        assert.are.equal(peer.answered, r.completed + r.drained,
            "completed + drained vs 200s answered; " .. brief(r) .. "; fixture " .. cjson.encode(peer))
        assert.are.equal(r.sent, peer.requests)
    end)
end)

---------------------------------------------------------------------------
describe("ws: each reply in 3 fragments with a ping between the first two", function()
    local res, peer

    setup(function()
        res, peer = against_fixture("ws_fragments_ping.py", function(port)
            return string.format([[
return { name = "ws_fragments", protocol = "ws", target = "127.0.0.1:%d", payload = 1024,
         clients = 2, window = 2, warmup = 0, duration = 0.5, repetitions = 1 }
]], port)
        end)
    end)

    it("runs ok with one completion per message", function()
        assert.are.equal(1, #res.runs, "runs; stderr:\n" .. res.stderr)
        local r = res.runs[1]
        assert.is_true(r.ok, brief(r))
        assert.are.same({}, r.errors, brief(r))
        assert.are.equal(0, r.message_errors, brief(r))
        assert_identity(r)
        assert.is_true(peer.messages >= 2, cjson.encode(peer))
        assert.are.equal(peer.messages, r.completed + r.drained,
            "completed + drained vs messages echoed; " .. brief(r) .. "; fixture " .. cjson.encode(peer))
        assert.are.equal(r.sent, peer.messages)
    end)

    it("answers every ping with exactly one matching pong", function()
        assert.are.equal(peer.messages, peer.pings, cjson.encode(peer))
        assert.are.equal(peer.pings, peer.pongs, "pongs vs pings: " .. cjson.encode(peer))
        assert.are.equal(0, peer.bad_pongs or 0, "pongs matching no ping: " .. cjson.encode(peer))
    end)
end)

---------------------------------------------------------------------------
describe("ws: an unmasked client frame sent to arkbench serve --protocol ws", function()
    local client, crc, cerr, serve_json

    setup(function()
        local srv = spawn({ BIN, "serve", "--protocol", "ws", "--listen", "127.0.0.1:0" }, { name = "serve ws" })
        local port = wait_listening(srv)
        local out
        crc, out, cerr = run_cmd({ PY, FIX .. "/ws_unmasked_client.py", "127.0.0.1", tostring(port) }, { limit = 20 })
        client = last_json(out, "ws_unmasked_client.py's output (stderr: " .. cerr .. ")")
        serve_json = last_json(stop(srv), "serve's output")
    end)

    it("is answered with a close frame, code 1002, and the connection is closed", function()
        assert.are.equal(0, crc, "client exit code; stderr:\n" .. cerr)
        assert.is_true(client.upgraded, "the upgrade failed: " .. cjson.encode(client))
        assert.are.equal(1, #client.frames, "frames from the server: " .. cjson.encode(client))
        assert.are.equal(8, client.frames[1].opcode, "not a close frame: " .. cjson.encode(client))
        assert.is_false(client.frames[1].masked, "the server masked its frame")
        assert.are.equal(1002, client.close_code, cjson.encode(client))
        assert.is_true(client.eof, "the server did not close the connection: " .. cjson.encode(client))
    end)

    it("serve's JSON counts one protocol error and echoes nothing", function()
        assert.are.equal(1, serve_json.connections)
        assert.are.equal(0, serve_json.messages)
        assert.are.equal(1, serve_json.errors.EPROTO, "errors: " .. cjson.encode(serve_json.errors))
        assert.are.equal(1, sum_values(serve_json.errors), "errors: " .. cjson.encode(serve_json.errors))
    end)
end)

---------------------------------------------------------------------------
describe("ws: a server that masks its frames", function()
    local res, peer

    setup(function()
        res, peer = against_fixture("ws_masked_server.py", function(port)
            return string.format([[
return { name = "ws_masked", protocol = "ws", target = "127.0.0.1:%d", payload = 256,
         clients = 2, window = 2, warmup = 0, duration = 0.5, repetitions = 1 }
]], port)
        end)
    end)

    it("fails each connection and counts one EPROTO per connection", function()
        assert.are.equal(1, #res.runs, "runs; stderr:\n" .. res.stderr)
        local r = res.runs[1]
        assert.is_false(r.ok, brief(r))
        assert.are.equal(0, r.completed + r.drained, brief(r))
        assert.is_true(r.message_errors >= 1, brief(r))
        assert.are.equal(2, r.errors.EPROTO, brief(r))
        assert.are.equal(2, sum_values(r.errors), brief(r))
        assert_identity(r)
        assert.are.equal(1, res.rc, "exit code")
        assert.is_true(peer.messages >= 2, "masked echoes sent: " .. cjson.encode(peer))
        assert.is_true(r.elapsed_s < 0.5 + 1, "elapsed_s " .. tostring(r.elapsed_s))
    end)

    it("closes each failed connection with a close frame, code 1002 (RFC 6455 §7.1.7)", function()
        assert.are.same({ 1002, 1002 }, peer.close_codes or {}, "close codes the fixture received: "
            .. cjson.encode(peer))
    end)
end)
