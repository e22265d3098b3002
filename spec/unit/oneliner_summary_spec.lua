-- oneliner_summary_spec.lua -- the one-liner's flags for errors and bodies
-- (--ok-status, --no-strict, --no-strict-rate, -b @FILE, --body-file) and
-- its summary of a degraded HTTP run: non-success and status lines that add
-- up, Transfer/sec, the latency histogram in bars (report/bars.lua);
-- docs/one-liner.md.
local url = require("arkbench.cmd.url")
local bars = require("arkbench.report.bars")

local function tmpfile(text)
    local p = os.tmpname()
    local f = assert(io.open(p, "wb"))
    f:write(text)
    f:close()
    return p
end

describe("the one-liner's success set and strictness", function()
    it("reads --ok-status codes and classes into request.status", function()
        assert.same({ 404 }, url.parse_statuses("404"))
        local l = assert(url.parse_statuses("2xx,404"))
        assert.equals(101, #l)
        assert.equals(200, l[1])
        assert.equals(404, l[101])
        local none, why = url.parse_statuses("2xx,42")
        assert.is_nil(none)
        assert.truthy(why:find("'42' is not a status", 1, true), why)
        local o = assert(url.parse_args({ "http://127.0.0.1:8080/missing", "--ok-status", "2xx,404" }))
        local text = url.scenario(o)
        assert.truthy(text:find("status = { 200, 201,", 1, true), text)
        assert.truthy(text:find(", 299, 404 }", 1, true), text)
    end)

    it("writes strict = false for --no-strict and rate_strict = false for --no-strict-rate", function()
        local o = assert(url.parse_args({ "http://127.0.0.1:8080/", "--no-strict" }))
        assert.truthy(url.scenario(o):find("\n    strict = false,\n", 1, true))
        o = assert(url.parse_args({ "http://127.0.0.1:8080/", "-R", "100", "--no-strict-rate" }))
        local text = url.scenario(o)
        assert.truthy(text:find("\n    rate_strict = false,\n", 1, true), text)
        assert.is_nil(text:find("\n    strict = false", 1, true), text)
        local none, why = url.parse_args({ "tcp://127.0.0.1:7000", "--ok-status", "404" })
        assert.is_nil(none)
        assert.equals("--ok-status is for http:// and https:// URLs", why)
    end)

    it("reads the body from a file with -b @FILE and --body-file", function()
        local p = tmpfile("a\0b\n\"q\"")
        local o = assert(url.parse_args({ "http://127.0.0.1:8080/", "-m", "POST", "-b", "@" .. p }))
        assert.equals("a\0b\n\"q\"", o.body)
        local text = url.scenario(o)
        local chunk = assert(loadstring(text))()
        assert.equals("a\0b\n\"q\"", chunk.request.body)
        o = assert(url.parse_args({ "http://127.0.0.1:8080/", "--body-file", p }))
        assert.equals("a\0b\n\"q\"", o.body)
        local none, why = url.parse_args({ "http://127.0.0.1:8080/", "-b", "x", "--body-file", p })
        assert.is_nil(none)
        assert.truthy(why:find("exclude each other", 1, true), why)
        none, why = url.parse_args({ "http://127.0.0.1:8080/", "-b", "@/nonexistent/x" })
        assert.is_nil(none)
        assert.truthy(why:find("cannot read the body file", 1, true), why)
        os.remove(p)
    end)

    it("run --no-strict is --set strict=false, which every case takes", function()
        local cli = require("arkbench.cmd.cli")
        local o = assert(cli.parse_run_args({ "run", "x.lua", "--no-strict" }, 2))
        assert.same({ "strict=false" }, o.sets)
        local spec = assert(require("arkbench.scenario.load").load("spec/fixtures/scenarios/minimal.lua",
            o.sets))
        for _, c in ipairs(require("arkbench.scenario.matrix").expand(spec)) do
            assert.is_false(c.strict)
        end
    end)

    it("refuses a strict key that is not a boolean, naming file:line", function()
        local path = os.tmpname() .. ".lua"
        local f = assert(io.open(path, "w"))
        f:write('return {\n    protocol = "tcp",\n    strict = "no",\n}\n')
        f:close()
        local spec, err = require("arkbench.scenario.load").load(path)
        os.remove(path)
        assert.is_nil(spec)
        assert.truthy(err:find(path .. ":3: key 'strict': got string \"no\"; expected a boolean", 1, true), err)
    end)

    it("takes compound durations", function()
        local o = assert(url.parse_args({ "http://127.0.0.1:8080/", "-d", "1m30s", "--warmup", "1s500ms" }))
        assert.equals(90, o.duration)
        assert.equals(1.5, o.warmup)
    end)
end)

-- a histogram of n values of `us` µs each, plus one of `tail` µs
local function enc(n, us, tail)
    local function idx(ns)
        local msb = math.floor(math.log(ns) / math.log(2))
        return 128 + (msb - 7) * 64 + math.floor(ns / 2 ^ (msb - 6)) - 64
    end
    local a, b = idx(us * 1000), idx(tail * 1000)
    return ("ab1:%d:%d:%d:0:0:0:%d=%d,%d=1"):format(n + 1, us * 1000, tail * 1000, a, n, b - a)
end

describe("bars", function()
    it("regroups every value into bins of equal ratio, counts adding up", function()
        local b = assert(bars.bins(enc(1000, 100, 10000), 10))
        assert.equals(10, #b)
        local total = 0
        for _, x in ipairs(b) do total = total + x[3] end
        assert.equals(1001, total)
        assert.equals(1000, b[1][3])
        assert.equals(1, b[10][3])
        assert.is_true(math.abs(b[10][2] - 10000) < 1e-6)
    end)

    it("draws one line per bin, scaled to the largest, a value always visible", function()
        local lines = assert(bars.lines(enc(1000, 100, 10000), { width = 20, ascii = true }))
        assert.equals(10, #lines)
        assert.truthy(lines[1]:find("%[1000%] |" .. string.rep("#", 20) .. "$"), lines[1])
        assert.truthy(lines[10]:find("10.00ms %[   1%] |#$"), lines[10])
        assert.truthy(lines[5]:find("%[   0%] |$"), lines[5])
        assert.is_nil(bars.lines("nope"))
        assert.is_nil(bars.lines("ab1:0:0:0:0:0:0:"))
    end)
end)

describe("the summary of a degraded HTTP run", function()
    local o = assert(url.parse_args({ "http://127.0.0.1:8080/missing", "-c", "4" }))
    local run = {
        status = "degraded", ok = false, error = "52794 responses had a status outside the success set",
        completed = 52778, drained = 16, sent = 52794, timed_out = 0, message_errors = 0,
        non_success = 52794, measured_s = 10, round_trips_per_s = 5277.8,
        bytes_received = 16 * 1048576, bytes_sent = 1048576, transfer_mib_per_s = 1.6,
        errors = { ["HTTP 404"] = 52794 }, load_model = "closed", case = { duration = 10 },
        http = { status = { ["404"] = 52794 }, rtt_ok_us = { count = 0 } },
        rtt_histogram = enc(52793, 150, 9000),
    }

    it("prints every number: latency, non-success by status and class, statuses that add up", function()
        local text = url.summary_text(o, run, "DIR")
        assert.is_nil(text:find("FAILED", 1, true), text)
        assert.truthy(text:find("  52778 requests in 10.00s, 16.00MiB read, 0 timed out, 0 errors\n", 1, true), text)
        assert.truthy(text:find("  Non-success responses: 404 × 52,794 (4xx 52,794)\n", 1, true), text)
        assert.truthy(text:find("  Successful responses: 0, 0.00/s\n", 1, true), text)
        assert.truthy(text:find("  Status codes: 404 × 52,794 = 52,778 requests + 16 drained (replies after"
            .. " the deadline)\n", 1, true), text)
        assert.truthy(text:find("Requests/sec:    5277.80 (every response)\n", 1, true), text)
        assert.truthy(text:find("Transfer/sec:       1.60MiB\n", 1, true), text)
        assert.truthy(text:find("  Latency Histogram\n", 1, true), text)
        assert.truthy(text:find("\nstatus: degraded: ", 1, true), text)
    end)

    it("splits 200s from 404s and gives the successful ones' rate and latency", function()
        local r = {}
        for k, v in pairs(run) do r[k] = v end
        r.non_success, r.errors = 26000, { ["HTTP 404"] = 26000, ["HTTP 503"] = 10 }
        r.http = { status = { ["200"] = 26784, ["404"] = 26000, ["503"] = 10 },
                   rtt_ok_us = { count = 26774, p50 = 120, p90 = 200, p99 = 400, max = 900, mean = 130 } }
        local n = url.numbers(r)
        assert.equals(26774, n.success.requests)
        assert.equals(2677.4, n.success.requests_per_s)
        local text = url.summary_text(o, r, "DIR")
        assert.truthy(text:find("Non-success responses: 404 × 26,000, 503 × 10 (4xx 26,000, 5xx 10)", 1, true), text)
        assert.truthy(text:find("Successful responses: 26,774, 2677.40/s, latency p50 120.00us  p99 400.00us"
            .. "  max 900.00us", 1, true), text)
        assert.truthy(text:find("Status codes: 200 × 26,784, 404 × 26,000, 503 × 10 = 52,778 requests + 16"
            .. " drained", 1, true), text)
    end)
end)
