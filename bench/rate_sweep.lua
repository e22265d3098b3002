-- bench/rate_sweep.lua -- issue 25 acceptance 4: an open-loop rate sweep
-- past a server's capacity, read against the offered load (the report's
-- latency-vs-offered-load chart and its knee, docs/reports.md).  Against
-- `arkbench serve --work N` (its own process; --set target=HOST:PORT and
-- --set rate=... for the six rates around its closed-loop capacity C:
-- e.g. 0.4, 0.6, 0.8, 1.0, 1.2, 1.4 x C), tcp 64 B, 16 connections.
--   bin/arkbench serve --protocol tcp --work 200000 --listen 127.0.0.1:7000 &
--   bin/arkbench run bench/rate_sweep.lua --set target=127.0.0.1:7000 --set rate=...
return {
    name = "rate_sweep",
    protocol = "tcp",
    payload = 64,
    clients = 16,
    window = 16,
    topology = "sharded:1",
    rate = { 300, 450, 600, 750, 900, 1050 },
    warmup = 0.5,
    duration = 2,
    repetitions = 1,
    rate_strict = false,
}
