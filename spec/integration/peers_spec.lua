-- peers_spec.lua -- issue 3 acceptance 2: arkbench against real peers
-- installed from Debian (.ci/run): wrk with a Lua POST script against
-- `arkbench serve --protocol http`; a python3-websockets client against
-- `serve --protocol ws` and `wss`, and arkbench's ws client against a
-- python3-websockets echo server; `openssl s_client` against
-- `serve --protocol tls`; arkbench's http client against a Python
-- http.server echo. Peers listen on ephemeral loopback ports; every
-- background process runs under `timeout` and is stopped in teardown.
--
-- Needs: wrk, openssl, /usr/bin/python3 with python3-websockets
-- ($ARKBENCH_PYTHON overrides the interpreter).
-- Runtime: ~15 s.
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

local PEERS = ROOT .. "/spec/fixtures/peers"

---------------------------------------------------------------------------
describe("wrk (Lua POST /echo script) against arkbench serve --protocol http", function()
    local rc, out, err, serve_json

    setup(function()
        local srv = spawn({ BIN, "serve", "--protocol", "http", "--listen", "127.0.0.1:0" }, { name = "serve http" })
        local port = wait_listening(srv)
        rc, out, err = run_cmd({ "wrk", "-t1", "-c16", "-d1s", "--timeout", "5s",
            "-s", PEERS .. "/wrk_post_echo.lua", "http://127.0.0.1:" .. port .. "/echo" }, { limit = 30 })
        serve_json = last_json(stop(srv), "serve's output")
    end)

    it("wrk runs to the end with a positive Requests/sec", function()
        assert.are.equal(0, rc, "wrk exit code; stdout:\n" .. out .. "\nstderr:\n" .. err)
        local rps = tonumber(out:match("Requests/sec:%s*([%d%.]+)"))
        assert.is_truthy(rps, "no Requests/sec line in wrk's output:\n" .. out)
        assert.is_true(rps > 0, "Requests/sec = " .. tostring(rps))
        local n = tonumber(out:match("(%d+) requests in"))
        assert.is_true(n ~= nil and n > 0, "requests in wrk's summary:\n" .. out)
    end)

    it("wrk reports no socket errors, no non-2xx answers and every body echoed", function()
        assert.is_nil(out:find("Socket errors", 1, true), "wrk saw socket errors:\n" .. out)
        assert.is_nil(out:find("Non-2xx", 1, true), "wrk saw non-2xx answers:\n" .. out)
        assert.are.equal("0", out:match("echo mismatches: (%d+)"),
            "the script's echo check (a body differing from the request):\n" .. out)
    end)

    it("serve's JSON counts the messages and no errors", function()
        assert.is_true(serve_json.messages > 0, "messages = " .. tostring(serve_json.messages))
        assert.is_true(serve_json.connections >= 16, "connections = " .. tostring(serve_json.connections))
        -- every request carried a 1024-byte body
        assert.are.equal(serve_json.messages * 1024, serve_json.bytes, "bytes = messages x 1024")
        assert.are.same({}, serve_json.errors, "serve counted errors: " .. cjson.encode(serve_json.errors)
            .. " (error: " .. tostring(serve_json.error) .. ")")
        assert.is_true(serve_json.ok, "serve's ok; error: " .. tostring(serve_json.error))
    end)
end)

---------------------------------------------------------------------------
local WS_SIZES = { 0, 1, 125, 126, 127, 65535, 65536, 1048576 }

for _, proto in ipairs({ "ws", "wss" }) do
    describe("python3-websockets client against arkbench serve --protocol " .. proto, function()
        local client, rc, cerr, serve_json

        setup(function()
            local d = tmpdir()
            local cert = d .. "/cert.pem"
            local srv = spawn({ BIN, "serve", "--protocol", proto, "--listen", "127.0.0.1:0", "--cert-out", cert },
                { name = "serve " .. proto })
            local port = wait_listening(srv)
            local argv = { PY, PEERS .. "/ws_client.py", proto .. "://127.0.0.1:" .. port .. "/echo" }
            if proto == "wss" then
                argv[#argv + 1] = "--cafile"
                argv[#argv + 1] = cert
            end
            for _, n in ipairs(WS_SIZES) do argv[#argv + 1] = tostring(n) end
            local out
            rc, out, cerr = run_cmd(argv, { limit = 60 })
            client = last_json(out, "ws_client.py's output (stderr: " .. cerr .. ")")
            serve_json = last_json(stop(srv), "serve's output")
        end)

        it("echoes 0, 1, 125, 126, 127, 65535, 65536 and 1 MiB byte-exactly as binary messages", function()
            assert.are.equal(#WS_SIZES, #client.results, "results: " .. cjson.encode(client))
            for i, n in ipairs(WS_SIZES) do
                local r = client.results[i]
                assert.are.equal(n, r.size)
                assert.are.equal(n, r.got, "size " .. n .. ": got " .. tostring(r.got) .. " bytes; error: "
                    .. tostring(r.error))
                assert.is_true(r.binary, "size " .. n .. ": the reply is not a binary message")
                assert.is_true(r.ok, "size " .. n .. ": the reply differs: " .. tostring(r.error))
            end
            assert.is_true(client.ok)
            assert.are.equal(0, rc, "ws_client.py exit code; stderr:\n" .. cerr)
        end)

        it("serve counts one connection, 8 messages, their bytes and no errors", function()
            local total = 0
            for _, n in ipairs(WS_SIZES) do total = total + n end
            assert.are.equal(1, serve_json.connections)
            assert.are.equal(#WS_SIZES, serve_json.messages)
            assert.are.equal(total, serve_json.bytes)
            assert.are.same({}, serve_json.errors, "serve counted errors; error: " .. tostring(serve_json.error))
            assert.is_true(serve_json.ok)
        end)

        if proto == "wss" then
            it("serve's JSON records the negotiated TLS (docs/protocols.md: 'for TLS, what was negotiated')", function()
                assert.are.equal("table", type(serve_json.tls), "serve's JSON has no tls object: "
                    .. cjson.encode(serve_json))
                assert.are.equal("TLSv1.3", serve_json.tls.version, "tls: " .. cjson.encode(serve_json.tls))
                assert.is_truthy(tostring(serve_json.tls.cipher):match("^TLS_"), "tls: " .. cjson.encode(serve_json.tls))
            end)
        end
    end)
end

---------------------------------------------------------------------------
describe("arkbench's ws client (target=) against a python3-websockets echo server", function()
    local PAYLOADS = { 16, 125, 126, 65535, 65536, 1048576 }
    local res, peer

    setup(function()
        local srv = spawn({ PY, PEERS .. "/ws_echo_server.py" }, { name = "ws_echo_server.py" })
        local port = wait_listening(srv)
        local list = {}
        for _, n in ipairs(PAYLOADS) do list[#list + 1] = tostring(n) end
        res = run_scenario(string.format([[
return { name = "ws_peer", protocol = "ws", target = "127.0.0.1:%d",
         payload = { %s }, clients = 1, window = 1,
         warmup = 0, duration = 0.2, repetitions = 1 }
]], port, table.concat(list, ", ")), { name = "ws_peer" })
        sleep(0.2)
        peer = last_json(stop(srv), "ws_echo_server.py's output")
    end)

    it("runs ok for payloads 16, 125, 126, 65535, 65536 and 1 MiB", function()
        assert.are.equal(#PAYLOADS, #res.runs, "runs; stderr:\n" .. res.stderr)
        for i, n in ipairs(PAYLOADS) do
            local r = res.runs[i]
            assert.are.equal(n, r.case.payload)
            assert.is_true(r.ok, brief(r))
            assert.are.same({}, r.errors, brief(r))
            assert.are.equal(0, r.message_errors, brief(r))
            assert.are.equal(0, r.timed_out, brief(r))
            assert.is_true(r.completed > 0, brief(r))
            assert_identity(r)
        end
        assert.are.equal(0, res.rc, "exit code; stderr:\n" .. res.stderr)
    end)

    it("the peer echoed every message the client sent, binary, at the right size", function()
        assert.are.equal(0, peer.text, "text messages reached the peer")
        assert.are.equal(#PAYLOADS, peer.connections)
        for i, n in ipairs(PAYLOADS) do
            local r = res.runs[i]
            assert.are.equal(r.sent, peer.sizes[tostring(n)] or 0,
                "payload " .. n .. ": messages the peer echoed vs the run's sent; peer: " .. cjson.encode(peer))
        end
    end)
end)

---------------------------------------------------------------------------
describe("openssl s_client against arkbench serve --protocol tls", function()
    local d, cert, port, srv, serve_json
    local rc, out, err
    local bad_rc, bad_out, bad_err
    -- one length-prefixed message: 1-byte prefix (32 < 254) + 32 bytes
    local PAYLOAD = "hello arkbench, from s_client!!!"

    setup(function()
        d = tmpdir()
        cert = d .. "/cert.pem"
        srv = spawn({ BIN, "serve", "--protocol", "tls", "--listen", "127.0.0.1:0", "--cert-out", cert },
            { name = "serve tls" })
        port = wait_listening(srv)
        write_file(d .. "/msg.bin", string.char(#PAYLOAD) .. PAYLOAD)
        -- keep stdin open a moment so s_client reads the echo before it quits
        rc, out, err = run_cmd({ "sh", "-c", "{ cat " .. shq(d .. "/msg.bin") .. "; sleep 1; } | openssl s_client"
            .. " -connect 127.0.0.1:" .. port .. " -CAfile " .. shq(cert)
            .. " -verify_return_error -verify_ip 127.0.0.1 -brief" }, { limit = 20 })
        serve_json = last_json(stop(srv), "serve's output")
        -- control, against a second server: its certificate must NOT
        -- verify for another address
        local cert2 = d .. "/cert2.pem"
        local srv2 = spawn({ BIN, "serve", "--protocol", "tls", "--listen", "127.0.0.1:0", "--cert-out", cert2 },
            { name = "serve tls (control)" })
        local port2 = wait_listening(srv2)
        bad_rc, bad_out, bad_err = run_cmd({ "sh", "-c", "openssl s_client -connect 127.0.0.1:" .. port2
            .. " -CAfile " .. shq(cert2) .. " -verify_return_error -verify_ip 127.0.0.2 -brief </dev/null" },
            { limit = 20 })
        stop(srv2)
    end)

    it("completes a TLS 1.3 handshake and verifies the certificate for 127.0.0.1", function()
        local text = out .. "\n" .. err
        assert.are.equal(0, rc, "s_client exit code:\n" .. text)
        assert.is_truthy(text:find("Protocol version: TLSv1.3", 1, true), "s_client output:\n" .. text)
        assert.is_truthy(text:find("Verification: OK", 1, true), "s_client output:\n" .. text)
    end)

    it("serve's JSON records the negotiated TLS 1.3 and its cipher", function()
        assert.are.equal("table", type(serve_json.tls), "serve's JSON has no tls object: " .. cjson.encode(serve_json))
        assert.are.equal("TLSv1.3", serve_json.tls.version, "tls: " .. cjson.encode(serve_json.tls))
        local cipher = (out .. "\n" .. err):match("Ciphersuite: (%S+)")
        assert.are.equal(cipher, serve_json.tls.cipher, "tls: " .. cjson.encode(serve_json.tls))
    end)

    it("the certificate does not verify for 127.0.0.2 (the check is real)", function()
        local text = bad_out .. "\n" .. bad_err
        assert.are_not.equal(0, bad_rc, "s_client accepted the certificate for 127.0.0.2:\n" .. text)
        assert.is_truthy(text:lower():find("ip address mismatch", 1, true), "s_client output:\n" .. text)
    end)

    it("echoes a 1-byte-prefixed message byte for byte", function()
        assert.are.equal(string.char(#PAYLOAD) .. PAYLOAD, out, "what s_client printed (the echo)")
        assert.are.equal(1, serve_json.connections)
        assert.are.equal(1, serve_json.messages)
        assert.are.equal(#PAYLOAD, serve_json.bytes)
        assert.are.same({}, serve_json.errors, "serve errors; error: " .. tostring(serve_json.error))
    end)
end)

---------------------------------------------------------------------------
describe("arkbench's http client (target=) against a Python http.server echo peer", function()
    local res, peer

    setup(function()
        local srv = spawn({ PY, PEERS .. "/http_echo.py" }, { name = "http_echo.py" })
        local port = wait_listening(srv)
        res = run_scenario(string.format([[
return { name = "http_peer", protocol = "http", target = "127.0.0.1:%d", payload = 1024,
         load = { { clients = 1, window = 1 }, { clients = 4, window = 4 } },
         warmup = 0, duration = 0.3, repetitions = 1 }
]], port), { name = "http_peer" })
        sleep(0.2)
        peer = last_json(stop(srv), "http_echo.py's output")
    end)

    it("runs ok, 1x1 and 4x4 (pipelined)", function()
        assert.are.equal(2, #res.runs, "runs; stderr:\n" .. res.stderr)
        for _, r in ipairs(res.runs) do
            assert.is_true(r.ok, brief(r))
            assert.are.same({}, r.errors, brief(r))
            assert.are.equal(0, r.message_errors, brief(r))
            assert.are.equal(0, r.timed_out, brief(r))
            assert.is_true(r.completed > 0, brief(r))
            assert_identity(r)
        end
        assert.are.equal(0, res.rc, "exit code; stderr:\n" .. res.stderr)
    end)

    it("the peer answered every request the client sent, all POST /echo", function()
        local sent = 0
        for _, r in ipairs(res.runs) do sent = sent + r.sent end
        assert.are.equal(0, peer.bad, "requests the peer refused (not POST /echo or short body)")
        assert.are.equal(sent, peer.requests, "requests answered by the peer vs sent")
        assert.are.equal(sent * 1024, peer.bytes)
    end)
end)
