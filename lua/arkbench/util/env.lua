-- env.lua -- the machine and build a run happened on (env.json, docs/reports.md).
--
--   env.collect(opts) -> table
--     opts.binary         file hashed as binary_sha256 (default /proc/self/exe)
--     opts.scenario_path  scenario file: its path, SHA-256 and source text
--     opts.started_utc, opts.ended_utc   copied as given
--     opts.root           git checkout or installed tree to describe
--                         (default ARKBENCH_ROOT)
--     opts.files          { cpuinfo=, meminfo=, os_release= } paths that
--                         replace /proc/cpuinfo, /proc/meminfo and
--                         /etc/os-release (for tests and other hosts)
--   env.utc_stamp(t) -> "20261130T041230Z"      (folder names)
--   env.utc_iso(t)   -> "2026-11-30T04:12:30Z"
--     t: seconds since the epoch (fractions dropped); default now.
--
-- Every field is always present; what cannot be found is json.null, so
-- env.json has one shape on every host.

local json = require("arkbench.util.json")
local core = require("arkbench.core")

local type, tonumber, tostring, pcall = type, tonumber, tostring, pcall
local open, popen = io.open, io.popen
local date, time, getenv = os.date, os.time, os.getenv
local floor = math.floor

local null = json.null

local _M = {}

_M.VERSION = "0.1.0"

local function or_null(v)
    if v == nil then return null end
    return v
end

local function read_all(path)
    local f = open(path, "rb")
    if not f then return nil end
    local s = f:read("*a")
    f:close()
    return s
end

local function trim(s)
    return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

-- cpuinfo: model and number of logical CPUs ("processor" lines).
local function cpu(path)
    local s = read_all(path)
    if not s then return nil, nil end
    local model, count = nil, 0
    for line in s:gmatch("[^\n]+") do
        local k, v = line:match("^([^:]-)%s*:%s*(.-)%s*$")
        if k == "processor" then
            count = count + 1
        elseif k == "model name" and model == nil and v ~= "" then
            model = v
        end
    end
    return model, count > 0 and count or nil
end

local function memory_bytes(path)
    local s = read_all(path)
    local kib = s and s:match("MemTotal:%s*(%d+)%s*kB")
    return kib and tonumber(kib) * 1024 or nil
end

local function os_name(path)
    local s = read_all(path)
    if not s then return nil end
    for line in s:gmatch("[^\n]+") do
        local v = line:match("^PRETTY_NAME=(.*)$")
        if v then
            v = trim(v)
            local q = v:sub(1, 1)
            if (q == '"' or q == "'") and v:sub(-1) == q and #v >= 2 then
                v = v:sub(2, -2):gsub("\\(.)", "%1")
            end
            return v
        end
    end
    return nil
end

local function shell_quote(s)
    return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- Output of a shell command (stderr dropped), or nil when it failed.  The
-- exit status is echoed after the output because LuaJIT's pclose() result
-- does not carry it.
local function run(cmd)
    local ok, p = pcall(popen, cmd .. " 2>/dev/null; echo \"@exit=$?\"")
    if not ok or not p then return nil end
    local out = p:read("*a") or ""
    p:close()
    local body, code = out:match("^(.-)@exit=(%d+)%s*$")
    if code ~= "0" then return nil end
    return body
end

-- The commit of root: an installed tree's git-commit file (written by
-- `cmake --install`: "<sha>" or "<sha> dirty"), else git's answer for a
-- checkout.
local function git(root)
    if type(root) ~= "string" or root == "" then return nil, nil end
    local installed = read_all(root .. "/git-commit")
    if installed then
        local sha, rest = installed:match("^(%x+)(.-)%s*$")
        if sha and #sha >= 40 then return sha, rest:match("dirty") ~= nil end
        return nil, nil
    end
    local q = shell_quote(root)
    local head = run("git -C " .. q .. " rev-parse HEAD")
    head = head and head:match("^%s*(%x+)%s*$")
    if not head or #head < 40 then return nil, nil end
    local status = run("git -C " .. q .. " status --porcelain")
    if status == nil then return head, nil end
    return head, status:find("%S") ~= nil
end
_M.git = git

local function text(v)
    if type(v) == "string" then return trim(v) end
    return v
end

local function sha256_file(path)
    if type(path) ~= "string" then return nil end
    local h = core.sha256_file(path)
    return h
end

-- /proc/loadavg's 1, 5 and 15 minute averages, or nil.
function _M.load_average(path)
    local f = io.open(path or "/proc/loadavg")
    if not f then return nil end
    local line = f:read("*l") or ""
    f:close()
    local a, b, c = line:match("^(%S+)%s+(%S+)%s+(%S+)")
    if not a then return nil end
    return { tonumber(a), tonumber(b), tonumber(c) }
end

-- The warning `run` and `calibrate` print before measuring when the
-- 1-minute load average is above half the logical CPUs (every number would
-- show the other load), or nil.  files: { loadavg =, cpuinfo = } for specs.
function _M.busy_warning(files)
    files = files or {}
    local la = _M.load_average(files.loadavg)
    local _, ncpu = cpu(files.cpuinfo or "/proc/cpuinfo")
    if not la or not la[1] or not ncpu or ncpu < 1 or la[1] <= 0.5 * ncpu then return nil end
    return string.format("warning: this machine is busy (load average %.2f on %d logical CPUs);"
        .. " the numbers will show it", la[1], ncpu)
end

function _M.collect(opts)
    opts = opts or {}
    local files = opts.files or {}
    local u = core.uname() or {}
    local b = core.build_info() or {}
    local model, ncpu = cpu(files.cpuinfo or "/proc/cpuinfo")
    local root = opts.root or _G.ARKBENCH_ROOT or getenv("ARKBENCH_ROOT")
    local commit, dirty = git(root)
    local kernel
    if u.release then kernel = u.version and (u.release .. " " .. u.version) or u.release end

    local spath = opts.scenario_path
    local source = type(spath) == "string" and read_all(spath) or nil

    return {
        arkbench_version = _M.VERSION,
        cpu_model = or_null(model),
        logical_cpus = or_null(ncpu),
        memory_bytes = or_null(memory_bytes(files.meminfo or "/proc/meminfo")),
        os = or_null(os_name(files.os_release or "/etc/os-release")),
        kernel = or_null(kernel),
        machine = or_null(u.machine),
        hostname = or_null(u.nodename),
        compiler = or_null(text(b.compiler)),
        c_flags = or_null(text(b.c_flags)),
        build_type = or_null(text(b.build_type)),
        luajit = or_null(text(b.luajit)),
        libuv = or_null(text(b.libuv)),
        openssl = or_null(text(b.openssl)),
        sanitizers = or_null(b.sanitizers),
        git_commit = or_null(commit),
        git_dirty = or_null(dirty),
        binary_sha256 = or_null(sha256_file(opts.binary or "/proc/self/exe")),
        scenario_path = or_null(spath),
        scenario_sha256 = or_null(source and core.sha256(source)),
        scenario_source = or_null(source),
        load_average_start = or_null(_M.load_average(files.loadavg)),
        started_utc = or_null(opts.started_utc),
        ended_utc = or_null(opts.ended_utc),
    }
end

local function seconds(t)
    if t == nil then return time() end
    if type(t) ~= "number" or t ~= t then
        error("env: seconds since the epoch expected, got " .. tostring(t), 3)
    end
    return floor(t)
end

function _M.utc_stamp(t)
    return date("!%Y%m%dT%H%M%SZ", seconds(t))
end

function _M.utc_iso(t)
    return date("!%Y-%m-%dT%H:%M:%SZ", seconds(t))
end

return _M
