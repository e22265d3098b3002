-- scenarios/ws.lua -- the reference matrix over ws.
--
-- What it measures: round trips per second, MiB/s, RTT percentiles, CPU and
-- memory of the built-in echo over loopback: WebSocket (RFC 6455) binary frames after an upgrade on /echo; client frames masked.
-- 3 payloads (64 B, 1 KiB, 16 KiB) x 2 loads (1 connection x window 1,
-- 16 connections x window 16) x 5 topologies (the reference's five IO models: sharded:1, shared:2, shared:4,
-- sharded:2, sharded:4) = 30 cases, 3 fresh processes
-- each. Connect and handshake times are reported apart from RTT.
--
-- Run it:
--   bin/arkbench run scenarios/ws.lua
--   bin/arkbench run scenarios/ws.lua --quick --filter payload=1024
-- Point it at another server (client side only):
--   bin/arkbench run scenarios/ws.lua --set target=HOST:PORT
return {
    name = "ws",
    protocol = "ws",
    payload = { 64, 1024, 16384 },
    load = {
        { clients = 1, window = 1 },
        { clients = 16, window = 16 },
    },
    topology = { "sharded:1", "shared:2", "shared:4", "sharded:2", "sharded:4" },
    work = 0,
    warmup = 0.25,
    duration = 1,
    repetitions = 3,
}
