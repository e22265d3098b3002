-- results_spec.lua -- results are never lost, mixed or corrupted, and no
-- input crashes arkbench (issue 11), through the real command line:
--   1. a run into a full small tmpfs exits 1 naming the file and ENOSPC and
--      keeps every run reported ok (root: mount -t tmpfs; skipped, saying so,
--      where mount is not permitted);
--   2. two runs started at once, with or without the same --out, never share
--      a folder;
--   3. --out at a folder of the user's is refused and nothing in it changes;
--   4. a scenario that prints while loading keeps its measurements, its text
--      is in workers.log;
--   5. a scenario name with invalid UTF-8: every JSON file is strict UTF-8
--      JSON (Python's json);
--   6. a cut last line of runs.jsonl: report and compare warn and work;
--   7. every loader case exits 2 with one line, within 5 s;
--   8. report on a 100k-character value takes < 2 s.
--
-- Runs $ARKBENCH_BIN (ctest sets it), else $ARKBENCH_ROOT/bin/arkbench.
-- Runtime: ~30 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")

local cjson, run = ark.cjson, ark.run
local shq, read_file, write_file = files.shq, files.read_file, files.write_file

local function tmpdir() return files.tmpdir("_results") end

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

local QUICK = "warmup = 0.02, duration = 0.05, repetitions = 1"

local function scenario(dir, name, body)
    local path = dir .. "/" .. name .. ".lua"
    write_file(path, body)
    return path
end

local function lines_of(text)
    local out = {}
    for l in (text or ""):gmatch("[^\n]+") do out[#out + 1] = l end
    return out
end

-- sha256 of every file under dir, as one sorted text
local function checksums(dir)
    return proc.sh_out("cd " .. shq(dir) .. " && find . -type f -exec sha256sum {} + | sort; "
                       .. "find . | sort")
end

-- Python's strict json on every *.json and each line of *.jsonl under dir:
-- "ok" or the first error
local function python_strict(dir)
    local script = [[
import json, pathlib, sys
for p in sorted(pathlib.Path(sys.argv[1]).rglob("*.json*")):
    text = p.read_bytes().decode("utf-8")
    docs = text.splitlines() if p.suffix == ".jsonl" else [text]
    for d in docs:
        if d.strip():
            json.loads(d)
print("ok")
]]
    local py = tmpdir() .. "/check.py"
    write_file(py, script)
    local rc, out, err = proc.capture("", { "python3", py, dir })
    return rc == 0 and out:match("ok") and "ok" or (out .. err)
end

describe("results on a full disk", function()
    it("exits 1 naming runs.jsonl and ENOSPC; every run reported ok is kept", function()
        local d = tmpdir()
        local mnt = d .. "/mnt"
        os.execute("mkdir -p " .. shq(mnt))
        if not proc.sh_ok("mount -t tmpfs -o size=256k tmpfs " .. shq(mnt) .. " 2>/dev/null") then
            pending("mount -t tmpfs is not permitted here (needs root); full-disk check skipped")
            return
        end
        finally(function() os.execute("umount " .. shq(mnt) .. " 2>/dev/null") end)
        -- leave 12 KiB: env.json and about four run objects fit
        proc.sh_ok("head -c " .. (256 - 12) * 1024 .. " /dev/zero > " .. shq(mnt .. "/filler"))
        local path = scenario(d, "many", "return { payload = { 64, 128, 256, 512, 1024, 2048 },"
            .. " clients = { 1, 2 }, " .. QUICK .. " }")
        local rc, _, err = run({ "run", path, "--out", mnt .. "/r" })
        assert.are.equal(1, rc, err)
        assert.truthy(err:find("cannot append to " .. mnt .. "/r/runs.jsonl: ENOSPC: no space left"
                               .. " on device", 1, true), err)
        local ok_lines = 0
        for _, l in ipairs(lines_of(err)) do
            if l:match("^%[%d+/12%] .*: ok ") then ok_lines = ok_lines + 1 end
        end
        assert.is_true(ok_lines >= 1, err)
        local text = read_file(mnt .. "/r/runs.jsonl")
        assert.are.equal("\n", text:sub(-1), "runs.jsonl ends with a complete line")
        local runs = ark.read_runs(mnt .. "/r/runs.jsonl")
        assert.are.equal(ok_lines, #runs, "every run reported ok is in runs.jsonl")
        for _, r in ipairs(runs) do assert.is_true(r.ok) end
        -- files written whole or not at all: no temporary names left, and
        -- the JSON files that exist parse
        assert.is_nil(proc.sh_out("ls -A " .. shq(mnt .. "/r")):find("%.tmp%-"))
        assert.are.equal("ok", python_strict(mnt .. "/r"))
    end)
end)

describe("one folder per run", function()
    it("gives two runs of one scenario started in the same second two folders", function()
        local d = tmpdir()
        local path = scenario(d, "twin", "return { payload = { 64, 128 }, " .. QUICK .. " }")
        local a = proc.spawn({ ark.BIN, "run", path }, { cwd = d })
        local b = proc.spawn({ ark.BIN, "run", path }, { cwd = d })
        assert.is_true(proc.wait_for(function() return not proc.alive(a.pid) and not proc.alive(b.pid) end, 60))
        local da = proc.stderr_of(a):match("results: (%S+)")
        local db = proc.stderr_of(b):match("results: (%S+)")
        assert.truthy(da, proc.stderr_of(a))
        assert.truthy(db, proc.stderr_of(b))
        assert.are_not.equal(da, db)
        for _, dir in ipairs({ da, db }) do
            local runs = ark.read_runs(d .. "/" .. dir .. "/runs.jsonl")
            assert.are.equal(2, #runs, dir)
        end
    end)

    it("refuses the second of two runs with the same --out; the first one's runs are alone", function()
        local d = tmpdir()
        local tcp = scenario(d, "t", "return { payload = { 64, 128, 256 }, " .. QUICK .. " }")
        local udp = scenario(d, "u", "return { protocol = 'udp', payload = { 64, 128, 256 }, "
                             .. QUICK .. " }")
        local out = d .. "/same"
        local a = proc.spawn({ ark.BIN, "run", tcp, "--out", out })
        local b = proc.spawn({ ark.BIN, "run", udp, "--out", out })
        assert.is_true(proc.wait_for(function() return not proc.alive(a.pid) and not proc.alive(b.pid) end, 60))
        local ea, eb = proc.stderr_of(a), proc.stderr_of(b)
        local refused = (ea:find("in use by another arkbench run", 1, true)
                         or ea:find("holds an earlier arkbench result", 1, true)) and "a"
                        or (eb:find("in use by another arkbench run", 1, true)
                            or eb:find("holds an earlier arkbench result", 1, true)) and "b"
        assert.truthy(refused, ea .. "\n---\n" .. eb)
        local runs = ark.read_runs(out .. "/runs.jsonl")
        assert.are.equal(3, #runs)
        local protocols = {}
        for _, r in ipairs(runs) do protocols[r.case.protocol] = true end
        assert.are.same(refused == "a" and { udp = true } or { tcp = true }, protocols)
    end)

    it("adds to an earlier result only with --append and the same scenario file", function()
        local d = tmpdir()
        local path = scenario(d, "again", "return { payload = 64, " .. QUICK .. " }")
        local other = scenario(d, "other", "return { payload = 128, " .. QUICK .. " }")
        local out = d .. "/r"
        assert.are.equal(0, (run({ "run", path, "--out", out })))
        local rc, _, err = run({ "run", path, "--out", out })
        assert.are.equal(2, rc)
        assert.truthy(err:find("pass --append", 1, true), err)
        rc, _, err = run({ "run", other, "--out", out, "--append" })
        assert.are.equal(2, rc)
        assert.truthy(err:find("another scenario file", 1, true), err)
        rc, _, err = run({ "run", path, "--out", out, "--append" })
        assert.are.equal(0, rc, err)
        assert.are.equal(2, #ark.read_runs(out .. "/runs.jsonl"))
        -- a cut last line is taken off before appending, with a warning
        write_file(out .. "/runs.jsonl", read_file(out .. "/runs.jsonl") .. '{"cut')
        rc, _, err = run({ "run", path, "--out", out, "--append" })
        assert.are.equal(0, rc, err)
        assert.truthy(err:find("removed a cut last line (5 bytes)", 1, true), err)
        assert.are.equal(3, #ark.read_runs(out .. "/runs.jsonl"))
        local summary = cjson.decode(read_file(out .. "/summary.json"))
        assert.are.equal(3, summary.cases[1].runs, "the summary covers the earlier runs too")
    end)
end)

describe("--out at a folder of the user's", function()
    it("is refused and nothing in it changes", function()
        local d = tmpdir()
        local path = scenario(d, "s", "return { payload = 64, " .. QUICK .. " }")
        local out = d .. "/mine"
        os.execute("mkdir -p " .. shq(out .. "/charts"))
        write_file(out .. "/report.md", "my notes\n")
        write_file(out .. "/charts/mine.svg", "<svg/>\n")
        local before = checksums(out)
        local rc, _, err = run({ "run", path, "--out", out })
        assert.are.equal(2, rc)
        assert.truthy(err:find("holds files arkbench did not write (charts, report.md)", 1, true), err)
        assert.are.equal(1, #lines_of(err))
        assert.are.equal(before, checksums(out))
    end)

    it("keeps the user's .svg files in charts/ when a report is rebuilt", function()
        local d = tmpdir()
        local path = scenario(d, "s", "return { payload = 64, " .. QUICK .. " }")
        local out = d .. "/r"
        assert.are.equal(0, (run({ "run", path, "--out", out })))
        write_file(out .. "/charts/mine.svg", "<svg/>\n")
        assert.are.equal(0, (run({ "report", out })))
        assert.are.equal("<svg/>\n", read_file(out .. "/charts/mine.svg"))
    end)
end)

describe("a scenario that prints while loading", function()
    for _, variant in ipairs({ { "without a newline", 'io.write("loading...")' },
                               { "with a newline", 'print("loading, line")' } }) do
        it("keeps its measurements (" .. variant[1] .. "); the text is in workers.log", function()
            local d = tmpdir()
            local path = scenario(d, "noisy", variant[2] .. "\nreturn { payload = 64, " .. QUICK .. " }")
            local rc, _, err = run({ "run", path, "--out", d .. "/r" })
            assert.are.equal(0, rc, err)
            local runs = ark.read_runs(d .. "/r/runs.jsonl")
            assert.are.equal(1, #runs)
            assert.is_true(runs[1].ok, runs[1].error)
            assert.are.equal("ok", runs[1].status)
            local log = read_file(d .. "/r/workers.log") or ""
            local want = variant[2]:match('"(.-)"')
            assert.truthy(log:find("[default rep 1] stdout: " .. want, 1, true), log)
        end)
    end
end)

describe("invalid UTF-8 in a scenario name", function()
    it("gives strict UTF-8 JSON in every file and a plain folder name", function()
        local d = tmpdir()
        local path = scenario(d, "bytes", 'return { name = "bad\\255\\254name\\192", payload = 64, '
                              .. QUICK .. " }")
        local rc, _, err = run({ "run", path }, { cwd = d })
        assert.are.equal(0, rc, err)
        local dir = err:match("results: (%S+)")
        assert.truthy(dir, err)
        assert.truthy(dir:match("^results/bad__name_/%d+T%d+Z$"), dir)
        assert.truthy(err:find("key 'name': not valid UTF-8", 1, true), err)
        assert.are.equal("ok", python_strict(d .. "/" .. dir))
        local runs = ark.read_runs(d .. "/" .. dir .. "/runs.jsonl")
        assert.are.equal("bad\239\191\189\239\191\189name\239\191\189", runs[1].scenario.name)
    end)
end)

describe("a cut last line in runs.jsonl", function()
    it("is skipped with a warning by report and compare", function()
        local d = tmpdir()
        local path = scenario(d, "cut", "return { payload = { 64, 128 }, " .. QUICK .. " }")
        assert.are.equal(0, (run({ "run", path, "--out", d .. "/a" })))
        assert.are.equal(0, (run({ "run", path, "--out", d .. "/b" })))
        local text = read_file(d .. "/b/runs.jsonl")
        write_file(d .. "/b/runs.jsonl", text .. text:sub(1, 40))
        local rc, out, err = run({ "report", d .. "/b" })
        assert.are.equal(0, rc, err)
        assert.truthy(err:find("runs.jsonl:3: the last line is cut (40 bytes, not JSON); skipped", 1, true), err)
        assert.truthy(out:find("payload", 1, true))
        rc, out, err = run({ "compare", d .. "/a", d .. "/b" })
        assert.are.equal(0, rc, err)
        assert.truthy(err:find("the last line is cut", 1, true), err)
        assert.truthy(out:find("median", 1, true), out)
        -- a bad line that is not the last one is still an error naming it
        write_file(d .. "/b/runs.jsonl", "{oops\n" .. text)
        rc, _, err = run({ "report", d .. "/b" })
        assert.are.equal(2, rc)
        assert.truthy(err:find("runs.jsonl:1:", 1, true), err)
    end)
end)

describe("contained loading and settings checked at load", function()
    local d = tmpdir()
    local function file(name, body) return scenario(d, name, body) end
    local bytecode = d .. "/bytecode.lua"
    write_file(bytecode, string.dump(function() return { payload = 64 } end))
    -- damaged bytecode: the header kept, the rest scrambled
    local damaged = string.dump(function() return { payload = 64 } end)
    write_file(d .. "/damaged.lua", damaged:sub(1, 8) .. string.rep("\255", #damaged - 8))
    os.execute("mkdir -p " .. shq(d .. "/dirrun"))
    os.execute("mkdir -p " .. shq(d .. "/dirrun/runs.jsonl"))
    local cases = {
        { "an endless loop", { "run", file("loop", "while true do end"), "--list" },
          "loading took longer than 2 s" },
        { "an endless loop behind pcall", { "run", file("loop2",
            "while true do pcall(function() while true do end end) end"), "--list" },
          "loading took longer than 2 s" },
        { "os.exit(0)", { "run", file("exit0", "os.exit(0)"), "--list" }, "os.exit is not allowed" },
        { "os.exit(3)", { "run", file("exit3", "os.exit(3)"), "--list" }, "os.exit is not allowed" },
        { "bytecode", { "run", bytecode, "--list" }, "compiled (bytecode) chunk" },
        { "damaged bytecode", { "run", d .. "/damaged.lua", "--list" }, "compiled (bytecode) chunk" },
        { "raising metamethods", { "run", file("meta", "return setmetatable({}, { __index = "
            .. "function() error('boom') end, __tostring = function() error('ts') end })"), "--list" },
          "the returned table has a metatable" },
        { "a raising metamethod inside", { "run", file("meta2", "return { tls = setmetatable({},"
            .. " { __index = function() error('boom') end }) }"), "--list" },
          "key 'tls' has a metatable" },
        { "runs.jsonl is a folder", { "report", d .. "/dirrun" }, "is a directory, not a runs.jsonl file" },
        { "bad ciphers", { "run", file("ciphers", "return { protocol = 'tls', tls = { ciphers = 'NOPE' } }"),
            "--list" }, "key 'ciphers': got string \"NOPE\"; OpenSSL refuses it" },
        { "bad TLS 1.2 ciphers", { "run", file("ciphers12", "return { protocol = 'tls', tls = {"
            .. " version = '1.2', ciphers = 'NOPE' } }"), "--list" }, "no usable TLS 1.2 cipher" },
        { "a 300-byte ALPN name", { "run", file("alpnlong", "return { protocol = 'tls', tls = {"
            .. " alpn = { string.rep('a', 300) } } }"), "--list" }, "a name of 1 to 255 bytes (got 300)" },
        { "a comma in an ALPN name", { "run", file("alpncomma", "return { protocol = 'tls', tls = {"
            .. " alpn = { 'a,b' } } }"), "--list" }, "one name without commas" },
        { "NUL in the SNI", { "run", file("sni", "return { protocol = 'tls', tls = { sni = 'a\\0b' } }"),
            "--list" }, "a string without NUL bytes" },
        { "--out -x", { "run", file("plain", "return { payload = 64 }"), "--out", "-x" },
          "--out '-x': looks like an option" },
    }
    for _, c in ipairs(cases) do
        it(c[1] .. ": exit 2, one line, within 5 s", function()
            local rc, _, err, wall = proc.capture("", (function()
                local argv = { ark.BIN }
                for _, a in ipairs(c[2]) do argv[#argv + 1] = a end
                return argv
            end)(), { cwd = d })
            assert.are.equal(2, rc, err)
            local ls = lines_of(err)
            assert.are.equal(1, #ls, err)
            assert.truthy(ls[1]:find(c[3], 1, true), err)
            assert.is_nil(err:find("traceback", 1, true))
            assert.is_true(wall < 5, c[1] .. " took " .. wall .. " s")
        end)
    end
end)

describe("report on a long value", function()
    it("takes < 2 s for a 100k-character case value; chart names stay short", function()
        local d = tmpdir()
        local path = scenario(d, "long", "return { payload = 64, " .. QUICK .. " }")
        assert.are.equal(0, (run({ "run", path, "--out", d .. "/r" })))
        local runs = ark.read_runs(d .. "/r/runs.jsonl")
        local r = runs[1]
        r.case.framing = string.rep("F", 100000)
        r.case_id = r.case_id .. string.rep("F", 100000)
        local r2 = cjson.decode(cjson.encode(r))
        r2.case.framing = string.rep("F", 100000) .. "2"
        r2.case_id = r2.case_id .. "2"
        write_file(d .. "/r/runs.jsonl", cjson.encode(r) .. "\n" .. cjson.encode(r2) .. "\n")
        local rc, _, err, wall = proc.capture("", { ark.BIN, "report", d .. "/r" })
        assert.are.equal(0, rc, err)
        -- a report quadratic in a value's length takes minutes here; the
        -- margin is for a busy machine (issue 27)
        assert.is_true(wall < 20, "report took " .. wall .. " s")
        local names = lines_of(proc.sh_out("ls -1 " .. shq(d .. "/r/charts")))
        local seen = {}
        for _, n in ipairs(names) do
            assert.is_true(#n <= 120, n)
            assert.is_nil(seen[n])
            seen[n] = true
        end
        -- one chart per group at least (a one-case group has its percentile
        -- plot, no one-bar chart): two groups whose names differ only past
        -- 100k characters still get two short, distinct file names
        assert.is_true(#names >= 2, "charts: " .. table.concat(names, " "))
    end)
end)

-- Issue 11 trials (docs/reports.md, "Result folders"): --append checks the
-- folder before anything runs; readers take only run objects; the lock.
describe("--append checks the folder before anything runs", function()
    local function one_line_refusal(argv, want, dir)
        local before = dir and checksums(dir)
        local rc, _, err, wall = proc.capture("", (function()
            local a = { ark.BIN }
            for _, x in ipairs(argv) do a[#a + 1] = x end
            return a
        end)())
        assert.are.equal(2, rc, err)
        assert.are.equal(1, #lines_of(err), err)
        assert.truthy(err:find(want, 1, true), err)
        assert.is_true(wall < 5, "took " .. wall .. " s")
        if dir then assert.are.equal(before, checksums(dir), "nothing in " .. dir .. " changed") end
    end

    it("refuses a foreign, empty, directory or FIFO runs.jsonl, and other settings", function()
        local d = tmpdir()
        local path = scenario(d, "ap", "return { payload = 64, " .. QUICK .. " }")
        local function folder_with(name, make)
            local out = d .. "/" .. name
            os.execute("mkdir -p " .. shq(out))
            make(out .. "/runs.jsonl")
            return out
        end
        local foreign = folder_with("foreign", function(p) write_file(p, "hello\nworld\n") end)
        one_line_refusal({ "run", path, "--out", foreign, "--append" }, "runs.jsonl:1:", foreign)
        local notrun = folder_with("notrun", function(p) write_file(p, '{"case_id":5}\n') end)
        one_line_refusal({ "run", path, "--out", notrun, "--append" },
                         "runs.jsonl:1: not an arkbench run object", notrun)
        local empty = folder_with("empty", function(p) write_file(p, "") end)
        one_line_refusal({ "run", path, "--out", empty, "--append" }, "runs.jsonl: holds no runs", empty)
        local dirj = folder_with("dirj", function(p) os.execute("mkdir -p " .. shq(p)) end)
        one_line_refusal({ "run", path, "--out", dirj, "--append" }, "its runs.jsonl is a directory", dirj)
        local fifo = folder_with("fifo", function(p) os.execute("mkfifo " .. shq(p)) end)
        one_line_refusal({ "run", path, "--out", fifo, "--append" }, "its runs.jsonl is a FIFO", nil)
        one_line_refusal({ "report", fifo }, "runs.jsonl: is a FIFO, not a runs.jsonl file", nil)
        -- a real result, then other --set / --quick: refused, nothing changes
        local out = d .. "/r"
        assert.are.equal(0, (run({ "run", path, "--out", out })))
        one_line_refusal({ "run", path, "--out", out, "--append", "--set", "payload=128" },
                         "it was run with no --set, --filter or --quick, this run with --set payload=128", out)
        one_line_refusal({ "run", path, "--out", out, "--append", "--quick" }, "this run with --quick", out)
    end)

    it("continues the repetition numbers, keeps a whole last run and the first env.json", function()
        local d = tmpdir()
        local path = scenario(d, "reps", "return { payload = { 64, 128 }, warmup = 0.02,"
            .. " duration = 0.05, repetitions = 2 }")
        local out = d .. "/r"
        assert.are.equal(0, (run({ "run", path, "--out", out })))
        local env1 = cjson.decode(read_file(out .. "/env.json"))
        -- the last run without its final newline is whole: it stays
        local text = read_file(out .. "/runs.jsonl")
        write_file(out .. "/runs.jsonl", text:sub(1, -2))
        local rc, _, err = run({ "run", path, "--out", out, "--append" })
        assert.are.equal(0, rc, err)
        assert.is_nil(err:find("removed a cut last line", 1, true), err)
        local runs = ark.read_runs(out .. "/runs.jsonl")
        assert.are.equal(8, #runs)
        local reps = {}
        for _, r in ipairs(runs) do
            reps[r.case_id] = reps[r.case_id] or {}
            reps[r.case_id][#reps[r.case_id] + 1] = r.repetition
        end
        for id, list in pairs(reps) do
            table.sort(list)
            assert.are.same({ 1, 2, 3, 4 }, list, id)
        end
        local env = cjson.decode(read_file(out .. "/env.json"))
        assert.are.equal(env1.started_utc, env.started_utc)
        assert.are.equal(1, #env.appends)
        assert.truthy(env.appends[1].started_utc and env.appends[1].ended_utc)
        local summary = cjson.decode(read_file(out .. "/summary.json"))
        assert.are.equal(8, summary.runs_total)
        assert.are.equal(env.appends[1].ended_utc, summary.ended_utc)
        assert.are.equal(env.appends[1].ended_utc, env.ended_utc)
        assert.truthy(read_file(out .. "/report.md"):find("4 repetition(s) per case", 1, true))
        rc, _, err = run({ "report", out })
        assert.are.equal(0, rc, err)
        assert.are.equal(summary.ended_utc, cjson.decode(read_file(out .. "/summary.json")).ended_utc)
    end)
end)

describe("readers take only run objects", function()
    it("refuses objects that are not runs, bad histograms, duplicates and huge lines, naming the line", function()
        local d = tmpdir()
        local path = scenario(d, "rd", "return { payload = 64, " .. QUICK .. " }")
        local out = d .. "/r"
        assert.are.equal(0, (run({ "run", path, "--out", out })))
        local good = read_file(out .. "/runs.jsonl")
        local r = cjson.decode(good)
        local function with(line) return good .. line .. "\n" end
        local bad_hist = cjson.decode(good); bad_hist.repetition = 2; bad_hist.rtt_histogram = "ab1:zzzz"
        local bad_type = cjson.decode(good); bad_type.repetition = 2; bad_type.cpu_percent = "lots"
        local cases = {
            { "[]", with("[]"), ":2: not a JSON object" },
            { "{}", with("{}"), ":2: not an arkbench run object" },
            { "case_id 5", with('{"schema_version":1,"case_id":5,"repetition":1,"ok":true}'),
              ":2: not a run object: case_id must be a non-empty string" },
            { "bad histogram", with(cjson.encode(bad_hist)), ":2: rtt_histogram is not a valid ab1: histogram" },
            { "ill-typed number", with(cjson.encode(bad_type)), ":2: not a run object: cpu_percent must be a number" },
            { "duplicate", with(cjson.encode(r)), ":2: repeats line 1 (case default, repetition 1)" },
            { "empty", "", "runs.jsonl: holds no runs" },
        }
        for _, c in ipairs(cases) do
            write_file(out .. "/runs.jsonl", c[2])
            for _, cmd in ipairs({ { "report", out }, { "compare", out, out, "--force" } }) do
                local rc, _, err = run(cmd)
                assert.are.equal(2, rc, c[1] .. ": " .. err)
                assert.are.equal(1, #lines_of(err), c[1] .. ": " .. err)
                assert.truthy(err:find(c[3], 1, true), c[1] .. ": " .. err)
            end
        end
        -- a 20 MB foreign line: refused at the cap, quickly
        proc.sh_ok("{ printf '{\"x\":\"'; head -c 20000000 /dev/zero | tr '\\0' a; printf '\"}\\n'; } > "
                   .. shq(out .. "/runs.jsonl"))
        local rc, _, err, wall = proc.capture("", { ark.BIN, "report", out })
        assert.are.equal(2, rc, err)
        assert.truthy(err:find("runs.jsonl:1: a line longer than 8388608 bytes: not a run object", 1, true), err)
        assert.is_true(wall < 5, "took " .. wall .. " s")
    end)

    it("names garbage env.json with its line", function()
        local d = tmpdir()
        local path = scenario(d, "env", "return { payload = 64, " .. QUICK .. " }")
        local out = d .. "/r"
        assert.are.equal(0, (run({ "run", path, "--out", out })))
        write_file(out .. "/env.json", "{\n  \"a\": 1,\n  oops\n}\n")
        local rc, _, err = run({ "report", out })
        assert.are.equal(2, rc)
        assert.are.equal("arkbench: " .. out .. "/env.json is not valid JSON (line 3)\n", err)
        rc, _, err = run({ "compare", out, out })
        assert.are.equal(2, rc)
        assert.truthy(err:find("env.json is not valid JSON (line 3)", 1, true), err)
    end)
end)

describe("the folder lock", function()
    it("refuses report and compare while a live process holds it; clears a stale one", function()
        local d = tmpdir()
        local path = scenario(d, "lk", "return { payload = 64, " .. QUICK .. " }")
        local out = d .. "/r"
        assert.are.equal(0, (run({ "run", path, "--out", out })))
        os.execute("mkdir " .. shq(out .. "/.arkbench.lock"))
        write_file(out .. "/.arkbench.lock/pid", "1\n") -- init: always alive
        local before = checksums(out)
        local rc, _, err = run({ "report", out })
        assert.are.equal(2, rc)
        assert.are.equal(1, #lines_of(err), err)
        assert.truthy(err:find("in use by another arkbench run (process 1", 1, true), err)
        assert.are.equal(before, checksums(out))
        rc, _, err = run({ "compare", out, out })
        assert.are.equal(2, rc)
        assert.truthy(err:find("in use by another arkbench run", 1, true), err)
        rc, _, err = run({ "run", path, "--out", out, "--append" })
        assert.are.equal(2, rc)
        assert.truthy(err:find("in use by another arkbench run (process 1", 1, true), err)
        -- a PID that is gone: cleared with a warning, by report and by run
        local dead = tonumber(proc.sh_out("sh -c 'echo $$'"))
        write_file(out .. "/.arkbench.lock/pid", dead .. "\n")
        rc, _, err = run({ "report", out })
        assert.are.equal(0, rc, err)
        assert.truthy(err:find("was left by process " .. dead .. ", which is gone; cleared", 1, true), err)
        assert.is_nil(io.open(out .. "/.arkbench.lock/pid"))
        os.execute("mkdir " .. shq(out .. "/.arkbench.lock"))
        write_file(out .. "/.arkbench.lock/pid", dead .. "\n")
        rc, _, err = run({ "run", path, "--out", out, "--append" })
        assert.are.equal(0, rc, err)
        assert.truthy(err:find("which is gone; cleared", 1, true), err)
    end)
end)

describe("settings checked at load (trials)", function()
    local d = tmpdir()
    local pem = d .. "/empty.pem"
    write_file(pem, "not a certificate\n")
    local cases = {
        { "NULL ciphers for 1.2", "tls = { version = '1.2', ciphers = 'NULL' }", "no ciphers available" },
        { "eNULL:aNULL for 1.2", "tls = { version = '1.2', ciphers = 'eNULL:aNULL' }", "no ciphers available" },
        { "SECLEVEL=5", "tls = { version = '1.2', ciphers = 'DEFAULT:@SECLEVEL=5' }", "ee key too small" },
        { "a missing CA file", "tls = { ca = '/nonexistent/ca.pem' }", "key 'ca': got string \"/nonexistent/ca.pem\"" },
        { "a CA file without a certificate", "tls = { ca = " .. string.format("%q", pem) .. " }",
          "holds no PEM certificate" },
    }
    for i, c in ipairs(cases) do
        it(c[1] .. ": exit 2, one line naming the key, within 5 s", function()
            local p = scenario(d, "tls" .. i, "return { protocol = 'tls', payload = 64, " .. c[2] .. " }")
            local rc, _, err, wall = proc.capture("", { ark.BIN, "run", p, "--list" })
            assert.are.equal(2, rc, err)
            assert.are.equal(1, #lines_of(err), err)
            assert.truthy(err:find(c[3], 1, true), err)
            assert.truthy(err:find("key 'tls': key '", 1, true), err)
            assert.is_true(wall < 5, c[1] .. " took " .. wall .. " s")
        end)
    end
    it("a usable TLS 1.2 cipher still loads", function()
        local p = scenario(d, "tlsok", "return { protocol = 'tls', payload = 64, tls = { version = '1.2',"
            .. " ciphers = 'ECDHE-ECDSA-AES128-GCM-SHA256' } }")
        assert.are.equal(0, (run({ "run", p, "--list" })))
    end)
end)

describe("write failures exit 1", function()
    it("--out on a read-only file system and report --csv into a full one", function()
        local d = tmpdir()
        local mnt = d .. "/mnt"
        os.execute("mkdir -p " .. shq(mnt))
        if not proc.sh_ok("mount -t tmpfs -o size=64k tmpfs " .. shq(mnt) .. " 2>/dev/null") then
            pending("mount -t tmpfs is not permitted here (needs root); skipped")
            return
        end
        finally(function() os.execute("umount " .. shq(mnt) .. " 2>/dev/null") end)
        local path = scenario(d, "wf", "return { payload = 64, " .. QUICK .. " }")
        assert.are.equal(0, (run({ "run", path, "--out", d .. "/r" })))
        -- report --csv into a full tmpfs
        proc.sh_ok("mkdir -p " .. shq(mnt .. "/r") .. " && cp " .. shq(d .. "/r/runs.jsonl") .. " "
                   .. shq(d .. "/r/env.json") .. " " .. shq(mnt .. "/r"))
        assert.are.equal(0, (run({ "report", mnt .. "/r" })))
        proc.sh_ok("head -c 65536 /dev/zero > " .. shq(mnt .. "/filler") .. " 2>/dev/null")
        local rc, _, err = run({ "report", mnt .. "/r", "--csv" })
        assert.are.equal(1, rc, err)
        assert.truthy(err:find("ENOSPC", 1, true), err)
        -- --out under a read-only mount
        assert(proc.sh_ok("mount -o remount,ro " .. shq(mnt)))
        rc, _, err = run({ "run", path, "--out", mnt .. "/x" })
        assert.are.equal(1, rc, err)
        assert.truthy(err:find(mnt .. "/x", 1, true) and err:find("EROFS", 1, true), err)
    end)
end)
