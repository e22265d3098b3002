-- scenarios/tcp.lua -- the reference matrix over plain TCP.
--
-- What it measures: round trips per second, MiB/s, RTT percentiles, CPU and
-- memory of a length-framed echo over loopback TCP, for
--   * 3 payload sizes (64 B, 1 KiB, 16 KiB),
--   * 2 load shapes: 1 connection with 1 message in flight (pure latency),
--     and 16 connections with 16 messages in flight each (throughput),
--   * the reference's 5 IO models: sharded:1, shared:2/4 (one reactor, N
--     threads), sharded:2/4 (N loops, a thread each); pool:N: io_models.lua,
-- with no CPU work per echo, 0.25 s of warm-up, 1 s measured, and each case
-- run 3 times, each time in a fresh process.
--
-- 3 x 2 x 5 = 30 cases, 90 runs. With one client, sharded:2 and sharded:4
-- leave loops without a connection: they run idle (the load is not changed)
-- and arkbench says so; it is the reference's behaviour too.
--
-- Run it:
--   bin/arkbench run scenarios/tcp.lua                  # all 30 cases
--   bin/arkbench run scenarios/tcp.lua --list           # show the cases
--   bin/arkbench run scenarios/tcp.lua --quick          # a short smoke run
--   bin/arkbench run scenarios/tcp.lua --filter payload=1024 --filter topology=sharded:4
return {
    name = "tcp",
    description = "reference matrix: echo over TCP, payload x load x topology",
    protocol = "tcp",
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
