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
local format, sub, find, rep = string.format, string.sub, string.find, string.rep
local tonumber = tonumber

local KEYS = 1000
local VALUE_BYTES = 64
local VALUE = rep("v", VALUE_BYTES)

local function key(n) return "arkbench:" .. (n % KEYS) end

local function set_request(k)
    return format("set %s 0 0 %d\r\n%s\r\n", k, VALUE_BYTES, VALUE)
end

local function get_request(k)
    return "get " .. k .. "\r\n"
end

-- Where a get reply ends: "END\r\n" (a miss) or "VALUE <key> <flags>
-- <bytes>\r\n<data>\r\nEND\r\n"; anything else is an error of the run.
local function expect_get(buf)
    if sub(buf, 1, 5) == "END\r\n" then return 5 end
    local e = find(buf, "\r\n", 1, true)
    if not e then -- incomplete, if it starts as a reply can
        local head = sub(buf, 1, 6)
        if #buf > 300 or (head ~= sub("VALUE ", 1, #head) and head ~= sub("END\r\n", 1, #head)) then
            error(format("get: unexpected reply %q", sub(buf, 1, 80)))
        end
        return nil
    end
    local n = tonumber(sub(buf, 1, e - 1):match("^VALUE %S+ %d+ (%d+)$"))
    if not n then error(format("get: unexpected reply %q", sub(buf, 1, 80))) end
    local total = e + 1 + n + 2 + 5
    if #buf < total then return nil end
    if sub(buf, total - 6, total) ~= "\r\nEND\r\n" then
        error(format("get: reply not ended by END: %q", sub(buf, 1, 80)))
    end
    return total
end

-- Where a set reply ends: "STORED\r\n".
local function expect_set(buf)
    local e = find(buf, "\r\n", 1, true)
    if not e then
        if #buf > 64 then error(format("set: unexpected reply %q", sub(buf, 1, 80))) end
        return nil
    end
    if sub(buf, 1, e + 1) ~= "STORED\r\n" then
        error(format("set: unexpected reply %q", sub(buf, 1, 80)))
    end
    return e + 1
end

-- The light form's one expect for both: a reply that starts like a set's
-- is a set's (replies come back in request order).
local function expect_any(buf)
    local c = sub(buf, 1, 1)
    if c == "S" then return expect_set(buf) end
    return expect_get(buf)
end

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
                    local r = conn:call(set_request(k), "line", "set")
                    if not r then return end -- the connection failed (counted by the engine)
                    if r ~= "STORED" then error(format("set %s: unexpected reply %q", k, r)) end
                else
                    local r = conn:call(get_request(k), expect_get, "get")
                    if not r then return end
                end
            end
        end,
    },
    part {
        label = "light",
        load = { { clients = 16, window = 1 }, { clients = 16, window = 16 } },
        message = function(i, id)
            local n = id * 7919 + i
            if is_set(n) then return set_request(key(n)), "set" end
            return get_request(key(n)), "get"
        end,
        expect = expect_any,
    },
}
