-- arkbench.run.live_metrics: `--metrics-listen HOST:PORT` -- OpenMetrics
-- text served while a run goes (docs/reports.md, "Live metrics").
--
--   live.parse_addr(text) -> host, port | nil, why
--       "PORT" and ":PORT" are 127.0.0.1:PORT; "HOST:PORT", "[V6]:PORT";
--       HOST a numeric address or localhost.
--   live.start(addr, scenario, total_runs) -> live | nil, why
--       binds (a bind failure is the caller's exit 2) and starts serving;
--       live.port, live.url
--       live.on_progress(iv, case, rep, done, total)  runner.lua's
--           plan.on_progress: an interval of the running case closed
--       live.on_run(run, done, total)                  runner.lua's
--           plan.on_run: a run ended
--       live.on_start(case, rep)                       runner.lua's
--           plan.on_start: a run begins
--   live.chain(live, on_run, on_progress) -> on_run', on_progress'
--       the terminal's callbacks (either may be nil) followed by live's
--       live.text() -> the OpenMetrics text now
--       live.close()
--
-- The orchestrator builds the text when an interval or a run ends (never
-- per scrape) and hands it to the listener thread (core.metrics_listen,
-- core/io/metrics_srv.c), which answers scrapes on its own: a scrape costs
-- the workers nothing, and the orchestrator's waits are never held by one.

local core = require("arkbench.core")

local format, concat = string.format, table.concat
local type, tostring, tonumber, ipairs = type, tostring, tonumber, ipairs

local _M = {}

function _M.parse_addr(text)
    if type(text) ~= "string" or text == "" then return nil, "expected HOST:PORT" end
    local host, port = text:match("^%[([%x:.]+)%]:(%d+)$")
    if not host then host, port = text:match("^([^:]*):(%d+)$") end
    if not host then port = text:match("^(%d+)$"); host = "" end
    if not port then
        return nil, format("'%s': expected HOST:PORT (e.g. 127.0.0.1:9464, or :0 for a free port)", text)
    end
    port = tonumber(port)
    if port > 65535 then return nil, format("'%s': the port must be from 0 to 65535", text) end
    if host == "" then host = "127.0.0.1" end
    if host ~= "localhost" and not host:match("^[%d.]+$") and not host:find(":", 1, true) then
        return nil, format("'%s': the host must be a numeric address (127.0.0.1, ::1, 0.0.0.0) or localhost",
            text)
    end
    return host, port
end

-- 127.0.0.0/8, ::1, localhost
function _M.is_loopback(host)
    return host == "localhost" or host == "::1" or host:match("^127%.%d+%.%d+%.%d+$") ~= nil
end

local function esc(v)
    return (tostring(v):gsub("\\", "\\\\"):gsub("\n", "\\n"):gsub('"', '\\"'))
end

local function num(v)
    v = tonumber(v)
    if not v or v ~= v or v == math.huge or v == -math.huge then return nil end
    if v == math.floor(v) and v > -2 ^ 53 and v < 2 ^ 53 then return format("%d", v) end
    return format("%.15g", v)
end

-- The fixed metric families, in the order they are written (docs/reports.md)
local COUNTERS = {
    { "arkbench_live_sent", "sent", "measure-phase messages sent so far (finished runs and the running one)" },
    { "arkbench_live_completed", "completed", "replies received so far" },
    { "arkbench_live_errors", "errors", "messages lost to an error so far" },
    { "arkbench_live_timed_out", "timed_out", "messages timed out so far" },
}

function _M.start(addr, scenario, total_runs)
    local host, port = _M.parse_addr(addr)
    if not host then return nil, "--metrics-listen " .. port end
    local srv, bound_or_err = core.metrics_listen(host, port)
    if not srv then
        return nil, format("--metrics-listen %s: cannot listen: %s", addr, tostring(bound_or_err))
    end
    local self = { port = bound_or_err, host = host }
    local h = host:find(":", 1, true) and ("[" .. host .. "]") or host
    self.url = format("http://%s:%d/metrics", h, bound_or_err)
    -- case id -> { sent, completed, errors, timed_out } of finished runs;
    -- cur: the running run's case, repetition and interval sums so far
    local totals, order = {}, {}
    -- case id -> the labels of the keys that name a case (payload="64",
    -- clients="16", ... as metrics.om has them), from the first case table
    -- seen for it
    local case_labels = {}
    local function learn(id, case)
        if case_labels[id] or type(case) ~= "table" then return end
        local parts = {}
        for _, k in ipairs(require("arkbench.report.report").AXIS_ORDER) do
            local v = case[k]
            if type(v) == "string" or type(v) == "number" or type(v) == "boolean" then
                parts[#parts + 1] = format(',%s="%s"', k, esc(v))
            end
        end
        case_labels[id] = concat(parts)
    end
    local cur, last_iv, done_runs = nil, nil, 0
    local started = core.now_ns()

    local function total_of(id)
        local t = totals[id]
        if not t then
            t = { sent = 0, completed = 0, errors = 0, timed_out = 0 }
            totals[id] = t
            order[#order + 1] = id
        end
        return t
    end

    function self.text()
        local out = {}
        local function family(name, typ, help, unit)
            out[#out + 1] = format("# TYPE %s %s", name, typ)
            if unit then out[#out + 1] = format("# UNIT %s %s", name, unit) end
            out[#out + 1] = format("# HELP %s %s", name, help)
        end
        local function labels(id)
            return format('scenario="%s",case="%s"', esc(scenario), esc(id)) .. (case_labels[id] or "")
        end
        for _, c in ipairs(COUNTERS) do
            family(c[1], "counter", c[3])
            for _, id in ipairs(order) do
                local v = totals[id][c[2]]
                if cur and cur.id == id then v = v + cur[c[2]] end
                out[#out + 1] = format("%s_total{%s} %s", c[1], labels(id), num(v))
            end
        end
        family("arkbench_live_round_trips_per_second", "gauge",
            "round trips per second of the last closed interval of the running case")
        if cur and last_iv then
            out[#out + 1] = format("arkbench_live_round_trips_per_second{%s} %s", labels(cur.id),
                num(last_iv.round_trips_per_s) or "0")
        end
        family("arkbench_live_rtt_seconds", "summary",
            "round-trip time of the last closed interval of the running case (corrected view in open loop)",
            "seconds")
        if cur and last_iv and (tonumber(last_iv.completed) or 0) > 0 then
            for _, q in ipairs({ { "0.5", "p50_us" }, { "0.99", "p99_us" }, { "1", "max_us" } }) do
                local v = tonumber(last_iv[q[2]])
                if v then
                    out[#out + 1] = format('arkbench_live_rtt_seconds{%s,quantile="%s"} %s', labels(cur.id), q[1],
                        num(v / 1e6))
                end
            end
        end
        family("arkbench_live_running", "gauge",
            "1 for the case and repetition running now (absent between runs)")
        if cur then
            out[#out + 1] = format('arkbench_live_running{%s,repetition="%d"} 1', labels(cur.id), cur.rep)
        end
        family("arkbench_live_run_measured_seconds", "gauge",
            "measure time reached by the running run (end of its last closed interval)", "seconds")
        if cur then
            out[#out + 1] = format("arkbench_live_run_measured_seconds{%s} %s", labels(cur.id), num(cur.t) or "0")
        end
        family("arkbench_live_runs_done", "gauge", "runs finished so far")
        out[#out + 1] = format('arkbench_live_runs_done{scenario="%s"} %d', esc(scenario), done_runs)
        family("arkbench_live_runs_planned", "gauge", "runs the command will make in all")
        out[#out + 1] = format('arkbench_live_runs_planned{scenario="%s"} %d', esc(scenario), total_runs)
        family("arkbench_live_elapsed_seconds", "gauge", "wall time since the command started its runs",
            "seconds")
        out[#out + 1] = format('arkbench_live_elapsed_seconds{scenario="%s"} %s', esc(scenario),
            num((core.now_ns() - started) / 1e9))
        out[#out + 1] = "# EOF"
        return concat(out, "\n") .. "\n"
    end

    local function publish() srv:set(self.text()) end

    function self.on_progress(iv, case, rep, done)
        -- the pipe's connect and warm-up lines are not intervals
        if iv.phase ~= nil then return end
        local id = tostring(type(case) == "table" and case.case_id or "?")
        learn(id, case)
        if not cur or cur.id ~= id or cur.rep ~= rep then
            total_of(id)
            cur = { id = id, rep = tonumber(rep) or 0, sent = 0, completed = 0, errors = 0, timed_out = 0, t = 0 }
        end
        for _, k in ipairs({ "sent", "completed", "errors", "timed_out" }) do
            cur[k] = cur[k] + (tonumber(iv[k]) or 0)
        end
        cur.t = (tonumber(iv.t_s) or 0) + (tonumber(iv.duration_s) or 0)
        last_iv = iv
        done_runs = done or done_runs
        publish()
    end

    function self.on_run(run, done)
        local id = tostring(run.case_id)
        learn(id, run.case)
        local t = total_of(id)
        t.sent = t.sent + (tonumber(run.sent) or 0)
        t.completed = t.completed + (tonumber(run.completed) or 0)
        t.errors = t.errors + (tonumber(run.message_errors) or 0)
        t.timed_out = t.timed_out + (tonumber(run.timed_out) or 0)
        cur, last_iv = nil, nil
        done_runs = done or done_runs + 1
        publish()
    end

    -- the next run's case, before its first interval closes
    function self.on_start(case, rep)
        local id = tostring(type(case) == "table" and case.case_id or "?")
        learn(id, case)
        total_of(id)
        cur = { id = id, rep = tonumber(rep) or 0, sent = 0, completed = 0, errors = 0, timed_out = 0, t = 0 }
        last_iv = nil
        publish()
    end

    function self.close() srv:close() end

    publish()
    return self
end

-- The runner's callbacks with the live metrics' put after the terminal's
-- (either of those may be nil: no live line when stderr is no terminal)
function _M.chain(live, on_run, on_progress)
    local function run_cb(run, done, total)
        if on_run then on_run(run, done, total) end
        live.on_run(run, done, total)
    end
    local function progress_cb(iv, case, rep, done, total)
        if on_progress then on_progress(iv, case, rep, done, total) end
        live.on_progress(iv, case, rep, done, total)
    end
    return run_cb, progress_cb
end

return _M
