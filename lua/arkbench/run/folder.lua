-- arkbench.run.folder: the result folder of one `arkbench run`, claimed
-- exclusively (docs/reports.md, "Result folders").
--
--   folder.sanitize(name) -> a folder-name component ([A-Za-z0-9._-], at most
--       64 bytes, never "", "." or ".."): a scenario name with "/", spaces or
--       invalid UTF-8 still gives one plain folder
--   folder.claim_new(parent, stamp) -> dir | nil, err
--       mkdir -p parent, then mkdir parent/stamp, parent/stamp-2, ... : mkdir
--       is the claim, so two runs started in the same second get two folders
--   folder.claim_out(dir, opts) -> dir | nil, err       (--out DIR)
--       dir absent or empty: claimed. dir holding an arkbench result (its
--       runs.jsonl): refused unless opts.append, and then only when its runs
--       are of the same scenario file (opts.sha256). Anything else in it --
--       the user's files -- refuses it; nothing is written or removed.
--   folder.release(dir)
--
-- The claim itself is the folder `.arkbench.lock` inside dir, made with one
-- mkdir (exclusive): a second run on the same dir at the same time is
-- refused. It is removed when the run ends; one left by a killed run names
-- itself in the message.

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
    ["runs.csv"] = true, ["cases.csv"] = true, ["workers.log"] = true,
    [_M.LOCK] = true,
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
    if not ok and code ~= "EEXIST" then return nil, dir .. ": " .. err end
    return true
end
_M.mkdir_p = mkdir_p

local function lock(dir)
    local ok, err, code = core.mkdir(dir .. "/" .. _M.LOCK)
    if ok then return dir end
    if code == "EEXIST" then
        return nil, format("%s is in use by another arkbench run (%s/%s exists; remove it"
                           .. " if no run is writing there)", dir, dir, _M.LOCK)
    end
    return nil, format("cannot claim %s: %s", dir, err)
end

function _M.claim_new(parent, stamp)
    local ok, err = mkdir_p(parent)
    if not ok then return nil, "cannot create " .. err end
    for i = 1, 1000 do
        local dir = parent .. "/" .. stamp .. (i > 1 and ("-" .. i) or "")
        local made, merr, code = core.mkdir(dir)
        if made then return lock(dir) end
        if code ~= "EEXIST" then return nil, format("cannot create %s: %s", dir, merr) end
    end
    return nil, "cannot find a free folder name under " .. parent
end

-- The scenario sha256 of the first run in runs.jsonl, or nil.
local function first_sha(path)
    local f = io.open(path, "rb")
    if not f then return nil end
    local line = f:read("*l")
    f:close()
    local obj = line and require("arkbench.util.json").decode(line)
    return type(obj) == "table" and type(obj.scenario) == "table" and obj.scenario.sha256 or nil
end

function _M.claim_out(dir, opts)
    opts = opts or {}
    if dir == "" then return nil, "--out needs a folder name" end
    if dir:sub(1, 1) == "-" then
        return nil, format("--out '%s': looks like an option; write ./%s for a folder of"
                           .. " that name", dir, dir)
    end
    local kind = core.file_kind(dir)
    if kind == nil then
        local parent = dir:match("^(.*)/[^/]+/*$")
        if parent and parent ~= "" then
            local ok, err = mkdir_p(parent)
            if not ok then return nil, "cannot create " .. err end
        end
        local ok, err, code = core.mkdir(dir)
        if not ok and code ~= "EEXIST" then return nil, format("cannot create %s: %s", dir, err) end
        kind = core.file_kind(dir)
    end
    if kind ~= "directory" then return nil, format("--out %s: exists and is not a folder", dir) end
    local names, lerr = core.dir_entries(dir)
    if not names then return nil, format("--out %s: %s", dir, lerr) end
    local ours = core.file_kind(dir .. "/runs.jsonl") or core.file_kind(dir .. "/env.json")
    local theirs = {}
    for _, n in ipairs(names) do
        if n ~= _M.LOCK and not (ours and _M.OURS[n]) then theirs[#theirs + 1] = n end
    end
    if #theirs > 0 then
        local shown = table.concat(theirs, ", ", 1, math.min(#theirs, 5))
        return nil, format("--out %s: holds files arkbench did not write (%s%s); results go"
                           .. " into an empty or new folder", dir, shown, #theirs > 5 and ", ..." or "")
    end
    if ours then
        if not opts.append then
            local which = core.file_kind(dir .. "/runs.jsonl") and "runs.jsonl" or "env.json"
            return nil, format("--out %s: holds an earlier arkbench result (its %s); pass --append"
                               .. " to add runs to it, or choose another folder", dir, which)
        end
        local sha = first_sha(dir .. "/runs.jsonl")
        if opts.sha256 and sha and sha ~= opts.sha256 then
            return nil, format("--out %s --append: its runs are of another scenario file"
                               .. " (sha256 %s, this one %s)", dir, tostring(sha), opts.sha256)
        end
    end
    return lock(dir)
end

function _M.release(dir)
    os.remove(dir .. "/" .. _M.LOCK)
end

return _M
