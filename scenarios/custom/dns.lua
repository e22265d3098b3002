-- dns.lua -- DNS over UDP: A queries for one name against a real resolver.
--
-- What it measures: queries/s and RTT of an A query (`bench.test`, class
-- IN, recursion desired) against a resolver on 127.0.0.1:5300, written in
-- Lua over udp (execution = "lua", docs/lua-api.md "Over udp"), one
-- datagram out and one back per round trip. Every reply is checked: its
-- ID must be the query's, QR set, RCODE 0 (NOERROR), the question echoed
-- and at least one answer; anything else ends the run as a script error
-- naming the RCODE. Two parts, named by `label`:
--   call       a client function: each conn:call sends one query and
--              waits for the datagram whose ID is the query's (1 query in
--              flight per client, as dnsperf -q 1 per socket);
--   pipelined  the light form: C keeps `window` queries in flight per
--              client (query i carries ID i mod 65536) and matches each
--              reply to its query by that ID.
-- A query without a reply after `timeout` (0.2 s for udp) is lost:
-- `timed_out` and `udp.lost`, the socket goes on; a reply that comes
-- later is counted `udp.late`. Loss is measured, not an error: the run
-- stays ok.
--
-- How to run (a resolver that serves bench.test must be listening;
-- dnsmasq needs no upstream and no root for this):
--   dnsmasq --keep-in-foreground --no-hosts --no-resolv --port=5300 \
--       --listen-address=127.0.0.1 --bind-interfaces \
--       --address=/bench.test/127.0.0.1 &
--   bin/arkbench run scenarios/custom/dns.lua
--   bin/arkbench run scenarios/custom/dns.lua --quick --filter label=call
-- Pointing it elsewhere: --set target=HOST:PORT (unbound, knot-resolver,
-- a DNS proxy); edit NAME below for a name that resolver serves. dnsmasq
-- counts what it answered: `kill -USR1` it and read "queries answered
-- locally" in its log. Compare with
--   dnsperf -s 127.0.0.1 -p 5300 -d names.txt -c 8 -l 5
local bit = require("bit")
local band, rshift = bit.band, bit.rshift
local byte, char, sub, format = string.byte, string.char, string.sub, string.format

local NAME = "bench.test"
local QTYPE_A, QCLASS_IN = 1, 1

-- the question section: the name as length-prefixed labels, then type
-- and class
local function question(name)
    local out = {}
    for label in name:gmatch("[^.]+") do out[#out + 1] = char(#label) .. label end
    out[#out + 1] = char(0, 0, QTYPE_A, 0, QCLASS_IN)
    return table.concat(out)
end

local QUESTION = question(NAME)

-- a query with ID id: header (ID, flags RD, 1 question), then the question
local function query(id)
    return char(rshift(id, 8), band(id, 0xff), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0) .. QUESTION
end

local function reply_id(d)
    local hi, lo = byte(d, 1, 2)
    return hi * 256 + lo
end

local RCODES = { [1] = "FORMERR", [2] = "SERVFAIL", [3] = "NXDOMAIN", [4] = "NOTIMP",
                 [5] = "REFUSED" }

-- A reply to our query (its ID matched by the caller): anything but a
-- NOERROR answer to our question is an error of the run.
local function check(d)
    local f1, f2 = byte(d, 3, 4)
    if band(f1, 0x80) == 0 then error("dns.lua: a datagram that is not a DNS reply (QR clear)") end
    local rcode = band(f2, 0x0f)
    if rcode ~= 0 then
        error(format("dns.lua: the resolver answered RCODE %d (%s) for %s: does it serve that name?",
            rcode, RCODES[rcode] or "?", NAME))
    end
    if sub(d, 13, 12 + #QUESTION) ~= QUESTION then
        error("dns.lua: the reply's question is not the query's")
    end
    if byte(d, 7) * 256 + byte(d, 8) == 0 then
        error(format("dns.lua: a NOERROR reply with no answer for %s", NAME))
    end
end

local common = {
    name = "dns", protocol = "udp", execution = "lua", target = "127.0.0.1:5300",
    clients = 8, warmup = 1, duration = 5, repetitions = 3,
}

local function part(t)
    for k, v in pairs(common) do t[k] = v end
    return t
end

return {
    part {
        label = "call",
        client = function(conn)
            local want
            local function is_reply(d) return #d >= 12 and reply_id(d) == want end
            local id = conn.id * 4099 % 65536
            while true do
                id = band(id + 1, 0xffff)
                want = id
                local reply, _, code = conn:call(query(id), is_reply)
                if reply then
                    check(reply)
                elseif code ~= "ETIMEDOUT" then
                    return -- the socket failed: counted, nothing more to do
                end
            end
        end,
    },
    part {
        label = "pipelined", window = 8,
        message = function(i) return query(band(i, 0xffff)) end,
        -- which query the reply answers: the latest i sent (last) with
        -- the reply's ID as its low 16 bits
        expect = function(d, _, last)
            if #d < 12 then return nil end
            local i = last - band(last - reply_id(d), 0xffff)
            if i < 1 then return nil end
            check(d)
            return i
        end,
    },
}
