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

-- ---- servers started by a shell command (nginx, redis-server) ----------

local files = require("helpers.files")
local shq, sh_ok, sh_out = files.shq, proc.sh_ok, proc.sh_out

-- the pids start_cmd started, stopped by stop_started (a spec's teardown)
local started = {}

-- true once something accepts TCP connections on 127.0.0.1:port
function M.listening(port)
    return sh_ok("bash -c 'exec 3<>/dev/tcp/127.0.0.1/" .. port .. "' 2>/dev/null")
end

-- A port nothing listens on, from a per-process start between 20000 and
-- 29999 up (two specs running at once start apart).
local next_port
function M.free_port()
    next_port = next_port or (20000 + (tonumber(sh_out("echo $$")) or 0) % 10000)
    for _ = 1, 200 do
        next_port = next_port + 1
        if next_port > 60000 then next_port = 20001 end
        if not M.listening(next_port) then return next_port end
    end
    error("no free port found from " .. next_port - 200 .. " up")
end

-- Starts `cmd` (a shell command, its output to log) in the background under
-- `timeout`; returns its pid once `port` accepts connections, else nil and
-- the log.
function M.start_cmd(cmd, port, log)
    local pid = tonumber(sh_out("timeout 300 " .. cmd .. " >" .. shq(log) .. " 2>&1 & echo $!"))
    assert.is_truthy(pid, "could not start: " .. cmd)
    started[#started + 1] = pid
    for _ = 1, 100 do
        if M.listening(port) then return pid end
        if not sh_ok("kill -0 " .. pid .. " 2>/dev/null") then break end
        sh_ok("sleep 0.05")
    end
    os.execute("kill -TERM " .. pid .. " 2>/dev/null")
    return nil, files.read_file(log) or ""
end

-- Starts make_cmd(port) on a free port (retrying when another process took
-- it); returns port, pid.
function M.start_on_free_port(make_cmd, log)
    local last
    for _ = 1, 5 do
        local port = M.free_port()
        local pid, out = M.start_cmd(make_cmd(port), port, log)
        if pid then return port, pid end
        last = out
    end
    error("server did not start: " .. tostring(last))
end

-- Adds pid (a background process started otherwise) to what stop_started
-- stops.
function M.track(pid)
    started[#started + 1] = pid
end

-- Stops every server start_cmd started (SIGTERM through timeout).
function M.stop_started()
    for _, pid in ipairs(started) do os.execute("kill -TERM " .. pid .. " 2>/dev/null") end
    started = {}
end

function M.have(cmd)
    return sh_ok("command -v " .. cmd .. " >/dev/null 2>&1")
end

-- An EC P-256 key and a certificate for 127.0.0.1 / localhost in d.
function M.make_cert(d)
    assert(sh_ok("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
        .. " -keyout " .. shq(d .. "/key.pem") .. " -out " .. shq(d .. "/cert.pem")
        .. " -days 1 -subj /CN=localhost"
        .. " -addext subjectAltName=IP:127.0.0.1,DNS:localhost >/dev/null 2>&1"),
        "openssl could not make a certificate")
    return d .. "/cert.pem", d .. "/key.pem"
end

local NGINX_CONF = [[
daemon off;
master_process off;
worker_processes 1;
pid {D}/nginx.pid;
error_log {D}/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path {D}/tmp/body;
    proxy_temp_path {D}/tmp/proxy;
    fastcgi_temp_path {D}/tmp/fastcgi;
    uwsgi_temp_path {D}/tmp/uwsgi;
    scgi_temp_path {D}/tmp/scgi;
    keepalive_requests {KEEPALIVE};
    keepalive_timeout 300s;
{HTTP}
    server {
        listen 127.0.0.1:{PORT}{SSL};
        root {D}/html;
{TLS}
{LOCATIONS}
    }
}
]]

-- Starts nginx (nginx-light) in the foreground of its own process, serving
-- d/html (made here; opts.html = { [name] = text } written into it) with
-- a config written to d/nginx.conf: opts.tls (a certificate made in d;
-- opts.ssl_protocols: nginx's list, default "TLSv1.2 TLSv1.3"),
-- opts.http2 (HTTP/2 on the listener: with tls by ALPN h2, else h2c with
-- prior knowledge), opts.locations (lines inside the server block), opts.http_lines (lines
-- in the http block, e.g. a log_format), opts.keepalive_requests
-- (default 100000000: one connection for the whole run, since a close
-- costs the requests pipelined on it). Returns port, pid; its logs are
-- d/nginx.out and d/error.log.
function M.start_nginx(d, opts)
    opts = opts or {}
    assert.is_true(M.have("nginx"), "nginx is needed (apt-get install nginx-light)")
    assert(sh_ok("mkdir -p " .. shq(d .. "/html") .. " " .. shq(d .. "/tmp")))
    for name, text in pairs(opts.html or {}) do files.write_file(d .. "/html/" .. name, text) end
    local tls_lines = ""
    if opts.tls then
        local cert, key = M.make_cert(d)
        tls_lines = "        ssl_protocols " .. (opts.ssl_protocols or "TLSv1.2 TLSv1.3")
            .. ";\n        ssl_certificate " .. cert
            .. ";\n        ssl_certificate_key " .. key .. ";"
    end
    local conf = d .. "/nginx.conf"
    return M.start_on_free_port(function(port)
        -- opts.locations may name {D} too
        local text = NGINX_CONF:gsub("{TLS}", function() return tls_lines end)
            :gsub("{LOCATIONS}", function() return opts.locations or "" end)
            :gsub("{HTTP}", function() return opts.http_lines or "" end)
            :gsub("{D}", function() return d end):gsub("{PORT}", tostring(port))
            :gsub("{SSL}", (opts.tls and " ssl" or "") .. (opts.http2 and " http2" or ""))
            :gsub("{KEEPALIVE}", tostring(opts.keepalive_requests or 100000000))
        files.write_file(conf, text)
        return "nginx -e " .. shq(d .. "/error.log") .. " -p " .. shq(d) .. " -c " .. shq(conf)
    end, d .. "/nginx.out")
end

return M
