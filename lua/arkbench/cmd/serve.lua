-- arkbench.cmd.serve: only the server side, for a client on another host or
-- another tool (docs/protocols.md).
--
--   arkbench serve [--protocol tcp|udp|tls|ws|wss|http|https]
--                  [--listen HOST:PORT] [--topology T] [--work N]
--                  [--framing length|raw] [--payload B]
--                  [--cert-out FILE] [--tls-version 1.2|1.3] [--alpn LIST]
--                  [--tls-resume true|false]
--                  [--processes N]
--
-- TLS protocols generate an EC P-256 certificate in memory at start-up
-- (SAN localhost, 127.0.0.1, ::1); --cert-out FILE writes it as PEM (a
-- new file: an existing one is never overwritten) so a
-- client can verify it (`openssl s_client -CAfile FILE`, or a scenario's
-- tls = { ca = FILE } with target =). --alpn is the server's protocol
-- list, comma-separated; a client offering none of them fails the
-- handshake (no_application_protocol). --tls-resume true issues session
-- tickets (one per TLS 1.3 handshake) and keeps a session cache, so that
-- clients with tls.resume = true resume; off (the default) no tickets are
-- sent.
--
-- Prints one line `listening on HOST:PORT` on stdout when every loop
-- listens, serves until SIGINT or SIGTERM, then prints its counters as one
-- JSON object (listen: the address with the port really listened on;
-- connections, messages, bytes, CPU over the serving time,
-- RSS, errors). --listen defaults to 127.0.0.1:0 (an ephemeral port on
-- loopback: servers bind loopback unless told otherwise). With
-- sharded:N the N loops share the port (SO_REUSEPORT); the kernel spreads
-- connections over them. --payload matters only for framing raw (the
-- fixed message size). Exit 0 after a clean stop, 2 on bad arguments.
--
-- --processes N (N > 1) serves from N processes on one port: each is an
-- `arkbench serve --reuse-port` child with the same options (SO_REUSEPORT:
-- the kernel spreads new connections over them by a hash of the
-- addresses), the first on --listen, the others on the port it got. One
-- `listening on` line once all listen; on SIGINT/SIGTERM each child is
-- stopped and the one JSON object printed sums their counts, CPU and RSS
-- and lists each process in processes_detail. TLS protocols are not served
-- from several processes yet (each would generate its own certificate).

local core = require("arkbench.core")
local json = require("arkbench.util.json")

local tonumber, io_stderr, io_stdout = tonumber, io.stderr, io.stdout
local units = require("arkbench.util.units")

local _M = {}

local TLS_PROTOCOLS = {}  -- the capability table's TLS rows
for _, p in ipairs(core.capabilities().protocols) do TLS_PROTOCOLS[p.name] = p.tls end

-- "sharded:N, shared:N or pool:N", from the capability table
local function models_words()
    local m = core.capabilities().models
    local w = {}
    for i, name in ipairs(m) do w[i] = name .. ":N" end
    if #w == 1 then return w[1] end
    return table.concat(w, ", ", 1, #w - 1) .. " or " .. w[#w]
end

local OPTS = { protocol = true, listen = true, topology = true, work = true,
               framing = true, payload = true, ["cert-out"] = true, ["tls-version"] = true,
               alpn = true, ["tls-resume"] = true, processes = true, ["reuse-port"] = true }

-- ARKBENCH_SERVE_STOP=SIGTERM (set by the worker of a split case for its
-- servers, children included): SIGINT is ignored and only SIGTERM stops
-- the server, which the worker sends once its clients drained -- so a
-- Ctrl-C to the process group never closes their connections first
local function term_only() return os.getenv("ARKBENCH_SERVE_STOP") == "SIGTERM" end

-- serve --processes N: the children, one port, their counters as one
-- (arkbench.run.merge.servers)
local function serve_group(o, n)
    local merge = require("arkbench.run.merge")
    local sok, serr = core.signals_install({ sigint = not term_only() })
    if not sok then io_stderr:write("arkbench serve: cannot catch SIGINT/SIGTERM: ", serr, "\n") end
    local env = { "ARKBENCH_PARENT_PID=" .. tostring(core.getpid()) }
    local function argv(listen)
        return { core.exe_path(), "serve", "--protocol", o.protocol, "--listen", listen,
                 "--topology", o.topology, "--work", o.work, "--framing", o.framing,
                 "--payload", o.payload, "--reuse-port", "1" }
    end
    local kids, listen = {}, o.listen
    local function stop_all()
        for _, h in ipairs(kids) do h:signal("TERM") end
        local t_end = core.now_ns() + 10e9
        while core.now_ns() < t_end do
            local alive = false
            for _, h in ipairs(kids) do alive = alive or not h:state() end
            if not alive then break end
            core.child_poll(kids, 0.05)
        end
    end
    for i = 1, n do
        local h, err = core.child_start(argv(listen), { env = env })
        if not h then
            stop_all()
            io_stderr:write("arkbench serve: cannot start process ", i, ": ", tostring(err), "\n")
            return 2
        end
        kids[i] = h
        local got
        while not got do
            core.child_poll({ h }, 0.05)
            for _, l in ipairs(h:lines("stdout")) do
                got = got or l:match("^listening on (.+)$")
            end
            if not got and (h:state() or core.interrupted()) then
                stop_all()
                io_stderr:write("arkbench serve: process ", i, " of ", n, " did not listen: ",
                    h:text("stderr"), "\n")
                return 2
            end
        end
        listen = got
    end
    io_stdout:write("listening on ", listen, "\n")
    io_stdout:flush()
    while not core.interrupted() do
        core.child_poll(kids, 0.1)
        for _, h in ipairs(kids) do
            for _, l in ipairs(h:lines("stderr")) do io_stderr:write(l, "\n") end
        end
    end
    stop_all()
    local list, detail = {}, json.array()
    for i, h in ipairs(kids) do
        core.child_poll({ h }, 0)
        local last
        for _, l in ipairs(h:lines("stdout")) do
            if l:match("^%s*{") then last = l end
        end
        local one = last and json.decode(last)
        if type(one) ~= "table" then
            one = { ok = false, error = "process " .. i .. " printed no counters: " .. h:text("stderr") }
        end
        list[i] = one
        detail[i] = { process = i, pid = h:pid(), connections = one.connections,
                      messages = one.messages, bytes = one.bytes, cpu_percent = one.cpu_percent,
                      cpu_user_s = one.cpu_user_s, cpu_sys_s = one.cpu_sys_s,
                      rss_peak_bytes = one.rss_peak_bytes, rss_end_bytes = one.rss_end_bytes,
                      rss_base_bytes = one.rss_base_bytes }
        h:close()
    end
    local out = merge.servers(list)
    out.protocol, out.listen, out.topology = o.protocol, listen, o.topology
    out.processes_detail = detail
    io_stdout:write(json.encode(out), "\n")
    io_stdout:flush()
    return out.ok and 0 or 1
end

function _M.main(args)
    local o = { protocol = "tcp", listen = "127.0.0.1:0", topology = "sharded:1",
                work = "0", framing = "length", payload = "1024" }
    local i = 1
    while i <= #args do
        local k, v = args[i]:match("^%-%-([%w_%-]+)=?(.*)$")
        if not k or not OPTS[k] then
            io_stderr:write("arkbench serve: unknown argument '", args[i], "'\n")
            return 2
        end
        if v == "" then
            v = args[i + 1]
            i = i + 1
        end
        -- "--processes --listen X": the next option is not a value
        if v == nil or v:match("^%-%-") then
            io_stderr:write("arkbench serve: --", k, " needs a value\n")
            return 2
        end
        o[k] = v
        i = i + 1
    end
    if o["cert-out"] then
        local tls_protocols = { tls = true, wss = true, https = true, h2 = true }
        if not tls_protocols[o.protocol] then
            io_stderr:write("arkbench serve: warning: --cert-out has no effect: --protocol ",
                tostring(o.protocol), " has no certificate (tls, wss, https and h2 have)\n")
            o["cert-out"] = nil
        end
    end
    if o["cert-out"] then
        local f = io.open(o["cert-out"], "r")
        if f then
            f:close()
            io_stderr:write("arkbench serve: --cert-out ", o["cert-out"], " already exists;"
                .. " it would be overwritten (give a new file name)\n")
            return 2
        end
        -- can it be written? (checked before anything listens)
        local w, werr = io.open(o["cert-out"], "w")
        if not w then
            io_stderr:write("arkbench serve: --cert-out ", o["cert-out"], ": cannot write it: ",
                tostring(werr):gsub("^[^:]*: ", ""), "\n")
            return 2
        end
        w:close()
        os.remove(o["cert-out"])
    end
    -- every value checked before anything listens
    local matrix = require("arkbench.scenario.matrix")
    local function int_in(k, lo, hi)
        local n = (k == "payload" and units.bytes or tonumber)(o[k])
        if not n or n ~= math.floor(n) or n < lo or n > hi then
            io_stderr:write(string.format("arkbench serve: --%s %s: expected an integer from %d"
                .. " to %d\n", k, tostring(o[k]), lo, hi))
            return nil
        end
        return n
    end
    -- the limits are the capability table's (core/proto/caps.h)
    local lim = core.capabilities().limits
    if not int_in("work", 0, lim.work_max)
       or not int_in("payload", lim.payload_min, lim.payload_max) then
        return 2
    end
    if not matrix.topology(o.topology) then
        io_stderr:write("arkbench serve: --topology ", o.topology,
            ": expected ", models_words(), " with N from ", lim.threads_min, " to ",
            lim.threads_max, "\n")
        return 2
    end
    local resume = o["tls-resume"]
    if resume ~= nil and resume ~= "true" and resume ~= "false" then
        io_stderr:write("arkbench serve: --tls-resume ", resume, ": expected true or false\n")
        return 2
    end
    local port = tonumber(o.listen:match(":(%d+)$") or "")
    if not port or port > 65535 then
        io_stderr:write("arkbench serve: --listen ", o.listen, ": expected HOST:PORT with a port"
            .. " from 0 to 65535\n")
        return 2
    end
    local nproc = tonumber(o.processes or "1")
    if not nproc or nproc ~= math.floor(nproc) or nproc < 1 or nproc > 64 then
        io_stderr:write("arkbench serve: --processes ", tostring(o.processes),
            ": expected an integer from 1 to 64\n")
        return 2
    end
    if nproc > 1 and TLS_PROTOCOLS[o.protocol] then
        io_stderr:write("arkbench serve: --processes ", nproc, " with --protocol ", o.protocol,
            ": TLS is not served from several processes yet (each would make its own"
            .. " certificate)\n")
        return 2
    end
    local ppid = tonumber(os.getenv("ARKBENCH_PARENT_PID") or "")
    if ppid and core.die_with_parent then core.die_with_parent(ppid) end
    if nproc > 1 then return serve_group(o, nproc) end
    local t0 = core.now_ns()
    local r, err = core.run_case({
        reuse_port = o["reuse-port"] ~= nil,
        sigint = not term_only(),
        role = "server", protocol = o.protocol, listen = o.listen, topology = o.topology,
        work = tonumber(o.work), framing = o.framing, payload = units.bytes(o.payload),
        duration = 1, warmup = 0, timeout = 2,
        tls = { cert = o["cert-out"], version = o["tls-version"], alpn = o.alpn,
                resume = resume == "true" },
    })
    if not r then
        io_stderr:write("arkbench serve: ", tostring(err), "\n")
        return 2
    end
    -- the address really listened on: --listen may ask for port 0
    local listen = o.listen
    if r.listen_port then listen = o.listen:gsub(":%d+$", ":" .. r.listen_port) end
    local out = {
        ok = r.ok, error = r.error, protocol = o.protocol, listen = listen,
        topology = o.topology, loops = r.loops, workers = r.workers,
        connections = r.server_connections, messages = r.server_messages,
        bytes = r.server_bytes, resets = r.server_resets, served_s = r.measured_s, cpu_percent = r.cpu_percent,
        cpu_user_s = r.cpu_user_s, cpu_sys_s = r.cpu_sys_s,
        cpu_machine_percent = r.cpu_machine_percent, rss_peak_bytes = r.rss_peak_bytes,
        rss_end_bytes = r.rss_end_bytes, rss_base_bytes = r.rss_base_bytes, errors = r.errors, local_errors = r.local_errors,
        error_reasons = r.error_reasons,
        elapsed_s = (core.now_ns() - t0) / 1e9,
    }
    if r.tls then out.tls = r.tls end
    if r.udp then out.udp = { server_drops = r.udp.server_drops, buffers = r.udp.buffers.server } end
    io_stdout:write(json.encode(out), "\n")
    io_stdout:flush()
    return r.ok and 0 or 1
end

return _M
