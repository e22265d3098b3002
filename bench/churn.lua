-- bench/churn.lua -- connection setup rate (issue 15): a new connection
-- per round trip (requests_per_connection = 1, as netperf TCP_CRR or ab
-- without keep-alive) against the same load on kept connections, and TLS
-- handshakes with and without session resumption, in one run.
--
--   bin/arkbench run bench/churn.lua            # 4 cases x 3 runs, ~20 s
--   bin/arkbench run bench/churn.lua --quick
--
-- Read: connections_per_s and round_trips_per_s per case; for the TLS
-- pair, handshake_us p50 (full vs resumed) and tls_resumed / tls_handshakes.
-- Compare within one run only: the machine's load moves the numbers.
local base = { protocol = "tcp", payload = 64, clients = 8, window = 1, warmup = 0.25,
               duration = 2, repetitions = 3 }
local function part(t)
    local p = {}
    for k, v in pairs(base) do p[k] = v end
    for k, v in pairs(t) do p[k] = v end
    return p
end
return {
    part { name = "churn", label = "tcp keep-alive" },
    part { label = "tcp new connection per request", requests_per_connection = 1 },
    part { label = "tls full handshakes", protocol = "tls", requests_per_connection = 1 },
    part { label = "tls resumed", protocol = "tls", requests_per_connection = 1,
           tls = { resume = true } },
}
