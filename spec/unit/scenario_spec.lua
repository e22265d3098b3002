-- spec/unit/scenario_spec.lua -- arkbench.scenario.load: loading, validation,
-- defaults, --set, --quick. Error messages are asserted exactly: they are
-- the user interface.

local scenario = require("arkbench.scenario.load")
local matrix = require("arkbench.scenario.matrix")

local F = "spec/fixtures/scenarios/"

local function load_err(name, sets)
    local spec, err = scenario.load(F .. name, sets)
    assert.is_nil(spec)
    assert.is_string(err)
    return err
end

describe("scenario.load", function()
    describe("refuses a file that does not run", function()
        it("returns the loader's message for a syntax error, with path:line", function()
            local path = F .. "syntax_error.lua"
            local err = load_err("syntax_error.lua")
            assert.equals(path .. ":4: '}' expected (to close '{' at line 2) near 'clients'", err)
            assert.equals(select(2, loadfile(path)), err)
        end)

        it("names the file and keeps file:line, in one line, for a runtime error", function()
            local path = F .. "runtime_error.lua"
            local err = load_err("runtime_error.lua")
            -- one line, no traceback (issue #11: a scenario's error is the
            -- user's, not arkbench's)
            assert.equals(path .. ": error while running scenario: " .. path .. ":2: no size today", err)
        end)

        it("puts back the standard library the file changed", function()
            local path = os.tmpname()
            finally(function() os.remove(path) end)
            local f = io.open(path, "w")
            f:write("string.format = function() return 'X' end; table.concat = nil;"
                    .. " getmetatable('').__index = function() error('idx') end;"
                    .. " package.loaded['arkbench.util.json'] = 5; rawset(getmetatable(_ENV or getfenv(1))"
                    .. ".__index, 'ark_global', 1); return { payload = 64 }")
            f:close()
            local json = require("arkbench.util.json")
            local format, concat = string.format, table.concat
            local spec, err = scenario.load(path)
            assert.is_truthy(spec, err)
            assert.equals(format, string.format)
            assert.equals(concat, table.concat)
            assert.equals(json, package.loaded["arkbench.util.json"])
            assert.equals("b", ("abc"):sub(2, 2))
            assert.is_nil(rawget(_G, "ark_global"))
        end)

        it("bounds what validation reads: keys per table, cases", function()
            local path = os.tmpname()
            finally(function() os.remove(path) end)
            local function try(body)
                local f = io.open(path, "w"); f:write(body); f:close()
                return select(2, scenario.load(path))
            end
            assert.equals(path .. ": the returned table has more than 1000 entries (too many keys);"
                .. " a scenario needs a few dozen",
                try("local t = {} for i = 1, 2000 do t['k' .. i] = 1 end return t"))
            local err = try("local a = {} for i = 1, 50 do a[i] = i + 63 end return { payload = a, work = a,"
                .. " duration = a }")
            assert.truthy(err:find("the scenario has 125000 cases; at most 100000 are allowed", 1, true), err)
        end)

        it("makes any error object one line of at most ERR_MAX bytes", function()
            assert.equals("(error object is a nil value)", scenario.one_line(nil))
            assert.equals("(error object is a table value)",
                          scenario.one_line(setmetatable({}, { __tostring = function() error("x") end })))
            assert.equals("a ...", scenario.one_line("a\nb"))
            local long = scenario.one_line(string.rep("E", 1e6))
            assert.equals(scenario.ERR_MAX + 4, #long)
            assert.equals(" ...", long:sub(-4))
            assert.equals("tab there", scenario.one_line("tab\tthere"))
        end)

        it("refuses a chunk that does not return a table", function()
            assert.equals(F .. "not_table.lua: scenario must return a table, got number",
                          load_err("not_table.lua"))
        end)

        it("returns the loader's message for a missing file", function()
            local err = load_err("no_such_file.lua")
            assert.equals("arkbench: cannot open " .. F .. "no_such_file.lua: No such file or directory", err)
        end)
    end)

    describe("refuses wrong keys with path:line, the key and what is allowed", function()
        it("suggests the nearest key for a typo, at the typo's line (not a comment's)", function()
            assert.equals(F .. "misspelt.lua:5: unknown key 'paylod'; did you mean 'payload'?",
                          load_err("misspelt.lua"))
        end)

        it("lists the known keys when nothing is near", function()
            assert.equals(F .. "unknown_far.lua:2: unknown key 'frobnicate'; known keys: name, "
                .. "label, vars, description, protocol, framing, payload, clients, window, load, topology, "
                .. "execution, coroutine_stack, work, warmup, duration, repetitions, rate, rate_precision, requests_per_connection, "
                .. "connect_rate, interval, timeout, connect_timeout, placement, processes, target, bind, tls, udp, "
                .. "h2, request, client, server, message, expect, tag"
                .. ", thresholds, max_error_rate, rate_strict, strict",
                load_err("unknown_far.lua"))
        end)

        it("names the key and the expected type for payload = \"abc\"", function()
            assert.equals(F .. "bad_type.lua:3: key 'payload': got string \"abc\"; "
                .. "expected an integer from 1 to 16777216 (bytes) or a size such as \"64B\", \"16KiB\", \"1MiB\"", load_err("bad_type.lua"))
        end)

        it("names the list element that is wrong, and an empty list", function()
            assert.equals(
                F .. "bad_element.lua:2: key 'payload' element 2: got string \"big\"; "
                    .. "expected an integer from 1 to 16777216 (bytes) or a size such as \"64B\", \"16KiB\", \"1MiB\"\n"
                .. F .. "bad_element.lua:3: key 'clients': got an empty list; "
                    .. "expected an integer from 1 to 100000, or a non-empty list of them",
                load_err("bad_element.lua"))
        end)

        it("refuses duration = 0 with the allowed range", function()
            assert.equals(F .. "zero_duration.lua:2: key 'duration': got 0; "
                .. "expected a number > 0 (seconds, at most 3600) or a duration such as \"250ms\", \"10s\", \"2m\"", load_err("zero_duration.lua"))
        end)

        it("refuses clients = 0 with the allowed range", function()
            assert.equals(F .. "zero_clients.lua:4: key 'clients': got 0; "
                .. "expected an integer from 1 to 100000", load_err("zero_clients.lua"))
        end)

        it("refuses payload = 0 and takes 1 (below the 16-byte header: the small form)", function()
            assert.equals(F .. "zero_payload.lua:3: key 'payload' element 3: got 0; expected an integer "
                .. "from 1 to 65507 (the UDP datagram limit) or a size such as \"64B\", \"16KiB\", \"1MiB\"",
                load_err("zero_payload.lua"))
            local spec = assert(scenario.load(F .. "zero_payload.lua", { "payload=1,4" }))
            local payloads = {}
            for _, c in ipairs(matrix.expand(spec)) do payloads[#payloads + 1] = c.payload end
            assert.are.same({ 1, 4, 1, 4 }, payloads)
        end)

        it("refuses load together with clients, naming both lines", function()
            -- `clients =` inside the load pairs (line 3) is not the top-level key (line 6)
            assert.equals(F .. "load_and_clients.lua:2: key 'load': given together with key "
                .. "'clients' (" .. F .. "load_and_clients.lua:6); expected either load pairs "
                .. "or clients/window, not both", load_err("load_and_clients.lua"))
        end)

        -- a perfect echo showed 13 % loss and as many duplicates: each reply
        -- completed the youngest of the messages sharing its byte
        it("refuses a window over 256 with 1-byte udp datagrams", function()
            assert.equals(F .. "udp_tiny_wide.lua:4: key 'window': window 300 with payload = 1 over"
                .. " udp; expected a window of at most 256 (a 1-byte datagram tells only 256"
                .. " messages in flight apart) or a payload of 2 bytes or more",
                load_err("udp_tiny_wide.lua"))
            assert.is_truthy(scenario.load(F .. "udp_tiny_wide.lua", { "window=256" }))
            assert.is_truthy(scenario.load(F .. "udp_tiny_wide.lua", { "payload=2" }))
        end)

        -- a run failed with "connect: invalid argument (EINVAL)" instead
        it("refuses bind addresses of another family than the destination", function()
            assert.equals(F .. "bind_family.lua:4: key 'bind': got IPv6 addresses, but arkbench's"
                .. " own server (127.0.0.1) is IPv4; expected source addresses of the"
                .. " destination's family", load_err("bind_family.lua"))
            assert.is_truthy(scenario.load(F .. "bind_family.lua", { "target=[::1]:7000" }))
            assert.equals("--set bind=127.0.0.2: key 'bind': got IPv4 addresses, but target"
                .. " [::1]:7000 is IPv6; expected source addresses of the destination's family",
                load_err("bind_family.lua", { "bind=127.0.0.2", "target=[::1]:7000" }))
            assert.is_truthy(scenario.load(F .. "bind_family.lua", { "bind=127.0.0.2" }))
        end)

        -- the split server (the built-in echo) ignored it: a timed-out run
        it("refuses a Lua server function with placement = split", function()
            assert.equals(F .. "lua_server_split.lua:5: key 'server': given with placement ="
                .. " \"split\" (" .. F .. "lua_server_split.lua:3); the split server process is"
                .. " arkbench serve's built-in echo and does not run a server function; expected"
                .. " placement = \"same-process\"", load_err("lua_server_split.lua"))
            assert.is_truthy(scenario.load(F .. "lua_server_split.lua", { "placement=same-process" }))
        end)

        it("applies the UDP datagram limit to payload", function()
            assert.equals(F .. "udp_big.lua:3: key 'payload': got 65508; expected an integer "
                .. "from 1 to 65507 (the UDP datagram limit) or a size such as \"64B\", \"16KiB\", \"1MiB\"", load_err("udp_big.lua"))
            assert.equals(F .. "mixed_protocols.lua:3: key 'payload': got 100000; expected an "
                .. "integer from 1 to 65507 (the UDP datagram limit) or a size such as \"64B\", \"16KiB\", \"1MiB\"",
                load_err("mixed_protocols.lua"))
        end)

        it("says a list of parts takes no keys of its own", function()
            assert.equals(F .. "parts_with_name.lua:3: unexpected list entry [1]: got a table; "
                .. "expected named keys, such as payload = 64 (a list of parts takes no keys of its "
                .. "own: give each part its keys, name included)", load_err("parts_with_name.lua"))
        end)

        it("reports every problem, one per line, in file order", function()
            assert.equals(table.concat({
                F .. "several.lua:1: unexpected list entry [1]: got string \"tcp\"; "
                    .. "expected named keys, such as payload = 64",
                F .. "several.lua:2: key 'warmup': got -1; expected a number >= 0 "
                    .. "(seconds, at most 3600) or a duration such as \"250ms\", \"10s\", \"2m\"",
                F .. "several.lua:3: key 'topology': got string \"sharded:0\"; expected "
                    .. "\"sharded:N\", \"shared:N\" or \"pool:N\" with N an integer from 1 to 256",
                F .. "several.lua:4: key 'tls': unknown key 'verison'; did you mean 'version'?",
            }, "\n"), load_err("several.lua"))
        end)
    end)

    describe("cross-checks", function()
        it("runs sharded:8 with clients = 2 and says 6 loops are idle", function()
            local spec = assert(scenario.load(F .. "sharded_few.lua"))
            assert.same({ F .. "sharded_few.lua:3: key 'topology': sharded:8 with clients=2: "
                .. "6 of 8 loops run without a connection (the load is not changed): 1 of the scenario's 1 cases" },
                spec.warnings)
            -- the only case has idle loops, and still the scenario is not refused
            local cases, dropped = matrix.expand(spec)
            assert.same({}, dropped)
            assert.equals(1, #cases)
            assert.equals(2, cases[1].clients)
            assert.equals(1, cases[1].window)
            assert.equals("sharded:8", cases[1].topology)
            assert.equals(6, matrix.idle_loops(cases[1]))
        end)

        it("refuses more than 1 GiB in flight in the worst case of the matrix", function()
            assert.equals(F .. "too_big.lua:3: key 'payload': clients x window x payload = "
                .. "100 x 64 x 1048576 = 6710886400 bytes in flight in one case; expected at "
                .. "most 1073741824 (1 GiB)", load_err("too_big.lua"))
        end)

        it("warns once per topology/clients pair with idle loops", function()
            -- 2 protocols x 2 payloads x 3 topologies = 12 cases; sharded:8 in 4
            local spec = assert(scenario.load(F .. "mixed_ok.lua"))
            assert.same({
                F .. "mixed_ok.lua:5: key 'topology': sharded:8 with clients=4: 4 of 8 loops "
                    .. "run without a connection (the load is not changed): 4 of the scenario's 12 cases",
            }, spec.warnings)
        end)

        it("counts each topology/clients pair across the other axes, in matrix order", function()
            -- 3 clients x 2 windows x 2 topologies = 12 cases; pool:4 never idles
            local spec = assert(scenario.load(F .. "idle_loops.lua"))
            assert.same({
                F .. "idle_loops.lua:6: key 'topology': sharded:4 with clients=1: 3 of 4 loops "
                    .. "run without a connection (the load is not changed): 2 of the scenario's 12 cases",
                F .. "idle_loops.lua:6: key 'topology': sharded:4 with clients=2: 2 of 4 loops "
                    .. "run without a connection (the load is not changed): 2 of the scenario's 12 cases",
            }, spec.warnings)
        end)

        it("does not warn when every sharded loop gets a connection", function()
            local spec = assert(scenario.load(F .. "sharded_few.lua", { "clients=8" }))
            assert.same({}, spec.warnings)
            spec = assert(scenario.load(F .. "idle_loops.lua", { "clients=4,9" }))
            assert.same({}, spec.warnings)
        end)

        it("warns that udp with window > 1 measures queueing", function()
            local spec = assert(scenario.load(F .. "udp.lua"))
            assert.same({ F .. "udp.lua:4: key 'window': udp with window > 1 measures "
                .. "queueing, not RTT" }, spec.warnings)
        end)

        it("warns about a scenario key set as a global", function()
            local spec = assert(scenario.load(F .. "global_hook.lua"))
            assert.same({ F .. "global_hook.lua:2: global 'client' is ignored; scenario keys "
                .. "go in the table the file returns" }, spec.warnings)
            assert.is_nil(spec.hooks.client)
            assert.is_nil(rawget(_G, "client"))
        end)
    end)

    describe("defaults", function()
        it("fills every default and names the scenario after the file", function()
            local spec = assert(scenario.load(F .. "minimal.lua"))
            assert.equals(F .. "minimal.lua", spec.path)
            assert.equals("-- nothing but defaults\nreturn {}\n", spec.source)
            assert.equals("minimal", spec.name)
            assert.same({
                name = "minimal", protocol = "tcp", framing = "length", payload = 1024,
                clients = 1, window = 1, topology = "sharded:1", execution = "callback",
                work = 0, warmup = 0.25, duration = 1, repetitions = 3, timeout = 2,
                placement = "same-process",
            }, spec.keys)
            assert.same({}, spec.axes)
            assert.same({}, spec.hooks)
            assert.same({}, spec.warnings)
        end)

        it("defaults timeout to 0.2 s for udp", function()
            local spec = assert(scenario.load(F .. "udp.lua"))
            assert.equals(0.2, spec.keys.timeout)
            assert.equals("udp", spec.keys.protocol)
            assert.equals(512, spec.keys.payload)
        end)

        it("leaves timeout per case when the protocol axis mixes udp and others", function()
            local spec = assert(scenario.load(F .. "mixed_ok.lua"))
            assert.is_nil(spec.keys.timeout)
            assert.is_true(spec.defaulted.timeout)
            assert.same({ "protocol", "payload", "topology" }, spec.axes)
        end)

        it("keeps hooks, tls and name apart from the axes", function()
            local spec = assert(scenario.load(F .. "hooks.lua"))
            assert.equals("lines", spec.name)
            assert.equals("function", type(spec.hooks.message))
            assert.equals("ping 3\n", spec.hooks.message(3))
            assert.equals("line", spec.hooks.expect)
            assert.is_nil(spec.keys.message)
            assert.same({ version = "1.2", alpn = { "h2", "http/1.1" }, resume = true }, spec.keys.tls)
            assert.same({ F .. "hooks.lua:8: key 'tls': no case uses protocol tls, wss, https or h2, "
                .. "so it has no effect" }, spec.warnings)
        end)
    end)

    describe("the reference matrix scenarios/tcp.lua", function()
        it("loads with its three axes and reports the idle sharded loops", function()
            local spec = assert(scenario.load("scenarios/tcp.lua"))
            assert.equals("tcp", spec.name)
            assert.same({ "payload", "load", "topology" }, spec.axes)
            assert.same({ 64, 1024, 16384 }, spec.keys.payload)
            assert.same({ { clients = 1, window = 1 }, { clients = 16, window = 16 } }, spec.keys.load)
            assert.is_nil(spec.keys.clients)
            assert.is_nil(spec.keys.window)
            assert.same({
                "scenarios/tcp.lua:31: key 'topology': sharded:2 with clients=1: 1 of 2 loops "
                    .. "run without a connection (the load is not changed): 3 of the scenario's 30 cases",
                "scenarios/tcp.lua:31: key 'topology': sharded:4 with clients=1: 3 of 4 loops "
                    .. "run without a connection (the load is not changed): 3 of the scenario's 30 cases",
            }, spec.warnings)
        end)
    end)

    describe("--set", function()
        it("parses booleans, numbers, lists and strings", function()
            assert.equals(true, scenario.parse_value("true"))
            assert.equals(false, scenario.parse_value("false"))
            assert.equals(64, scenario.parse_value("64"))
            assert.equals(0.25, scenario.parse_value("0.25"))
            assert.equals(100000, scenario.parse_value("1e5"))
            assert.same({ 64, 1024 }, scenario.parse_value("64,1024"))
            assert.same({ "shared:1", 4, true }, scenario.parse_value("shared:1,4,true"))
            assert.equals("sharded:4", scenario.parse_value("sharded:4"))
            assert.equals("nan", scenario.parse_value("nan"))
            assert.equals("", scenario.parse_value(""))
        end)

        it("overrides keys before validation, making axes", function()
            local spec = assert(scenario.load(F .. "minimal.lua",
                { "payload=64,1024", "protocol=udp", "work=5000", "name=2024" }))
            assert.same({ 64, 1024 }, spec.keys.payload)
            assert.equals("udp", spec.keys.protocol)
            assert.equals(0.2, spec.keys.timeout)
            assert.equals(5000, spec.keys.work)
            assert.equals("2024", spec.name)          -- names stay text
            assert.same({ "payload" }, spec.axes)
        end)

        it("refuses a bad value the same way, naming the --set", function()
            assert.equals("--set payload=abc: key 'payload': got string \"abc\"; "
                .. "expected an integer from 1 to 16777216 (bytes) or a size such as \"64B\", \"16KiB\", \"1MiB\"",
                load_err("minimal.lua", { "payload=abc" }))
            assert.equals("--set payload=64,abc: key 'payload' element 2: got string \"abc\"; "
                .. "expected an integer from 1 to 16777216 (bytes) or a size such as \"64B\", \"16KiB\", \"1MiB\"",
                load_err("minimal.lua", { "payload=64,abc" }))
            assert.equals("--set duration=0: key 'duration': got 0; expected a number > 0 "
                .. "(seconds, at most 3600) or a duration such as \"250ms\", \"10s\", \"2m\"", load_err("minimal.lua", { "duration=0" }))
        end)

        it("refuses an unknown key with a suggestion, and a malformed entry", function()
            assert.equals("--set paylod=64: unknown key 'paylod'; did you mean 'payload'?",
                load_err("minimal.lua", { "paylod=64" }))
            assert.equals("--set payload: expected key=value",
                load_err("minimal.lua", { "payload" }))
        end)

        -- a PEM certificate (tls.ca must name a readable one)
        local CA = F .. "ca.pem"

        it("sets one key of a table-valued key with KEY.SUB=value, merged into the file's", function()
            local spec = assert(scenario.load(F .. "minimal.lua",
                { "protocol=tls", "tls.ca=" .. CA, "tls.version=1.2", "tls.alpn=h2,http/1.1",
                  "udp.send_buffer=65536" }))
            -- version stays text ("1.2", as in a file), alpn a list, udp sizes numbers
            assert.same({ ca = CA, version = "1.2", alpn = { "h2", "http/1.1" } },
                spec.keys.tls)
            assert.same({ send_buffer = 65536 }, spec.keys.udp)
            -- the file's own tls keys stay unless --set replaces them
            local hooks = assert(scenario.load(F .. "hooks.lua",
                { "protocol=tls", "tls.version=1.3", "tls.ca=" .. CA }))
            assert.same({ version = "1.3", alpn = { "h2", "http/1.1" }, resume = true,
                ca = CA }, hooks.keys.tls)
        end)

        it("refuses an unknown sub-key with a suggestion, and a wrong value in the file's words", function()
            assert.equals("--set tls.cx=" .. CA .. ": key 'tls': unknown key 'cx'; did you mean 'ca'?",
                load_err("minimal.lua", { "protocol=tls", "tls.cx=" .. CA }))
            assert.equals("--set udp.send_bufer=1: key 'udp': unknown key 'send_bufer'; "
                .. "did you mean 'send_buffer'?", load_err("minimal.lua", { "udp.send_bufer=1" }))
            assert.equals("--set tls.version=1.4: key 'tls': key 'version': got string \"1.4\"; "
                .. "expected \"1.2\", \"1.3\" or \"1.2-1.3\" (either)",
                load_err("minimal.lua", { "protocol=tls", "tls.version=1.4" }))
            assert.equals("--set tls.resume=maybe: key 'tls': key 'resume': got string \"maybe\"; "
                .. "expected a boolean", load_err("minimal.lua", { "protocol=tls", "tls.resume=maybe" }))
            assert.equals("--set udp.recv_buffer=big: key 'udp': key 'recv_buffer': got string "
                .. "\"big\"; expected an integer from 1 to 1073741824 (bytes) or a size such as \"64B\", \"16KiB\", \"1MiB\"",
                load_err("minimal.lua", { "protocol=udp", "udp.recv_buffer=big" }))
            assert.equals("--set payload.x=1: key 'payload' takes a value, not sub-keys; "
                .. "--set KEY.SUB=value is for h2, request, tls, udp", load_err("minimal.lua", { "payload.x=1" }))
            assert.equals("--set tsl.ca=f: unknown key 'tsl'; did you mean 'tls'?",
                load_err("minimal.lua", { "tsl.ca=f" }))
            -- a whole table cannot be typed: the message says how to give it
            assert.equals("--set tls={ca=f}: key 'tls': got string \"{ca=f}\"; expected a table with "
                .. "keys version, ciphers, sni, alpn, resume, ca, verify (on the command line: --set tls.ca=..., "
                .. "one key at a time)", load_err("minimal.lua", { "protocol=tls", "tls={ca=f}" }))
        end)

        it("lists --set errors before the file's", function()
            assert.equals("--set window=0: key 'window': got 0; expected an integer from 1 to 4096\n"
                .. F .. "zero_clients.lua:4: key 'clients': got 0; expected an integer from 1 to 100000",
                load_err("zero_clients.lua", { "window=0" }))
        end)

        it("replaces the file's load when clients or window is set", function()
            local spec = assert(scenario.load("scenarios/tcp.lua", { "clients=4" }))
            assert.is_nil(spec.keys.load)
            assert.equals(4, spec.keys.clients)
            assert.equals(1, spec.keys.window)
            assert.same({ "payload", "topology" }, spec.axes)
            assert.same({ "scenarios/tcp.lua:27: key 'load': replaced by --set clients=4 "
                .. "(window = 1, its default)" }, spec.warnings)
        end)

        it("takes load pairs as CxW", function()
            local spec = assert(scenario.load(F .. "minimal.lua", { "load=2x2,16x16" }))
            assert.same({ { clients = 2, window = 2 }, { clients = 16, window = 16 } }, spec.keys.load)
            assert.is_nil(spec.keys.clients)
            assert.same({ "load" }, spec.axes)
        end)

        it("refuses load and clients both set", function()
            assert.equals("--set load=1x1: key 'load': given together with key 'clients' "
                .. "(--set clients=3); expected either load pairs or clients/window, not both",
                load_err("minimal.lua", { "load=1x1", "clients=3" }))
        end)

        it("runs a topology given on the command line with fewer clients, warning at the --set", function()
            local spec = assert(scenario.load(F .. "minimal.lua", { "topology=sharded:4" }))
            assert.same({ "--set topology=sharded:4: key 'topology': sharded:4 with clients=1: "
                .. "3 of 4 loops run without a connection (the load is not changed): 1 of the scenario's 1 cases" },
                spec.warnings)
            local cases, dropped = matrix.expand(spec)
            assert.same({}, dropped)
            assert.equals(1, #cases)
            assert.equals(1, cases[1].clients)
            assert.equals(3, matrix.idle_loops(cases[1]))
        end)

        it("anchors the idle-loop warning at the file's topology when clients is --set", function()
            local spec = assert(scenario.load(F .. "sharded_few.lua", { "clients=3" }))
            assert.same({ F .. "sharded_few.lua:3: key 'topology': sharded:8 with clients=3: "
                .. "5 of 8 loops run without a connection (the load is not changed): 1 of the scenario's 1 cases" },
                spec.warnings)
        end)

        it("keeps every case of a --set load whose one pair leaves sharded loops idle", function()
            -- 3 payloads x 1 load pair x 5 topologies = 15 cases, 3 of each sharded:N
            local spec = assert(scenario.load("scenarios/tcp.lua", { "load=1x1" }))
            assert.same({
                "scenarios/tcp.lua:31: key 'topology': sharded:2 with clients=1: 1 of 2 loops "
                    .. "run without a connection (the load is not changed): 3 of the scenario's 15 cases",
                "scenarios/tcp.lua:31: key 'topology': sharded:4 with clients=1: 3 of 4 loops "
                    .. "run without a connection (the load is not changed): 3 of the scenario's 15 cases",
            }, spec.warnings)
            assert.equals(15, #matrix.expand(spec))
        end)

        it("names the --set that breaks the 1 GiB limit", function()
            assert.equals("--set clients=100000: key 'clients': clients x window x payload = "
                .. "100000 x 4096 x 1024 = 419430400000 bytes in flight in one case; expected "
                .. "at most 1073741824 (1 GiB)",
                load_err("minimal.lua", { "clients=100000", "window=4096" }))
        end)
    end)

    describe("refuses what the capability table (core.capabilities()) does not run", function()
        local caps = require("arkbench.core").capabilities()
        local function row(name)
            for _, p in ipairs(caps.protocols) do
                if p.name == name then return p end
            end
        end

        it("takes the udp payload limit from the table", function()
            local max = row("udp").payload_max
            assert.equals(65507, max)
            assert.equals(string.format("--set payload=%d: key 'payload': got %d; expected an integer "
                .. "from %d to %d (the UDP datagram limit) or a size such as \"64B\", \"16KiB\", \"1MiB\"", max + 1, max + 1,
                caps.limits.payload_min, max),
                load_err("minimal.lua", { "protocol=udp", "payload=" .. (max + 1) }))
            assert(scenario.load(F .. "minimal.lua", { "protocol=udp", "payload=" .. max }))
        end)

        it("lists the table's protocols, in its order, for an unknown one", function()
            local names = {}
            for i, p in ipairs(caps.protocols) do names[i] = p.name end
            local err = load_err("minimal.lua", { "protocol=quic" })
            assert.equals("--set protocol=quic: key 'protocol': got string \"quic\"; expected one of "
                .. table.concat(names, ", "), err)
            assert.equals("--set protocol=quic: key 'protocol': got string \"quic\"; expected one of "
                .. "tcp, udp, ws, tls, wss, http, https, h2, h2c", err)
        end)

        it("takes the executions, the topology models and their N from the table", function()
            assert.equals("--set execution=fibers: key 'execution': got string \"fibers\"; "
                .. "expected one of " .. table.concat(caps.executions, ", "),
                load_err("minimal.lua", { "execution=fibers" }))
            local top = "sharded:" .. (caps.limits.threads_max + 1)
            assert.equals("--set topology=" .. top .. ": key 'topology': got string \"" .. top
                .. "\"; expected \"sharded:N\", \"shared:N\" or \"pool:N\" with N an integer from 1 to "
                .. caps.limits.threads_max, load_err("minimal.lua", { "topology=" .. top }))
        end)

        it("refuses an execution with a protocol its row does not list, naming both", function()
            assert.is_false(row("udp").executions[2] == "coroutine")
            assert.equals("--set execution=coroutine: key 'execution': execution = \"coroutine\" "
                .. "runs over protocols tcp, ws, tls, wss, http, https, not udp; expected "
                .. "execution callback or lua for protocol udp",
                load_err("minimal.lua", { "protocol=udp", "execution=coroutine" }))
            -- a matrix is refused when any case pairs them
            assert.equals("--set execution=callback,coroutine: key 'execution': execution = "
                .. "\"coroutine\" runs over protocols tcp, ws, tls, wss, http, https, not udp; "
                .. "expected execution callback or lua for protocol udp",
                load_err("minimal.lua", { "protocol=tcp,udp", "execution=callback,coroutine" }))
            -- h2/h2c: callback only, and the refusal says why
            assert.equals("--set execution=coroutine: key 'execution': execution = \"coroutine\" "
                .. "runs over protocols tcp, ws, tls, wss, http, https, not h2; expected "
                .. "execution callback for protocol h2 (h2 runs a stream per message, completed "
                .. "out of order; only the callback echo drives that: docs/protocols.md)",
                load_err("minimal.lua", { "protocol=h2", "execution=coroutine" }))
        end)

        it("refuses execution = \"lua\" over a protocol it does not drive, with the table's list", function()
            local runs, alt = {}, row("ws").executions
            for _, p in ipairs(caps.protocols) do
                for _, e in ipairs(p.executions) do
                    if e == "lua" then runs[#runs + 1] = p.name end
                end
            end
            assert.equals(string.format("--set execution=lua: key 'execution': execution = \"lua\" "
                .. "runs over protocol%s %s, not ws; expected execution %s for protocol ws",
                #runs == 1 and "" or "s", table.concat(runs, ", "),
                table.concat(alt, ", ", 1, #alt - 1) .. " or " .. alt[#alt]),
                load_err("hooks.lua", { "protocol=ws", "execution=lua" }))
        end)

        it("refuses execution = \"lua\" without a driver, and a message function without expect", function()
            assert.equals("--set execution=lua: key 'execution': execution = \"lua\" needs client "
                .. "= function(conn) or message (with expect); see docs/lua-api.md",
                load_err("minimal.lua", { "execution=lua" }))
            local d = os.tmpname()
            local f = assert(io.open(d, "w"))
            f:write('return {\n    execution = "lua",\n    message = function(i) return "a" end,\n}\n')
            f:close()
            local spec, err = scenario.load(d)
            os.remove(d)
            assert.is_nil(spec)
            assert.equals(d .. ":3: key 'message': message is a function, so expect is needed (a "
                .. "length, \"line\" or function(buf)); see docs/lua-api.md", err)
        end)

        it("warns that client = function(conn) does not use window", function()
            local d = os.tmpname()
            local f = assert(io.open(d, "w"))
            f:write('return {\n    execution = "lua",\n    window = { 1, 4 },\n'
                .. '    client = function(conn) end,\n}\n')
            f:close()
            local spec = scenario.load(d)
            os.remove(d)
            assert.same({ d .. ":3: key 'window': window is not used by client = function(conn) "
                .. "(each conn:call is one round trip at a time)" }, assert(spec).warnings)
        end)

        it("takes rate > 0 now that the table says open loop is built, and refuses rate <= 0",
           function()
            assert.is_true(caps.limits.open_loop)
            local spec = assert(scenario.load(F .. "minimal.lua", { "rate=5000" }))
            assert.equals(5000, spec.keys.rate)
            assert.equals("--set rate=0: key 'rate': got 0; expected a number > 0 and at most 1e+09"
                .. " (messages per second, all connections together; at least clients / duration)",
                load_err("minimal.lua", { "rate=0" }))
        end)

        -- issue 27: bounds from the capability table, refused before anything runs
        it("refuses a rate above rate_max and one that sends less than a message per connection",
           function()
            assert.equals(1e9, caps.limits.rate_max)
            for _, r in ipairs({ "2e9", "1e300", "inf" }) do
                assert.truthy(load_err("minimal.lua", { "rate=" .. r }):find(
                    "key 'rate': got [^;]*; expected a number > 0 and at most 1e%+09"), r)
            end
            for _, r in ipairs({ "1e-10", "1e-300", "0.5" }) do
                local e = load_err("minimal.lua", { "rate=" .. r, "clients=4", "duration=2" })
                assert.truthy(e:find("--set rate=" .. r .. ": key 'rate': got " .. r .. " messages/s with clients=4"
                    .. " and duration=2 s: the schedule would send less than one message per connection in"
                    .. " the measure phase; expected a rate from 2 (clients / duration) to 1e+09", 1, true), e)
            end
            -- the edges themselves run: clients / duration, and rate_max
            assert(scenario.load(F .. "minimal.lua", { "rate=2", "clients=4", "duration=2" }))
            assert(scenario.load(F .. "minimal.lua", { "rate=1e9" }))
        end)

        it("takes interval from 0.01 s to the duration, one value, at most 2000 per case",
           function()
            local spec = assert(scenario.load(F .. "minimal.lua", { "interval=0.25" }))
            assert.equals(0.25, spec.keys.interval)
            assert.equals("--set interval=0.001: key 'interval': got 0.001; expected a number"
                .. " from 0.01 to the duration (seconds per interval of the time series) or a duration such as \"250ms\", \"10s\", \"2m\"",
                load_err("minimal.lua", { "interval=0.001" }))
            assert.matches("key 'interval': got 5; expected at most the duration %(1 s%)",
                load_err("minimal.lua", { "interval=5", "duration=1" }))
            assert.matches("expected duration / interval at most 2000 %(duration 100 s%)",
                load_err("minimal.lua", { "interval=0.01", "duration=100" }))
            assert.matches("interval is not a matrix axis",
                load_err("minimal.lua", { "interval=0.1,0.2" }))
        end)

        it("takes rate_strict, a boolean, into every case; none by default", function()
            local spec = assert(scenario.load(F .. "minimal.lua", { "rate_strict=false" }))
            assert.equals(false, spec.keys.rate_strict)
            for _, c in ipairs(matrix.expand(spec)) do assert.equals(false, c.rate_strict) end
            local plain = assert(scenario.load(F .. "minimal.lua"))
            for _, c in ipairs(matrix.expand(plain)) do assert.is_nil(c.rate_strict) end
            local path = os.tmpname()
            finally(function() os.remove(path) end)
            local f = io.open(path, "w")
            f:write('return {\n    protocol = "tcp",\n    rate_strict = "no",\n}\n')
            f:close()
            local _, err = scenario.load(path)
            assert.equals(path .. ":3: key 'rate_strict': got string \"no\"; expected a boolean"
                .. " (false: a run that misses its rate only warns; rate_strict is not a matrix axis)", err)
        end)

        it("takes max_error_rate from 0 to 1, one value, into every case; none by default", function()
            local spec = assert(scenario.load(F .. "minimal.lua", { "max_error_rate=0.01" }))
            assert.equals(0.01, spec.keys.max_error_rate)
            for _, c in ipairs(matrix.expand(spec)) do assert.equals(0.01, c.max_error_rate) end
            local plain = assert(scenario.load(F .. "minimal.lua"))
            assert.is_nil(plain.keys.max_error_rate)
            for _, c in ipairs(matrix.expand(plain)) do assert.is_nil(c.max_error_rate) end
            local expected = "expected a number from 0 to 1 (the highest (timed_out + message_errors)"
                .. " / sent a run may have and not fail)"
            assert.equals("--set max_error_rate=1.5: key 'max_error_rate': got 1.5; " .. expected,
                load_err("minimal.lua", { "max_error_rate=1.5" }))
            assert.matches("max_error_rate is not a matrix axis",
                load_err("minimal.lua", { "max_error_rate=0.1,0.2" }))
            -- in a file: the file, the line and the key
            local path = os.tmpname()
            finally(function() os.remove(path) end)
            local f = io.open(path, "w")
            f:write('return {\n    protocol = "tcp",\n    max_error_rate = "1%",\n}\n')
            f:close()
            local none, err = scenario.load(path)
            assert.is_nil(none)
            assert.equals(path .. ":3: key 'max_error_rate': got string \"1%\"; " .. expected, err)
        end)

        it("takes coroutine_stack in bytes or a size, 16 KiB to 8 MiB, one value, into every case",
           function()
            assert.equals(16384, caps.limits.coroutine_stack_min)
            assert.equals(32768, caps.limits.coroutine_stack_default)
            local spec = assert(scenario.load(F .. "minimal.lua",
                { "coroutine_stack=16KiB", "execution=coroutine" }))
            assert.equals(16384, spec.keys.coroutine_stack)
            for _, c in ipairs(matrix.expand(spec)) do assert.equals(16384, c.coroutine_stack) end
            local plain = assert(scenario.load(F .. "minimal.lua"))
            for _, c in ipairs(matrix.expand(plain)) do assert.is_nil(c.coroutine_stack) end
            local expected = "expected an integer from 16384 to 8388608 (bytes per coroutine"
                .. " stack, default 32 KiB) or a size such as \"64B\", \"16KiB\", \"1MiB\""
            assert.equals("--set coroutine_stack=8KiB: key 'coroutine_stack': got 8192; " .. expected,
                load_err("minimal.lua", { "coroutine_stack=8KiB" }))
            assert.matches("coroutine_stack is not a matrix axis",
                load_err("minimal.lua", { "coroutine_stack=16KiB,32KiB" }))
            -- in a file: the file, the line and the key
            local path = os.tmpname()
            finally(function() os.remove(path) end)
            local f = io.open(path, "w")
            f:write('return {\n    execution = "coroutine",\n    coroutine_stack = "16 kilos",\n}\n')
            f:close()
            local none, err = scenario.load(path)
            assert.is_nil(none)
            assert.equals(path .. ":3: key 'coroutine_stack': got string \"16 kilos\"; " .. expected, err)
        end)

        it("warns when coroutine_stack is given and no case runs coroutines", function()
            local spec = assert(scenario.load(F .. "minimal.lua", { "coroutine_stack=64KiB" }))
            local text = table.concat(spec.warnings or {}, "\n")
            assert.matches("key 'coroutine_stack': used only when execution = \"coroutine\"", text)
        end)

        it("takes the in-flight limit from the table", function()
            assert.equals(1073741824, caps.limits.inflight_max)
        end)
    end)

    describe("misuse", function()
        it("raises for a path that is not a string or sets that are not strings", function()
            assert.has_error(function() scenario.load(nil) end,
                "scenario.load: path must be a string, got nil")
            assert.has_error(function() scenario.load(F .. "minimal.lua", { 42 }) end,
                "scenario.load: sets[1] must be a string, got number")
        end)
    end)
end)

describe("scenario.apply_quick", function()
    it("overrides warmup, duration and repetitions after validation", function()
        assert.same({ warmup = 0.05, duration = 0.2, repetitions = 1 }, scenario.QUICK)
        local spec = assert(scenario.load(F .. "minimal.lua", { "warmup=0.5,1", "duration=5" }))
        assert.same({ "warmup" }, spec.axes)
        assert.equals(spec, scenario.apply_quick(spec))
        assert.equals(0.05, spec.keys.warmup)
        assert.equals(0.2, spec.keys.duration)
        assert.equals(1, spec.keys.repetitions)
        assert.same({}, spec.axes)
        assert.is_true(spec.quick)
    end)

    it("raises for something that is not a spec", function()
        assert.has_error(function() scenario.apply_quick("x") end,
            "scenario.apply_quick: expected a spec from scenario.load")
    end)
end)
