-- arkbench.run.bisect: the highest rate that passes a probe, by bisection
-- on a log scale (rates span orders of magnitude; docs/load-models.md,
-- "SLO search").
--
--   bisect.search(o) -> result
--       o = { from = R0, to = R1 (0 < R0 < R1), probes = N (>= 2),
--             tolerance = fraction (default 0.05: stop when to/from <= 1.05),
--             probe = function(rate, k) -> pass (boolean), info (any) }
--       result = { probes = { { rate, pass, info }, ... },
--                  answer = highest passing rate probed | nil,
--                  bracket = { lo, hi } (hi nil when `to` passed),
--                  reason = "converged" | "probes" | "none passes" | "all pass" |
--                           "stopped" }
--   bisect.round(rate) -> rate rounded to 3 significant digits (>= 1)
--
-- Order: R0 first (nothing passes -> stop), then R1 (passes -> the answer is
-- R1, the range was too low), then the geometric mean of the bracket until
-- it is within the tolerance or the probes run out. A probe that returns
-- nil as its pass value stops the search (Ctrl-C, a run object that could
-- not be saved: reason "stopped"); that probe is not in `probes` (it was
-- not measured, so it neither passed nor failed).

local sqrt, floor, log10 = math.sqrt, math.floor, math.log10
local type, error = type, error

local _M = {}

function _M.round(rate)
    if rate < 1 then return rate end
    local mag = 10 ^ (floor(log10(rate)) - 2)
    return floor(rate / mag + 0.5) * mag
end

function _M.search(o)
    if type(o) ~= "table" or type(o.probe) ~= "function" then
        error("bisect.search: expected { from, to, probes, probe = function }", 2)
    end
    local lo, hi, max_probes = o.from, o.to, o.probes or 10
    if not (type(lo) == "number" and type(hi) == "number" and lo > 0 and hi > lo) then
        error("bisect.search: expected 0 < from < to", 2)
    end
    if max_probes < 2 then error("bisect.search: probes must be >= 2", 2) end
    local tol = o.tolerance or 0.05
    local res = { probes = {} }
    local function probe(rate)
        local pass, info = o.probe(rate, #res.probes + 1)
        if pass == nil then return nil end
        res.probes[#res.probes + 1] = { rate = rate, pass = pass == true, info = info }
        return pass
    end

    local p = probe(lo)
    if p == nil then res.reason = "stopped"; return res end
    if not p then
        res.reason = "none passes"
        res.bracket = { nil, lo }
        return res
    end
    res.answer = lo
    p = probe(hi)
    if p == nil then res.reason = "stopped"; res.bracket = { lo, nil }; return res end
    if p then
        res.answer = hi
        res.reason = "all pass"
        res.bracket = { hi, nil }
        return res
    end
    while true do
        if hi / lo <= 1 + tol then res.reason = "converged" break end
        if #res.probes >= max_probes then res.reason = "probes" break end
        local mid = _M.round(sqrt(lo * hi))
        if mid <= lo or mid >= hi then mid = sqrt(lo * hi) end
        p = probe(mid)
        if p == nil then res.reason = "stopped" break end
        if p then lo = mid; res.answer = mid else hi = mid end
    end
    res.bracket = { lo, hi }
    return res
end

return _M
