-- bench/compare_builds.lua -- the summaries bench/compare_builds.sh prints:
-- old build vs new build, from the result folders and calibrate outputs
-- the script wrote. Plain LuaJIT + lua-cjson: it reads result files of
-- any arkbench build, so it depends on no module of either tree.
--
--   luajit bench/compare_builds.lua throughput OLD_DIR NEW_DIR
--       per-protocol round trips/s new/old (ratio of the medians over the
--       ok runs), the median of the layered protocols' ratios, tcp's, and
--       PASS/FAIL lines against the goals below.
--   luajit bench/compare_builds.lua calibrate DIR
--       DIR holds old-1.md, new-1.md, old-2.md, ... (calibrate's stdout):
--       each build's (a) throughput ratio and (b) RTT ratio ("median of
--       pair ratios" columns), their medians and whether new is no worse.
--   luajit bench/compare_builds.lua execution NEW_DIR [OLD_DIR]
--       coroutine/callback round trips/s in a folder with both executions
--       (the old build's ratio, if given, for context only).
--
-- Exit code: 0 printed (whatever the verdicts), 1 missing or unreadable
-- input, 2 wrong command line. The verdicts are printed, not the exit
-- code: timed results on a shared machine are evidence, not a test.
--
-- As a module (the spec): require'd or dofile'd it returns the functions
-- below and runs nothing.

local cjson = require("cjson")

local io, ipairs, pairs, tonumber, tostring, type = io, ipairs, pairs, tonumber, tostring, type
local format = string.format
local concat, sort = table.concat, table.sort

local M = {}

-- The goals of issue #9, acceptance 4.
M.LAYERED = { "tls", "ws", "wss", "http", "https" }
M.GOALS = {
    layered_median = 1.03, -- median of the LAYERED ratios, at least
    layered_min = 0.97,    -- no LAYERED ratio below
    tcp_min = 0.97,        -- tcp's ratio, at least
    execution_min = 0.95,  -- coroutine/callback, at least
}

-- Median of a list of numbers (mean of the middle two for an even count);
-- nil for an empty list.
function M.median(xs)
    local s = {}
    for i, x in ipairs(xs) do s[i] = x end
    local n = #s
    if n == 0 then return nil end
    sort(s)
    if n % 2 == 1 then return s[(n + 1) / 2] end
    return (s[n / 2] + s[n / 2 + 1]) / 2
end

-- Runs (decoded runs.jsonl lines) -> { [value of case[key]] = { rt/s of each ok run } }.
function M.throughputs_by(runs, key)
    local by = {}
    for _, r in ipairs(runs) do
        local case = type(r.case) == "table" and r.case or {}
        local v = case[key]
        local rt = r.round_trips_per_s
        if r.ok == true and v ~= nil and type(rt) == "number" and rt > 0 then
            v = tostring(v)
            by[v] = by[v] or {}
            by[v][#by[v] + 1] = rt
        end
    end
    return by
end

function M.read_runs(dir)
    local f, err = io.open(dir .. "/runs.jsonl", "rb")
    if not f then return nil, err end
    local runs = {}
    for line in f:lines() do
        if line:match("%S") then
            local ok, v = pcall(cjson.decode, line)
            if not ok or type(v) ~= "table" then
                f:close()
                return nil, dir .. "/runs.jsonl: a line is not a JSON object"
            end
            runs[#runs + 1] = v
        end
    end
    f:close()
    return runs
end

local function ratio_of_medians(a, b)
    local ma, mb = M.median(a or {}), M.median(b or {})
    if not (ma and mb) or ma <= 0 then return nil end
    return mb / ma
end

local function x(v) return v and format("%.3fx", v) or "n/a" end

local function verdict(ok, text)
    return (ok and "PASS  " or "FAIL  ") .. text
end

-- old_runs, new_runs -> { rows = { { protocol, old, new, ratio } }, lines = { text } }
-- rows follow `order` (protocols absent from both sides are skipped);
-- lines are the table and the PASS/FAIL lines, ready to print.
function M.throughput_summary(old_runs, new_runs, order)
    local a, b = M.throughputs_by(old_runs, "protocol"), M.throughputs_by(new_runs, "protocol")
    local seen, protos = {}, {}
    for _, p in ipairs(order or {}) do
        if (a[p] or b[p]) and not seen[p] then seen[p] = true; protos[#protos + 1] = p end
    end
    local extra = {}
    for _, side in ipairs({ a, b }) do
        for p in pairs(side) do
            if not seen[p] then seen[p] = true; extra[#extra + 1] = p end
        end
    end
    sort(extra)
    for _, p in ipairs(extra) do protos[#protos + 1] = p end

    local out, rows, ratios = {}, {}, {}
    out[#out + 1] = format("%-8s %16s %16s %10s", "protocol", "old rt/s", "new rt/s", "new/old")
    for _, p in ipairs(protos) do
        local r = ratio_of_medians(a[p], b[p])
        ratios[p] = r
        rows[#rows + 1] = { protocol = p, old = M.median(a[p] or {}), new = M.median(b[p] or {}), ratio = r }
        out[#out + 1] = format("%-8s %16s %16s %10s", p,
            a[p] and format("%.0f", M.median(a[p])) or "no ok run",
            b[p] and format("%.0f", M.median(b[p])) or "no ok run", x(r))
    end
    out[#out + 1] = "(median over each build's ok runs; ratio = new median / old median)"

    local layered, missing, low = {}, {}, {}
    for _, p in ipairs(M.LAYERED) do
        if ratios[p] then
            layered[#layered + 1] = ratios[p]
            if ratios[p] < M.GOALS.layered_min then low[#low + 1] = format("%s %.3f", p, ratios[p]) end
        else
            missing[#missing + 1] = p
        end
    end
    local med = M.median(layered)
    out[#out + 1] = format("median of %s: %s%s", concat(M.LAYERED, ", "), x(med),
        #missing > 0 and (" (no ratio for " .. concat(missing, ", ") .. ")") or "")
    out[#out + 1] = format("tcp: %s", x(ratios.tcp))
    local complete = #missing == 0
    out[#out + 1] = verdict(complete and med >= M.GOALS.layered_median,
        format("median of the layered protocols >= %.2f (%s)", M.GOALS.layered_median, x(med)))
    out[#out + 1] = verdict(complete and #low == 0,
        format("no layered protocol below %.2f%s", M.GOALS.layered_min,
            #low > 0 and (" (" .. concat(low, ", ") .. ")") or
            (complete and "" or " (some have no ratio)")))
    out[#out + 1] = verdict(ratios.tcp ~= nil and ratios.tcp >= M.GOALS.tcp_min,
        format("tcp >= %.2f (%s)", M.GOALS.tcp_min, x(ratios.tcp)))
    return { rows = rows, ratios = ratios, median = med, lines = out }
end

-- calibrate's Markdown (stdout) -> { throughput = n | nil, rtt = n | nil }:
-- the "median of pair ratios" (last column) of row (a) in the round
-- trips/s table and of row (b) in the RTT table.
function M.parse_calibrate(text)
    local got, table_kind = {}, nil
    for line in (text or ""):gmatch("[^\n]+") do
        if line:match("^| config |") then
            table_kind = line:match("RTT") and "rtt" or "throughput"
        elseif line:match("^| %(") and table_kind then
            local cells = {}
            for c in line:gmatch("|([^|]*)") do cells[#cells + 1] = c:match("^%s*(.-)%s*$") end
            if cells[#cells] == "" then cells[#cells] = nil end
            local label = cells[1]:match("^(%(%a%))")
            local v = tonumber(cells[#cells])
            if table_kind == "throughput" and label == "(a)" then got.throughput = v end
            if table_kind == "rtt" and label == "(b)" then got.rtt = v end
        elseif not line:match("^|") then
            table_kind = nil
        end
    end
    return got
end

-- { old = { parsed... }, new = { parsed... } } -> lines. Throughput: higher
-- is better; RTT ratio (arkbench p50 / floor mean): lower is better.
function M.calibrate_summary(old, new)
    local out = {}
    local function list(rs, k)
        local vs, txt = {}, {}
        for _, r in ipairs(rs) do
            if r[k] then vs[#vs + 1] = r[k] end
            txt[#txt + 1] = r[k] and format("%.2f", r[k]) or "n/a"
        end
        return vs, concat(txt, " ")
    end
    local med = {}
    for _, side in ipairs({ "old", "new" }) do
        local tv, tt = list(side == "old" and old or new, "throughput")
        local rv, rt = list(side == "old" and old or new, "rtt")
        med[side] = { throughput = M.median(tv), rtt = M.median(rv) }
        out[#out + 1] = format("%s: (a) throughput ratio %s [runs: %s]   (b) RTT ratio %s [runs: %s]",
            side, med[side].throughput and format("%.2f", med[side].throughput) or "n/a", tt,
            med[side].rtt and format("%.2f", med[side].rtt) or "n/a", rt)
    end
    out[#out + 1] = "(each run: calibrate's median of pair ratios, arkbench / floor; value: median over the runs)"
    local o, n = med.old, med.new
    out[#out + 1] = verdict(o.throughput and n.throughput and n.throughput >= o.throughput,
        format("(a) throughput ratio: new no worse than old (new %s, old %s)",
            n.throughput and format("%.2f", n.throughput) or "n/a",
            o.throughput and format("%.2f", o.throughput) or "n/a"))
    out[#out + 1] = verdict(o.rtt and n.rtt and n.rtt <= o.rtt,
        format("(b) RTT ratio: new no worse than old (new %s, old %s; lower is better)",
            n.rtt and format("%.2f", n.rtt) or "n/a", o.rtt and format("%.2f", o.rtt) or "n/a"))
    return { old = o, new = n, lines = out }
end

-- runs with execution = callback and coroutine -> ratio coroutine/callback, or nil.
function M.execution_ratio(runs)
    local by = M.throughputs_by(runs, "execution")
    return ratio_of_medians(by.callback, by.coroutine), by
end

function M.execution_summary(new_runs, old_runs)
    local out = {}
    local r, by = M.execution_ratio(new_runs)
    out[#out + 1] = format("new: callback %s rt/s, coroutine %s rt/s, coroutine/callback %s",
        by.callback and format("%.0f", M.median(by.callback)) or "no ok run",
        by.coroutine and format("%.0f", M.median(by.coroutine)) or "no ok run", x(r))
    if old_runs then
        out[#out + 1] = format("old: coroutine/callback %s (context only)", x((M.execution_ratio(old_runs))))
    end
    out[#out + 1] = verdict(r ~= nil and r >= M.GOALS.execution_min,
        format("new coroutine/callback >= %.2f (%s)", M.GOALS.execution_min, x(r)))
    return { ratio = r, lines = out }
end

local function read_text(path)
    local f = io.open(path, "rb")
    if not f then return nil end
    local s = f:read("*a")
    f:close()
    return s
end

local function print_lines(lines) io.stdout:write(concat(lines, "\n"), "\n") end

local USAGE = "usage: luajit bench/compare_builds.lua throughput OLD_DIR NEW_DIR\n"
    .. "       luajit bench/compare_builds.lua calibrate DIR\n"
    .. "       luajit bench/compare_builds.lua execution NEW_DIR [OLD_DIR]\n"

function M.main(args)
    local cmd = args[1]
    local function load(dir)
        local runs, err = M.read_runs(dir)
        if not runs then io.stderr:write("compare_builds: ", tostring(err), "\n") end
        return runs
    end
    if cmd == "throughput" and args[2] and args[3] then
        local a, b = load(args[2]), load(args[3])
        if not (a and b) then return 1 end
        print_lines(M.throughput_summary(a, b, { "tcp", "tls", "ws", "wss", "http", "https", "udp" }).lines)
        return 0
    elseif cmd == "calibrate" and args[2] then
        local sides = { old = {}, new = {} }
        for _, side in ipairs({ "old", "new" }) do
            for i = 1, 100 do
                local t = read_text(format("%s/%s-%d.md", args[2], side, i))
                if not t then break end
                sides[side][i] = M.parse_calibrate(t)
            end
        end
        if #sides.old == 0 or #sides.new == 0 then
            io.stderr:write("compare_builds: no old-N.md or new-N.md in ", args[2], "\n")
            return 1
        end
        print_lines(M.calibrate_summary(sides.old, sides.new).lines)
        return 0
    elseif cmd == "execution" and args[2] then
        local n = load(args[2])
        if not n then return 1 end
        local o = args[3] and load(args[3]) or nil
        if args[3] and not o then return 1 end
        print_lines(M.execution_summary(n, o).lines)
        return 0
    end
    io.stderr:write(USAGE)
    return 2
end

if type(arg) == "table" and type(arg[0]) == "string" and arg[0]:match("compare_builds%.lua$") then
    os.exit(M.main(arg))
end
return M
