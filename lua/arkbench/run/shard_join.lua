-- arkbench.run.shard_join: the run objects of the shards of one run
-- (`run --shard I/N`) joined into the run objects of the whole case
-- (docs/distributed.md, docs/run-object.md "Shards").
--
--   join.all(n, by_index) -> runs, notes
--       by_index[i]: shard i's { dir, env, runs, shard = {index, count},
--       interrupted } (nil: missing; interrupted: its summary.json says so). One run per (case_id,
--       repetition) that any shard has, in the first shard's order.
--   join.one(key_runs, n, interval_s) -> run
--   join.skew_text(runs) -> the start skew per case, for the terminal
--
-- A joined run is arkbench.run.merge.parts of the shards that measured
-- (counters summed, histograms merged bucket-wise), with the intervals
-- aligned by each shard's wall-clock measure start, a `shards` list
-- (shard, host, status, CPU %, RSS, start offset, ...), `start_skew_us`
-- (max - min of the shards' measure starts) and `load_applied`. A shard
-- that is missing, did not measure or was interrupted makes the run
-- degraded (never interrupted: the merge was not), with "shard 2 of 4:
-- missing (...)" in its error and the load the others applied; an
-- open-loop run then keeps the unsplit case's rate as rate_asked, with
-- rate_met false (the load applied was less).

local merge = require("arkbench.run.merge")
local status = require("arkbench.run.status")
local json = require("arkbench.util.json")

local ipairs, pairs, type, tostring, tonumber = ipairs, pairs, type, tostring, tonumber
local format = string.format
local floor = math.floor

local _M = {}

-- start skew above this is warned about (us)
_M.SKEW_WARN_US = 1000

local function num(v) return type(v) == "number" and v or 0 end

-- the intervals of parts, each shifted by its start (shift[i] intervals)
local function aligned_intervals(parts, shift, interval_s)
    local buckets, last = {}, 0
    for i, p in ipairs(parts) do
        for j, iv in ipairs(type(p.intervals) == "table" and p.intervals or {}) do
            local k = j + shift[i]
            buckets[k] = buckets[k] or {}
            buckets[k][#buckets[k] + 1] = iv
            if k > last then last = k end
        end
    end
    local out = json.array()
    for k = 1, last do
        local at = buckets[k] or {}
        local iv = { t_s = (k - 1) * interval_s, duration_s = 0 }
        for _, key in ipairs({ "sent", "completed", "errors", "timed_out", "connections" }) do
            local v = 0
            for _, x in ipairs(at) do v = v + num(x[key]) end
            iv[key] = v
        end
        for _, x in ipairs(at) do
            if num(x.duration_s) > iv.duration_s then iv.duration_s = x.duration_s end
        end
        iv.round_trips_per_s = iv.duration_s > 0 and iv.completed / iv.duration_s or 0
        -- a gap between the shards' measure phases: an interval no shard
        -- measured, with zero counts and no percentiles
        local enc = merge.merged_hist(at, "rtt_histogram")
        if enc then
            local s = merge.stats(enc)
            iv.p50_us, iv.p90_us, iv.p99_us, iv.max_us = s.p50, s.p90, s.p99, s.max
        else
            iv.p50_us, iv.p90_us, iv.p99_us, iv.max_us = json.null, json.null, json.null, json.null
        end
        iv.rtt_histogram = enc or json.null
        out[k] = iv
    end
    return out
end

local function shard_row(i, r, dir, intr)
    local row = { shard = i, folder = dir or json.null }
    if not r then
        row.status = intr and "interrupted" or "missing"
        if intr then row.error = "interrupted before its run" end
        return row
    end
    local sh = type(r.shard) == "table" and r.shard or {}
    row.host = sh.host or json.null
    row.clients_from, row.clients_to = sh.clients_from or json.null, sh.clients_to or json.null
    row.status = status.of(r)
    for _, k in ipairs({ "sent", "completed", "cpu_percent", "cpu_machine_percent", "rss_peak_bytes",
                         "measure_start_unix_us", "rate_asked", "error" }) do
        if r[k] ~= nil then row[k] = r[k] end
    end
    if type(r.plan) == "table" then
        row.start_offset_us = r.plan.start_offset_us or json.null
        row.overrun = r.plan.overrun
    end
    return row
end

-- The run of one (case_id, repetition): got[i] the run of shard i or nil.
function _M.one(got, n, dirs, intr)
    local measured, rows, problems = {}, json.array(), {}
    local first
    local worst = "ok"
    for i = 0, n - 1 do
        local r = got[i]
        first = first or r
        rows[#rows + 1] = shard_row(i, r, dirs and dirs[i], intr and intr[i])
        if not r and intr and intr[i] then
            -- stopped before this run began (e.g. while it waited for --start-at)
            problems[#problems + 1] = format("shard %d of %d: interrupted before its run (its summary.json"
                                             .. " says it was interrupted; no run of this case and"
                                             .. " repetition in its folder)", i, n)
        elseif not r then
            problems[#problems + 1] = format("shard %d of %d: missing (no run of this case and"
                                             .. " repetition in its folder%s)", i, n,
                                             dirs and dirs[i] and "" or "; no folder given for it")
        elseif status.measured(r) and type(r.sent) == "number" then
            measured[#measured + 1] = r
            if status.of(r) ~= "ok" then worst = "degraded" end
        elseif status.of(r) == "interrupted" then
            -- a shard stopped by SIGINT: its part is missing, the others'
            -- numbers stand (the merge itself was not interrupted)
            problems[#problems + 1] = format("shard %d of %d: interrupted (%s)", i, n, tostring(r.error))
        else
            problems[#problems + 1] = format("shard %d of %d: failed (%s: %s)", i, n, status.of(r),
                                             tostring(r.error))
        end
    end
    local out = {}
    for _, k in ipairs({ "schema_version", "scenario", "case_id", "case", "repetition" }) do
        out[k] = first[k]
    end
    if #measured > 0 then
        for k, v in pairs(merge.parts(measured)) do out[k] = v end
    else
        out.sent, out.completed = 0, 0
    end
    -- the measure phases on one wall clock: skew, and the intervals by it
    local t0, t1
    for _, r in ipairs(measured) do
        local t = r.measure_start_unix_us
        if type(t) == "number" then
            if not t0 or t < t0 then t0 = t end
            if not t1 or t > t1 then t1 = t end
        end
    end
    if t0 then
        out.measure_start_unix_us = t0
        out.start_skew_us = t1 - t0
        local iv_s = type(first.case) == "table" and tonumber(first.case.interval) or nil
        iv_s = iv_s or (type(measured[1].intervals) == "table" and measured[1].intervals[1]
                        and measured[1].intervals[1].duration_s) or 1
        local shift, any = {}, false
        for i, r in ipairs(measured) do
            shift[i] = floor((num(r.measure_start_unix_us) - t0) / 1e6 / iv_s + 0.5)
            if shift[i] ~= 0 then any = true end
        end
        if any then out.intervals = aligned_intervals(measured, shift, iv_s) end
        -- measured_s: from the first start to the last shard's end
        local span = 0
        for _, r in ipairs(measured) do
            local e = (num(r.measure_start_unix_us) - t0) / 1e6 + num(r.measured_s)
            if e > span then span = e end
        end
        if any and span > 0 then
            out.measured_s = span
            out.round_trips_per_s = out.completed / span
        end
    end
    -- a shard's run that overran its slot says so in the merged run
    for i = 0, n - 1 do
        local r = got[i]
        if r and type(r.plan) == "table" and type(r.plan.note) == "string" then
            if type(out.notes) ~= "table" then out.notes = json.array() end
            out.notes[#out.notes + 1] = format("shard %d of %d: %s", i, n, r.plan.note)
        end
    end
    -- machine % is one host's CPU time over its logical CPUs: the sum over
    -- shards on several hosts divides by no machine (each shard's stays in
    -- shards[])
    local hosts, nhosts = {}, 0
    for _, r in ipairs(measured) do
        local h = type(r.shard) == "table" and r.shard.host or "?"
        if not hosts[h] then hosts[h] = true; nhosts = nhosts + 1 end
    end
    if nhosts > 1 then out.cpu_machine_percent = json.null end
    out.connection_ids = require("arkbench.run.shard").merge_ids(measured)
    out.start_planned = type(first.plan) == "table"
    out.shards = rows
    -- the load the shards that measured applied
    local clients, rate = 0, 0
    for _, r in ipairs(measured) do
        local sh = type(r.shard) == "table" and r.shard or {}
        clients = clients + num(sh.clients_to) - num(sh.clients_from)
        rate = rate + num(r.rate_asked)
    end
    local case = type(first.case) == "table" and first.case or {}
    out.load_applied = { shards = #measured, shards_total = n, clients = clients,
                         clients_total = case.clients or json.null,
                         rate = case.rate and rate or json.null, rate_total = case.rate or json.null }
    -- a shard short: the case asked the unsplit rate, the others applied less
    if #measured < n and type(case.rate) == "number" and #measured > 0 then
        out.rate_asked, out.rate_met = case.rate, false
    end
    if #measured == 0 then
        out.ok, out.status = false, "failed"
    elseif #problems > 0 or worst ~= "ok" then
        out.ok, out.status = false, "degraded"
    else
        out.ok, out.status = true, "ok"
    end
    local errs = {}
    for _, p in ipairs(problems) do errs[#errs + 1] = p end
    if #problems > 0 then
        errs[#errs + 1] = format("load applied: %d of %s connections%s from %d of %d shards", clients,
            tostring(case.clients), case.rate and format(", %g of %g msg/s", rate, case.rate) or "",
            #measured, n)
    end
    for _, r in ipairs(measured) do
        if status.of(r) ~= "ok" and r.error then
            errs[#errs + 1] = format("shard %d of %d: %s", r.shard and r.shard.index or -1, n, tostring(r.error))
        end
    end
    out.error = #errs > 0 and table.concat(errs, "; ") or json.null
    return out
end

function _M.all(n, by_index)
    local order, got = {}, {}
    for i = 0, n - 1 do
        local s = by_index[i]
        for _, r in ipairs(s and s.runs or {}) do
            local key = tostring(r.case_id) .. "\0" .. tostring(r.repetition)
            if not got[key] then
                got[key] = {}
                order[#order + 1] = key
            end
            got[key][i] = r
        end
    end
    local dirs, intr = {}, {}
    for i = 0, n - 1 do
        dirs[i] = by_index[i] and by_index[i].dir
        intr[i] = by_index[i] and by_index[i].interrupted or false
    end
    local runs, notes = {}, {}
    for _, key in ipairs(order) do runs[#runs + 1] = _M.one(got[key], n, dirs, intr) end
    -- the start skew per case: warned above SKEW_WARN_US
    local planned, worst = false, {}
    for _, r in ipairs(runs) do
        if r.start_planned then planned = true end
        local s = r.start_skew_us
        if type(s) == "number" and s > (worst[r.case_id] or -1) then worst[r.case_id] = s end
    end
    if not planned then
        notes[#notes + 1] = "the shards started when they were launched (no --start-at): their"
            .. " measure phases began up to the start_skew_us below apart"
    else
        for _, r in ipairs(runs) do
            local s = worst[r.case_id]
            if s and s > _M.SKEW_WARN_US then
                notes[#notes + 1] = format("warning: case %s: the shards began measuring %.0f us apart"
                    .. " (start_skew_us, above %d): their clocks disagree or a shard started late;"
                    .. " check the hosts' clock sync (chronyc tracking / ntpq -p)", tostring(r.case_id), s,
                    _M.SKEW_WARN_US)
                worst[r.case_id] = nil
            end
        end
    end
    return runs, notes
end

function _M.skew_text(runs)
    local lines = { "start skew per case (max - min of the shards' measure starts), and its"
                    .. " shards in the run with the most:" }
    local worst, order = {}, {}
    for _, r in ipairs(runs) do
        if worst[r.case_id] == nil then order[#order + 1] = r.case_id; worst[r.case_id] = false end
        local s = r.start_skew_us
        if type(s) == "number" and (not worst[r.case_id] or s > worst[r.case_id].start_skew_us) then
            worst[r.case_id] = r
        end
    end
    for _, id in ipairs(order) do
        local r = worst[id]
        lines[#lines + 1] = format("  %s  start_skew_us %s", tostring(id),
                                   r and format("%.0f (repetition %d)", r.start_skew_us, r.repetition) or "-")
        for _, sh in ipairs(r and r.shards or {}) do
            if sh.status == "missing" or (sh.status == "interrupted" and sh.sent == nil) then
                lines[#lines + 1] = format("    shard %d  %s", sh.shard, sh.status == "missing" and "missing"
                                           or "interrupted before its run")
                goto next_shard
            end
            local off = type(sh.start_offset_us) == "number" and format("offset %.0f us", sh.start_offset_us)
                or type(sh.measure_start_unix_us) == "number"
                    and format("start %+.0f us", sh.measure_start_unix_us - r.measure_start_unix_us) or ""
            lines[#lines + 1] = format("    shard %d  %-12s %-11s CPU %5.1f %%  RSS %6.1f MiB  %s", sh.shard,
                tostring(sh.host ~= json.null and sh.host or "?"), tostring(sh.status), num(sh.cpu_percent),
                num(sh.rss_peak_bytes) / 1048576, off)
            ::next_shard::
        end
    end
    return table.concat(lines, "\n") .. "\n"
end

return _M
