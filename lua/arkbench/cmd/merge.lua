-- arkbench.cmd.merge: `arkbench merge OUT DIR... [--threshold RULE]...`
-- joins the result folders of the shards of one run (`run --shard I/N`,
-- docs/distributed.md) into one result folder that report, compare,
-- thresholds and the exports read as any other.
--
-- DIR is a shard's folder (its runs.jsonl and env.json) or a folder
-- holding shard-I-of-N/ folders (every shard given the same --out).
-- Refused (exit 2, naming both folders): a different scenario file,
-- --set, --filter, --quick or N, or the same shard twice. Each run
-- (case_id, repetition) is joined by arkbench.run.shard_join; a shard
-- missing or failed makes it degraded (exit 1). The thresholds the
-- shards were given (env.json run_settings.thresholds) and --threshold
-- are checked on the merged runs: crossed -> exit 3 when every run is ok.

local core = require("arkbench.core")
local json = require("arkbench.util.json")
local runfile = require("arkbench.report.runfile")
local status = require("arkbench.run.status")
local join = require("arkbench.run.shard_join")

local ipairs, tostring, type = ipairs, tostring, type
local format = string.format
local io_stderr, io_stdout = io.stderr, io.stdout

local _M = {}

_M.USAGE = "merge OUT DIR... [--threshold RULE]..."

local function die(msg)
    io_stderr:write("arkbench: merge: ", msg, "\n")
    return 2
end

local function parse(args)
    local o = { dirs = {}, thresholds = {} }
    local i = 2
    while i <= #args do
        local a = args[i]
        if a == "--threshold" then
            if args[i + 1] == nil then return nil, "--threshold needs a rule" end
            o.thresholds[#o.thresholds + 1] = args[i + 1]
            i = i + 2
        elseif a:match("^%-%-threshold=") then
            o.thresholds[#o.thresholds + 1] = a:sub(13)
            i = i + 1
        elseif a:sub(1, 1) == "-" then
            return nil, "unknown option '" .. a .. "' (usage: arkbench " .. _M.USAGE .. ")"
        elseif not o.out then o.out = a; i = i + 1
        else o.dirs[#o.dirs + 1] = (#a > 1 and a:gsub("/+$", "") or a); i = i + 1 end
    end
    if not o.out or #o.dirs == 0 then
        return nil, "expected an output folder and at least one shard folder: arkbench " .. _M.USAGE
    end
    for _, t in ipairs(o.thresholds) do
        local ok, why = require("arkbench.report.thresholds").parse(t)
        if not ok then return nil, "--threshold " .. why end
    end
    return o
end

-- DIR itself, or its shard-I-of-N/ folders, in index order
local function expand(dir)
    if core.file_kind(dir .. "/env.json") == "file" then return { dir } end
    if core.file_kind(dir) ~= "directory" then return nil, dir .. ": no such folder" end
    local names = core.dir_entries(dir) or {}
    local found = {}
    for _, n in ipairs(names) do
        local i = n:match("^shard%-(%d+)%-of%-%d+$")
        if i and core.file_kind(dir .. "/" .. n .. "/env.json") == "file" then
            found[#found + 1] = { tonumber(i), dir .. "/" .. n }
        end
    end
    table.sort(found, function(a, b) return a[1] < b[1] end)
    if #found == 0 then
        return nil, dir .. ": not a shard's result folder (no env.json) and no shard-I-of-N/"
            .. " folders in it"
    end
    local out = {}
    for _, f in ipairs(found) do out[#out + 1] = f[2] end
    return out
end

-- one shard folder -> { dir, env, runs, shard } | nil, err
local function read_shard(dir)
    local env, err = runfile.read_json(dir .. "/env.json")
    if not env then return nil, err or (dir .. "/env.json: missing") end
    local rs = type(env.run_settings) == "table" and env.run_settings or {}
    if type(rs.shard) ~= "table" then
        return nil, dir .. ": not a shard (its run had no --shard)"
    end
    -- a damaged env.json: said, naming it and what was expected
    local sh = rs.shard
    local function whole(v) return type(v) == "number" and v == math.floor(v) and v >= 0 end
    if not whole(sh.index) or not whole(sh.count) or sh.count < 1 or sh.index >= sh.count then
        return nil, format("%s/env.json: run_settings.shard: expected whole numbers index and count"
                           .. " with 0 <= index < count, got index %s, count %s", dir, tostring(sh.index),
                           tostring(sh.count))
    end
    if rs.start_at_unix_s ~= nil and type(rs.start_at_unix_s) ~= "number" then
        return nil, format("%s/env.json: run_settings.start_at_unix_s: expected a number (unix seconds),"
                           .. " got %s", dir, tostring(rs.start_at_unix_s))
    end
    local runs, rerr, warning = {}, nil, nil -- luacheck: ignore rerr
    if core.file_kind(dir .. "/runs.jsonl") then
        runs, rerr, warning = runfile.read(dir .. "/runs.jsonl")
        if not runs then
            -- a shard killed before its first run ended wrote none
            if not tostring(rerr):match("holds no runs$") then return nil, rerr end
            runs = {}
        end
    end
    if warning then io_stderr:write("arkbench: merge: warning: ", warning, "\n") end
    -- a shard still running here is not merged yet; a lock left by a
    -- shard on another host (a shared filesystem) names a process this
    -- host cannot see: said, and its runs so far are merged
    local live = require("arkbench.run.folder").live_lock(dir)
    if live then
        local here = core.uname and (core.uname() or {}).nodename
        if env.hostname == here then return nil, live end
        io_stderr:write(format("arkbench: merge: warning: %s was written on %s and is still locked:"
                               .. " that shard may still be running\n", dir, tostring(env.hostname)))
    end
    -- a shard interrupted before its first run ended: its summary says so
    local summary = runfile.read_json(dir .. "/summary.json")
    local interrupted = type(summary) == "table" and summary.interrupted == true
    return { dir = dir, env = env, runs = runs, shard = rs.shard, settings = rs, interrupted = interrupted }
end

local function same_list(a, b)
    a, b = type(a) == "table" and a or {}, type(b) == "table" and b or {}
    if #a ~= #b then return false end
    for i = 1, #a do if a[i] ~= b[i] then return false end end
    return true
end

-- nil, or why shard s cannot be joined with shard f (both named)
local function mismatch(f, s)
    local a, b = f.settings, s.settings
    local why
    if f.env.scenario_sha256 ~= s.env.scenario_sha256 then
        why = format("different scenario files (sha256 %s and %s)",
                     tostring(f.env.scenario_sha256):sub(1, 12), tostring(s.env.scenario_sha256):sub(1, 12))
    elseif not same_list(a.sets, b.sets) or not same_list(a.filters, b.filters)
        or (a.quick == true) ~= (b.quick == true) then
        why = format("different settings (%s and %s)", runfile.settings_text(a), runfile.settings_text(b))
    elseif f.shard.count ~= s.shard.count then
        why = format("different shard counts (%d and %d)", f.shard.count, s.shard.count)
    elseif f.shard.index == s.shard.index then
        why = format("shard %d of %d twice", s.shard.index, s.shard.count)
    elseif type(a.start_at_unix_s) == "number" and type(b.start_at_unix_s) == "number"
        and a.start_at_unix_s ~= b.start_at_unix_s then
        -- both planned, for different instants: two separate runs
        why = format("different plans (--start-at %s and %s): shards of two separate runs",
                     os.date("!%Y-%m-%dT%H:%M:%SZ", math.floor(a.start_at_unix_s)),
                     os.date("!%Y-%m-%dT%H:%M:%SZ", math.floor(b.start_at_unix_s)))
    end
    return why and format("%s and %s: %s", f.dir, s.dir, why)
end

local function write(path, text)
    local ok, err = core.write_file(path, text)
    if not ok then return nil, path .. ": " .. tostring(err) end
    return true
end

function _M.main(args, cli)
    local o, perr = parse(args)
    if not o then return die(perr) end
    local shards, by_index = {}, {}
    for _, d in ipairs(o.dirs) do
        local list, eerr = expand(d)
        if not list then return die(eerr) end
        for _, dir in ipairs(list) do
            local s, rerr = read_shard(dir)
            if not s then return die(rerr) end
            for _, f in ipairs(shards) do
                local why = mismatch(f, s)
                if why then return die(why) end
            end
            shards[#shards + 1] = s
            by_index[s.shard.index] = s
        end
    end
    local n = shards[1].shard.count

    local folder = require("arkbench.run.folder")
    local dir, cerr, wfail = folder.claim_out(o.out, { label = "OUT", no_append = true })
    if not dir then
        io_stderr:write("arkbench: merge: ", cerr, "\n")
        return wfail and 1 or 2
    end
    -- an internal error past this point releases the folder first: no
    -- stale .arkbench.lock is left behind
    local ok, code = xpcall(_M.write_merged, function(e)
        folder.release(dir)
        return debug.traceback(tostring(e), 2)
    end, o, dir, shards, by_index, n, cli)
    if not ok then error(code, 0) end
    return code
end

-- the merged runs.jsonl and env.json in dir (claimed), and the reports
function _M.write_merged(o, dir, shards, by_index, n, cli)
    local folder = require("arkbench.run.folder")
    local runs, notes = join.all(n, by_index)
    local lines = {}
    for i, r in ipairs(runs) do lines[i] = json.encode(r) end
    local ok, werr = write(dir .. "/runs.jsonl", table.concat(lines, "\n") .. "\n")
    -- env.json: the first shard's, with every shard's host and times
    local env = shards[1].env
    env.run_settings.shard = nil
    env.run_settings.merged_shards = n
    env.shards = json.array()
    local started, ended
    for i = 0, n - 1 do
        local s = by_index[i]
        if s then
            env.shards[#env.shards + 1] = { shard = i, folder = s.dir, hostname = s.env.hostname or json.null,
                                            started_utc = s.env.started_utc or json.null,
                                            ended_utc = s.env.ended_utc or json.null }
            local a, b = s.env.started_utc, s.env.ended_utc
            if type(a) == "string" and (not started or a < started) then started = a end
            if type(b) == "string" and (not ended or b > ended) then ended = b end
        end
    end
    env.started_utc, env.ended_utc = started or env.started_utc, ended or env.ended_utc
    -- per case, the largest start skew of its runs (us)
    env.start_skew_us = {}
    for _, r in ipairs(runs) do
        local v = r.start_skew_us
        if type(v) == "number" and v > (env.start_skew_us[r.case_id] or -1) then env.start_skew_us[r.case_id] = v end
    end
    local eok, eerr = write(dir .. "/env.json", json.encode(env, { indent = 2 }) .. "\n")
    if not ok or not eok then
        folder.release(dir)
        io_stderr:write("arkbench: merge: cannot write ", tostring(werr or eerr), "\n")
        return 1
    end
    for _, w in ipairs(notes) do io_stderr:write("arkbench: merge: ", w, "\n") end
    io_stderr:write(format("arkbench: merge: %d of %d shards, %d runs -> %s\n", #shards, n, #runs, dir))
    -- the shards' rules (each kept them unchecked) and --threshold
    local rules, seen = {}, {}
    for _, s in ipairs(shards) do
        for _, t in ipairs(type(s.settings.thresholds) == "table" and s.settings.thresholds or {}) do
            if not seen[t] then seen[t] = true; rules[#rules + 1] = t end
        end
    end
    for _, t in ipairs(o.thresholds) do
        if not seen[t] then seen[t] = true; rules[#rules + 1] = t end
    end
    local _, wrote, crossed = cli.finish_results(dir, env.scenario_name, runs, {
        scenario = runs[1] and runs[1].scenario and runs[1].scenario.name or nil,
        started_utc = env.started_utc, ended_utc = env.ended_utc,
    }, rules)
    io_stdout:write("\n", join.skew_text(runs))
    folder.release(dir)
    io_stdout:flush()
    io_stderr:write("results: ", dir, "\n")
    local code = status.exit_code(runs)
    if not wrote and code == 0 then code = 1 end
    if code == 0 and crossed > 0 then code = 3 end
    return code
end

return _M
