-- hgrm.lua -- HdrHistogram percentile distributions (`.hgrm`, the text
-- that HdrHistogram's outputPercentileDistribution, its plotter and wrk2
-- use) of a case's merged RTT histogram: docs/reports.md, "Exports".
--
--   hgrm.levels(count) -> { pct, ... }
--       the percentile levels (0..100) a distribution of `count` values is
--       printed at: HdrHistogram's iteration with 5 ticks per half distance
--       (0, 10, .. 50, 55, .. 75, 77.5, ..), until the last value's rank,
--       then 100.
--   hgrm.text(enc) -> text | nil, err
--       the distribution of one encoded histogram (core.hist_merge's
--       "ab1:" form), values in microseconds; nil, err for an empty or bad
--       encoding.
--   hgrm.write(dir, runs, summary) -> paths | nil, err
--       writes DIR/hgrm/<case>.rtt_us.hgrm (and .rtt_raw_us.hgrm for open
--       loop) per case, and DIR/hgrm/<case>.tag=<tag>.rtt_us.hgrm per tag
--       of a tagged case, from the runs the summary counts (stats.counted).
--
-- Columns: Value (µs, the nearest-rank percentile of core.hist_percentile,
-- the same numbers the run object and summary report), Percentile (a
-- fraction), TotalCount (the rank of that percentile: ceil(p * count)),
-- 1/(1-Percentile); the last line (percentile 1) has no fourth column.
-- Footer: mean, standard deviation, max, count, and the histogram's shape
-- (32 power-of-two ranges of 128 sub-buckets; core/base/histogram.h).

local core = require("arkbench.core")
local stats = require("arkbench.report.stats")

local type, ipairs, tostring = type, ipairs, tostring
local format, concat = string.format, table.concat
local floor, ceil, log = math.floor, math.ceil, math.log

local _M = {}

local TICKS_PER_HALF = 5
-- enough for any count a histogram can hold (levels halve their distance
-- to 100 every 2 * TICKS_PER_HALF lines)
local MAX_LEVELS = 2000

local function rank(pct, count)
    local r = ceil(pct / 100 * count - 1e-9)
    return r < 1 and 1 or r > count and count or r
end

function _M.levels(count)
    local out = {}
    local level = 0
    while #out < MAX_LEVELS do
        out[#out + 1] = level
        if rank(level, count) >= count then break end
        local halvings = floor(log(100 / (100 - level)) / log(2) + 1e-9)
        local ticks = TICKS_PER_HALF * 2 ^ (halvings + 1)
        level = level + 100 / ticks
        if level >= 100 then break end
    end
    if out[#out] ~= 100 then out[#out + 1] = 100 end
    return out
end

function _M.text(enc)
    local s, err = core.hist_summary(enc)
    if not s then return nil, err end
    if (s.count or 0) == 0 then return nil, "the histogram is empty" end
    local lines = { format("%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount",
        "1/(1-Percentile)") }
    for _, pct in ipairs(_M.levels(s.count)) do
        local v, perr = core.hist_percentile(enc, pct)
        if not v then return nil, perr end
        local p = pct / 100
        if pct < 100 then
            lines[#lines + 1] = format("%12.3f %2.12f %10d %14.2f\n", v, p, rank(pct, s.count), 1 / (1 - p))
        else
            lines[#lines + 1] = format("%12.3f %2.12f %10d\n", v, p, s.count)
        end
    end
    lines[#lines + 1] = format("#[Mean    = %12.3f, StdDeviation   = %12.3f]\n", s.mean or 0, s.stdev or 0)
    lines[#lines + 1] = format("#[Max     = %12.3f, Total count    = %12d]\n", s.max or 0, s.count)
    lines[#lines + 1] = format("#[Buckets = %12d, SubBuckets     = %12d]\n", 32, 128)
    return concat(lines)
end

-- A file name from a case id: letters, digits and = . - kept, the rest _.
function _M.slug(id)
    local s = tostring(id):gsub("[^%w=%.%-]", "_")
    if #s > 96 then s = s:sub(1, 84) .. "-" .. core.sha256(tostring(id)):sub(1, 11) end
    return s
end

local FIELDS = { { "rtt_histogram", "rtt_us" }, { "rtt_raw_histogram", "rtt_raw_us" } }

-- The merged distribution of encs written to path (nothing for no
-- histogram or an empty one) -> true | nil, err
local function write_one(path, encs, paths)
    if #encs == 0 then return true end
    local enc, merr = core.hist_merge(encs)
    if not enc then return nil, path .. ": " .. tostring(merr) end
    local text = _M.text(enc)
    if not text then return true end
    local wok, werr = core.write_file(path, text)
    if not wok then return nil, path .. ": " .. tostring(werr) end
    paths[#paths + 1] = path
    return true
end

-- "<case>.tag=<tag>" per tag of the case (summary order), the tag made a
-- file name like a case id; two tags that would get the same name get
-- -2, -3...
local function tag_stems(c)
    local out, used = {}, {}
    for _, t in ipairs(type(c.tags) == "table" and c.tags or {}) do
        if type(t) == "table" and type(t.tag) == "string" then
            local stem = _M.slug(c.case_id) .. ".tag=" .. t.tag:gsub("[^%w=%.%-]", "_")
            local name, n = stem, 1
            while used[name] do n = n + 1; name = stem .. "-" .. n end
            used[name] = true
            out[#out + 1] = { tag = t.tag, stem = name }
        end
    end
    return out
end
_M.tag_stems = tag_stems

function _M.write(dir, runs, summary)
    local by_case = {}
    for _, r in ipairs(runs) do
        if stats.counted(r) and type(r.case_id) == "string" then
            by_case[r.case_id] = by_case[r.case_id] or {}
            local l = by_case[r.case_id]
            l[#l + 1] = r
        end
    end
    local sub = dir .. "/hgrm"
    local made, err, code = core.mkdir(sub)
    if not made and code ~= "EEXIST" then return nil, sub .. ": " .. tostring(err) end
    local paths = {}
    for _, c in ipairs(summary.cases or {}) do
        local counted = by_case[c.case_id] or {}
        for _, f in ipairs(FIELDS) do
            local encs = {}
            for _, r in ipairs(counted) do
                if type(r[f[1]]) == "string" then encs[#encs + 1] = r[f[1]] end
            end
            local ok, werr = write_one(sub .. "/" .. _M.slug(c.case_id) .. "." .. f[2] .. ".hgrm", encs, paths)
            if not ok then return nil, werr end
        end
        -- per tag: the same runs' histograms of that tag (the summary's
        -- cases[i].tags[j].rtt_merged_us)
        for _, ts in ipairs(tag_stems(c)) do
            local encs = {}
            for _, r in ipairs(counted) do
                local t = type(r.tags) == "table" and r.tags[ts.tag]
                if type(t) == "table" and type(t.rtt_histogram) == "string" then
                    encs[#encs + 1] = t.rtt_histogram
                end
            end
            local ok, werr = write_one(sub .. "/" .. ts.stem .. ".rtt_us.hgrm", encs, paths)
            if not ok then return nil, werr end
        end
    end
    return paths
end

return _M
