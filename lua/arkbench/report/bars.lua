-- arkbench.report.bars: a latency histogram drawn in text, oha-style, for
-- the one-liner's summary (docs/one-liner.md, "The summary").
--
--   bars.buckets(enc) -> { { lo_ns, hi_ns, n }, ... } | nil, why
--       the non-empty buckets of an encoded histogram (core.hist_merge's
--       "ab1:" form; core/base/histogram.h): value range [lo, hi) and count;
--       values past the last bucket (overflow) come last as [max, max + 1).
--   bars.bins(enc, nbins) -> { { lo_us, hi_us, n }, ... } | nil, why
--       the histogram regrouped into nbins (default 10) ranges of equal
--       ratio from its min to its max (latency spreads over decades); a
--       bucket goes into the bin that holds its midpoint, so the counts add
--       up to the histogram's count exactly.
--   bars.lines(enc[, opts]) -> { line, ... } | nil, why
--       "  1.23ms [  1234] |■■■■■■", one per bin (the bin's upper edge, its
--       count, a bar scaled to the largest bin); opts.width (bar columns,
--       default 40), opts.bins, opts.ascii (# instead of ■).

local type, tonumber, ipairs = type, tonumber, ipairs
local format, rep, floor, max = string.format, string.rep, math.floor, math.max

local _M = {}

-- bucket i -> its value range in ns (histogram.h's ab_hist_index, inverted)
local function range(i)
    if i < 128 then return i, i + 1 end
    local k = i - 128
    local shift = floor(k / 64) + 1
    local sub = k % 64 + 64
    return sub * 2 ^ shift, (sub + 1) * 2 ^ shift
end

function _M.buckets(enc)
    if type(enc) ~= "string" then return nil, "no histogram" end
    local count, mn, mx, over, list = enc:match("^ab1:(%d+):(%d+):(%d+):(%d+):%x*:%x*:?(.*)$")
    if not count then return nil, "not an ab1 histogram" end
    local out, idx = {}, 0
    for d, n in list:gmatch("(%d+)=(%d+)") do
        idx = idx + tonumber(d)
        local lo, hi = range(idx)
        out[#out + 1] = { lo, hi, tonumber(n) }
    end
    if tonumber(over) > 0 then
        out[#out + 1] = { tonumber(mx), tonumber(mx) + 1, tonumber(over) }
    end
    return out, nil, tonumber(mn), tonumber(mx), tonumber(count)
end

function _M.bins(enc, nbins)
    nbins = nbins or 10
    local b, why, mn, mx, count = _M.buckets(enc)
    if not b then return nil, why end
    if count == 0 or #b == 0 then return nil, "the histogram is empty" end
    local lo, hi = max(mn, 1), max(mx, 1)
    if hi <= lo then hi = lo + 1 end
    local ratio = (hi / lo) ^ (1 / nbins)
    local out = {}
    for k = 1, nbins do
        out[k] = { lo * ratio ^ (k - 1) / 1000, lo * ratio ^ k / 1000, 0 }
    end
    for _, x in ipairs(b) do
        -- the midpoint, clamped into [min, max] as percentiles are
        local mid = (x[1] + x[2]) / 2
        if mid < lo then mid = lo elseif mid > hi then mid = hi end
        local k = floor(math.log(mid / lo) / math.log(ratio)) + 1
        if k < 1 then k = 1 elseif k > nbins then k = nbins end
        out[k][3] = out[k][3] + x[3]
    end
    return out
end

local function dur(us)
    if us >= 1e6 then return format("%.2fs", us / 1e6) end
    if us >= 1e3 then return format("%.2fms", us / 1e3) end
    return format("%.1fus", us)
end

function _M.lines(enc, opts)
    opts = opts or {}
    local bins, why = _M.bins(enc, opts.bins)
    if not bins then return nil, why end
    local width = opts.width or 40
    local mark = opts.ascii and "#" or "■"
    local top, cw = 0, 1
    for _, x in ipairs(bins) do
        if x[3] > top then top = x[3] end
        if #tostring(x[3]) > cw then cw = #tostring(x[3]) end
    end
    local out = {}
    for _, x in ipairs(bins) do
        local n = top > 0 and floor(x[3] / top * width + 0.5) or 0
        if n == 0 and x[3] > 0 then n = 1 end -- a bin with any value shows
        out[#out + 1] = format("  %9s [%" .. cw .. "d] |%s", dur(x[2]), x[3], rep(mark, n))
    end
    return out
end

return _M
