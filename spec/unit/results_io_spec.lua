-- results_io_spec.lua -- the pieces under issue 11's guarantees, one by one:
-- core.write_file / append_line / mkdir (lua_fs.c), the JSON writer's UTF-8
-- repair, stats.read_jsonl's cut last line, run.folder's claims, the
-- contained scenario loader and the TLS checks at load, the linear-time
-- table padding.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local core = require("arkbench.core")
local json = require("arkbench.util.json")
local stats = require("arkbench.report.stats")
local folder = require("arkbench.run.folder")
local scenario = require("arkbench.scenario.load")
local files = require("helpers.files")

local read_file, write_file = files.read_file, files.write_file

teardown(function() files.remove_tmpdirs() end)

describe("core.write_file", function()
    it("replaces the file whole and leaves no temporary name", function()
        local d = files.tmpdir()
        write_file(d .. "/a.json", "old")
        assert.is_true(core.write_file(d .. "/a.json", "new content"))
        assert.are.equal("new content", read_file(d .. "/a.json"))
        assert.are.same({ "a.json" }, core.dir_entries(d))
    end)

    it("fails luv style, naming the errno", function()
        local ok, err, code = core.write_file("/nonexistent-dir/x.json", "x")
        assert.is_nil(ok)
        assert.are.equal("ENOENT: no such file or directory", err)
        assert.are.equal("ENOENT", code)
    end)
end)

describe("core.append_line", function()
    it("appends one complete line per call", function()
        local d = files.tmpdir()
        assert.is_true(core.append_line(d .. "/r.jsonl", '{"a":1}'))
        assert.is_true(core.append_line(d .. "/r.jsonl", '{"b":2}'))
        assert.are.equal('{"a":1}\n{"b":2}\n', read_file(d .. "/r.jsonl"))
    end)

    it("fails on a folder with EISDIR", function()
        local d = files.tmpdir()
        local ok, err, code = core.append_line(d, "x")
        assert.is_nil(ok)
        assert.are.equal("EISDIR", code)
        assert.truthy(err:find("^EISDIR: "))
    end)
end)

describe("core.mkdir", function()
    it("is an exclusive claim: the second mkdir gets EEXIST", function()
        local d = files.tmpdir() .. "/claim"
        assert.is_true(core.mkdir(d))
        local ok, _, code = core.mkdir(d)
        assert.is_nil(ok)
        assert.are.equal("EEXIST", code)
    end)
end)

describe("json.encode and UTF-8", function()
    it("writes valid UTF-8 as it is", function()
        assert.are.equal('"h\195\169llo \240\159\152\128"', json.encode("h\195\169llo \240\159\152\128"))
    end)

    it("writes each invalid byte as \\ufffd", function()
        assert.are.equal('"a\\ufffdb"', json.encode("a\255b"))
        assert.are.equal('"\\ufffd\\ufffd"', json.encode("\192\175"))          -- overlong '/'
        assert.are.equal('"\\ufffd\\ufffd\\ufffd"', json.encode("\237\160\128")) -- a surrogate
        assert.are.equal('"x\\ufffd\\ufffd"', json.encode("x\226\130"))           -- truncated
        assert.are.equal('"\\ufffd\\ufffd\\ufffd\\ufffd"', json.encode("\244\144\128\128")) -- > U+10FFFF
        assert.are.equal('{"k\\ufffd":"\\ufffd\\n"}', json.encode({ ["k\128"] = "\255\n" }))
    end)

    it("gives text that cjson's strict decoder reads back", function()
        local v = json.decode(json.encode({ name = "bad\255\254name\192" }))
        assert.are.equal("bad\239\191\189\239\191\189name\239\191\189", v.name)
    end)

    it("tells valid from invalid UTF-8", function()
        assert.is_true(json.valid_utf8("plain"))
        assert.is_true(json.valid_utf8("\239\191\189"))
        assert.is_false(json.valid_utf8("\255"))
    end)
end)

describe("stats.read_jsonl and a cut last line", function()
    it("skips it with a warning that names the line", function()
        local path = files.tmpfile('{"schema_version":1,"case_id":"a","repetition":1,"ok":true}\n{"ok":tr')
        local runs, err, warning = stats.read_jsonl(path)
        assert.is_nil(err)
        assert.are.same({ { schema_version = 1, case_id = "a", repetition = 1, ok = true } }, runs)
        assert.are.equal(path .. ":2: the last line is cut (8 bytes, not JSON); skipped", warning)
    end)

    it("refuses a folder in one line", function()
        local d = files.tmpdir()
        local runs, err = stats.read_jsonl(d)
        assert.is_nil(runs)
        assert.are.equal(d .. ": is a directory, not a runs.jsonl file", err)
    end)
end)

describe("run.folder", function()
    it("sanitises names into one plain component", function()
        assert.are.equal("a_b_c", folder.sanitize("a/b c"))
        assert.are.equal("_..", folder.sanitize(".."))
        assert.are.equal("bad__", folder.sanitize("bad\255\254"))
        assert.are.equal(folder.NAME_MAX, #folder.sanitize(string.rep("x", 500)))
    end)

    it("gives the second claim of the same stamp a suffix", function()
        local d = files.tmpdir()
        local a = assert(folder.claim_new(d .. "/results/x", "20260101T000000Z"))
        local b = assert(folder.claim_new(d .. "/results/x", "20260101T000000Z"))
        assert.are.equal(d .. "/results/x/20260101T000000Z", a)
        assert.are.equal(d .. "/results/x/20260101T000000Z-2", b)
    end)

    it("refuses a folder in use, the user's files, an earlier result without --append", function()
        local d = files.tmpdir()
        assert.are.equal(d .. "/o", folder.claim_out(d .. "/o"))
        local ok, err = folder.claim_out(d .. "/o")
        assert.is_nil(ok)
        assert.truthy(err:find("in use by another arkbench run", 1, true), err)
        folder.release(d .. "/o")
        write_file(d .. "/o/runs.jsonl", '{"schema_version":1,"case_id":"a","repetition":1,"ok":true,'
                   .. '"scenario":{"sha256":"aa"}}\n')
        write_file(d .. "/o/env.json", '{"run_settings":{"sets":[],"filters":[],"quick":false}}\n')
        ok, err = folder.claim_out(d .. "/o")
        assert.truthy(err:find("pass --append", 1, true), err)
        ok, err = folder.claim_out(d .. "/o", { append = true, sha256 = "bb" })
        assert.truthy(err:find("another scenario file", 1, true), err)
        local got, _, prior = folder.claim_out(d .. "/o", { append = true, sha256 = "aa" })
        assert.are.equal(d .. "/o", got)
        assert.are.equal(1, #prior.runs)
        folder.release(d .. "/o")
        ok, err = folder.claim_out(d .. "/o", { append = true, sha256 = "aa",
                                               settings = { sets = { "payload=128" } } })
        assert.is_nil(ok)
        assert.are.equal(d .. "/o --append: it was run with no --set, --filter or --quick, this run"
                         .. " with --set payload=128; runs of other settings go into another folder",
                         err:gsub("^%-%-out ", ""))
        write_file(d .. "/o/mine.txt", "x")
        ok, err = folder.claim_out(d .. "/o", { append = true, sha256 = "aa" })
        assert.is_nil(ok)
        assert.truthy(err:find("did not write (mine.txt)", 1, true), err)
    end)
end)

describe("contained scenario loading", function()
    local function load_text(text)
        local path = files.tmpdir() .. "/s.lua"
        write_file(path, text)
        return path, scenario.load(path)
    end

    it("refuses os.exit in one line", function()
        local path, spec, err = load_text("os.exit(0)")
        assert.is_nil(spec)
        assert.are.equal(path .. ": os.exit is not allowed in a scenario file (a scenario describes"
                         .. " runs; arkbench decides when the process ends)", err)
    end)

    it("stops an endless loop at the budget, JIT or not", function()
        local saved = scenario.LOAD_BUDGET_S
        scenario.LOAD_BUDGET_S = 0.2
        finally(function() scenario.LOAD_BUDGET_S = saved end)
        local t0 = core.now_ns()
        local path, spec, err = load_text("local i = 0 while true do i = i + 1 end")
        assert.is_nil(spec)
        assert.are.equal(path .. ": loading took longer than 0.2 s (an endless loop?)", err)
        assert.is_true((core.now_ns() - t0) / 1e9 < 2)
        -- the JIT is back on and hooks are off afterwards
        assert.is_true((jit.status()))
        assert.is_nil(debug.gethook())
    end)

    it("refuses bytecode", function()
        local path = files.tmpdir() .. "/b.lua"
        write_file(path, string.dump(function() return {} end))
        local spec, err = scenario.load(path)
        assert.is_nil(spec)
        assert.are.equal(path .. ": is a compiled (bytecode) chunk; scenario files must be Lua"
                         .. " source text", err)
    end)

    it("runs no metamethod of the user's in validation", function()
        local path, spec, err = load_text("return { payload = 64, tls = setmetatable({}, {"
            .. " __index = function() error('boom') end }) }")
        assert.is_nil(spec)
        assert.are.equal(path .. ": key 'tls' has a metatable; scenario values must be plain tables", err)
        path, spec, err = load_text("local t = {} t.self = t return { payload = 64, x = t }")
        assert.is_nil(spec)
        assert.truthy(err:find("contains itself", 1, true), err)
    end)

    it("checks TLS settings with OpenSSL's parsers", function()
        local _, spec, err = load_text("return { protocol = 'tls', tls = { ciphers = 'NOPE' } }")
        assert.is_nil(spec)
        assert.truthy(err:find("OpenSSL refuses it: no usable TLS 1.3 cipher", 1, true), err)
        _, spec = load_text("return { protocol = 'tls', tls = { ciphers = 'TLS_AES_128_GCM_SHA256' } }")
        assert.is_table(spec)
        _, spec, err = load_text("return { protocol = 'tls', tls = { alpn = 'h2,' .. string.rep('x', 256) } }")
        assert.is_nil(spec)
        assert.truthy(err:find("1 to 255 bytes (got 256)", 1, true), err)
    end)
end)

describe("report padding", function()
    it("strips trailing blanks in linear time", function()
        local report = require("arkbench.report.report")
        local s = "x" .. string.rep(" ", 200000) .. "y" .. string.rep(" ", 10)
        local t0 = core.now_ns()
        assert.are.equal(#s - 10, #report.rstrip(s))
        assert.are.equal("", report.rstrip("   "))
        assert.is_true((core.now_ns() - t0) / 1e9 < 0.5)
    end)
end)

describe("report.runfile", function()
    local runfile = require("arkbench.report.runfile")
    local RUN = '{"schema_version":1,"case_id":"a","repetition":1,"ok":true}'

    it("holds no line longer than MAX_LINE: refused while reading, naming the line", function()
        local cap = runfile.MAX_LINE
        runfile.MAX_LINE = 100
        local path = files.tmpfile(RUN .. "\n" .. string.rep("x", 300000) .. "\n")
        local runs, err = runfile.read(path)
        runfile.MAX_LINE = cap
        assert.is_nil(runs)
        assert.are.equal(path .. ":2: a line longer than 100 bytes: not a run object", err)
    end)

    it("reads lines across its chunks and a whole last line without a newline", function()
        local second = RUN:gsub('"a"', '"' .. string.rep("b", 70000) .. '"')
        local path = files.tmpfile(RUN .. "\n" .. second)
        local runs, err, warning = runfile.read(path)
        assert.is_nil(err)
        assert.is_nil(warning)
        assert.are.equal(2, #runs)
        assert.are.equal(70000, #runs[2].case_id)
    end)

    it("checks the fields of a run object", function()
        assert.is_nil(runfile.check({ schema_version = 1, case_id = "a", repetition = 2, ok = false }))
        assert.are.equal("not a run object: repetition must be an integer >= 1",
                         runfile.check({ schema_version = 1, case_id = "a", repetition = 1.5, ok = true }))
        assert.are.equal("not a run object: ok must be true or false",
                         runfile.check({ schema_version = 1, case_id = "a", repetition = 1 }))
        assert.truthy(runfile.check({ schema_version = 1, case_id = "a", repetition = 1, ok = true,
                                      connect_histogram = "ab1:zzzz" }):find("connect_histogram", 1, true))
    end)

    it("names the line of a JSON file that does not parse, and says settings in words", function()
        local path = files.tmpfile('{\n"a": 1,\n\n  x\n}')
        local v, err = runfile.read_json(path)
        assert.is_nil(v)
        assert.are.equal(path .. " is not valid JSON (line 4)", err)
        assert.is_nil((runfile.read_json(path .. ".absent")))
        assert.are.equal("--set a=1 --filter b=2 --quick",
                         runfile.settings_text({ sets = { "a=1" }, filters = { "b=2" }, quick = true }))
        assert.are.equal("no --set, --filter or --quick", runfile.settings_text({ sets = {} }))
    end)
end)

describe("run.folder's lock", function()
    it("holds the PID; a lock whose PID is gone is cleared with a warning", function()
        local d = files.tmpdir()
        assert.are.equal(d, folder.claim_out(d))
        assert.are.equal(tostring(core.getpid()) .. "\n", read_file(d .. "/" .. folder.LOCK .. "/pid"))
        assert.truthy(folder.live_lock(d))
        folder.release(d)
        assert.is_nil(folder.live_lock(d))
        assert.is_false(files.exists(d .. "/" .. folder.LOCK))
        os.execute("mkdir " .. files.shq(d .. "/" .. folder.LOCK))
        write_file(d .. "/" .. folder.LOCK .. "/pid", "4194303\n")
        assert.is_nil(folder.live_lock(d))
        assert.are.equal(d, folder.lock_existing(d))
        folder.release(d)
    end)
end)
