-- live_spec.lua -- issue 12: the live terminal line (docs/load-models.md,
-- "The live line"). Under a pseudo-terminal (util-linux `script`), the
-- running interval's round trips/s and p99 are redrawn in place (\r, clear
-- to the end of the line) while the run goes, fitting COLUMNS (72 here), in every
-- topology, after lines for connecting and the warm-up; with output to
-- pipes no control character is written.
--
-- Needs: script (util-linux).
-- Runtime: ~12 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")

local shq = files.shq

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

-- 3 cases x 1.5 s, intervals of 0.25 s: 5 live lines per case
local SCENARIO = [[
return {
    payload = 64,
    clients = 2,
    window = 2,
    topology = { "sharded:2", "shared:2", "pool:2" },
    warmup = 0.1,
    duration = 1.5,
    interval = 0.25,
    repetitions = 1,
}
]]

-- The redraws in a terminal's output: the text after each "\r\27[K".
local function redraws(text)
    local out = {}
    for seg in (text .. "\r"):gmatch("\r\27%[K([^\r]*)") do out[#out + 1] = (seg:gsub("\n.*", "")) end
    return out
end

-- Columns of a UTF-8 string.
local function columns(s)
    local n = 0
    for i = 1, #s do
        local b = s:byte(i)
        if b < 0x80 or b >= 0xC0 then n = n + 1 end
    end
    return n
end

describe("the live line on a terminal", function()
    local d, ts, segs, runs_seen_early, rc_text

    setup(function()
        d = files.tmpdir()
        files.write_file(d .. "/live.lua", SCENARIO)
        ts = d .. "/typescript"
        local cmd = table.concat({ shq(ark.BIN), "run", shq(d .. "/live.lua"), "--out", shq(d .. "/out") }, " ")
        local p = proc.spawn({ "env", "COLUMNS=72", "script", "-qfc", cmd, ts }, { name = "script", limit = 90 })
        -- a live line appears while the first case still runs: no run
        -- object has been written yet
        local live = proc.wait_for(function()
            local t = files.read_file(ts) or ""
            return t:find("/1.5 s  %d+ rt/s") ~= nil
        end, 60, 0.05)
        assert.is_truthy(live, "no live line within 60 s:\n" .. (files.read_file(ts) or ""))
        local runs = files.read_file(d .. "/out/runs.jsonl") or ""
        runs_seen_early = select(2, runs:gsub("\n", ""))
        local gone = proc.wait_for(function() return not proc.alive(p.pid) end, 60, 0.1)
        assert.is_truthy(gone, "the run did not end")
        rc_text = files.read_file(ts) or ""
        segs = redraws(rc_text)
    end)

    it("redraws the running interval's rt/s and p99 in place while the run goes", function()
        assert.are.equal(0, runs_seen_early, "the first live line came after a run had finished:\n"
                         .. table.concat(segs, "\n"))
        local live = {}
        for _, s in ipairs(segs) do
            local k, t, rate = s:match("^%[(%d)/3%] .- rep 1: ([%d.]+)/1.5 s  (%d+) rt/s  p99 %d")
            if k then live[#live + 1] = { k = tonumber(k), t = tonumber(t), rate = tonumber(rate) } end
        end
        -- 5 intervals but the last per case; a loaded machine may drop a few
        assert.is_true(#live >= 9, #live .. " live lines:\n" .. table.concat(segs, "\n"))
        local per_case = {}
        for i, v in ipairs(live) do
            per_case[v.k] = (per_case[v.k] or 0) + 1
            assert.is_true(v.rate > 0, "a live line with 0 rt/s: " .. i)
            if i > 1 and live[i - 1].k == v.k then
                assert.is_true(v.t > live[i - 1].t, "the interval did not move on")
            end
        end
        for k = 1, 3 do
            assert.is_true((per_case[k] or 0) >= 2, "case " .. k .. " (every topology) has "
                           .. tostring(per_case[k]) .. " live lines")
        end
        -- each finished run replaces the live line in place
        local finished = 0
        for _, s in ipairs(segs) do
            if s:match("^%[%d/3%] .- rep 1: ok %d+ rt/s") then finished = finished + 1 end
        end
        assert.are.equal(3, finished, table.concat(segs, "\n"))
    end)

    it("shows connecting and the warm-up before the measure phase, for every case", function()
        local connecting, warming = {}, {}
        for _, s in ipairs(segs) do
            local k, n = s:match("^%[(%d)/3%] .- rep 1: connecting (%d+)/2")
            if k then connecting[tonumber(k)] = true; assert.is_true(tonumber(n) <= 2, s) end
            k = s:match("^%[(%d)/3%] .- rep 1: warm%-up [%d.]+/0.1 s")
            if k then warming[tonumber(k)] = true end
        end
        for k = 1, 3 do
            assert.is_true(connecting[k] == true, "case " .. k .. ": no connecting line:\n" .. table.concat(segs, "\n"))
            assert.is_true(warming[k] == true, "case " .. k .. ": no warm-up line:\n" .. table.concat(segs, "\n"))
        end
    end)

    it("fits every redraw into COLUMNS - 1", function()
        assert.is_true(#segs > 0)
        for _, s in ipairs(segs) do
            assert.is_true(columns(s) <= 71, columns(s) .. " columns: " .. s)
        end
    end)
end)

describe("the live line without a terminal", function()
    it("writes no control characters and one plain line per run", function()
        local d = files.tmpdir()
        files.write_file(d .. "/live.lua", (SCENARIO:gsub('topology = %b{},', 'topology = "sharded:2",')))
        local rc, so, se = proc.run_cmd({ ark.BIN, "run", d .. "/live.lua", "--out", d .. "/out" },
                                        { limit = 60, env = { "COLUMNS=60" } })
        assert.are.equal(0, rc, se)
        assert.is_nil((so .. se):find("[\r\27]"), "a control character:\n" .. se)
        assert.is_nil(se:find("rt/s  p99", 1, true), "a live line without a terminal:\n" .. se)
        assert.is_truthy(se:find("\n%[1/1%] default rep 1: ok %d+ rt/s"), se)
    end)
end)
