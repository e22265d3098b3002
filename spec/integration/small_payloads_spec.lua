-- small_payloads_spec.lua -- issue 15, payloads from 1 byte: below the
-- 16-byte header a message is a code of (connection, sequence)
-- (docs/protocols.md), every byte still checked and the order too.
--   * 1, 4, 7, 15 and 16 bytes over every protocol, callback and coroutine,
--     --quick: ok, completed > 0, no error;
--   * a raw tcp echo that damages one 4-byte reply per connection (a byte
--     flipped, two bytes swapped, or two replies swapped): counted as a bad
--     reply (EPAYLOAD / ESEQ), one per damaged reply, the good replies
--     still measured;
--   * a udp echo that duplicates, swaps or corrupts 1- and 4-byte
--     datagrams: duplicated and reordered equal the peer's counts, a
--     corrupted one is a payload error;
--   * payload = 0 is refused with file:line and the key.
--
-- Needs: /usr/bin/python3 ($ARKBENCH_PYTHON overrides it).
-- Runtime: ~40 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")
local peers = require("helpers.peers")

local cjson, assert_identity, brief = ark.cjson, ark.assert_identity, ark.brief
local FIX = ark.ROOT .. "/spec/fixtures/misbehaving"

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

local SIZES = { 1, 4, 7, 15, 16 }

---------------------------------------------------------------------------
for _, exec in ipairs({ "callback", "coroutine" }) do
    describe("payloads 1, 4, 7, 15, 16 over every protocol, execution = " .. exec, function()
        -- coroutine execution runs the stream protocols (udp is callback only)
        local protos = exec == "callback" and { "tcp", "tls", "ws", "wss", "http", "https", "udp" }
            or { "tcp", "tls", "ws", "wss", "http", "https" }
        local res

        setup(function()
            res = ark.run_scenario(string.format([[
return { name = "small_%s", protocol = { "%s" }, payload = { %s }, execution = %q,
         clients = 2, window = 4 }
]], exec, table.concat(protos, '", "'), table.concat(SIZES, ", "), exec),
                { name = "small_" .. exec, args = { "--quick" }, limit = 180 })
        end)

        it("every case is ok, completed > 0, every byte checked without an error", function()
            assert.are.equal(#protos * #SIZES, #res.runs, "runs; stderr:\n" .. res.stderr)
            local seen = {}
            for _, r in ipairs(res.runs) do
                local where = r.case.protocol .. " payload " .. r.case.payload
                seen[where] = true
                assert.are.equal("ok", r.status, where .. ": " .. brief(r))
                assert.is_true(r.completed > 0, where .. ": " .. brief(r))
                assert.are.same({}, r.errors, where .. ": " .. brief(r))
                assert.are.equal(0, r.message_errors, where)
                assert_identity(r)
                -- one echo per message (warm-up ones too): each seen whole
                if r.case.protocol ~= "udp" then
                    assert.is_true(r.server_messages >= r.sent, where .. ": " .. brief(r))
                    assert.is_true(r.server_bytes == r.server_messages * r.case.payload,
                        where .. ": server_bytes " .. tostring(r.server_bytes))
                end
            end
            for _, p in ipairs(protos) do
                for _, n in ipairs(SIZES) do
                    assert.is_true(seen[p .. " payload " .. n], "no run for " .. p .. " payload " .. n)
                end
            end
            assert.are.equal(0, res.rc, "exit code; stderr:\n" .. res.stderr)
        end)
    end)
end

---------------------------------------------------------------------------
-- The fixture damages the 5th reply of every connection; each damaged
-- reply fails its connection (its order can no longer be trusted) and
-- the connection is reopened, so the 4 replies before it still count.
local DAMAGE = {
    { mode = "flip", window = 1, class = "EPAYLOAD" },
    { mode = "swap", window = 1, class = "EPAYLOAD" },
    { mode = "reorder", window = 2, class = "ESEQ" },
}
for _, d in ipairs(DAMAGE) do
    for _, exec in ipairs({ "callback", "coroutine" }) do
        describe("tcp, 4-byte payload: an echo whose 5th reply per connection is damaged (" .. d.mode
            .. "), execution = " .. exec, function()
            it("counts each damaged reply as a bad reply (" .. d.class .. ") and keeps the good ones", function()
                local res, peer = peers.scenario_against_python(FIX .. "/tcp_tiny_damage.py", function(port)
                    return string.format([[
return { name = "tiny_%s_%s", protocol = "tcp", framing = "raw", target = "127.0.0.1:%d",
         payload = 4, clients = 2, window = %d, warmup = 0, duration = 0.5, timeout = 2,
         execution = %q, repetitions = 1 }
]], d.mode, exec, port, d.window, exec)
                end, { name = "tiny_" .. d.mode, args = { "size=4", "nth=5", "mode=" .. d.mode }, settle = 0.3 })
                assert.are.equal(1, #res.runs, "runs; stderr:\n" .. res.stderr)
                local r = res.runs[1]
                assert.are.equal("degraded", r.status, brief(r))
                assert.is_true(peer.damaged >= 2, "peer: " .. cjson.encode(peer))
                -- every damaged reply was caught, and nothing else went wrong
                assert.are.equal(peer.damaged, r.errors[d.class], brief(r) .. "; peer: " .. cjson.encode(peer))
                assert.are.equal(peer.damaged, ark.sum_values(r.errors), brief(r))
                assert.is_true(r.reconnects >= peer.damaged - 2, brief(r))
                -- the good replies: 4 per connection before the damaged one
                assert.is_true(r.completed >= 4 * peer.damaged - 8, brief(r) .. "; peer: " .. cjson.encode(peer))
                assert.is_true(r.completed + r.drained <= peer.echoed, brief(r) .. "; peer: " .. cjson.encode(peer))
                assert_identity(r)
            end)
        end)
    end
end

---------------------------------------------------------------------------
describe("udp, 1- and 4-byte datagrams against a faulty echo", function()
    local function against(name, n, args, timeout)
        local res, peer = peers.scenario_against_python(FIX .. "/udp_faulty_echo.py", function(port)
            return string.format([[
return { name = "%s", protocol = "udp", target = "127.0.0.1:%d", payload = %d, clients = 1,
         window = 8, warmup = 0, duration = 0.5, timeout = %s, repetitions = 1 }
]], name, port, n, timeout)
        end, { name = name, args = args, settle = 0.3 })
        assert.are.equal(1, #res.runs, name .. ": runs; stderr:\n" .. res.stderr)
        return res.runs[1], peer
    end

    for _, n in ipairs({ 1, 4 }) do
        it(n .. " byte(s): duplicated and reordered equal what the peer did", function()
            local r, peer = against("udp_small_dup_swap", n, { "dup=7", "swap=11", "small=1" }, 0.2)
            assert.is_true(r.completed > 0, brief(r))
            assert.is_true(peer.duplicated >= 5 and peer.swapped >= 5, "peer: " .. cjson.encode(peer))
            -- (a busy peer may send a reply after its timeout: late instead)
            local what = brief(r) .. "; udp " .. cjson.encode(r.udp) .. "; peer: " .. cjson.encode(peer)
            assert.is_true(math.abs(peer.duplicated - r.udp.duplicated) <= 2, what)
            assert.is_true(math.abs(peer.swapped - r.udp.reordered) <= 2, what)
            -- a duplicate is never a second completion, nor a sample
            assert.is_true(r.completed + r.drained <= peer.measure, what)
            assert.are.equal(r.completed + r.drained, r.rtt_us.count, what)
            assert.are.same({}, r.errors, what)
            assert_identity(r)
        end)

        it(n .. " byte(s): a corrupted datagram is a payload error, its message times out", function()
            local r, peer = against("udp_small_corrupt", n, { "corrupt=13", "small=1" }, 0.05)
            assert.is_true(peer.corrupted >= 5, "peer: " .. cjson.encode(peer))
            assert.is_true(r.completed > 0, brief(r))
            local bad = r.errors.EPAYLOAD or 0
            -- 1 byte: a damaged byte may name another recent message, which
            -- then counts as its duplicate or late reply instead, or one in
            -- flight, which it completes out of order (reordered; its own
            -- reply then comes as a duplicate)
            local other = r.udp.duplicated + r.udp.late + r.udp.reordered
            assert.is_true(bad >= 1 and bad + other >= peer.corrupted and bad <= peer.corrupted,
                brief(r) .. "; udp " .. cjson.encode(r.udp) .. "; peer: " .. cjson.encode(peer))
            if n == 4 then assert.are.equal(peer.corrupted, bad, brief(r)) end
            assert.is_true(r.timed_out + r.unfinished >= bad, brief(r))
            assert_identity(r)
        end)
    end
end)

---------------------------------------------------------------------------
describe("payload = 0", function()
    it("is refused before anything runs, with file:line and the key", function()
        local res = ark.run_scenario([[
return { name = "zero", protocol = "tcp",
         payload = 0 }
]], { name = "zero" })
        assert.are_not.equal(0, res.rc)
        assert.are.equal(0, #res.runs)
        assert.is_truthy(res.stderr:find("zero.lua:2: key 'payload': got 0; expected an integer from 1 to", 1, true),
            "stderr:\n" .. res.stderr)
    end)
end)
