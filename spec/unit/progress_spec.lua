-- progress_spec.lua -- arkbench.cmd.progress: the live line and the per-run
-- lines (docs/load-models.md, "The live line"), written to a buffer.
local progress = require("arkbench.cmd.progress")

local function buffer()
    local b = { parts = {} }
    function b:write(...)
        for _, s in ipairs({ ... }) do self.parts[#self.parts + 1] = s end
    end
    function b:flush() end
    function b:text() return table.concat(self.parts) end
    return b
end

local IV = { interval = 2, intervals = 10, t_s = 1.5, duration_s = 0.5, sent = 600,
             completed = 600, errors = 0, timed_out = 0, round_trips_per_s = 1200,
             p50_us = 300, p99_us = 812.4, max_us = 2000 }

describe("progress.fit", function()
    it("cuts a line to columns - 1 characters, counting UTF-8 characters once", function()
        assert.equals("abcd", progress.fit("abcdef", 5))
        assert.equals("abc", progress.fit("abc", 5))
        assert.equals("p99 µ", progress.fit("p99 µs", 6))
        assert.equals("p99 µs", progress.fit("p99 µs", 7))
        assert.equals("a", progress.fit("abc", 1))
    end)
end)

describe("progress.live_line", function()
    it("says the case, the time reached, the interval's rt/s and p99", function()
        assert.equals("[3/6] rate=1 rep 2: 2.0/5 s  1200 rt/s  p99 812 µs",
            progress.live_line(IV, { case_id = "rate=1" }, 2, 2, 6, false))
    end)

    it("says the corrected view and the rate in open loop, and errors when there are any", function()
        local iv = {}
        for k, v in pairs(IV) do iv[k] = v end
        iv.p99_us, iv.errors, iv.timed_out = 25000, 3, 1
        assert.equals("[1/1] default rep 1: 2.0/5 s  1200 rt/s (rate 2000/s)  p99 corrected 25.0 ms"
            .. "  errors 3  timed out 1",
            progress.live_line(iv, { case_id = "default", rate = 2000 }, 1, 0, 1, true))
        iv.completed = 0
        assert.truthy(progress.live_line(iv, { case_id = "x" }, 1, 0, 1, false):find("p99 -", 1, true))
    end)
end)

describe("progress.live_text", function()
    local case = { case_id = "topology=sharded:2" }

    it("draws the case's and the scenario's progress bars when there is room", function()
        assert.equals("[3/6] topology=sharded:2 rep 1: 2.0/5 s  1200 rt/s  p99 812 µs  ███░░░░░ all ███░░░░░",
            progress.live_text(IV, case, 1, 2, 6, 120))
        -- the case's bar alone, then none
        assert.equals("[3/6] topology=sharded:2 rep 1: 2.0/5 s  1200 rt/s  p99 812 µs  ███░░░░░",
            progress.live_text(IV, case, 1, 2, 6, 80))
        assert.equals("[3/6] topology=sharded:2 rep 1: 2.0/5 s  1200 rt/s  p99 812 µs",
            progress.live_text(IV, case, 1, 2, 6, 72))
    end)

    it("keeps rt/s and p99 down to 60 columns and below, dropping the prefix first", function()
        for cols = 20, 140 do
            local s = progress.live_text(IV, case, 1, 2, 6, cols)
            assert.is_true(progress.width(s) <= cols - 1, cols .. ": " .. s)
            if cols >= 24 then
                assert.truthy(s:find("1200 rt/s  p99 812 µs", 1, true), cols .. ": " .. s)
            end
        end
        assert.equals("[3/6] 2.0/5 s  1200 rt/s  p99 812 µs", progress.live_text(IV, case, 1, 2, 6, 60))
        local iv = {}
        for k, v in pairs(IV) do iv[k] = v end
        iv.errors, iv.timed_out = 3, 1
        local s = progress.live_text(iv, case, 1, 2, 6, 60)
        assert.equals("[3/6] 2.0/5 s  1200 rt/s  p99 812 µs  errors 3  timed out 1", s)
        assert.equals("1200 rt/s  p99 812 µs", progress.live_text(IV, case, 1, 2, 6, 30))
    end)

    it("shows connecting and the warm-up with their progress", function()
        local c = { phase = "connect", connected = 12, clients = 16, t_s = 0.2, duration_s = 1 }
        assert.equals("[3/6] topology=sharded:2 rep 1: connecting 12/16  ██████░░ all ███░░░░░",
            progress.live_text(c, case, 1, 2, 6, 100))
        assert.equals("[3/6] connecting 12/16", progress.live_text(c, case, 1, 2, 6, 30))
        local w = { phase = "warmup", connected = 16, clients = 16, t_s = 0.4, duration_s = 1 }
        assert.equals("[1/1] default rep 1: warm-up 0.40/1 s  ███░░░░░ all ░░░░░░░░",
            progress.live_text(w, { case_id = "default" }, 1, 0, 1, 100))
        assert.equals("[1/1] default rep 1: warm-up 0.40/1 s", progress.phase_line(w, { case_id = "default" }, 1, 0, 1))
    end)

    it("draws bars of any fraction in the given width", function()
        assert.equals("░░░░", progress.bar(0, 4))
        assert.equals("██░░", progress.bar(0.5, 4))
        assert.equals("████", progress.bar(2, 4))
        assert.equals("░░░░", progress.bar(0 / 0, 4))
        assert.equals(4, progress.width("█░µx"))
    end)
end)

describe("progress.printer", function()
    local run = { case_id = "default", repetition = 1, ok = true, status = "ok",
                  round_trips_per_s = 1234 }

    it("on a terminal: redraws in place, fitting the width", function()
        local b = buffer()
        local on_run, on_progress = progress.printer(1, { tty = true, columns = 40, out = b })
        assert.is_function(on_progress)
        on_progress(IV, { case_id = "default" }, 1, 0, 1)
        on_run(run, 1, 1)
        local text = b:text()
        local segs = {}
        for seg in text:gmatch("\r\27%[K([^\r\n]*)") do segs[#segs + 1] = seg end
        assert.equals(2, #segs)
        -- the prefix goes first: rt/s and p99 stay
        assert.equals("[1/1] 2.0/5 s  1200 rt/s  p99 812 µs", segs[1])
        assert.equals("[1/1] default rep 1: ok 1234 rt/s  fail", segs[2])
        assert.equals("\n", text:sub(-1))
    end)

    it("without a terminal: no live line, plain lines, no control characters", function()
        local b = buffer()
        local on_run, on_progress = progress.printer(2, { tty = false, columns = 30, out = b })
        assert.is_nil(on_progress)
        on_run(run, 1)
        local missed = { case_id = "r", repetition = 1, ok = true, status = "ok", load_model = "open",
                         rate_met = false, rate_asked = 500, rate_achieved = 240, unsent = 260 }
        on_run(missed, 2)
        local text = b:text()
        assert.is_nil(text:find("[\r\27]"))
        assert.truthy(text:find("^%[1/2%] default rep 1: ok 1234 rt/s  failed 0  ETA %d+s\n"), text)
        assert.truthy(text:find("\nRATE NOT MET %[2/2%] r rep 1: ok", 1), text)
        assert.truthy(text:find("\nwarning: r rep 1: rate not met: asked 500/s, achieved 240/s, 260"
                                .. " unsent: window full", 1), text)
    end)
end)
