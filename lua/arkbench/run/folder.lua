-- arkbench.run.folder: the result folder of one `arkbench run`, claimed
-- exclusively (docs/reports.md, "Result folders").
--
--   folder.sanitize(name) -> a folder-name component ([A-Za-z0-9._-], at most
--       64 bytes, never "", "." or ".."): a scenario name with "/", spaces or
--       invalid UTF-8 still gives one plain folder
--   folder.claim_new(parent, stamp) -> dir | nil, err, write_failed
--       mkdir -p parent, then mkdir parent/stamp, parent/stamp-2, ... : mkdir
--       is the claim, so two runs started in the same second get two folders
--   folder.claim_out(dir, opts) -> dir, nil, prior | nil, err, write_failed
--       (--out DIR) dir absent or empty: claimed. dir holding an arkbench
--       result (its runs.jsonl or env.json): refused unless opts.append, and
--       then only when runs.jsonl is a regular file of run objects
--       (report/runfile.lua), all of the same scenario file (opts.sha256),
--       and env.json's run_settings equal opts.settings ({sets=, filters=,
--       quick=}); prior = { runs=, env=, warning= } of what is there.
--       Anything else in it -- the user's files -- refuses it; nothing is
--       written or removed. write_failed: a mkdir failed (EROFS, ENOSPC,
--       EACCES...), which the command line reports as exit 1, not 2.
--       opts.label names the folder in the messages ("--out" unless given:
--       merge says "OUT"); opts.no_append: a command without --append
--       (merge) says to choose an empty or new folder, not to pass it.
--   folder.lock_existing(dir) -> dir | nil, err, write_failed   (report)
--   folder.live_lock(dir) -> why | nil   (compare: a live lock refuses)
--   folder.release(dir)
--
-- The claim itself is the folder `.arkbench.lock` inside dir, made with one
-- mkdir (exclusive), holding the claimer's PID (lock/pid): a second run or
-- report on the same dir at the same time is refused. It is removed when
-- the run ends; one whose PID is gone (a killed run) is cleared by the next
-- run or report with a warning.

local core = require("arkbench.core")

local format = string.format
local tostring, ipairs = tostring, ipairs

local _M = {}

_M.LOCK = ".arkbench.lock"
_M.NAME_MAX = 64
-- What arkbench writes into a result folder; anything else is the user's.
_M.OURS = {
    ["runs.jsonl"] = true, ["env.json"] = true, ["summary.json"] = true,
    ["report.md"] = true, ["report.html"] = true, ["charts"] = true,
    ["runs.csv"] = true, ["cases.csv"] = true, ["tags.csv"] = true, ["workers.log"] = true,
    ["hgrm"] = true, ["metrics.om"] = true, [_M.LOCK] = true,
}

function _M.sanitize(name)
    local s = tostring(name or ""):gsub("[^%w%.%-_]", "_")
    if #s > _M.NAME_MAX then s = s:sub(1, _M.NAME_MAX) end
    if s:match("^%.*$") then s = "_" .. s end
    return s
end

-- mkdir -p without a shell: each missing component with one mkdir.
local function mkdir_p(dir)
    local kind = core.file_kind(dir)
    if kind == "directory" then return true end
    if kind then return nil, dir .. ": exists and is not a folder" end
    local parent = dir:match("^(.*)/[^/]+/*$")
    if parent and parent ~= "" then
        local ok, err = mkdir_p(parent)
        if not ok then return nil, err end
    end
    local ok, err, code = core.mkdir(dir)
    if not ok and code ~= "EEXIST" then return nil, dir .. ": " .. err, true end
    return true
end
_M.mkdir_p = mkdir_p

local function lock_pid(dir)
    local f = io.open(dir .. "/" .. _M.LOCK .. "/pid", "rb")
    local text = f and f:read(32)
    if f then f:close() end
    return tonumber(text and text:match("^%s*(%d+)%s*$"))
end

local function unlock(dir)
    os.remove(dir .. "/" .. _M.LOCK .. "/pid")
    os.remove(dir .. "/" .. _M.LOCK)
end

-- mkdir dir/.arkbench.lock, then our PID in it (lock/pid). A lock whose PID
-- is gone was left by a killed run or report: it is cleared with a warning
-- on stderr. A lock without a PID (being made, or from an older arkbench)
-- counts as held.
local function lock(dir, what)
    for _ = 1, 2 do
        local ok, err, code = core.mkdir(dir .. "/" .. _M.LOCK)
        if ok then
            local wok, werr = core.write_file(dir .. "/" .. _M.LOCK .. "/pid", core.getpid() .. "\n")
            if not wok then
                unlock(dir)
                return nil, format("cannot write %s/%s/pid: %s", dir, _M.LOCK, tostring(werr)), true
            end
            return dir
        end
        if code ~= "EEXIST" then return nil, format("cannot claim %s: %s", dir, err), true end
        local pid = lock_pid(dir)
        if pid and (pid == core.getpid() or core.pid_alive(pid)) then
            return nil, format("%s is in use by another arkbench run (process %d, %s/%s); %s when"
                               .. " that process has ended", dir, pid, dir, _M.LOCK, what or "try again")
        elseif not pid then
            return nil, format("%s is in use by another arkbench run (%s/%s exists; remove it"
                               .. " if no run is writing there)", dir, dir, _M.LOCK)
        end
        io.stderr:write(format("arkbench: warning: %s/%s was left by process %d, which is gone;"
                               .. " cleared\n", dir, _M.LOCK, pid))
        unlock(dir)
    end
    return nil, format("cannot claim %s: its lock keeps coming back", dir)
end

-- For compare, which only reads: why dir is not to be read now (a live
-- run or report holds its lock) | nil.
function _M.live_lock(dir)
    if core.file_kind(dir .. "/" .. _M.LOCK) == nil then return nil end
    local pid = lock_pid(dir)
    if pid and not core.pid_alive(pid) then return nil end
    return format("%s is in use by another arkbench run (%s/%s%s); its results are not"
                  .. " complete yet", dir, dir, _M.LOCK, pid and (", process " .. pid) or "")
end

-- For report: the folder's lock, or why not.
function _M.lock_existing(dir)
    return lock(dir, "rebuild the report")
end

function _M.claim_new(parent, stamp)
    local ok, err, wfail = mkdir_p(parent)
    if not ok then return nil, "cannot create " .. err, wfail end
    for i = 1, 1000 do
        local dir = parent .. "/" .. stamp .. (i > 1 and ("-" .. i) or "")
        local made, merr, code = core.mkdir(dir)
        if made then return lock(dir) end
        if code ~= "EEXIST" then return nil, format("cannot create %s: %s", dir, merr), true end
    end
    return nil, "cannot find a free folder name under " .. parent
end

-- What a result folder must be for --append: runs.jsonl a regular file of
-- run objects of this scenario file (sha256), env.json recording the same
-- settings (--set, --filter, --quick). -> { runs=, env=, warning= } | nil, err
local function appendable(dir, opts)
    local runfile = require("arkbench.report.runfile")
    local rpath = dir .. "/runs.jsonl"
    local kind = core.file_kind(rpath)
    if kind == nil then
        return nil, format("--out %s --append: it has no runs.jsonl to add to", dir)
    elseif kind ~= "file" then
        return nil, format("--out %s --append: its runs.jsonl is a %s, not a file", dir, kind)
    end
    local runs, rerr, warning = runfile.read(rpath)
    if not runs then return nil, format("--out %s --append: %s", dir, rerr) end
    for i, r in ipairs(runs) do
        local sha = type(r.scenario) == "table" and r.scenario.sha256 or nil
        if opts.sha256 and sha ~= opts.sha256 then
            return nil, format("--out %s --append: its runs are of another scenario file"
                               .. " (run %d: sha256 %s, this one %s)", dir, i, tostring(sha), opts.sha256)
        end
    end
    local env, eerr = runfile.read_json(dir .. "/env.json")
    if eerr then return nil, format("--out %s --append: %s", dir, eerr) end
    local had = type(env) == "table" and env.run_settings
    if type(had) ~= "table" then
        return nil, format("--out %s --append: its env.json does not record the --set, --filter"
                           .. " and --quick it was run with", dir)
    end
    local a, b = runfile.settings_text(had), runfile.settings_text(opts.settings)
    if a ~= b then
        return nil, format("--out %s --append: it was run with %s, this run with %s; runs of"
                           .. " other settings go into another folder", dir, a, b)
    end
    return { runs = runs, env = env, warning = warning }
end

function _M.claim_out(dir, opts)
    opts = opts or {}
    -- how the folder was named: "--out" (run), "OUT" (merge)
    local label = opts.label or "--out"
    if dir == "" then return nil, label .. " needs a folder name" end
    if dir:sub(1, 1) == "-" then
        return nil, format("%s '%s': looks like an option; write ./%s for a folder of"
                           .. " that name", label, dir, dir)
    end
    local kind = core.file_kind(dir)
    if kind == nil then
        local parent = dir:match("^(.*)/[^/]+/*$")
        if parent and parent ~= "" then
            local ok, err, wfail = mkdir_p(parent)
            if not ok then return nil, "cannot create " .. err, wfail end
        end
        local ok, err, code = core.mkdir(dir)
        if not ok and code ~= "EEXIST" then return nil, format("cannot create %s: %s", dir, err), true end
        kind = core.file_kind(dir)
    end
    if kind ~= "directory" then return nil, format("%s %s: exists and is not a folder", label, dir) end
    local names, lerr = core.dir_entries(dir)
    if not names then return nil, format("%s %s: %s", label, dir, lerr) end
    -- a run holding the folder may have temporary names in it: "in use"
    -- is the answer then, not "files arkbench did not write"
    for _, n in ipairs(names) do
        if n == _M.LOCK then
            local got, err, wfail = lock(dir)
            if not got then return nil, err, wfail end
            unlock(dir) -- stale, cleared: judge the folder as it is
            names, lerr = core.dir_entries(dir)
            if not names then return nil, format("%s %s: %s", label, dir, lerr) end
            break
        end
    end
    local ours = core.file_kind(dir .. "/runs.jsonl") or core.file_kind(dir .. "/env.json")
    local theirs = {}
    for _, n in ipairs(names) do
        if n ~= _M.LOCK and not (ours and _M.OURS[n]) then theirs[#theirs + 1] = n end
    end
    if #theirs > 0 then
        local shown = table.concat(theirs, ", ", 1, math.min(#theirs, 5))
        return nil, format("%s %s: holds files arkbench did not write (%s%s); results go"
                           .. " into an empty or new folder", label, dir, shown, #theirs > 5 and ", ..." or "")
    end
    if ours then
        if not opts.append then
            local which = core.file_kind(dir .. "/runs.jsonl") and "runs.jsonl" or "env.json"
            if opts.no_append then
                return nil, format("%s %s: holds an earlier arkbench result (its %s): choose an empty"
                                   .. " or new folder", label, dir, which)
            end
            return nil, format("--out %s: holds an earlier arkbench result (its %s); pass --append"
                               .. " to add runs to it, or choose another folder", dir, which)
        end
        local got, lerr, wfail = lock(dir)
        if not got then return nil, lerr, wfail end
        local prior, aerr = appendable(dir, opts)
        if not prior then
            unlock(dir)
            return nil, aerr
        end
        return dir, nil, prior
    end
    return lock(dir)
end

function _M.release(dir)
    unlock(dir)
end

return _M
