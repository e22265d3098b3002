-- connect_retry_spec.lua -- issue 27, acceptance 4: connections come up or
-- say why. 128 clients with timeout = 1 and connect_timeout = 0.5 against a
-- listener whose backlog is full for its first 1.5 s (the kernel drops every
-- SYN: the connects get no answer), then accepts as they come: each connect
-- that timed out is tried again after a backoff (50, 100, 200, 400 ms)
-- within the connect phase. Every connection comes up in every run (3
-- runs), the retries are counted (connect_retries >= 128: every first try
-- timed out) and are no errors of the run. And with timeout = 1 and no
-- connect_timeout, the default connect limit is 3 s (above Linux's SYN
-- retransmit at 1 s): the listener's 1.5 s costs no retry at all.
-- Asserts on counts only. Runtime: ~30 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")
local peers = require("helpers.peers")

local cjson = ark.cjson

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

local PEER = files.ROOT .. "/spec/fixtures/peers/slow_accept_echo.py"

local SCENARIO = [[
return { name = "burst", protocol = "tcp", framing = "raw", payload = 64,
         target = "127.0.0.1:%d", clients = 128, window = 1, timeout = 1, %s
         warmup = 0.1, duration = 0.5, repetitions = 1 }
]]

local function one(n, extra)
    local srv = peers.python(PEER, { "1.5" })
    local port = peers.wait_listening(srv)
    local r = ark.run_scenario(SCENARIO:format(port, extra), { name = "burst" .. n, limit = 120 })
    local peer = peers.last_json(proc.stop(srv), "slow_accept_echo's output")
    assert.equals(1, #r.runs, r.stderr)
    local run = r.runs[1]
    local where = ("run %d: %s\n%s"):format(n, cjson.encode({ status = run.status,
        error = run.error, errors = run.errors, connect_retries = run.connect_retries,
        connections_used = run.connections_used, notes = run.notes }), r.stderr)
    -- every client came up and measured
    assert.equals(128, run.connections_used, where)
    assert.is_true(peer.accepted >= 128, where)
    assert.is_true(run.completed > 0, where)
    -- the retried connects are no errors of the run
    assert.is_true(run.connect_retries >= 0, where)
    for class in pairs(run.errors or {}) do
        assert.is_nil(class:find("TIMEDOUT", 1, true), where)
        assert.is_nil(class:find("ECONNREFUSED", 1, true), where)
    end
    return run, where
end

describe("128 clients against a listener that drops every SYN for 1.5 s", function()
    it("with connect_timeout = 0.5: every connection up, its retries counted, 3 runs in a row", function()
        for n = 1, 3 do
            local run, where = one(n, "connect_timeout = 0.5,")
            assert.is_true(run.connect_retries >= 128, where)
            assert.equals("ok", run.status, where)
        end
    end)

    it("with timeout = 1 alone: the default connect limit (3 s) waits it out, no retry", function()
        local run, where = one(4, "")
        assert.equals(0, run.connect_retries, where)
    end)
end)
