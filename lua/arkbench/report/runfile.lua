-- arkbench.report.runfile: reading a runs.jsonl (docs/run-object.md,
-- "Reading runs.jsonl"); stats.read_jsonl is this module's read.
--
--   runfile.read(path) -> runs, nil, warning | nil, err
--       every non-blank line must be a run object (runfile.check); err is
--       one line "path:N: reason". A status of an older arkbench is read as
--       today's (arkbench.run.status: "error" is "failed"). A final line without its newline that
--       does not parse is what a crash or a full disk leaves: it is skipped
--       and named in warning. A (case_id, repetition) pair seen twice is an
--       error naming both lines (a folder never holds one run twice). A
--       file without a run: "path: holds no runs". Lines longer than
--       MAX_LINE bytes are refused while reading, never held whole.
--   runfile.check(obj) -> nil | reason   (the fields every run object has,
--       and the types of the ones it may have)
--   runfile.read_json(path) -> v | nil (absent) | nil, err (env.json: "is
--       not valid JSON (line N)")
--   runfile.settings_text(run_settings) -> "--set a=1 --quick" | "no ..."
--   runfile.last_repetitions(runs) -> { case_id = highest repetition }
--   runfile.MAX_LINE

local json = require("arkbench.util.json")
local core = require("arkbench.core")
local status = require("arkbench.run.status")

local type, ipairs, tostring = type, ipairs, tostring
local format = string.format
local str_find, str_sub = string.find, string.sub
local concat = table.concat
local floor = math.floor

local _M = {}

-- A run object is a few kB (its histograms included); 8 MiB is far above.
_M.MAX_LINE = 8 * 1024 * 1024
local CHUNK = 64 * 1024

local NUMBER_FIELDS = {
    "elapsed_s", "measured_s", "sent", "completed", "drained", "timed_out",
    "message_errors", "unfinished", "round_trips_per_s", "payload_mib_per_s",
    "cpu_percent", "cpu_user_s", "cpu_sys_s", "cpu_machine_percent",
    "rss_peak_bytes", "rss_end_bytes", "reconnects",
}
local STRING_FIELDS = { "status", "error", "signal" }
local TABLE_FIELDS = { "scenario", "case", "rtt_us", "connect_us", "errors", "local_errors",
                       "error_reasons", "tags" }
local HISTOGRAMS = { "rtt_histogram", "connect_histogram" }

local function is_object(v) return type(v) == "table" and v[1] == nil end

function _M.check(v)
    if not is_object(v) then return "not a JSON object" end
    if v.schema_version ~= 1 then
        return "not an arkbench run object (schema_version is " .. tostring(v.schema_version)
            .. ", expected 1)"
    end
    if type(v.case_id) ~= "string" or v.case_id == "" then
        return "not a run object: case_id must be a non-empty string"
    end
    local r = v.repetition
    if type(r) ~= "number" or r < 1 or r ~= floor(r) then
        return "not a run object: repetition must be an integer >= 1"
    end
    if type(v.ok) ~= "boolean" then return "not a run object: ok must be true or false" end
    for _, k in ipairs(NUMBER_FIELDS) do
        local x = v[k]
        if x ~= nil and x ~= json.null and type(x) ~= "number" then
            return format("not a run object: %s must be a number", k)
        end
    end
    for _, k in ipairs(STRING_FIELDS) do
        local x = v[k]
        if x ~= nil and x ~= json.null and type(x) ~= "string" then
            return format("not a run object: %s must be a string", k)
        end
    end
    local st = v.status
    if type(st) == "string" and not status.KNOWN[st] and not status.OLD_NAMES[st] then
        return format("not a run object: status %q is none of %s", st,
                      concat(status.STATUSES, ", "))
    end
    for _, k in ipairs(TABLE_FIELDS) do
        local x = v[k]
        if x ~= nil and x ~= json.null and not is_object(x) then
            return format("not a run object: %s must be an object", k)
        end
    end
    for _, k in ipairs(HISTOGRAMS) do
        local x = v[k]
        if x ~= nil and x ~= json.null then
            local ok, herr = false, "not a string"
            if type(x) == "string" then ok, herr = core.hist_summary(x) end
            if not ok then return format("%s is not a valid ab1: histogram (%s)", k, tostring(herr)) end
        end
    end
    return nil
end

-- Calls each(line, lineno, has_newline) per line, in order, holding one line
-- at a time; nil, err at the first line past MAX_LINE or each's error.
local function each_line(f, path, each)
    local pending, plen, lineno = {}, 0, 0
    while true do
        local chunk, rerr = f:read(CHUNK)
        if chunk == nil then
            if rerr then return nil, path .. ": " .. tostring(rerr) end
            break
        end
        local pos = 1
        while true do
            local nl = str_find(chunk, "\n", pos, true)
            local piece = str_sub(chunk, pos, nl and nl - 1 or -1)
            plen = plen + #piece
            if plen > _M.MAX_LINE then
                return nil, format("%s:%d: a line longer than %d bytes: not a run object",
                                   path, lineno + 1, _M.MAX_LINE)
            end
            pending[#pending + 1] = piece
            if not nl then break end
            lineno = lineno + 1
            local line = concat(pending)
            pending, plen = {}, 0
            local ok, err = each(line, lineno, true)
            if not ok then return nil, err end
            pos = nl + 1
        end
    end
    if plen > 0 then
        local ok, err = each(concat(pending), lineno + 1, false)
        if not ok then return nil, err end
    end
    return true
end

function _M.read(path)
    local kind = core.file_kind(path)
    if kind ~= nil and kind ~= "file" then
        return nil, path .. ": is a " .. kind .. ", not a runs.jsonl file"
    end
    local f, err = io.open(path, "rb")
    if not f then return nil, err end
    local runs, seen, warning = {}, {}, nil
    local ok, rerr = each_line(f, path, function(line, lineno, has_newline)
        if not str_find(line, "%S") then return true end
        local v, derr = json.decode(line)
        if v == nil and not has_newline then
            warning = format("%s:%d: the last line is cut (%d bytes, not JSON); skipped",
                             path, lineno, #line)
            return true
        end
        if v == nil then return nil, path .. ":" .. lineno .. ": " .. tostring(derr) end
        -- cjson reads [] as an empty table: tell it by its text
        local why = not str_find(line, "^%s*{") and "not a JSON object" or _M.check(v)
        if why then return nil, path .. ":" .. lineno .. ": " .. why end
        local key = v.case_id .. "\0" .. v.repetition
        if seen[key] then
            return nil, format("%s:%d: repeats line %d (case %s, repetition %d): a folder holds"
                               .. " each run once", path, lineno, seen[key], v.case_id, v.repetition)
        end
        seen[key] = lineno
        -- an older arkbench's "error" is today's "failed"
        if type(v.status) == "string" and status.OLD_NAMES[v.status] then
            v.status = status.OLD_NAMES[v.status]
        end
        runs[#runs + 1] = v
        return true
    end)
    f:close()
    if not ok then return nil, rerr end
    -- (with the warning when its only line was cut)
    if #runs == 0 then return nil, path .. ": holds no runs", warning end
    return runs, nil, warning
end

-- A JSON file such as env.json -> value | nil (absent) | nil, "path is not
-- valid JSON (line N)" | nil, "path is not a JSON object".
function _M.read_json(path)
    local f = io.open(path, "rb")
    if not f then return nil end
    local text = f:read(_M.MAX_LINE + 1) or ""
    f:close()
    if #text > _M.MAX_LINE then return nil, path .. " is not an arkbench file (longer than 8 MiB)" end
    local v, derr = json.decode(text)
    if v == nil then
        local at = tonumber(tostring(derr):match("character (%d+)")) or #text
        local _, nls = str_sub(text, 1, at):gsub("\n", "")
        return nil, format("%s is not valid JSON (line %d)", path, nls + 1)
    end
    if not is_object(v) then return nil, path .. " is not a JSON object" end
    return v
end

-- The settings a result folder was run with, as env.json's run_settings
-- holds them, in words: "--set a=1 --quick" or "no --set, --filter, --quick".
function _M.settings_text(t)
    local parts = {}
    for _, k in ipairs({ "sets", "filters" }) do
        for _, v in ipairs(type(t) == "table" and type(t[k]) == "table" and t[k] or {}) do
            parts[#parts + 1] = (k == "sets" and "--set " or "--filter ") .. tostring(v)
        end
    end
    if type(t) == "table" and t.quick == true then parts[#parts + 1] = "--quick" end
    if #parts == 0 then return "no --set, --filter or --quick" end
    return concat(parts, " ")
end

-- The highest repetition of each case_id in runs: {case_id -> n}.
function _M.last_repetitions(runs)
    local out = {}
    for _, r in ipairs(runs) do
        if (out[r.case_id] or 0) < r.repetition then out[r.case_id] = r.repetition end
    end
    return out
end

return _M
