-- churn_stability_spec.lua -- issue 15, acceptance 2: a long churn run
-- (requests_per_connection = 1 over tls with resumption, a new connection
-- per round trip) keeps file descriptors and memory flat on both sides.
-- The server is `arkbench serve` in its own process; the client is an
-- `arkbench run` against it (target =).  While the run measures, the
-- spec samples /proc/PID/fd and VmRSS of the client's worker and of the
-- server once a second, and asserts that after the first seconds neither
-- grows beyond a small bound while thousands of connections come and go.
--
-- $ARKBENCH_CHURN_S sets the measured seconds (default 12; the 60 s run of
-- the issue: ARKBENCH_CHURN_S=60, or bench/churn_stability.sh).
-- Runtime: ~15 s by default.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")
local peers = require("helpers.peers")

local DURATION = tonumber(os.getenv("ARKBENCH_CHURN_S") or "") or 12
-- what a side may grow by after its first seconds (allocator arenas and
-- caches settle; a leak of one fd or a few hundred bytes per connection
-- over thousands of connections is far above these)
local FD_SLACK = 8
local RSS_SLACK_KIB = 6 * 1024

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

-- The pids below pid (its children, theirs...).
local function descendants(pid, out)
    out = out or {}
    local tasks = proc.sh_out("cat /proc/" .. pid .. "/task/*/children 2>/dev/null")
    for child in tasks:gmatch("%d+") do
        out[#out + 1] = tonumber(child)
        descendants(child, out)
    end
    return out
end

-- The first pid under root whose command line has `word` as an argument.
local function find(root, word)
    for _, pid in ipairs(descendants(root)) do
        local cmd = files.read_file("/proc/" .. pid .. "/cmdline") or ""
        for arg in cmd:gmatch("[^%z]+") do
            if arg == word then return pid end
        end
    end
end

local function sample(pid)
    local fds = tonumber(proc.sh_out("ls /proc/" .. pid .. "/fd 2>/dev/null | wc -l"))
    local status = files.read_file("/proc/" .. pid .. "/status") or ""
    local rss = tonumber(status:match("VmRSS:%s*(%d+)"))
    if not rss then return nil end
    return { fds = fds, rss_kib = rss }
end

describe("churn for " .. DURATION .. " s (tls, resume, a connection per round trip)", function()
    local run, series = nil, { client = {}, server = {} }

    setup(function()
        local d = files.tmpdir()
        local cert = d .. "/cert.pem"
        local srv = peers.serve("tls", { "--cert-out", cert, "--tls-resume", "true" }, "serve tls")
        local port = peers.wait_listening(srv)
        local server_pid = find(srv.pid, "serve")
        assert.is_truthy(server_pid, "the serve process under " .. srv.pid)
        local path = d .. "/churn.lua"
        files.write_file(path, string.format([[
return { name = "churn_stability", protocol = "tls", target = "127.0.0.1:%d",
         tls = { ca = %q, resume = true }, payload = 64, clients = 4, window = 1,
         requests_per_connection = 1, warmup = 0.5, duration = %g, timeout = 5,
         repetitions = 1, interval = 1 }
]], port, cert, DURATION))
        local out = d .. "/out"
        local cli = proc.spawn({ ark.BIN, "run", path, "--out", out },
                               { name = "churn client", limit = DURATION + 90 })
        local worker = proc.wait_for(function() return find(cli.pid, "worker") end, 30)
        assert.is_truthy(worker, "the client's worker process")
        -- a sample a second while the worker lives
        local t0 = proc.now()
        while proc.alive(worker) and proc.now() - t0 < DURATION + 30 do
            local c, s = sample(worker), sample(server_pid)
            if c and s then
                series.client[#series.client + 1] = c
                series.server[#series.server + 1] = s
            end
            proc.sleep(1)
        end
        proc.wait_for(function() return not proc.alive(cli.pid) end, 30)
        local runs = ark.read_runs(out .. "/runs.jsonl")
        run = runs[1]
        assert.is_truthy(run, proc.stderr_of(cli))
    end)

    it("churned thousands of connections without errors", function()
        local b = ark.brief(run) .. " opened=" .. tostring(run.connections_opened)
            .. " per_s=" .. tostring(run.connections_per_s) .. " resumed="
            .. tostring(run.tls_resumed) .. "/" .. tostring(run.tls_handshakes)
        io.stderr:write("churn_stability: ", b, "\n")
        assert.are.equal("ok", run.status, b)
        assert.are.equal(0, run.reconnects, b)
        assert.is_true(run.connections_opened >= 20 * DURATION, b)
        assert.is_true(run.tls_resumed > 0, b)
    end)

    for _, side in ipairs({ "client", "server" }) do
        it("keeps the " .. side .. "'s fds and RSS flat", function()
            local s = series[side]
            -- samples from the third second of the measure phase on
            assert.is_true(#s >= DURATION / 2, "samples: " .. #s)
            local base = s[3]
            local grew_fd, grew_rss = 0, 0
            local text = {}
            for i, v in ipairs(s) do
                text[#text + 1] = string.format("%d:%dfd/%dKiB", i, v.fds, v.rss_kib)
                if i > 3 then
                    grew_fd = math.max(grew_fd, v.fds - base.fds)
                    grew_rss = math.max(grew_rss, v.rss_kib - base.rss_kib)
                end
            end
            local why = side .. " samples " .. table.concat(text, " ")
            io.stderr:write("churn_stability: ", why, "\n")
            assert.is_true(grew_fd <= FD_SLACK, why)
            assert.is_true(grew_rss <= RSS_SLACK_KIB, why)
        end)
    end
end)
