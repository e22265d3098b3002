-- arkbench.cmd.loader: load and validate a scenario file in a child process,
-- so that nothing the file does reaches the orchestrator (docs/scenarios.md,
-- "What a scenario file may do").
--
--   loader.load_cases(o) -> spec, cases | nil, message, exit_code
--       (orchestrator) o = { path, sets, filters, quick } as `arkbench run`
--       parsed them. Runs `arkbench dev-load`, waits for it and returns what
--       cli.run needs: spec = { path, name, warnings, keys, hooks, quick },
--       cases = the expanded, filtered cases (plain data, as the runner's
--       strip leaves them). On failure message is the text to print as it
--       is (one line for every way the child can die; the validation
--       problems one per line) and exit_code 2, or 130 for an interrupt.
--   loader.child(args) -> exit code
--       (`arkbench dev-load FILE [--set k=v]... [--filter k=v]... [--quick]`)
--       limits itself (RLIMIT_CPU: budget + 1 s; RLIMIT_AS: AS_BYTES), loads
--       the file with arkbench.scenario.load (its own containment: text
--       only, os.exit refused, the JIT off, the count hook, the standard
--       library put back), expands the matrix and writes one JSON line on
--       the result channel (ARKBENCH_RESULT_FD, fd 3): { ok = true, name,
--       warnings, keys, hooks, cases } or { ok = false, error = message }.
--       Functions in keys become "<function defined at FILE:LINE>".
--
-- The orchestrator kills the child at budget + KILL_MARGIN_S of wall time
-- (SIGTERM, SIGKILL 500 ms later: core.spawn_wait), which stops what the
-- count hook cannot: a call blocking in C (os.execute("sleep 30"),
-- io.read()), a long string.rep or gsub, a hook the file removed, the JIT
-- turned back on. Whatever the child prints on stdout is passed on; its
-- stderr only when it loaded (a failure is the one line).

local core = require("arkbench.core")

local type, ipairs, tostring, tonumber = type, ipairs, tostring, tonumber
local format = string.format

local _M = {}

-- Address space the loading child may use: a scenario is a small table.
_M.AS_BYTES = 1024 * 1024 * 1024
-- Wall time beyond the load budget before the child is killed (its own
-- hook reports an endless Lua loop first, with the same words).
_M.KILL_MARGIN_S = 0.5
-- Bytes of the child's answer accepted.
local ANSWER_MAX = 64 * 1024 * 1024
-- Wall time the loader child gets per byte of the scenario file on top of
-- the budget: parsing a large file (a body of a few MiB as a string
-- literal) and sending its cases back are not the file's code, which the
-- budget limits (1 s per MB).
_M.PARSE_S_PER_BYTE = 1e-6

-- the scenario file's size in bytes, at most 64 MiB (0 when it cannot be
-- read: the child reports that; a folder's offset means nothing)
local function file_size(path)
    local f = io.open(path, "rb")
    if not f then return 0 end
    local n = f:seek("end") or 0
    f:close()
    return math.min(n, 64 * 1024 * 1024)
end

---------------------------------------------------------------------------
-- Child

-- Functions -> a marker naming where they are defined; other values as is.
local function describe_functions(v, seen)
    local t = type(v)
    if t == "function" then
        local info = debug.getinfo(v, "S")
        return format("<function defined at %s:%s>",
                      tostring(info.short_src), tostring(info.linedefined))
    elseif t == "userdata" or t == "thread" then
        return "<" .. t .. ">"
    elseif t ~= "table" then
        return v
    end
    if seen[v] then return nil end
    seen[v] = true
    local out = {}
    for k, x in pairs(v) do
        if type(k) == "string" or type(k) == "number" then out[k] = describe_functions(x, seen) end
    end
    seen[v] = nil
    return out
end

-- JSON carries text: a string that is not valid UTF-8 (a `name` of raw
-- bytes) crosses as { [BYTES] = hex } and is restored byte for byte.
local BYTES = "arkbench_bytes_hex"
-- byte <-> two hex digits by table lookup: gsub with a table makes no call
-- per byte (a 4 MiB request body crossed in well under the load budget;
-- a function per byte took seconds)
local TO_HEX, FROM_HEX = {}, {}
for b = 0, 255 do
    local c, h = string.char(b), format("%02x", b)
    TO_HEX[c], FROM_HEX[h], FROM_HEX[h:upper()] = h, c, c
end
local function bytes_safe(v, valid_utf8)
    local t = type(v)
    if t == "string" then
        if valid_utf8(v) then return v end
        return { [BYTES] = (v:gsub(".", TO_HEX)) }
    elseif t ~= "table" then
        return v
    end
    local out = {}
    for k, x in pairs(v) do out[bytes_safe(k, valid_utf8)] = bytes_safe(x, valid_utf8) end
    return setmetatable(out, getmetatable(v))
end
local function bytes_restore(v)
    if type(v) ~= "table" then return v end
    local hex = v[BYTES]
    if type(hex) == "string" and next(v, next(v)) == nil then
        return (hex:gsub("%x%x", FROM_HEX))
    end
    local out = {}
    for k, x in pairs(v) do out[bytes_restore(k)] = bytes_restore(x) end
    return out
end

local function parse_child_args(args)
    local o = { sets = {}, filters = {} }
    local i = 1
    while i <= #args do
        local a = args[i]
        if (a == "--set" or a == "--filter") and args[i + 1] then
            local list = a == "--set" and o.sets or o.filters
            list[#list + 1] = args[i + 1]
            i = i + 2
        elseif a == "--quick" then o.quick = true; i = i + 1
        elseif not o.path then o.path = a; i = i + 1
        else return nil, "dev-load: unexpected argument '" .. tostring(a) .. "'" end
    end
    if not o.path then return nil, "dev-load: needs a scenario file" end
    return o
end

function _M.child(args)
    local opid = tonumber(os.getenv("ARKBENCH_ORCHESTRATOR_PID") or "")
    if opid then core.die_with_parent(opid) end
    -- everything this process uses after the file ran is loaded before it
    local json = require("arkbench.util.json")
    local scenario = require("arkbench.scenario.load")
    local matrix = require("arkbench.scenario.matrix")
    local strip = require("arkbench.run.runner").strip
    local fd = tonumber(os.getenv("ARKBENCH_RESULT_FD") or "")
    local function answer(obj)
        local line = json.encode(bytes_safe(obj, json.valid_utf8)) .. "\n"
        if fd then return core.write_fd(fd, line) and 0 or 1 end
        io.stdout:write(line)
        return 0
    end
    local o, perr = parse_child_args(args)
    if not o then return answer({ ok = false, error = "arkbench: " .. perr }) end
    local budget = scenario.budget() or scenario.LOAD_BUDGET_S
    local lok, lerr = core.limit_self({ cpu_s = math.ceil(budget) + 1, as_bytes = _M.AS_BYTES })
    if not lok then
        io.stderr:write("arkbench: warning: cannot limit the loader: ", tostring(lerr), "\n")
    end

    local spec, err = scenario.load(o.path, o.sets)
    if not spec then return answer({ ok = false, error = err }) end
    if o.quick then scenario.apply_quick(spec) end
    local cases = matrix.expand(spec)
    if #o.filters > 0 then
        local kept, ferr = matrix.filter(cases, o.filters)
        if not kept then return answer({ ok = false, error = ferr }) end
        cases = kept
    end
    local out = {}
    for i, c in ipairs(cases) do out[i] = strip(c) end
    local hooks = {}
    for k, f in pairs(spec.hooks or {}) do hooks[k] = describe_functions(f, {}) end
    return answer({
        ok = true,
        name = spec.name,
        warnings = json.array(spec.warnings or {}),
        keys = describe_functions(spec.keys, {}),
        hooks = hooks,
        quick = spec.quick == true,
        cases = json.array(out),
    })
end

---------------------------------------------------------------------------
-- Orchestrator

local function is_list_of(v, kind)
    if type(v) ~= "table" then return false end
    for i = 1, #v do
        if type(v[i]) ~= kind then return false end
    end
    return true
end

-- The child's answer -> spec, cases | nil, why (the answer is not what
-- _M.child writes: the file itself may have written on fd 3)
local function read_answer(o, obj)
    if type(obj) ~= "table" or type(obj.ok) ~= "boolean" then return nil, "no answer" end
    if obj.ok == false then
        if type(obj.error) ~= "string" or obj.error == "" then return nil, "no message" end
        return nil, obj.error, true
    end
    if type(obj.name) ~= "string" or not is_list_of(obj.warnings, "string")
       or not is_list_of(obj.cases, "table") or type(obj.keys) ~= "table" then
        return nil, "an answer without name, warnings, keys or cases"
    end
    for _, c in ipairs(obj.cases) do
        if type(c.case_id) ~= "string" or type(c.index) ~= "number"
           or (c.repetitions ~= nil and type(c.repetitions) ~= "number")
           or (c.clients ~= nil and type(c.clients) ~= "number") then
            return nil, "a case without case_id or index"
        end
    end
    local spec = {
        path = o.path, name = obj.name, warnings = obj.warnings, keys = obj.keys,
        hooks = type(obj.hooks) == "table" and obj.hooks or {}, quick = obj.quick == true,
    }
    return spec, obj.cases
end

local function last_line(s)
    local last
    for line in s:gmatch("[^\n]+") do last = line end
    return last
end

function _M.load_cases(o)
    local scenario = require("arkbench.scenario.load")
    local json = require("arkbench.util.json")
    local budget, berr = scenario.budget()
    if not budget then return nil, "arkbench: " .. berr, 2 end
    local exe, eerr = core.exe_path()
    if not exe then return nil, "arkbench: cannot find the arkbench binary: " .. tostring(eerr), 2 end
    local argv = { exe, "dev-load", o.path }
    for _, kv in ipairs(o.sets or {}) do argv[#argv + 1] = "--set"; argv[#argv + 1] = kv end
    for _, kv in ipairs(o.filters or {}) do argv[#argv + 1] = "--filter"; argv[#argv + 1] = kv end
    if o.quick then argv[#argv + 1] = "--quick" end
    local res, serr = core.spawn_wait(argv, {
        timeout_s = budget + _M.KILL_MARGIN_S + file_size(o.path) * _M.PARSE_S_PER_BYTE,
        channel = true,
        env = { "ARKBENCH_ORCHESTRATOR_PID=" .. tostring(core.getpid()), "ARKBENCH_RESULT_FD=3" },
    })
    if not res then return nil, "arkbench: cannot start the scenario loader: " .. tostring(serr), 2 end
    -- a Ctrl-C that also reached the loader (one process group) is an
    -- interrupt, whatever the loader made of it
    if res.interrupted or core.interrupted() then
        return nil, format("arkbench: interrupted by %s while loading %s",
                           core.interrupted() or "a signal", o.path), 130
    end
    if res.stdout ~= "" then io.stdout:write(res.stdout); io.stdout:flush() end
    local path = o.path
    if res.timed_out then
        return nil, format("%s: loading took longer than %g s (an endless loop, or a call"
                           .. " that blocks?)", path, budget), 2
    end
    local spec, cases, told
    local line = not res.channel_truncated and #(res.channel or "") <= ANSWER_MAX
                 and last_line(res.channel or "")
    if line then
        local obj = bytes_restore(json.decode(line))
        spec, cases, told = read_answer(o, obj)
        if told then return nil, cases, 2 end
    end
    if res.term_signal == "SIGXCPU" then
        return nil, format("%s: used more than %d s of CPU while loading (an endless loop?)",
                           path, math.ceil(budget) + 1), 2
    elseif res.term_signal then
        return nil, format("%s: was killed by %s while loading", path, res.term_signal), 2
    elseif not spec or res.exit_code ~= 0 then
        return nil, format("%s: ended the loader (exit %s) without returning a scenario",
                           path, tostring(res.exit_code)), 2
    end
    if res.stderr ~= "" then io.stderr:write(res.stderr) end
    return spec, cases
end

return _M
