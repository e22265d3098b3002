-- arkbench.scenario.rules: the threshold rule language (docs/load-models.md,
-- "Thresholds"; k6's thresholds), parsed where scenarios are checked; the
-- checks over a summary are arkbench.report.thresholds.
--
--   rules.parse(text) -> rule | nil, why
--       text: "METRIC OP NUMBER" (OP one of < <= > >= == !=; NUMBER as Lua
--       reads it: 1000, 0.001, 1e9) or a boolean metric alone ("rate_met").
--       METRIC{tag=NAME} names one tag's value (a TAG_METRICS name):
--       "p99_us{tag=get} < 500".
--       rule = { text, metric, op, value, tag } (op nil for a boolean
--       metric, tag nil for the case's own value).
--   rules.TAG_METRICS: the names a {tag=...} rule may use
--   rules.parse_list(list) -> rules | nil, { "element i: why", ... }
--   rules.NAMES: the summary metrics a rule may name (report/stats.lua
--       METRICS: spec/unit/thresholds_spec.lua checks they are the same)
--   rules.ALIASES (p99_us -> rtt_p99_us, ...), rules.BOOLEAN, rules.METRICS
--       (every name a rule may use, sorted)

local type, ipairs, pairs, tonumber = type, ipairs, pairs, tonumber
local format = string.format
local concat, sort = table.concat, table.sort

local _M = {}

_M.NAMES = {
    "round_trips_per_s", "payload_mib_per_s", "cpu_percent", "cpu_user_s", "cpu_sys_s",
    "cpu_machine_percent", "rss_peak_bytes", "rss_end_bytes", "sent", "completed", "drained",
    "timed_out", "message_errors", "unfinished", "rtt_min_us", "rtt_p50_us", "rtt_p90_us",
    "rtt_p95_us", "rtt_p99_us", "rtt_p999_us", "rtt_max_us", "rtt_mean_us", "rtt_stdev_us",
    "rtt_count", "connect_p50_us", "connect_p99_us", "rate_asked", "rate_achieved", "unsent",
    "rtt_raw_p50_us", "rtt_raw_p99_us", "rtt_raw_p999_us", "rtt_raw_max_us", "send_lag_p50_us",
    "send_lag_p99_us", "send_lag_max_us", "connections_per_s", "connections_opened",
    "tls_handshakes", "tls_resumed", "handshake_p50_us", "handshake_p99_us", "error_rate",
    "non_success", "bytes_sent", "bytes_received", "transfer_mib_per_s",
}

-- per tag (report/tags.lua's summary of a case's tags)
_M.TAG_METRICS = {
    "round_trips_per_s", "sent", "completed", "drained", "errors", "non_success", "error_rate",
    "rtt_min_us", "rtt_p50_us", "rtt_p90_us", "rtt_p95_us", "rtt_p99_us", "rtt_p999_us",
    "rtt_max_us", "rtt_mean_us",
}
local TAG_KNOWN = {}
for _, m in ipairs(_M.TAG_METRICS) do TAG_KNOWN[m] = true end

-- Short names for the RTT percentiles: the corrected view in open loop.
_M.ALIASES = {
    min_us = "rtt_min_us", p50_us = "rtt_p50_us", p90_us = "rtt_p90_us",
    p95_us = "rtt_p95_us", p99_us = "rtt_p99_us", p999_us = "rtt_p999_us",
    max_us = "rtt_max_us", mean_us = "rtt_mean_us",
}
_M.BOOLEAN = { rate_met = true }

local KNOWN = {}
for _, m in ipairs(_M.NAMES) do KNOWN[m] = true end

-- every name a rule may use, sorted (for messages)
_M.METRICS = {}
for m in pairs(KNOWN) do _M.METRICS[#_M.METRICS + 1] = m end
for m in pairs(_M.ALIASES) do _M.METRICS[#_M.METRICS + 1] = m end
for m in pairs(_M.BOOLEAN) do _M.METRICS[#_M.METRICS + 1] = m end
sort(_M.METRICS)

-- the operators (report/thresholds.lua evaluates them)
local OPS = { ["<"] = true, ["<="] = true, [">"] = true, [">="] = true, ["=="] = true, ["!="] = true }

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

local parse_plain

function _M.parse(text)
    if type(text) ~= "string" then
        return nil, "got a " .. type(text) .. "; " .. EXPECTED
    end
    local s = text:match("^%s*(.-)%s*$")
    -- METRIC{tag=NAME} ...: the same rule over one tag's numbers
    local head, sel, tail = s:match("^([%a_][%w_]*)%s*(%b{})(.*)$")
    if not head then return parse_plain(s, text) end
    local tag = sel:match("^{%s*tag%s*=%s*\"?([^\"{}=,]-)\"?%s*}$")
    if not tag or tag == "" then
        return nil, format('"%s": %s: expected {tag=NAME}, e.g. "p99_us{tag=get} < 500"', s, sel)
    end
    local r, why = parse_plain(head .. tail, text)
    if not r then return nil, why end
    local name = _M.ALIASES[r.metric] or r.metric
    if not TAG_KNOWN[name] then
        return nil, format('"%s": %s is not kept per tag; a {tag=...} rule takes one of %s', s,
            r.metric, "p50_us, p90_us, p95_us, p99_us, p999_us, max_us, mean_us, min_us, "
            .. concat(_M.TAG_METRICS, ", ", 1, 7))
    end
    r.text, r.tag = s, tag
    return r
end

parse_plain = function(s, text)
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
