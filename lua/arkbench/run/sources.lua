-- arkbench.run.sources: the client source addresses of a case
-- (docs/scenarios.md, "bind"; docs/run-object.md, source_addresses).
--
--   sources.pick(case, dest_host) -> addresses | nil, from
--
-- from is "bind" (the scenario's own list), "auto" or "kernel" (nil
-- addresses: the kernel picks the source, one address). One
-- source/destination address pair holds as many connections as the
-- ephemeral port range (/proc/sys/net/ipv4/ip_local_port_range; 28,232
-- ports by default): past 90 % of it, to a loopback IPv4 destination,
-- the connections are spread over 127.0.0.1, 127.0.0.2, ... (every
-- 127.x address is the loopback), as many as keep each pair under that.

local _M = {}

_M.SHARE = 0.9 -- of the ephemeral range one pair may use

function _M.port_range()
    local f = io.open("/proc/sys/net/ipv4/ip_local_port_range", "r")
    local lo, hi
    if f then
        lo, hi = (f:read("*a") or ""):match("(%d+)%s+(%d+)")
        f:close()
    end
    lo, hi = tonumber(lo) or 32768, tonumber(hi) or 60999
    return lo, hi
end

-- the loopback address number k (1-based): 127.0.0.1 ... 127.0.0.254,
-- 127.0.1.1, ...
local function loopback(k)
    local hi, lo = math.floor((k - 1) / 254), (k - 1) % 254 + 1
    return string.format("127.0.%d.%d", hi, lo)
end

function _M.pick(case, dest_host)
    if type(case.bind) == "table" then
        local out = {}
        for i, a in ipairs(case.bind) do out[i] = a end
        return out, "bind"
    elseif type(case.bind) == "string" then
        return { case.bind }, "bind"
    end
    local clients = tonumber(case.clients) or 1
    local lo, hi = _M.port_range()
    local per_pair = math.floor((hi - lo + 1) * _M.SHARE)
    local v4_loopback = type(dest_host) == "string" and dest_host:match("^127%.%d+%.%d+%.%d+$")
    if clients <= per_pair or not v4_loopback or case.protocol == "udp" then
        return nil, "kernel"
    end
    local n = math.ceil(clients / per_pair)
    local out = {}
    for k = 1, n do out[k] = loopback(k) end
    return out, "auto"
end

return _M
