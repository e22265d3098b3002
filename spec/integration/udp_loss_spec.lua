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
-- window until its timeout: 3-12 % of the loss-free throughput.)  The
-- machine may be shared: each side runs 3 times, in turn with the other,
-- and the best of each is compared; a reply that a busy peer sends after
-- the timeout is lost and late, apart from the datagrams the peer
-- dropped.  Then duplicates and swapped pairs: `udp.duplicated` and
-- `udp.reordered` equal the peer's measure-phase counts, warm-up excluded.
--
-- Needs: /usr/bin/python3 ($ARKBENCH_PYTHON overrides it).
-- Runtime: ~20 s (longer on a busy machine).
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

-- The scenario: 1 client x window 64 against the peer at `port`, one run.
local function scenario(name, port, timeout)
    return string.format([[
return { name = "%s", protocol = "udp", target = "127.0.0.1:%d", payload = 64,
         clients = 1, window = %d, warmup = 0.3, duration = 1, timeout = %s, repetitions = 1 }
]], name, port, WINDOW, timeout)
end

-- One run against a peer started with `args`; returns the run object and
-- the peer's counters.
local function against_peer(name, args, timeout)
    local res, peer = peers.scenario_against_python(PEER, function(port)
        return scenario(name, port, timeout)
    end, { name = name, args = args, settle = 0.3 })
    assert.are.equal(1, #res.runs, name .. ": runs; stderr:\n" .. res.stderr)
    return res.runs[1], peer
end

-- `rounds` runs against each of the peers started with args_a and args_b,
-- one of each in turn (so that a busy spell of a shared machine falls on
-- both alike); returns the runs against each and the peers' counters.
local function alternating(rounds, timeout, args_a, args_b)
    local pa, pb = peers.python(PEER, args_a), peers.python(PEER, args_b)
    local port_a, port_b = peers.wait_listening(pa), peers.wait_listening(pb)
    local runs_a, runs_b = {}, {}
    for i = 1, rounds do
        for _, side in ipairs({ { "udp_clean", port_a, runs_a }, { "udp_drop50", port_b, runs_b } }) do
            local res = ark.run_scenario(scenario(side[1], side[2], timeout), { name = side[1] })
            assert.are.equal(1, #res.runs, side[1] .. " round " .. i .. ": runs; stderr:\n" .. res.stderr)
            side[3][i] = res.runs[1]
        end
    end
    proc.sleep(0.3) -- the peers have read the last datagrams
    local peer_a = peers.last_json(proc.stop(pa), "the loss-free peer's output")
    local peer_b = peers.last_json(proc.stop(pb), "the lossy peer's output")
    return runs_a, runs_b, peer_a, peer_b
end

-- A run that measured: ok, or degraded by its timeouts (never failed).
local function assert_measured(r)
    assert.is_truthy(r.status == "ok" or r.status == "degraded", brief(r))
    assert.is_true(r.completed > 0, brief(r))
    assert_identity(r)
end

-- The run with the most round trips/s.
local function best(runs)
    local b = runs[1]
    for _, r in ipairs(runs) do
        if r.round_trips_per_s > b.round_trips_per_s then b = r end
    end
    return b
end

-- The sum of field k (of r.udp with udp) over runs.
local function total(runs, k, udp)
    local n = 0
    for _, r in ipairs(runs) do n = n + (udp and r.udp[k] or r[k]) end
    return n
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
    local TIMEOUT, REPS = 0.01, 3
    local clean, lossy, peer_clean, peer_lossy

    setup(function()
        clean, lossy, peer_clean, peer_lossy = alternating(REPS, TIMEOUT, {}, { "drop=50" })
    end)

    it("every run measures, and the peer dropped 2 % of the measure phase", function()
        for _, r in ipairs(clean) do assert_measured(r) end
        for _, r in ipairs(lossy) do assert_measured(r) end
        assert.are.equal(0, peer_clean.dropped, cjson.encode(peer_clean))
        assert.is_true(peer_lossy.measure > 1000, cjson.encode(peer_lossy))
        local share = peer_lossy.dropped / peer_lossy.measure
        assert.is_true(share > 0.019 and share < 0.021, cjson.encode(peer_lossy))
    end)

    it("keeps at least half the loss-free throughput", function()
        local a, b = best(clean).round_trips_per_s, best(lossy).round_trips_per_s
        assert.is_true(a > 0, brief(best(clean)))
        assert.is_true(b >= 0.5 * a, string.format(
            "best round trips/s of %d runs: loss-free %.0f, every 50th dropped %.0f (%.0f %%)",
            REPS, a, b, 100 * b / a))
    end)

    it("keeps at least half the window in flight", function()
        local r = best(lossy)
        local mean, answered = in_flight(r, TIMEOUT)
        assert.is_true(mean >= WINDOW / 2, string.format(
            "mean in flight %.1f of %d (%.1f awaiting a reply that came); %s",
            mean, WINDOW, answered, brief(r)))
    end)

    it("loses about 2 %: every datagram the peer dropped, counted lost", function()
        local lost, late, sent = total(lossy, "lost", true), total(lossy, "late", true), total(lossy, "sent")
        local what = string.format("sent %d, lost %d, late %d; the peer dropped %d measure datagrams",
            sent, lost, late, peer_lossy.dropped)
        assert.are.equal(total(lossy, "timed_out"), lost, what)
        -- every dropped datagram is lost (the last few may end unfinished)
        assert.is_true(lost >= peer_lossy.dropped - 3 * REPS, what)
        -- and what else was lost came back late (a busy machine), except
        -- replies still on the way when a run's drain ended
        assert.is_true(lost - late <= peer_lossy.dropped + WINDOW * REPS, what)
        local genuine = (lost - late) / sent * 100
        assert.is_true(genuine >= 1.8 and genuine <= 2.5, what)
        for _, r in ipairs(lossy) do
            local u = r.udp
            assert.is_true(u.loss_percent >= 1.8, "loss_percent " .. u.loss_percent)
            assert.is_true(math.abs(u.loss_percent - u.lost / r.sent * 100) < 1e-9, cjson.encode(u))
            assert.are.equal(0, u.duplicated, cjson.encode(u))
            assert.are.equal(0, u.reordered, cjson.encode(u))
        end
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
