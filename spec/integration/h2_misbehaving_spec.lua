-- h2_misbehaving_spec.lua -- HTTP/2 (issue 23, acceptance 4) against a
-- misbehaving peer (spec/fixtures/misbehaving/h2_peer.py, python3-h2, h2c):
-- resets every 5th stream, GOAWAY after 50 replies, 1 concurrent stream
-- advertised, stops reading (flow-control windows run out), garbage
-- frames.  The run goes on degraded with its numbers kept, each misdeed
-- counted in its class; a peer that stops reading shows stall time and
-- bounded memory; garbage ends the connection with a named error.
-- Needs: /usr/bin/python3 with python3-h2. Runtime: ~15 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")
local peers = require("helpers.peers")

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

local FIX = ark.ROOT .. "/spec/fixtures/misbehaving/h2_peer.py"

local function against(mode, n, shape)
    return peers.scenario_against_python(FIX, function(port)
        return string.format([[
return { name = "h2_%s", protocol = "h2c", target = "127.0.0.1:%d", %s, repetitions = 1 }
]], mode, port, shape)
    end, { name = "h2_" .. mode, settle = 0.2, args = { mode, tostring(n or 0) } })
end

local SHAPE = "payload = 1024, clients = 2, window = 4, warmup = 0.1, duration = 0.5, timeout = 2"

local function identity(r)
    assert.equals(r.sent, r.completed + r.drained + r.timed_out + r.message_errors + r.unfinished,
        "accounting identity")
end

describe("HTTP/2 against a misbehaving peer", function()
    it("resets every 5th stream: each a message error, the run goes on", function()
        local res, peer = against("reset", 5, SHAPE)
        local r = res.runs[1]
        assert.is_truthy(r, res.stderr)
        identity(r)
        assert.equals("degraded", r.status)
        assert.is_true(r.completed > 0)
        assert.is_true(r.message_errors > 0)
        assert.equals(r.message_errors, r.errors.EPROTO)
        assert.is_true(r.h2.rst_cancel >= r.message_errors)
        assert.is_true(peer.resets_sent >= r.h2.rst_cancel)
        -- about one in five: the resets are the peer's, every one counted
        assert.is_true(r.completed >= 3 * r.message_errors)
    end)

    it("sends GOAWAY(NO_ERROR) after 50 replies: an orderly end, the connection is replaced", function()
        local res, peer = against("goaway", 50, SHAPE)
        local r = res.runs[1]
        assert.is_truthy(r, res.stderr)
        identity(r)
        -- as HTTP/1.1's Connection: close: neither an error nor a reconnect
        assert.equals("ok", r.status, res.stderr)
        assert.is_true(r.completed > 0)
        assert.equals(0, r.message_errors)
        assert.equals(0, r.reconnects)
        assert.equals(0, r.reconnects_given_up)
        assert.equals(0, r.unfinished)
        assert.is_nil(next(r.errors or {}))
        assert.is_true(r.h2.goaways > 0)
        assert.is_true(peer.goaways_sent >= r.h2.goaways)
        -- every orderly GOAWAY ended its connection in server_closes
        assert.is_true(r.server_closes >= r.h2.goaways)
        assert.is_true(peer.connections > 2)
        assert.is_true(r.h2.goaway_last_stream > 0)
        assert.equals(0, r.h2.goaway_code)
        -- the streams above its last stream id: no RST_STREAM, none an error
        assert.equals(0, r.h2.rst_refused_stream)
        -- (the client keeps 4 streams open: those above the last id are taken back)
        assert.is_true(r.h2.goaway_unprocessed > 0)
    end)

    it("advertises 1 concurrent stream: the window is capped, a note names both", function()
        local res = against("maxstreams", 1, SHAPE)
        local r = res.runs[1]
        assert.is_truthy(r, res.stderr)
        identity(r)
        assert.equals("ok", r.status)
        assert.is_true(r.completed > 0)
        assert.equals(1, r.h2.peer_max_concurrent_streams)
        assert.equals(1, r.h2.streams_per_connection)
        assert.equals(1, r.h2.peer_settings.max_concurrent_streams)
        assert.equals(0, r.h2.rst_refused_stream)
        local found = false
        for _, n in ipairs(r.notes) do
            found = found or n:find("window 4 is above the peer's SETTINGS_MAX_CONCURRENT_STREAMS 1", 1, true) ~= nil
        end
        assert.is_true(found, table.concat(r.notes, "\n"))
        -- and the run says it as a warning
        assert.matches("warning: [^\n]*window 4 is above the peer's SETTINGS_MAX_CONCURRENT_STREAMS 1",
            res.stderr .. res.stdout)
    end)

    it("stops reading: flow-control stall time shown, memory bounded at 16 x 16 x 16 KiB", function()
        local res = against("noread", 0,
            "payload = 16384, clients = 16, window = 16, warmup = 0, duration = 5, timeout = 8")
        local r = res.runs[1]
        assert.is_truthy(r, res.stderr)
        identity(r)
        assert.equals(0, r.completed)
        -- every connection waited with no send window for most of the run
        assert.is_true(r.h2.stall_ns > 16 * 2e9, tostring(r.h2.stall_ns))
        -- at most the peer's windows went out: 16 connections x 65535
        assert.is_true(r.h2.data_bytes_out <= 16 * 65535)
        assert.is_true(r.rss_peak_bytes <= 64 * 1048576, tostring(r.rss_peak_bytes))
    end)

    it("sends garbage frames: the connection ends with a named error", function()
        local res = against("garbage", 0, SHAPE)
        local r = res.runs[1]
        assert.is_truthy(r, res.stderr)
        identity(r)
        assert.is_true(r.errors.EPROTO > 0)
        assert.matches("HTTP/2: our GOAWAY FRAME_SIZE_ERROR", r.error or "", 1, true)
    end)
end)
