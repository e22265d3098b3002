-- arkbench.cmd.url: the one-liner (docs/one-liner.md).
--
--   arkbench URL [-c connections] [-t threads] [-d duration] [-R rate]
--                [-H 'Name: value']... [-m method] [-b body | -b @file |
--                --body-file F] [--ok-status LIST] [--no-strict] [--latency]
--                [--timeout T] [--ca FILE | -k] [--payload B] [-w window]
--                [--warmup D] [--execution E] [--out DIR] [--json]
--
-- URL: http:// https:// (requests to any server), ws:// wss:// tcp://
-- tls:// udp:// (arkbench's echo: `arkbench serve` or a compatible peer).
-- The flags become one scenario (written to a temporary file, its text kept
-- in env.json as every scenario's is), which `arkbench run` runs the way it
-- runs any: a fresh worker, warm-up, a results folder. Then a wrk-like
-- summary with the full percentile ladder (50 75 90 99 99.9 99.99 max) is
-- printed, or with --json one JSON document on stdout (the run's table then
-- goes to stderr).
--
--   url.is_url(text) -> boolean
--   url.parse_url(text) -> { scheme, host, port, path, protocol } | nil, why
--   url.parse_args(args) -> opts | nil, why      (args[1] is the URL)
--   url.scenario(opts) -> Lua source of the scenario
--   url.main(args, cli) -> exit code

local core = require("arkbench.core")
local units = require("arkbench.util.units")

local type, ipairs, tostring, tonumber = type, ipairs, tostring, tonumber
local format, concat = string.format, table.concat
local io_stderr, io_stdout = io.stderr, io.stdout

local _M = {}

local SCHEMES = {
    http = { protocol = "http", port = 80 },
    https = { protocol = "https", port = 443 },
    ws = { protocol = "ws", port = 80 },
    wss = { protocol = "wss", port = 443 },
    tcp = { protocol = "tcp" },
    tls = { protocol = "tls" },
    udp = { protocol = "udp" },
}

_M.USAGE = [[
usage: arkbench URL [options]

  URL                 http://HOST[:PORT]/PATH, https://... (any server), or
                      ws:// wss:// tcp:// tls:// udp://HOST:PORT (arkbench's
                      echo, e.g. arkbench serve)
  -c, --connections N connections (default 16)
  -t, --threads N     client threads: sharded:N (default 1)
  -d, --duration D    measured time, e.g. 10s, 500ms, 2m (default 10s)
      --warmup D      warm-up before it, same load (default 1s)
  -R, --rate R        open loop: R requests/s in all, on a schedule; latency
                      from the intended send times (default: closed loop)
  -w, --window N      requests in flight per connection (default 1;
                      above 1 over http needs --pipeline)
      --pipeline      http/https: send -w requests per connection without
                      waiting (HTTP/1.1 pipelining; never on by itself)
  -H, --header 'N: V' a request header (repeatable; http/https)
  -m, --method M      request method (default GET; http/https); with --h2 or
                      --h2c, -m N (a number) is the window, as h2load's -m
      --h2            HTTP/2 over TLS (ALPN h2) to an https:// URL
      --h2c           HTTP/2 with prior knowledge to an http:// URL
  -b, --body TEXT     request body (http/https); -b @FILE reads it from FILE
      --body-file FILE    the request body is FILE's bytes
      --ok-status LIST    the statuses that count as success, e.g. 2xx,404
                      (default 2xx); any other is counted by status, with
                      its latency, and makes the run degraded
      --no-strict     errors, statuses outside --ok-status and a missed
                      rate are reported, not failures: the thresholds alone
                      decide the exit code (0, or 3 when one is crossed)
      --no-strict-rate    a missed -R rate alone is reported, not a failure
      --payload B     echo message size, e.g. 64, 16KiB (echo schemes)
      --timeout T     a reply later than T is timed out (default 2s)
      --connect-timeout T  a connect with no answer by then fails
                      (ECONNTIMEDOUT; default: --timeout)
      --ca FILE       trust the certificates in FILE (https, wss, tls)
      --tls-version V 1.2 or 1.3: offer only that version (default: 1.2
                      and 1.3, the highest the server has, as curl does)
  -k, --insecure      do not verify the server's certificate (said loudly)
      --execution E   callback (default) or coroutine
      --latency       accepted for wrk users: the ladder is always printed
      --out DIR       results folder (default results/<name>/<UTC>/)
      --json          print the summary as one JSON document on stdout
      --csv, --hgrm, --openmetrics
                      also write the exports into the results folder, as
                      arkbench report DIR --csv/--hgrm/--openmetrics
      --metrics-listen HOST:PORT
                      serve live OpenMetrics while the run goes (as run)
]]

function _M.is_url(text)
    return type(text) == "string" and text:match("^%a[%w+.-]*://") ~= nil
end

function _M.parse_url(text)
    local scheme, rest = text:match("^(%a[%w+.-]*)://(.*)$")
    if not scheme then return nil, "not a URL" end
    scheme = scheme:lower()
    local s = SCHEMES[scheme]
    if not s then
        return nil, format("unknown scheme '%s://'; expected http, https, ws, wss, tcp, tls or udp",
            scheme)
    end
    local hostport, path = rest:match("^([^/?#]*)(.*)$")
    if hostport:find("@", 1, true) then
        return nil, format("'%s': user information (user@host) is not supported", text)
    end
    path = path:gsub("#.*$", "")
    local http = s.protocol == "http" or s.protocol == "https"
    if not http and path ~= "" and path ~= "/" then
        return nil, format("'%s': %s:// takes no path or query (arkbench's echo); give %s://HOST:PORT",
            text, scheme, scheme)
    end
    if path == "" then path = "/" end
    if path:sub(1, 1) ~= "/" then path = "/" .. path end
    local host, port_text = hostport:match("^%[([^%]]+)%](.*)$")
    if not host then host, port_text = hostport:match("^([^:]*)(.*)$") end
    if host == nil or host == "" then return nil, "no host in '" .. text .. "'" end
    local port = port_text:match("^:(%d+)$")
    if port_text ~= "" and not port then
        return nil, format("'%s': the port must be a number from 1 to 65535, after the host", text)
    end
    port = tonumber(port) or s.port
    if not port then
        return nil, format("%s:// needs a port: %s://HOST:PORT", scheme, scheme)
    end
    if port < 1 or port > 65535 then return nil, "port " .. port .. " is not from 1 to 65535" end
    return { scheme = scheme, host = host, port = port, path = path, protocol = s.protocol }
end

-- name -> { key, kind }: kind "int", "seconds", "bytes", "text", "list", "flag"
local FLAGS = {
    c = { "connections", "int" }, connections = { "connections", "int" },
    t = { "threads", "int" }, threads = { "threads", "int" },
    d = { "duration", "seconds" }, duration = { "duration", "seconds" },
    warmup = { "warmup", "seconds" },
    R = { "rate", "number" }, rate = { "rate", "number" },
    w = { "window", "int" }, window = { "window", "int" },
    H = { "headers", "list" }, header = { "headers", "list" },
    m = { "method", "text" }, method = { "method", "text" },
    b = { "body", "text" }, body = { "body", "text" },
    ["body-file"] = { "body_file", "text" },
    ["ok-status"] = { "ok_status", "text" },
    ["no-strict"] = { "no_strict", "flag" },
    ["no-strict-rate"] = { "no_strict_rate", "flag" },
    payload = { "payload", "bytes" },
    timeout = { "timeout", "seconds" },
    ["connect-timeout"] = { "connect_timeout", "seconds" },
    ca = { "ca", "text" },
    ["tls-version"] = { "tls_version", "text" },
    k = { "insecure", "flag" }, insecure = { "insecure", "flag" },
    execution = { "execution", "text" },
    latency = { "latency", "flag" },
    out = { "out", "text" },
    json = { "json", "flag" },
    pipeline = { "pipeline", "flag" },
    -- exports and live metrics, as `arkbench run` has them
    csv = { "csv", "flag" }, hgrm = { "hgrm", "flag" }, openmetrics = { "openmetrics", "flag" },
    ["metrics-listen"] = { "metrics_listen", "text" },
    threshold = { "thresholds", "list" },
    h = { "help", "flag" }, help = { "help", "flag" },
    h2 = { "h2", "flag" }, h2c = { "h2c", "flag" },
}

local function convert(name, kind, v)
    local n
    if kind == "int" then
        n = tonumber(v)
        if not n or n ~= math.floor(n) or n < 1 then
            return nil, format("-%s%s: expected a whole number >= 1, got '%s'",
                #name > 1 and "-" or "", name, v)
        end
    elseif kind == "number" then
        n = tonumber(v)
        if not n or n ~= n or n <= 0 or n == math.huge then
            return nil, format("-%s%s: expected a number > 0, got '%s'", #name > 1 and "-" or "", name, v)
        end
    elseif kind == "seconds" then
        n = units.seconds(v)
        if not n or n < 0 then
            return nil, format("-%s%s: expected seconds %s, got '%s'", #name > 1 and "-" or "", name,
                units.DURATION_HINT, v)
        end
    elseif kind == "bytes" then
        n = units.bytes(v)
        if not n then
            return nil, format("--%s: expected bytes %s, got '%s'", name, units.SIZE_HINT, v)
        end
    else
        n = v
    end
    return n
end

-- "2xx,404" -> { 200, ..., 299, 404 } | nil, why
function _M.parse_statuses(text)
    local out, seen = {}, {}
    local function add(n)
        if not seen[n] then seen[n] = true; out[#out + 1] = n end
    end
    for item in (text .. ","):gmatch("([^,]*),") do
        item = item:match("^%s*(.-)%s*$")
        local class = item:match("^([1-5])[xX][xX]$")
        local n = tonumber(item:match("^%d%d%d$"))
        if class then
            for k = tonumber(class) * 100, tonumber(class) * 100 + 99 do add(k) end
        elseif n and n >= 100 and n <= 599 then
            add(n)
        else
            return nil, format("'%s' is not a status; expected codes from 100 to 599 or classes"
                .. " such as 2xx, comma-separated (e.g. 2xx,404)", item)
        end
    end
    table.sort(out)
    return out
end

-- -b @FILE and --body-file FILE: the body is the file's bytes (o.body).
-- At most BODY_MAX bytes (docs/one-liner.md): a device that never ends
-- (/dev/zero) or a huge file is refused, not read into memory; a folder is
-- refused by name. A body above BODY_INLINE_MAX is not written into the
-- generated scenario as a string literal: the scenario reads the file
-- (o.body_path, absolute) each time it is loaded.
_M.BODY_MAX = 64 * 1024 * 1024
_M.BODY_INLINE_MAX = 64 * 1024
function _M.read_body(o)
    local path = o.body_file
    if o.body and o.body_file then return "-b/--body and --body-file exclude each other" end
    if not path and o.body and o.body:sub(1, 1) == "@" then path = o.body:sub(2) end
    if not path then return nil end
    local f, ferr = io.open(path, "rb")
    if not f then return format("cannot read the body file: %s", tostring(ferr)) end
    local text, rerr = f:read(_M.BODY_MAX + 1)
    if text == nil and rerr then
        f:close()
        if tostring(rerr):find("directory", 1, true) then
            return format("the body file %s is a directory; expected a file", path)
        end
        return format("cannot read the body file %s: %s", path, tostring(rerr))
    end
    f:close()
    text = text or ""
    if #text > _M.BODY_MAX then
        return format("the body file %s is larger than %d MiB (the most a body may be),"
                      .. " or is no file that ends", path, _M.BODY_MAX / (1024 * 1024))
    end
    o.body = text
    if #text > _M.BODY_INLINE_MAX then
        o.body_path = path:sub(1, 1) == "/" and path or ((os.getenv("PWD") or ".") .. "/" .. path)
    end
    o.body_file = nil
    return nil
end

function _M.parse_args(args)
    local o = { headers = {}, thresholds = {} }
    local u, why = _M.parse_url(args[1])
    if not u then return nil, why end
    o.url = u
    local i = 2
    while i <= #args do
        local a = args[i]
        local name, value = a:match("^%-%-([%w-]+)=(.*)$")
        if not name then name = a:match("^%-%-([%w-]+)$") end
        if not name then
            -- -c16 or -c 16 (one letter)
            name, value = a:match("^%-(%a)(.+)$")
            if not name then name = a:match("^%-(%a)$") end
        end
        local f = name and FLAGS[name]
        if not f or (#name == 1 and a:sub(1, 2) == "--") or (#name > 1 and a:sub(1, 2) ~= "--") then
            return nil, "unknown option '" .. a .. "' (see arkbench " .. args[1]:match("^[^:]+")
                .. ":// --help)"
        end
        if f[2] == "flag" then
            if value ~= nil and value ~= "" then return nil, "'" .. a .. "' takes no value" end
            o[f[1]] = true
        else
            if value == nil then
                i = i + 1
                value = args[i]
                -- "-c --out DIR": the value is missing, not "--out"
                if value == nil or (value:sub(1, 2) == "--" and #value > 2)
                   or (value:match("^%-%a$") and FLAGS[value:sub(2)]) then
                    return nil, a .. " needs a value"
                end
            end
            local v, verr = convert(name, f[2], value)
            if v == nil then return nil, verr end
            if f[2] == "list" then o[f[1]][#o[f[1]] + 1] = v else o[f[1]] = v end
        end
        i = i + 1
    end
    local http = u.protocol == "http" or u.protocol == "https"
    -- HTTP/2: --h2 over https:// (ALPN h2), --h2c over http:// (prior
    -- knowledge); as h2load's -m, "-m N" (a number) is the streams per
    -- connection, the window
    if o.h2 or o.h2c then
        if o.h2 and o.h2c then return nil, "--h2 and --h2c exclude each other" end
        if o.h2 and u.protocol ~= "https" then
            return nil, "--h2 is for https:// URLs (HTTP/2 over TLS, ALPN h2); use --h2c with http://"
        end
        if o.h2c and u.protocol ~= "http" then
            return nil, "--h2c is for http:// URLs (HTTP/2 with prior knowledge); use --h2 with https://"
        end
        o.h2_protocol = o.h2 and "h2" or "h2c"
        if o.method and o.method:match("^%d+$") then
            local n = tonumber(o.method)
            if n < 1 then return nil, "-m: expected a whole number >= 1 (streams per connection)" end
            o.window, o.method = n, nil
        end
    end
    for _, k in ipairs({ "method", "body", "body_file", "ok_status" }) do
        if o[k] and not http then
            return nil, format("--%s is for http:// and https:// URLs", (k:gsub("_", "-")))
        end
    end
    local berr = _M.read_body(o)
    if berr then return nil, berr end
    if o.ok_status then
        local list, serr = _M.parse_statuses(o.ok_status)
        if not list then return nil, "--ok-status: " .. serr end
        o.ok_status = list
    end
    if #o.headers > 0 and not http then return nil, "-H is for http:// and https:// URLs" end
    -- a window above 1 over HTTP/1.1 is pipelining: never turned on by -w
    -- (or to meet -R) without being asked for
    if o.pipeline and not http then return nil, "--pipeline is for http:// and https:// URLs" end
    -- (HTTP/2's window is concurrent streams, not pipelining)
    if http and not o.h2_protocol and (o.window or 1) > 1 and not o.pipeline then
        return nil, format("-w %d over %s:// pipelines %d requests on each connection (HTTP/1.1"
            .. " pipelining, which many servers serve one by one or refuse); add --pipeline to ask"
            .. " for it, or raise -c for more requests in flight", o.window, u.scheme, o.window)
    end
    if o.payload and http then
        return nil, "--payload is for the echo schemes (ws, wss, tcp, tls, udp); use -b for a body"
    end
    for _, h in ipairs(o.headers) do
        if not h:match("^[!#$%%&'*+.^_`|~%w-]+:") then
            return nil, format("-H '%s': expected 'Name: value'", h)
        end
    end
    if o.ca and o.insecure then return nil, "--ca and -k/--insecure exclude each other" end
    local tls = u.protocol == "https" or u.protocol == "wss" or u.protocol == "tls"
    if (o.ca or o.insecure or o.tls_version) and not tls then
        return nil, (o.tls_version and "--tls-version" or o.ca and "--ca" or "-k/--insecure")
            .. " is for https://, wss:// and tls:// URLs"
    end
    if o.tls_version and o.tls_version ~= "1.2" and o.tls_version ~= "1.3" then
        return nil, format("--tls-version: expected 1.2 or 1.3, got '%s'", o.tls_version)
    end
    o.tls = tls
    -- -R within the capability table's bounds (issue 27; the scenario check
    -- refuses the same, in the words of the scenario's keys)
    if o.rate then
        local max = core.capabilities().limits.rate_max or 1e9
        local n, d = o.connections or 16, o.duration or 10
        if o.rate > max then
            return nil, format("-R %g: expected at most %g requests/s", o.rate, max)
        end
        if o.rate * d < n then
            return nil, format("-R %g with -c %d and -d %g: the schedule would send less than one"
                .. " request per connection in the measured %g s; expected -R from %g (connections"
                .. " / duration) to %g", o.rate, n, d, d, n / d, max)
        end
    end
    -- the scenario is written elsewhere: --ca is the shell's, from here
    if o.ca and o.ca:sub(1, 1) ~= "/" then
        local cwd = core.getcwd()
        if cwd then o.ca = cwd:gsub("/$", "") .. "/" .. o.ca end
    end
    return o
end

local function q(v) return format("%q", v) end

-- A scenario name from the URL: scheme-host-port (folder-safe).
local function name_of(u)
    return (format("%s-%s-%d", u.scheme, u.host, u.port):gsub("[^%w%.%-_]", "_"))
end

function _M.scenario(o)
    local u = o.url
    local host = u.host:find(":", 1, true) and ("[" .. u.host .. "]") or u.host
    local lines = {
        "-- written by arkbench for: arkbench " .. u.scheme .. "://" .. host .. ":" .. u.port .. u.path,
        "return {",
        "    name = " .. q(name_of(u)) .. ",",
        "    protocol = " .. q(o.h2_protocol or u.protocol) .. ",",
        "    target = " .. q(host .. ":" .. u.port) .. ",",
        "    clients = " .. (o.connections or 16) .. ",",
        "    window = " .. (o.window or 1) .. ",",
        "    topology = " .. q("sharded:" .. (o.threads or 1)) .. ",",
        "    warmup = " .. format("%.17g", o.warmup or 1) .. ",",
        "    duration = " .. format("%.17g", o.duration or 10) .. ",",
        "    repetitions = 1,",
    }
    local function add(s) lines[#lines + 1] = "    " .. s .. "," end
    if o.rate then add("rate = " .. format("%.17g", o.rate)) end
    if o.timeout then add("timeout = " .. format("%.17g", o.timeout)) end
    if o.connect_timeout then add("connect_timeout = " .. format("%.17g", o.connect_timeout)) end
    if o.payload then add("payload = " .. format("%d", o.payload)) end
    if o.execution then add("execution = " .. q(o.execution)) end
    if o.no_strict then add("strict = false") end
    if o.no_strict_rate then add("rate_strict = false") end
    if u.protocol == "http" or u.protocol == "https" then
        local r = { "method = " .. q(o.method or "GET"), "path = " .. q(u.path) }
        if #o.headers > 0 then
            local hs = {}
            for _, h in ipairs(o.headers) do
                local n, v = h:match("^([^:]+):%s*(.-)%s*$")
                hs[#hs + 1] = "[" .. q(n) .. "] = " .. q(v)
            end
            r[#r + 1] = "headers = { " .. concat(hs, ", ") .. " }"
        end
        if o.body_path then
            -- a large body: read from its file, not a literal (read_body)
            table.insert(lines, 2, "local body_file = assert(io.open(" .. q(o.body_path) .. ", \"rb\"))")
            table.insert(lines, 3, "local body = body_file:read(\"*a\")")
            table.insert(lines, 4, "body_file:close()")
            r[#r + 1] = "body = body"
        elseif o.body then r[#r + 1] = "body = " .. q(o.body) end
        if o.ok_status then
            local st = {}
            for i, n in ipairs(o.ok_status) do st[i] = tostring(n) end
            r[#r + 1] = "status = { " .. concat(st, ", ") .. " }"
        end
        add("request = { " .. concat(r, ", ") .. " }")
    end
    -- as curl: TLS 1.2 and 1.3 offered unless --tls-version pins one
    if o.tls then
        local t = { "version = " .. q(o.tls_version or "1.2-1.3") }
        if o.ca then t[#t + 1] = "ca = " .. q(o.ca) end
        if o.insecure then t[#t + 1] = "verify = false" end
        add("tls = { " .. concat(t, ", ") .. " }")
    end
    lines[#lines + 1] = "}"
    return concat(lines, "\n") .. "\n"
end

-- ---- the summary ---------------------------------------------------------

local function dur_text(us)
    if type(us) ~= "number" then return "-" end
    if us >= 1e6 then return format("%.2fs", us / 1e6) end
    if us >= 1e3 then return format("%.2fms", us / 1e3) end
    return format("%.2fus", us)
end

-- { printed, percentile, JSON name }: the run object's names (rtt_us:
-- p999, max), used by every latency view of --json
local LADDER = { { "50%", 50, "p50" }, { "75%", 75, "p75" }, { "90%", 90, "p90" }, { "99%", 99, "p99" },
    { "99.9%", 99.9, "p999" }, { "99.99%", 99.99, "p9999" }, { "100%", 100, "max" } }

-- The numbers of the summary from the one run object.
function _M.numbers(run)
    local out = {
        status = run.status, ok = run.ok, error = run.error,
        requests = run.completed, sent = run.sent, timed_out = run.timed_out,
        errors = run.message_errors, error_classes = run.errors,
        measured_s = run.measured_s, requests_per_s = run.round_trips_per_s,
        payload_mib_per_s = run.payload_mib_per_s, load_model = run.load_model,
        rate_asked = run.rate_asked, rate_achieved = run.rate_achieved, rate_met = run.rate_met,
        latency_us = {}, http_status = run.http and run.http.status or nil,
        unsent = run.unsent, reconnects = run.reconnects, server_closes = run.server_closes,
        drained = run.drained, non_success = run.non_success,
        bytes_sent = run.bytes_sent, bytes_received = run.bytes_received,
        transfer_mib_per_s = run.transfer_mib_per_s,
    }
    -- the successful responses alone (a run with non-success ones): their
    -- rate and latency (http.rtt_ok_us: the completed successful replies)
    local h = run.http and run.http.rtt_ok_us
    if (tonumber(run.non_success) or 0) > 0 and type(h) == "table"
        and type(run.measured_s) == "number" and run.measured_s > 0 then
        out.success = { requests = h.count or 0, requests_per_s = (h.count or 0) / run.measured_s }
        if type(h.p50) == "number" then
            out.success.latency_us = { p50 = h.p50, p90 = h.p90, p99 = h.p99, max = h.max, mean = h.mean }
        end
    end
    -- open loop: the raw view (from the actual sends: what a closed-loop
    -- tool would show) and how late the sends went out
    local function view(t)
        if type(t) ~= "table" or type(t.p50) ~= "number" then return nil end
        return { p50 = t.p50, p90 = t.p90, p99 = t.p99, p999 = t.p999, max = t.max }
    end
    out.raw_latency_us = view(run.rtt_raw_us)
    out.send_lag_us = view(run.send_lag_us)
    local enc = run.rtt_histogram
    if type(enc) == "string" then
        local s = core.hist_summary(enc)
        if s and (s.count or 0) > 0 then
            out.latency_us.mean, out.latency_us.stdev = s.mean, s.stdev
            for _, l in ipairs(LADDER) do
                out.latency_us[l[3]] = core.hist_percentile(enc, l[2])
            end
        end
    end
    return out
end

-- 52778 -> "52,778"
local function grouped(n)
    local t = format("%.0f", tonumber(n) or 0)
    local sign, digits = t:match("^(%-?)(%d+)$")
    if not digits then return t end
    return sign .. digits:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", "")
end
_M.grouped = grouped

-- The statuses of a run's http.status table, as { code, count } sorted by
-- code, and their sum.
local function statuses(http_status)
    local list, total = {}, 0
    for k, v in pairs(type(http_status) == "table" and http_status or {}) do
        if type(v) == "number" then
            list[#list + 1] = { tonumber(k) or 0, v }
            total = total + v
        end
    end
    table.sort(list, function(a, b) return a[1] < b[1] end)
    return list, total
end

-- "Non-success responses: 404 × 52,778 (4xx 52,778)": the statuses outside
-- the success set, by code and by class. The codes outside are those of the
-- errors' "HTTP nnn" classes (the run's own verdict on each).
local function non_success_line(n, line)
    if (tonumber(n.non_success) or 0) == 0 then return end
    local bad = {}
    for k in pairs(type(n.error_classes) == "table" and n.error_classes or {}) do
        local code = tonumber(tostring(k):match("^HTTP (%d+)$"))
        if code then bad[code] = true end
    end
    local parts, classes, corder = {}, {}, {}
    for _, e in ipairs((statuses(n.http_status))) do
        if bad[e[1]] then
            parts[#parts + 1] = format("%d × %s", e[1], grouped(e[2]))
            local cl = format("%dxx", math.floor(e[1] / 100))
            if not classes[cl] then classes[cl] = 0; corder[#corder + 1] = cl end
            classes[cl] = classes[cl] + e[2]
        end
    end
    local cparts = {}
    for _, cl in ipairs(corder) do cparts[#cparts + 1] = cl .. " " .. grouped(classes[cl]) end
    line("  Non-success responses: %s%s", #parts > 0 and concat(parts, ", ") or grouped(n.non_success),
        #cparts > 0 and (" (" .. concat(cparts, ", ") .. ")") or "")
end

-- "Status codes: 200 × 1,000, 404 × 52,778 = 52,778 requests + 1,000
-- drained": the statuses of every reply to a measured request; their sum is
-- the requests completed in time plus the drained ones (replies after the
-- deadline, not in the request count), named when there are any.
local function status_line(n, line)
    local list, total = statuses(n.http_status)
    if #list == 0 then return end
    local parts = {}
    for _, e in ipairs(list) do parts[#parts + 1] = format("%d × %s", e[1], grouped(e[2])) end
    local drained = tonumber(n.drained) or 0
    local tail
    if total == (n.requests or 0) then
        tail = ""
    elseif total == (n.requests or 0) + drained then
        tail = format(" = %s requests + %s drained (replies after the deadline)", grouped(n.requests),
            grouped(drained))
    else
        tail = format(" (%s replies: %s requests, %s drained)", grouped(total), grouped(n.requests),
            grouped(drained))
    end
    line("  Status codes: %s%s", concat(parts, ", "), tail)
end

-- The lines of the error classes and the HTTP statuses (both views).
local function class_lines(n, line)
    if type(n.error_classes) == "table" and next(n.error_classes) then
        local cl = {}
        -- the statuses outside the success set have their own line
        local shown = (tonumber(n.non_success) or 0) > 0
        for k, v in pairs(n.error_classes) do
            if not (shown and tostring(k):match("^HTTP %d+$")) then cl[#cl + 1] = k .. " " .. tostring(v) end
        end
        table.sort(cl)
        if #cl > 0 then
            line("  Errors by class (every phase, reconnect attempts too): %s", concat(cl, ", "))
        end
    end
    status_line(n, line)
end

-- 6841604 bytes -> "6.52MiB"
local function bytes_text(b)
    b = tonumber(b) or 0
    if b >= 1024 ^ 3 then return format("%.2fGiB", b / 1024 ^ 3) end
    if b >= 1024 ^ 2 then return format("%.2fMiB", b / 1024 ^ 2) end
    if b >= 1024 then return format("%.2fKiB", b / 1024) end
    return format("%.0fB", b)
end

local function target_text(o, run)
    local u = o.url
    return format("%s test @ %s://%s:%d%s", dur_text((run.case and run.case.duration or 0) * 1e6),
        u.scheme, u.host, u.port, (u.protocol == "http" or u.protocol == "https") and u.path or "")
end

-- A failed run (run.ok false): the failure first, then what was counted, in
-- a few lines -- no ladder of empty latencies.
local function failed_text(o, run, dir, n)
    local out = {}
    local function line(...) out[#out + 1] = format(...) end
    line("FAILED%s: %s", run.status == "failed" and "" or (" (" .. tostring(run.status) .. ")"),
        tostring(run.error or "no reason recorded"))
    line("  %s: %s requests in %.2fs, %s timed out, %s errors", target_text(o, run),
        tostring(n.requests or 0), n.measured_s or 0, tostring(n.timed_out or 0), tostring(n.errors or 0))
    if n.latency_us.mean then
        line("  Latency   p50 %s   p99 %s   max %s   (%.2f requests/s)", dur_text(n.latency_us.p50),
            dur_text(n.latency_us.p99), dur_text(n.latency_us.max), n.requests_per_s or 0)
    end
    class_lines(n, line)
    line("results: %s (report.html)", dir)
    return concat(out, "\n") .. "\n"
end

function _M.summary_text(o, run, dir)
    local n = _M.numbers(run)
    if run.ok == false and run.status ~= "degraded" then return failed_text(o, run, dir, n) end
    local u = o.url
    local http = u.protocol == "http" or u.protocol == "https"
    local out = {}
    local function line(...) out[#out + 1] = format(...) end
    line("%s", target_text(o, run))
    local threads = o.threads or 1
    line("  %d thread%s and %d connection%s, %s", threads, threads == 1 and "" or "s",
        o.connections or 16, (o.connections or 16) == 1 and "" or "s",
        n.load_model == "open" and format("open loop at %g/s (latency from the intended send times)",
            n.rate_asked or o.rate)
        or format("closed loop, %d in flight per connection", o.window or 1))
    if n.latency_us.mean then
        line("  Latency   mean %s   stdev %s   max %s%s", dur_text(n.latency_us.mean),
            dur_text(n.latency_us.stdev), dur_text(n.latency_us.max),
            n.success and "   (every response)" or "")
        line("  Latency Distribution")
        for _, l in ipairs(LADDER) do
            line("  %7s  %s", l[1], dur_text(n.latency_us[l[3]]))
        end
        local bars = require("arkbench.report.bars").lines(run.rtt_histogram,
            { ascii = os.getenv("ARKBENCH_ASCII") ~= nil })
        if bars then
            line("  Latency Histogram")
            for _, b in ipairs(bars) do line("%s", b) end
        end
    else
        line("  Latency   no reply measured")
    end
    if n.raw_latency_us then
        local r = n.raw_latency_us
        line("  Raw latency (from the actual sends, as a closed-loop tool measures): p50 %s  p99 %s  max %s",
            dur_text(r.p50), dur_text(r.p99), dur_text(r.max))
    end
    if n.send_lag_us then
        local l = n.send_lag_us
        line("  Send lag (actual - intended send): p50 %s  p99 %s  max %s; %s unsent", dur_text(l.p50),
            dur_text(l.p99), dur_text(l.max), tostring(n.unsent or 0))
    end
    line("  %s requests in %.2fs, %s read, %s timed out, %s errors", tostring(n.requests or 0),
        n.measured_s or 0, bytes_text(n.bytes_received), tostring(n.timed_out or 0),
        tostring(n.errors or 0))
    if (n.reconnects or 0) > 0 then line("  %s reconnects", tostring(n.reconnects)) end
    non_success_line(n, line)
    if n.success then
        local s = n.success
        line("  Successful responses: %s, %.2f/s%s", grouped(s.requests), s.requests_per_s,
            s.latency_us and format(", latency p50 %s  p99 %s  max %s", dur_text(s.latency_us.p50),
                dur_text(s.latency_us.p99), dur_text(s.latency_us.max)) or "")
    end
    class_lines(n, line)
    line("Requests/sec: %10.2f%s", n.requests_per_s or 0, n.success and " (every response)" or "")
    if http and type(n.transfer_mib_per_s) == "number" then
        line("Transfer/sec: %10.2fMiB", n.transfer_mib_per_s)
    elseif type(n.payload_mib_per_s) == "number" then
        line("Transfer/sec: %10.2f MiB (echoed payload)", n.payload_mib_per_s)
    end
    if n.load_model == "open" and n.rate_met == false then
        line("warning: the rate was not met: %g/s asked, %.2f/s sent", n.rate_asked or 0, n.rate_achieved or 0)
        if (u.protocol == "http" or u.protocol == "https") and (o.window or 1) == 1 then
            -- what limits it: one request in flight per connection
            line("  limited by one request in flight on each of %d connections (at most connections"
                .. " / latency requests/s): raise -c, or --pipeline -w N", o.connections or 16)
        end
    end
    -- a generator that fell behind says so (report/openloop.lua)
    local gen = require("arkbench.report.openloop").generator_warning(run)
    if gen then line("warning: %s", gen) end
    if run.status ~= "ok" then line("status: %s%s", tostring(run.status), run.error and (": " .. run.error) or "") end
    line("results: %s (report.html)", dir)
    return concat(out, "\n") .. "\n"
end

local function json_file(path)
    local f = io.open(path, "rb")
    if not f then return nil end
    local text = f:read("*a")
    f:close()
    local ok, v = pcall(require("arkbench.util.json").decode, text)
    return ok and v or nil
end

function _M.main(args, cli)
    for i = 2, #args do
        if args[i] == "-h" or args[i] == "--help" then
            io_stdout:write(_M.USAGE)
            return 0
        end
    end
    local o, why = _M.parse_args(args)
    if not o then
        io_stderr:write("arkbench: ", why, "\n")
        return 2
    end
    -- -k is tls.verify = false: the scenario check warns once, as for a file
    local tmp = os.tmpname()
    local path = tmp .. ".lua"
    local ok, err = core.write_file(path, _M.scenario(o))
    os.remove(tmp)
    if not ok then
        io_stderr:write("arkbench: cannot write ", path, ": ", tostring(err), "\n")
        return 1
    end
    -- the scenario is ours: a refusal names the key, not a line of a
    -- temporary file the user never wrote
    local spec, lerr = require("arkbench.scenario.load").load(path)
    if not spec then
        os.remove(path)
        local text = tostring(lerr):gsub(path:gsub("%p", "%%%0") .. ":%d*:? ?", "")
        io_stderr:write("arkbench: ", text, "\n")
        return 2
    end
    local rargs = { "run", path }
    if o.out then rargs[#rargs + 1] = "--out"; rargs[#rargs + 1] = o.out end
    for _, t in ipairs(o.thresholds) do rargs[#rargs + 1] = "--threshold"; rargs[#rargs + 1] = t end
    for _, x in ipairs({ "csv", "hgrm", "openmetrics" }) do
        if o[x] then rargs[#rargs + 1] = "--" .. x end
    end
    if o.metrics_listen then rargs[#rargs + 1] = "--metrics-listen=" .. o.metrics_listen end
    -- one summary: the run's own table (the same numbers) is not printed
    local sink = { write = function(self) return self end, flush = function() end }
    local code, dir = cli.run(rargs, { table_out = sink, hide_path = path,
        thresholds_later = true })
    os.remove(path)
    if not dir then return code end
    local runs = require("arkbench.report.stats").read_jsonl(dir .. "/runs.jsonl") or {}
    local run = runs[#runs]
    if not run then return code end
    local summary = json_file(dir .. "/summary.json")
    local verdict = type(summary) == "table" and type(summary.thresholds) == "table"
        and summary.thresholds or nil
    if o.json then
        local json = require("arkbench.util.json")
        local n = _M.numbers(run)
        n.url = args[1]
        n.connections, n.threads, n.window = o.connections or 16, o.threads or 1, o.window or 1
        n.results = dir
        n.exit_code = code
        n.strict = not o.no_strict
        -- the verdict of each threshold: { rule, crossed, value, why }
        if verdict then
            local list = json.array()
            for _, r in ipairs(verdict.results or {}) do
                list[#list + 1] = { rule = r.rule, crossed = r.crossed == true, value = r.value, why = r.why }
            end
            n.thresholds = { rules = verdict.rules, crossed = verdict.crossed or 0, results = list }
        end
        -- a missing value is left out (not null, not an empty table)
        for k, v in pairs(n) do
            if v == json.null or (type(v) == "table" and next(v) == nil) then n[k] = nil end
        end
        io_stdout:write(json.encode(n, { indent = 2 }), "\n")
    else
        io_stdout:write("\n", _M.summary_text(o, run, dir))
    end
    -- the threshold verdict last, where it is seen (stderr with --json)
    if verdict then
        local w = o.json and io_stderr or io_stdout
        io_stdout:flush()
        w:write("\n", cli.threshold_text(verdict))
    end
    return code
end

return _M
