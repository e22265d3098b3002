-- scenarios/udp.lua -- the reference matrix over UDP.
--
-- What it measures: round trips per second, RTT percentiles, loss, CPU and
-- memory of the built-in echo over loopback UDP: one datagram per message,
-- one server socket, one connected socket per client, window 1 (a UDP
-- round trip; a wider window measures queueing). A message without a reply
-- within `timeout` (0.2 s) is lost; its slot is freed and the run goes on.
-- Counters: udp.lost, late, reordered, duplicated; requested and granted
-- socket buffers (64 KiB send / 4 MiB receive by default).
-- 3 payloads x 2 client counts x 3 topologies = 18 cases, 3 runs each:
-- sharded:1, 2 and 4 (the reference's "N io_contexts x 1 thread"; shared:N,
-- its "1 io_context x N threads", does not run udp: docs/topologies.md).
--
-- Run it:
--   bin/arkbench run scenarios/udp.lua
--   bin/arkbench run scenarios/udp.lua --quick --filter payload=1024
return {
    name = "udp",
    protocol = "udp",
    payload = { 64, 1024, 16384 },
    load = {
        { clients = 1, window = 1 },
        { clients = 16, window = 1 },
    },
    topology = { "sharded:1", "sharded:2", "sharded:4" },
    work = 0,
    warmup = 0.25,
    duration = 1,
    repetitions = 3,
}
