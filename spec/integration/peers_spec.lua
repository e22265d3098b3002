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
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")
local peers = require("helpers.peers")

local ROOT, PY, cjson, shq, write_file = ark.ROOT, peers.PY, ark.cjson, files.shq, files.write_file
local run_cmd, stop, wait_listening, last_json = proc.run_cmd, proc.stop, peers.wait_listening, peers.last_json
local assert_identity, brief = ark.assert_identity, ark.brief

local function tmpdir() return files.tmpdir("_peers") end

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

local PEERS = ROOT .. "/spec/fixtures/peers"

---------------------------------------------------------------------------
describe("wrk (Lua POST /echo script) against arkbench serve --protocol http", function()
    local rc, out, err, serve_json, port

    setup(function()
        local srv = peers.serve("http")
        port = wait_listening(srv)
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

    it("serve's JSON names the port it listened on, not the 0 it was asked for", function()
        assert.is_truthy(tonumber(port) and tonumber(port) > 0, "port " .. tostring(port))
        assert.are.equal("127.0.0.1:" .. port, serve_json.listen)
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
            local srv = peers.serve(proto, { "--cert-out", cert })
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
        local list = {}
        for _, n in ipairs(PAYLOADS) do list[#list + 1] = tostring(n) end
        res, peer = peers.scenario_against_python(PEERS .. "/ws_echo_server.py", function(port)
            return string.format([[
return { name = "ws_peer", protocol = "ws", target = "127.0.0.1:%d",
         payload = { %s }, clients = 1, window = 1,
         warmup = 0, duration = 1, repetitions = 1 }
]], port, table.concat(list, ", "))
        end, { name = "ws_peer", settle = 0.2 })
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
        srv = peers.serve("tls", { "--cert-out", cert })
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
        local srv2 = peers.serve("tls", { "--cert-out", cert2 }, "serve tls (control)")
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
        res, peer = peers.scenario_against_python(PEERS .. "/http_echo.py", function(port)
            return string.format([[
return { name = "http_peer", protocol = "http", target = "127.0.0.1:%d", payload = 1024,
         load = { { clients = 1, window = 1 }, { clients = 4, window = 4 } },
         warmup = 0, duration = 0.3, repetitions = 1 }
]], port)
        end, { name = "http_peer", settle = 0.2 })
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
