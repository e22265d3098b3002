-- connect_timeout_spec.lua -- a TCP connect that never completes (issue 14,
-- break-it): spec/fixtures/misbehaving/tcp_never_accept.py listens on
-- loopback with its backlog full, so the kernel drops every SYN and a
-- connect gets no answer at all. Each connection must fail once
-- `connect_timeout` has passed, with its own class ECONNTIMEDOUT and the
-- address in its reason, in every execution mode -- not sit out the run's
-- limit (timeout + 10 s) with no class, as before. A run that failed
-- before measuring reports measured_s = 0, and one interrupted while
-- connecting says so instead of "after 0.000 s of the measure phase".
-- Runtime: ~10 s.
local ROOT = os.getenv("ARKBENCH_ROOT") or "."
package.path = ROOT .. "/spec/?.lua;" .. package.path
local ark = require("helpers.arkbench")
local files = require("helpers.files")
local proc = require("helpers.proc")
local peers = require("helpers.peers")

local peer, port

setup(function()
    peer = peers.python(ROOT .. "/spec/fixtures/misbehaving/tcp_never_accept.py")
    port = peers.wait_listening(peer)
end)

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

local function scenario(fields)
    return ([[return { name = "never", target = "127.0.0.1:%d", clients = 3, timeout = 1,
        connect_timeout = "400ms", warmup = 0.1, duration = 0.5, repetitions = 1, %s }]])
        :format(port, fields)
end

describe("a connect that never completes", function()
    for _, c in ipairs({
        { "tcp, callback", [[protocol = "tcp"]] },
        { "tcp, coroutine", [[protocol = "tcp", execution = "coroutine"]] },
        { "tcp, lua", [[protocol = "tcp", execution = "lua", message = "x", expect = 1]] },
        { "http, callback", [[protocol = "http"]] },
        { "tls, coroutine", [[protocol = "tls", execution = "coroutine"]] },
    }) do
        it("fails each connection at connect_timeout as ECONNTIMEDOUT: " .. c[1], function()
            local res = ark.run_scenario(scenario(c[2]), { name = "never" })
            assert.are.equal(1, res.rc, res.stdout .. res.stderr)
            local r = res.runs[1]
            assert.are.equal("failed", r.status, ark.brief(r))
            assert.are.same({ ECONNTIMEDOUT = 3 }, r.errors, ark.brief(r))
            assert.truthy(r.error:find("connect to 127.0.0.1:" .. port .. ": no answer within the"
                .. " connect timeout of 0.4 s (ECONNTIMEDOUT)", 1, true), r.error)
            assert.truthy(r.error_reasons.ECONNTIMEDOUT, ark.brief(r))
            -- nothing was measured
            assert.are.equal(0, r.measured_s, ark.brief(r))
            -- the run's own limit would be connect_timeout + timeout + 10 s
            assert.is_true(res.wall < 10, ("took %.1f s"):format(res.wall))
        end)
    end

    it("takes --connect-timeout in the one-liner", function()
        local d = files.tmpdir()
        local rc, so, se = proc.run_cmd({ ark.BIN, "tcp://127.0.0.1:" .. port, "-c", "2", "-d", "300ms",
            "--connect-timeout", "300ms", "--json", "--out", d .. "/r" }, { limit = 60 })
        assert.are.equal(1, rc, so .. se)
        local v = ark.cjson.decode(so)
        assert.is_false(v.ok)
        assert.are.same({ ECONNTIMEDOUT = 2 }, v.error_classes, so)
        assert.are.equal(0, v.measured_s)
        assert.truthy(v.error:find("connect timeout of 0.3 s", 1, true), v.error)
    end)

    it("says an interrupt came while connecting, not after 0 s of measuring", function()
        local d = files.tmpdir()
        local file = d .. "/never.lua"
        files.write_file(file, scenario([[protocol = "tcp", connect_timeout = 60]]))
        local p = proc.spawn({ ark.BIN, "run", file, "--out", d .. "/r" }, { limit = 90 })
        -- the worker is connecting once the run has started it
        assert.is_truthy(proc.wait_for(function()
            return (proc.stdout_of(p) .. proc.stderr_of(p)):find("1 runs", 1, true) ~= nil
        end, 20), proc.stdout_of(p))
        proc.sleep(1)
        os.execute("kill -INT " .. p.pid)
        assert.is_truthy(proc.wait_for(function() return not proc.alive(p.pid) end, 20))
        local runs = ark.read_runs(d .. "/r/runs.jsonl")
        assert.are.equal(1, #runs, proc.stdout_of(p) .. proc.stderr_of(p))
        assert.are.equal("interrupted", runs[1].status)
        assert.truthy(runs[1].error:find("interrupted during connect/warm-up, before the 0.5 s measure"
            .. " phase began (nothing measured)", 1, true), runs[1].error)
        assert.is_nil(runs[1].error:find("after 0.000 s", 1, true))
        assert.are.equal(0, runs[1].measured_s)
    end)
end)
