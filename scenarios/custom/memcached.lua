-- memcached.lua -- a memcached get/set mix over the text protocol, with
-- each request tagged "get" or "set" so that their counts and latencies
-- are reported apart (memaslap's and memtier's get/set split).
--
-- What it measures: round trips/s and RTT against a real memcached
-- (default 127.0.0.1:11211), written in Lua (execution = "lua",
-- docs/lua-api.md), and per tag (the run object's `tags`, the report's
-- "Tags" table): `get` and `set` each with its own sent/completed/errors
-- and p50..p99.9. Nine gets for each set (memtier's default 1:10 ratio),
-- over a key space of KEYS keys shared by every connection, each value
-- VALUE_BYTES bytes. Two parts, named by `label`:
--   label=full   a client function: each conn:call(request, expect, tag)
--                is one timed round trip; every reply is checked;
--   label=light  the light form: message(i) returns the request and its
--                tag, C keeps `window` requests in flight (pipelined) and
--                calls expect(buf) to find where each reply ends.
--
-- Counting with memcached's own counters: memcached's `stats` cmd_get and
-- cmd_set count every get and set it was sent, warm-up included; arkbench's
-- tags.get.sent + tags.get.warmup_sent (and the same for set) are exactly
-- those, summed over the runs (spec/integration/memcached_spec.lua checks
-- it). Nothing else is sent: no untimed command, no reconnect (the Lua
-- driver opens each connection once).
--
-- How to run (memcached must be listening; Debian's package: apt-get
-- install memcached, then stop its system service or use another port):
--   memcached -l 127.0.0.1 -p 11211 -U 0 &
--   bin/arkbench run scenarios/custom/memcached.lua
--   bin/arkbench run scenarios/custom/memcached.lua --quick --filter label=light
-- Pointing it elsewhere: --set target=HOST:PORT (any server speaking the
-- memcached text protocol: memcached, mcrouter, twemproxy, Dragonfly).
-- The keys written are arkbench:<n>, n from 0 to KEYS - 1.
-- The protocol is arkbench.proto.memcached (lua/arkbench/proto/memcached.lua):
-- mc.get / mc.set encode the requests, mc.expect finds where a reply ends
-- (a get's VALUE ... END or END, a set's STORED, any other reply), mc.call
-- decodes it (docs/lua-api.md, "Sharing a workload").
local mc = require("arkbench.proto.memcached")
local format, rep = string.format, string.rep

local KEYS = 1000
local VALUE_BYTES = 64
local VALUE = rep("v", VALUE_BYTES)

local function key(n) return "arkbench:" .. (n % KEYS) end

-- message i of a connection (from 1): every tenth a set, the others gets
local function is_set(i) return i % 10 == 0 end

local base = {
    name = "memcached",
    protocol = "tcp",
    execution = "lua",
    target = "127.0.0.1:11211",
    topology = "sharded:1",
    payload = VALUE_BYTES, -- labels only: the value size
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
        label = "full",
        load = { { clients = 1, window = 1 }, { clients = 16, window = 1 } },
        client = function(conn)
            local i = conn.id * 7919 -- connections start at different keys
            while true do
                i = i + 1
                local k = key(i)
                if is_set(i) then
                    local r = mc.call(conn, mc.set(k, VALUE), "set")
                    if not r then return end -- the connection failed (counted by the engine)
                    if r ~= "STORED" then error(format("set %s: unexpected reply %s", k, tostring(r))) end
                else
                    local r = mc.call(conn, mc.get(k), "get")
                    if not r then return end
                    if type(r) ~= "table" then error(format("get %s: unexpected reply %s", k, tostring(r))) end
                end
            end
        end,
    },
    part {
        label = "light",
        load = { { clients = 16, window = 1 }, { clients = 16, window = 16 } },
        message = function(i, id)
            local n = id * 7919 + i
            if is_set(n) then return mc.set(key(n), VALUE), "set" end
            return mc.get(key(n)), "get"
        end,
        expect = mc.expect_ok,
    },
}
