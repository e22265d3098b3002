-- arkbench.run.shard: one of N deterministic parts of every case, for
-- runs spread over hosts by an existing launcher (docs/distributed.md).
--
--   shard.parse(text, getenv) -> { index, count, from } | nil, err
--       "I/N" (0-based I) or "auto" (the launcher's environment, AUTO)
--   shard.range(clients, index, count) -> lo, hi   ids [lo, hi)
--   shard.check(cases, sh) -> nil | err   a case a shard cannot run
--   shard.apply(case, sh) -> the part of case this shard runs
--   shard.merge_ids(runs) -> the runs' connection_ids as one
--   shard.parse_start(text, now_s) -> unix seconds | nil, err  (--start-at)
--   shard.schedule(start_s, slot_s) -> sched   the wall-clock plan
--       sched:wait(case, k) -> plan   sleeps until run k's slot begins
--       sched:mark(obj, plan)          records the plan in the run object
--
-- Shard I of N runs the clients [floor(I*C/N), floor((I+1)*C/N)) of a
-- case of C clients, with those global connection ids (message headers,
-- the open-loop phases and source addresses follow them), and the share
-- rate * (hi - lo) / C of its rate: each connection keeps the unsplit
-- case's rate and phase, so the N shards together send the unsplit
-- schedule. connect_rate stays the case's: a connect is due at its id /
-- connect_rate (engine.c), which is the unsplit schedule too. processes =
-- M inside a shard splits its range again (run/group.lua).

local type, tonumber, tostring, ipairs, pairs = type, tonumber, tostring, ipairs, pairs
local floor = math.floor
local format = string.format

local _M = {}

-- the most shards a run may be split into (and --start-at's horizon: a
-- time further ahead than this is refused as a typo)
_M.MAX_COUNT = 1000000
_M.HORIZON_S = 7 * 86400

-- where --shard auto looks, in this order: index, count, launcher. The
-- inner launcher first: mpirun inside an sbatch script inherits the
-- batch step's SLURM_PROCID (0 in every rank), so MPI's variables win
_M.AUTO = {
    { "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI" },
    { "PMI_RANK", "PMI_SIZE", "an MPI launcher (PMI)" },
    { "JOB_COMPLETION_INDEX", "ARKBENCH_SHARDS", "a Kubernetes Indexed Job" },
    { "SLURM_PROCID", "SLURM_NTASKS", "Slurm" },
}

local function whole(s)
    if type(s) ~= "string" or not s:match("^%d+$") then return nil end
    return tonumber(s)
end

local function checked(i, n, from, what)
    if not i or not n then
        return nil, format("--shard %s: expected I/N with whole numbers, 0 <= I < N (e.g. 0/4),"
                           .. " or auto", what)
    end
    if n < 1 or n > _M.MAX_COUNT then
        return nil, format("--shard %s: N must be between 1 and %d", what, _M.MAX_COUNT)
    end
    if i >= n then
        return nil, format("--shard %s: the index is 0-based: expected 0 <= I < %d, got %.0f", what, n, i)
    end
    return { index = i, count = n, from = from }
end

function _M.parse(text, getenv)
    getenv = getenv or os.getenv
    if text == "auto" then
        local looked, found = {}, {}
        for _, row in ipairs(_M.AUTO) do
            local iv, nv = getenv(row[1]), getenv(row[2])
            if iv ~= nil and iv ~= "" then
                local what = format("auto (%s: %s=%s %s=%s)", row[3], row[1], tostring(iv), row[2],
                                    tostring(nv))
                if nv == nil or nv == "" then
                    if #found == 0 then
                        return nil, format("--shard auto: %s is set but %s is not (%s)", row[1], row[2],
                                           row[3])
                    end
                else
                    found[#found + 1] = { iv = iv, nv = nv, what = what, row = row }
                end
            end
            looked[#looked + 1] = row[1] .. "/" .. row[2]
        end
        local f = found[1]
        if f then
            local sh, err = checked(whole(f.iv), whole(f.nv), f.row[3], f.what)
            if not sh then return nil, err end
            -- a second launcher that disagrees: the first (inner) one is
            -- used, and both are named
            for k = 2, #found do
                local g = found[k]
                if g.iv ~= f.iv or g.nv ~= f.nv then
                    sh.warning = format("--shard auto: %s=%s %s=%s (%s) and %s=%s %s=%s (%s) disagree;"
                        .. " using %s's (shard %d of %d)", f.row[1], f.iv, f.row[2], f.nv, f.row[3],
                        g.row[1], g.iv, g.row[2], g.nv, g.row[3], f.row[3], sh.index, sh.count)
                    break
                end
            end
            return sh
        end
        return nil, "--shard auto: no launcher found in the environment; looked for "
            .. table.concat(looked, ", ") .. " (or give --shard I/N)"
    end
    local i, n = tostring(text):match("^(%d+)/(%d+)$")
    return checked(tonumber(i), tonumber(n), "command line", tostring(text))
end

function _M.range(clients, index, count)
    return floor(index * clients / count), floor((index + 1) * clients / count)
end

-- nil, or why the cases cannot be sharded (checked before anything runs)
function _M.check(cases, sh)
    for _, c in ipairs(cases) do
        local clients = tonumber(c.clients) or 1
        if not c.target then
            local why = c.placement == "split" and "placement = \"split\" starts its own server"
                or "the case runs its server in the same process"
            return format("case %s: --shard needs a target: %s, and a shard must drive a server"
                          .. " every shard reaches (set target = \"host:port\" to the user's"
                          .. " server or an `arkbench serve`)", tostring(c.case_id), why)
        end
        if clients < sh.count then
            return format("case %s: %d clients cannot be split into %d shards"
                          .. " (every shard needs at least one connection)",
                          tostring(c.case_id), clients, sh.count)
        end
        -- processes = M splits each shard's share again: every shard needs M
        local m = tonumber(c.processes) or 1
        if m > 1 then
            for i = 0, sh.count - 1 do
                local lo, hi = _M.range(clients, i, sh.count)
                if hi - lo < m then
                    return format("case %s: processes = %d needs at least %d clients in every shard,"
                                  .. " but %d clients in %d shards leave shard %d only %d (use at most"
                                  .. " %d processes, fewer shards, or at least %d clients)",
                                  tostring(c.case_id), m, m, clients, sh.count, i, hi - lo, hi - lo,
                                  m * sh.count)
                end
            end
        end
    end
    return nil
end

function _M.apply(case, sh)
    local c = {}
    for k, v in pairs(case) do c[k] = v end
    local total = tonumber(case.clients) or 1
    local lo, hi = _M.range(total, sh.index, sh.count)
    c.clients = hi - lo
    c.clients_total = total
    c.id_base, c.id_stride = lo, 1
    if type(case.rate) == "number" then c.rate = case.rate * (hi - lo) / total end
    return c, lo, hi
end

-- The connection_ids of several run objects (docs/run-object.md) as one:
-- counts and sums added, the least and the largest; nil when none has them
function _M.merge_ids(runs)
    local out
    for _, r in ipairs(runs) do
        local c = type(r.connection_ids) == "table" and r.connection_ids
        if c and type(c.count) == "number" then
            if not out then
                out = { count = c.count, sum = c.sum, min = c.min, max = c.max }
            else
                out.count, out.sum = out.count + c.count, out.sum + c.sum
                if c.min < out.min then out.min = c.min end
                if c.max > out.max then out.max = c.max end
            end
        end
    end
    return out
end

-- --start-at: "2026-12-04T15:00:00Z", epoch seconds, or "+30s"
function _M.parse_start(text, now_s)
    local units = require("arkbench.util.units")
    local t
    local y, mo, d, h, mi, s, frac = tostring(text):match(
        "^(%d%d%d%d)%-(%d%d)%-(%d%d)T(%d%d):(%d%d):(%d%d)(%.?%d*)Z$")
    if y then
        -- a real day of its month (29 February in leap years only), and a
        -- fraction with digits after its point
        local yn, mn, dn = tonumber(y), tonumber(mo), tonumber(d)
        local leap = (yn % 4 == 0 and yn % 100 ~= 0) or yn % 400 == 0
        local mdays = ({ 31, leap and 29 or 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 })[mn]
        if not mdays or dn < 1 or dn > mdays or tonumber(h) > 23 or tonumber(mi) > 59
            or tonumber(s) > 60 or (frac ~= "" and not frac:match("^%.%d+$")) then
            return nil, format("--start-at %s: not a valid UTC time (expected YYYY-MM-DDThh:mm:ss[.fff]Z"
                               .. " with a real day of its month, e.g. 2026-12-04T15:00:00Z)", tostring(text))
        end
    end
    if y then
        -- days from the civil date (UTC; no time zone database involved)
        y, mo = tonumber(y), tonumber(mo)
        local yy = mo <= 2 and y - 1 or y
        local era = floor(yy / 400)
        local yoe = yy - era * 400
        local mp = (mo + 9) % 12
        local doy = floor((153 * mp + 2) / 5) + tonumber(d) - 1
        local doe = yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + doy
        local days = era * 146097 + doe - 719468
        t = days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(s)
            + (tonumber(frac ~= "" and frac or "0") or 0)
    elseif tostring(text):match("^%d+%.?%d*$") then
        t = tonumber(text)
    elseif tostring(text):match("^%+") then
        local dt = units.seconds(tostring(text):sub(2))
        if type(dt) ~= "number" or not (dt > 0) or dt ~= dt or dt == math.huge then
            return nil, format("--start-at %s: expected +DURATION (e.g. +30s, +2m)", tostring(text))
        end
        -- every shard reads its own clock a little apart from the others:
        -- rounded up to a grid, they agree unless a grid line falls
        -- between their launches (docs/distributed.md)
        local grid = dt >= _M.GRID_S and _M.GRID_S or 1
        t = math.ceil((now_s + dt) / grid) * grid
    end
    if not t then
        return nil, format("--start-at %s: expected a UTC time (2026-12-04T15:00:00Z), epoch"
                           .. " seconds, or +DURATION (+30s)", tostring(text))
    end
    if t ~= t or t - now_s > _M.HORIZON_S then
        local hint = ""
        if tostring(text):match("^%d+%.?%d*$") and t / 1000 - now_s <= _M.HORIZON_S and t / 1000 > now_s - 86400 then
            hint = format(" -- it looks like milliseconds: epoch seconds would be %.0f", t / 1000)
        end
        return nil, format("--start-at %s: that is more than %d days ahead (the most --start-at waits;"
                           .. " now %s)%s", tostring(text), _M.HORIZON_S / 86400,
                           os.date("!%Y-%m-%dT%H:%M:%SZ", floor(now_s)), hint)
    end
    if t <= now_s then
        return nil, format("--start-at %s: that is %.1f s in the past (now %s)", tostring(text),
                           now_s - t, os.date("!%Y-%m-%dT%H:%M:%SZ", floor(now_s)))
    end
    return t
end

local plan_of

-- --start-at +D: the instant is rounded up to a multiple of this
_M.GRID_S = 5

-- The run's sharding and plan from the command line (o.shard, o.start_at,
-- o.slot), checked against the cases: { shard, start_s, slot_s } | nil, err
function _M.prepare(o, cases, now_s, getenv)
    local out = {}
    if o.shard then
        local sh, err = _M.parse(o.shard, getenv)
        if not sh then return nil, err end
        local bad = _M.check(cases, sh)
        if bad then return nil, bad end
        out.shard = sh
    end
    if o.slot then
        local units = require("arkbench.util.units")
        local s = units.seconds(o.slot)
        if type(s) ~= "number" or not (s > 0) or s == math.huge then
            return nil, format("--slot %s: expected a duration > 0 (e.g. 10s)", tostring(o.slot))
        end
        if not o.start_at then return nil, "--slot needs --start-at (it sizes the plan's slots)" end
        out.slot_s = s
    end
    if o.start_at then
        local t, err = _M.parse_start(o.start_at, now_s)
        if not t then return nil, err end
        out.start_s = t
    end
    -- a slot shorter than a case needs: its runs will overrun
    out.warnings = { out.shard and out.shard.warning or nil }
    for _, c in ipairs(out.slot_s and cases or {}) do
        local p = plan_of(c)
        if p.needed_s > out.slot_s then
            out.warnings[#out.warnings + 1] = format("--slot %g s is shorter than the %g s case %s needs"
                .. " (connect, warm-up, measure, drain): its runs will overrun their slots",
                out.slot_s, p.needed_s, tostring(c.case_id))
            break
        end
    end
    return out
end

-- The plan of one run: its slot begins at `start`; the worker starts
-- then, connects within prep_s, warms up from measure - lead_s, and
-- measures from `measure`; the slot ends after the duration, the drain
-- and the worker's exit.
_M.PREP_S, _M.MARGIN_S, _M.EXIT_S = 1.5, 0.2, 1.0

function plan_of(case, slot_override)
    local clients = tonumber(case.clients) or 1
    local pace = case.connect_rate and clients / case.connect_rate or 0
    local prep = _M.PREP_S + clients / 500 + pace
    local lead = (tonumber(case.warmup) or 0) + _M.MARGIN_S
    local need = prep + lead + (tonumber(case.duration) or 0)
        + math.min(tonumber(case.timeout) or 2, 2) + _M.EXIT_S
    need = math.ceil(need)
    return { prep_s = prep, lead_s = lead, slot_s = slot_override or need, needed_s = need }
end
_M.plan_of = plan_of

local Sched = {}
Sched.__index = Sched

function _M.schedule(start_s, slot_s)
    return setmetatable({ start_s = start_s, slot_override = slot_s, next_s = start_s }, Sched)
end

-- Sleeps until run k's slot begins (at once when it is late); returns the
-- plan: slot_start_unix_s, measure_unix_us, lead_s, slot_s, late_s.
function Sched:wait(case, k)
    local core = require("arkbench.core")
    local p = plan_of(case, self.slot_override)
    p.index = k
    p.slot_start_unix_s = self.next_s
    p.measure_unix_us = floor((self.next_s + p.prep_s + p.lead_s) * 1e6 + 0.5)
    self.next_s = self.next_s + p.slot_s
    while not core.interrupted() do
        local left = p.slot_start_unix_s - core.wall_s()
        if left <= 0 then break end
        core.child_poll({}, left > 0.2 and 0.2 or left)
    end
    local left = p.slot_start_unix_s - core.wall_s()
    if core.interrupted() and left > 0 then
        -- stopped while waiting: the run never started, and says so
        io.stderr:write(format("arkbench: interrupted by %s before its run started (%.1f s before"
                               .. " run %d's --start-at slot at %s)\n", tostring(core.interrupted()), left,
                               k + 1, os.date("!%Y-%m-%dT%H:%M:%SZ", floor(p.slot_start_unix_s))))
    end
    p.late_s = math.max(0, core.wall_s() - p.slot_start_unix_s)
    p.next_slot_unix_s = self.next_s
    return p
end

-- the plan and how the run kept it, in the run object (docs/run-object.md)
function Sched:mark(obj, p)
    local core = require("arkbench.core")
    local ended = core.wall_s()
    local pl = { start_at_unix_s = self.start_s, slot = p.index, slot_s = p.slot_s,
                 slot_needed_s = p.needed_s, slot_start_unix_s = p.slot_start_unix_s,
                 measure_at_unix_us = p.measure_unix_us,
                 started_late_s = p.late_s, overrun = ended > p.next_slot_unix_s }
    if type(obj.measure_start_unix_us) == "number" then
        pl.start_offset_us = obj.measure_start_unix_us - p.measure_unix_us
    end
    if pl.overrun then
        pl.overrun_s = ended - p.next_slot_unix_s
        pl.note = format("the run overran its %g s slot by %.2f s (--slot)", p.slot_s, pl.overrun_s)
    end
    obj.plan = pl
end

return _M
