-- scenarios/classic.lua -- the classic "coroutine library vs Asio async"
-- echo study: a server written with coroutines against the same server
-- written with async callbacks, at many connections and small messages.
--
-- What it measures: the TCP echo with raw framing (fixed-size messages on
-- a bare stream, as the study's echo has them) at
--   * 1000 connections, window 1 (one message in flight per connection),
--   * client and server in separate processes (placement = "split"),
--   * 5 payloads: 4, 32, 128, 1024 and 4096 bytes (4 is below arkbench's
--     16-byte header: its bytes are then a code of connection and
--     sequence, every byte and the order still checked; docs/protocols.md,
--     "Small payloads"),
--   * 1, 2, 4 and 8 threads, as N loops of one thread (sharded:N, Asio's
--     N io_contexts) and as N threads on one shared reactor (shared:N,
--     Asio's one io_context run by N threads; shared:1 is sharded:1, so it
--     is left out),
--   * the callback server (libuv callbacks, a per-connection state machine)
--     and the coroutine server (a stackful C coroutine per connection end).
-- The thread count and the execution apply to both processes: each side
-- runs N threads of its own, and a coroutine case runs coroutines on both
-- (the client side does the same work in both cases, so the ratio is the
-- servers' and the clients' together; docs/execution.md).
-- 0.25 s of warm-up, 1 s measured, 3 repetitions: 55 cases (35 when the
-- build does not run coroutines on shared:N yet), about 5 minutes;
-- --quick runs every case once, shortly (about 1 minute).  8 threads a side
-- on a 2-core machine are oversubscribed; the runs say so in their notes.
--
-- The end of the run prints the study's comparison: coroutine server vs
-- callback (async) server per payload and thread count (one row per case,
-- the ratio of round trips/s with its [min, max] over the repetitions),
-- the median ratio per payload and per topology, and the median of the
-- per-case ratios; report.md has the tables and the key findings per
-- execution (best topology against one thread).
--
-- Run it:
--   bin/arkbench run scenarios/classic.lua
--   bin/arkbench run scenarios/classic.lua --quick
--   bin/arkbench run scenarios/classic.lua --filter payload=4
--   bin/arkbench compare results/classic/<UTC> --pair execution
local core = require("arkbench.core")

-- Whether this build runs coroutine execution on shared:N (N > 1): the
-- capability table's shared_executions (docs/topologies.md).
local function shared_runs_coroutine()
    for _, p in ipairs(core.capabilities().protocols) do
        if p.name == "tcp" then
            for _, e in ipairs(p.shared_executions or {}) do
                if e == "coroutine" then return true end
            end
        end
    end
    return false
end

local SHARDED = { "sharded:1", "sharded:2", "sharded:4", "sharded:8" }
local SHARED = { "shared:2", "shared:4", "shared:8" }

local function part(t)
    local p = {
        name = "classic",
        description = "the classic study: 1000 connections, window 1, split processes, "
            .. "payload x threads x callback/coroutine server",
        protocol = "tcp",
        framing = "raw",
        clients = 1000,
        window = 1,
        placement = "split",
        payload = { 4, 32, 128, 1024, 4096 },
        warmup = 0.25,
        duration = 1,
        repetitions = 3,
    }
    for k, v in pairs(t) do p[k] = v end
    return p
end

local ALL = {}
for _, t in ipairs(SHARDED) do ALL[#ALL + 1] = t end
for _, t in ipairs(SHARED) do ALL[#ALL + 1] = t end

if shared_runs_coroutine() then
    return part { topology = ALL, execution = { "callback", "coroutine" } }
end
-- callback first: it is the baseline of the comparison
return {
    part { topology = ALL, execution = "callback" },
    part { topology = SHARDED, execution = "coroutine" },
}
