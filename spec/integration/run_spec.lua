-- run_spec.lua -- `arkbench run` end to end through the real command line:
-- strict JSON under a comma-decimal locale, sub-microsecond RTT resolution,
-- bad input refused (exit 2) before anything runs, topology splits and idle
-- loops, raw framing, large payloads, CPU work, and --list.
--
-- Runs the binary named by $ARKBENCH_BIN (ctest sets it after building), else
-- the launcher $ARKBENCH_ROOT/bin/arkbench (which rebuilds first); every
-- result goes under a fresh temp folder.
-- Runtime: ~10 s (short runs: --quick or duration=0.2, one repetition).
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")

local ROOT, BIN, cjson, run = ark.ROOT, ark.BIN, ark.cjson, ark.run
local shq, read_file, write_file, exists = files.shq, files.read_file, files.write_file, files.exists
local sh_ok = proc.sh_ok

local function lines_of(text)
    local out = {}
    for line in (text or ""):gmatch("[^\n]+") do out[#out + 1] = line end
    return out
end

local function tmpdir() return files.tmpdir("_e2e_run") end

teardown(function()
    files.remove_tmpdirs()
end)

local function sha256_of(path)
    return proc.sh_out("sha256sum " .. shq(path) .. " 2>/dev/null"):match("^(%x+)")
end

-- Strict JSON text check: outside string literals there must be no NaN,
-- Infinity, nan or inf tokens, whatever the decoder accepts.
local function strip_strings(s)
    local out, i, n = {}, 1, #s
    while i <= n do
        local c = s:sub(i, i)
        if c == '"' then
            local j = i + 1
            while j <= n do
                local cj = s:sub(j, j)
                if cj == "\\" then j = j + 2
                elseif cj == '"' then break
                else j = j + 1 end
            end
            out[#out + 1] = '""'
            i = j + 1
        else
            out[#out + 1] = c
            i = i + 1
        end
    end
    return table.concat(out)
end

local function assert_strict_json_text(text, what)
    local bare = strip_strings(text)
    for _, tok in ipairs({ "NaN", "nan", "Infinity", "inf", "Inf", "NAN", "INF" }) do
        assert.is_nil(bare:find(tok, 1, true), what .. " has a bare " .. tok .. " token: " .. text:sub(1, 300))
    end
    -- every number token outside strings is a plain JSON number
    for num in bare:gmatch("[-%d%.eE+]+") do
        if num:find("%d") then
            assert.is_truthy(num:match("^%-?%d+%.?%d*[eE]?[-+]?%d*$"),
                what .. ": malformed number token '" .. num .. "'")
        end
    end
    local ok, v = pcall(cjson.decode, text)
    assert.is_true(ok, what .. " is not strict JSON: " .. tostring(v))
    return v
end

local function decode_file(path)
    local text = assert(read_file(path), path .. " is missing")
    return assert_strict_json_text(text, path), text
end

local function read_runs(dir)
    local text = read_file(dir .. "/runs.jsonl")
    assert.is_truthy(text, dir .. "/runs.jsonl is missing")
    local runs, raw = {}, {}
    for i, line in ipairs(lines_of(text)) do
        runs[i] = assert_strict_json_text(line, "runs.jsonl line " .. i)
        raw[i] = line
    end
    return runs, raw
end

local PCTS = { "min", "p50", "p90", "p95", "p99", "p999", "max" }

local function assert_identity(r)
    local where = tostring(r.case_id) .. " rep " .. tostring(r.repetition)
    for _, k in ipairs({ "sent", "completed", "drained", "timed_out", "message_errors", "unfinished" }) do
        assert.are.equal("number", type(r[k]), where .. ": " .. k .. " is not a number")
        assert.are.equal(math.floor(r[k]), r[k], where .. ": " .. k .. " is not an integer")
        assert.is_true(r[k] >= 0, where .. ": " .. k .. " < 0")
    end
    assert.are.equal(r.sent, r.completed + r.drained + r.timed_out + r.message_errors + r.unfinished,
        where .. ": sent ~= completed + drained + timed_out + message_errors + unfinished")
end

local function assert_percentiles(r)
    local where = tostring(r.case_id) .. " rep " .. tostring(r.repetition)
    assert.are.equal("table", type(r.rtt_us), where .. ": rtt_us missing")
    assert.is_true(type(r.rtt_us.count) == "number" and r.rtt_us.count > 0, where .. ": rtt_us.count")
    for i, k in ipairs(PCTS) do
        assert.are.equal("number", type(r.rtt_us[k]), where .. ": rtt_us." .. k .. " is not a number")
        if i > 1 then
            local prev = PCTS[i - 1]
            assert.is_true(r.rtt_us[prev] <= r.rtt_us[k],
                string.format("%s: rtt_us.%s (%s) > rtt_us.%s (%s)", where, prev,
                    tostring(r.rtt_us[prev]), k, tostring(r.rtt_us[k])))
        end
    end
    assert.is_true(r.rtt_us.min > 0, where .. ": rtt_us.min <= 0")
end

-- Parses an ab1: histogram encoding (core/base/histogram.h).
local function decode_hist(s)
    assert.are.equal("string", type(s), "rtt_histogram is not a string")
    local count, min, max, overflow, sum, sumsq, rest =
        s:match("^ab1:(%d+):(%d+):(%d+):(%d+):(%x+):(%x+):?(.*)$")
    assert.is_truthy(count, "rtt_histogram does not match ab1:count:min:max:overflow:sum:sumsq:...: " .. s:sub(1, 120))
    local h = { count = tonumber(count), min = tonumber(min), max = tonumber(max),
                overflow = tonumber(overflow), sum = sum, sumsq = sumsq, buckets = {}, nbuckets = 0 }
    local idx, total = 0, 0
    local first = true
    for d, n in rest:gmatch("(%d+)=(%d+)") do
        d, n = tonumber(d), tonumber(n)
        if not first then assert.is_true(d > 0, "bucket deltas must be positive") end
        first = false
        idx = idx + d
        assert.is_true(n > 0, "a listed bucket is empty")
        assert.is_nil(h.buckets[idx], "bucket listed twice")
        h.buckets[idx] = n
        h.nbuckets = h.nbuckets + 1
        total = total + n
    end
    -- every entry of the list was consumed by the pattern
    local entries = 0
    for _ in rest:gmatch("[^,]+") do entries = entries + 1 end
    assert.are.equal(entries, h.nbuckets, "malformed bucket list")
    h.total = total
    return h
end

local function new_scenario(dir, name, text)
    local path = dir .. "/" .. name .. ".lua"
    write_file(path, text)
    return path
end

local QUICK = { "--set", "duration=0.2", "--set", "warmup=0.05", "--set", "repetitions=1" }

local function args_with(base, extra)
    local a = {}
    for _, v in ipairs(base) do a[#a + 1] = v end
    for _, v in ipairs(extra or {}) do a[#a + 1] = v end
    return a
end

---------------------------------------------------------------------------
describe("arkbench run: strict JSON under a comma-decimal locale (acceptance 2)", function()
    local out, rc, stdout, stderr, locdir, locale_ok, sha_before, sha_after

    setup(function()
        local d = tmpdir()
        out = d .. "/out"
        -- build de_DE.UTF-8 if we can, so the locale really applies
        local env = { "LC_ALL=de_DE.UTF-8", "LC_NUMERIC=de_DE.UTF-8", "LANG=de_DE.UTF-8" }
        if sh_ok("command -v localedef >/dev/null 2>&1") then
            locdir = d .. "/locale"
            os.execute("mkdir -p " .. shq(locdir) .. " && localedef -i de_DE -f UTF-8 "
                .. shq(locdir .. "/de_DE.UTF-8") .. " >/dev/null 2>&1")
            if exists(locdir .. "/de_DE.UTF-8") then
                env[#env + 1] = "LOCPATH=" .. locdir
                local p = io.popen("env LOCPATH=" .. shq(locdir)
                    .. " LC_ALL=de_DE.UTF-8 /usr/bin/printf '%.1f' 1.5 2>/dev/null")
                locale_ok = p:read("*a") == "1,5"
                p:close()
            end
        end
        sha_before = sha256_of(BIN)
        rc, stdout, stderr = run(args_with({ "run", "scenarios/tcp.lua", "--quick",
            "--filter", "payload=64", "--out", out }), { env = env })
        sha_after = sha256_of(BIN)
    end)

    it("the run succeeds (exit 0) and writes runs.jsonl, summary.json and env.json", function()
        assert.are.equal(0, rc, "exit code; stderr:\n" .. stderr)
        assert.is_truthy(exists(out .. "/runs.jsonl"))
        assert.is_truthy(exists(out .. "/summary.json"))
        assert.is_truthy(exists(out .. "/env.json"))
        if locale_ok == false then
            error("the generated de_DE.UTF-8 locale did not print 1,5 (test setup)")
        end
    end)

    it("every runs.jsonl line is strict JSON with '.' decimals, ok, and 10 runs", function()
        local runs, raw = read_runs(out)
        assert.are.equal(10, #runs, "payload=64 has 10 cases x 1 repetition")
        for i, r in ipairs(runs) do
            assert.is_true(r.ok, "run " .. i .. " not ok: " .. tostring(r.error))
            assert.are.equal("ok", r.status)
            assert.are.equal(1, r.schema_version)
            -- fractional values are written with a '.' (a ',' would split them)
            assert.is_truthy(raw[i]:find('"elapsed_s":%-?%d+%.%d+'),
                "elapsed_s is not written as a '.' decimal: " .. raw[i]:sub(1, 200))
            assert.is_truthy(raw[i]:find('"cpu_percent":%-?%d+%.?%d*'), "cpu_percent missing")
            assert.are.equal("number", type(r.elapsed_s))
            assert.is_true(r.elapsed_s > 0.2 and r.elapsed_s < 30, "elapsed_s = " .. tostring(r.elapsed_s))
            assert.is_true(r.measured_s > 0.1 and r.measured_s < 1, "measured_s = " .. tostring(r.measured_s))
            assert.are.equal(64, r.case.payload)
        end
    end)

    it("every run satisfies sent = completed + drained + timed_out + message_errors + unfinished", function()
        local runs = read_runs(out)
        assert.is_true(#runs > 0)
        for _, r in ipairs(runs) do
            assert_identity(r)
            assert.is_true(r.completed > 0, r.case_id .. ": completed = 0")
        end
    end)

    it("every run has min <= p50 <= p90 <= p95 <= p99 <= p999 <= max", function()
        local runs = read_runs(out)
        assert.is_true(#runs > 0)
        for _, r in ipairs(runs) do assert_percentiles(r) end
    end)

    it("summary.json decodes strictly and covers the 10 cases", function()
        local s = decode_file(out .. "/summary.json")
        assert.are.equal(10, #s.cases)
        assert.are.equal(false, s.interrupted)
        assert.are.equal(10, s.runs_total)
        assert.are.equal(0, s.runs_failed)
        for _, c in ipairs(s.cases) do
            assert.are.equal(1, c.runs_ok, c.case_id)
        end
    end)

    it("env.json decodes strictly and describes the host, the binary and the scenario", function()
        local e = decode_file(out .. "/env.json")
        assert.are.equal("string", type(e.cpu_model))
        assert.is_truthy(e.cpu_model:find("%S"), "cpu_model is blank")
        assert.are.equal("number", type(e.logical_cpus))
        assert.is_true(e.logical_cpus >= 1 and e.logical_cpus == math.floor(e.logical_cpus))
        assert.is_truthy(tostring(e.luajit):find("LuaJIT"), "luajit = " .. tostring(e.luajit))
        assert.is_truthy(tostring(e.libuv):match("^%d+%.%d+%.%d+"), "libuv = " .. tostring(e.libuv))
        assert.is_truthy(tostring(e.openssl):find("%d+%.%d+"), "openssl = " .. tostring(e.openssl))
        assert.is_truthy(tostring(e.binary_sha256):match("^%x+$") and #e.binary_sha256 == 64,
            "binary_sha256 = " .. tostring(e.binary_sha256))
        if sha_before and sha_before == sha_after then -- the binary did not change under us
            assert.are.equal(sha_before, e.binary_sha256, "binary_sha256 is not the SHA-256 of " .. BIN)
        end
        assert.are.equal(sha256_of(ROOT .. "/scenarios/tcp.lua"), e.scenario_sha256)
        local runs = read_runs(out)
        assert.are.equal(e.scenario_sha256, runs[1].scenario.sha256)
    end)
end)

---------------------------------------------------------------------------
describe("arkbench run: RTT resolution (acceptance 3)", function()
    it("a 64 B, 1 client, window 1 run records sub-microsecond RTTs in > 50 buckets", function()
        local d = tmpdir()
        local scen = new_scenario(d, "rtt", "return {\n  payload = 64,\n  clients = 1,\n  window = 1,\n}\n")
        local rc, _, stderr = run(args_with({ "run", scen, "--out", d .. "/out" }, QUICK))
        assert.are.equal(0, rc, stderr)
        local runs = read_runs(d .. "/out")
        assert.are.equal(1, #runs)
        local r = runs[1]
        assert.is_true(r.ok, tostring(r.error))
        assert.are.equal(64, r.case.payload)
        assert.are.equal(1, r.case.clients)
        assert.are.equal(1, r.case.window)
        local h = decode_hist(r.rtt_histogram)
        assert.is_true(h.count > 0)
        assert.are.equal(h.count, h.total + h.overflow, "bucket counts + overflow ~= count")
        assert.are.equal(r.rtt_us.count, h.count, "rtt_us.count ~= histogram count")
        assert.is_true(h.nbuckets > 50, "only " .. h.nbuckets .. " non-empty buckets")
        assert.is_true(h.min > 0, "histogram min = 0")
        assert.is_true(h.min <= h.max)
        assert.is_false(h.min % 1000 == 0 and h.max % 1000 == 0,
            string.format("min %d and max %d ns are both whole microseconds", h.min, h.max))
        -- the µs summary is the same data as the histogram
        assert.is_true(math.abs(r.rtt_us.min * 1000 - h.min) < 1, "rtt_us.min ~= histogram min")
        assert.is_true(math.abs(r.rtt_us.max * 1000 - h.max) < 1, "rtt_us.max ~= histogram max")
    end)
end)

---------------------------------------------------------------------------
describe("arkbench run: bad input exits 2 before anything runs (acceptance 5)", function()
    local d
    setup(function() d = tmpdir() end)

    local function refused(name, text, expect_fn)
        local scen = new_scenario(d, name, text)
        local out = d .. "/out_" .. name
        local rc, stdout, stderr = run({ "run", scen, "--out", out })
        assert.are.equal(2, rc, name .. ": exit code; stderr:\n" .. stderr)
        assert.is_false(exists(out), name .. ": the results folder was created")
        assert.is_nil(stderr:find("%[1/"), name .. ": a run started")
        assert.is_nil(stdout:find("round trips/s", 1, true), name .. ": a table was printed")
        expect_fn(scen, stderr)
        -- without --out, nothing appears under results/ of the working folder
        local cwd = d .. "/cwd_" .. name
        os.execute("mkdir -p " .. shq(cwd))
        local rc2 = run({ "run", scen }, { cwd = cwd })
        assert.are.equal(2, rc2)
        assert.is_false(exists(cwd .. "/results"), name .. ": results/ was created")
    end

    it("a syntax error names file:line", function()
        refused("syntax", "return {\n  payload = 64,\n  clients = ,\n}\n", function(scen, err)
            assert.is_truthy(err:find(scen .. ":3:", 1, true), "stderr lacks " .. scen .. ":3:\n" .. err)
        end)
    end)

    it("a misspelt key is named with a suggestion", function()
        refused("misspelt", "return {\n  paylod = 64,\n}\n", function(scen, err)
            assert.is_truthy(err:find(scen .. ":2: unknown key 'paylod'; did you mean 'payload'?", 1, true),
                "stderr:\n" .. err)
        end)
    end)

    it("a wrong type names the key, the value and the expected type", function()
        refused("badtype", "return {\n  payload = \"abc\",\n}\n", function(scen, err)
            assert.is_truthy(err:find(scen .. ":2: key 'payload': got string \"abc\"; expected an integer", 1, true),
                "stderr:\n" .. err)
            assert.is_truthy(err:find("16", 1, true) and err:find("16777216", 1, true), "range missing:\n" .. err)
        end)
    end)

    it("duration = 0 names the allowed range", function()
        refused("zeroduration", "return {\n  duration = 0,\n}\n", function(scen, err)
            assert.is_truthy(err:find(scen .. ":2: key 'duration': got 0; expected a number > 0", 1, true),
                "stderr:\n" .. err)
            assert.is_truthy(err:find("3600", 1, true), "upper bound missing:\n" .. err)
        end)
    end)

    it("clients = 0 names the allowed range", function()
        refused("zeroclients", "return {\n  clients = 0,\n}\n", function(scen, err)
            assert.is_truthy(err:find(scen .. ":2: key 'clients': got 0; expected an integer from 1 to 100000", 1, true),
                "stderr:\n" .. err)
        end)
    end)

    it("an unknown command-line option exits 2 and names the option", function()
        local scen = new_scenario(d, "fine", "return {\n  payload = 64,\n}\n")
        local out = d .. "/out_option"
        local rc, stdout, stderr = run(args_with({ "run", scen, "--bogus-option", "--out", out }, QUICK))
        assert.are.equal(2, rc, stderr)
        assert.is_truthy(stderr:find("--bogus-option", 1, true), "stderr:\n" .. stderr)
        assert.is_false(exists(out), "the results folder was created")
        assert.are.equal("", stdout)
    end)
end)

---------------------------------------------------------------------------
describe("arkbench run: topology split (acceptance 6)", function()
    it("clients = 10 over sharded:4 puts 3, 3, 2, 2 connections on the loops", function()
        local d = tmpdir()
        local scen = new_scenario(d, "split10",
            "return {\n  payload = 64,\n  clients = 10,\n  window = 1,\n  topology = \"sharded:4\",\n}\n")
        local rc, _, stderr = run(args_with({ "run", scen, "--out", d .. "/out" }, QUICK))
        assert.are.equal(0, rc, stderr)
        assert.is_nil(stderr:find("loops run without a connection", 1, true), "unexpected idle-loop warning")
        local runs = read_runs(d .. "/out")
        assert.are.equal(1, #runs)
        local r = runs[1]
        assert.is_true(r.ok, tostring(r.error))
        assert.are.same({ 3, 3, 2, 2 }, r.connections_per_loop)
        assert.are.equal(4, r.loops)
        assert.are.equal("sharded", r.model)
        assert.is_true(r.completed > 0)
        assert_identity(r)
    end)

    it("clients = 2 over sharded:8 runs 2 connections, 6 idle loops, a note and a warning first", function()
        local d = tmpdir()
        local scen = new_scenario(d, "split2",
            "return {\n  payload = 64,\n  clients = 2,\n  topology = \"sharded:8\",\n}\n")
        local rc, _, stderr = run(args_with({ "run", scen, "--out", d .. "/out" }, QUICK))
        assert.are.equal(0, rc, stderr)
        local runs = read_runs(d .. "/out")
        assert.are.equal(1, #runs)
        local r = runs[1]
        assert.is_true(r.ok, tostring(r.error))
        assert.are.equal(8, r.loops)
        assert.are.equal(8, #r.connections_per_loop)
        local sum, zeros = 0, 0
        for _, n in ipairs(r.connections_per_loop) do
            sum = sum + n
            if n == 0 then zeros = zeros + 1 end
        end
        assert.are.equal(2, sum)
        assert.are.equal(6, zeros)
        assert.is_true(r.completed > 0)
        local noted = false
        for _, n in ipairs(r.notes or {}) do
            if tostring(n):find("6 of 8 loops have no connection", 1, true) then noted = true end
        end
        assert.is_true(noted, "no note '6 of 8 loops have no connection' in " .. cjson.encode(r.notes or {}))
        -- the warning is on stderr, before the first run's progress line
        local warn = stderr:find("6 of 8 loops", 1, true)
        assert.is_truthy(warn, "no idle-loop warning on stderr:\n" .. stderr)
        assert.is_truthy(stderr:find("warning:", 1, true), "the warning is not marked as one:\n" .. stderr)
        local progress = stderr:find("[1/1]", 1, true)
        assert.is_truthy(progress, "no progress line:\n" .. stderr)
        assert.is_true(warn < progress, "the warning came after the run:\n" .. stderr)
    end)
end)

---------------------------------------------------------------------------
describe("arkbench run: framing, payload and work", function()
    it("framing = raw runs ok", function()
        local d = tmpdir()
        local scen = new_scenario(d, "raw", "return {\n  payload = 64,\n  framing = \"raw\",\n}\n")
        local rc, _, stderr = run(args_with({ "run", scen, "--out", d .. "/out" }, QUICK))
        assert.are.equal(0, rc, stderr)
        local runs = read_runs(d .. "/out")
        assert.are.equal(1, #runs)
        assert.is_true(runs[1].ok, tostring(runs[1].error))
        assert.are.equal("raw", runs[1].case.framing)
        assert.is_true(runs[1].completed > 0)
        assert.are.equal(0, runs[1].message_errors)
        assert_identity(runs[1])
        assert_percentiles(runs[1])
    end)

    it("16384-byte payloads with 16 clients x window 16 run ok", function()
        local d = tmpdir()
        local scen = new_scenario(d, "big",
            "return {\n  payload = 16384,\n  clients = 16,\n  window = 16,\n}\n")
        local rc, _, stderr = run(args_with({ "run", scen, "--out", d .. "/out" }, QUICK))
        assert.are.equal(0, rc, stderr)
        local runs = read_runs(d .. "/out")
        assert.are.equal(1, #runs)
        local r = runs[1]
        assert.is_true(r.ok, tostring(r.error))
        assert.are.equal(16384, r.case.payload)
        assert.are.equal(16, r.case.clients)
        assert.are.equal(16, r.case.window)
        assert.is_true(r.completed > 0)
        assert.are.equal(0, r.message_errors)
        assert.are.equal(0, r.timed_out)
        assert_identity(r)
        assert_percentiles(r)
        -- MiB/s is the completed payload over the measured interval
        local want = r.completed * 16384 / r.measured_s / 1048576
        assert.is_true(math.abs(r.payload_mib_per_s - want) <= want * 1e-6 + 1e-9,
            "payload_mib_per_s " .. r.payload_mib_per_s .. " ~= " .. want)
    end)

    it("work = 10000 makes the p50 RTT larger than work = 0 (1 x 1)", function()
        local d = tmpdir()
        local scen = new_scenario(d, "work", "return {\n  payload = 64,\n  clients = 1,\n  window = 1,\n}\n")
        local rc, _, stderr = run(args_with({ "run", scen, "--set", "work=0,10000", "--out", d .. "/out" }, QUICK))
        assert.are.equal(0, rc, stderr)
        local runs = read_runs(d .. "/out")
        assert.are.equal(2, #runs)
        local by = {}
        for _, r in ipairs(runs) do
            assert.is_true(r.ok, tostring(r.error))
            by[r.case.work] = r
        end
        assert.is_truthy(by[0], "no work=0 run")
        assert.is_truthy(by[10000], "no work=10000 run")
        assert.is_true(by[10000].rtt_us.p50 > by[0].rtt_us.p50,
            string.format("p50 with work=10000 (%s us) is not above work=0 (%s us)",
                tostring(by[10000].rtt_us.p50), tostring(by[0].rtt_us.p50)))
    end)
end)

---------------------------------------------------------------------------
describe("arkbench run --list", function()
    it("prints 30 cases / 90 runs for scenarios/tcp.lua and runs nothing", function()
        local d = tmpdir()
        local out = d .. "/out"
        local rc, stdout, stderr = run({ "run", "scenarios/tcp.lua", "--list", "--out", out })
        assert.are.equal(0, rc, stderr)
        local rows = {}
        for _, line in ipairs(lines_of(stdout)) do
            local n = line:match("^%s*(%d+)%s+%S")
            if n and line:find("payload=", 1, true) then rows[#rows + 1] = tonumber(n) end
        end
        assert.are.equal(30, #rows, "case lines:\n" .. stdout)
        for i, n in ipairs(rows) do assert.are.equal(i, n) end
        assert.is_truthy(stdout:find("30 cases, 90 runs", 1, true), stdout)
        assert.is_false(exists(out), "--list created the results folder")
        assert.is_nil(stderr:find("%[1/"), "--list started a run")
    end)
end)
