-- custom_spec.lua -- the shipped custom workloads (issue 4, acceptance 4 and
-- 5) against the real servers they were written for: scenarios/custom/
-- resp_ping.lua against a redis-server started here on a free port, and
-- scenarios/custom/http_get.lua against nginx (nginx-light) serving a
-- 1 KiB index.html from a generated config in a temp folder. Both run with
-- --set target=127.0.0.1:PORT --quick and every run must be ok.
--
-- The same Lua workloads also run over TLS (execution = "lua" with
-- protocol = "tls"; the Lua code is unchanged, the connection object does
-- the TLS): a Lua client against `arkbench serve --protocol tls`,
-- resp_ping.lua against `redis-server --tls-port`, and http_get.lua
-- against nginx with `listen ... ssl`, each verifying the server's
-- certificate through the scenario's tls.ca (an EC P-256 certificate made
-- here with the openssl CLI, or the one serve wrote with --cert-out).
--
-- Needs: redis-server (with redis-cli), nginx (.ci/run installs
-- redis-server and nginx-light). Servers run under `timeout`, in the
-- foreground of their own process, and are stopped in teardown.
-- Runtime: ~10 s.
local cjson_mod = require("cjson")

local ROOT = os.getenv("ARKBENCH_ROOT") or "."
local BIN = os.getenv("ARKBENCH_BIN") or (ROOT .. "/bin/arkbench")

local cjson = cjson_mod.new()
cjson.decode_invalid_numbers(false)

package.path = ROOT .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
-- shared helpers (spec/helpers/)
local shq = files.shq
local read_file = files.read_file
local write_file = files.write_file
local sh_ok = proc.sh_ok
local sh_out = proc.sh_out

local peers = require("helpers.peers")
local have, start_on_free_port, make_cert = peers.have, peers.start_on_free_port, peers.make_cert

local function tmpdir() return files.tmpdir("_custom") end

teardown(function()
    peers.stop_started()
    files.remove_tmpdirs()
end)

local function run(args)
    local d = tmpdir()
    local cmd = "cd " .. shq(ROOT) .. " && " .. shq(BIN) .. " run"
    for _, a in ipairs(args) do cmd = cmd .. " " .. shq(a) end
    cmd = cmd .. " --out " .. shq(d .. "/r") .. " >" .. shq(d .. "/stdout") .. " 2>"
        .. shq(d .. "/stderr") .. " </dev/null; echo $?"
    local rc = tonumber(sh_out(cmd):match("(%d+)"))
    local runs = {}
    for line in (read_file(d .. "/r/runs.jsonl") or ""):gmatch("[^\n]+") do
        runs[#runs + 1] = cjson.decode(line)
    end
    return rc, runs, (read_file(d .. "/stdout") or "") .. (read_file(d .. "/stderr") or "")
end

local function assert_all_ok(runs, n, out)
    assert.are.equal(n, #runs, out)
    for _, r in ipairs(runs) do
        assert.is_true(r.ok, tostring(r.case_id) .. ": " .. tostring(r.error))
        assert.are.equal("ok", r.status)
        assert.is_true(r.completed > 0)
        assert.are.equal(r.sent, r.completed + r.drained + r.timed_out + r.message_errors
            + r.unfinished)
        assert.is_true(r.rtt_us.count > 0 and r.rtt_us.min > 0)
    end
end

-- The connection object records every driver's TLS session the same way:
-- the run names the negotiated version and cipher, and each client's
-- handshake is timed once.
local function assert_tls_session(r, version)
    local tls = r.tls or {}
    assert.are.equal(version or "TLSv1.3", tls.version, "tls: " .. cjson.encode(tls))
    assert.is_truthy(tostring(tls.cipher):match("^TLS_"),
        "tls: " .. cjson.encode(tls))
    assert.is_table(r.handshake_us, "no handshake_us in " .. tostring(r.case_id))
    assert.are.equal(r.case.clients, r.handshake_us.count)
    assert.is_true(r.handshake_us.min > 0)
end

-- A scenario file in d that runs `scenario` (a shipped custom workload)
-- over TLS against 127.0.0.1:port, trusting the PEM file `ca`.
local function over_tls(d, scenario, port, ca)
    local file = d .. "/tls_" .. scenario:match("([^/]+)$")
    write_file(file, ([[
local parts = dofile(%q)
for _, p in ipairs(parts[1] and parts or { parts }) do
    p.protocol = "tls"
    p.tls = { ca = %q }
    p.target = "127.0.0.1:%d"
end
return parts
]]):format(ROOT .. "/" .. scenario, ca, port))
    return file
end

describe("custom workloads against real servers", function()
    it("runs resp_ping.lua (PING, SET/GET over RESP) against redis-server", function()
        assert.is_true(have("redis-server") and have("redis-cli"),
            "redis-server and redis-cli are needed (apt-get install redis-server)")
        local d = tmpdir()
        local port = start_on_free_port(function(p)
            return "redis-server --port " .. p .. " --bind 127.0.0.1 --save '' --appendonly no"
                .. " --daemonize no --dir " .. shq(d)
        end, d .. "/redis.log")
        local rc, runs, out = run({ "scenarios/custom/resp_ping.lua", "--set",
            "target=127.0.0.1:" .. port, "--quick" })
        assert.are.equal(0, rc, out)
        assert_all_ok(runs, 5, out)
        -- the SET/GET part wrote its per-connection keys: 64-byte values
        local v = sh_out("redis-cli -p " .. port .. " GET arkbench:0")
        assert.are.equal(string.rep("v", 64), (v:gsub("%s+$", "")))
        -- PING replies are 7 bytes each (+PONG\r\n)
        for _, r in ipairs(runs) do
            if r.case.payload == 16 then
                assert.is_true(math.abs(r.payload_mib_per_s * 1048576 * r.measured_s
                    - 7 * r.completed) < 1)
            end
        end
    end)

    it("runs http_get.lua (GET / with keep-alive) against nginx", function()
        assert.is_true(have("nginx"), "nginx is needed (apt-get install nginx-light)")
        local d = tmpdir()
        local port = peers.start_nginx(d, { html = { ["index.html"] = string.rep("a", 1023) .. "\n" } })
        local rc, runs, out = run({ "scenarios/custom/http_get.lua", "--set",
            "target=127.0.0.1:" .. port, "--quick" })
        assert.are.equal(0, rc, out .. (read_file(d .. "/error.log") or ""))
        assert_all_ok(runs, 2, out)
        -- each response is the headers plus the 1 KiB body
        for _, r in ipairs(runs) do
            local per = r.payload_mib_per_s * 1048576 * r.measured_s / r.completed
            assert.is_true(per > 1024 + 100 and per < 1024 + 400, "bytes per response " .. per)
        end
    end)
    it("runs a Lua client (full and light form) over tls against arkbench serve", function()
        local d = tmpdir()
        local cert = d .. "/serve.pem"
        local log = d .. "/serve.out"
        local pid = tonumber(sh_out("timeout 120 " .. shq(BIN) .. " serve --protocol tls"
            .. " --framing raw --payload 64 --listen 127.0.0.1:0 --cert-out " .. shq(cert)
            .. " >" .. shq(log) .. " 2>&1 & echo $!"))
        peers.track(pid)
        local port
        for _ = 1, 200 do
            port = (read_file(log) or ""):match("listening on [%d%.]+:(%d+)")
            if port and read_file(cert) then break end
            sh_ok("sleep 0.05")
        end
        assert.is_truthy(port, "serve did not start: " .. (read_file(log) or ""))
        write_file(d .. "/lua_tls.lua", ([[
local MSG = string.rep("m", 64)
local base = { execution = "lua", protocol = "tls", target = "127.0.0.1:%s",
               tls = { ca = %q }, payload = 64 }
local function part(t) for k, v in pairs(base) do t[k] = v end return t end
return {
    part { load = { { clients = 4, window = 16 } }, message = MSG, expect = 64 },
    { execution = "coroutine", protocol = "tls", target = "127.0.0.1:%s",
      tls = { ca = %q }, payload = 64, framing = "raw", clients = 3 },
    part { clients = 2, client = function(conn)
        while true do
            local r = conn:call(MSG, 64)
            if not r then return end
            if r ~= MSG then error("unexpected reply") end
        end
    end },
}
]]):format(port, cert, port, cert))
        local rc, runs, out = run({ d .. "/lua_tls.lua", "--quick" })
        os.execute("kill -TERM " .. pid .. " 2>/dev/null")
        assert.are.equal(0, rc, out)
        assert_all_ok(runs, 3, out)
        local execs = {}
        for _, r in ipairs(runs) do
            execs[#execs + 1] = r.case.execution
            assert.are.equal("tls", r.case.protocol)
            assert_tls_session(r)
            assert.are.equal("table", type(r.errors))
            assert.is_nil(next(r.errors), "errors: " .. cjson.encode(r.errors))
            assert.is_true(math.abs(r.payload_mib_per_s * 1048576 * r.measured_s
                - 64 * r.completed) < 1)
        end
        table.sort(execs)
        assert.are.same({ "coroutine", "lua", "lua" }, execs)
        -- a client that does not trust the certificate fails its handshakes
        write_file(d .. "/other.pem", read_file(select(1, make_cert(d))))
        local bad = d .. "/lua_tls_bad.lua"
        write_file(bad, (read_file(d .. "/lua_tls.lua"):gsub("serve%.pem", "other.pem")))
        local rc2, runs2 = run({ bad, "--quick" })
        assert.are_not.equal(0, rc2)
        assert.is_true(#runs2 > 0)
        for _, r in ipairs(runs2) do assert.is_false(r.ok) end
    end)

    it("runs resp_ping.lua over tls against redis-server --tls-port", function()
        assert.is_true(have("redis-server") and have("openssl"),
            "redis-server and openssl are needed")
        local d = tmpdir()
        local cert, key = make_cert(d)
        local port = start_on_free_port(function(p)
            return "redis-server --port 0 --tls-port " .. p .. " --tls-cert-file " .. shq(cert)
                .. " --tls-key-file " .. shq(key) .. " --tls-auth-clients no"
                .. " --bind 127.0.0.1 --save '' --appendonly no --daemonize no --dir " .. shq(d)
        end, d .. "/redis.log")
        local rc, runs, out = run({ over_tls(d, "scenarios/custom/resp_ping.lua", port, cert),
            "--quick" })
        assert.are.equal(0, rc, out .. (read_file(d .. "/redis.log") or ""))
        assert_all_ok(runs, 5, out)
        for _, r in ipairs(runs) do
            assert.are.equal("tls", r.case.protocol)
            assert_tls_session(r)
            assert.are.equal("table", type(r.errors))
            assert.is_nil(next(r.errors), "errors: " .. cjson.encode(r.errors))
            if r.case.payload == 16 then
                assert.is_true(math.abs(r.payload_mib_per_s * 1048576 * r.measured_s
                    - 7 * r.completed) < 1)
            end
        end
        -- the same from the command line alone, the file unchanged
        -- (docs/lua-api.md): --set protocol=tls --set tls.ca=FILE
        local rc2, runs2, out2 = run({ "scenarios/custom/resp_ping.lua", "--quick",
            "--filter", "payload=16", "--set", "protocol=tls", "--set", "tls.ca=" .. cert,
            "--set", "target=127.0.0.1:" .. port })
        assert.are.equal(0, rc2, out2 .. (read_file(d .. "/redis.log") or ""))
        assert.is_true(#runs2 > 0, out2)
        assert_all_ok(runs2, #runs2, out2)
        for _, r in ipairs(runs2) do
            assert.are.equal("tls", r.case.protocol)
            assert_tls_session(r)
        end
    end)

    it("runs http_get.lua over tls (https) against nginx", function()
        assert.is_true(have("nginx") and have("openssl"), "nginx and openssl are needed")
        local d = tmpdir()
        local port = peers.start_nginx(d, { tls = true,
            html = { ["index.html"] = string.rep("a", 1023) .. "\n" } })
        local cert = d .. "/cert.pem"
        local rc, runs, out = run({ over_tls(d, "scenarios/custom/http_get.lua", port, cert),
            "--quick" })
        assert.are.equal(0, rc, out .. (read_file(d .. "/error.log") or ""))
        assert_all_ok(runs, 2, out)
        for _, r in ipairs(runs) do
            assert.are.equal("tls", r.case.protocol)
            assert_tls_session(r)
            assert.are.equal("table", type(r.errors))
            assert.is_nil(next(r.errors), "errors: " .. cjson.encode(r.errors))
            local per = r.payload_mib_per_s * 1048576 * r.measured_s / r.completed
            assert.is_true(per > 1024 + 100 and per < 1024 + 400, "bytes per response " .. per)
        end
    end)
end)
