-- scenarios/all.lua -- every protocol side by side.
--
-- What it measures: the built-in echo at 1 KiB over every protocol, with
-- 16 connections and 16 messages in flight each (UDP: window 1, a round
-- trip rather than queueing), on one loop thread (sharded:1) and on one IO
-- thread with 4 workers (pool:4). 9 protocols x 2 topologies = 18 cases
-- (h2 and h2c: 16 connections x 16 streams).
-- The file returns two parts (stream protocols, then UDP); their cases run
-- in order under one name.
--
-- Run it:
--   bin/arkbench run scenarios/all.lua
--   bin/arkbench run scenarios/all.lua --quick
local common = {
    name = "all",
    payload = 1024,
    topology = { "sharded:1", "pool:4" },
    warmup = 0.25,
    duration = 1,
    repetitions = 3,
}
local function with(t)
    local out = {}
    for k, v in pairs(common) do out[k] = v end
    for k, v in pairs(t) do out[k] = v end
    return out
end
return {
    with { protocol = { "tcp", "tls", "ws", "wss", "http", "https", "h2", "h2c" }, clients = 16, window = 16 },
    with { protocol = "udp", clients = 16, window = 1 },
}
