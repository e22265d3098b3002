-- memcached_spec.lua -- scenarios/custom/memcached.lua (a get/set mix
-- with tags) against Debian's memcached, started here on a free loopback
-- port (issue 14, acceptance 2): every run ok; per-tag get and set counts
-- and latency in the run object, in summary.json and in report.md /
-- report.html; and memcached's own `stats` counters cmd_get / cmd_set
-- equal arkbench's sent + warmup_sent per tag, summed over the runs
-- (memcached counts warm-up commands too; the scenario sends nothing
-- else).
--
-- Needs: memcached (packages.txt [test]). It runs under `timeout`, in the
-- foreground of its own process, stopped in teardown.
-- Runtime: ~10 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local ark = require("helpers.arkbench")
local files = require("helpers.files")
local proc = require("helpers.proc")

local shq, read_file = files.shq, files.read_file
local sh_ok, sh_out = proc.sh_ok, proc.sh_out

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

local function listening(port)
    return sh_ok("bash -c 'exec 3<>/dev/tcp/127.0.0.1/" .. port .. "' 2>/dev/null")
end

local next_port = 30000 + (tonumber(sh_out("echo $$")) or 0) % 5000
local function free_port()
    for _ = 1, 200 do
        next_port = next_port + 1
        if not listening(next_port) then return next_port end
    end
    error("no free port found from 30000 up")
end

-- memcached on 127.0.0.1 (TCP only), one worker thread; returns its port
local function start_memcached()
    assert.is_true(sh_ok("command -v memcached >/dev/null 2>&1"),
        "memcached is needed (apt-get install memcached)")
    local last
    for _ = 1, 5 do
        local port = free_port()
        local argv = { "memcached", "-l", "127.0.0.1", "-p", tostring(port), "-U", "0", "-t", "1" }
        -- memcached refuses to run as root without a user to switch to
        if sh_out("id -u"):match("^0") then
            argv[#argv + 1] = "-u"
            argv[#argv + 1] = "nobody"
        end
        local p = proc.spawn(argv, { name = "memcached", limit = 300 })
        if proc.wait_for(function() return listening(port) or not proc.alive(p.pid) end, 10)
            and listening(port) then
            return port
        end
        last = proc.stderr_of(p)
        proc.stop(p, 1)
    end
    error("memcached did not start: " .. tostring(last))
end

-- memcached's own counters (`stats`), as numbers
local function stats(port)
    local text = sh_out("timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/" .. port
        .. "; printf \"stats\\r\\nquit\\r\\n\" >&3; cat <&3'")
    local out = {}
    for k, v in text:gmatch("STAT (%S+) (%d+)") do out[k] = tonumber(v) end
    assert.is_truthy(out.cmd_get and out.cmd_set, "memcached stats: " .. text)
    return out
end

local function brief(r) return ark.brief(r) .. " tags=" .. ark.cjson.encode(r.tags or {}) end

describe("scenarios/custom/memcached.lua against memcached", function()
    it("reports get and set apart, and its counts are memcached's own", function()
        local port = start_memcached()
        local before = stats(port)
        local out = files.tmpdir() .. "/r"
        local rc, so, se = proc.run_cmd({ ark.BIN, "run", "scenarios/custom/memcached.lua",
            "--set", "target=127.0.0.1:" .. port, "--set", "warmup=0.2", "--set", "duration=0.5",
            "--set", "repetitions=1", "--out", out }, { limit = 120 })
        assert.are.equal(0, rc, so .. se)
        local after = stats(port)
        local runs = ark.read_runs(out .. "/runs.jsonl")
        assert.are.equal(4, #runs, so)
        local want = { get = 0, set = 0 }
        for _, r in ipairs(runs) do
            assert.is_true(r.ok, brief(r))
            ark.assert_identity(r)
            assert.same({ "get", "set" }, ark.keys(r.tags), brief(r))
            local sent, completed = 0, 0
            for name, t in pairs(r.tags) do
                assert.is_true(t.sent > 0 and t.completed > 0, name .. " " .. brief(r))
                assert.are.equal(0, t.errors, name .. " " .. brief(r))
                assert.are.equal(t.sent, t.completed + t.drained + t.errors, name)
                assert.are.equal(t.completed + t.drained, t.rtt_us.count, name)
                assert.is_true(t.rtt_us.p50 > 0 and t.rtt_us.p99 >= t.rtt_us.p50, name .. " " .. brief(r))
                assert.is_truthy(t.rtt_histogram:match("^ab1:%d+:"), name)
                sent, completed = sent + t.sent, completed + t.completed
                want[name] = want[name] + t.sent + t.warmup_sent
            end
            -- every message is tagged: the tags add up to the run
            assert.are.equal(r.sent, sent, brief(r))
            assert.are.equal(r.completed, completed, brief(r))
            -- one set in ten
            local share = r.tags.set.sent / r.sent
            assert.is_true(share > 0.09 and share < 0.11, brief(r))
        end
        -- memcached's books: every get and set arkbench handed to the socket,
        -- warm-up included, and nothing else
        assert.are.equal(want.get, after.cmd_get - before.cmd_get)
        assert.are.equal(want.set, after.cmd_set - before.cmd_set)

        -- the summary and both reports carry the per-tag table
        local summary_text = assert(read_file(out .. "/summary.json"))
        local summary = ark.cjson.decode(summary_text)
        for _, c in ipairs(summary.cases) do
            local names = {}
            for _, t in ipairs(c.tags) do
                names[#names + 1] = t.tag
                assert.is_true(t.rtt_merged_us.p50 > 0, c.case_id .. " " .. t.tag)
            end
            table.sort(names)
            assert.same({ "get", "set" }, names, c.case_id)
        end
        local md = assert(read_file(out .. "/report.md"))
        assert.is_truthy(md:find("\n## Tags\n", 1, true), md)
        local html = assert(read_file(out .. "/report.html"))
        assert.is_truthy(html:find('<section id="tags">', 1, true))
        for _, r in ipairs(runs) do
            for _, tag in ipairs({ "get", "set" }) do
                local row = "| " .. r.case_id .. " | " .. tag .. " | "
                assert.is_truthy(md:find(row, 1, true), row .. "\n" .. md)
                assert.is_truthy(html:find("<td>" .. r.case_id .. "</td>\n<td>" .. tag .. "</td>", 1, true),
                    r.case_id .. " " .. tag)
            end
        end
    end)
end)
