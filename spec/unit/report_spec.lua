local report = require("arkbench.report.report")
local stats = require("arkbench.report.stats")
local json = require("arkbench.util.json")

-- f = { round trips/s, MiB/s, p50 µs, p99 µs, CPU %, RSS bytes }
local function run(id, case, rep, f)
    return {
        case_id = id, case = case, repetition = rep, ok = true, status = "ok",
        round_trips_per_s = f[1], payload_mib_per_s = f[2], rtt_us = { p50 = f[3], p99 = f[4] },
        cpu_percent = f[5], rss_peak_bytes = f[6],
    }
end

local function failed(id, case, rep, status, err, signal)
    return {
        case_id = id, case = case, repetition = rep, ok = false, status = status,
        error = err or json.null, signal = signal or json.null,
    }
end

local C1 = { payload = 64, clients = 1, window = 1, topology = "sharded:1", protocol = "tcp" }
local C2 = { payload = 1024, clients = 16, window = 16, topology = "shared:4", protocol = "tcp" }
local C3 = { payload = 16384, clients = 16, window = 16, topology = "sharded:1", protocol = "tcp" }

local function summary()
    return stats.summarize({
        run("a", C1, 1, { 48213.7, 2.94, 19.84, 31.02, 99.6, 9437184 }),
        run("b", C2, 1, { 1234567.4, 1205.6, 210.4, 1890.5, 387.2, 26214400 }),
        failed("c", C3, 1, "timeout", "worker exceeded 31 s", "SIGKILL"),
        run("a", C1, 2, { 51022.1, 3.11, 18.7, 29.5, 98.1, 9437184 }),
        run("b", C2, 2, { 1198034.9, 1169.96, 215.0, 2011.0, 390.0, 26738688 }),
        failed("c", C3, 2, "timeout", "worker exceeded 31 s", "SIGKILL"),
        run("a", C1, 3, { 50001.0, 3.05, 19.1, 30.0, 99.0, 9699328 }),
        failed("b", C2, 3, "crashed", nil, "SIGSEGV"),
    }, { scenario = "tcp" })
end

local EXPECTED = table.concat({
    "payload  clients  window  topology                      round trips/s    MiB/s  p50 µs  p99 µs  CPU %  RSS MiB  runs",
    "-------  -------  ------  ---------  --------------------------------  -------  ------  ------  -----  -------  ----",
    "     64        1       1  sharded:1     50,001 [   48,214,    51,022]      3.0    19.1    30.0     99      9.0   3/3",
    "   1024       16      16  shared:4   1,216,301 [1,198,035, 1,234,567]  1,187.8     213   1,951    389     25.3   2/3",
    "  16384       16      16  sharded:1  FAILED (timeout: worker exceeded 31 s (SIGKILL))                            0/2",
    "",
}, "\n")

local function chars(s)
    local _, cont = s:gsub("[\128-\191]", "")
    return #s - cont
end

local function lines(s)
    local out = {}
    for line in s:gmatch("([^\n]*)\n") do out[#out + 1] = line end
    return out
end

describe("report formatters", function()
    it("groups thousands with ',' and rounds counts to integers", function()
        assert.are.equal("0", report.format_count(0.4))
        assert.are.equal("999", report.format_count(999))
        assert.are.equal("1,000", report.format_count(999.5))
        assert.are.equal("1,234,567", report.format_count(1234567.4))
        assert.are.equal("-12,345", report.format_count(-12345))
    end)

    it("writes µs with one decimal below 100 and none from 100", function()
        assert.are.equal("0.0", report.format_us(0))
        assert.are.equal("19.8", report.format_us(19.84))
        assert.are.equal("99.9", report.format_us(99.94))
        assert.are.equal("100", report.format_us(99.96))
        assert.are.equal("213", report.format_us(212.7))
        assert.are.equal("12,346", report.format_us(12345.6))
    end)

    it("writes fixed decimals, without a minus zero", function()
        assert.are.equal("1,187.8", report.format_fixed(1187.78, 1))
        assert.are.equal("0.0", report.format_fixed(-0.01, 1))
        assert.are.equal("3", report.format_fixed(2.5001, 0))
    end)

    it("writes '-' for missing values", function()
        assert.are.equal("-", report.format_count(nil))
        assert.are.equal("-", report.format_us(json.null))
        assert.are.equal("-", report.format_fixed(0 / 0, 1))
    end)
end)

describe("report.axes", function()
    it("lists the case keys that differ, in axis order", function()
        assert.are.same({ "payload", "clients", "window", "topology" }, report.axes(summary()))
    end)

    it("is empty for one case", function()
        local s = stats.summarize({ run("a", C1, 1, { 1, 1, 1, 1, 1, 1 }) }, {})
        assert.are.same({}, report.axes(s))
    end)

    it("counts a key present in one case only as varying", function()
        local s = stats.summarize({
            run("a", { payload = 64 }, 1, { 1, 1, 1, 1, 1, 1 }),
            run("b", { payload = 64, rate = 1000 }, 1, { 1, 1, 1, 1, 1, 1 }),
        }, {})
        assert.are.same({ "rate" }, report.axes(s))
    end)

    it("shows target when the cases are against different servers", function()
        local s = stats.summarize({
            run("a", { payload = 64, target = "127.0.0.1:7000" }, 1, { 1, 1, 1, 1, 1, 1 }),
            run("b", { payload = 64, target = "127.0.0.1:7001" }, 1, { 1, 1, 1, 1, 1, 1 }),
        }, {})
        assert.are.same({ "target" }, report.axes(s))
        assert.truthy(report.terminal_table(s):find("127.0.0.1:7001", 1, true))
    end)

    it("shows every key that varies, not only the usual axes (requests_per_connection)", function()
        local s = stats.summarize({
            run("a", { protocol = "tcp", requests_per_connection = 1, duration = 1, index = 1 }, 1,
                { 1, 1, 1, 1, 1, 1 }),
            run("b", { protocol = "tcp", requests_per_connection = 100, duration = 2, index = 2 }, 1,
                { 2, 2, 2, 2, 2, 2 }),
        }, {})
        assert.are.same({ "duration", "requests_per_connection" }, report.axes(s))
        local t = lines(report.terminal_table(s))
        assert.truthy(t[1]:find("^duration  requests_per_connection "), t[1])
        assert.truthy(t[3]:find("^       1                        1 "), t[3])
        assert.truthy(t[4]:find("^       2                      100 "), t[4])
    end)
end)

describe("report.terminal_table", function()
    it("prints median [min, max] and medians, one row per case", function()
        assert.are.equal(EXPECTED, report.terminal_table(summary()))
    end)

    it("lines the columns up", function()
        local ls = lines(report.terminal_table(summary()))
        assert.are.equal(5, #ls)
        for i = 2, #ls do
            assert.are.equal(chars(ls[1]), chars(ls[i]), "line " .. i)
        end
        -- a right-aligned column: its header and its values end on the same
        -- character, followed by the column gap (or the end of the line)
        local function char_at(line, n)
            local i = 0
            for ch in line:gmatch("[^\128-\191][\128-\191]*") do
                i = i + 1
                if i == n then return ch end
            end
            return ""
        end
        local head = ls[1]
        for _, title in ipairs({ "round trips/s", "MiB/s", "p50 µs", "p99 µs", "CPU %", "RSS MiB", "runs" }) do
            local _, e = head:find(title, 1, true)
            local col_end = chars(head:sub(1, e))
            for i = 3, 4 do
                assert.matches("^[%d%]]$", char_at(ls[i], col_end), title .. " in line " .. i)
                assert.matches("^ ?$", char_at(ls[i], col_end + 1), title .. " in line " .. i)
            end
        end
    end)

    it("shows FAILED with status and error for a case without an ok run", function()
        local out = report.terminal_table(summary())
        assert.matches("16384       16      16  sharded:1  FAILED %(timeout: worker exceeded 31 s %(SIGKILL%)%)%s+0/2\n",
            out)
        local s = stats.summarize({ failed("x", C1, 1, "crashed", nil, "SIGSEGV") }, {})
        assert.matches("FAILED %(crashed: SIGSEGV%)%s+0/1\n$", report.terminal_table(s))
    end)

    it("puts a long failure text whole under its row, wrapped at 80, widening no column, UTF-8", function()
        local long = "ECONNREFUSED \226\128\148 connection refused\nconnecting to 127.0.0.1:40001 "
            .. string.rep("x", 80)
        local s = stats.summarize({
            run("a", C1, 1, { 1000, 1, 10, 20, 50, 1048576 }),
            failed("b", C2, 1, "failed", long),
        }, {})
        local ls = lines(report.terminal_table(s))
        local alone = lines(report.terminal_table(stats.summarize({
            run("a", C1, 1, { 1000, 1, 10, 20, 50, 1048576 }) }, {})))
        -- the number columns are as wide as without the failed case
        assert.are.equal(alone[1]:match("round trips/s.*$"), ls[1]:match("round trips/s.*$"))
        assert.are.equal("  FAILED (failed: ECONNREFUSED \226\128\148 connection refused connecting to", ls[5])
        assert.are.equal("    127.0.0.1:40001", ls[6])
        assert.are.equal("    " .. string.rep("x", 76), ls[7])
        assert.are.equal("    xxxx)", ls[8])
        assert.are.equal(8, #ls)
        assert.truthy(ls[4]:find("^   1024       16      16  shared:4   FAILED %(failed, below%)%s+0/1$"), ls[4])
        assert.are.equal(chars(ls[1]), chars(ls[4]))
        assert.are.equal(chars(ls[1]), chars(ls[3]))
        for _, l in ipairs(ls) do
            assert.are.equal(l, report.printable(l)) -- valid UTF-8, no control characters
        end
    end)

    it("prints non-ASCII labels as they are, columns aligned by characters", function()
        local s = stats.summarize({
            run("a", { label = "gr\195\182\195\159e", payload = 64 }, 1, { 1000, 1, 10, 20, 50, 1048576 }),
            run("b", { label = "\230\151\165\230\156\172", payload = 64 }, 1, { 1000, 1, 10, 20, 50, 1048576 }),
        }, {})
        local ls = lines(report.terminal_table(s))
        assert.truthy(ls[3]:find("^gr\195\182\195\159e  "), ls[3])
        assert.truthy(ls[4]:find("^\230\151\165\230\156\172     "), ls[4])
        assert.are.equal(chars(ls[1]), chars(ls[3]))
        assert.are.equal(chars(ls[3]), chars(ls[4]))
        -- control characters and bytes that are no UTF-8 show as "?"
        assert.are.equal("a?b?c??d", report.printable("a\tb\255c\192\175d"))
        assert.are.equal("x?y", report.printable("x\194\133y")) -- C1 control NEL
        assert.are.equal("\240\159\152\128", report.printable("\240\159\152\128"))
    end)

    it("prints the same table from a summary read back from JSON", function()
        local s = summary()
        assert.are.equal(report.terminal_table(s),
            report.terminal_table(json.decode(json.encode(s))))
    end)

    it("uses the axes it is given", function()
        local ls = lines(report.terminal_table(summary(), { "topology", "payload" }))
        assert.are.equal(
            "topology   payload                     round trips/s    MiB/s  p50 µs  p99 µs  CPU %  RSS MiB  runs", ls[1])
        assert.are.equal(
            "sharded:1       64     50,001 [   48,214,    51,022]      3.0    19.1    30.0     99      9.0   3/3", ls[3])
    end)

    it("has no axis columns for a single case and a case column when no axis differs", function()
        local one = stats.summarize({ run("a", C1, 1, { 1000, 1, 10, 20, 50, 1048576 }) }, {})
        assert.are.equal(table.concat({
            "       round trips/s  MiB/s  p50 µs  p99 µs  CPU %  RSS MiB  runs",
            "--------------------  -----  ------  ------  -----  -------  ----",
            "1,000 [1,000, 1,000]    1.0    10.0    20.0     50      1.0   1/1",
            "",
        }, "\n"), report.terminal_table(one))
        local same = stats.summarize({
            run("tls=1", C1, 1, { 1000, 1, 10, 20, 50, 1048576 }),
            run("tls=2", C1, 1, { 2000, 1, 10, 20, 50, 1048576 }),
        }, {})
        local ls = lines(report.terminal_table(same))
        assert.matches("^case ", ls[1])
        assert.matches("^tls=1 ", ls[3])
        assert.matches("^tls=2 ", ls[4])
    end)

    it("prints only the header for no cases", function()
        local out = report.terminal_table(stats.summarize({}, {}))
        assert.are.equal(2, #lines(out))
    end)
end)

describe("report.terminal_table of a tagged case", function()
    -- two runs with tags (no histograms: the merged percentiles are set
    -- on the summary below)
    local function tagged_summary(long)
        local rs = {}
        for rep = 1, 2 do
            local r = run("a", C1, rep, { 50000 + rep, 3.0, 19.0, 30.0, 99.0, 9437184 })
            r.tags = {
                get = { sent = 900, warmup_sent = 10, completed = 900, drained = 0, errors = 0,
                    round_trips_per_s = 45000 + rep },
                [long] = { sent = 100, warmup_sent = 1, completed = 97, drained = 0, errors = 3,
                    round_trips_per_s = 4850 },
            }
            rs[#rs + 1] = r
        end
        local s = stats.summarize(rs, { scenario = "t" })
        -- percentiles as the merge would give them
        for _, t in ipairs(s.cases[1].tags) do
            t.rtt_merged_us = t.tag == "get" and { p50 = 12.34, p99 = 250.6 } or { p50 = 1500, p99 = 98765 }
        end
        return s
    end

    it("prints a line per tag under the case's row: rt/s, p50, p99 (errors when not 0), within 80 columns", function()
        local long = string.rep("x", 48)
        local ls = lines(report.terminal_table(tagged_summary(long)))
        assert.are.equal("  tag get: 45,002 rt/s, p50 12.3 µs, p99 251 µs", ls[4])
        -- wrapped at a blank between parts, never between a number and its unit
        assert.are.equal("  tag " .. long .. ": 4,850 rt/s,", ls[5])
        assert.are.equal("    p50 1,500 µs, p99 98,765 µs, errors 6", ls[6])
        assert.are.equal(6, #ls)
        for i = 4, #ls do assert.is_true(chars(ls[i]) <= 80, ls[i]) end
    end)

    it("prints no tag line for a case without tags", function()
        local t = report.terminal_table(summary())
        assert.falsy(t:find("tag ", 1, true))
    end)
end)
