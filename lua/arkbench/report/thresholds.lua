-- arkbench.report.thresholds: thresholds checked over a case's summary
-- (docs/load-models.md, "Thresholds"); the rule language is
-- arkbench.scenario.rules (parse, parse_list, ALIASES, BOOLEAN, METRICS are
-- its, re-exported here).
--
--   thresholds.check(summary, rules) -> { result, ... }
--       one result per case x rule: { case_id, rule = text, value, crossed,
--       why }; value is the case's number (nil without one).
--   thresholds.crossed(results) -> the crossed results alone
--   thresholds.format(results) -> text lines of the crossed ones ("" if none)
--   thresholds.value(case, metric[, tag]) -> number | boolean | nil
--   thresholds.tag_value(case, tag, metric) -> number | nil
--
-- A number metric is the case's median over its ok repetitions (summary
-- cases[i].metrics.<name>.median); a {tag=NAME} rule's is the tag's
-- (thresholds.tag_value). rate_met holds when every ok repetition
-- met its rate. A rule whose metric has no value in a case (no ok run, or a
-- closed-loop run asked for an open-loop field) is crossed: a gate that
-- cannot be evaluated never passes silently.

local rules = require("arkbench.scenario.rules")

local type, ipairs, tostring, tonumber = type, ipairs, tostring, tonumber
local format = string.format
local concat = table.concat

local _M = {}

_M.parse, _M.parse_list = rules.parse, rules.parse_list
_M.ALIASES, _M.BOOLEAN, _M.METRICS = rules.ALIASES, rules.BOOLEAN, rules.METRICS

local OPS = {
    ["<"] = function(a, b) return a < b end, ["<="] = function(a, b) return a <= b end,
    [">"] = function(a, b) return a > b end, [">="] = function(a, b) return a >= b end,
    ["=="] = function(a, b) return a == b end, ["!="] = function(a, b) return a ~= b end,
}

-- One tag's value (rules.TAG_METRICS) from the case's tag summary
-- (report/tags.lua): counts summed over the measured runs, the rate their
-- median, the latency from the merged histogram, error_rate
-- (errors + non_success) / sent.
function _M.tag_value(c, tag, metric)
    if type(c) ~= "table" or type(c.tags) ~= "table" then return nil end
    local t
    for _, x in ipairs(c.tags) do
        if type(x) == "table" and x.tag == tag then t = x end
    end
    if not t then return nil end
    local name = _M.ALIASES[metric] or metric
    local v
    if name == "round_trips_per_s" then
        v = type(t.round_trips_per_s) == "table" and t.round_trips_per_s.median or nil
    elseif name == "error_rate" then
        local sent = tonumber(t.sent)
        if sent and sent > 0 then v = ((tonumber(t.errors) or 0) + (tonumber(t.non_success) or 0)) / sent end
    elseif name:match("^rtt_.*_us$") then
        local r = type(t.rtt_merged_us) == "table" and t.rtt_merged_us or {}
        v = r[name:match("^rtt_(.*)_us$")]
    else
        v = t[name]
    end
    if type(v) == "number" and v == v then return v end
    return nil
end

function _M.value(c, metric, tag)
    if type(c) ~= "table" then return nil end
    if tag then return _M.tag_value(c, tag, metric) end
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

-- a latency rule crossed on a case with generator-bound runs says so: the
-- corrected latency includes the generator's own lag (report/openloop.lua)
local function generator_note(c, r, res)
    local n = tonumber(c.generator_bound_runs) or 0
    if not res.crossed or n == 0 or type(r.metric) ~= "string" or not r.metric:find("_us$") then
        return
    end
    res.generator_bound = true
    res.why = format("%s; generator-bound in %d of %d ok runs: the load generator fell behind and"
        .. " the latency includes it", res.why or "", n, tonumber(c.runs_ok) or 0)
end

function _M.check(summary, rules)
    local out = {}
    local cases = type(summary) == "table" and type(summary.cases) == "table" and summary.cases or {}
    for _, c in ipairs(cases) do
        for _, r in ipairs(rules or {}) do
            local v = _M.value(c, r.metric, r.tag)
            local res = { case_id = c.case_id, rule = r.text, value = v, tag = r.tag }
            if v == nil then
                res.crossed = true
                if (tonumber(c.runs_ok) or 0) == 0 then
                    res.why = "no ok run"
                elseif r.tag then
                    res.why = format("no value for %s of tag '%s' (no message had that tag?)", r.metric,
                                     r.tag)
                elseif _M.BOOLEAN[r.metric] then
                    res.why = "no run reports " .. r.metric .. " (closed loop has no rate)"
                else
                    res.why = "no value for " .. r.metric
                end
            elseif r.op then
                res.crossed = not OPS[r.op](v, r.value)
                res.why = format("%s%s = %s", r.metric, r.tag and ("{tag=" .. r.tag .. "}") or "",
                                 shown(v))
            else
                res.crossed = v ~= true
                res.why = v and "every ok run met its rate"
                    or format("%d of %d ok runs missed their rate", tonumber(c.rate_missed) or 0,
                              tonumber(c.rate_runs) or 0)
            end
            generator_note(c, r, res)
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

return _M
