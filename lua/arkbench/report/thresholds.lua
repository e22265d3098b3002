-- arkbench.report.thresholds: pass/fail rules over a case's summary
-- (docs/scenarios.md, "thresholds"; k6's thresholds).
--
--   thresholds.parse(text) -> rule | nil, why
--       text: "METRIC OP NUMBER" (OP one of < <= > >= == !=; NUMBER as Lua
--       reads it: 1000, 0.001, 1e9) or a boolean metric alone ("rate_met").
--       rule = { text, metric, op, value } (op nil for a boolean metric).
--   thresholds.check(summary, rules) -> { result, ... }
--       one result per case x rule: { case_id, rule = text, value, crossed,
--       why }; value is the case's number (nil without one).
--   thresholds.crossed(results) -> the crossed results alone
--   thresholds.format(results) -> text lines of the crossed ones ("" if none)
--   thresholds.value(case, metric) -> number | boolean | nil
--   thresholds.METRICS, thresholds.ALIASES, thresholds.BOOLEAN
--
-- A number metric is the case's median over its ok repetitions (summary
-- cases[i].metrics.<name>.median). rate_met holds when every ok repetition
-- met its rate. A rule whose metric has no value in a case (no ok run, or a
-- closed-loop run asked for an open-loop field) is crossed: a gate that
-- cannot be evaluated never passes silently.

local stats = require("arkbench.report.stats")

local type, ipairs, pairs, tostring, tonumber = type, ipairs, pairs, tostring, tonumber
local format = string.format
local concat, sort = table.concat, table.sort

local _M = {}

-- Short names for the RTT percentiles: the corrected view in open loop.
_M.ALIASES = {
    min_us = "rtt_min_us", p50_us = "rtt_p50_us", p90_us = "rtt_p90_us",
    p95_us = "rtt_p95_us", p99_us = "rtt_p99_us", p999_us = "rtt_p999_us",
    max_us = "rtt_max_us", mean_us = "rtt_mean_us",
}
_M.BOOLEAN = { rate_met = true }

local KNOWN = {}
for _, m in ipairs(stats.METRICS) do KNOWN[m] = true end

-- every name a rule may use, sorted (for messages)
_M.METRICS = {}
for m in pairs(KNOWN) do _M.METRICS[#_M.METRICS + 1] = m end
for m in pairs(_M.ALIASES) do _M.METRICS[#_M.METRICS + 1] = m end
for m in pairs(_M.BOOLEAN) do _M.METRICS[#_M.METRICS + 1] = m end
sort(_M.METRICS)

local OPS = {
    ["<"] = function(a, b) return a < b end, ["<="] = function(a, b) return a <= b end,
    [">"] = function(a, b) return a > b end, [">="] = function(a, b) return a >= b end,
    ["=="] = function(a, b) return a == b end, ["!="] = function(a, b) return a ~= b end,
}

local EXPECTED = 'expected "METRIC OP NUMBER" (OP one of < <= > >= == !=), e.g. "p99_us < 1000",'
    .. ' or a boolean metric alone ("rate_met")'

local function known(name)
    return KNOWN[name] or _M.ALIASES[name] ~= nil or _M.BOOLEAN[name]
end

-- The nearest known names (same prefix or contained), for "did you mean".
local function near(name)
    local out = {}
    local stem = name:gsub("_us$", ""):gsub("^rtt_", "")
    for _, m in ipairs(_M.METRICS) do
        if #stem >= 2 and m:find(stem, 1, true) then out[#out + 1] = m end
        if #out == 4 then break end
    end
    return out
end

function _M.parse(text)
    if type(text) ~= "string" then
        return nil, "got a " .. type(text) .. "; " .. EXPECTED
    end
    local s = text:match("^%s*(.-)%s*$")
    local name = s:match("^([%a_][%w_]*)$")
    if name then
        if _M.BOOLEAN[name] then return { text = s, metric = name } end
        if known(name) then
            return nil, format('"%s": %s is a number; expected a comparison, e.g. "%s < 1000"', s, name, name)
        end
    else
        local op, v
        name, op, v = s:match("^([%a_][%w_]*)%s*([<>=!]+)%s*(%S+)$")
        if not name then return nil, format('"%s": %s', text, EXPECTED) end
        if not OPS[op] then
            return nil, format('"%s": unknown operator "%s"; expected one of < <= > >= == !=', s, op)
        end
        local n = tonumber(v)
        if not n or n ~= n or n == math.huge or n == -math.huge then
            return nil, format('"%s": "%s" is not a finite number', s, v)
        end
        if _M.BOOLEAN[name] then
            return nil, format('"%s": %s is true or false; write it alone, without a comparison', s, name)
        end
        if known(name) then return { text = s, metric = name, op = op, value = n } end
    end
    local hint = near(name)
    return nil, format('"%s": unknown metric "%s"%s; known metrics: %s', s, name,
        #hint > 0 and ("; did you mean " .. concat(hint, ", ") .. "?") or "",
        "p50_us, p90_us, p95_us, p99_us, p999_us, max_us, error_rate, rate_met, round_trips_per_s,"
        .. " and every summary metric (docs/scenarios.md)")
end

function _M.value(c, metric)
    if type(c) ~= "table" then return nil end
    if _M.BOOLEAN[metric] then
        local n = tonumber(c.rate_runs)
        if not n or n == 0 then return nil end
        return (tonumber(c.rate_missed) or 0) == 0 and (tonumber(c.runs_ok) or 0) > 0
    end
    local name = _M.ALIASES[metric] or metric
    local m = type(c.metrics) == "table" and c.metrics[name]
    if type(m) ~= "table" then return nil end
    local v = m.median
    if type(v) == "number" and v == v then return v end
    return nil
end

local function shown(v)
    if type(v) == "boolean" then return tostring(v) end
    if type(v) ~= "number" then return "-" end
    return format("%.6g", v)
end

function _M.check(summary, rules)
    local out = {}
    local cases = type(summary) == "table" and type(summary.cases) == "table" and summary.cases or {}
    for _, c in ipairs(cases) do
        for _, r in ipairs(rules or {}) do
            local v = _M.value(c, r.metric)
            local res = { case_id = c.case_id, rule = r.text, value = v }
            if v == nil then
                res.crossed = true
                if (tonumber(c.runs_ok) or 0) == 0 then
                    res.why = "no ok run"
                elseif _M.BOOLEAN[r.metric] then
                    res.why = "no run reports " .. r.metric .. " (closed loop has no rate)"
                else
                    res.why = "no value for " .. r.metric
                end
            elseif r.op then
                res.crossed = not OPS[r.op](v, r.value)
                res.why = format("%s = %s", r.metric, shown(v))
            else
                res.crossed = v ~= true
                res.why = v and "every ok run met its rate"
                    or format("%d of %d ok runs missed their rate", tonumber(c.rate_missed) or 0,
                              tonumber(c.rate_runs) or 0)
            end
            out[#out + 1] = res
        end
    end
    return out
end

function _M.crossed(results)
    local out = {}
    for _, r in ipairs(results or {}) do
        if r.crossed then out[#out + 1] = r end
    end
    return out
end

function _M.format(results)
    local lines = {}
    for _, r in ipairs(_M.crossed(results)) do
        lines[#lines + 1] = format("threshold crossed: %s: \"%s\" (%s)", tostring(r.case_id), r.rule, r.why)
    end
    return #lines > 0 and (concat(lines, "\n") .. "\n") or ""
end

-- A threshold list from a scenario key or the command line -> rules | nil,
-- { why, ... } (one message per bad element, "element i: ...").
function _M.parse_list(list)
    local rules, errs = {}, {}
    for i, text in ipairs(list) do
        local r, why = _M.parse(text)
        if r then rules[#rules + 1] = r else errs[#errs + 1] = format("element %d: %s", i, why) end
    end
    if #errs > 0 then return nil, errs end
    return rules
end

return _M
