-- resp_ping.lua -- Redis over RESP: PING, and SET/GET of a 64-byte value.
--
-- What it measures: round trips/s and RTT against a real redis-server
-- (default 127.0.0.1:6379), written in Lua (execution = "lua",
-- docs/lua-api.md). Two parts, told apart by `payload`, which here only
-- labels the case:
--   payload=16  PING in the light form: C keeps `window` PINGs in flight
--               on each connection and calls the expect function below
--               once per reply to check it is +PONG (window = 1 is
--               redis-benchmark -t ping -P 1; window = 16 is -P 16);
--   payload=64  SET then GET of a 64-byte value under a per-connection key,
--               from a client function: each conn:call is one timed round
--               trip, and every reply is checked.
--
-- How to run (redis-server must be listening; docs/lua-api.md, "Starting
-- the peers", has the command lines, plain and TLS):
--   redis-server --port 6379 --save '' --appendonly no &
--   bin/arkbench run scenarios/custom/resp_ping.lua
--   bin/arkbench run scenarios/custom/resp_ping.lua --quick --filter payload=16
-- Over TLS, against redis-server --port 0 --tls-port 6380 --tls-cert-file
-- cert.pem --tls-key-file key.pem --tls-auth-clients no:
--   bin/arkbench run scenarios/custom/resp_ping.lua --set protocol=tls \
--       --set tls.ca=/path/to/cert.pem --set target=127.0.0.1:6380
-- Pointing it elsewhere: --set target=HOST:PORT (any RESP server: Redis,
-- Valkey, KeyDB, a proxy). The keys written are arkbench:<connection id>.
-- The protocol is arkbench.proto.resp (lua/arkbench/proto/resp.lua):
-- resp.command encodes a command, resp.expect finds where a reply ends,
-- resp.decode / resp.call decode it (docs/lua-api.md, "Sharing a workload").
local resp = require("arkbench.proto.resp")
local format, sub, rep = string.format, string.sub, string.rep

-- a PING reply: +PONG, anything else is an error of the run
local function expect_pong(buf)
    local n = resp.expect(buf)
    if n and sub(buf, 1, n) ~= "+PONG\r\n" then error(format("PING: unexpected reply %q", sub(buf, 1, 80))) end
    return n
end

local VALUE = rep("v", 64)

local base = {
    name = "resp_ping",
    protocol = "tcp",
    execution = "lua",
    target = "127.0.0.1:6379",
    topology = "sharded:1",
    warmup = 0.25, duration = 1, repetitions = 3,
}

local function part(t)
    for k, v in pairs(base) do
        if t[k] == nil then t[k] = v end
    end
    return t
end

return {
    part {
        payload = 16,
        load = { { clients = 1, window = 1 }, { clients = 16, window = 1 },
                 { clients = 16, window = 16 } },
        message = resp.command("PING"),
        expect = expect_pong,
    },
    part {
        payload = 64,
        load = { { clients = 1, window = 1 }, { clients = 16, window = 1 } },
        client = function(conn)
            local key = "arkbench:" .. conn.id
            while true do
                local r = resp.call(conn, { "SET", key, VALUE })
                if not r then return end -- connection failed (counted by the engine)
                if r ~= "OK" then error(format("SET %s: unexpected reply %s", key, tostring(r))) end
                r = resp.call(conn, { "GET", key })
                if not r then return end
                if r ~= VALUE then error(format("GET %s: unexpected reply %q", key, sub(tostring(r), 1, 80))) end
            end
        end,
    },
}
