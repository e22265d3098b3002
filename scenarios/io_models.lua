-- scenarios/io_models.lua -- the reference's IO-model tables: how an IO
-- model scales, as the reference's Asio study asks it ("1 io_context x N
-- threads" against "N io_contexts x 1 thread"), callback and coroutine,
-- with and without per-echo work (docs/topologies.md maps each model to
-- Asio's).
--
-- What it measures: the TCP echo (length framing) at
--   * 3 payloads (64 B, 1 KiB, 16 KiB),
--   * 2 loads: 1 connection x window 1 (latency) and 16 connections x
--     window 16 (throughput),
--   * 6 topologies: one thread (sharded:1), N threads on one shared reactor
--     (shared:2, shared:4; Asio's one io_context run by N threads), N loops
--     of one thread each (sharded:2, sharded:4; Asio's N io_contexts), and
--     one IO loop handing the server work to 4 worker threads (pool:4, no
--     Asio counterpart),
--   * work 0 and 10,000 xorshift iterations per echo (a few µs),
--   * callback and coroutine execution,
-- 0.25 s of warm-up, 1 s measured, 1 repetition (the matrix is large:
-- 144 cases, about 4 minutes).  Four threads on a 2-core machine are
-- oversubscribed; the runs say so in their notes.
--
-- The key findings (printed at the end of the run and in report.md) give,
-- per protocol x work x load and per execution, the best topology and the
-- median over payloads of its ratio to one thread (sharded:1 of the same
-- execution): the reference's "best model" lines.  bench/io_models.sh runs
-- the native Asio reference beside arkbench on a few of these cases.
--
-- pool:N and shared:N as one shared reactor come with issue 13's
-- shared-reactor work; a build without them refuses the file (run the rest
-- with --set topology=sharded:1,sharded:2,sharded:4).
--
-- Run it:
--   bin/arkbench run scenarios/io_models.lua
--   bin/arkbench run scenarios/io_models.lua --quick
--   bin/arkbench run scenarios/io_models.lua --filter work=0 --filter payload=1024
return {
    name = "io_models",
    description = "IO models as the reference has them: payload x load x topology x work x execution",
    protocol = "tcp",
    payload = { 64, 1024, 16384 },
    load = {
        { clients = 1, window = 1 },
        { clients = 16, window = 16 },
    },
    topology = { "sharded:1", "shared:2", "shared:4", "sharded:2", "sharded:4", "pool:4" },
    work = { 0, 10000 },
    execution = { "callback", "coroutine" },
    warmup = 0.25,
    duration = 1,
    repetitions = 1,
}
