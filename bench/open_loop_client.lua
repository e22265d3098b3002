-- bench/open_loop_client.lua -- the client of bench/open_loop.sh's CPU
-- comparison: tcp 1 KiB, 16 connections x window 16, sharded:1, against
-- the script's `arkbench serve --work N` (--set target=HOST:PORT), closed
-- loop, or open loop with --set rate=R.
return {
    name = "open_loop_client",
    protocol = "tcp",
    payload = 1024,
    clients = 16,
    window = 16,
    topology = "sharded:1",
    warmup = 0.5,
    duration = 3,
    repetitions = 1,
    rate_strict = false,
}
