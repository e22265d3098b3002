-- slo_search_spec.lua -- issue 12, acceptance 6: `arkbench search` against
-- a server of known capacity converges in <= 10 probes to a rate within
-- 10 % of the capacity knee, and prints and saves it.
--
-- The server is `arkbench serve --protocol tcp --work 100000` (one loop):
-- each echo costs ~100,000 xorshift iterations of its one thread, a few
-- hundred microseconds, so its capacity X (a few thousand echoes/s) is set
-- by that work, not by the client. X is measured first with a closed loop
-- of one connection with window 2: the server always has the next message
-- waiting, yet, as in the open loop, it reads and answers them about one
-- at a time (a deep window would let it batch syscalls, a capacity the
-- open loop, one message at a time, never sees).
--
-- Why the knee is X for this SLO ('p90_us<30000' and rate_met): in an
-- open loop at rate R < X the server keeps up, so the corrected latency is
-- a few service times; the machine is shared, and a neighbour can stall
-- the server thread for tens of milliseconds, which a p99 of a short probe
-- sees (a few hundred samples hold few stalls) but p90 does not. At R > X
-- the backlog grows by R - X messages per second for the whole probe: a
-- message sent t s into it waits about t (R - X) / R, so the p90 of a 2 s
-- probe is about 1.8 (R - X) / R s, over 30 ms from R ~ 1.02 X on; the
-- window (256, room for a 0.1 s stall) fills from R ~ 1.1 X on, and then
-- rate_met fails too. So the probes pass up to X and fail above it: the
-- knee is X, give or take the few percent of the search's 5 % bracket.
-- The search brackets [X/4, 4X] (2 end probes + 6 bisections: 8 probes).
--
-- The capacity is measured before and after the search: the machine is
-- shared, and a neighbour's load takes CPU from the one server thread, so
-- X drifts between the two; the answer must be within 10 % of the range
-- they span, [0.9 min, 1.1 max].
-- Runtime: ~35 s (2 capacity runs and 8 probes of 2.25 s, 1 answer run).
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local peers = require("helpers.peers")
local ark = require("helpers.arkbench")

local cjson = ark.cjson
local read_file, write_file = files.read_file, files.write_file
local format = string.format

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

local CASE = [[
return {
    name = "knee",
    payload = 64,
    clients = 1,
    window = %d,
    warmup = 0.25,
    duration = 2,
    timeout = 2,
    repetitions = 1,
    target = "127.0.0.1:%d",
}
]]

describe("arkbench search against serve --work (acceptance 6)", function()
    it("converges in <= 10 probes to within 10 % of the server's capacity", function()
        local srv = peers.serve("tcp", { "--topology", "sharded:1", "--work", "100000" })
        local port = peers.wait_listening(srv)
        local d = files.tmpdir("_slo_search")

        local function capacity(tag)
            local path = d .. "/cap.lua"
            write_file(path, CASE:format(2, port))
            local rc, _, err = ark.run({ "run", path, "--out", d .. "/cap-" .. tag })
            assert.equals(0, rc, err)
            local runs = ark.read_runs(d .. "/cap-" .. tag .. "/runs.jsonl")
            assert.is_true(runs[1].ok)
            return runs[1].round_trips_per_s
        end

        local x0 = capacity("before")
        assert.is_true(x0 > 200, "the server does only " .. x0 .. "/s")
        local path = d .. "/knee.lua"
        write_file(path, CASE:format(256, port))
        local from, to = math.floor(x0 / 4), math.floor(x0 * 4)
        local rc, out, err = ark.run({ "search", path, "--slo", "p90_us<30000",
                                       "--from", tostring(from), "--to", tostring(to),
                                       "--out", d .. "/search" })
        local x1 = capacity("after")
        local lo, hi = math.min(x0, x1), math.max(x0, x1)
        assert.equals(0, rc, out .. err)

        local summary = cjson.decode(read_file(d .. "/search/summary.json"))
        local s = summary.search
        local probes = {}
        for _, p in ipairs(s.probes) do
            probes[#probes + 1] = format("%g %s", p.rate, p.pass and "pass" or ("fail: " .. tostring(p.why)))
        end
        local story = format("capacity %.0f/s before, %.0f/s after; answer %s; probes:\n  %s\nstdout:\n%s",
                             x0, x1, tostring(s.answer), table.concat(probes, "\n  "), out)
        assert.is_true(#s.probes <= 10, story)
        assert.is_number(s.answer, story)
        assert.is_true(s.answer >= 0.9 * lo and s.answer <= 1.1 * hi, story)
        -- printed, and saved like any run: every probe and the answer's run
        assert.truthy(out:find(format("%g", s.answer), 1, true), out)
        local runs = ark.read_runs(d .. "/search/runs.jsonl")
        assert.equals(#s.probes + 1, #runs)
        assert.equals("answer", runs[#runs].case.search)
        assert.equals(s.answer, runs[#runs].rate_asked)
        print(story)
    end)
end)
