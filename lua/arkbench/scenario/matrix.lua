-- arkbench.scenario.matrix: turn a validated scenario (arkbench.scenario.load) into the
-- list of cases to run, and keep only the cases a --filter asks for.
--
-- A case is a plain table of resolved scalar keys, one value per key, so the
-- runner, the worker and the reports never look at lists again.
--
-- Order: the cartesian product of the axes, the first axis of AXES varying
-- slowest. `load` pairs are one axis: {clients=16, window=16} stays together.
--
-- Decision (topology vs clients): `sharded:N` puts connection i on loop
-- i mod N. With fewer clients than loops (the reference matrix crosses
-- 1 client x window 1 with sharded:2 and sharded:4) the case still runs as
-- configured: the load (clients x window) is never changed, the surplus
-- loops run idle, and every run records `connections_per_loop` and a note
-- ("3 of 4 loops have no connection"). The reference suite behaves the same
-- way (its extra contexts idle). `expand` keeps the `dropped` result for
-- cases that cannot run at all; none are dropped today.
--
-- Errors in user input (filters) are returned as `nil, message`; misuse of
-- this API raises.

local type, ipairs, pairs, tostring, tonumber, error = type, ipairs, pairs, tostring, tonumber, error
local id_text -- (c, key) -> the text of a case key in an id, or nil
local unit_match
local str_match, str_format = string.match, string.format
local tbl_concat = table.concat

local vars = require("arkbench.scenario.vars")

local _M = {}

-- Canonical axis order: the order of expansion (first varies slowest) and of
-- the keys in a case_id. `target` may be a list (one server per
-- case), so it comes last.
_M.AXES = {
    "protocol", "framing", "payload", "load", "clients", "window", "topology",
    "execution", "work", "rate", "rate_precision", "requests_per_connection", "connect_rate",
    "warmup", "duration", "timeout", "placement", "processes", "target",
}

-- Keys of a resolved case that --filter may name.
local FILTER_KEYS = {
    "name", "label", "protocol", "framing", "payload", "clients", "window", "topology",
    "execution", "work", "warmup", "duration", "repetitions", "rate", "rate_precision",
    "requests_per_connection", "connect_rate", "timeout", "connect_timeout", "placement", "processes", "target",
}
local IS_FILTER_KEY = {}
for _, k in ipairs(FILTER_KEYS) do IS_FILTER_KEY[k] = true end

-- topology models and their thread limits: the capability table
-- (core/proto/caps.h)
local CAPS = require("arkbench.core").capabilities()
local MODELS = {}
for _, m in ipairs(CAPS.models) do MODELS[m] = true end
local THREADS_MIN, THREADS_MAX = CAPS.limits.threads_min, CAPS.limits.threads_max

-- "sharded:4" -> "sharded", 4. Anything else (user input) -> nil.
function _M.topology(str)
    if type(str) ~= "string" then return nil end
    local model, n = str_match(str, "^(%l+):([1-9]%d*)$")
    if not MODELS[model] then return nil end
    n = tonumber(n)
    if n < THREADS_MIN or n > THREADS_MAX then return nil end
    return model, n
end

-- Why a case cannot run, or nil. (Nothing is refused per case today; see
-- the decision above.)
local function conflict(case)
    local _ = case
    return nil
end

-- Loops of a sharded case that get no connection (0 for shared, or when
-- clients >= loops).
function _M.idle_loops(case)
    local model, n = _M.topology(case.topology)
    if model == "sharded" and case.clients < n then return n - case.clients end
    return 0
end

local function values_of(v)
    if type(v) == "table" then return v end
    return { v }
end

-- spec (from scenario.load) -> cases, dropped
-- dropped: list of { case = <case without index>, reason = "..." }, in
-- matrix order.
local expand_one

-- Cases at most in one scenario (all its parts): loading refuses more.
_M.MAX_CASES = 100000

-- Cases expand would make of spec (a number, possibly huge, without making
-- them): the product of the axis lengths, summed over the parts.
function _M.count(spec)
    local total = 0
    for _, part in ipairs(spec.parts or { spec }) do
        local n = 1
        for _, k in ipairs(_M.AXES) do
            local v = part.keys[k]
            if type(v) == "table" and k ~= "load" then n = n * math.max(#v, 1)
            elseif k == "load" and type(v) == "table" and type(v[1]) == "table" then n = n * #v end
        end
        total = total + n * vars.count(part.keys.vars)
    end
    return total
end

-- The keys that name a case of a scenario with several parts, in order:
-- those that vary between the parts' cases go into the id. The tables
-- (tls, udp) count by their text (`tls.version=1.2`).
_M.ID_KEYS = { "label", "protocol", "framing", "payload", "clients", "window", "topology",
               "execution", "work", "rate", "rate_precision", "requests_per_connection", "connect_rate", "warmup",
               "duration", "placement", "processes", "target" }
-- and, only when parts would otherwise share an id, these
_M.MORE_ID_KEYS = { "timeout", "interval", "coroutine_stack", "tls", "udp", "h2" }

local function sorted_pairs_text(t)
    local keys = {}
    for k in pairs(t) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    local out = {}
    for _, k in ipairs(keys) do
        local v = t[k]
        if type(v) == "table" then v = tbl_concat(v, ",") end
        out[#out + 1] = k .. ":" .. tostring(v)
    end
    return "{" .. tbl_concat(out, ",") .. "}"
end

id_text = function(c, k)
    local v = c[k]
    if v == nil then return nil end
    if type(v) == "table" then return sorted_pairs_text(v) end
    return tostring(v)
end

-- Sets each case's case_id from the keys (in order) whose text varies
-- between the cases; a key a part leaves out is left out of its ids.
local function name_cases(all, keys)
    local varies = {}
    for _, k in ipairs(keys) do
        local first = id_text(all[1], k)
        for i = 2, #all do
            if id_text(all[i], k) ~= first then varies[k] = true break end
        end
    end
    for _, c in ipairs(all) do
        local id = {}
        for _, k in ipairs(keys) do
            local v = id_text(c, k)
            if varies[k] and v ~= nil then id[#id + 1] = k .. "=" .. v end
        end
        c.case_id = #id > 0 and tbl_concat(id, " ") or "default"
    end
end

function _M.expand(spec)
    if type(spec) ~= "table" or type(spec.keys) ~= "table" then
        error("matrix.expand: expected a spec from scenario.load", 2)
    end
    if not spec.parts or #spec.parts < 2 then return expand_one(spec) end
    -- several parts: concatenate, then name each case by the keys that
    -- vary across all of them, so ids stay unique
    local all = {}
    for _, part in ipairs(spec.parts) do
        local cases = expand_one(part)
        for _, c in ipairs(cases) do c.part = part; all[#all + 1] = c end
    end
    name_cases(all, _M.ID_KEYS)
    vars.name_cases(all)
    -- parts that differ only in a key outside ID_KEYS: name them by it too
    if #_M.duplicate_ids(all) > 0 then
        local keys = {}
        for _, k in ipairs(_M.ID_KEYS) do keys[#keys + 1] = k end
        for _, k in ipairs(_M.MORE_ID_KEYS) do keys[#keys + 1] = k end
        name_cases(all, keys)
        vars.name_cases(all)
    end
    for i, c in ipairs(all) do
        c.index = i
        c.part = nil
    end
    return all, {}
end

-- The case ids of a list of cases that two or more cases share (parts that
-- define the same case): { { id, i, j }, ... }, empty when all differ.
function _M.duplicate_ids(cases)
    local seen, out = {}, {}
    for i, c in ipairs(cases) do
        local first = seen[c.case_id]
        if first then out[#out + 1] = { c.case_id, first, i } else seen[c.case_id] = i end
    end
    return out
end

-- The part's cases times its user axes (keys.vars): each case once per
-- combination, with case.vars and `name=value` in its id for the names that
-- vary.
local function with_vars(keys, cases)
    if not keys.vars then return cases end
    local out = {}
    for _, c in ipairs(cases) do
        for _, combo in ipairs(vars.combinations(keys.vars)) do
            local copy = {}
            for k, v in pairs(c) do copy[k] = v end
            copy.vars = combo
            copy.index = #out + 1
            out[#out + 1] = copy
        end
    end
    vars.name_cases(out)
    return out
end

local expand_base

expand_one = function(spec)
    local cases, dropped = expand_base(spec)
    return with_vars(spec.keys, cases), dropped
end

expand_base = function(spec)
    local keys = spec.keys

    local dims = {}
    for _, key in ipairs(_M.AXES) do
        local v = keys[key]
        if v ~= nil then
            dims[#dims + 1] = { key = key, values = values_of(v) }
        end
    end

    local cases, dropped = {}, {}
    local idx = {}
    for i = 1, #dims do idx[i] = 1 end

    while true do
        local case = {
            name = spec.name or keys.name,
            label = keys.label,
            repetitions = keys.repetitions,
            tls = keys.tls,
            udp = keys.udp,
            h2 = keys.h2,
            request = keys.request,
            interval = keys.interval,
            connect_timeout = keys.connect_timeout,
            coroutine_stack = keys.coroutine_stack,
            max_error_rate = keys.max_error_rate,
            rate_strict = keys.rate_strict,
            strict = keys.strict,
            bind = keys.bind,
        }
        local id = {}
        for i, dim in ipairs(dims) do
            local v = dim.values[idx[i]]
            local varies = #dim.values > 1
            if dim.key == "load" then
                case.clients, case.window = v.clients, v.window
                if varies then
                    id[#id + 1] = "clients=" .. tostring(v.clients)
                    id[#id + 1] = "window=" .. tostring(v.window)
                end
            else
                case[dim.key] = v
                if varies then id[#id + 1] = dim.key .. "=" .. tostring(v) end
            end
        end
        -- timeout's default depends on the protocol (UDP 0.2 s): when the
        -- protocol axis mixes udp and others, scenario leaves it to us.
        if case.timeout == nil then
            case.timeout = case.protocol == "udp" and 0.2 or 2
        end
        case.case_id = #id > 0 and tbl_concat(id, " ") or "default"

        local reason = conflict(case)
        if reason then
            dropped[#dropped + 1] = { case = case, reason = reason }
        else
            case.index = #cases + 1
            cases[#cases + 1] = case
        end

        -- odometer: the last axis turns fastest
        local d = #dims
        while d >= 1 do
            idx[d] = idx[d] + 1
            if idx[d] <= #dims[d].values then break end
            idx[d] = 1
            d = d - 1
        end
        if d < 1 then break end
    end
    return cases, dropped
end

local function suggest_filter_key(word)
    -- the nearest filter key at edit distance 1 or 2, if any
    local best, bestd
    for _, k in ipairs(FILTER_KEYS) do
        local a, b = word, k
        local prev = {}
        for j = 0, #b do prev[j] = j end
        for i = 1, #a do
            local cur = { [0] = i }
            local ca = a:byte(i)
            for j = 1, #b do
                local cost = (ca == b:byte(j)) and 0 or 1
                local v = prev[j - 1] + cost
                if prev[j] + 1 < v then v = prev[j] + 1 end
                if cur[j - 1] + 1 < v then v = cur[j - 1] + 1 end
                cur[j] = v
            end
            prev = cur
        end
        local dist = prev[#b]
        if dist <= 2 and (not bestd or dist < bestd) then best, bestd = k, dist end
    end
    return best
end

local function distinct_values(cases, key)
    local seen, out = {}, {}
    for _, c in ipairs(cases) do
        local v = c[key]
        if v == nil and not IS_FILTER_KEY[key] and c.vars then v = c.vars[key] end
        local s = tostring(v)
        if not seen[s] then
            seen[s] = true
            out[#out + 1] = s
        end
    end
    return tbl_concat(out, ", ")
end

-- cases, { "key=value", ... } -> kept cases | nil, message
-- Same key several times: OR. Different keys: AND. Values compare as
-- strings (tostring(case[key]) == value). Kept cases keep their index.
-- --filter duration=200ms or payload=1KiB: the keys that take units match
-- the resolved number (docs/scenarios.md, Units).
local UNIT_OF = { warmup = "seconds", duration = "seconds", timeout = "seconds", payload = "bytes" }
unit_match = function(key, set, v)
    local conv = UNIT_OF[key]
    if not conv or type(v) ~= "number" then return false end
    local units = require("arkbench.util.units")
    for text in pairs(set) do
        if units[conv](text) == v then return true end
    end
    return false
end

function _M.filter(cases, filters)
    if type(cases) ~= "table" then
        error("matrix.filter: cases must be a list", 2)
    end
    if filters == nil or #filters == 0 then return cases end
    if type(filters) ~= "table" then
        error("matrix.filter: filters must be a list of strings", 2)
    end

    -- group by key, keys in the order first given
    local order, wanted = {}, {}
    for i, f in ipairs(filters) do
        if type(f) ~= "string" then
            error("matrix.filter: filters[" .. i .. "] must be a string", 2)
        end
        local key, value = str_match(f, "^([^=]+)=(.*)$")
        if not key then
            return nil, "--filter " .. f .. ": expected key=value"
        end
        local is_var = false
        for _, c in ipairs(cases) do
            if c.vars and c.vars[key] ~= nil then is_var = true break end
        end
        if not IS_FILTER_KEY[key] and not is_var then
            local msg = "--filter key '" .. key .. "' is not a scenario key"
            local near = suggest_filter_key(key)
            if near then msg = msg .. "; did you mean '" .. near .. "'?" end
            return nil, msg
        end
        if not wanted[key] then
            wanted[key] = {}
            order[#order + 1] = key
        end
        wanted[key][value] = true
    end

    -- narrow key by key, so an empty result can name the key that emptied it
    local kept, applied = cases, {}
    for _, key in ipairs(order) do
        local set, next_kept = wanted[key], {}
        for _, c in ipairs(kept) do
            local v = c[key]
            if v == nil and not IS_FILTER_KEY[key] and c.vars then v = c.vars[key] end
            if set[tostring(v)] or unit_match(key, set, v) then next_kept[#next_kept + 1] = c end
        end
        if #next_kept == 0 then
            local scope = "in this scenario"
            if #applied > 0 then
                scope = scope .. " with " .. tbl_concat(applied, " and ")
            end
            return nil, str_format("--filter left no cases (values of %s %s: %s)",
                                   key, scope, distinct_values(kept, key))
        end
        local shown = {}
        for _, f in ipairs(filters) do
            if str_match(f, "^([^=]+)=") == key then shown[#shown + 1] = f end
        end
        applied[#applied + 1] = tbl_concat(shown, " or ")
        kept = next_kept
    end
    return kept
end

-- case -> its case_id
function _M.describe(case)
    if type(case) ~= "table" or type(case.case_id) ~= "string" then
        error("matrix.describe: expected a case from matrix.expand", 2)
    end
    return case.case_id
end

return _M
