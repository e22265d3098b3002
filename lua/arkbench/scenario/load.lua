-- arkbench.scenario.load: load a scenario file (docs/scenarios.md), refuse anything
-- wrong in it before a single socket opens, and fill in the defaults.
--
-- Error convention. Errors in the user's file or command line come back as
-- `nil, message`, never raised. Each line of a message starts with where to
-- look -- `path:line:` (the first line where the key is written `key =`) or
-- the `--set key=value` that caused it -- then names the key, what it got and
-- what it accepts:
--
--   scenarios/x.lua:4: key 'payload': got string "abc"; expected an integer from 1 to 16777216
--
-- Every problem found is reported, one per line, in file order. Misuse of
-- this module's API (a path that is not a string, ...) raises.
--
-- This module loads the file, applies --set and --quick and fills in the
-- defaults; the rules live in arkbench.scenario.check, the message text in
-- arkbench.scenario_msg.
--
-- Loading is contained (docs/scenarios.md, "What a scenario file may do"):
--   * text chunks only (loadfile(path, "t")): LuaJIT bytecode is refused,
--     damaged bytecode would crash the interpreter;
--   * running the file has a time budget (_M.LOAD_BUDGET_S, or the
--     environment's ARKBENCH_LOAD_BUDGET_S): a count hook checks the clock
--     every 1000 instructions, with the JIT off while the file runs (compiled
--     loops do not call count hooks); past it, one line "path: loading took
--     longer than 2 s (an endless loop?)";
--   * os.exit is refused inside the file (its `os` is a copy without it);
--   * the table it returns is copied with rawget/next before validation and
--     the copy has no metatables, so none of the user's metamethods run
--     while it is checked (cycles and nesting past 64 levels are refused);
--     the copy is bounded (MAX_KEYS entries in one table, MAX_ENTRIES in
--     all) and so is the number of cases (MAX_CASES), so validation ends
--     quickly whatever the file returns;
--   * the standard library the file may have changed (string.format,
--     table.concat, the string metatable, globals, package.loaded) is put
--     back as it was before the file ran, so the code after it -- the
--     validation here, a worker writing its run object -- runs on the real
--     functions.
-- These errors are one line, without a traceback; any error the file
-- raises (a string, nil, a table, a megabyte) is one line of at most
-- ERR_MAX bytes.
--
-- The orchestrator never runs the file in its own process: it asks a child
-- (`arkbench dev-load`, arkbench.cmd.loader) with CPU, memory and wall-clock
-- limits, so that what the hook above cannot stop -- a call blocking in C,
-- the FFI, a crash -- ends that child, not the run.

local type, pairs, ipairs, tostring, tonumber, error, next =
      type, pairs, ipairs, tostring, tonumber, error, next
local loadfile, xpcall, setfenv, setmetatable, rawget, pcall =
      loadfile, xpcall, setfenv, setmetatable, rawget, pcall
local getmetatable, rawset, unpack = getmetatable, rawset, unpack
local io_open = io.open
local str_find, str_match, str_gmatch, str_gsub =
      string.find, string.match, string.gmatch, string.gsub
local tbl_concat, tbl_sort = table.concat, table.sort
local format, str_sub = string.format, string.sub
local debug_getmetatable, debug_setmetatable = debug.getmetatable, debug.setmetatable
local G = _G

local matrix = require("arkbench.scenario.matrix")
local check = require("arkbench.scenario.check")
local msg = require("arkbench.scenario.msg")
local overrides = require("arkbench.scenario.overrides")

local new_ctx, texts, unknown_key = msg.new_ctx, msg.texts, msg.unknown_key
local warn, fail_at = msg.warn, msg.fail_at
local is_finite, values_of = check.is_finite, check.values_of
local KNOWN, LOAD_KEYS = check.KNOWN, check.LOAD_KEYS

local _M = {}

-- Every key a scenario table may hold, in the order they are documented
-- (and listed in "known keys: ..."). The same table as scenario_check's.
_M.KEYS = check.KEYS

-- --quick (docs/scenarios.md, "Command line"): a smoke run, not a measurement.
_M.QUICK = { warmup = 0.05, duration = 0.2, repetitions = 1 }

local DEFAULTS = {
    protocol = "tcp", framing = "length", payload = 1024, clients = 1,
    window = 1, topology = "sharded:1", execution = "callback", work = 0,
    warmup = 0.25, duration = 1, repetitions = 3, placement = "same-process",
}
local TIMEOUT_DEFAULT, TIMEOUT_DEFAULT_UDP = 2, 0.2

-- --set values of these keys are taken as text, never as numbers or lists
local RAW_SET = { name = true, description = true, message = true, tag = true }

---------------------------------------------------------------------------
-- --set key=value

local function parse_scalar(s)
    if s == "true" then return true end
    if s == "false" then return false end
    local n = tonumber(s)
    if is_finite(n) then return n end
    return s
end

-- "true"/"false" -> boolean, a number literal -> number, "a,b" -> list of
-- parsed items, anything else -> the string.
function _M.parse_value(s)
    if type(s) ~= "string" then
        error("scenario.parse_value: expected a string, got " .. type(s), 2)
    end
    if str_find(s, ",", 1, true) then
        local list = {}
        for item in str_gmatch(s .. ",", "([^,]*),") do list[#list + 1] = parse_scalar(item) end
        return list
    end
    return parse_scalar(s)
end

-- load=1x1,16x16 on the command line
local function load_from_set(v)
    local out = {}
    for i, item in ipairs(values_of(v)) do
        local c, w = str_match(tostring(item), "^(%d+)x(%d+)$")
        out[i] = c and { clients = tonumber(c), window = tonumber(w) } or item
    end
    return out
end

local function apply_sets(ctx, t, sets)
    local given = {}
    for _, entry in ipairs(sets) do
        local key, raw = str_match(entry, "^([^=]+)=(.*)$")
        local at = "--set " .. entry
        local base, sub
        if key then base, sub = overrides.split(key) end
        if not key then
            fail_at(ctx, at, "expected key=value")
        elseif base then -- tls.ca=FILE: one key of a table-valued key
            given[base] = overrides.apply(ctx, t, base, sub, raw, at, _M.parse_value) or nil
        elseif not KNOWN[key] then
            fail_at(ctx, at, unknown_key(key, _M.KEYS))
        else
            local value = RAW_SET[key] and raw or _M.parse_value(raw)
            if key == "load" then value = load_from_set(value) end
            t[key] = value
            ctx.origin[key] = at
            given[key] = true
        end
    end
    -- A command-line clients/window replaces the file's load pairs, and a
    -- command-line load replaces the file's clients/window: the command line
    -- is the user's latest word, and refusing it would leave no way to
    -- override a file that uses load.
    if (given.clients or given.window) and not given.load and t.load ~= nil then
        local note = ""
        if not given.window then note = " (window = 1, its default)" end
        if not given.clients then note = " (clients = 1, its default)" end
        warn(ctx, "load", "key 'load': replaced by "
             .. (ctx.origin.clients or ctx.origin.window) .. note)
        t.load = nil
    end
    if given.load then
        for _, k in ipairs(LOAD_KEYS) do
            if t[k] ~= nil and not given[k] then
                warn(ctx, k, "key '" .. k .. "': replaced by " .. ctx.origin.load)
                t[k] = nil
            end
        end
    end
end

---------------------------------------------------------------------------
-- Defaults

local function fill_defaults(keys)
    local defaulted = {}
    for k, v in pairs(DEFAULTS) do
        local skip = keys.load ~= nil and (k == "clients" or k == "window")
        if keys[k] == nil and not skip then
            keys[k] = v
            defaulted[k] = true
        end
    end
    if keys.timeout == nil then
        defaulted.timeout = true
        local udp, other = false, false
        for _, p in ipairs(values_of(keys.protocol)) do
            if p == "udp" then udp = true else other = true end
        end
        -- a protocol axis mixing udp and others: timeout stays nil here and
        -- matrix.expand gives each case its protocol's default
        if not (udp and other) then
            keys.timeout = udp and TIMEOUT_DEFAULT_UDP or TIMEOUT_DEFAULT
        end
    end
    return defaulted
end

---------------------------------------------------------------------------
-- Loading

local function read_all(path)
    local f = io_open(path, "rb")
    if not f then return nil end
    local s = f:read("*a")
    f:close()
    return s
end

-- xpcall handler: the message, then the traceback of the scenario's own
-- frames (everything from our xpcall down is cut).
local OWN_SOURCE = debug.getinfo(1, "S").source
-- metatable of a containment error (one line, no traceback); tostring gives
-- its text, so that a hook (execution = "lua") calling os.exit reports it
local Refused = { __tostring = function(e) return e.text end }

local function refuse(text)
    error(setmetatable({ text = text }, Refused), 0)
end

-- Bytes of the file's own error message kept (one line).
_M.ERR_MAX = 300

-- Lines of a module load error kept (require's "module 'x' not found:"
-- lists every place searched, one per line; "error loading module" has
-- the module's own file:line: message on its second line).
_M.MODULE_ERR_LINES = 40

-- text -> its first line, control characters as spaces, at most ERR_MAX
-- bytes ("..." marks a cut)
local function first_line(text)
    local first = str_match(text, "^[^\n]*")
    local cut = #first < #text
    if #first > _M.ERR_MAX then first, cut = str_sub(first, 1, _M.ERR_MAX), true end
    first = str_gsub(first, "%c", " ")
    return cut and (first .. " ...") or first
end

-- Any error object -> one line of at most ERR_MAX bytes; a module load
-- error keeps its lines (at most MODULE_ERR_LINES, each cut like one).
-- Runs while the file's changes to the standard library are still in
-- place: only the functions captured above, no method calls, no tostring
-- of a table (its __tostring is the user's).
local function one_line(v)
    local t = type(v)
    local text
    if t == "string" then text = v
    elseif t == "number" or t == "boolean" then text = tostring(v)
    elseif t == "table" and getmetatable(v) == Refused then text = v.text
    else text = "(error object is a " .. t .. " value)" end
    if str_find(text, "\n", 1, true)
       and (str_find(text, "module '[^'\n]*' not found:") or str_find(text, "error loading module '")) then
        local lines, n = {}, 0
        for line in str_gmatch(text, "[^\n]+") do
            n = n + 1
            if n > _M.MODULE_ERR_LINES then
                lines[#lines + 1] = "    ..."
                break
            end
            lines[#lines + 1] = first_line(line)
        end
        return tbl_concat(lines, "\n")
    end
    return first_line(text)
end
_M.one_line = one_line

local function traceback(err)
    if type(err) == "table" and getmetatable(err) == Refused then return err end
    return one_line(err)
end

local function file_stem(path)
    local base = str_match(path, "([^/\\]+)$") or path
    return (str_gsub(base, "%.lua$", ""))
end

-- path, { "key=value", ... } -> spec | nil, message
local function load_part(path, source, env, result, sets)
    local ctx = new_ctx(path, source)
    local t = {}
    for k, v in pairs(result) do t[k] = v end     -- the user's table stays as is

    local globals = {}
    for k in pairs(env) do
        if KNOWN[k] and rawget(t, k) == nil then globals[#globals + 1] = k end
    end
    tbl_sort(globals)
    for _, k in ipairs(globals) do
        warn(ctx, k, "global '" .. k .. "' is ignored; scenario keys go in the table the file returns")
    end

    apply_sets(ctx, t, sets)
    local keys, hooks = check.validate(ctx, t)
    if #ctx.errors > 0 then
        return nil, tbl_concat(texts(ctx.errors, true), "\n")
    end

    keys.name = keys.name or file_stem(path)
    if type(keys.name) == "string" and not require("arkbench.util.json").valid_utf8(keys.name) then
        warn(ctx, "name", "key 'name': not valid UTF-8; the result files write each invalid byte"
             .. " as \\ufffd and the folder name replaces it with _")
    end
    local defaulted = fill_defaults(keys)
    local spec = {
        path = path,
        source = source,
        name = keys.name,
        description = keys.description,
        keys = keys,
        axes = {},
        hooks = hooks,
        defaulted = defaulted,
        warnings = {},
    }
    keys.description = nil
    for _, k in ipairs(matrix.AXES) do
        local v = keys[k]
        if type(v) == "table" and #v > 1 then spec.axes[#spec.axes + 1] = k end
    end

    check.cross_check(ctx, t, spec)
    if #ctx.errors > 0 then
        return nil, tbl_concat(texts(ctx.errors, true), "\n")
    end
    spec.warnings = texts(ctx.warnings, false)
    return spec
end

_M.LOAD_BUDGET_S = 2

-- The environment's ARKBENCH_LOAD_BUDGET_S (seconds, > 0 and at most 3600)
-- -> seconds | nil, message naming it. Unset: LOAD_BUDGET_S.
function _M.budget()
    local text = os.getenv("ARKBENCH_LOAD_BUDGET_S")
    if text == nil then return _M.LOAD_BUDGET_S end
    local b = tonumber(text)
    if not (b and b > 0 and b <= 3600) then
        return nil, format("ARKBENCH_LOAD_BUDGET_S=%q: expected a number of seconds above 0"
                           .. " and at most 3600 (the time a scenario file may take to load)",
                           str_sub(text, 1, 40))
    end
    return b
end
do
    local b = _M.budget()
    if b then _M.LOAD_BUDGET_S = b end
end

-- What loading may hold: entries in one table of the returned tree, entries
-- in all, and cases in the matrix.
_M.MAX_KEYS, _M.MAX_ENTRIES, _M.MAX_CASES = 1000, 20000, matrix.MAX_CASES

-- The standard library as it is now: the globals, each library table's
-- fields (package.loaded among them) and the string metatable.
local LIBS = { "string", "table", "math", "os", "io", "coroutine", "debug",
               "package", "jit", "bit", "ffi" }
local function copy_fields(t)
    local c = {}
    local k, v = next(t)
    while k ~= nil do c[k] = v; k, v = next(t, k) end
    return c
end
local function snapshot_stdlib()
    local snap = { tables = {} }
    local function keep(t)
        if type(t) == "table" and snap.tables[t] == nil then
            snap.tables[t] = { fields = copy_fields(t), mt = debug_getmetatable(t) }
        end
    end
    keep(G)
    for _, name in ipairs(LIBS) do keep(rawget(G, name)) end
    local pkg = rawget(G, "package")
    if type(pkg) == "table" then keep(rawget(pkg, "loaded")); keep(rawget(pkg, "preload")) end
    keep(debug_getmetatable(""))
    snap.string_mt = debug_getmetatable("")
    return snap
end
-- Puts back what snapshot_stdlib saw (only next/rawset/debug calls: the
-- file may have replaced everything else).
local function restore_fields(t, saved)
    local extra = {}
    local k = next(t)
    while k ~= nil do
        if saved[k] == nil then extra[#extra + 1] = k end
        k = next(t, k)
    end
    for i = 1, #extra do rawset(t, extra[i], nil) end
    k = next(saved)
    while k ~= nil do rawset(t, k, saved[k]); k = next(saved, k) end
end
local function restore_stdlib(snap)
    local t, s = next(snap.tables)
    while t ~= nil do
        debug_setmetatable(t, s.mt)
        restore_fields(t, s.fields)
        t, s = next(snap.tables, t)
    end
    debug_setmetatable("", snap.string_mt)
end

-- The os table a scenario file sees: the real one without os.exit.
-- While the file runs its os.exit raises a containment error (one line);
-- later (a hook during a run) a plain error, which the run reports as the
-- hook's script error with the hook's line.
local loading = false
local EXIT_REFUSED = "os.exit is not allowed in a scenario file (a scenario describes runs;"
                     .. " arkbench decides when the process ends)"
local function scenario_os()
    local t = {}
    for k, v in pairs(G.os) do t[k] = v end
    t.exit = function()
        if loading then refuse(EXIT_REFUSED) end
        error(EXIT_REFUSED, 2)
    end
    return t
end

-- Runs chunk (its environment env) with the load budget; ok, result |
-- false, message. Past the budget the hook raises every instruction, so a
-- pcall in the file cannot swallow it; coroutines the file creates get the
-- hook too (hooks are per coroutine).
local function run_contained(path, chunk, env)
    local sethook = debug.sethook
    local has_core, core = pcall(require, "arkbench.core")
    -- wall time: the budget is what the user waits
    local clock = has_core and function() return core.now_ns() / 1e9 end or os.clock
    local limit = _M.LOAD_BUDGET_S
    local t0 = clock()
    local msg_text = format("%s: loading took longer than %g s (an endless loop?)", path, limit)
    local hook
    local stopped = false
    hook = function()
        if stopped or clock() - t0 <= limit then return end
        -- never inside this file's own code (the error handler, the return
        -- from xpcall), only in the scenario's
        local f = debug.getinfo(2, "S")
        if f and f.source == OWN_SOURCE then return end
        sethook(hook, "", 1)
        refuse(msg_text)
    end
    local co = {}
    for k, v in pairs(G.coroutine) do co[k] = v end
    co.create = function(f)
        return G.coroutine.create(function(...)
            sethook(hook, "", 1000)
            return f(...)
        end)
    end
    co.wrap = function(f)
        local c = co.create(f)
        return function(...)
            local r = { G.coroutine.resume(c, ...) }
            if not r[1] then error(r[2], 0) end
            return unpack(r, 2)
        end
    end
    rawset(env, "coroutine", co)
    local jit_on, jit_off = nil, nil
    if type(G.jit) == "table" and G.jit.status and G.jit.status() then
        jit_on, jit_off = G.jit.on, G.jit.off
    end
    if jit_off then jit_off() end
    local snap = snapshot_stdlib()
    sethook(hook, "", 1000)
    loading = true
    local ok, result = xpcall(chunk, traceback)
    loading = false
    stopped = true
    sethook()
    restore_stdlib(snap)
    if jit_on then jit_on() end
    rawset(env, "coroutine", nil)
    if not ok then
        if type(result) == "table" and getmetatable(result) == Refused then
            return false, str_sub(result.text, 1, #path + 1) == path .. ":" and result.text
                or path .. ": " .. result.text
        end
        return false, path .. ": error while running scenario: " .. one_line(result)
    end
    return true, result
end

-- A raw copy of a table tree (next only): what validation sees instead of
-- the user's values. nil, why for a table with a metatable (its
-- metamethods would run in validation), a cycle, or nesting past 64 levels.
local function raw_copy(v, where, depth, seen)
    if type(v) ~= "table" then return v end
    if debug_getmetatable(v) ~= nil then
        return nil, where .. " has a metatable; scenario values must be plain tables"
    end
    if seen[v] then return nil, where .. " contains itself" end
    if depth > 64 then return nil, where .. " is nested more than 64 levels deep" end
    seen[v] = true
    local out = {}
    local n = 0
    local k, x = next(v)
    while k ~= nil do
        n = n + 1
        seen.entries = (seen.entries or 0) + 1
        if n > _M.MAX_KEYS then
            return nil, format("%s has more than %d entries (too many keys); a scenario"
                               .. " needs a few dozen", where, _M.MAX_KEYS)
        end
        if seen.entries > _M.MAX_ENTRIES then
            return nil, format("the returned table holds more than %d keys and values in all"
                               .. " (too many)", _M.MAX_ENTRIES)
        end
        local ck, err = raw_copy(k, where .. " (a key)", depth + 1, seen)
        if err then return nil, err end
        local name = type(k) == "string" and ("key '" .. k .. "'")
                     or ("entry [" .. tostring(k) .. "]")
        local inner = depth == 1 and name
                      or depth <= 3 and (where .. ", " .. name)
                      or depth == 4 and (where .. ", ...") or where
        local cx, xerr = raw_copy(x, inner, depth + 1, seen)
        if xerr then return nil, xerr end
        out[ck] = cx
        k, x = next(v, k)
    end
    seen[v] = nil
    return out
end

function _M.load(path, sets)
    if type(path) ~= "string" then
        error("scenario.load: path must be a string, got " .. type(path), 2)
    end
    if sets ~= nil and type(sets) ~= "table" then
        error("scenario.load: sets must be a list of strings, got " .. type(sets), 2)
    end
    sets = sets or {}
    for i, s in ipairs(sets) do
        if type(s) ~= "string" then
            error("scenario.load: sets[" .. i .. "] must be a string, got " .. type(s), 2)
        end
    end

    local source = read_all(path)
    if source == nil then
        local _, oerr = loadfile(path, "t")
        local text = str_gsub(tostring(oerr or ("cannot read " .. path)), "\n.*", "")
        if str_find(text, "^cannot ") then text = "arkbench: " .. text end
        return nil, text
    end
    if source:byte(1) == 27 then
        return nil, path .. ": is a compiled (bytecode) chunk; scenario files must be Lua source text"
    end
    local chunk, lerr = loadfile(path, "t")
    if not chunk then return nil, (str_gsub(tostring(lerr), "\n.*", "")) end
    -- `require` from the file finds its own folder, ARKBENCH_PATH and
    -- LuaRocks' tree (arkbench.scenario.search_path)
    require("arkbench.scenario.search_path").apply(path)

    -- Globals the file sets land in its own environment, not in ours; a
    -- scenario key set as a global (wrk style) is reported, not lost.
    local env = setmetatable({ os = scenario_os() }, { __index = G })
    setfenv(chunk, env)
    local ok, result = run_contained(path, chunk, env)
    if not ok then return nil, result end
    if type(result) ~= "table" then
        return nil, path .. ": scenario must return a table, got " .. type(result)
    end
    local copy, cerr = raw_copy(result, "the returned table", 1, {})
    if not copy then return nil, path .. ": " .. cerr end
    result = copy
    local vok, spec, verr = pcall(_M.load_parts, path, source, env, result, sets)
    if not vok then
        return nil, path .. ": cannot validate the scenario: " .. one_line(spec)
    end
    if spec then
        local n = _M.count_cases(spec)
        if n > _M.MAX_CASES then
            return nil, format("%s: the scenario has %.0f cases; at most %d are allowed"
                               .. " (fewer values per axis, or several files)", path, n, _M.MAX_CASES)
        end
    end
    return spec, verr
end

_M.count_cases = matrix.count


function _M.load_parts(path, source, env, result, sets)

    -- A file may return a list of scenario tables ("parts"): each is
    -- validated on its own and their cases run in order under the first
    -- part's name (all.lua uses it to give UDP its own window).
    if #result > 0 and next(result, #result) == nil and type(result[1]) == "table" then
        local parts = {}
        for i, part in ipairs(result) do
            if type(part) ~= "table" then
                return nil, path .. ": scenario part " .. i .. " must be a table, got " .. type(part)
            end
            local spec, err = load_part(path, source, env, part, sets)
            if not spec then return nil, err end
            parts[i] = spec
        end
        local first = parts[1]
        first.parts = parts
        for i = 2, #parts do
            parts[i].name = first.name
            parts[i].keys.name = first.name
            for _, w in ipairs(parts[i].warnings) do first.warnings[#first.warnings + 1] = w end
        end
        -- two parts that define the same case would share its case id (and
        -- its results): refuse, naming both parts
        local dups = matrix.duplicate_ids(matrix.expand(first))
        if #dups > 0 then
            local part_of, n = {}, 0
            for pi, part in ipairs(parts) do
                local copy = {}
                for k, v in pairs(part) do copy[k] = v end
                copy.parts = nil
                for _ = 1, #matrix.expand(copy) do n = n + 1; part_of[n] = pi end
            end
            local d = dups[1]
            return nil, string.format("%s: scenario parts %d and %d both define the case '%s' (the same"
                .. " value for every key that names a case); give each part its own label, e.g."
                .. " label = \"part %d\"", path, part_of[d[2]], part_of[d[3]], d[1], part_of[d[3]])
        end
        return first
    end
    return load_part(path, source, env, result, sets)
end

-- --quick: override warmup, duration and repetitions (after validation).
function _M.apply_quick(spec)
    if type(spec) ~= "table" or type(spec.keys) ~= "table" then
        error("scenario.apply_quick: expected a spec from scenario.load", 2)
    end
    for k, v in pairs(_M.QUICK) do spec.keys[k] = v end
    local axes = {}
    for _, k in ipairs(spec.axes or {}) do
        if _M.QUICK[k] == nil then axes[#axes + 1] = k end
    end
    spec.axes = axes
    spec.quick = true
    for _, part in ipairs(spec.parts or {}) do
        if part ~= spec then _M.apply_quick(part) end
    end
    return spec
end

return _M
