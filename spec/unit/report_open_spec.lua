-- report_open_spec.lua -- the views of open-loop runs (hand-written run
-- objects with the fields of docs/load-models.md): corrected-RTT headers and
-- notes, rate asked/achieved and rate_met, the missed-rate warning and its
-- cause, latency-vs-load and time-series charts, thresholds and a search in
-- the reports. Closed-loop views stay as they were.
local stats = require("arkbench.report.stats")
local model_of = require("arkbench.report.model")
local md = require("arkbench.report.md")
local html = require("arkbench.report.html")
local svg = require("arkbench.report.svg")
local report = require("arkbench.report.report")
local openloop = require("arkbench.report.openloop")

local function case(rate, clients)
    return { name = "open", protocol = "tcp", payload = 64, clients = clients or 1, window = 1,
             topology = "sharded:1", execution = "callback", warmup = 0.05, duration = 2,
             repetitions = 2, rate = rate,
             case_id = string.format("rate=%d%s", rate, clients and (" clients=" .. clients) or "") }
end

local function intervals(rt, p99)
    local out = {}
    for i = 1, 4 do
        out[i] = { t_s = i * 0.5, sent = rt / 2, completed = rt / 2, errors = 0, timed_out = 0,
                   round_trips_per_s = rt + i, p50_us = p99 / 2, p90_us = p99 * 0.9, p99_us = p99 + i,
                   max_us = p99 * 2, send_lag_p99_us = 5 }
    end
    return out
end

-- achieved = asked * f; unsent > 0 only when f < 1 and window_full
local function run(c, rep, f, unsent, p99)
    local asked = c.rate
    local achieved = asked * f
    return {
        scenario = { name = "open" }, case_id = c.case_id, case = c, repetition = rep, ok = true,
        status = "ok", load_model = "open", rate_asked = asked, rate_achieved = achieved,
        unsent = unsent, rate_met = achieved >= 0.99 * asked and unsent == 0,
        round_trips_per_s = achieved, payload_mib_per_s = achieved * 64 / 1048576,
        rtt_us = { p50 = p99 / 4, p95 = p99 / 2, p99 = p99, p999 = p99 * 3 },
        rtt_raw_us = { p50 = 20, p99 = 40, p999 = 50 }, send_lag_us = { p50 = 3, p99 = 11, max = 30 },
        sent = achieved * 2, completed = achieved * 2, drained = 0, timed_out = 0, message_errors = 0,
        unfinished = 0, cpu_percent = 10, rss_peak_bytes = 1048576,
        intervals = intervals(achieved, p99),
    }
end

local C1, C2, C3 = case(1000), case(5000), case(20000)
local RUNS = {
    run(C1, 1, 1.0, 0, 100), run(C1, 2, 1.0, 0, 110),
    run(C2, 1, 1.0, 0, 300), run(C2, 2, 0.999, 0, 320),
    run(C3, 1, 0.6, 4000, 90000), run(C3, 2, 1.0, 0, 80000),
}

local function build(runs)
    local summary = stats.summarize(runs, {})
    return model_of.build(summary, runs, {}), summary
end

describe("open-loop summary", function()
    it("carries the load model, the missed rates and the open-loop metrics", function()
        local _, s = build(RUNS)
        local c3 = s.cases[3]
        assert.equals("open", c3.load_model)
        assert.equals(2, c3.rate_runs)
        assert.equals(1, c3.rate_missed)
        assert.equals(0, s.cases[1].rate_missed)
        assert.equals(20000, c3.metrics.rate_asked.median)
        assert.equals(16000, c3.metrics.rate_achieved.median)
        assert.equals(2000, c3.metrics.unsent.median)
        assert.equals(40, c3.metrics.rtt_raw_p99_us.median)
        assert.equals(11, c3.metrics.send_lag_p99_us.median)
    end)

    it("says closed for today's run objects, with no open-loop values", function()
        local s = stats.summarize({ { case_id = "x", ok = true, rtt_us = { p99 = 5 } } }, {})
        assert.equals("closed", s.cases[1].load_model)
        assert.equals(0, s.cases[1].rate_runs)
        assert.equals(0, s.cases[1].metrics.rate_asked.n)
    end)
end)

describe("a run that misses its rate", function()
    it("is warned about with the cause: window full when sends were left unsent", function()
        local w = openloop.rate_warning(RUNS[5])
        assert.equals("rate not met: asked 20,000/s, achieved 12,000/s, 4,000 unsent: window full"
            .. " (every slot waited for a reply; the server or the window is the limit)", w)
        assert.equals("window full", openloop.missed_cause(RUNS[5]))
    end)

    it("is warned about as generator behind when nothing was left unsent", function()
        local r = run(C2, 1, 0.9, 0, 300)
        assert.equals("generator behind", openloop.missed_cause(r))
        assert.truthy(openloop.rate_warning(r):find("generator behind %(.*send lag p99 11%.0 µs%)"))
    end)

    it("names the generator when sends were left unsent with a window slot free", function()
        local r = run(C2, 1, 0.998, 4, 300)
        r.unsent_window_full = 0
        assert.equals("generator behind", openloop.missed_cause(r))
        assert.truthy(openloop.rate_warning(r):find(", 4 unsent: generator behind %(sends left unsent"
                                                   .. " with a window slot free"), openloop.rate_warning(r))
        r.unsent_window_full = 3
        assert.equals("window full", openloop.missed_cause(r))
    end)

    it("gives no warning for a met rate or a closed-loop run", function()
        assert.is_nil(openloop.rate_warning(RUNS[1]))
        assert.is_nil(openloop.rate_warning({ ok = true, round_trips_per_s = 5 }))
    end)
end)

describe("open-loop tables", function()
    it("name the corrected view and show rate asked, achieved and met", function()
        local m = build(RUNS)
        assert.is_true(m.open)
        local header, rows = md.case_rows(m, m.cases)
        local titles = {}
        for i, h in ipairs(header) do titles[i] = h[1] end
        local t = table.concat(titles, "|")
        assert.truthy(t:find("p99 µs (corrected)", 1, true))
        assert.truthy(t:find("raw p99 µs (from actual send)", 1, true))
        assert.truthy(t:find("rate asked/s|rate achieved/s|unsent", 1, true))
        assert.equals("runs ok", titles[#titles])
        assert.equals("rate met", titles[#titles - 1])
        local last = #titles
        assert.equals("yes", rows[1].cells[last - 1])
        assert.equals("yes", rows[2].cells[last - 1])
        assert.equals("NO (missed in 1 of 2)", rows[3].cells[last - 1])
        assert.equals("20,000", rows[3].cells[last - 6])
        assert.equals("16,000", rows[3].cells[last - 5])
        assert.equals("2/2", rows[3].cells[last])
        local text = md.render(m, svg.charts(m))
        assert.truthy(text:find("RTT from intended send (corrected", 1, true))
    end)

    it("in the terminal: asked and achieved columns, ! for a missed rate, the footnote", function()
        local _, s = build(RUNS)
        local t = report.terminal_table(s)
        assert.truthy(t:find("p99 µs*", 1, true))
        assert.truthy(t:find("rate asked/s  achieved/s", 1, true))
        assert.truthy(t:find("16,000!", 1, true))
        assert.truthy(t:find("* open loop: RTT from intended send (corrected", 1, true))
    end)

    it("leave closed-loop tables as they were", function()
        local r = { case_id = "c", case = { payload = 64 }, ok = true, round_trips_per_s = 10,
                    rtt_us = { p50 = 1, p99 = 2 } }
        local m, s = build({ r })
        assert.is_false(m.open)
        local header = md.case_rows(m, m.cases)
        assert.equals(10, #header)
        assert.equals("p99 µs", header[6][1])
        assert.is_nil(report.terminal_table(s):find("rate", 1, true))
        assert.is_nil(md.render(m, svg.charts(m)):find("corrected", 1, true))
    end)
end)

local function count(s, pat)
    local n = 0
    for _ in s:gmatch(pat) do n = n + 1 end
    return n
end

describe("open-loop charts", function()
    it("draw p50/p99/p999 against the asked rate when rate varies, marking missed rates", function()
        local m = build(RUNS)
        local load = {}
        for _, ch in ipairs(svg.charts(m)) do
            if ch.kind == "latency-vs-load" then load[#load + 1] = ch end
        end
        assert.equals(1, #load)
        local ch = load[1]
        assert.equals("load-all.svg", ch.file)
        assert.equals("load", ch.section)
        assert.equals(9, ch.points)
        assert.truthy(ch.svg:find('data-points="9"', 1, true))
        assert.equals(9, count(ch.svg, '<circle class="point'))
        assert.equals(3, count(ch.svg, 'class="point missed"'))
        assert.equals(3, count(ch.svg, '<polyline class="line"'))
        assert.truthy(ch.svg:find("asked rate (messages/s)", 1, true))
        assert.truthy(ch.svg:find('<polyline class="achieved"', 1, true))
        assert.truthy(ch.svg:find("achieved rate (right)", 1, true))
        assert.truthy(ch.svg:find("p999 (corrected)", 1, true))
        assert.truthy(ch.svg:find("(rate not met)", 1, true))
    end)

    it("draw one chart per group of the other varying keys", function()
        local D1, D2 = case(1000, 4), case(8000, 4)
        local runs = { run(C1, 1, 1, 0, 100), run(C2, 1, 1, 0, 200), run(D1, 1, 1, 0, 50), run(D2, 1, 1, 0, 70) }
        for _, r in ipairs(runs) do r.case.clients = r.case.clients or 1 end
        local m = build(runs)
        local files = {}
        for _, ch in ipairs(svg.charts(m)) do
            if ch.kind == "latency-vs-load" then files[#files + 1] = ch.file end
        end
        assert.same({ "load-clients_1.svg", "load-clients_4.svg" }, files)
    end)

    it("draw no latency-vs-load chart when rate does not vary", function()
        local m = build({ run(C1, 1, 1, 0, 100), run(C1, 2, 1, 0, 100) })
        for _, ch in ipairs(svg.charts(m)) do assert.is_not.equal("latency-vs-load", ch.kind) end
    end)

    it("draw throughput and p99 over time per case, repetitions overlaid (report.html only)", function()
        local m = build(RUNS)
        for _, ch in ipairs(svg.charts(m)) do assert.is_not.equal("time", ch.section) end
        local ts = require("arkbench.report.svg_load").time_series(m)
        assert.equals(6, #ts)
        assert.equals("time", ts[1].section)
        assert.equals("time-rate_1000-throughput.svg", ts[1].file)
        assert.equals("time-rate_1000-p99.svg", ts[2].file)
        assert.equals(8, ts[1].points)
        assert.equals(2, count(ts[1].svg, '<polyline class="line"'))
        assert.truthy(ts[2].svg:find("RTT from intended send (corrected)", 1, true))
        assert.truthy(ts[1].svg:find("rep 2", 1, true))
    end)

    it("go into report.html with their sections, each chart's points all in the DOM", function()
        local m, s = build(RUNS)
        s.thresholds = { rules = { "p99_us < 1000" }, crossed = 1, results = {
            { case_id = C3.case_id, rule = "p99_us < 1000", crossed = true, why = "p99_us = 85000" } } }
        m = model_of.build(s, RUNS, {})
        local page = html.render(m, svg.charts(m))
        assert.truthy(page:find('<section id="load">', 1, true))
        assert.truthy(page:find('<section id="time">', 1, true))
        assert.equals(6, count(page, 'data%-kind="time%-'))
        assert.truthy(page:find("Open%-loop cases"))
        assert.truthy(page:find("1 threshold crossed", 1, true))
        assert.truthy(page:find("p99_us = 85000", 1, true))
        for el in page:gmatch("<svg.-</svg>") do
            local declared = tonumber(el:match('data%-points="(%d+)"') or el:match('data%-cases="(%d+)"'))
            assert.is_number(declared)
            local found = count(el, '<circle class="point') + count(el, '<rect class="bar')
            assert.equals(declared, found)
        end
    end)
end)

describe("gates in report.md", function()
    it("list crossed thresholds and an SLO search", function()
        local _, s = build(RUNS)
        s.thresholds = { rules = { "p99_us < 1000", "rate_met" }, crossed = 1, results = {
            { case_id = C1.case_id, rule = "p99_us < 1000", crossed = false, why = "p99_us = 105" },
            { case_id = C3.case_id, rule = "rate_met", crossed = true, why = "1 of 2 ok runs missed their rate" } } }
        s.search = { slo = { "p99_us<1000" }, from = 100, to = 1e6, answer = 5000, reason = "converged",
                     probes = { { rate = 100, pass = true, why = "held" }, { rate = 1e6, pass = false, why = "no" } } }
        local m = model_of.build(s, RUNS, {})
        local text = md.render(m, svg.charts(m))
        assert.truthy(text:find("## Thresholds", 1, true))
        assert.truthy(text:find("**1 threshold crossed** (exit code 3 when every run was ok)", 1, true))
        assert.truthy(text:find("| rate=20000 | rate\\_met | 1 of 2 ok runs missed their rate |", 1, true))
        assert.truthy(text:find("## SLO search", 1, true))
        assert.truthy(text:find("answer **5,000 messages/s** (converged)", 1, true))
        assert.truthy(text:find("## Latency vs load", 1, true))
        assert.truthy(text:find("![latency vs offered load](charts/load-all.svg)", 1, true))
        s.thresholds.results[2].crossed = false
        m = model_of.build(s, RUNS, {})
        assert.truthy(md.render(m, {}):find("Every threshold held in every case.", 1, true))
    end)
end)

describe("generator-bound runs (report/openloop.lua)", function()
    local function open_run(lag, rtt, busy, floor)
        return { load_model = "open", rtt_us = { p99 = rtt }, send_lag_us = { p99 = lag * 4 },
                 generator_lag_us = { p99 = lag }, client_loop_busy_max = busy,
                 timer_floor_us = floor and { p99 = floor } or nil, notes = {} }
    end

    it("bounds the generator's lag share above the timer floor, or a busy loop", function()
        local g = openloop.generator(open_run(300, 1000, 0.5, 20))
        assert.is_true(g.bound)
        assert.equals("lag", g.cause)
        assert.near(0.3, g.share, 1e-12)
        -- below the share: not bound, whatever the send lag (the window's waits)
        assert.is_false(openloop.generator(open_run(200, 1000, 0.5, 20)).bound)
        -- a lag within 2x the machine's timer floor is the wake-up, not a generator behind
        assert.is_false(openloop.generator(open_run(30, 40, 0.1, 20)).bound)
        assert.is_true(openloop.generator(open_run(41, 40, 0.1, 20)).bound)
        -- a loop 95 % busy is bound whatever its lag
        g = openloop.generator(open_run(1, 1000, 0.95, 20))
        assert.is_true(g.bound)
        assert.equals("busy", g.cause)
    end)

    it("writes the share, the flag and a note naming the lag", function()
        local r = open_run(2500, 5000, 0.2, 30)
        openloop.judge_generator(r)
        assert.equals(0.5, r.generator_lag_share)
        assert.is_true(r.generator_bound)
        assert.equals("generator-bound: the load generator fell behind by 2.50 ms at p99: the"
            .. " corrected latency includes it; add threads, processes or shards", r.notes[1])
        r = open_run(10, 5000, 0.2, 30)
        openloop.judge_generator(r)
        assert.is_false(r.generator_bound)
        assert.equals(0, #r.notes)
    end)

    it("notes a busy client loop in closed loop only when the client is apart", function()
        local r = { load_model = "closed", client_loop_busy_max = 0.99, notes = {},
                    case = { target = "127.0.0.1:1" } }
        openloop.judge_generator(r)
        assert.is_true(r.generator_bound)
        assert.truthy(r.notes[1]:find("a client loop was 99 % busy", 1, true), r.notes[1])
        r = { load_model = "closed", client_loop_busy_max = 0.99, notes = {}, case = {} }
        openloop.judge_generator(r)
        assert.is_nil(r.generator_bound)
        assert.equals(0, #r.notes)
    end)

    it("says so in a crossed latency threshold", function()
        local thresholds = require("arkbench.report.thresholds")
        local s = { cases = { { case_id = "a", runs_ok = 2, generator_bound_runs = 1,
                                metrics = { rtt_p99_us = { median = 5000 } } } } }
        local res = thresholds.check(s, thresholds.parse_list({ "p99_us < 1000" }))
        assert.is_true(res[1].crossed)
        assert.truthy(res[1].why:find("generator-bound in 1 of 2 ok runs", 1, true), res[1].why)
        s.cases[1].generator_bound_runs = 0
        res = thresholds.check(s, thresholds.parse_list({ "p99_us < 1000" }))
        assert.is_nil(res[1].why:find("generator", 1, true))
    end)
end)
