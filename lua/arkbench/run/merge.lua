-- arkbench.run.merge: the run objects of the client processes of one case
-- (processes = N, docs/scenarios.md) folded exactly into one
-- (docs/run-object.md, "Processes").
--
--   merge.parts(parts) -> merged
--
-- parts: the processes' run objects, in process order (each ran the
-- connections i, i + N, i + 2N, ... of the case on the same timeline:
-- one start and one deadline for all). merged holds the measured fields
-- of one run object: the counters summed or maxed as the counters table
-- says (core.counters(), engine/counters.h), every histogram merged
-- (core.hist_merge) and its percentiles read again from the merge, the
-- time series merged interval by interval, errors summed by class, CPU
-- and RSS summed, loops and connections_per_loop joined, the rates
-- (round trips, connections) worked out again. Status, error and
-- the per-process breakdown are the caller's (run/group.lua).

local core = require("arkbench.core")
local json = require("arkbench.util.json")

local type, ipairs, pairs, tostring = type, ipairs, pairs, tostring

local _M = {}

local COUNTERS = core.counters()

local function num(v) return type(v) == "number" and v or 0 end

-- the stats of a merged histogram, shaped as the engine's (count, and the
-- rest null when it is empty)
local STAT_KEYS = { "min", "p50", "p90", "p95", "p99", "p999", "max", "mean", "stdev" }
local function stats(enc)
    local s = core.hist_summary(enc)
    local out = { count = s and s.count or 0 }
    for _, k in ipairs(STAT_KEYS) do
        local v = s and s[k]
        if v == nil then v = json.null end
        out[k] = v
    end
    return out
end
_M.stats = stats

-- merges field `key` (an encoding) of every table in list; nil when none has it
local function merged_hist(list, key)
    local encs = {}
    for _, t in ipairs(list) do
        if type(t[key]) == "string" then encs[#encs + 1] = t[key] end
    end
    if #encs == 0 then return nil end
    return assert(core.hist_merge(encs))
end
_M.merged_hist = merged_hist

local function sum_table(list, key)
    local out, any = {}, false
    for _, t in ipairs(list) do
        if type(t[key]) == "table" then
            any = true
            for k, v in pairs(t[key]) do
                if type(v) == "number" then out[k] = (out[k] or 0) + v end
            end
        end
    end
    return any and out or nil
end

local function counters(merged, parts)
    for _, row in ipairs(COUNTERS) do
        if row.group == "run" then
            local v = 0
            for _, p in ipairs(parts) do
                local x = num(p[row.name])
                v = row.merge == "max" and (x > v and x or v) or v + x
            end
            merged[row.name] = v
        end
    end
end

local HISTS = { "rtt", "connect", "handshake", "rtt_raw", "send_lag", "generator_lag" }

local function histograms(merged, parts)
    for _, h in ipairs(HISTS) do
        local enc = merged_hist(parts, h .. "_histogram")
        if enc then
            merged[h .. "_histogram"] = enc
            merged[h .. "_us"] = stats(enc)
        end
    end
end

local function intervals(merged, parts)
    local n = 0
    for _, p in ipairs(parts) do
        if type(p.intervals) == "table" and #p.intervals > n then n = #p.intervals end
    end
    local out = json.array()
    for i = 1, n do
        local at = {}
        for _, p in ipairs(parts) do
            if type(p.intervals) == "table" and p.intervals[i] then at[#at + 1] = p.intervals[i] end
        end
        local iv = { t_s = at[1].t_s, duration_s = 0 }
        for _, k in ipairs({ "sent", "completed", "errors", "timed_out", "connections" }) do
            local v = 0
            for _, x in ipairs(at) do v = v + num(x[k]) end
            iv[k] = v
        end
        for _, x in ipairs(at) do
            if num(x.duration_s) > iv.duration_s then iv.duration_s = x.duration_s end
        end
        iv.round_trips_per_s = iv.duration_s > 0 and iv.completed / iv.duration_s or 0
        local enc = merged_hist(at, "rtt_histogram")
        local s = stats(enc)
        iv.p50_us, iv.p90_us, iv.p99_us, iv.max_us = s.p50, s.p90, s.p99, s.max
        iv.rtt_histogram = enc
        local lag = merged_hist(at, "send_lag_histogram")
        if lag then
            iv.send_lag_histogram = lag
            iv.send_lag_p99_us = stats(lag).p99
        end
        out[i] = iv
    end
    merged.intervals = out
end

local function host(merged, parts)
    for _, k in ipairs({ "cpu_percent", "cpu_user_s", "cpu_sys_s", "cpu_machine_percent",
                         "rss_peak_bytes", "rss_end_bytes", "rss_base_bytes", "loops", "workers" }) do
        local v = 0
        for _, p in ipairs(parts) do v = v + num(p[k]) end
        merged[k] = v
    end
    merged.errors = sum_table(parts, "errors") or {}
    merged.local_errors = sum_table(parts, "local_errors") or {}
    local reasons = {}
    for _, p in ipairs(parts) do
        for k, v in pairs(type(p.error_reasons) == "table" and p.error_reasons or {}) do
            if reasons[k] == nil then reasons[k] = v end
        end
    end
    merged.error_reasons = reasons
    local per_loop, notes, seen = json.array(), json.array(), {}
    for _, p in ipairs(parts) do
        for _, c in ipairs(type(p.connections_per_loop) == "table" and p.connections_per_loop or {}) do
            per_loop[#per_loop + 1] = c
        end
        for _, note in ipairs(type(p.notes) == "table" and p.notes or {}) do
            if not seen[note] then
                seen[note] = true
                notes[#notes + 1] = note
            end
        end
    end
    merged.connections_per_loop, merged.notes = per_loop, notes
end

local function load(merged, parts)
    local asked, any = 0, false
    for _, p in ipairs(parts) do
        if type(p.rate_asked) == "number" then
            asked, any = asked + p.rate_asked, true
        end
    end
    if not any then return end
    merged.rate_asked = asked
    -- the one rule a single process and each part follow too (issue 27)
    require("arkbench.run.rate_rule").apply(merged)
end

-- the generator's view (docs/load-models.md, "Generator-bound runs"): the
-- busiest client loop of any process, the mean over them all, the
-- precision and the timer floor (each process measured its own: the worst)
local function generator(merged, parts)
    local max, sum, n, floor = nil, 0, 0, nil
    for _, p in ipairs(parts) do
        if type(p.client_loop_busy_max) == "number" then
            if max == nil or p.client_loop_busy_max > max then max = p.client_loop_busy_max end
            sum, n = sum + num(p.client_loop_busy_mean), n + 1
        end
        local f = p.timer_floor_us
        if type(f) == "table" and (floor == nil or num(f.p99) > num(floor.p99)) then floor = f end
        if p.rate_precision ~= nil then merged.rate_precision = p.rate_precision end
    end
    if max ~= nil then merged.client_loop_busy_max, merged.client_loop_busy_mean = max, sum / n end
    merged.timer_floor_us = floor
end

local function protocol_tables(merged, parts)
    local codes = {}
    for _, p in ipairs(parts) do
        if type(p.http) == "table" then codes[#codes + 1] = p.http end
    end
    if #codes > 0 then
        merged.http = { status = sum_table(codes, "status") or {} }
        -- the successful replies' latency, when some were not (non_success)
        local enc = merged_hist(codes, "rtt_ok_histogram")
        if enc then
            merged.http.rtt_ok_histogram = enc
            merged.http.rtt_ok_us = stats(enc)
        end
    end
    local udps = {}
    for _, p in ipairs(parts) do
        if type(p.udp) == "table" then udps[#udps + 1] = p.udp end
    end
    if #udps > 0 then
        local sums = {}
        for _, x in ipairs(udps) do
            for k, v in pairs(x) do
                if type(v) == "number" then sums[k] = (sums[k] or 0) + v end
            end
        end
        sums.loss_percent = merged.sent > 0 and num(sums.lost) / merged.sent * 100 or 0
        sums.buffers = udps[1].buffers
        merged.udp = sums
    end
    for _, p in ipairs(parts) do
        if type(p.tls) == "table" then
            local t = {}
            for k, v in pairs(p.tls) do t[k] = v end
            for _, q in ipairs(parts) do
                if type(q.tls) == "table" and q.tls.resumed == true then t.resumed = true end
            end
            merged.tls = t
            break
        end
    end
end

-- the tags (docs/run-object.md, "Tags"): each tag's counts summed over the
-- processes that had it, its histogram merged, its rate worked out again
local TAG_COUNTS = { "sent", "warmup_sent", "completed", "drained", "errors", "non_success" }
local function tags(merged, parts)
    local by, any = {}, false
    for _, p in ipairs(parts) do
        for name, t in pairs(type(p.tags) == "table" and p.tags or {}) do
            any = true
            by[name] = by[name] or {}
            by[name][#by[name] + 1] = t
        end
    end
    if not any then return end
    local out = {}
    for name, list in pairs(by) do
        local t = {}
        for _, k in ipairs(TAG_COUNTS) do
            local v = 0
            for _, x in ipairs(list) do v = v + num(x[k]) end
            t[k] = v
        end
        t.round_trips_per_s = merged.measured_s > 0 and t.completed / merged.measured_s or 0
        local enc = merged_hist(list, "rtt_histogram")
        if enc then
            t.rtt_histogram = enc
            t.rtt_us = stats(enc)
        end
        out[name] = t
    end
    merged.tags = out
end

function _M.parts(parts)
    local merged = {}
    counters(merged, parts)
    local measured, mib = 0, 0
    for _, p in ipairs(parts) do
        if num(p.measured_s) > measured then measured = p.measured_s end
        mib = mib + num(p.payload_mib_per_s) * num(p.measured_s)
    end
    merged.measured_s = measured
    merged.round_trips_per_s = measured > 0 and merged.completed / measured or 0
    merged.connections_per_s = measured > 0 and num(merged.connections_opened) / measured or 0
    -- connecting ends when the last process is connected
    local phase, hs, resumed = 0, 0, 0
    for _, p in ipairs(parts) do
        if num(p.connect_phase_s) > phase then phase = p.connect_phase_s end
        hs, resumed = hs + num(p.tls_handshakes), resumed + num(p.tls_resumed)
    end
    merged.connect_phase_s, merged.tls_handshakes, merged.tls_resumed = phase, hs, resumed
    merged.payload_mib_per_s = measured > 0 and mib / measured or 0
    -- the bytes each way over the measured interval (counters.h)
    merged.transfer_mib_per_s = measured > 0 and num(merged.bytes_received) / measured / 1048576 or 0
    merged.transfer_sent_mib_per_s = measured > 0 and num(merged.bytes_sent) / measured / 1048576 or 0
    histograms(merged, parts)
    generator(merged, parts)
    intervals(merged, parts)
    host(merged, parts)
    load(merged, parts)
    protocol_tables(merged, parts)
    tags(merged, parts)
    for _, k in ipairs({ "load_model", "model", "logical_cpus" }) do
        for _, p in ipairs(parts) do
            if p[k] ~= nil then merged[k] = p[k]; break end
        end
    end
    return merged
end

-- The servers' counters (`arkbench serve` prints one object per process)
-- as one: counts, CPU and RSS summed, errors by class.
function _M.servers(list)
    local out = { processes = #list }
    for _, k in ipairs({ "connections", "messages", "bytes", "resets", "cpu_percent", "cpu_user_s",
                         "cpu_sys_s", "cpu_machine_percent", "rss_peak_bytes", "rss_end_bytes",
                         "rss_base_bytes", "loops", "workers" }) do
        local v = 0
        for _, s in ipairs(list) do v = v + num(s[k]) end
        out[k] = v
    end
    local served = 0
    for _, s in ipairs(list) do
        if num(s.served_s) > served then served = s.served_s end
    end
    out.served_s = served
    out.errors = sum_table(list, "errors") or {}
    out.local_errors = sum_table(list, "local_errors") or {}
    local reasons = {}
    for _, s in ipairs(list) do
        for k, v in pairs(type(s.error_reasons) == "table" and s.error_reasons or {}) do
            if reasons[k] == nil then reasons[k] = v end
        end
    end
    out.error_reasons = reasons
    out.ok = true
    for i, s in ipairs(list) do
        if s.ok ~= true then
            out.ok = false
            if out.error == nil then out.error = "process " .. i .. ": " .. tostring(s.error) end
        end
    end
    return out
end

return _M
