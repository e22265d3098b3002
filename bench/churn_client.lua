-- bench/churn_client.lua -- arkbench's side of bench/churn.sh: tcp, raw
-- framing, 64 connections x 64 B, window 1, sharded:1, against the server
-- given on the command line; the script adds requests_per_connection = 1
-- (a new connection per round trip, netperf TCP_CRR's shape) when this
-- build knows the key:
--   bin/arkbench run bench/churn_client.lua --set target=127.0.0.1:PORT \
--     --set requests_per_connection=1
return {
    name = "churn_client",
    protocol = "tcp",
    framing = "raw",
    payload = 64,
    clients = 64,
    window = 1,
    topology = "sharded:1",
    work = 0,
    warmup = 0.5,
    duration = 2,
    repetitions = 1,
}
