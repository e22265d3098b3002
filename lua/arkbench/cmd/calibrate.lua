-- arkbench.cmd.calibrate: `arkbench calibrate`, the tool's own overhead against
-- the physical floor of this host.
--
-- The floor (core.floor_run, core/io/floor.h) is a raw epoll echo over loopback
-- TCP in the calling thread: fixed-size messages on a bare stream, no
-- per-message timing, no payload check, no framing. arkbench's side is
-- core.run_case on the same payload, clients and window (tcp, length
-- framing, sharded:1, callback, work 0). Each configuration runs as N
-- alternating pairs (floor, arkbench, floor, arkbench, ...) so that drift of
-- the host (frequency, other load) hits both sides alike.
--
--   calibrate.main(args) -> exit code
--     args: the words after `arkbench calibrate` (a leading "calibrate" is
--     skipped too). 0 done; 1 a run failed or the engine is not built;
--     2 the command line is wrong.
--
-- Ratios are arkbench / floor: for round trips/s below 1 is arkbench's
-- overhead; for RTT (arkbench p50 / floor mean) above 1 is.

local core = require("arkbench.core")
local units = require("arkbench.util.units")

local io, type, tonumber, tostring = io, type, tonumber, tostring
local ipairs = ipairs
local str_format, str_match, str_rep, str_reverse =
    string.format, string.match, string.rep, string.reverse
local tbl_sort, tbl_concat = table.sort, table.concat
local math_floor = math.floor

local _M = {}

local USAGE = [[
usage: arkbench calibrate [--pairs N] [--warmup S] [--duration S]
                          [--payload B --clients C --window W] [--floor-only]
                          [--cpu N | --no-pin]
       arkbench calibrate --timer [--rate R] [--duration S]

Measures the floor of loopback TCP echo on this host (a raw epoll echo with
no timing, checks or framing) and arkbench's own engine on the same load, as
N alternating pairs (default 5), and prints the ratio arkbench / floor.

  --pairs N       pairs per configuration, 1..100 (default 5)
  --warmup S      warm-up seconds per run, not measured (default 0.25)
  --duration S    measured seconds per run (default 1)
  --payload B     one configuration of your own instead of the two default
  --clients C       ones; missing values default to 1024 B, 16 clients,
  --window W        window 16
  --floor-only    run only the floor (no engine needed)
  --cpu N         pin the process to logical CPU N (default: the last one);
                  both sides then run on the same core, so neither wins by
                  landing on the CPU that takes the network interrupts
  --no-pin        leave placement to the kernel
  --timer         instead: the open loop's timer floor, a bare timerfd wake
                  at each of R instants a second (--rate R; default 1,000
                  and 20,000) for --duration S: lateness p50/p99/max and CPU
                  per wake (docs/load-models.md)

Default configurations: (a) 1024 B, 16 clients, window 16 (throughput);
(b) 64 B, 1 client, window 1 (latency: floor mean RTT vs arkbench p50).
]]

-- The two default configurations. `latency` rows get the RTT table.
local DEFAULTS = {
    { label = "(a)", payload = 1024, clients = 16, window = 16 },
    { label = "(b)", payload = 64, clients = 1, window = 1, latency = true },
}

local OPTIONS = {
    pairs = { min = 1, max = 100, int = true },
    warmup = { min = 0, max = 3600, unit = "seconds" },
    duration = { min = 0, max = 3600, open_min = true, unit = "seconds" },
    payload = { min = 1, max = 16 * 1024 * 1024, int = true, unit = "bytes" },
    clients = { min = 1, max = 100000, int = true },
    window = { min = 1, max = 4096, int = true },
    cpu = { min = 0, max = 4095, int = true },
    rate = { min = 1, max = 1000000 },
}

local function errf(fmt, ...)
    io.stderr:write("arkbench calibrate: ", str_format(fmt, ...), "\n")
end

-- Returns opts or nil, message.
local function parse(args)
    local opts = { pairs = 5, warmup = 0.25, duration = 1 }
    local i = 1
    if args[1] == "calibrate" then i = 2 end
    while i <= #args do
        local a = args[i]
        if a == "-h" or a == "--help" then
            opts.help = true
        elseif a == "--floor-only" then
            opts.floor_only = true
        elseif a == "--timer" then
            opts.timer = true
        elseif a == "--no-pin" then
            opts.no_pin = true
        else
            local name, value = str_match(a, "^%-%-([%w-]+)=(.*)$")
            if not name then
                name = str_match(a, "^%-%-([%w-]+)$")
                if name and OPTIONS[name] then
                    i = i + 1
                    value = args[i]
                    if value == nil then
                        return nil, "--" .. name .. " needs a value"
                    end
                end
            end
            local spec = name and OPTIONS[name]
            if not spec then
                return nil, "unknown argument '" .. tostring(a) .. "'"
            end
            local n = spec.unit and units[spec.unit](value) or tonumber(value)
            local bad = n == nil or n ~= n
                or (spec.int and n ~= math_floor(n))
                or n > spec.max or n < spec.min
                or (spec.open_min and n <= spec.min)
            if bad then
                local range = spec.open_min
                    and str_format("> %s and <= %s", tostring(spec.min),
                        tostring(spec.max))
                    or str_format("%s .. %s", tostring(spec.min),
                        tostring(spec.max))
                return nil, str_format("--%s must be %s %s%s, got '%s'", name,
                    spec.int and "an integer" or "a number", range,
                    spec.unit and (" " .. (spec.unit == "seconds" and units.DURATION_HINT
                        or units.SIZE_HINT)) or "", tostring(value))
            end
            opts[name] = n
        end
        i = i + 1
    end
    return opts
end

local function configs_of(opts)
    if opts.payload == nil and opts.clients == nil and opts.window == nil then
        return DEFAULTS
    end
    local c = {
        label = "(custom)",
        payload = opts.payload or 1024,
        clients = opts.clients or 16,
        window = opts.window or 16,
    }
    c.latency = c.clients == 1 and c.window == 1
    return { c }
end

local function describe(c)
    return str_format("%s %d B, %d client%s, window %d", c.label, c.payload,
        c.clients, c.clients == 1 and "" or "s", c.window)
end

-- Median (mean of the middle two for an even count), min, max.
local function spread(xs)
    local s = {}
    for i, x in ipairs(xs) do s[i] = x end
    if #s == 0 then return nil end
    tbl_sort(s)
    local n = #s
    local med = n % 2 == 1 and s[(n + 1) / 2] or (s[n / 2] + s[n / 2 + 1]) / 2
    return med, s[1], s[n]
end

-- 1234567.8 -> "1,234,568"
local function thousands(x)
    local s = str_format("%.0f", x)
    local neg = s:sub(1, 1) == "-"
    if neg then s = s:sub(2) end
    s = str_reverse((str_reverse(s):gsub("(%d%d%d)", "%1,")))
    if s:sub(1, 1) == "," then s = s:sub(2) end
    return (neg and "-" or "") .. s
end

local function us(x)
    return str_format(x < 10 and "%.2f" or "%.1f", x)
end

local function triple(xs, fmt)
    local med, lo, hi = spread(xs)
    if med == nil then return "n/a" end
    return str_format("%s [%s, %s]", fmt(med), fmt(lo), fmt(hi))
end

local function ratio(a, b)
    if type(a) ~= "number" or type(b) ~= "number" or b <= 0 then
        return "n/a"
    end
    return str_format("%.2f", a / b)
end

local function run_floor(c, opts)
    local r, err = core.floor_run {
        payload = c.payload, clients = c.clients, window = c.window,
        warmup = opts.warmup, duration = opts.duration,
    }
    if not r then return nil, err end
    if not (r.round_trips_per_s and r.round_trips_per_s > 0) then
        return nil, "no round trip completed"
    end
    return r
end

local function run_engine(c, opts)
    local r, err = core.run_case {
        protocol = "tcp", framing = "length", payload = c.payload,
        clients = c.clients, window = c.window, topology = "sharded:1",
        execution = "callback", work = 0, warmup = opts.warmup,
        duration = opts.duration, timeout = 2,
    }
    if not r then return nil, tostring(err) end
    if r.ok == false then
        return nil, tostring(r.error or "run not ok")
    end
    if type(r.round_trips_per_s) ~= "number" or r.round_trips_per_s <= 0 then
        return nil, "no round trip completed"
    end
    return r
end

-- Runs the pairs of one configuration; returns the samples or nil, err.
local function measure(c, opts)
    local s = { floor_rps = {}, floor_rtt = {}, ark_rps = {}, ark_p50 = {},
                rps_ratio = {}, rtt_ratio = {} }
    for i = 1, opts.pairs do
        local f, err = run_floor(c, opts)
        if not f then
            return nil, str_format("%s pair %d: floor failed: %s", c.label, i,
                tostring(err))
        end
        s.floor_rps[i] = f.round_trips_per_s
        s.floor_rtt[i] = f.mean_rtt_us
        local line = str_format("%s pair %d/%d: floor %s rt/s (mean RTT %s us)",
            c.label, i, opts.pairs, thousands(f.round_trips_per_s),
            us(f.mean_rtt_us))
        if not opts.floor_only then
            local a
            a, err = run_engine(c, opts)
            if not a then
                return nil, str_format("%s pair %d: arkbench failed: %s",
                    c.label, i, err)
            end
            s.ark_rps[#s.ark_rps + 1] = a.round_trips_per_s
            s.rps_ratio[#s.rps_ratio + 1] =
                a.round_trips_per_s / f.round_trips_per_s
            local p50 = type(a.rtt_us) == "table" and a.rtt_us.p50
            if type(p50) == "number" then
                s.ark_p50[#s.ark_p50 + 1] = p50
                s.rtt_ratio[#s.rtt_ratio + 1] = p50 / f.mean_rtt_us
            end
            line = line .. str_format("; arkbench %s rt/s (p50 RTT %s us)",
                thousands(a.round_trips_per_s),
                type(p50) == "number" and us(p50) or "n/a")
        end
        io.stderr:write("  ", line, "\n")
    end
    -- a round trip that takes a sizeable part of the warm-up or measure
    -- (large messages, many in flight) leaves too few round trips to count
    -- and a ramp-up still in progress: say so, with what to do
    local warn = _M.slow_round_trip_warning(s.floor_rtt, opts)
    if warn then io.stderr:write(warn, "\n") end
    return s
end

-- The warning for floor round trips (mean RTT, us) too slow for the warm-up
-- and measure of opts, or nil: past 2 % of the measure or 10 % of the
-- warm-up.
function _M.slow_round_trip_warning(rtts_us, opts)
    local worst = 0
    for _, r in ipairs(rtts_us) do if r > worst then worst = r end end
    local s = worst / 1e6
    if s <= 0.02 * opts.duration and s <= 0.1 * opts.warmup then return nil end
    return str_format("warning: one round trip takes up to %.3g s here, too long for a %.3g s"
        .. " warm-up and %.3g s measure (ramp-up and too few round trips decide the"
        .. " numbers); use at least --warmup %.3g --duration %.3g", s, opts.warmup,
        opts.duration, math.max(opts.warmup, 10 * s), math.max(opts.duration, 50 * s))
end

local function md_table(head, rows)
    local out = { "| " .. tbl_concat(head, " | ") .. " |",
                  "|" .. str_rep("---|", #head) }
    for _, r in ipairs(rows) do
        out[#out + 1] = "| " .. tbl_concat(r, " | ") .. " |"
    end
    return tbl_concat(out, "\n")
end

local function report(configs, samples, opts)
    local out = {}
    local function say(s) out[#out + 1] = s end
    if opts.floor_only then
        say("arkbench calibrate --floor-only: the floor of loopback TCP echo "
            .. "on this host, in this process on one thread (raw epoll; no "
            .. "per-message timing, no payload checks, no framing).")
    else
        say("arkbench calibrate: loopback TCP echo, the floor of this host "
            .. "vs arkbench. Both run in this process, all socket IO on one "
            .. "thread (floor: raw epoll in the calling thread; arkbench: one "
            .. "libuv loop, sharded:1, callback, length framing). The floor "
            .. "omits per-message timing, payload checks and framing.")
    end
    local u = core.uname and core.uname() or {}
    say(str_format("host: %s %s %s; %s; %d %s per configuration, warm-up %s s, "
        .. "measure %s s per run.",
        tostring(u.sysname or "?"), tostring(u.release or "?"),
        tostring(u.machine or "?"),
        opts.pinned and ("pinned to CPU " .. opts.pinned) or "not pinned", opts.pairs,
        opts.floor_only and (opts.pairs == 1 and "run" or "runs")
            or (opts.pairs == 1 and "pair (floor, then arkbench)"
                or "alternating pairs (floor, then arkbench)"),
        tostring(opts.warmup), tostring(opts.duration)))
    say("")

    local rows, lat_rows = {}, {}
    for k, c in ipairs(configs) do
        local s = samples[k]
        if opts.floor_only then
            rows[#rows + 1] = { describe(c), triple(s.floor_rps, thousands),
                                triple(s.floor_rtt, us) }
        else
            local fm = spread(s.floor_rps)
            local am = spread(s.ark_rps)
            rows[#rows + 1] = { describe(c), triple(s.floor_rps, thousands),
                triple(s.ark_rps, thousands), ratio(am, fm),
                ratio(spread(s.rps_ratio), 1) }
            if c.latency then
                lat_rows[#lat_rows + 1] = { describe(c),
                    triple(s.floor_rtt, us), triple(s.ark_p50, us),
                    ratio(spread(s.ark_p50), spread(s.floor_rtt)),
                    ratio(spread(s.rtt_ratio), 1) }
            end
        end
    end
    if opts.floor_only then
        say(md_table({ "config", "floor round trips/s", "floor mean RTT µs" },
            rows))
        say("")
        say("median [min, max] over the runs; mean RTT by Little's law "
            .. "(clients × window / round trips per second).")
    else
        say(md_table({ "config", "floor round trips/s",
            "arkbench round trips/s", "ratio of medians",
            "median of pair ratios" }, rows))
        if #lat_rows > 0 then
            say("")
            say(md_table({ "config", "floor mean RTT µs",
                "arkbench p50 RTT µs", "ratio of medians",
                "median of pair ratios" }, lat_rows))
        end
        say("")
        say("median [min, max] over the runs. Ratios are arkbench / floor: "
            .. "round trips/s below 1 and RTT above 1 are arkbench's "
            .. "overhead (timing, checks, framing, libuv). Floor mean RTT is "
            .. "Little's law (clients × window / round trips per second).")
    end
    io.stdout:write(tbl_concat(out, "\n"), "\n")
end

-- `arkbench calibrate --timer [--rate R] [--duration S]`: the timer floor
-- the open loop's schedule is measured against (docs/load-models.md): a
-- bare timerfd wake at R instants a second (default 1,000 and 20,000, the
-- two schedules of bench/open_loop.lua), how late and at what CPU.
function _M.timer(opts)
    local rates = opts.rate and { opts.rate } or { 1000, 20000 }
    io.stdout:write("arkbench calibrate --timer: a bare timerfd wake (epoll, absolute"
        .. " CLOCK_MONOTONIC) at each instant, no socket: the open loop's timer floor\n")
    for _, rate in ipairs(rates) do
        local wakes = math_floor(math.max(1, math.min(100000, rate * opts.duration)))
        local f, err = core.timer_floor(wakes, 1e6 / rate)
        if not f then
            errf("timer floor at %s wakes/s: %s", tostring(rate), tostring(err))
            return 1
        end
        io.stdout:write(str_format("  %7.0f wakes/s: lag p50 %.1f us, p99 %.1f us, max %.1f us; %.2f us CPU"
            .. " per wake (%d wakes)\n", rate, f.p50_us, f.p99_us, f.max_us, f.cpu_us, f.wakes))
    end
    return 0
end

function _M.main(args)
    local opts, perr = parse(args or {})
    if not opts then
        errf("%s", perr)
        io.stderr:write(USAGE)
        return 2
    end
    if opts.help then
        io.stdout:write(USAGE)
        return 0
    end
    if opts.timer then return _M.timer(opts) end
    local configs = configs_of(opts)
    if not opts.floor_only then
        if core.run_case == nil then
            errf("arkbench's engine is not built into this binary "
                .. "(core.run_case is missing), so there is nothing to "
                .. "compare the floor with. Use --floor-only to measure "
                .. "the floor alone.")
            return 1
        end
    end
    if not opts.no_pin and core.pin_cpu then
        local cpu = opts.cpu
        if cpu == nil then
            local f = io.open("/proc/cpuinfo")
            local n = 0
            if f then
                for line in f:lines() do
                    if line:match("^processor%s*:") then n = n + 1 end
                end
                f:close()
            end
            cpu = n > 0 and n - 1 or 0
        end
        local ok, perr2 = core.pin_cpu(cpu)
        if not ok then
            errf("cannot pin to CPU %d: %s", cpu, tostring(perr2))
            return 2
        end
        opts.pinned = cpu
    end
    local busy = require("arkbench.util.env").busy_warning()
    if busy then io.stderr:write(busy, "\n") end
    local samples = {}
    for k, c in ipairs(configs) do
        io.stderr:write(describe(c), "\n")
        local s, err = measure(c, opts)
        if not s then
            errf("%s", err)
            return 1
        end
        samples[k] = s
    end
    report(configs, samples, opts)
    return 0
end

-- For specs.
_M._parse = parse
_M._spread = spread
_M._thousands = thousands

return _M
