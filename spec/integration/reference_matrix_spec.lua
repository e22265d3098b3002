-- reference_matrix_spec.lua -- acceptance 1: the full reference matrix,
-- `bin/arkbench run scenarios/tcp.lua --out DIR` (30 cases x 3 fresh
-- processes = 90 runs, ~2.5-3 min), through the launcher users type.
local cjson = require("cjson").new()
cjson.decode_invalid_numbers(false)

local ROOT = os.getenv("ARKBENCH_ROOT") or "."
local LAUNCHER = ROOT .. "/bin/arkbench"

package.path = ROOT .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local shq, read_file = files.shq, files.read_file
local sh_ok = proc.sh_ok

local function lines_of(text)
    local out = {}
    for line in ((text or "") .. "\n"):gmatch("(.-)\n") do out[#out + 1] = line end
    return out
end

local function decode(text, what)
    local ok, v = pcall(cjson.decode, text)
    assert.is_true(ok, what .. " is not strict JSON: " .. tostring(v))
    return v
end

local dir, out, rc, stdout, stderr

setup(function()
    local p = os.tmpname()
    os.remove(p)
    dir = p .. "_e2e_ref"
    assert(sh_ok("mkdir -p " .. shq(dir)))
    out = dir .. "/out"
    local cmd = "cd " .. shq(ROOT) .. " && " .. shq(LAUNCHER) .. " run scenarios/tcp.lua --out " .. shq(out)
        .. " >" .. shq(dir .. "/stdout") .. " 2>" .. shq(dir .. "/stderr") .. " </dev/null; echo $?"
    local h = io.popen(cmd)
    rc = tonumber(h:read("*a"):match("(%d+)"))
    h:close()
    stdout = read_file(dir .. "/stdout") or ""
    stderr = read_file(dir .. "/stderr") or ""
end)

teardown(function()
    if dir then os.execute("rm -rf " .. shq(dir)) end
end)

describe("bin/arkbench run scenarios/tcp.lua (the reference matrix, acceptance 1)", function()
    it("exits 0", function()
        assert.are.equal(0, rc, "stderr:\n" .. stderr)
    end)

    it("writes 90 ok runs: 30 cases x repetitions 1, 2, 3", function()
        local text = read_file(out .. "/runs.jsonl")
        assert.is_truthy(text, "runs.jsonl is missing")
        local runs = {}
        for line in text:gmatch("[^\n]+") do runs[#runs + 1] = decode(line, "runs.jsonl line " .. (#runs + 1)) end
        assert.are.equal(90, #runs)
        local reps, ncases = {}, 0
        for i, r in ipairs(runs) do
            assert.is_true(r.ok, string.format("run %d (%s rep %s) failed: %s", i, tostring(r.case_id),
                tostring(r.repetition), tostring(r.error)))
            assert.are.equal("ok", r.status)
            assert.is_true(r.completed > 0, tostring(r.case_id))
            assert.are.equal(r.sent, r.completed + r.drained + r.timed_out + r.message_errors + r.unfinished,
                tostring(r.case_id) .. ": accounting identity")
            if not reps[r.case_id] then
                reps[r.case_id] = {}
                ncases = ncases + 1
            end
            assert.is_nil(reps[r.case_id][r.repetition], "repetition recorded twice for " .. r.case_id)
            reps[r.case_id][r.repetition] = true
        end
        assert.are.equal(30, ncases)
        for id, set in pairs(reps) do
            assert.is_true(set[1] and set[2] and set[3], id .. " lacks a repetition")
        end
        -- repetitions are outermost: the first 30 runs are repetition 1
        for i = 1, 30 do assert.are.equal(1, runs[i].repetition) end
    end)

    it("summary.json has 30 cases, each with 3 ok runs", function()
        local text = read_file(out .. "/summary.json")
        assert.is_truthy(text, "summary.json is missing")
        local s = decode(text, "summary.json")
        assert.are.equal(30, #s.cases)
        assert.are.equal(false, s.interrupted)
        assert.are.equal(90, s.runs_total)
        assert.are.equal(0, s.runs_failed)
        local seen = {}
        for _, c in ipairs(s.cases) do
            assert.is_nil(seen[c.case_id], "case listed twice: " .. tostring(c.case_id))
            seen[c.case_id] = true
            assert.are.equal(3, c.runs, c.case_id)
            assert.are.equal(3, c.runs_ok, c.case_id)
            assert.are.equal(0, #c.failed, c.case_id)
            assert.are.equal(3, c.metrics.round_trips_per_s.n, c.case_id)
            assert.is_true(c.metrics.round_trips_per_s.median > 0, c.case_id)
        end
    end)

    it("prints a table with 30 data rows on stdout", function()
        local lines = lines_of(stdout)
        local sep
        for i, line in ipairs(lines) do
            if line:match("^%-+[%s%-]*$") then sep = i; break end
        end
        assert.is_truthy(sep, "no table separator line on stdout:\n" .. stdout)
        assert.is_truthy(lines[sep - 1] and lines[sep - 1]:find("round trips/s", 1, true), "no header line")
        local rows = {}
        for i = sep + 1, #lines do
            if not lines[i]:find("%S") then break end
            rows[#rows + 1] = lines[i]
        end
        assert.are.equal(30, #rows, "table rows:\n" .. stdout)
        for _, row in ipairs(rows) do
            assert.is_truthy(row:find("3/3", 1, true), "row without 3/3 runs: " .. row)
        end
    end)

    it("writes env.json", function()
        local text = read_file(out .. "/env.json")
        assert.is_truthy(text, "env.json is missing")
        local e = decode(text, "env.json")
        assert.are.equal("string", type(e.cpu_model))
        assert.are.equal("number", type(e.logical_cpus))
        assert.is_truthy(tostring(e.scenario_sha256):match("^" .. ("%x"):rep(64) .. "$"))
        assert.are.equal("string", type(e.ended_utc))
    end)
end)
