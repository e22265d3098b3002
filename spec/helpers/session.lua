-- spec/helpers/session.lua -- `arkbench run` in a session of its own, for
-- the specs that interrupt runs (interrupt_spec, regressions_spec).
--
-- A run starts through `setsid -f` (so its process group can be signalled
-- without touching busted) and a small wrapper script that records the
-- wrapper's pid (= the process group), the orchestrator's pid (a shell
-- that writes $$ and execs arkbench) and the orchestrator's exit code, each
-- file written whole (tmp + mv). The wrapper traps SIGINT, so it survives
-- the group's Ctrl-C and can record $?; arkbench itself starts with SIGINT
-- at its default disposition, as under a terminal. (A plain `cmd &` from a
-- non-interactive shell would start arkbench with SIGINT ignored, which a
-- terminal never does.) A spec calls session.kill_unfinished() in teardown.
local assert = require("luassert")
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")

local shq, read_file, write_file = files.shq, files.read_file, files.write_file

local M = {}

-- The wrapper: $1 = folder, $2 = arkbench, $3 = scenario. `prefix` (shell
-- words ending in a space, default "") runs arkbench, e.g.
-- "env --default-signal=PIPE ".
function M.wrapper(prefix)
    return [[
#!/bin/sh
# $1 = folder, $2 = arkbench, $3 = scenario
trap : INT
echo $$ > "$1/pgid.tmp" && mv "$1/pgid.tmp" "$1/pgid"
sh -c 'echo $$ > "$1/orch.pid.tmp" && mv "$1/orch.pid.tmp" "$1/orch.pid" && exec ]] .. (prefix or "")
        .. [["$2" run "$3" --out "$1/out"' \
  sh "$1" "$2" "$3" >"$1/stdout" 2>"$1/stderr" </dev/null
echo $? > "$1/rc.tmp" && mv "$1/rc.tmp" "$1/rc"
]]
end

local groups = {}

-- Writes scenario `text` as NAME.lua in a new temp folder (suffix
-- opts.suffix, default "_session") and starts `arkbench run` on it in a
-- session of its own (opts.prefix: see wrapper); waits for the wrapper and
-- the orchestrator to start. Returns { dir, scen, pgid, orch, out }:
-- out is the result folder, dir/stdout and dir/stderr the run's output.
function M.start(name, text, opts)
    opts = opts or {}
    local d = files.tmpdir(opts.suffix or "_session")
    local scen = d .. "/" .. name .. ".lua"
    write_file(scen, text)
    write_file(d .. "/wrapper.sh", M.wrapper(opts.prefix))
    assert(proc.sh_ok("setsid -f sh " .. shq(d .. "/wrapper.sh") .. " " .. shq(d) .. " " .. shq(ark.BIN) .. " "
        .. shq(scen) .. " </dev/null >/dev/null 2>&1"))
    local pgid = proc.wait_for(function() return tonumber((read_file(d .. "/pgid") or ""):match("%d+")) end, 10)
    assert.is_truthy(pgid, "the wrapper did not start")
    groups[#groups + 1] = { pgid = pgid, dir = d }
    local orch = proc.wait_for(function() return tonumber((read_file(d .. "/orch.pid") or ""):match("%d+")) end, 10)
    assert.is_truthy(orch, "the orchestrator did not start")
    return { dir = d, scen = scen, pgid = pgid, orch = orch, out = d .. "/out" }
end

-- The orchestrator's exit code once the wrapper recorded it, waiting up
-- to `timeout` s; nil if it has not ended by then.
function M.exit_code(r, timeout)
    return proc.wait_for(function() return tonumber((read_file(r.dir .. "/rc") or ""):match("%d+")) end, timeout)
end

-- Kills the process group of every run start() began whose wrapper has not
-- recorded an exit code (one that has may have given its group id to
-- someone else by now). For teardown: never leave a run behind.
function M.kill_unfinished()
    for _, g in ipairs(groups) do
        if not read_file(g.dir .. "/rc") then os.execute("kill -KILL -" .. g.pgid .. " 2>/dev/null") end
    end
    groups = {}
end

-- The number of non-empty lines of the file at path (0 when it is missing).
function M.count_lines(path)
    local n = 0
    for _ in (read_file(path) or ""):gmatch("[^\n]+") do n = n + 1 end
    return n
end

-- `pgrep -af` lines of the workers running scenario file `scen`.
-- "[a]rkbench" matches arkbench but not the pgrep/sh command line itself.
function M.worker_lines(scen)
    local out = proc.sh_out("pgrep -af " .. shq("[a]rkbench worker " .. scen) .. " 2>/dev/null")
    local list = {}
    for line in out:gmatch("[^\n]+") do list[#list + 1] = line end
    return list
end

return M
