-- udp_loss_spec.lua -- issue 10 acceptance 3: a UDP window moves past loss,
-- and the datagram counters count the measure phase only.  The peer is
-- spec/fixtures/misbehaving/udp_faulty_echo.py, which drops, duplicates or
-- swaps every Nth datagram and reports what it did to measure-phase
-- datagrams (it reads the phase byte of the echo header).
--
-- 1 client x window 64 against the peer loss-free and dropping every 50th
-- datagram, with a short timeout (10 ms: each lost message holds its slot
-- that long, by design): the lossy run keeps at least half the loss-free
-- throughput measured here, its window stays at least half full, and about
-- 2 % is lost.  (With slot = seq mod window, one lost datagram stalled the
-- window until its timeout: 3-12 % of the loss-free throughput.)  Then
-- duplicates and swapped pairs: `udp.duplicated` and `udp.reordered` equal
-- the peer's measure-phase counts, warm-up excluded.
--
-- Needs: /usr/bin/python3 ($ARKBENCH_PYTHON overrides it).
-- Runtime: ~10 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")
local peers = require("helpers.peers")

local cjson, assert_identity, brief = ark.cjson, ark.assert_identity, ark.brief

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

local PEER = ark.ROOT .. "/spec/fixtures/misbehaving/udp_faulty_echo.py"
local WINDOW = 64

-- One run of 1 client x window 64 against the peer started with `args`;
-- returns the run object and the peer's counters.
local function against_peer(name, args, timeout)
    local res, peer = peers.scenario_against_python(PEER, function(port)
        return string.format([[
return { name = "%s", protocol = "udp", target = "127.0.0.1:%d", payload = 64,
         clients = 1, window = %d, warmup = 0.3, duration = 1, timeout = %s, repetitions = 1 }
]], name, port, WINDOW, timeout)
    end, { name = name, args = args, settle = 0.3 })
    assert.are.equal(1, #res.runs, name .. ": runs; stderr:\n" .. res.stderr)
    return res.runs[1], peer
end

-- A run that measured: ok, or degraded by its timeouts (never failed).
local function assert_measured(r)
    assert.is_truthy(r.status == "ok" or r.status == "degraded", brief(r))
    assert.is_true(r.completed > 0, brief(r))
    assert_identity(r)
end

-- Mean messages in flight over the measure phase, by Little's law: each
-- answered message stays in flight for its RTT, each lost one until its
-- timeout (at least `timeout`: a lower bound).  `answered` is the part
-- in flight for an answer (round trips/s x mean RTT).
local function in_flight(r, timeout)
    local answered = r.rtt_us.count * r.rtt_us.mean / 1e6 / r.measured_s
    return answered + r.timed_out * timeout / r.measured_s, answered
end

---------------------------------------------------------------------------
describe("udp, 1 client x window 64, a peer dropping every 50th datagram", function()
    local TIMEOUT = 0.01
    local clean, lossy, peer_clean, peer_lossy

    setup(function()
        clean, peer_clean = against_peer("udp_clean", {}, TIMEOUT)
        lossy, peer_lossy = against_peer("udp_drop50", { "drop=50" }, TIMEOUT)
    end)

    it("both runs measure, and the peer dropped about 2 % of the measure phase", function()
        assert_measured(clean)
        assert_measured(lossy)
        assert.are.equal(0, peer_clean.dropped, cjson.encode(peer_clean))
        assert.is_true(peer_lossy.measure > 1000, cjson.encode(peer_lossy))
        local share = peer_lossy.dropped / peer_lossy.measure
        assert.is_true(share > 0.019 and share < 0.021, cjson.encode(peer_lossy))
    end)

    it("keeps at least half the loss-free throughput", function()
        local a, b = clean.round_trips_per_s, lossy.round_trips_per_s
        assert.is_true(a > 0, brief(clean))
        assert.is_true(b >= 0.5 * a, string.format(
            "round trips/s: loss-free %.0f, every 50th dropped %.0f (%.0f %%)", a, b, 100 * b / a))
    end)

    it("keeps at least half the window in flight", function()
        local mean, answered = in_flight(lossy, TIMEOUT)
        assert.is_true(mean >= WINDOW / 2, string.format(
            "mean in flight %.1f of %d (%.1f awaiting a reply that came); %s",
            mean, WINDOW, answered, brief(lossy)))
    end)

    it("loses about 2 %: every dropped measure datagram, counted lost", function()
        local u = lossy.udp
        assert.are.equal(lossy.timed_out, u.lost, cjson.encode(u))
        -- a dropped datagram is lost (the last few may end unfinished);
        -- a reply later than the timeout on a busy machine is lost too,
        -- and then counted late
        assert.is_true(u.lost >= peer_lossy.dropped - 3, string.format(
            "lost %d, the peer dropped %d measure datagrams", u.lost, peer_lossy.dropped))
        assert.is_true(u.lost - u.late <= peer_lossy.dropped, cjson.encode(u) .. " " .. cjson.encode(peer_lossy))
        assert.is_true(u.loss_percent >= 1.8 and u.loss_percent <= 3, "loss_percent " .. u.loss_percent)
        assert.are.equal(0, u.duplicated, cjson.encode(u))
        assert.are.equal(0, u.reordered, cjson.encode(u))
    end)
end)

---------------------------------------------------------------------------
describe("udp, a peer duplicating every 97th and swapping every 89th datagram", function()
    local r, peer

    setup(function()
        r, peer = against_peer("udp_dup_swap", { "dup=97", "swap=89" }, 0.2)
    end)

    it("measures, and the peer did both in warm-up and in the measure phase", function()
        assert_measured(r)
        local warm = peer.datagrams - peer.measure
        assert.is_true(warm >= 2 * 97, "warm-up datagrams: " .. cjson.encode(peer))
        assert.is_true(peer.duplicated >= 5 and peer.swapped >= 5, cjson.encode(peer))
    end)

    it("counts the peer's measure-phase duplicates and swaps, not the warm-up's", function()
        local u = r.udp
        local what = "udp " .. cjson.encode(u) .. "; peer " .. cjson.encode(peer)
        assert.is_true(math.abs(u.duplicated - peer.duplicated) <= 2, what)
        assert.is_true(math.abs(u.reordered - peer.swapped) <= 2, what)
        -- a duplicate is never a second completion, nor a sample
        assert.is_true(r.completed + r.drained <= peer.measure, what)
        assert.are.equal(r.completed + r.drained, r.rtt_us.count, what)
    end)
end)
