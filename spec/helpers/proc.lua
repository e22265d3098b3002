-- spec/helpers/proc.lua -- running shell commands, background processes
-- (spawn, stop) and waiting, for the integration specs.
--
-- Background processes run under `timeout` (a hard bound even if the spec
-- dies), stdout and stderr to files in a temp folder; p.pid is timeout's
-- pid, which forwards SIGTERM/SIGINT to the program. A spec stops what is
-- left in teardown with proc.stop_all().
local files = require("helpers.files")

local M = {}

M.shq = files.shq
local shq = files.shq

-- Whether cmd (run by os.execute) exited 0.
function M.sh_ok(cmd)
    local r = os.execute(cmd)
    return r == true or r == 0
end

-- cmd's stdout.
function M.sh_out(cmd)
    local p = io.popen(cmd)
    local s = p:read("*a")
    p:close()
    return s
end

-- cmd's exit code, its output discarded.
function M.status(cmd)
    return tonumber(M.sh_out(cmd .. " >/dev/null 2>&1; echo $?"):match("(%d+)"))
end

local okcore, core = pcall(require, "arkbench.core")

-- Seconds, monotonic when the host's core module is there.
function M.now()
    if okcore and core.now_ns then return core.now_ns() / 1e9 end
    return tonumber(M.sh_out("date +%s.%N"))
end

function M.sleep(s)
    os.execute("sleep " .. string.format("%.3f", s))
end

-- Calls pred every `step` s (default 0.02) until it returns a true value,
-- which it returns; nil after `timeout` s.
function M.wait_for(pred, timeout, step)
    local deadline = M.now() + timeout
    while true do
        local v = pred()
        if v then return v end
        if M.now() > deadline then return nil end
        M.sleep(step or 0.02)
    end
end

-- Whether pid can be signalled (a zombie still can).
function M.exists(pid)
    return M.sh_ok("kill -0 " .. pid .. " 2>/dev/null")
end

-- Whether pid exists and is not a zombie.
function M.alive(pid)
    if not M.exists(pid) then return false end
    local st = files.read_file("/proc/" .. pid .. "/stat")
    if st and st:match("^%d+ %b() Z") then return false end
    return true
end

local procs = {}

-- Starts argv in the background from opts.cwd (default the repository
-- root) under `timeout opts.limit` (default 120 s); returns
-- { pid, dir, argv, name } (name: opts.name or argv[1]).
function M.spawn(argv, opts)
    opts = opts or {}
    local d = files.tmpdir()
    local cmd = {}
    for _, a in ipairs(argv) do cmd[#cmd + 1] = shq(a) end
    local line = "cd " .. shq(opts.cwd or files.ROOT) .. " && { PYTHONDONTWRITEBYTECODE=1 timeout -k 3 " .. (opts.limit or 120) .. " "
        .. table.concat(cmd, " ") .. " >" .. shq(d .. "/stdout") .. " 2>" .. shq(d .. "/stderr")
        .. " </dev/null & echo $!; }"
    local pid = tonumber(M.sh_out(line):match("(%d+)"))
    assert(pid, "could not start " .. table.concat(argv, " "))
    local p = { pid = pid, dir = d, argv = argv, name = opts.name or argv[1] }
    procs[#procs + 1] = p
    return p
end

function M.stdout_of(p) return files.read_file(p.dir .. "/stdout") or "" end
function M.stderr_of(p) return files.read_file(p.dir .. "/stderr") or "" end

-- Stops p (SIGTERM, then SIGKILL after `grace` s, default 5); returns its
-- stdout.
function M.stop(p, grace)
    if not p.stopped then
        p.stopped = true
        if M.alive(p.pid) then
            os.execute("kill -TERM " .. p.pid .. " 2>/dev/null")
            local t_end = M.now() + (grace or 5)
            while M.alive(p.pid) and M.now() < t_end do M.sleep(0.05) end
            if M.alive(p.pid) then
                p.killed = true
                os.execute("kill -KILL " .. p.pid .. " 2>/dev/null")
            end
        end
    end
    return M.stdout_of(p)
end

-- Stops every process spawn() started that still runs.
function M.stop_all()
    for _, p in ipairs(procs) do pcall(M.stop, p, 2) end
end

-- Runs argv (each word quoted) behind `prefix` (shell words, already
-- quoted, ending in a space, or "") from opts.cwd (default the repository
-- root), stdin from opts.stdin or /dev/null; returns exit code, stdout,
-- stderr and wall seconds.
function M.capture(prefix, argv, opts)
    opts = opts or {}
    local d = files.tmpdir()
    local cmd = {}
    for _, a in ipairs(argv) do cmd[#cmd + 1] = shq(a) end
    local line = "cd " .. shq(opts.cwd or files.ROOT) .. " && " .. prefix
        .. table.concat(cmd, " ") .. " >" .. shq(d .. "/stdout") .. " 2>" .. shq(d .. "/stderr")
        .. " " .. (opts.stdin and ("<" .. shq(opts.stdin)) or "</dev/null") .. "; echo $?"
    local t0 = M.now()
    local rc = tonumber(M.sh_out(line):match("(%d+)"))
    return rc, files.read_file(d .. "/stdout") or "", files.read_file(d .. "/stderr") or "", M.now() - t0
end

-- Runs argv with a hard time limit (opts.limit, default 60 s) and opts.env,
-- a list of NAME=value strings, added to the environment; returns exit
-- code, stdout, stderr and wall seconds.
function M.run_cmd(argv, opts)
    opts = opts or {}
    local envs = {}
    for _, e in ipairs(opts.env or {}) do envs[#envs + 1] = shq(e) .. " " end
    return M.capture("env " .. table.concat(envs) .. "PYTHONDONTWRITEBYTECODE=1 timeout -k 3 "
        .. (opts.limit or 60) .. " ", argv, opts)
end

return M
