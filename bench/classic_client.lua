-- bench/classic_client.lua -- the client of bench/classic_servers.sh: the
-- classic study's load (tcp, raw framing, 1000 connections x 64 B, window
-- 1) against a server given on the command line:
--   bin/arkbench run bench/classic_client.lua --set target=127.0.0.1:PORT
return {
    name = "classic_client",
    protocol = "tcp",
    framing = "raw",
    payload = 64,
    clients = 1000,
    window = 1,
    topology = "sharded:2",
    work = 0,
    warmup = 0.5,
    duration = 2,
    repetitions = 1,
}
