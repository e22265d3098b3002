-- spec/unit/capabilities_spec.lua -- core.capabilities(): the capability
-- table of core/proto/caps.c as plain Lua tables (core/lua/lua_caps.c), the
-- one source of arkbench.scenario.check's rules.

local core = require("arkbench.core")

describe("core.capabilities()", function()
    local caps = core.capabilities()

    local function row(name)
        for _, p in ipairs(caps.protocols) do
            if p.name == name then return p end
        end
    end

    it("lists the protocols in the order users see them, each with its row", function()
        local names = {}
        for i, p in ipairs(caps.protocols) do names[i] = p.name end
        assert.same({ "tcp", "udp", "ws", "tls", "wss", "http", "https", "h2", "h2c" }, names)
        for _, p in ipairs(caps.protocols) do
            assert.is_string(p.name)
            assert.is_true(p.transport == "stream" or p.transport == "datagram", p.name)
            assert.is_boolean(p.tls)
            assert.is_table(p.executions)
            assert.is_true(p.payload_max >= caps.limits.payload_min, p.name)
            assert.is_true(p.payload_max <= caps.limits.payload_max, p.name)
            -- a stream has a codec, a datagram is one message
            assert.equals(p.transport == "stream", p.codec ~= nil, p.name)
        end
    end)

    it("says what each protocol is: transport, TLS, codec, payload limit", function()
        assert.same({ name = "udp", transport = "datagram", tls = false,
                      executions = { "callback", "lua" }, shared_executions = {},
                      churn_executions = {}, payload_max = 65507 },
                    row("udp"))
        assert.same({ name = "tcp", transport = "stream", tls = false, codec = "framing",
                      executions = { "callback", "coroutine", "lua" },
                      shared_executions = { "callback", "coroutine" }, churn_executions = { "callback", "coroutine" },
                      payload_max = 16777216 },
                    row("tcp"))
        -- requests_per_connection: every stream protocol in the C executions
        -- but the multiplexed ones (h2, h2c: callback only, no churn)
        for _, p in ipairs(caps.protocols) do
            assert.same(p.transport == "stream" and not p.streams and { "callback", "coroutine" } or {},
                        p.churn_executions, p.name)
        end
        assert.same({ name = "h2", transport = "stream", tls = true, codec = "h2", streams = true,
                      alpn = "h2", executions = { "callback" }, shared_executions = { "callback" },
                      churn_executions = {}, payload_max = 16777216 }, row("h2"))
        assert.same({ name = "h2c", transport = "stream", tls = false, codec = "h2", streams = true,
                      executions = { "callback" }, shared_executions = { "callback" },
                      churn_executions = {}, payload_max = 16777216 }, row("h2c"))
        local tls, codec = {}, {}
        for _, p in ipairs(caps.protocols) do
            if p.tls then tls[#tls + 1] = p.name end
            codec[p.name] = p.codec
        end
        assert.same({ "tls", "wss", "https", "h2" }, tls)
        assert.same({ tcp = "framing", tls = "framing", ws = "ws", wss = "ws", http = "http",
                      https = "http", h2 = "h2", h2c = "h2" }, codec)
    end)

    it("names only known executions in the rows; callback runs every protocol", function()
        assert.same({ "callback", "coroutine", "lua" }, caps.executions)
        local known = {}
        for _, e in ipairs(caps.executions) do known[e] = true end
        for _, p in ipairs(caps.protocols) do
            assert.equals("callback", p.executions[1], p.name)
            for _, e in ipairs(p.executions) do assert.is_true(known[e], p.name .. " " .. e) end
        end
        -- the coroutine echo runs every stream protocol but the multiplexed
        -- ones (h2, h2c: refused, docs/protocols.md)
        for _, p in ipairs(caps.protocols) do
            assert.equals(p.transport == "stream" and not p.streams, p.executions[2] == "coroutine",
                          p.name)
        end
    end)

    it("has the framings, topology models and limits", function()
        assert.same({ "length", "raw" }, caps.framings)
        assert.same({ "sharded", "shared", "pool" }, caps.models)
        assert.same({
            payload_min = 1, payload_max = 16777216, clients_min = 1, clients_max = 100000,
            window_min = 1, window_max = 4096, threads_min = 1, threads_max = 256,
            work_max = 10000000, inflight_max = 1073741824, open_loop = true,
            requests_per_connection_max = 1000000000, connect_rate_max = 1e7, churn_shared = false, rate_max = 1e9,
            coroutine_stack_min = 16384, coroutine_stack_max = 8388608,
            coroutine_stack_default = 32768,
        }, caps.limits)
    end)

    it("returns a fresh table on every call", function()
        local a = core.capabilities()
        a.protocols[1].name = "changed"
        a.limits.window_max = 1
        local b = core.capabilities()
        assert.equals("tcp", b.protocols[1].name)
        assert.equals(4096, b.limits.window_max)
    end)
end)
