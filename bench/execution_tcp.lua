-- bench/execution_tcp.lua -- callback vs coroutine execution on one loop,
-- the case bench/compare_builds.sh (c) judges: tcp echo, 1 KiB, 16
-- connections x 16 in flight, sharded:1, no server work, 5 repetitions.
-- The ratio is coroutine / callback round trips/s (goal >= 0.95).
--
--   bin/arkbench run bench/execution_tcp.lua
--   bin/arkbench compare results/execution_tcp/<UTC> --pair execution
return {
    name = "execution_tcp",
    protocol = "tcp",
    payload = 1024,
    clients = 16,
    window = 16,
    topology = "sharded:1",
    work = 0,
    execution = { "callback", "coroutine" },
    warmup = 0.25,
    duration = 1,
    repetitions = 5,
}
