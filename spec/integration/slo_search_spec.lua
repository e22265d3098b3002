-- slo_search_spec.lua -- issue 12, acceptance 6: `arkbench search` against
-- a server of known capacity converges in <= 10 probes to a rate within
-- 10 % of the capacity knee, and prints and saves it.
--
-- The server is `arkbench serve --protocol tcp --work 100000` (one loop):
-- each echo costs ~100,000 xorshift iterations of its one thread, a few
-- hundred microseconds, so its capacity X (a few thousand echoes/s) is set
-- by that work, not by the client. X is measured first with a closed loop
-- of one connection with window 2: the server always has the next message
-- waiting, as it has in an open loop near its knee, yet it reads and
-- answers them about one at a time (a deep window, 16, lets it batch
-- syscalls: a capacity the open loop never sees). Window 1 measured ~4 %
-- less when the machine was quiet, but under a neighbour's load its RTT
-- also holds the client's wake-ups, and it fell ~20 % below the knee the
-- probes then found.
--
-- Why the knee is X for this SLO ('p90_us<30000' and rate_met): in an
-- open loop at rate R < X the server keeps up, so the corrected latency is
-- a few service times; the machine is shared, and a neighbour can stall
-- the server thread for tens of milliseconds, which a p99 of a short probe
-- sees (a few hundred samples hold few stalls) but p90 does not. At R > X
-- the backlog grows by R - X messages per second for the whole probe: a
-- message sent t s into it waits about t (R - X) / R, so the p90 of a 2 s
-- probe is about 1.8 (R - X) / R s, over 30 ms from R ~ 1.02 X on; the
-- window (256, room for a 0.1 s stall) fills within the probe once R - X
-- > 128/s (R ~ 1.03 X at X ~ 4000/s), and then rate_met fails too. So the probes pass up to X and fail above it: the
-- knee is X, give or take the few percent of the search's 5 % bracket.
-- The search brackets [X/4, 4X] (2 end probes + 6 bisections: 8 probes).
--
-- The capacity is measured before and after the search: the machine is
-- shared, and a neighbour's load takes CPU from the one server thread, so
-- X drifts between the two; the answer must be within 10 % of the range
-- they span, [0.9 min, 1.1 max].
-- Runtime: ~30 s (2 capacity runs and 8 probes of 2.25 s, 1 answer run;
-- twice that when the first attempt misses).
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

        local function capacity(dir)
            local path = d .. "/cap.lua"
            write_file(path, CASE:format(2, port))
            local rc, _, err = ark.run({ "run", path, "--out", dir })
            assert.equals(0, rc, err)
            local runs = ark.read_runs(dir .. "/runs.jsonl")
            assert.is_true(runs[1].ok)
            return runs[1].round_trips_per_s
        end

        -- capacity, search, capacity -> within (bool), story, search summary,
        -- stdout, result folder
        local function attempt(k)
            local x0 = capacity(d .. "/cap-before-" .. k)
            assert.is_true(x0 > 200, "the server does only " .. x0 .. "/s")
            local path = d .. "/knee.lua"
            write_file(path, CASE:format(256, port))
            local from, to = math.floor(x0 / 4), math.floor(x0 * 4)
            local res = d .. "/search-" .. k
            local rc, out, err = ark.run({ "search", path, "--slo", "p90_us<30000",
                                           "--from", tostring(from), "--to", tostring(to),
                                           "--out", res })
            local x1 = capacity(d .. "/cap-after-" .. k)
            local lo, hi = math.min(x0, x1), math.max(x0, x1)
            local summary = cjson.decode(read_file(res .. "/summary.json") or "null")
            local s = type(summary) == "table" and summary.search or {}
            local probes = {}
            for _, p in ipairs(s.probes or {}) do
                probes[#probes + 1] = format("%g %s", p.rate, p.pass and "pass" or ("fail: " .. tostring(p.why)))
            end
            local story = format("attempt %d: capacity %.0f/s before, %.0f/s after; search exit %s,"
                                 .. " answer %s; probes:\n  %s\nstdout:\n%s\nstderr:\n%s",
                                 k, x0, x1, tostring(rc), tostring(s.answer),
                                 table.concat(probes, "\n  "), out, err)
            local within = rc == 0 and type(s.answer) == "number" and #s.probes <= 10
                           and s.answer >= 0.9 * lo and s.answer <= 1.1 * hi
            return within, story, s, out, res
        end

        -- One more attempt when the first misses: a neighbour's burst of
        -- CPU on this shared machine can move the knee between the
        -- capacity runs and the probes; twice in a row is a real failure.
        local within, story, s, out, res = attempt(1)
        if not within then
            print(story)
            within, story, s, out, res = attempt(2)
        end
        assert.is_true(within, story)
        -- printed, and saved like any run: every probe and the answer's run
        assert.truthy(out:find(format("%g", s.answer), 1, true), out)
        local runs = ark.read_runs(res .. "/runs.jsonl")
        assert.equals(#s.probes + 1, #runs)
        assert.equals("answer", runs[#runs].case.search)
        assert.equals(s.answer, runs[#runs].rate_asked)
        print(story)
    end)
end)
