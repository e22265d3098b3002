-- spec/helpers/peers.lua -- peers for the integration specs: Python peers
-- (spec/fixtures/*/*.py) and `arkbench serve`, started in the background
-- (helpers.proc), their ports from "listening on HOST:PORT" and the JSON
-- line they print when stopped.
local assert = require("luassert")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")

local M = {}

-- Debian's interpreter, where python3-websockets lives (a python3 earlier
-- on PATH, e.g. a pyenv shim, would not have it); $ARKBENCH_PYTHON
-- overrides it.
M.PY = os.getenv("ARKBENCH_PYTHON") or "/usr/bin/python3"

-- Waits for `listening on HOST:PORT` on p's stdout; returns the port.
function M.wait_listening(p, limit)
    local t_end = proc.now() + (limit or 15)
    while proc.now() < t_end do
        local port = proc.stdout_of(p):match("listening on [%d%.]+:(%d+)")
        if port then return tonumber(port) end
        if not proc.alive(p.pid) then break end
        proc.sleep(0.05)
    end
    error(p.name .. " did not print 'listening on HOST:PORT'; stdout:\n" .. proc.stdout_of(p)
        .. "\nstderr:\n" .. proc.stderr_of(p))
end

-- The last line of `text` that is a JSON object, decoded.
function M.last_json(text, what)
    local last
    for line in (text or ""):gmatch("[^\n]+") do
        if line:match("^%s*{") then last = line end
    end
    assert.is_truthy(last, (what or "output") .. " has no JSON line:\n" .. tostring(text))
    local ok, v = pcall(ark.cjson.decode, last)
    assert.is_true(ok, (what or "output") .. " is not JSON: " .. tostring(v) .. "\n" .. last)
    return v
end

-- Starts `arkbench serve --protocol PROTOCOL --listen 127.0.0.1:0 extra...`
-- (named `name`, default "serve PROTOCOL"); wait_listening() gives its port.
function M.serve(protocol, extra, name)
    local argv = { ark.BIN, "serve", "--protocol", protocol, "--listen", "127.0.0.1:0" }
    for _, a in ipairs(extra or {}) do argv[#argv + 1] = a end
    return proc.spawn(argv, { name = name or ("serve " .. protocol) })
end

-- Starts the Python peer `script` (a path) with arguments `args` (a list,
-- optional), named after its file.
function M.python(script, args)
    local argv = { M.PY, script }
    for _, a in ipairs(args or {}) do argv[#argv + 1] = a end
    return proc.spawn(argv, { name = script:match("[^/]+$") })
end

-- Starts the Python peer `script` (with arguments opts.args), runs the
-- scenario make(port) against it (named opts.name), waits opts.settle s (so
-- the peer has read the client's last bytes) and stops the peer; returns
-- the run result (ark.run_scenario) and the peer's last JSON line.
function M.scenario_against_python(script, make, opts)
    local srv = M.python(script, opts.args)
    local port = M.wait_listening(srv)
    local res = ark.run_scenario(make(port), { name = opts.name })
    proc.sleep(opts.settle)
    local peer = M.last_json(proc.stop(srv), srv.name .. "'s output")
    return res, peer
end

return M
