-- status_spec.lua -- a run's status (arkbench.run.status; docs/run-object.md,
-- "Status"): what the worker derives from the engine's judgement, the
-- scenario's max_error_rate, the exit code of a set of runs, and how
-- report/compare read the statuses of an older arkbench.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local status = require("arkbench.run.status")
local stats = require("arkbench.report.stats")
local runfile = require("arkbench.report.runfile")
local report = require("arkbench.report.report")
local files = require("helpers.files")
local json = require("arkbench.util.json")

teardown(function() files.remove_tmpdirs() end)

-- an engine result (core.run_case) with counters
local function res(t)
    local r = { ok = false, sent = 1000, completed = 990, drained = 0, timed_out = 0,
                message_errors = 0, unfinished = 0, errors = {} }
    for k, v in pairs(t) do r[k] = v end
    return r
end

describe("status.derive", function()
    it("keeps the engine's ok, degraded and failed, with its error", function()
        assert.are.same({ "ok" }, { status.derive(res({ ok = true, status = "ok" }), {}) })
        local s, e = status.derive(res({ status = "degraded", message_errors = 10,
            error = "connection 3: read: connection reset by peer (ECONNRESET)" }), {})
        assert.are.equal("degraded", s)
        assert.are.equal("connection 3: read: connection reset by peer (ECONNRESET)", e)
        assert.are.equal("failed", (status.derive(res({ status = "failed", completed = 0 }), {})))
    end)

    it("puts an interrupt and a script error before the engine's word", function()
        assert.are.equal("interrupted", (status.derive(res({ status = "degraded", interrupted = true }), {})))
        assert.are.equal("script_error", (status.derive(res({ status = "ok", ok = true, script_error = true }), {})))
    end)

    it("makes a run with reconnects degraded even when the engine said ok", function()
        local s, e = status.derive(res({ ok = true, status = "ok", reconnects = 2 }), {})
        assert.are.equal("degraded", s)
        assert.are.equal("2 connections were reopened (reconnects)", e)
        assert.are.equal("ok", (status.derive(res({ ok = true, status = "ok", reconnects = 0 }), {})))
    end)

    it("reads a result without a status (an older engine) from ok", function()
        assert.are.equal("ok", (status.derive(res({ ok = true }), {})))
        assert.are.equal("failed", (status.derive(res({ ok = false }), {})))
    end)
end)

describe("max_error_rate", function()
    it("defines the error rate as (timed_out + message_errors) / sent", function()
        assert.are.equal(0.03, status.error_rate({ sent = 1000, timed_out = 20, message_errors = 10 }))
        assert.is_nil(status.error_rate({ sent = 0, timed_out = 0 }))
        assert.are.equal(0, status.error_rate({ sent = 5 }))
    end)

    it("turns a degraded run above it into a failed one, saying why and keeping the first error", function()
        local r = res({ status = "degraded", timed_out = 20, message_errors = 10, error = "first" })
        local s, e = status.derive(r, { max_error_rate = 0.02 })
        assert.are.equal("failed", s)
        assert.are.equal("error rate 0.03 ((timed_out 20 + message_errors 10 + non_success 0) / sent"
            .. " 1000) is above max_error_rate 0.02; first error: first", e)
    end)

    it("leaves a run at or below it, and every run without it, as it was", function()
        local r = res({ status = "degraded", timed_out = 20, message_errors = 10 })
        assert.are.equal("degraded", (status.derive(r, { max_error_rate = 0.03 })))
        assert.are.equal("degraded", (status.derive(r, {})))
        assert.are.equal("degraded", (status.derive(r, nil)))
        -- 0 allows no error at all
        assert.are.equal("failed", (status.derive(r, { max_error_rate = 0 })))
        assert.are.equal("ok", (status.derive(res({ ok = true, status = "ok" }), { max_error_rate = 0 })))
    end)

    it("counts a datagram run's losses (timed_out) though the engine calls it ok", function()
        local r = res({ ok = true, status = "ok", timed_out = 100 })
        local s = status.derive(r, { max_error_rate = 0.05 })
        assert.are.equal("failed", s)
        assert.are.equal("ok", (status.derive(r, { max_error_rate = 0.1 })))
    end)
end)

describe("status.exit_code", function()
    local function run(s) return { ok = s == "ok", status = s } end

    it("is 0 when every run is ok, 1 when one is degraded or failed, 130 when one was interrupted", function()
        assert.are.equal(0, status.exit_code({ run("ok"), run("ok") }))
        assert.are.equal(1, status.exit_code({ run("ok"), run("degraded") }))
        assert.are.equal(1, status.exit_code({ run("failed"), run("ok") }))
        assert.are.equal(1, status.exit_code({ run("timeout") }))
        assert.are.equal(130, status.exit_code({ run("degraded"), run("interrupted") }))
        assert.are.equal(0, status.exit_code({}))
    end)

    it("is 1 when an ok run missed its rate, unless its case says rate_strict = false", function()
        local missed = { ok = true, status = "ok", rate_met = false, case = {} }
        local met = { ok = true, status = "ok", rate_met = true, case = {} }
        assert.are.equal(1, status.exit_code({ met, missed }))
        assert.are.equal(0, status.exit_code({ met }))
        assert.are.equal(0, status.exit_code({ { ok = true, status = "ok", rate_met = false,
                                                 case = { rate_strict = false } } }))
        assert.are.equal(130, status.exit_code({ missed, run("interrupted") }))
    end)

    it("leaves degraded runs and a missed rate to the thresholds when the case says strict = false",
        function()
        local loose = { strict = false }
        local degraded = { ok = false, status = "degraded", case = loose }
        local missed = { ok = false, status = "degraded", rate_met = false, case = loose }
        local missed_ok = { ok = true, status = "ok", rate_met = false, case = loose }
        assert.are.equal(0, status.exit_code({ degraded, missed, missed_ok }))
        -- nothing measured is still a failure: there is nothing to judge
        assert.are.equal(1, status.exit_code({ degraded, { ok = false, status = "failed", case = loose } }))
        assert.are.equal(1, status.exit_code({ { ok = false, status = "crashed", case = loose } }))
        assert.are.equal(130, status.exit_code({ degraded, { status = "interrupted", case = loose } }))
        -- strict by default; rate_strict = false spares the rate alone
        assert.are.equal(1, status.exit_code({ { ok = false, status = "degraded", case = {} } }))
        assert.are.equal(1, status.exit_code({ { ok = false, status = "degraded", rate_met = false,
                                                 case = { rate_strict = false } } }))
        assert.is_false(status.strict(degraded))
        assert.is_true(status.strict({ case = {} }))
        assert.is_true(status.strict({}))
    end)

    it("counts replies outside the success set in the error rate", function()
        assert.are.equal(0.5, status.error_rate({ sent = 100, timed_out = 10, message_errors = 10,
                                                  non_success = 30 }))
    end)
end)

describe("statuses of an older arkbench", function()
    it("reads status \"error\" as failed", function()
        assert.are.equal("failed", status.of({ ok = false, status = "error" }))
        assert.is_false(status.measured({ ok = false, status = "error" }))
        assert.is_true(status.measured({ ok = false, status = "degraded" }))
        assert.are.equal("ok", status.of({ ok = true }))
    end)

    it("turns \"error\" into \"failed\" when reading runs.jsonl, and refuses an unknown status", function()
        local d = files.tmpdir()
        local line = '{"schema_version":1,"case_id":"default","repetition":1,"ok":false,'
            .. '"status":"error","error":"boom"}\n'
        files.write_file(d .. "/runs.jsonl", line)
        local runs = assert(runfile.read(d .. "/runs.jsonl"))
        assert.are.equal("failed", runs[1].status)
        files.write_file(d .. "/bad.jsonl", (line:gsub('"error","error"', '"broken","error"')))
        local none, err = runfile.read(d .. "/bad.jsonl")
        assert.is_nil(none)
        assert.are.equal(d .. '/bad.jsonl:1: not a run object: status "broken" is none of ok, degraded,'
            .. " failed, timeout, crashed, interrupted, script_error", err)
    end)
end)

describe("a degraded run in the summary and the terminal table", function()
    local C = { payload = 64, clients = 100, window = 1, topology = "sharded:1", protocol = "tcp" }
    local function run(rep, st, rt, extra)
        local r = { case_id = "default", case = C, repetition = rep, ok = st == "ok", status = st,
                    round_trips_per_s = rt, rtt_us = { p50 = 10, p99 = 20 }, cpu_percent = 50,
                    rss_peak_bytes = 1048576, sent = 1000, timed_out = 0, message_errors = 0 }
        for k, v in pairs(extra or {}) do r[k] = v end
        return r
    end
    local REASON = "connection 0: read: connection reset by peer (ECONNRESET) after 50 replies on"
        .. " 127.0.0.1:40001"

    local function summary()
        return stats.summarize({
            run(1, "ok", 1000),
            run(2, "degraded", 3000, { message_errors = 1, error = REASON, errors = { ECONNRESET = 1 },
                                       reconnects = 1 }),
            run(3, "ok", 2000),
        }, {})
    end

    it("keeps its numbers in the medians and lists it with its classes", function()
        local s = summary()
        local c = s.cases[1]
        assert.are.equal(3, c.runs_ok)
        assert.are.equal(1, c.runs_degraded)
        assert.are.equal(1, s.runs_degraded)
        assert.are.equal(0, s.runs_failed)
        assert.are.equal(2000, c.metrics.round_trips_per_s.median)
        assert.are.equal(3000, c.metrics.round_trips_per_s.max)
        assert.are.equal(0, #c.failed)
        assert.are.same({ repetition = 2, status = "degraded", error = REASON, errors = { ECONNRESET = 1 },
                          timed_out = 0, message_errors = 1, reconnects = 1 }, c.degraded[1])
    end)

    it("marks round trips/s and gives the reason and classes whole under the row, within 80 columns", function()
        local t = report.terminal_table(summary())
        local ls = {}
        for l in t:gmatch("([^\n]*)\n") do ls[#ls + 1] = l end
        assert.matches("^2,000 %[1,000, 3,000%]#", ls[3])
        assert.are.equal("  # degraded (rep 2): connection 0: read: connection reset by peer (ECONNRESET)", ls[4])
        assert.are.equal("    after 50 replies on 127.0.0.1:40001; errors: ECONNRESET 1; reconnects 1", ls[5])
        assert.are.equal("# degraded: some run had errors, timeouts or reconnects; its numbers are kept", ls[6])
        for i = 4, #ls do assert.is_true(#ls[i] <= 80, ls[i]) end
    end)

    it("is the same from a summary read back from summary.json", function()
        local s = summary()
        assert.are.equal(report.terminal_table(s), report.terminal_table(json.decode(json.encode(s))))
    end)
end)

describe("report.wrap", function()
    it("breaks at blanks within the width, and inside a word only when it alone is too long", function()
        assert.are.same({ "  aa bb", "    cc" }, report.wrap("aa bb cc", 8, "  ", "    "))
        assert.are.same({ "  abcdef", "    ghij", "    kl" }, report.wrap("abcdefghijkl", 8, "  ", "    "))
        assert.are.same({ "  " }, report.wrap("", 8, "  ", "    "))
    end)
end)
