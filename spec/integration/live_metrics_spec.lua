-- live_metrics_spec.lua -- `--metrics-listen HOST:PORT` (issue 24,
-- docs/reports.md "Live metrics"): a run of a few seconds with
-- --metrics-listen 127.0.0.1:0 prints its port, and three scrapes taken
-- while it goes parse with python3-prometheus-client's strict OpenMetrics
-- parser, show totals that grow and the running case; after the run the
-- totals are the runs' own. The text's families are checked without a run
-- too, and bad addresses exit 2. Runtime: ~10 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local peers = require("helpers.peers")
local ark = require("helpers.arkbench")

local cjson, run, shq = ark.cjson, ark.run, files.shq
local PARSE = ark.ROOT .. "/spec/fixtures/exports/prom_parse.py"

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

-- samples of one scrape (or file), by name -> list of {labels, value}
local function scrape(src)
    local rc, out, err = proc.capture("", { peers.PY, PARSE, src })
    if rc ~= 0 then return nil, err end
    local by = {}
    for _, s in ipairs(cjson.decode(out)) do
        by[s[1]] = by[s[1]] or {}
        table.insert(by[s[1]], { s[2], s[3] })
    end
    return by
end

local function sum(by, name)
    local n = 0
    for _, s in ipairs(by[name] or {}) do n = n + s[2] end
    return n
end

describe("--metrics-listen", function()
    it("serves live OpenMetrics while the run goes: growing totals, the running case", function()
        local d = files.tmpdir("_lm")
        -- long enough for any machine (2 x 15 s); stopped with SIGINT once
        -- the three scrapes are taken
        files.write_file(d .. "/lm.lua", [[
return { name = "lm", protocol = "tcp", payload = { 64, 512 }, clients = 2, window = 2, interval = 0.25,
         warmup = 0.1, duration = 15, repetitions = 1 }
]])
        local p = proc.spawn({ ark.BIN, "run", d .. "/lm.lua", "--metrics-listen", "127.0.0.1:0", "--out", d .. "/out" },
            { name = "run --metrics-listen" })
        local port
        assert.is_true(proc.wait_for(function()
            port = proc.stderr_of(p):match("live metrics at http://127%.0%.0%.1:(%d+)/metrics")
            return port ~= nil
        end, 30), proc.stderr_of(p))
        local url = "http://127.0.0.1:" .. port .. "/metrics"
        -- one scrape by Python's HTTP client: status 200 and the OpenMetrics type
        assert.is_truthy(scrape(url))
        -- three scrapes (bash's /dev/tcp: cheap to repeat), each kept when
        -- its completions total is above the one before (the next interval
        -- closed), then all three read by the strict parser
        local function fetch(path)
            return proc.sh_ok("timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/" .. port
                .. "; printf \"GET /metrics HTTP/1.0\\r\\n\\r\\n\" >&3; cat <&3' | sed '1,/^\\r\\?$/d' > "
                .. shq(path))
        end
        local function completed(text)
            local n = 0
            for v in text:gmatch("\narkbench_live_completed_total{[^}]*} (%d+)") do n = n + tonumber(v) end
            return n
        end
        local kept, last = {}, 0
        for i = 1, 3 do
            local path = d .. "/scrape" .. i .. ".om"
            assert.is_true(proc.wait_for(function()
                if not fetch(path) then return false end
                local n = completed(files.read_file(path) or "")
                if n > last then last = n; return true end
                return not proc.alive(p.pid)
            end, 60, 0.1), "scrape " .. i .. " saw no growth")
            assert.is_true(proc.alive(p.pid), "the run ended before scrape " .. i)
            kept[i] = path
        end
        os.execute("kill -INT " .. p.pid)
        assert.is_true(proc.wait_for(function() return not proc.alive(p.pid) end, 60))
        local seen, cases, measured = {}, {}, 0
        for i, path in ipairs(kept) do
            local by, err = scrape(path)
            assert.is_truthy(by, err)
            seen[i] = sum(by, "arkbench_live_completed_total")
            if i > 1 then assert.is_true(seen[i] > seen[i - 1]) end
            assert.equals(2, sum(by, "arkbench_live_runs_planned"))
            for _, s in ipairs(by.arkbench_live_completed_total) do assert.equals("lm", s[1].scenario) end
            assert.equals(1, #by.arkbench_live_running, path)
            cases[by.arkbench_live_running[1][1].case] = true
            measured = math.max(measured, sum(by, "arkbench_live_run_measured_seconds"))
        end
        assert.is_true(measured > 0)
        assert.truthy(cases["payload=64"] or cases["payload=512"], "no scrape named the running case")
        -- what was served is what the runs counted, at most
        local runs = ark.read_runs(d .. "/out/runs.jsonl")
        assert.is_true(#runs >= 1)
        local total = 0
        for _, r in ipairs(runs) do total = total + r.completed end
        assert.is_true(seen[3] <= total, seen[3] .. " > " .. total)
        -- the port is closed with the run
        assert.is_nil(scrape(url))
    end)

    it("writes the fixed families, parseable before, during and after a run", function()
        local script = ark.ROOT .. "/spec/fixtures/exports/live_text.lua"
        local d = files.tmpdir("_lmt")
        local rc, out, err = run({ "dev-lua", script, d })
        assert.equals(0, rc, err .. out)
        for _, f in ipairs({ "0.om", "1.om", "2.om" }) do
            local by, perr = scrape(d .. "/" .. f)
            assert.is_truthy(by, perr)
            assert.equals(1, #by.arkbench_live_runs_done)
        end
        local mid = scrape(d .. "/1.om")
        assert.equals(130, sum(mid, "arkbench_live_sent_total"))
        assert.equals(1, sum(mid, "arkbench_live_errors_total"))
        assert.equals(1, #mid.arkbench_live_running)
        assert.equals("2", mid.arkbench_live_running[1][1].repetition)
        -- the keys that name a case are labels, as in metrics.om
        assert.equals("512", mid.arkbench_live_running[1][1].payload)
        assert.equals("2", mid.arkbench_live_running[1][1].clients)
        assert.equals(1200, sum(mid, "arkbench_live_round_trips_per_second"))
        local q = {}
        for _, s in ipairs(mid.arkbench_live_rtt_seconds) do q[s[1].quantile] = s[2] end
        assert.equals(0.00005, q["0.99"])
        local after = scrape(d .. "/2.om")
        assert.equals(130, sum(after, "arkbench_live_sent_total"))
        assert.is_nil(after.arkbench_live_running)
        assert.equals(2, sum(after, "arkbench_live_runs_done"))
    end)

    it("refuses a bad address or a port in use with exit 2, before anything runs", function()
        local rc, _, err = run({ "run", "scenarios/tcp.lua", "--quick", "--metrics-listen", "nohost" })
        assert.equals(2, rc)
        assert.truthy(err:find("--metrics-listen 'nohost': expected HOST:PORT", 1, true), err)
        rc, _, err = run({ "run", "scenarios/tcp.lua", "--quick", "--metrics-listen", "example.com:80" })
        assert.equals(2, rc)
        assert.truthy(err:find("numeric address", 1, true), err)
        local holder = peers.wait_listening(peers.serve("tcp"))
        local d = files.tmpdir("_lmb")
        rc, _, err = run({ "run", "scenarios/tcp.lua", "--quick", "--metrics-listen", "127.0.0.1:" .. holder,
            "--out", d .. "/out" })
        assert.equals(2, rc)
        assert.truthy(err:find("cannot listen: EADDRINUSE", 1, true), err)
        assert.is_false(files.exists(d .. "/out/runs.jsonl"))
    end)
end)
