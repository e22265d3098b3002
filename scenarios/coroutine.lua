-- scenarios/coroutine.lua -- callback vs coroutine execution, per message.
--
-- What it measures: the same TCP echo (1 KiB, 16 connections) written two
-- ways -- libuv callbacks with a per-connection state machine, and one
-- stackful C coroutine per connection end doing blocking-style read/write
-- on the loop's scheduler -- at window 1 and 16, with 0 and 10,000
-- iterations of server work per echo, on pool:1, pool:4 and sharded:4.
-- Both time every message the same way (unlike the reference, whose
-- coroutine program timed whole batches), so the ratio means something.
-- The end of the run prints callback -> coroutine per case with the ratio
-- and the median of the per-case throughput ratios.  Expect large ratios
-- in pool:4 with work = 0: there a coroutine server waits until the pool
-- has returned all of a read's requests and writes their replies at once,
-- while the callback server echoes each as its job returns (see
-- docs/execution.md, "Coroutines").
--
-- Run it:
--   bin/arkbench run scenarios/coroutine.lua
--   bin/arkbench run scenarios/coroutine.lua --quick
--   bin/arkbench compare results/coroutine/<UTC> --pair execution
return {
    name = "coroutine",
    protocol = "tcp",
    payload = 1024,
    clients = 16,
    window = { 1, 16 },
    work = { 0, 10000 },
    topology = { "pool:1", "pool:4", "sharded:4" },
    execution = { "callback", "coroutine" },
    warmup = 0.25,
    duration = 1,
    repetitions = 3,
}
