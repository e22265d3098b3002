-- arkbench.worker: one repetition of one case, in a fresh process.
--
--   arkbench worker FILE --case-json JSON --repetition N [--set k=v]... [--quick]
--
-- Loads the same scenario file as the orchestrator (so its hooks exist
-- here), runs the case through the C engine and prints exactly one JSON
-- object (docs/run-object.md) on stdout, even on failure. Exit code 0 when
-- the run is ok, 1 otherwise, 2 when the command line is wrong.

local core = require("arkbench.core")
local json = require("arkbench.json")
local scenario = require("arkbench.scenario")

local ipairs, pairs, type, tonumber = ipairs, pairs, type, tonumber
local io_stdout, io_stderr = io.stdout, io.stderr

local _M = {}

local function parse(args)
    local o = { sets = {} }
    local i = 1
    while i <= #args do
        local a = args[i]
        if a == "--case-json" then o.case_json = args[i + 1]; i = i + 2
        elseif a == "--repetition" then o.repetition = tonumber(args[i + 1]); i = i + 2
        elseif a == "--set" then o.sets[#o.sets + 1] = args[i + 1]; i = i + 2
        elseif a == "--quick" then o.quick = true; i = i + 1
        elseif not o.path and a:sub(1, 2) ~= "--" then o.path = a; i = i + 1
        else return nil, "worker: unexpected argument '" .. a .. "'" end
    end
    if not o.path then return nil, "worker: missing scenario file" end
    if not o.case_json then return nil, "worker: missing --case-json" end
    return o
end

-- Copies the engine's result into the run object, keeping its field names.
local function merge(obj, res)
    for k, v in pairs(res) do obj[k] = v end
    if type(obj.notes) == "table" then json.array(obj.notes) end
    if type(obj.connections_per_loop) == "table" then json.array(obj.connections_per_loop) end
end

function _M.main(args)
    local t0 = core.now_ns()
    -- a worker never outlives the orchestrator that started it, even when
    -- that one is killed with SIGKILL (prctl PR_SET_PDEATHSIG)
    local opid = tonumber(os.getenv("ARKBENCH_ORCHESTRATOR_PID") or "")
    if opid and core.die_with_parent then core.die_with_parent(opid) end
    local o, err = parse(args)
    if not o then
        io_stderr:write("arkbench: ", err, "\n")
        return 2
    end
    local obj = {
        schema_version = 1,
        scenario = { path = o.path },
        repetition = o.repetition or 1,
        ok = false,
        status = "error",
    }
    local function finish(code)
        obj.elapsed_s = (core.now_ns() - t0) / 1e9
        io_stdout:write(json.encode(obj), "\n")
        io_stdout:flush()
        return code
    end

    local case = json.decode(o.case_json)
    if type(case) ~= "table" then
        obj.error = "worker: --case-json is not a JSON object"
        return finish(2)
    end
    obj.case, obj.case_id = case, case.case_id
    local spec, serr = scenario.load(o.path, o.sets)
    if not spec then
        obj.error = serr
        return finish(1)
    end
    obj.scenario = { name = spec.name, path = o.path, sha256 = core.sha256(spec.source) }

    local res, rerr = core.run_case(case)
    if not res then
        obj.error = rerr
        return finish(1)
    end
    merge(obj, res)
    obj.status = res.ok and "ok" or "error"
    obj.error = res.error
    return finish(res.ok and 0 or 1)
end

return _M
