-- bench/open_loop.lua -- how closely the rate schedule is kept (issue 12
-- acceptance 7, issue 25 acceptance 2).  Open-loop cases on plain tcp
-- (callback, sharded:1, 1 KiB): 20,000 msg/s over 16 connections and
-- 1,000 msg/s on one, each with rate_precision "sleep" (the default) and
-- "spin"; each run object's send_lag_us (actual - intended send time),
-- timer_floor_us and rate_achieved / rate_asked are the numbers.
--   bin/arkbench run bench/open_loop.lua
return {
    { name = "open_loop", protocol = "tcp", payload = 1024, topology = "sharded:1",
      clients = 16, window = 16, rate = 20000, rate_precision = { "sleep", "spin" },
      warmup = 0.5, duration = 5, repetitions = 3 },
    { name = "open_loop", protocol = "tcp", payload = 1024, topology = "sharded:1",
      clients = 1, window = 16, rate = 1000, rate_precision = { "sleep", "spin" },
      warmup = 0.5, duration = 5, repetitions = 3 },
}
