-- report_spec.lua -- the file reports through the real command line:
-- report.md, report.html and charts/ after `arkbench run`; every SVG is
-- well-formed XML; `arkbench report DIR` rebuilds them byte for byte from
-- runs.jsonl + env.json; every number in the report.md tables equals
-- summary.json; --csv; `arkbench compare` (median ratio of two runs, refusal
-- of different durations with exit 2, --force, --pair); a failed repetition
-- shown as failed and kept out of medians and ratios.
--
-- Runs $ARKBENCH_BIN (ctest sets it), else $ARKBENCH_ROOT/bin/arkbench.
-- Runtime: ~20 s (three short runs of 10, 10 and 1 cases).
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local core = require("arkbench.core")
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")

local cjson, run, sh_ok = ark.cjson, ark.run, proc.sh_ok
local shq, read_file, write_file = files.shq, files.read_file, files.write_file

local function tmpdir() return files.tmpdir("_report") end

teardown(function()
    files.remove_tmpdirs()
end)

local function ls(dir)
    local out = {}
    local p = io.popen("ls -1 " .. shq(dir) .. " 2>/dev/null")
    for name in p:lines() do out[#out + 1] = name end
    p:close()
    table.sort(out)
    return out
end

local function hashes(dir)
    local out = {}
    for _, f in ipairs({ "report.md", "report.html" }) do out[f] = core.sha256(assert(read_file(dir .. "/" .. f))) end
    for _, f in ipairs(ls(dir .. "/charts")) do
        out["charts/" .. f] = core.sha256(assert(read_file(dir .. "/charts/" .. f)))
    end
    return out
end

-- Minimal XML well-formedness check (see spec/unit/report_svg_spec.lua for
-- the commented version): nil, error when the text is not well-formed.
local function xml_ok(s)
    local i, n, stack, roots = 1, #s, {}, 0
    if s:sub(1, 5) == "<?xml" then i = (s:find("?>", 1, true) or n) + 2 end
    local function entities(t)
        for ent in t:gmatch("&([^;]*);?") do
            if not (ent == "amp" or ent == "lt" or ent == "gt" or ent == "quot" or ent == "apos"
                or ent:match("^#%d+$") or ent:match("^#x%x+$")) then return false end
        end
        return true
    end
    while i <= n do
        local lt = s:find("<", i, true)
        local text = s:sub(i, (lt or n + 1) - 1)
        if not entities(text) then return nil, "bad entity in text at " .. i end
        if #stack == 0 and text:find("%S") then return nil, "text outside the root at " .. i end
        if not lt then break end
        if s:sub(lt, lt + 1) == "</" then
            local name, e = s:match("^</([%a_:][%w_:%.%-]*)%s*>()", lt)
            if not name or stack[#stack] ~= name then return nil, "bad end tag at " .. lt end
            stack[#stack] = nil
            i = e
        else
            local name, p = s:match("^<([%a_:][%w_:%.%-]*)()", lt)
            if not name then return nil, "bad tag at " .. lt end
            local seen, closed = {}, false
            while true do
                local ws, p2 = s:match("^(%s*)()", p)
                p = p2
                if s:sub(p, p + 1) == "/>" then closed = true; p = p + 2; break end
                if s:sub(p, p) == ">" then p = p + 1; break end
                local an, q, p3 = s:match("^([%a_:][%w_:%.%-]*)%s*=%s*([\"'])()", p)
                if ws == "" or not an or seen[an] then return nil, "bad attribute at " .. p end
                seen[an] = true
                local close = s:find(q, p3, true)
                if not close then return nil, "unterminated attribute at " .. p end
                local val = s:sub(p3, close - 1)
                if val:find("<", 1, true) or not entities(val) then return nil, "bad attribute value at " .. p end
                p = close + 1
            end
            if #stack == 0 then roots = roots + 1 end
            if not closed then stack[#stack + 1] = name end
            i = p
        end
    end
    if #stack > 0 or roots ~= 1 then return nil, "unclosed elements or not one root" end
    return true
end

local function decode_file(path)
    local s = read_file(path)
    assert.is_string(s, path)
    return (cjson.decode(s))
end

local function read_runs(dir)
    local out = {}
    for line in (read_file(dir .. "/runs.jsonl") or ""):gmatch("[^\n]+") do out[#out + 1] = cjson.decode(line) end
    return out
end

-- "1,234.5" -> 1234.5, and the number of decimals written
local function number_of(s)
    s = s:gsub("^%s+", ""):gsub("%s+$", "")
    local d = s:match("%.(%d+)$")
    return tonumber((s:gsub(",", ""))), d and #d or 0
end

local function close_to(text, value, what)
    local x, d = number_of(text)
    assert.is_not_nil(x, what .. ": not a number: " .. text)
    assert.is_number(value, what .. ": no value in summary.json")
    local tol = 0.5 * 10 ^ -d + 1e-9 * math.abs(value)
    assert.is_true(math.abs(x - value) <= tol, string.format("%s: report.md has %s, summary.json %.17g",
        what, text, value))
end

local A, B, C, F

describe("arkbench reports", function()
    setup(function()
        A, B, C, F = tmpdir() .. "/a", tmpdir() .. "/b", tmpdir() .. "/c", tmpdir() .. "/f"
        for _, d in ipairs({ A, B }) do
            local rc, _, err = run({ "run", "scenarios/tcp.lua", "--quick", "--filter", "payload=1024", "--out", d })
            assert.are.equal(0, rc, err)
        end
        local rc, _, err = run({ "run", "scenarios/tcp.lua", "--set", "warmup=0.05", "--set", "duration=0.3",
            "--set", "repetitions=1", "--filter", "payload=1024", "--filter", "topology=sharded:1",
            "--filter", "clients=16", "--out", C })
        assert.are.equal(0, rc, err)
    end)

    it("writes report.md, report.html and a throughput and a p99 chart per protocol", function()
        assert.is_string(read_file(A .. "/report.md"))
        assert.is_string(read_file(A .. "/report.html"))
        local charts = ls(A .. "/charts")
        assert.are.same({ "tcp-c1-w1-p99.svg", "tcp-c1-w1-percentiles.svg", "tcp-c1-w1-throughput.svg",
                          "tcp-c16-w16-p99.svg", "tcp-c16-w16-percentiles.svg", "tcp-c16-w16-throughput.svg" },
                        charts)
    end)

    it("writes every SVG as well-formed XML, in the files and inline in report.html", function()
        for _, f in ipairs(ls(A .. "/charts")) do
            local ok, err = xml_ok(assert(read_file(A .. "/charts/" .. f)))
            assert.is_true(ok, f .. ": " .. tostring(err))
        end
        local html = read_file(A .. "/report.html")
        local n = 0
        for s in html:gmatch("<svg.-</svg>") do
            n = n + 1
            local ok, err = xml_ok(s)
            assert.is_true(ok, "inline svg " .. n .. ": " .. tostring(err))
        end
        -- the 6 charts of charts/ (throughput, p99 and percentiles per
        -- part), then the time series: two per case
        local summary = cjson.decode(read_file(A .. "/summary.json"))
        assert.are.equal(6 + 2 * #summary.cases, n)
        local ts = 0
        for _ in html:gmatch('data%-kind="time%-') do ts = ts + 1 end
        assert.are.equal(2 * #summary.cases, ts)
    end)

    it("rebuilds report.md, report.html and charts byte for byte from runs.jsonl and env.json", function()
        local before = hashes(A)
        -- everything but runs.jsonl and env.json goes
        for _, f in ipairs({ "report.md", "report.html", "summary.json" }) do os.remove(A .. "/" .. f) end
        assert(sh_ok("rm -rf " .. shq(A .. "/charts")))
        local rc, out, err = run({ "report", A })
        assert.are.equal(0, rc, err)
        assert.truthy(out:find("round trips/s", 1, true))
        assert.are.same(before, hashes(A))
        rc = run({ "report", A })
        assert.are.equal(0, rc)
        assert.are.same(before, hashes(A))
    end)

    it("shows in report.md tables the numbers of summary.json", function()
        local summary = decode_file(A .. "/summary.json")
        local md = read_file(A .. "/report.md")
        local function find_case(clients, window, topology)
            for _, c in ipairs(summary.cases) do
                if c.case.clients == clients and c.case.window == window and c.case.topology == topology then return c end
            end
            error("no case " .. clients .. "/" .. window .. "/" .. topology .. " in summary.json")
        end
        local clients, window, header
        local checked = 0
        for line in md:gmatch("[^\n]+") do
            local cl, w = line:match("^## tcp, (%d+) clients?, window (%d+)$")
            if cl then clients, window, header = tonumber(cl), tonumber(w), nil end
            if line:match("^| topology |") then
                header = {}
                for cell in line:sub(3, -3):gmatch("[^|]+") do header[#header + 1] = cell:match("^%s*(.-)%s*$") end
            elseif header and line:match("^| [%w:]+ |") and clients then
                local cells = {}
                for cell in (line:sub(2, -2) .. "|"):gmatch("([^|]*)|") do cells[#cells + 1] = cell:match("^%s*(.-)%s*$") end
                local c = find_case(clients, window, cells[1])
                local m = c.metrics
                local med, lo, hi = cells[2]:match("^([%d,%.]+) %[([%d,%.]+), ([%d,%.]+)%]$")
                assert.is_not_nil(med, "round trips/s cell: " .. cells[2])
                close_to(med, m.round_trips_per_s.median, cells[1] .. " round trips/s median")
                close_to(lo, m.round_trips_per_s.min, cells[1] .. " round trips/s min")
                close_to(hi, m.round_trips_per_s.max, cells[1] .. " round trips/s max")
                close_to(cells[3], m.payload_mib_per_s.median, cells[1] .. " MiB/s")
                close_to(cells[4], m.rtt_p50_us.median, cells[1] .. " p50")
                close_to(cells[5], m.rtt_p95_us.median, cells[1] .. " p95")
                close_to(cells[6], m.rtt_p99_us.median, cells[1] .. " p99")
                close_to(cells[7], m.cpu_percent.median, cells[1] .. " CPU %")
                close_to(cells[8], m.cpu_machine_percent.median, cells[1] .. " machine %")
                close_to(cells[9], m.rss_peak_bytes.median / 1048576, cells[1] .. " RSS MiB")
                assert.are.equal(string.format("%d/%d", c.runs_ok, c.runs), cells[10])
                assert.are.same({ "topology", "round trips/s median [min, max]", "MiB/s", "p50 µs", "p95 µs",
                    "p99 µs", "CPU %", "machine %", "RSS MiB", "runs ok" }, header)
                checked = checked + 1
            elseif not line:match("^|") then
                header = nil
            end
        end
        assert.are.equal(#summary.cases, checked)

        -- key findings: best topology's ratio to sharded:1 (one payload: the ratio itself)
        for _, load in ipairs({ { 1, "1 client, window 1" }, { 16, "16 clients, window 16" } }) do
            local base = find_case(load[1], load[1], "sharded:1").metrics.round_trips_per_s.median
            local best, best_r = nil, -1
            for _, t in ipairs({ "sharded:1", "shared:2", "shared:4", "sharded:2", "sharded:4" }) do
                local r = find_case(load[1], load[1], t).metrics.round_trips_per_s.median / base
                if r > best_r then best, best_r = t, r end
            end
            local row = string.format("| tcp, %s | sharded:1 | %s | %.2f× [%.2f×, %.2f×] | 1 case |",
                load[2], best, best_r, best_r, best_r)
            assert.truthy(md:find(row, 1, true), "no findings row " .. row .. " in\n" .. md)
        end

        -- report.html sorts by the exact medians
        local html = read_file(A .. "/report.html")
        local n = 0
        for v in html:gmatch('<td class="num" data%-v="([^"]+)">[%d,]+ %[') do
            n = n + 1
            local found = false
            for _, c in ipairs(summary.cases) do
                if tonumber(v) == c.metrics.round_trips_per_s.median then found = true end
            end
            assert.is_true(found, "report.html data-v " .. v .. " is no median in summary.json")
        end
        assert.are.equal(#summary.cases, n)
    end)

    it("puts the environment and the HTML-escaped scenario source in report.html, fetching nothing", function()
        local env = decode_file(A .. "/env.json")
        local html = read_file(A .. "/report.html")
        local src = env.scenario_source:gsub("&", "&amp;"):gsub("<", "&lt;"):gsub(">", "&gt;")
            :gsub('"', "&quot;"):gsub("'", "&#39;")
        assert.truthy(html:find(src, 1, true))
        assert.truthy(html:find("<td>" .. env.cpu_model .. "</td>", 1, true))
        for _, bad in ipairs({ "<link", " src=", "@import", "url(", "https://" }) do
            assert.is_nil(html:find(bad, 1, true), "report.html has " .. bad)
        end
        local _, http = html:gsub("http://", "")
        local _, ns = html:gsub('xmlns="http://www.w3.org/2000/svg"', "")
        assert.are.equal(ns, http)
    end)

    it("writes runs.csv and cases.csv with --csv", function()
        local rc, _, err = run({ "report", A, "--csv" })
        assert.are.equal(0, rc, err)
        local runs = read_runs(A)
        local _, run_lines = read_file(A .. "/runs.csv"):gsub("\n", "")
        local _, case_lines = read_file(A .. "/cases.csv"):gsub("\n", "")
        assert.are.equal(#runs + 1, run_lines)
        assert.are.equal(#decode_file(A .. "/summary.json").cases + 1, case_lines)
        assert.truthy(read_file(A .. "/runs.csv"):find("^case_id,repetition,ok,status,"))
        rc, _, err = run({ "report", A, "--bogus" })
        assert.are.equal(2, rc)
        assert.truthy(err:find("unknown option '--bogus'", 1, true))
    end)

    it("compares two runs of the same scenario: per-case ratios with a median within [0.5, 2]", function()
        local rc, out, err = run({ "compare", A, B })
        assert.are.equal(0, rc, err)
        local m, n = out:match("median of per%-case throughput ratios: ([%d%.]+)x over (%d+) cases")
        assert.is_not_nil(m, out)
        assert.are.equal(10, tonumber(n))
        assert.is_true(tonumber(m) >= 0.5 and tonumber(m) <= 2, out)
        local _, rows = out:gsub("\npayload=1024 clients=%d+ window=%d+ topology=[%w:]+ +[%d,]+ +[%d,]+ +[%d%.]+x %[", "")
        assert.are.equal(10, rows, out)
    end)

    it("refuses to compare different durations with exit 2 naming it, unless --force", function()
        local rc, out, err = run({ "compare", A, C })
        assert.are.equal(2, rc)
        assert.are.equal("", out)
        assert.truthy(err:find("duration differs: A 0.2, B 0.3", 1, true), err)
        assert.truthy(err:find("--force", 1, true), err)
        rc, out, err = run({ "compare", A, C, "--force" })
        assert.are.equal(0, rc, err)
        assert.truthy(out:find("compared with --force despite: duration differs", 1, true), out)
        assert.truthy(out:find("over 1 case", 1, true), out)
        assert.truthy(out:find("only in A (9)", 1, true), out)
    end)

    it("writes the paired cases' latency by percentile with --svg, A solid and B dashed", function()
        local file = tmpdir() .. "/cmp.svg"
        local rc, out, err = run({ "compare", A, B, "--svg", file })
        assert.are.equal(0, rc, err)
        assert.truthy(out:find("wrote " .. file .. " (latency by percentile, A solid, B dashed)", 1, true), out)
        local svg = read_file(file)
        assert.truthy(svg:find('data-kind="percentile"', 1, true))
        local solid = select(2, svg:gsub('<polyline class="line" points="[^"]*" fill="none" stroke="[^"]*"'
            .. ' stroke%-width="2"/>', ""))
        local dashed = select(2, svg:gsub('stroke%-dasharray="5 3"', ""))
        assert.are.equal(10, solid)
        assert.are.equal(10, dashed)
        local declared = tonumber(svg:match('data%-points="(%d+)"'))
        assert.are.equal(declared, select(2, svg:gsub('<circle class="point"', "")))
    end)

    it("compares within one result with --pair topology", function()
        local rc, out, err = run({ "compare", A, "--pair", "topology" })
        assert.are.equal(0, rc, err)
        for _, t in ipairs({ "shared:2", "shared:4", "sharded:2", "sharded:4" }) do
            assert.truthy(out:find("median throughput ratio topology=" .. t .. " / topology=sharded:1: [%d%.]+x over 2 cases"),
                out)
        end
        rc, _, err = run({ "compare", A, "--pair", "execution" })
        assert.are.equal(2, rc)
        assert.truthy(err:find("'execution' does not vary", 1, true), err)
    end)

    it("shows a failed repetition as failed with its counters, outside medians and ratios (an older"
        .. " arkbench's status error read as failed)", function()
        assert(sh_ok("mkdir -p " .. shq(F) .. " && cp " .. shq(A .. "/runs.jsonl") .. " " .. shq(A .. "/env.json")
            .. " " .. shq(F)))
        local runs = read_runs(A)
        local target = "payload=1024 clients=16 window=16 topology=shared:2"
        local lines = {}
        for _, r in ipairs(runs) do
            if r.case_id == target then
                r.ok, r.status, r.error = false, "error", "ECONNRESET: forced by report_spec"
                r.errors = { ECONNRESET = 1 }
                r.sent, r.completed = 777, 770
            end
            lines[#lines + 1] = cjson.encode(r)
        end
        write_file(F .. "/runs.jsonl", table.concat(lines, "\n") .. "\n")
        local rc, out, err = run({ "report", F })
        assert.are.equal(0, rc, err)
        assert.truthy(out:find("FAILED (failed: ECONNRESET: forced by report_spec; errors: ECONNRESET 1)", 1, true),
            out)
        local md = read_file(F .. "/report.md")
        assert.truthy(md:find("| shared:2 | FAILED (failed) |  |  |  |  |  |  |  | 0/1 |", 1, true), md)
        assert.truthy(md:find("| " .. target .. " | 1 | failed | ECONNRESET: forced by report\\_spec | ECONNRESET 1 | 777 | 770 |",
            1, true), md)
        local summary = decode_file(F .. "/summary.json")
        for _, c in ipairs(summary.cases) do
            if c.case_id == target then
                assert.are.equal(0, c.runs_ok)
                assert.are.equal(cjson.null, c.metrics.round_trips_per_s)
            end
        end
        local svg = read_file(F .. "/charts/tcp-c16-w16-throughput.svg")
        local _, missing = svg:gsub('<rect class="bar missing"', "")
        assert.are.equal(1, missing)
        rc, out, err = run({ "compare", A, F })
        assert.are.equal(0, rc, err)
        assert.truthy(out:find(target .. " +[%d,]+ +FAILED +excluded: failed in B"), out)
        assert.truthy(out:find("over 9 cases", 1, true), out)
    end)
end)
