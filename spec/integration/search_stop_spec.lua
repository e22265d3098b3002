-- search_stop_spec.lua -- issue 27, acceptance 1: `arkbench search` never
-- answers from what it did not measure.
--   1. runs.jsonl on a full disk (a small tmpfs as --out; root: mount -t
--      tmpfs, else skipped saying so): exit 1, ENOSPC named, no line
--      starting "answer:", "stopped, no answer: N probes measured and
--      saved" with N the probes printed and the runs in runs.jsonl, and the
--      runner's "K earlier run(s)" counting the probes saved before.
--   2. Ctrl-C (SIGINT to the process group, as a terminal sends it) during
--      a probe: exit 130, "interrupted, no answer", no "answer:" line, and
--      the probe cut short is not in summary.json's probes (no pass: false).
-- Asserts on counts and lines, never on a speed.
-- Runtime: ~15 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")
local peers = require("helpers.peers")

local cjson = ark.cjson
local shq = files.shq

local groups = {}
teardown(function()
    for _, g in ipairs(groups) do
        if not files.read_file(g .. "/rc") then
            local pgid = tonumber((files.read_file(g .. "/pgid") or ""):match("%d+"))
            if pgid then os.execute("kill -KILL -" .. pgid .. " 2>/dev/null") end
        end
    end
    proc.stop_all()
    files.remove_tmpdirs()
end)

local HAVE_OPEN = require("arkbench.core").capabilities().limits.open_loop

local SCENARIO = [[
return {
    name = "stop",
    payload = 64,
    target = "127.0.0.1:%d",
    clients = 1,
    window = 4,
    warmup = 0.1,
    duration = %s,
    timeout = 5,
    repetitions = 1,
}
]]

local function server_and_scenario(duration)
    local srv = proc.spawn({ ark.BIN, "serve", "--topology", "sharded:1" }, { name = "arkbench serve" })
    local port = peers.wait_listening(srv)
    local d = files.tmpdir("_search_stop")
    local path = d .. "/stop.lua"
    files.write_file(path, SCENARIO:format(port, duration))
    return d, path, srv
end

local function lines_starting(text, prefix)
    local n = 0
    for l in text:gmatch("[^\n]+") do
        if l:sub(1, #prefix) == prefix then n = n + 1 end
    end
    return n
end

describe("arkbench search with runs.jsonl on a full disk", function()
    it("stops: exit 1, ENOSPC named, the probes so far counted, no answer", function()
        if not HAVE_OPEN then return pending("this build has no open loop") end
        local d, path, srv = server_and_scenario("0.2")
        local mnt = d .. "/mnt"
        os.execute("mkdir -p " .. shq(mnt))
        if not proc.sh_ok("mount -t tmpfs -o size=256k tmpfs " .. shq(mnt) .. " 2>/dev/null") then
            pending("mount -t tmpfs is not permitted here (needs root); full-disk search check skipped")
            return
        end
        finally(function() os.execute("umount " .. shq(mnt) .. " 2>/dev/null") end)
        -- leave 16 KiB: env.json and a few run objects fit, not ten
        proc.sh_ok("head -c " .. (256 - 16) * 1024 .. " /dev/zero > " .. shq(mnt .. "/filler"))
        -- from 10/s (passes) to 1e6/s (one connection cannot): a bisection
        -- of up to 10 probes, more than the disk holds
        local rc, so, se = proc.run_cmd({ ark.BIN, "search", path, "--slo", "p99_us<1e9",
                                          "--from", "10", "--to", "1e6", "--out", mnt .. "/s" },
                                        { limit = 120 })
        proc.stop(srv)
        local where = "stdout:\n" .. so .. "\nstderr:\n" .. se
        assert.are.equal(1, rc, where)
        assert.are.equal(0, lines_starting(so, "answer:"), where)
        assert.truthy(se:find("ENOSPC", 1, true), where)
        local printed = lines_starting(so, "probe ")
        local n = tonumber(so:match("\nstopped, no answer: (%d+) probes? measured and saved %(above%); "
                                    .. "a run object could not be saved: [^\n]*ENOSPC")
                           or so:match("^stopped, no answer: (%d+) probes? measured and saved %(above%); "
                                       .. "a run object could not be saved: [^\n]*ENOSPC"))
        assert.truthy(n, where)
        assert.are.equal(printed, n, where)
        local runs = ark.read_runs(mnt .. "/s/runs.jsonl")
        assert.are.equal(n, #runs, where)
        -- the runner's message counts the runs saved before the lost one
        assert.truthy(se:find("; " .. n .. " earlier run(s) are in it", 1, true), where)
        -- the probes that were saved are real measurements
        for _, r in ipairs(runs) do assert.are.equal("probe", r.case.search, where) end
    end)
end)

-- `arkbench search ARGS...` in a session of its own (so its process group
-- can get the terminal's SIGINT without busted); returns the folder
-- holding stdout, stderr, pgid and (once it ended) rc.
local function start_search(args)
    local d = files.tmpdir("_search_intr")
    files.write_file(d .. "/wrapper.sh", [[
#!/bin/sh
# $1 = folder, then arkbench and its arguments
d=$1; shift
trap : INT
echo $$ > "$d/pgid.tmp" && mv "$d/pgid.tmp" "$d/pgid"
"$@" >"$d/stdout" 2>"$d/stderr" </dev/null
echo $? > "$d/rc.tmp" && mv "$d/rc.tmp" "$d/rc"
]])
    local argv = { "setsid", "-f", "sh", d .. "/wrapper.sh", d, ark.BIN, "search" }
    for _, a in ipairs(args) do argv[#argv + 1] = a end
    local q = {}
    for i, a in ipairs(argv) do q[i] = shq(a) end
    assert(proc.sh_ok(table.concat(q, " ") .. " </dev/null >/dev/null 2>&1"))
    local pgid = proc.wait_for(function() return tonumber((files.read_file(d .. "/pgid") or ""):match("%d+")) end, 10)
    assert.is_truthy(pgid, "the wrapper did not start")
    groups[#groups + 1] = d
    return d, pgid
end

describe("arkbench search interrupted by Ctrl-C", function()
    it("exits 130 with 'interrupted, no answer'; the cut probe is not saved as failed", function()
        if not HAVE_OPEN then return pending("this build has no open loop") end
        -- 3 s per probe: the interrupt lands inside the second probe
        local d, path, srv = server_and_scenario("3")
        local out = d .. "/s"
        local sd, pgid = start_search({ path, "--slo", "p99_us<1e9", "--from", "10", "--to", "1e6",
                                        "--out", out })
        local first = proc.wait_for(function()
            return (files.read_file(sd .. "/stdout") or ""):find("probe 1: ", 1, true)
        end, 60)
        assert.is_truthy(first, "no first probe within 60 s: " .. (files.read_file(sd .. "/stderr") or ""))
        proc.sleep(0.5) -- the second probe's worker is running now
        assert(proc.sh_ok("kill -INT -" .. pgid))
        local rc = proc.wait_for(function() return tonumber((files.read_file(sd .. "/rc") or ""):match("%d+")) end, 30)
        proc.stop(srv)
        local so, se = files.read_file(sd .. "/stdout") or "", files.read_file(sd .. "/stderr") or ""
        local where = "stdout:\n" .. so .. "\nstderr:\n" .. se
        assert.are.equal(130, rc, where)
        assert.are.equal(0, lines_starting(so, "answer:"), where)
        assert.are.equal(1, lines_starting(so, "probe "), where)
        assert.truthy(so:find("\ninterrupted, no answer: 1 probe measured and saved (above)\n", 1, true), where)
        local summary = cjson.decode(files.read_file(out .. "/summary.json"))
        local s = summary.search
        assert.are.equal(1, #s.probes, where)
        assert.is_true(s.probes[1].pass, where)
        assert.are.equal(cjson.null, s.answer, where)
        assert.are.equal("interrupted", s.stopped, where)
        -- runs.jsonl: the measured probe, and the cut one marked interrupted
        local runs = ark.read_runs(out .. "/runs.jsonl")
        assert.is_true(#runs >= 1 and #runs <= 2, where)
        assert.is_true(runs[1].ok, where)
        if runs[2] then assert.are.equal("interrupted", runs[2].status, where) end
    end)
end)
