-- lua_exec_spec.lua -- execution = "lua" end to end (issue 4;
-- docs/lua-api.md): the shipped line_echo scenario (client and server in
-- Lua), the conn API (receive by pattern, length and line, sleep, phase,
-- call with an expect function) on one and two loops, the light form
-- against `arkbench serve --framing raw --payload 64`, a client that raises
-- after 100 measured round trips (status script_error with file:line and a
-- traceback; the other runs go on), a client stuck in a loop that never
-- yields (ended by the per-run limit, status timeout; the other runs go
-- on), and misuse named with the scenario's line.
--
-- Runs the binary named by $ARKBENCH_BIN (ctest sets it), else the launcher
-- $ARKBENCH_ROOT/bin/arkbench. Results go under fresh temp folders.
-- Runtime: ~15 s (--quick runs; the stuck run waits out its 3.75 s limit).
local cjson_mod = require("cjson")

local ROOT = os.getenv("ARKBENCH_ROOT") or "."
local BIN = os.getenv("ARKBENCH_BIN") or (ROOT .. "/bin/arkbench")
local FIX = "spec/fixtures/lua_exec/"

local cjson = cjson_mod.new()
cjson.decode_invalid_numbers(false)

package.path = ROOT .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
-- shared helpers (spec/helpers/)
local shq = files.shq
local read_file = files.read_file
local write_file = files.write_file

local dirs = {}
local function tmpdir()
    local p = os.tmpname()
    os.remove(p)
    p = p .. "_lua_exec"
    assert(os.execute("mkdir -p " .. shq(p)))
    dirs[#dirs + 1] = p
    return p
end

local server_pids = {}
teardown(function()
    for _, pid in ipairs(server_pids) do os.execute("kill -TERM " .. pid .. " 2>/dev/null") end
    for _, d in ipairs(dirs) do os.execute("rm -rf " .. shq(d)) end
end)

-- `arkbench run args...` from ROOT; returns exit code, stdout, stderr, dir
local function run(args, env)
    local d = tmpdir()
    local cmd = "cd " .. shq(ROOT) .. " && env " .. (env or "") .. " " .. shq(BIN) .. " run"
    for _, a in ipairs(args) do cmd = cmd .. " " .. shq(a) end
    cmd = cmd .. " --out " .. shq(d .. "/r") .. " >" .. shq(d .. "/stdout") .. " 2>"
        .. shq(d .. "/stderr") .. " </dev/null; echo $?"
    local p = io.popen(cmd)
    local rc = tonumber(p:read("*a"):match("(%d+)"))
    p:close()
    return rc, read_file(d .. "/stdout") or "", read_file(d .. "/stderr") or "", d .. "/r"
end

local function read_runs(dir)
    local text = assert(read_file(dir .. "/runs.jsonl"), dir .. "/runs.jsonl is missing")
    local runs = {}
    for line in text:gmatch("[^\n]+") do runs[#runs + 1] = cjson.decode(line) end
    return runs
end

local function by_case(runs)
    local t = {}
    for _, r in ipairs(runs) do t[r.case_id] = r end
    return t
end

local function assert_identity(r)
    assert.are.equal(r.sent, r.completed + r.drained + r.timed_out + r.message_errors + r.unfinished,
        r.case_id .. ": sent ~= completed + drained + timed_out + message_errors + unfinished")
end

local function assert_ok(r, ctx)
    assert.is_true(r.ok, (ctx or "") .. " " .. tostring(r.case_id) .. ": " .. tostring(r.error))
    assert.are.equal("ok", r.status)
    assert.is_true(r.completed > 0)
    assert.is_true(r.rtt_us.count > 0 and r.rtt_us.min > 0 and r.rtt_us.p50 <= r.rtt_us.p99)
    assert_identity(r)
end

-- the line of `marker` in a fixture
local function line_of(path, marker)
    local n = 0
    for line in (read_file(ROOT .. "/" .. path) or ""):gmatch("([^\n]*)\n") do
        n = n + 1
        if line:find(marker, 1, true) then return n end
    end
    error(marker .. " not found in " .. path)
end

describe("execution = lua", function()
    it("runs scenarios/custom/line_echo.lua (client and server in Lua) ok", function()
        local rc, out, err, dir = run({ "scenarios/custom/line_echo.lua", "--quick" })
        assert.are.equal(0, rc, out .. err)
        local runs = read_runs(dir)
        assert.are.equal(2, #runs)
        for _, r in ipairs(runs) do
            assert_ok(r)
            assert.are.equal("lua", r.case.execution)
            assert.is_true(r.warmup_completed > 0)
            -- MiB/s from the reply bytes actually read, not from `payload`
            assert.is_true(r.payload_mib_per_s > 0)
            assert.is_true(r.payload_mib_per_s < r.round_trips_per_s * 64 / 1048576)
        end
    end)

    it("serves the whole conn API on one and two loops", function()
        local rc, out, err, dir = run({ FIX .. "api.lua", "--quick" })
        assert.are.equal(0, rc, out .. err)
        local runs = read_runs(dir)
        assert.are.equal(4, #runs)
        for _, r in ipairs(runs) do assert_ok(r) end
    end)

    it("runs the light form against arkbench serve (raw, 64 B)", function()
        local d = tmpdir()
        local p = io.popen("echo $$; exec timeout 120 " .. shq(BIN)
            .. " serve --protocol tcp --framing raw --payload 64 --listen 127.0.0.1:0 2>&1")
        local pid = tonumber(p:read("*l"))
        server_pids[#server_pids + 1] = pid
        local port = (p:read("*l") or ""):match("listening on .*:(%d+)$")
        assert.is_truthy(port, "serve did not start")
        write_file(d .. "/light.lua", ([[
return {
    name = "light", execution = "lua", target = "127.0.0.1:%s",
    load = { { clients = 1, window = 1 }, { clients = 4, window = 16 } },
    message = string.rep("m", 64), expect = 64,
}
]]):format(port))
        local rc, out, err, dir = run({ d .. "/light.lua", "--quick" })
        os.execute("kill -TERM " .. pid .. " 2>/dev/null")
        p:close()
        assert.are.equal(0, rc, out .. err)
        local runs = read_runs(dir)
        assert.are.equal(2, #runs)
        for _, r in ipairs(runs) do
            assert_ok(r)
            -- replies are 64 bytes each
            assert.is_true(math.abs(r.payload_mib_per_s * 1048576 * r.measured_s
                - 64 * r.completed) < 1)
        end
    end)

    it("ends a run whose client raises with script_error, file:line and a traceback; the others run", function()
        local path = FIX .. "script_error.lua"
        local n = line_of(path, "-- ERROR LINE")
        local t0 = os.time()
        local rc, out, err, dir = run({ path, "--quick" })
        assert.are.equal(1, rc, out .. err)
        assert.is_true(os.time() - t0 < 20)
        local runs = by_case(read_runs(dir))
        local bad = assert(runs["clients=1"], "no run for the failing part")
        assert.is_false(bad.ok)
        assert.are.equal("script_error", bad.status)
        assert.is_truthy(bad.error:find(path .. ":" .. n .. ": deliberate failure after 100 round trips",
            1, true), bad.error)
        assert.is_truthy(bad.error:find("stack traceback:", 1, true), bad.error)
        -- the script's failure is ours, counted apart from the peer's classes
        assert.are.equal(1, bad.local_errors.ESCRIPT)
        assert.is_nil(bad.errors.ESCRIPT)
        -- partial counts kept: the 100 measured round trips before the error
        assert.is_true(bad.completed + bad.drained >= 100)
        assert.is_true(bad.rtt_us.count >= 100)
        assert_identity(bad)
        assert.is_truthy(err:find("script_error", 1, true))
        assert_ok(assert(runs["clients=2"], "the other part did not run"))
    end)

    it("stops a run within 1 s of a script error, not at its 5 s deadline", function()
        local path = FIX .. "script_error.lua"
        local rc, out, err, dir = run({ path, "--set", "duration=5", "--set", "warmup=0",
                                        "--set", "repetitions=1", "--filter", "clients=1" })
        assert.are.equal(1, rc, out .. err)
        local runs = by_case(read_runs(dir))
        local bad = assert(runs["clients=1"], "no run for the failing part")
        assert.are.equal("script_error", bad.status)
        -- the error comes after 100 round trips (a few ms); the worker's whole
        -- life, start-up included, stays far below the 5 s duration
        -- well before the 5 s deadline (the margin is for a busy machine)
        assert.is_true(bad.elapsed_s < 4, "elapsed " .. tostring(bad.elapsed_s))
        assert_identity(bad)
    end)

    it("names the user's line for a malformed receive pattern and an empty message", function()
        for _, case in ipairs({ { "bad_pattern.lua", 5, 'conn:receive: bad pattern "["' },
                                { "empty_message.lua", 3, "returned an empty string" } }) do
            local path = FIX .. case[1]
            local rc, out, err, dir = run({ path })
            assert.are.equal(1, rc, out .. err)
            local r = read_runs(dir)[1]
            assert.are.equal("script_error", r.status)
            assert.is_truthy(r.error:find(path .. ":" .. case[2] .. ":", 1, true), r.error)
            assert.is_truthy(r.error:find(case[3], 1, true), r.error)
        end
    end)

    it("ends a client stuck in a loop that never yields by the per-run limit; the others run", function()
        local rc, out, err, dir = run({ FIX .. "stuck.lua", "--quick" },
            "ARKBENCH_RUN_TIMEOUT_EXTRA=2")
        assert.are.equal(1, rc, out .. err)
        local runs = by_case(read_runs(dir))
        local stuck = assert(runs["clients=1"])
        assert.is_false(stuck.ok)
        assert.are.equal("timeout", stuck.status)
        assert.is_truthy(stuck.error:find("did not finish within its hard limit of 3.75 s", 1, true),
            stuck.error)
        assert_ok(assert(runs["clients=2"], "the other part did not run"))
    end)

    it("names the scenario's line for misuse and for errors in message/expect", function()
        local d = tmpdir()
        local file = d .. "/misuse.lua"
        write_file(file, [[
local function server(conn)
    while true do
        local line = conn:receive("*l")
        if not line then return end
        conn:send(line .. "\n")
    end
end
return {
    { name = "misuse", execution = "lua", clients = 1, server = server,
      client = function(conn) conn:send(42) end },
    { execution = "lua", clients = 2, server = server, message = "a\n",
      expect = function(buf) return "nope" end },
    { execution = "lua", clients = 3, server = server, expect = "line",
      message = function(i) if i > 5 then local t; return t.x end return "a\n" end },
    { execution = "lua", clients = 4, server = server,
      client = function(conn) coroutine.yield() end },
}
]])
        local rc, out, err, dir = run({ file, "--quick" })
        assert.are.equal(1, rc, out .. err)
        local runs = by_case(read_runs(dir))
        local function check(id, status, text)
            local r = assert(runs[id], "no run " .. id)
            assert.is_false(r.ok)
            assert.are.equal(status, r.status, id .. ": " .. tostring(r.error))
            assert.is_truthy(r.error:find(text, 1, true), id .. ": " .. r.error)
        end
        check("clients=1", "script_error",
            file .. ":10: bad argument #1 to 'send' (string expected, got number)")
        check("clients=2", "script_error",
            file .. ":12: expect(buf) returned string; expected nil (reply incomplete)")
        check("clients=3", "script_error", file .. ":14: attempt to index local 't'")
        check("clients=4", "script_error", "coroutine.yield()")
        check("clients=4", "script_error", file .. ":16:")
    end)

    it("refuses before running a part with no driver, a protocol it does not drive, a message function without expect", function()
        -- which protocols lua drives is the capability table's word
        local runs, alt = {}, nil
        for _, p in ipairs(require("arkbench.core").capabilities().protocols) do
            for _, e in ipairs(p.executions) do
                if e == "lua" then runs[#runs + 1] = p.name end
            end
            if p.name == "ws" then alt = p.executions end
        end
        local d = tmpdir()
        for i, case in ipairs({
            { 'return { execution = "lua", clients = 5 }', ':1: key \'execution\': execution = '
              .. '"lua" needs client = function(conn) or message (with expect); see docs/lua-api.md\n' },
            { 'return { execution = "lua", protocol = "ws", message = "a\\n", expect = "line" }',
              string.format(':1: key \'execution\': execution = "lua" runs over protocol%s %s, not'
                  .. ' ws; expected execution %s for protocol ws\n', #runs == 1 and "" or "s",
                  table.concat(runs, ", "), table.concat(alt, ", ", 1, #alt - 1) .. " or " .. alt[#alt]) },
            { 'return { execution = "lua", message = function(i) return "a" end }',
              ':1: key \'message\': message is a function, so expect is needed (a length, "line"'
              .. ' or function(buf)); see docs/lua-api.md\n' },
        }) do
            local file = d .. "/refuse" .. i .. ".lua"
            write_file(file, case[1])
            local rc, out, err, dir = run({ file, "--quick" })
            assert.are.equal(2, rc, out .. err)
            assert.are.equal(file .. case[2], err)
            assert.is_nil(io.open(dir .. "/runs.jsonl"), "nothing may run")
        end
    end)
end)
