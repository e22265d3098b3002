-- arkbench.cmd.progress: the terminal lines while `arkbench run` goes
-- (docs/load-models.md, "The live line").
--
--   progress.printer(total_runs[, opts]) -> on_run, on_progress | nil
--       on_run(run, done, total): one line per finished run (runner.lua's
--       plan.on_run); on a terminal it replaces the line before it, else it
--       is a plain line of its own.
--       on_progress(iv, case, rep, done, total): the running interval's
--       round trips/s and p99, redrawn in place (runner.lua's
--       plan.on_progress); nil when stderr is not a terminal: then nothing
--       is asked of the worker and no control character is written.
--       opts: { tty = bool, columns = n, out = file } (tests).
--   progress.columns() -> n         COLUMNS when it is a positive integer,
--                                   else the terminal's width on stderr,
--                                   else 80
--   progress.fit(line, cols) -> s   line cut to at most cols - 1 columns
--                                   (UTF-8 aware), so it never wraps
--   progress.live_line(iv, case, rep, done, total, open) -> s
--       the measure phase's line: the case, the time reached, the running
--       interval's rt/s and p99 (and errors when there are any)
--   progress.phase_line(ph, case, rep, done, total) -> s
--       before it: "connecting 12/16" or "warm-up 0.40/1 s" (ph: the
--       worker's {phase = "connect"|"warmup", connected, clients, t_s,
--       duration_s} line)
--   progress.bar(fraction, width) -> s      "████░░░░"
--   progress.width(s) -> n                  columns (UTF-8 characters)
--   progress.live_text(iv, case, rep, done, total, cols) -> s
--       what is drawn in cols columns: the fullest of these that fits --
--       the line with the case's bar and the scenario's ("case ███░ all
--       █░░░"), with the case's bar alone, the line alone, without the
--       case's name (the prefix goes first), rt/s and p99 alone -- cut to
--       fit (progress.fit) only when even that does not

local core = require("arkbench.core")

local format, floor = string.format, math.floor
local type, tostring, tonumber, ipairs = type, tostring, tonumber, ipairs

local _M = {}

function _M.columns()
    local c = tonumber(os.getenv("COLUMNS") or "")
    if c and c >= 1 and c == floor(c) then return c end
    return (core.term_columns and core.term_columns(2)) or 80
end

function _M.fit(line, cols)
    local max = (cols or 80) - 1
    if max < 1 then max = 1 end
    local n, i, len = 0, 1, #line
    while i <= len do
        local b = line:byte(i)
        -- a character starts at a byte that is not a continuation byte
        if b < 0x80 or b >= 0xC0 then
            n = n + 1
            if n > max then return line:sub(1, i - 1) end
        end
        i = i + 1
    end
    return line
end

-- 234 µs, 12.3 ms, 4.56 s
local function duration(us)
    if type(us) ~= "number" then return "-" end
    if us < 1000 then return format("%.0f µs", us) end
    if us < 1e6 then return format("%.1f ms", us / 1e3) end
    return format("%.2f s", us / 1e6)
end
_M.duration = duration

function _M.live_line(iv, case, rep, done, total, open)
    local dur = tonumber(iv.duration_s) or 0
    local t_end = (tonumber(iv.t_s) or 0) + dur
    local all = (tonumber(iv.intervals) or 0) * dur
    local p99 = (tonumber(iv.completed) or 0) > 0 and duration(tonumber(iv.p99_us)) or "-"
    local extra = ""
    if (tonumber(iv.errors) or 0) + (tonumber(iv.timed_out) or 0) > 0 then
        extra = format("  errors %.0f  timed out %.0f", tonumber(iv.errors) or 0,
                       tonumber(iv.timed_out) or 0)
    end
    -- tenths of a second, or hundredths for intervals that need them
    local tfmt = (dur * 10) % 1 < 1e-6 and "%.1f" or "%.2f"
    return format("[%d/%d] %s rep %s: " .. tfmt .. "/%g s  %.0f rt/s%s  p99%s %s%s",
        done + 1, total, tostring(case and case.case_id), tostring(rep), t_end,
        floor(all * 1000 + 0.5) / 1000,
        tonumber(iv.round_trips_per_s) or 0,
        open and format(" (rate %g/s)", tonumber(case.rate) or 0) or "",
        open and " corrected" or "", p99, extra)
end

function _M.width(s)
    local n = 0
    for i = 1, #s do
        local b = s:byte(i)
        if b < 0x80 or b >= 0xC0 then n = n + 1 end
    end
    return n
end

function _M.bar(fraction, width)
    local f = tonumber(fraction) or 0
    if f ~= f or f < 0 then f = 0 elseif f > 1 then f = 1 end
    local full = floor(f * width + 0.5)
    return string.rep("█", full) .. string.rep("░", width - full)
end

-- the phase line's own words: "connecting 12/16", "warm-up 0.40/1 s"
local function phase_words(ph)
    if ph.phase == "connect" then
        return format("connecting %.0f/%.0f", tonumber(ph.connected) or 0, tonumber(ph.clients) or 0),
            (tonumber(ph.connected) or 0) / math.max(tonumber(ph.clients) or 1, 1)
    end
    local d = tonumber(ph.duration_s) or 0
    local t = math.min(tonumber(ph.t_s) or 0, d)
    return format("warm-up %.2f/%g s", t, d), d > 0 and t / d or 0
end

function _M.phase_line(ph, case, rep, done, total)
    return format("[%d/%d] %s rep %s: %s", done + 1, total, tostring(case and case.case_id),
        tostring(rep), (phase_words(ph)))
end

-- The parts of a live line: prefix ("[2/6] case rep 1: "), the rest, the
-- short rest (rt/s and p99, or the phase's words), the case's fraction.
local function parts(iv, case, rep, done, total)
    local head = format("[%d/%d] ", done + 1, total)
    local name = format("%s rep %s: ", tostring(case and case.case_id), tostring(rep))
    if iv.phase then
        local words, f = phase_words(iv)
        return head, name, words, words, 0, f
    end
    local open = type(case) == "table" and (tonumber(case.rate) or 0) > 0
    local line = _M.live_line(iv, case, rep, done, total, open)
    local rest = line:sub(#head + #name + 1)
    local dur = tonumber(iv.duration_s) or 0
    local all = (tonumber(iv.intervals) or 0) * dur
    local f = all > 0 and ((tonumber(iv.t_s) or 0) + dur) / all or 0
    local short = rest:match("^%S+ s  (.*)$") or rest
    return head, name, rest, short, f, nil
end

function _M.live_text(iv, case, rep, done, total, cols)
    local max = (cols or 80) - 1
    local head, name, rest, short, f, pf = parts(iv, case, rep, done, total)
    local case_f = pf or f
    -- the scenario's share: finished runs plus this one's part (a phase
    -- before the measure counts as its start)
    local all_f = total > 0 and (done + (pf and 0 or f)) / total or 0
    local cbar = "  " .. _M.bar(case_f, 8)
    local candidates = {
        head .. name .. rest .. cbar .. " all " .. _M.bar(all_f, 8),
        head .. name .. rest .. cbar,
        head .. name .. rest,
        head .. rest,
        short,
    }
    for _, c in ipairs(candidates) do
        if _M.width(c) <= max then return c end
    end
    return _M.fit(short, cols)
end

function _M.printer(total_runs, opts)
    opts = opts or {}
    local tty = opts.tty
    if tty == nil then tty = core.isatty(2) end
    local out = opts.out or io.stderr
    local function cols() return opts.columns or _M.columns() end
    local failed, degraded = 0, 0
    local t0 = core.now_ns()
    local status = require("arkbench.run.status")
    local openloop = require("arkbench.report.openloop")

    local function on_run(obj, done, total)
        total = total or total_runs
        local st = status.of(obj)
        if st == "degraded" then degraded = degraded + 1
        elseif st ~= "ok" then failed = failed + 1 end
        local elapsed = (core.now_ns() - t0) / 1e9
        local eta = done > 0 and elapsed / done * (total - done) or 0
        local line = format("[%d/%d] %s rep %s: %s%s  failed %d%s  ETA %ds",
            done, total, tostring(obj.case_id), tostring(obj.repetition), st,
            (obj.round_trips_per_s and format(" %.0f rt/s", obj.round_trips_per_s) or "")
            .. ((obj.load_model == "open" and type(obj.rate_achieved) == "number"
                 and type(obj.rate_asked) == "number")
                and format(" (rate %.0f of %.0f/s)", obj.rate_achieved, obj.rate_asked) or ""),
            failed, degraded > 0 and format("  degraded %d", degraded) or "",
            floor(eta + 0.5))
        -- a run that misses its rate says so, never silently (report/openloop.lua)
        local warning = openloop.rate_warning(obj)
        if warning then line = "RATE NOT MET " .. line end
        if tty then
            out:write("\r\27[K", _M.fit(line, cols()), (done == total or warning) and "\n" or "")
        else
            out:write(line, "\n")
        end
        if warning then
            out:write(format("warning: %s rep %s: %s\n", tostring(obj.case_id),
                             tostring(obj.repetition), warning))
        end
        -- a generator-bound run says so too (report/openloop.lua)
        local gen = openloop.generator_warning(obj)
        if gen then
            if tty and not warning and done ~= total then out:write("\n") end
            out:write(format("warning: %s rep %s: %s\n", tostring(obj.case_id),
                             tostring(obj.repetition), gen))
        end
        -- h2/h2c: a window above the peer's stream cap ran at the cap; said
        -- once per run (the run object's note names both numbers)
        if type(obj.h2) == "table" and type(obj.notes) == "table" then
            for _, n in ipairs(obj.notes) do
                if type(n) == "string" and n:find("SETTINGS_MAX_CONCURRENT_STREAMS", 1, true) then
                    if tty and not (done == total or warning) then out:write("\n") end
                    out:write(format("warning: %s rep %s: %s\n", tostring(obj.case_id),
                                     tostring(obj.repetition), n))
                end
            end
        end
        out:flush()
    end

    local on_progress
    if tty then
        on_progress = function(iv, case, rep, done, total)
            out:write("\r\27[K", _M.live_text(iv, case, rep, done, total or total_runs, cols()))
            out:flush()
        end
    end
    return on_run, on_progress
end

return _M
