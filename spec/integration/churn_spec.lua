-- churn_spec.lua -- issue 15: connection churn and connection opening.
-- requests_per_connection = K closes a connection cleanly after K round
-- trips and opens a new one in its place (same id, same share of the
-- load), over every stream protocol in callback and coroutine execution:
-- counted in connections_retired / connections_opened / connections_per_s,
-- never in reconnects or errors; connect_us and handshake_us hold every
-- opened connection.  tls.resume = true resumes sessions (tls_resumed).
-- connect_rate spaces the first connects.  udp, execution = "lua" and
-- shared:N are refused before anything runs.
--
-- Runtime: ~25 s (12 short runs, then a few more).
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")

local brief, assert_identity = ark.brief, ark.assert_identity

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

local function churn_brief(r)
    return brief(r) .. string.format(" opened=%s retired=%s per_s=%s reconnects=%s"
        .. " tls=%s/%s connect_us.count=%s", tostring(r.connections_opened),
        tostring(r.connections_retired), tostring(r.connections_per_s), tostring(r.reconnects),
        tostring(r.tls_resumed), tostring(r.tls_handshakes),
        tostring(r.connect_us and r.connect_us.count))
end

-- Every case of a run with K = k: ok, the identity, and each round trip
-- on its own connection's share.
local function assert_churned(r, k, clients)
    local b = churn_brief(r)
    assert.are.equal("ok", r.status, b)
    assert_identity(r)
    assert.is_true(r.completed > 0, b)
    assert.are.equal(0, r.reconnects, b)
    assert.are.equal(0, r.reconnects_given_up, b)
    assert.are.same({}, r.errors, b)
    -- a connection opens per K round trips: the measure phase's opens
    -- follow its sends (each connection up in it sends at most K, and
    -- every one still open at the start sent at most K before)
    assert.is_true(r.connections_opened > 0, b)
    assert.is_true(r.sent <= (r.connections_opened + clients) * k, b)
    assert.is_true(r.sent >= (r.connections_opened - clients) * k, b)
    assert.is_true(math.abs(r.connections_per_s - r.connections_opened / r.measured_s) < 1e-6, b)
    -- every opened connection (first connects, replacements) was timed,
    -- but for replacements the end of the run cut short (at most one per
    -- client)
    local started = clients + r.connections_retired
    assert.is_true(r.connect_us.count <= started and r.connect_us.count >= started - clients, b)
    assert.is_true(r.connect_us.p50 > 0, b)
    -- the server accepted each one
    assert.is_true(r.server_connections <= started and r.server_connections >= started - clients, b)
end

describe("requests_per_connection = 1 over every stream protocol, both executions", function()
    local runs
    setup(function()
        local res = ark.run_scenario([[
return { name = "churn", protocol = { "tcp", "tls", "ws", "wss", "http", "https" },
         execution = { "callback", "coroutine" }, payload = 64, clients = 3, window = 1,
         requests_per_connection = 1, warmup = 0.1, duration = 0.4, timeout = 5, repetitions = 1 }
]], { name = "churn", limit = 180 })
        assert.are.equal(0, res.rc, res.stderr)
        runs = res.runs
    end)

    it("runs 12 cases, each a new connection per round trip", function()
        assert.are.equal(12, #runs)
        for _, r in ipairs(runs) do
            assert_churned(r, 1, 3)
            local tls = r.case.protocol == "tls" or r.case.protocol == "wss" or r.case.protocol == "https"
            if tls then
                assert.is_true(r.tls_handshakes <= r.connect_us.count
                               and r.tls_handshakes >= r.connect_us.count - 3, churn_brief(r))
                assert.are.equal(0, r.tls_resumed, churn_brief(r)) -- resume is off by default
            else
                assert.are.equal(0, r.tls_handshakes, churn_brief(r))
            end
            if r.case.protocol ~= "tcp" and r.case.protocol ~= "http" then
                -- handshakes (TLS, WebSocket upgrade) of every connection
                assert.is_true(r.handshake_us.count <= r.connect_us.count
                               and r.handshake_us.count >= r.connect_us.count - 3, churn_brief(r))
            end
        end
    end)
end)

describe("requests_per_connection = 5 with window 2 (the quota bounds the window)", function()
    it("sends at most 5 on each connection, then replaces it", function()
        local res = ark.run_scenario([[
return { name = "churn5", protocol = { "tcp", "http" }, execution = { "callback", "coroutine" },
         payload = 64, clients = 2, window = 2, requests_per_connection = 5,
         warmup = 0.1, duration = 0.4, timeout = 5, repetitions = 1 }
]], { name = "churn5", limit = 120 })
        assert.are.equal(0, res.rc, res.stderr)
        assert.are.equal(4, #res.runs)
        for _, r in ipairs(res.runs) do assert_churned(r, 5, 2) end
        -- the terminal table has the churn columns
        local out = res.stdout .. res.stderr
        assert.matches("conn/s", out, 1, true)
        assert.matches("handshake p50 µs", out, 1, true)
    end)
end)

describe("tls.resume: session tickets", function()
    local off, on
    setup(function()
        local res = ark.run_scenario([[
return {
    { label = "full", name = "resume", protocol = "tls", payload = 64, clients = 2,
      requests_per_connection = 1, warmup = 0.1, duration = 0.5, timeout = 5, repetitions = 1 },
    { label = "resumed", protocol = "tls", payload = 64, clients = 2,
      requests_per_connection = 1, warmup = 0.1, duration = 0.5, timeout = 5, repetitions = 1,
      tls = { resume = true } },
}
]], { name = "resume", limit = 120 })
        assert.are.equal(0, res.rc, res.stderr)
        for _, r in ipairs(res.runs) do
            if r.case.label == "full" then off = r else on = r end
        end
    end)

    it("counts resumed handshakes only with resume on", function()
        assert_churned(off, 1, 2)
        assert_churned(on, 1, 2)
        assert.are.equal(0, off.tls_resumed, churn_brief(off))
        assert.is_true(on.tls_handshakes >= on.connect_us.count - 2, churn_brief(on))
        -- the first connects have no session yet; later ones offer the
        -- newest ticket (nearly all resume on a quiet host; timings and
        -- ratios are not asserted: the machine is shared)
        assert.is_true(on.tls_resumed > 0, churn_brief(on))
        assert.is_true(on.tls_resumed <= on.tls_handshakes - 2, churn_brief(on))
    end)

    it("resumes against a server in its own process too (placement = split)", function()
        local res = ark.run_scenario([[
return { name = "resume_split", protocol = "tls", payload = 64, clients = 2,
         placement = "split", requests_per_connection = 1, warmup = 0.1, duration = 0.4,
         timeout = 5, tls = { resume = true } }
]], { name = "resume_split", limit = 120 })
        assert.are.equal(0, res.rc, res.stderr)
        local r = res.runs[1]
        assert.are.equal("ok", r.status, churn_brief(r))
        assert.is_true(r.tls_resumed > 0, churn_brief(r))
        -- replaced connections end with a FIN; only those the end of the
        -- run closes (one per client at most) may be resets
        assert.is_true(r.server.resets <= 2, churn_brief(r) .. " resets=" .. r.server.resets)
    end)
    -- TLS 1.2 sends its ticket in the handshake: the in-memory handshake
    -- that warms OpenSSL up before a same-process run left one behind, and
    -- every connection, the first included, counted as resumed
    it("never resumes the first connection's handshake (TLS 1.2, same process)", function()
        local res = ark.run_scenario([[
return { name = "resume12", protocol = "tls", payload = 64, clients = 3, connect_rate = 4,
         warmup = 0.1, duration = 0.3, timeout = 5, repetitions = 1,
         tls = { resume = true, version = "1.2" } }
]], { name = "resume12", limit = 120 })
        assert.are.equal(0, res.rc, res.stderr)
        local r = res.runs[1]
        assert.are.equal("ok", r.status, churn_brief(r))
        assert.are.equal(3, r.tls_handshakes, churn_brief(r))
        assert.is_true(r.tls_resumed > 0, churn_brief(r))
        assert.is_true(r.tls_resumed <= r.tls_handshakes - 1, churn_brief(r))
    end)
end)

describe("connect_rate", function()
    it("spaces the first connects: 12 at 40/s take at least 0.275 s", function()
        local res = ark.run_scenario([[
return { name = "pace", protocol = { "tcp", "tls" }, payload = 64, clients = 12,
         connect_rate = 40, warmup = 0, duration = 0.2, timeout = 5, repetitions = 1 }
]], { name = "pace", limit = 120 })
        assert.are.equal(0, res.rc, res.stderr)
        for _, r in ipairs(res.runs) do
            assert.are.equal("ok", r.status, churn_brief(r))
            assert.are.equal(12, r.connect_us.count, churn_brief(r))
            -- the 12th starts 11 / 40 s after the first
            assert.is_true(r.connect_phase_s >= 11 / 40, churn_brief(r) .. " " .. r.connect_phase_s)
        end
        -- without it the same connects are a burst
        local fast = ark.run_scenario([[
return { name = "burst", protocol = "tcp", payload = 64, clients = 12, warmup = 0,
         duration = 0.2, timeout = 5, repetitions = 1 }
]], { name = "burst", limit = 60 })
        assert.is_true(fast.runs[1].connect_phase_s < 11 / 40, tostring(fast.runs[1].connect_phase_s))
    end)
end)

describe("refused before anything runs", function()
    local function refused(text)
        local d = files.tmpdir()
        local path = d .. "/bad.lua"
        files.write_file(path, text)
        local rc, _, err = ark.run({ "run", path, "--list" })
        return rc, err
    end

    it("over udp", function()
        local rc, err = refused([[return { protocol = "udp", requests_per_connection = 1 }]])
        assert.are.equal(2, rc)
        assert.matches("bad.lua:1: key 'requests_per_connection': execution = \"callback\" over"
            .. " protocol udp does not churn connections %(a datagram protocol has no connection"
            .. " to replace%)", err)
    end)

    it("with execution = lua", function()
        local rc, err = refused([[return { protocol = "tcp", execution = "lua",
            client = function(conn) end, requests_per_connection = 2 }]])
        assert.are.equal(2, rc)
        assert.matches("execution = \"lua\" over protocol tcp does not churn connections %(a Lua"
            .. " client owns its connection%)", err)
    end)

    it("on shared:2", function()
        local rc, err = refused([[return { protocol = "tcp", topology = "shared:2",
            requests_per_connection = 2 }]])
        assert.are.equal(2, rc)
        assert.matches("topology = \"shared:2\" does not reopen connections", err)
    end)

    it("out of range, from --set too", function()
        local rc, err = refused([[return { protocol = "tcp", requests_per_connection = 0 }]])
        assert.are.equal(2, rc)
        assert.matches("key 'requests_per_connection': got 0; expected an integer from 1", err)
        local d = files.tmpdir()
        files.write_file(d .. "/ok.lua", [[return { protocol = "tcp" }]])
        local rc2, _, err2 = ark.run({ "run", d .. "/ok.lua", "--set", "connect_rate=-1", "--list" })
        assert.are.equal(2, rc2)
        assert.matches("connect_rate", err2)
    end)
end)
