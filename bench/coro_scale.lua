-- bench/coro_scale.lua -- coroutine execution at scale, the case of issue
-- 15 that bench/coro_scale.sh alternates: tcp echo, 2000 connections x
-- 64 KiB, window 1, sharded:1, both ends in one process; the script sets
-- execution = callback / coroutine per run.
--   bin/arkbench run bench/coro_scale.lua --set execution=coroutine
return {
    name = "coro_scale",
    protocol = "tcp",
    payload = "64KiB",
    clients = 2000,
    window = 1,
    topology = "sharded:1",
    work = 0,
    execution = "callback",
    warmup = 0.5,
    duration = 2,
    repetitions = 1,
}
