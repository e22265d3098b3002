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
local format, sub, find, rep = string.format, string.sub, string.find, string.rep
local tonumber = tonumber

-- one RESP command: an array of bulk strings
local function command(...)
    local out = { "*" .. select("#", ...) .. "\r\n" }
    for i = 1, select("#", ...) do
        local a = tostring((select(i, ...)))
        out[#out + 1] = "$" .. #a .. "\r\n" .. a .. "\r\n"
    end
    return table.concat(out)
end

local PONG = "+PONG\r\n"

-- where a PING reply ends; anything but +PONG is an error of the run
local function expect_pong(buf)
    if #buf >= 7 then
        if sub(buf, 1, 7) == PONG then return 7 end
    elseif sub(PONG, 1, #buf) == buf then
        return nil -- incomplete
    end
    error(format("PING: unexpected reply %q", sub(buf, 1, 80)))
end

-- where a bulk string reply ($<n>\r\n<n bytes>\r\n, or $-1\r\n) ends
local function expect_bulk(buf)
    local e = find(buf, "\r\n", 1, true)
    if not e then return nil end
    local n = sub(buf, 1, 1) == "$" and tonumber(sub(buf, 2, e - 1))
    if not n then error(format("GET: unexpected reply %q", sub(buf, 1, 80))) end
    if n < 0 then return e + 1 end
    local total = e + 1 + n + 2
    if #buf < total then return nil end
    return total
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
        message = command("PING"),
        expect = expect_pong,
    },
    part {
        payload = 64,
        load = { { clients = 1, window = 1 }, { clients = 16, window = 1 } },
        client = function(conn)
            local key = "arkbench:" .. conn.id
            local set = command("SET", key, VALUE)
            local get = command("GET", key)
            local want = "$" .. #VALUE .. "\r\n" .. VALUE .. "\r\n"
            while true do
                local r = conn:call(set, "line")
                if not r then return end -- connection failed (counted by the engine)
                if r ~= "+OK" then error(format("SET %s: unexpected reply %q", key, r)) end
                r = conn:call(get, expect_bulk)
                if not r then return end
                if r ~= want then error(format("GET %s: unexpected reply %q", key, sub(r, 1, 80))) end
            end
        end,
    },
}
