-- search_spec.lua -- issue 12, acceptance 6: `arkbench search` against a
-- server with a known capacity (`arkbench serve --work N`, one thread)
-- converges in at most 10 probes to a rate within 10 % of the capacity
-- knee, prints each probe and the answer and saves them (summary.json
-- search, runs.jsonl).
--
-- The capacity is measured here, not assumed: a closed-loop run against
-- the same server before the search and after it. On a loaded machine the
-- server thread's share of a core drifts between runs, so the knee is
-- taken as the range of the capacity seen during the test: the two
-- closed-loop runs and the achieved rate of every probe that asked more
-- than the server did (there the window fills and the achieved rate is
-- what the server could do at that moment). The answer must lie within
-- 10 % of that range. The SLO (p99 < 500 ms and rate_met) makes the
-- capacity the knee: below it the queue stays short, above it the window
-- fills and intended sends stay unsent. A machine stall below the capacity
-- can fail a probe the server could have met: up to three attempts are
-- made, the last must pass on its own.
-- Runtime: ~25 s (an attempt; up to three on a loaded machine).
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

local SCENARIO = [[
return {
    name = "knee",
    payload = 64,
    target = "127.0.0.1:%d",
    clients = 4,
    window = 64,
    warmup = 0.2,
    duration = 1,
    timeout = 5,
    repetitions = 1,
}
]]

local function capacity(path, out)
    local rc, _, se = proc.run_cmd({ ark.BIN, "run", path, "--out", out }, { limit = 60 })
    assert.are.equal(0, rc, se)
    local runs = ark.read_runs(out .. "/runs.jsonl")
    assert.are.equal(1, #runs)
    assert.are.equal("closed", runs[1].load_model)
    return runs[1].round_trips_per_s
end

-- One search against a fresh server: every assertion of acceptance 6.
local function attempt(n)
    -- about 0.4 ms of server work per echo: the server's one thread is the
    -- limit, several hundred to a few thousand echoes a second
    local srv = proc.spawn({ ark.BIN, "serve", "--work", "400000", "--topology", "sharded:1" },
                           { name = "arkbench serve" })
    local port = peers.wait_listening(srv)
    local d = files.tmpdir()
    local path = d .. "/knee.lua"
    files.write_file(path, SCENARIO:format(port))

    local c0 = capacity(path, d .. "/cap0")
    -- --from (c0 / 10) x duration (1 s) must be at least the 4 clients
    -- (rate's lower bound); a busy machine may serve far less than a quiet
    -- one (issue 27: no speed asserted beyond that)
    assert.is_true(c0 >= 40, "capacity " .. c0)
    local from, to = math.floor(c0 / 10), math.floor(c0 * 10)
    local rc, so, se = proc.run_cmd({ ark.BIN, "search", path, "--slo", "p99_us<500000",
                                      "--from", tostring(from), "--to", tostring(to),
                                      "--out", d .. "/search" }, { limit = 120 })
    local c1 = capacity(path, d .. "/cap1")
    proc.stop(srv)
    local where = "capacity " .. c0 .. " then " .. c1 .. "\nstdout:\n" .. so .. "\nstderr:\n" .. se
    assert.are.equal(0, rc, where)
    -- printed: every probe, then the answer
    local printed = 0
    for _ in so:gmatch("probe %d+: rate [%d.e+]+/s: %a+: ") do printed = printed + 1 end
    local answer = tonumber(so:match("answer: ([%d.e+]+) messages/s"))
    assert.is_truthy(answer, where)

    -- saved: summary.json search and every run in runs.jsonl
    local summary = cjson.decode(files.read_file(d .. "/search/summary.json"))
    local s = summary.search
    assert.are.equal(answer, s.answer, where)
    assert.is_true(#s.probes >= 3 and #s.probes <= 10, #s.probes .. " probes: " .. where)
    assert.are.equal(#s.probes, printed, where)
    assert.is_true(s.probes[1].pass, "the lowest rate failed: " .. where)
    assert.is_false(s.probes[2].pass, "ten times the capacity passed: " .. where)
    local runs = ark.read_runs(d .. "/search/runs.jsonl")
    assert.are.equal(#s.probes + 1, #runs, where)

    -- the knee: the capacity seen during the test
    local lo, hi = math.min(c0, c1), math.max(c0, c1)
    for _, r in ipairs(runs) do
        assert.are.equal("open", r.load_model, where)
        if r.case.search == "probe" and r.rate_met == false and r.rate_asked > r.rate_achieved * 1.05 then
            lo, hi = math.min(lo, r.rate_achieved), math.max(hi, r.rate_achieved)
        end
    end
    local knee = string.format("answer %g/s, knee %.0f .. %.0f/s; %s", answer, lo, hi, where)
    assert.is_true(answer >= 0.9 * lo and answer <= 1.1 * hi, knee)
    -- converged: a failing probe within 10 % above the answer (the
    -- bracket of the bisection), unless the probes ran out
    local above
    for _, p in ipairs(s.probes) do
        if not p.pass and p.rate > answer and (above == nil or p.rate < above) then above = p.rate end
    end
    assert.is_truthy(above, where)
    if s.reason == "converged" then
        assert.is_true(above <= 1.1 * answer, "bracket " .. answer .. " .. " .. above .. ": " .. where)
    else
        assert.are.equal(10, #s.probes, "reason " .. tostring(s.reason) .. ": " .. where)
    end
    -- the answer's own run met its rate there
    local last = runs[#runs]
    assert.are.equal("answer", last.case.search, where)
    assert.are.equal(answer, last.rate_asked, where)
    local trail = {}
    for _, r in ipairs(runs) do
        trail[#trail + 1] = string.format("%g->%.0f%s", r.rate_asked, r.rate_achieved,
                                          r.rate_met and "" or "!")
    end
    print(string.format("\nsearch attempt %d: %s; closed loop %.0f then %.0f/s (%d probes: %s)",
                        n, knee:match("^[^;]*"), c0, c1, #s.probes, table.concat(trail, " ")))
end

describe("arkbench search against arkbench serve --work N", function()
    it("converges in at most 10 probes within 10 % of the capacity knee, printed and saved", function()
        if not require("arkbench.core").capabilities().limits.open_loop then return end
        -- a stall of the loaded machine below the capacity can fail a probe
        -- that the server could have met (its window fills, or the sender
        -- wakes late and the last sends miss the deadline): up to three
        -- attempts, the last of which must pass on its own
        for n = 1, 2 do
            local ok, err = pcall(attempt, n)
            if ok then return end
            print(string.format("\nsearch attempt %d failed, trying again: %s", n,
                                tostring(err):sub(1, 300)))
        end
        attempt(3)
    end)
end)
