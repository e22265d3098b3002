-- report_md_spec.lua -- report.md from a known set of runs: table rows,
-- findings (median of per-payload ratios), failed cases kept apart,
-- escaping, environment, determinism.
local stats = require("arkbench.report.stats")
local json = require("arkbench.util.json")
local model_of = require("arkbench.report.model")
local md = require("arkbench.report.md")
local report = require("arkbench.report.report")

local function case(payload, clients, topology)
    return {
        name = "unit", protocol = "tcp", payload = payload, clients = clients, window = clients,
        topology = topology, warmup = 0.05, duration = 0.2, repetitions = 3, execution = "callback",
        case_id = string.format("payload=%d clients=%d window=%d topology=%s", payload, clients, clients, topology),
    }
end

-- Every metric follows from rt: p50 = 1e6/rt µs, p95 = 1.5 p50, p99 = 2 p50,
-- cpu = 50 + rep, machine = cpu / 2, RSS 8 MiB.
local function ok(c, rep, rt)
    local p50 = 1e6 / rt
    return {
        scenario = { name = "unit" }, case_id = c.case_id, case = c, repetition = rep, ok = true,
        status = "ok", round_trips_per_s = rt, payload_mib_per_s = rt * c.payload / 1048576,
        rtt_us = { p50 = p50, p95 = p50 * 1.5, p99 = p50 * 2 }, cpu_percent = 50 + rep,
        cpu_machine_percent = (50 + rep) / 2, rss_peak_bytes = 8 * 1048576,
        sent = rt, completed = rt, drained = 0, timed_out = 0, message_errors = 0, unfinished = 0,
    }
end

local function bad(c, rep, status, err, signal, errors, counters)
    local r = {
        scenario = { name = "unit" }, case_id = c.case_id, case = c, repetition = rep, ok = false,
        status = status, error = err or json.null, signal = signal or json.null, errors = errors or {},
    }
    for k, v in pairs(counters or {}) do r[k] = v end
    return r
end

local A = case(64, 1, "shared:1")
local B = case(64, 1, "sharded:2")
local C = case(1024, 1, "shared:1")
local D = case(1024, 1, "sharded:2")
local E = case(64, 16, "shared:1")
local F = case(64, 16, "sharded:2")
local G = case(1024, 16, "shared:1")
local H = case(1024, 16, "sharded:2")

local function runs()
    local out = {}
    for rep, rt in ipairs({ 100000, 110000, 90000 }) do out[#out + 1] = ok(A, rep, rt) end
    for rep, rt in ipairs({ 200000, 220000, 180000 }) do out[#out + 1] = ok(B, rep, rt) end
    for rep, rt in ipairs({ 50000, 40000, 60000 }) do out[#out + 1] = ok(C, rep, rt) end
    out[#out + 1] = ok(D, 1, 75000)
    out[#out + 1] = ok(D, 2, 75000)
    out[#out + 1] = bad(D, 3, "error", "ECONNRESET: reset | peer", nil, { ECONNRESET = 2 },
        { sent = 1000, completed = 900, drained = 0, timed_out = 0, message_errors = 100, unfinished = 0 })
    for rep = 1, 3 do out[#out + 1] = ok(E, rep, 300000) end
    out[#out + 1] = bad(F, 1, "timeout", "worker exceeded 31 s", "SIGKILL", { ETIMEDOUT = 16 })
    out[#out + 1] = bad(F, 2, "timeout", "worker exceeded 31 s", "SIGKILL", { ETIMEDOUT = 16 })
    for rep = 1, 3 do out[#out + 1] = ok(G, rep, 250000) end
    for rep = 1, 3 do out[#out + 1] = ok(H, rep, 500000) end
    return out
end

local ENV = {
    cpu_model = "Test CPU 9000", logical_cpus = 8, memory_bytes = 16 * 1073741824,
    os = "Debian GNU/Linux 12 (bookworm)", kernel = "6.1.0 #1", hostname = "benchhost",
    compiler = "gcc 12.2.0", c_flags = "-O2 -g", build_type = "RelWithDebInfo",
    luajit = "LuaJIT 2.1.0-beta3", libuv = "1.44.2", openssl = "OpenSSL 3.0.15",
    git_commit = "0123456789abcdef0123456789abcdef01234567", git_dirty = true,
    binary_sha256 = string.rep("ab", 32), scenario_path = "scenarios/unit.lua",
    scenario_sha256 = string.rep("cd", 32), started_utc = "2026-01-02T03:04:05Z",
    ended_utc = "2026-01-02T03:05:06Z", arkbench_version = "0.1.0",
}

local function render(rs, env)
    rs = rs or runs()
    local m = model_of.build(stats.summarize(rs, {}), rs, env or ENV)
    return md.render(m, {}), m
end

-- From a heading to the next heading of the same or a higher level.
local function section(text, heading)
    local s = text:find(heading, 1, true)
    assert.is_not_nil(s, "no heading " .. heading)
    local level = #heading:match("^#+")
    local pos = s + #heading
    while true do
        local at, _, hashes = text:find("\n(#+) ", pos)
        if not at then return text:sub(s) end
        if #hashes <= level then return text:sub(s, at) end
        pos = at + 1
    end
end

describe("report_md", function()
    it("writes one table per protocol x load x payload with median [min, max] rows", function()
        local text = render()
        local t = section(section(text, "## tcp, 1 client, window 1"), "### payload 64 B")
        assert.truthy(t:find("| topology | round trips/s median [min, max] | MiB/s | p50 µs | p95 µs | p99 µs "
            .. "| CPU % | machine % | RSS MiB | runs ok |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n", 1, true))
        assert.truthy(t:find("| shared:1 | 100,000 [90,000, 110,000] | 6.1 | 10.0 | 15.0 | 20.0 | 52 | 26.0 | 8.0 | 3/3 |\n",
            1, true), t)
        assert.truthy(t:find("| sharded:2 | 200,000 [180,000, 220,000] | 12.2 | 5.0 | 7.5 | 10.0 | 52 | 26.0 | 8.0 | 3/3 |\n",
            1, true), t)
        -- the order of the scenario: load 1x1 before 16x16, payload 64 before 1024
        local a = text:find("## tcp, 1 client, window 1", 1, true)
        local b = text:find("## tcp, 16 clients, window 16", 1, true)
        assert.is_true(a < b)
        local s = section(text, "## tcp, 1 client, window 1")
        assert.is_true(s:find("### payload 64 B", 1, true) < s:find("### payload 1 KiB", 1, true))
    end)

    it("keeps a failed repetition out of the medians and says how many runs were ok", function()
        local t = section(section(render(), "## tcp, 1 client, window 1"), "### payload 1 KiB")
        -- only the two ok runs (75,000 each): the failed one would pull the min
        -- to 0; CPU is the median of 51 and 52 (51.5, shown as 52 and 25.8)
        assert.truthy(t:find("| sharded:2 | 75,000 [75,000, 75,000] | 73.2 | 13.3 | 20.0 | 26.7 | 52 | 25.8 | 8.0 | 2/3 (1 failed) |",
            1, true), t)
    end)

    it("shows a case without an ok run as FAILED with its statuses, no numbers", function()
        local t = section(section(render(), "## tcp, 16 clients, window 16"), "### payload 64 B")
        assert.truthy(t:find("| sharded:2 | FAILED (timeout x2) |  |  |  |  |  |  |  | 0/2 |\n", 1, true), t)
    end)

    it("lists failed runs apart with their counters, escaped for a table cell", function()
        local t = section(render(), "## Failed runs")
        assert.truthy(t:find("| case | rep | status | error | errors | sent | completed | drained | timed out "
            .. "| msg errors | unfinished |", 1, true))
        assert.truthy(t:find("| payload=1024 clients=1 window=1 topology=sharded:2 | 3 | failed | ECONNRESET: reset \\| peer "
            .. "| ECONNRESET 2 | 1,000 | 900 | 0 | 0 | 100 | 0 |", 1, true), t)
        assert.truthy(t:find("| payload=64 clients=16 window=16 topology=sharded:2 | 2 | timeout | worker exceeded 31 s (SIGKILL) "
            .. "| ETIMEDOUT 16 | - | - | - | - | - | - |", 1, true), t)
        local _, n = t:gsub("\n| payload=", "")
        assert.are.equal(3, n)
    end)

    it("finds the best topology per load as the median of per-payload ratios to one thread", function()
        local text, m = render()
        local t = section(text, "## Key findings")
        -- 1x1: 200k/100k = 2.00 at 64 B, 75k/50k = 1.50 at 1 KiB -> median 1.75
        assert.truthy(t:find("| tcp, 1 client, window 1 | shared:1 | sharded:2 | 1.75× [1.50×, 2.00×] | 2 payloads "
            .. "| sharded:2 (2 of 2) |", 1, true), t)
        -- 16x16: sharded:2 failed at 64 B, so only 1 KiB counts: 500k/250k
        assert.truthy(t:find("| tcp, 16 clients, window 16 | shared:1 | sharded:2 | 2.00× [2.00×, 2.00×] | 1 payload "
            .. "| shared:1 (1 of 2) |", 1, true), t)
        assert.are.equal(2, #m.findings)
    end)

    it("writes the environment table", function()
        local t = section(render(), "## Environment")
        for _, line in ipairs({
            "| CPU | Test CPU 9000 |", "| logical CPUs | 8 |", "| memory | 16.0 GiB |",
            "| OS | Debian GNU/Linux 12 (bookworm) |", "| kernel | 6.1.0 #1 |", "| compiler | gcc 12.2.0 |",
            "| C flags | -O2 -g |", "| LuaJIT | LuaJIT 2.1.0-beta3 |", "| libuv | 1.44.2 |",
            "| OpenSSL | OpenSSL 3.0.15 |",
            "| git commit | 0123456789abcdef0123456789abcdef01234567 (dirty: uncommitted changes) |",
            "| binary SHA-256 | " .. string.rep("ab", 32) .. " |",
            "| scenario SHA-256 | " .. string.rep("cd", 32) .. " |",
            "| started (UTC) | 2026-01-02T03:04:05Z |", "| ended (UTC) | 2026-01-02T03:05:06Z |",
        }) do
            assert.truthy(t:find(line, 1, true), line)
        end
    end)

    it("says when env.json is missing and when the run was interrupted", function()
        local rs = runs()
        rs[#rs + 1] = bad(H, 4, "interrupted", "the run was interrupted by SIGINT", nil)
        local text = render(rs, {})
        assert.truthy(text:find("(env.json is missing: no environment recorded.)", 1, true))
        assert.truthy(text:find("**This run was interrupted**", 1, true))
        assert.truthy(section(text, "## Environment"):find("| CPU | - |", 1, true))
    end)

    it("gives the same bytes for the same runs, and for a summary read back from JSON", function()
        local rs = runs()
        local a = render(rs)
        assert.are.equal(a, render(runs()))
        local s = json.decode(json.encode(stats.summarize(rs, {})))
        assert.are.equal(a, md.render(model_of.build(s, rs, ENV), {}))
    end)

    it("links the charts it is given under their group", function()
        local rs = runs()
        local m = model_of.build(stats.summarize(rs, {}), rs, ENV)
        local charts = require("arkbench.report.svg").charts(m)
        local text = md.render(m, charts)
        local s = section(text, "## tcp, 16 clients, window 16")
        assert.truthy(s:find("![tcp, 16 clients, window 16: throughput](charts/tcp-c16-w16-throughput.svg)", 1, true))
        assert.truthy(s:find("![tcp, 16 clients, window 16: p99 round-trip time](charts/tcp-c16-w16-p99.svg)", 1, true))
        assert.is_nil(s:find("c1-w1", 1, true))
    end)

    it("compares topologies within each execution when both vary, and prints them as text", function()
        -- sharded:2 doubles callback (2.00x) and triples coroutine (3.00x);
        -- across executions the best would be sharded:2 / coroutine at 3.6x
        -- the callback one-thread row
        local function ex(payload, topology, execution)
            local c = case(payload, 1, topology)
            c.execution = execution
            c.case_id = c.case_id .. " execution=" .. execution
            return c
        end
        local rs = {}
        for _, p in ipairs({ 64, 1024 }) do
            rs[#rs + 1] = ok(ex(p, "sharded:1", "callback"), 1, 100000)
            rs[#rs + 1] = ok(ex(p, "sharded:2", "callback"), 1, 200000)
            rs[#rs + 1] = ok(ex(p, "sharded:1", "coroutine"), 1, 120000)
            rs[#rs + 1] = ok(ex(p, "sharded:2", "coroutine"), 1, 360000)
        end
        local text, m = render(rs)
        assert.are.equal(2, #m.findings)
        local t = section(text, "## Key findings")
        assert.truthy(t:find("| tcp, execution callback | sharded:1 / callback | sharded:2 / callback "
            .. "| 2.00× [2.00×, 2.00×] | 2 payloads |", 1, true), t)
        assert.truthy(t:find("| tcp, execution coroutine | sharded:1 / coroutine | sharded:2 / coroutine "
            .. "| 3.00× [3.00×, 3.00×] | 2 payloads |", 1, true), t)
        local lines = md.findings_text(m)
        assert.truthy(lines:find("^key findings: best topology by round trips/s, the median %[min, max%] "
            .. "of its per%-payload ratios to the one%-thread topology\n"), lines)
        assert.truthy(lines:find("\n  tcp, execution coroutine: sharded:2 / coroutine 3.00× [3.00×, 3.00×] "
            .. "over 2 payloads vs sharded:1 / coroutine; lowest p99 sharded:2 / coroutine (2 of 2)\n", 1, true),
            lines)
        assert.are.equal("", md.findings_text({ findings = {} }))
    end)

    it("has no findings and one row per case when only one topology ran", function()
        local rs = {}
        for rep, rt in ipairs({ 100000, 110000, 90000 }) do rs[#rs + 1] = ok(A, rep, rt) end
        for rep, rt in ipairs({ 50000, 40000, 60000 }) do rs[#rs + 1] = ok(C, rep, rt) end
        local text = render(rs)
        assert.is_nil(text:find("## Key findings", 1, true))
        -- clients and window do not vary: the group is the protocol alone
        assert.truthy(text:find("\n## tcp\n\n### payload 64 B\n", 1, true))
        assert.truthy(text:find("| shared:1 | 50,000 [40,000, 60,000] | 48.8 |", 1, true))
        assert.truthy(text:find("None: every run was ok.", 1, true))
    end)

    -- a new user's churn comparison: parts labelled after their protocol,
    -- execution varying, one topology -- the findings said "tcp, tcp" and
    -- called callback vs coroutine a best topology
    it("has no topology findings when only execution varies, and names a part once", function()
        local function ex(label, protocol, execution)
            local c = case(64, 16, "sharded:1")
            c.label, c.protocol, c.execution = label, protocol, execution
            c.case_id = label .. " execution=" .. execution
            return c
        end
        local rs = {}
        for _, c in ipairs({ ex("tcp", "tcp", "callback"), ex("tcp", "tcp", "coroutine"),
                             ex("tls-resume", "tls", "callback"), ex("tls-resume", "tls", "coroutine") }) do
            for rep, rt in ipairs({ 100000, 120000, 110000 }) do rs[#rs + 1] = ok(c, rep, rt) end
        end
        local text, m = render(rs)
        assert.are.equal(0, #m.findings)
        assert.is_nil(text:find("## Key findings", 1, true))
        assert.truthy(text:find("\n## tcp\n", 1, true), text)
        assert.is_nil(text:find("tcp, tcp", 1, true))
        assert.truthy(text:find("\n## tls-resume, tls\n", 1, true), text)
    end)
end)

describe("report.compact", function()
    it("keeps 3 significant digits with k/M/G", function()
        assert.are.equal("0", report.compact(0))
        assert.are.equal("53.5", report.compact(53.503))
        assert.are.equal("999", report.compact(999.2))
        assert.are.equal("1k", report.compact(999.7))
        assert.are.equal("33.4k", report.compact(33395))
        assert.are.equal("914k", report.compact(914320))
        assert.are.equal("1M", report.compact(999999))
        assert.are.equal("1.45M", report.compact(1450000))
        assert.are.equal("2.5G", report.compact(2.5e9))
        assert.are.equal("0.25", report.compact(0.25))
        assert.are.equal("-", report.compact(nil))
    end)
end)
