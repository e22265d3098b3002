-- loader_spec: the scenario file is loaded in a child process with limits
-- (arkbench.cmd.loader), so nothing it does reaches the orchestrator: every
-- way of redefining arkbench's functions, ending or crashing the process,
-- blocking in C, flooding the validation or raising odd error objects ends
-- with exit 2, exactly one line on stderr naming the file, within 5 s
-- (the trials of issue #11: break-it 1-7, new-user 3-4). Each case runs
-- under `timeout 10`.

package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")

local shq, write_file = files.shq, files.write_file

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

local function lines_of(text)
    local out = {}
    for l in (text or ""):gmatch("[^\n]+") do out[#out + 1] = l end
    return out
end

local d = files.tmpdir("_loader")
local function file(name, body)
    write_file(d .. "/" .. name .. ".lua", body)
    return name .. ".lua"
end

-- damaged bytecode made inside the file: 50 mutated dumps, each called
local DAMAGE = [[
local d = string.dump(function(a) local t = {} for i = 1, 10 do t[i] = a .. i end return t end)
math.randomseed(1)
for i = 1, 50 do
    local b = { d:byte(1, -1) }
    for j = 1, 5 do local p = math.random(6, #b) b[p] = math.random(0, 255) end
    pcall(function() local g = loadstring(string.char(unpack(b))) if g then g("x") end end)
end
return {}
]]

local LOOP = "loading took longer than 2 s"
local cases = {
    -- break-it 1: arkbench's own functions and metatables
    { "string metatable __index raising", "getmetatable('').__index = function() error('strindex') end"
        .. " return { name = 'm', payload = { 64 } }", nil, "1  default" },
    -- break-it 2: ending or killing the process
    { "package.loaded.os.exit", "package.loaded.os.exit(0)", "ended the loader (exit 0) without returning a scenario" },
    { "require('os').exit", "require('os').exit(0)", "ended the loader (exit 0) without returning a scenario" },
    { "the registry's os.exit", "debug.getregistry()._LOADED.os.exit(0)",
      "ended the loader (exit 0) without returning a scenario" },
    { "ffi exit", "local ffi = require('ffi') ffi.cdef('void exit(int);') ffi.C.exit(0)",
      "ended the loader (exit 0) without returning a scenario" },
    { "ffi kill -9 self", "local ffi = require('ffi') ffi.cdef('int kill(int, int); int getpid(void);')"
        .. " ffi.C.kill(ffi.C.getpid(), 9)", "was killed by SIGKILL while loading" },
    { "ffi segfault", "local ffi = require('ffi') return { name = ffi.string(ffi.cast('char *', 1)) }",
      "was killed by SIGSEGV while loading" },
    { "kill -9 $PPID", "os.execute('kill -9 $PPID') return {}", "was killed by SIGKILL while loading" },
    -- break-it 3: crashes
    { "damaged bytecode built inside", DAMAGE, "while loading" },
    { "load(string.dump(f))()", "return load(string.dump(function() return { payload = 64 } end))()",
      nil, "1  default" },
    { "nested coroutine recursion", "local function f(n) local co = coroutine.wrap(f) return co(n + 1) end"
        .. " f(0) return {}", "" },
    -- break-it 4: what the count hook cannot stop
    { "hook removed", "debug.sethook() while true do end", LOOP },
    { "hook removed in a coroutine", "coroutine.wrap(function() debug.sethook() while true do end end)()", LOOP },
    { "a hook of its own", "debug.sethook(function() end, '', 1e9) while true do end", LOOP },
    { "jit on", "require('jit').on() while true do end", LOOP },
    { "xpcall loop in the handler", "xpcall(function() while true do end end,"
        .. " function() while true do end end)", LOOP },
    { "io.popen sleep", "io.popen('sleep 30'):read('*a')", LOOP },
    { "os.execute sleep", "os.execute('sleep 30')", LOOP },
    { "gsub in C", "local s = ('a'):rep(1e7) for i = 1, 100 do s = s:gsub('a', 'bb') end", "" },
    { "backtracking find", "return { name = tostring(('a'):rep(3e4):find(('a*'):rep(30) .. 'b')) }", LOOP },
    { "string.rep 1e9", "local s = string.rep('x', 1e9) return {}", "" },
    { "a looping __gc", "local t = newproxy(true) getmetatable(t).__gc = function() while true do end end"
        .. " return { name = 'g' }", "" },
    { "io.read", "io.read() return 5", "scenario must return a table, got number" },
    -- break-it 5: validation bounded
    { "2e5 unknown keys", "local t = {} for i = 1, 2e5 do t['k' .. i] = 1 end return t", "too many keys" },
    { "3e6 payload values", "local t = {} for i = 1, 3e6 do t[i] = 64 end return { payload = t }",
      "too many keys" },
    { "1e6 cases", "local a = {} for i = 1, 100 do a[i] = i + 63 end"
        .. " return { payload = a, work = a, duration = a }", "the scenario has 1000000 cases; at most 100000" },
    -- break-it 6 and new-user 4: error objects
    { "error(nil)", "error(nil)", "(error object is a nil value)" },
    { "error({code = 1})", "error({ code = 1 })", "(error object is a table value)" },
    { "error with a raising __tostring", "error(setmetatable({}, { __tostring = function() error('x') end }))",
      "(error object is a table value)" },
    { "stack overflow", "local function f() return 1 + f() end f()", "stack overflow" },
    -- a module load error keeps its lines: the places searched, one a line
    { "a missing module", "require('nonexistent.module.x')", "module 'nonexistent.module.x' not found",
      multi = true },
    { "a 1 MB error", "error(('E'):rep(1e6))", "EEEE" },
    { "error('my error')", "error('my error')", "error while running scenario: NAME:1: my error" },
    -- new-user 3: time inside C calls
    { "os.execute sleep 6", "os.execute('sleep 6') return {}", LOOP },
    { "string.rep 1e9 returned", "local s = string.rep('x', 1e9) return { name = s }", "" },
}

describe("loading in a limited child process", function()
    for i, c in ipairs(cases) do
        it(c[1] .. ": exit 2, one line naming the file (a module's: its lines), within 5 s", function()
            local name = file("case" .. i, c[2])
            local rc, out, err, wall = proc.run_cmd({ ark.BIN, "run", name, "--list" },
                                                    { cwd = d, limit = 10 })
            assert.is_true(wall < 5, c[1] .. " took " .. wall .. " s")
            if c[4] then
                -- loads (the file's changes are undone before validation)
                assert.are.equal(0, rc, err)
                assert.truthy(out:find(c[4], 1, true), out)
                return
            end
            assert.are.equal(2, rc, err)
            local ls = lines_of(err)
            if c.multi then
                assert.is_true(#ls >= 3, err)
                assert.truthy(err:find("nonexistent/module/x.lua", 1, true), err)
            else
                assert.are.equal(1, #ls, err)
            end
            assert.are.equal(name .. ":", ls[1]:sub(1, #name + 1), err)
            assert.truthy(ls[1]:find((c[3]:gsub("NAME", name)), 1, true), err)
            assert.is_true(#ls[1] < 500, "line of " .. #ls[1] .. " bytes")
            assert.is_nil(err:find("traceback", 1, true))
        end)
    end

    it("a bad ARKBENCH_LOAD_BUDGET_S is an error naming it", function()
        local name = file("plain", "return { payload = 64 }")
        for _, v in ipairs({ "abc", "0", "-1", "inf" }) do
            local rc, _, err = proc.run_cmd({ ark.BIN, "run", name, "--list" },
                                            { cwd = d, limit = 10, env = { "ARKBENCH_LOAD_BUDGET_S=" .. v } })
            assert.are.equal(2, rc, err)
            assert.are.equal(1, #lines_of(err), err)
            assert.truthy(err:find("ARKBENCH_LOAD_BUDGET_S", 1, true), err)
        end
        local rc, _, err, wall = proc.run_cmd({ ark.BIN, "run", file("loop", "while true do end"), "--list" },
                                              { cwd = d, limit = 10, env = { "ARKBENCH_LOAD_BUDGET_S=0.5" } })
        assert.are.equal(2, rc, err)
        assert.truthy(err:find("loading took longer than 0.5 s", 1, true), err)
        assert.is_true(wall < 2.5, wall)
    end)

    it("a missing file: one line with the arkbench: prefix", function()
        local rc, _, err = proc.run_cmd({ ark.BIN, "run", "nonexist.lua", "--list" }, { cwd = d, limit = 10 })
        assert.are.equal(2, rc)
        assert.are.equal(1, #lines_of(err), err)
        assert.truthy(err:find("^arkbench: cannot open nonexist.lua"), err)
    end)

    it("a name with '..' or a control character says what is allowed", function()
        for i, n in ipairs({ "..", "a\\nb" }) do
            local rc, _, err = proc.run_cmd({ ark.BIN, "run", file("name" .. i, "return { name = '" .. n .. "' }"),
                                              "--list" }, { cwd = d, limit = 10 })
            assert.are.equal(2, rc)
            assert.truthy(err:find("without '/', '\\' or control characters, and not '.' or '..'", 1, true), err)
        end
    end)

    it("many problems: the first ten lines and (and N more)", function()
        local rc, _, err = proc.run_cmd({ ark.BIN, "run", file("unknown", "local t = {} for i = 1, 500 do"
            .. " t['k' .. i] = 1 end return t"), "--list" }, { cwd = d, limit = 10 })
        assert.are.equal(2, rc)
        local ls = lines_of(err)
        assert.are.equal(11, #ls, err)
        assert.are.equal("(and 490 more)", ls[11])
    end)

    it("break-it 1: a file redefining string.format / table.concat leaves runs.jsonl valid", function()
        local bodies = {
            "local f = string.format string.format = function(fmt, ...) local s = f(fmt, ...)"
                .. " if s:find('^%d') then return '1,]\\n' .. s end return s end",
            "table.concat = function() return 'GARBAGE' end",
        }
        for i, b in ipairs(bodies) do
            local name = file("redef" .. i, b .. " return { name = 'redef" .. i .. "', payload = 64,"
                .. " warmup = 0.02, duration = 0.05, repetitions = 2 }")
            local out = d .. "/out" .. i
            local rc, _, err = proc.run_cmd({ ark.BIN, "run", name, "--out", out }, { cwd = d, limit = 60 })
            assert.are.equal(0, rc, err)
            local text = files.read_file(out .. "/runs.jsonl")
            local n = 0
            for line in text:gmatch("[^\n]+") do
                n = n + 1
                local r = ark.cjson.decode(line)
                assert.are.equal(true, r.ok, line)
                assert.are.equal("default", r.case_id)
                assert.are.equal(n, r.repetition)
                assert.are.equal("redef" .. i, r.scenario.name)
                assert.is_true(r.round_trips_per_s > 0)
            end
            assert.are.equal(2, n, text)
        end
    end)

    -- A background command of a non-interactive shell starts with SIGINT
    -- ignored, so a signal sent before arkbench's handler exists is lost
    -- whatever arkbench does (a loaded machine can take longer than 10 ms
    -- to get there): the signal goes as soon as the handler is installed
    -- (SigCgt of /proc/PID/status has SIGINT's bit), which main.c does
    -- before anything else, long before the scenario is loaded.
    it("break-it 7: Ctrl-C right after start exits 130 and runs nothing", function()
        local name = file("s7", "return { payload = 64, warmup = 0.05, duration = 0.5, repetitions = 3 }")
        -- the signal at several points: as the handlers are installed, while
        -- the loader runs, as the first worker starts, during its warm-up and
        -- measurement; it reaches the whole process group (children too), as
        -- a terminal's Ctrl-C does. Every one must give 130.
        for k, delay in ipairs({ 0, 0.01, 0.03, 0.08, 0.2, 0.4 }) do
            local out = d .. "/int" .. k
            local text = proc.sh_out("cd " .. shq(d) .. " && { setsid " .. shq(ark.BIN)
                .. " run " .. name .. " --out " .. shq(out) .. " >/dev/null 2>&1 & p=$!;"
                .. " i=0; while [ $i -lt 1000 ]; do"
                .. " m=$(sed -n 's/^SigCgt:[[:space:]]*//p' /proc/$p/status 2>/dev/null);"
                .. " [ -n \"$m\" ] && [ $(( 0x$m & 2 )) -ne 0 ] && break; i=$((i+1)); sleep 0.01; done;"
                .. " [ $i -lt 1000 ] || echo 'never saw the SIGINT handler';"
                .. " sleep " .. delay .. ";"
                .. " kill -INT -$p 2>/dev/null || kill -INT $p; wait $p; echo $?; }")
            assert.is_nil(text:find("never saw", 1, true), text)
            assert.are.equal(130, tonumber(text:match("(%d+)%s*$")), "SIGINT " .. delay .. " s after the"
                .. " handler: " .. text)
            for line in (files.read_file(out .. "/runs.jsonl") or ""):gmatch("[^\n]+") do
                assert.are.equal("interrupted", ark.cjson.decode(line).status, delay .. ": " .. line)
            end
        end
    end)
end)
