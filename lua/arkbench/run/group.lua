-- arkbench.run.group: the client side of a case as N processes
-- (processes = N; docs/scenarios.md, docs/run-object.md "Processes").
--
--   group.share(clients, n, i) -> connections of part i (1-based)
--   group.part_case(case, n, i, extra) -> the case part i runs
--   group.run_clients(o) -> parts | nil, err
--       o = { exe, path, sets, quick, repetition, case, extra, n, plan }
--
-- Part i is `arkbench worker ... --part i/N` with the case's connections
-- i-1, i-1+N, i-1+2N, ... (their ids are the case's: message headers,
-- the open-loop phases and the source addresses follow them) and its
-- share of `rate` (`connect_rate` by id, on the case's schedule). The parts start together; each connects, says
-- "sync 1" on its result channel and waits; once every part still
-- running is there, each is told on its stdin "go T" -- one
-- CLOCK_MONOTONIC time for all, a little ahead -- and begins its warm-up
-- at T; after the warm-up drained the same again ("sync 2"), and the
-- measure phase starts at the second T in every part: one start, one
-- deadline, aligned intervals. A part that ends before a barrier (it
-- could not connect) leaves it. parts[i] is part i's run object, or one
-- written for it (status "crashed") when it wrote none.

local core = require("arkbench.core")
local json = require("arkbench.util.json")

local ipairs, pairs, tostring, tonumber = ipairs, pairs, tostring, tonumber
local format = string.format

local _M = {}

-- ns between the last part's arrival at a barrier and the common start
_M.LEAD_NS = 20e6

function _M.share(clients, n, i)
    if i > clients then return 0 end
    return math.floor((clients - i) / n) + 1
end

function _M.part_case(case, n, i, extra)
    local c = {}
    for k, v in pairs(case) do c[k] = v end
    local share = _M.share(case.clients, n, i)
    c.clients = share
    -- a shard's case (run/shard.lua) is already a range of the case's
    -- ids, id_base .. id_base + clients - 1 of clients_total: its parts
    -- split that range again
    c.clients_total = case.clients_total or case.clients
    c.id_base, c.id_stride = (case.id_base or 0) + i - 1, n
    if type(case.rate) == "number" then c.rate = case.rate * share / case.clients end
    -- connect_rate stays the case's: a connect is due at its id / rate
    -- (engine.c connect_due_at), so the parts' connects interleave on one
    -- schedule, client i at i / connect_rate; a share of the rate with
    -- those ids spaced them N times too far apart
    for k, v in pairs(extra or {}) do c[k] = v end
    return c
end

-- argv of part i, and the function removing its case file | nil, error
local function argv_of(o, i)
    local part = _M.part_case(o.case, o.n, i, o.extra)
    local cargs, done = require("arkbench.run.casearg").args(json.encode(part))
    if not cargs then return nil, done end
    local argv = { o.exe, "worker", o.path, cargs[1], cargs[2],
                   "--repetition", tostring(o.repetition or 1), "--part", i .. "/" .. o.n }
    for _, kv in ipairs(o.sets or {}) do
        argv[#argv + 1] = "--set"
        argv[#argv + 1] = kv
    end
    if o.quick then argv[#argv + 1] = "--quick" end
    return argv, done
end

local function forward(h, i, n)
    for _, line in ipairs(h:lines("stdout")) do io.stdout:write(line, "\n") end
    for _, line in ipairs(h:lines("stderr")) do
        io.stderr:write(format("process %d/%d: %s\n", i, n, line))
    end
end

-- the part's own run object, or one that says how it ended
local function result_of(h, last, i, n)
    local obj = last and json.decode(last)
    if type(obj) == "table" and type(obj.ok) == "boolean" then return obj end
    local st = h:state() or {}
    local how = st.term_signal and ("was killed by " .. st.term_signal)
        or ("exited with code " .. tostring(st.exit_code))
    local tail = h:text("stderr"):sub(-500)
    return { ok = false, status = "crashed", signal = st.term_signal or json.null,
             error = format("process %d of %d %s without a run object; its stderr ends: %s",
                            i, n, how, tail) }
end

-- CLOCK_MONOTONIC ns of the next phase: a little ahead of now, or on a
-- shard's wall-clock plan (o.plan: measure_unix_us, lead_s; stage 1 is
-- the warm-up, lead_s before the measure phase) when that is later
local function start_at(plan, stage)
    local soon = core.now_ns() + _M.LEAD_NS
    if not plan then return soon end
    local want_us = plan.measure_unix_us - (stage == 1 and plan.lead_s * 1e6 or 0)
    local t = core.now_ns() + (want_us - core.wall_s() * 1e6) * 1e3
    return t > soon and t or soon
end

function _M.run_clients(o)
    -- the parts write no live line (ARKBENCH_PROGRESS_FD: each would show
    -- only its share)
    local env = { "ARKBENCH_RESULT_FD=3", "ARKBENCH_ORCHESTRATOR_PID=" .. tostring(core.getpid()),
                  "ARKBENCH_PROGRESS_FD=" }
    local kids, stage, last, cleanups = {}, {}, {}, {}
    local function clean()
        for _, f in ipairs(cleanups) do f() end
    end
    for i = 1, o.n do
        local argv, done = argv_of(o, i)
        local h, err
        if argv then
            cleanups[#cleanups + 1] = done
            h, err = core.child_start(argv, { stdin = true, env = env })
        else
            err = done
        end
        if not h then
            for _, k in ipairs(kids) do k:close() end
            clean()
            return nil, format("processes: cannot start process %d of %d: %s", i, o.n, err)
        end
        kids[i], stage[i] = h, 0
    end
    local released, term_sent = 0, false
    while true do
        core.child_poll(kids, 0.05)
        local running = 0
        for i, h in ipairs(kids) do
            for _, l in ipairs(h:lines("channel")) do
                local s = l:match("^sync (%d+)$")
                if s then stage[i] = tonumber(s) elseif l:match("%S") then last[i] = l end
            end
            forward(h, i, o.n)
            if not h:state() then running = running + 1 end
        end
        -- a barrier opens when every part still running has reached it
        if released < 2 and running > 0 then
            local want, all = released + 1, true
            for i, h in ipairs(kids) do
                if not h:state() and stage[i] < want then all = false end
            end
            if all then
                local go = format("go %.0f\n", start_at(o.plan, want))
                for _, h in ipairs(kids) do
                    if not h:state() then h:write(go) end
                end
                released = want
            end
        end
        if core.interrupted() and not term_sent then
            -- each part ends its measurement and writes what it measured
            for _, h in ipairs(kids) do h:signal("TERM") end
            term_sent = true
        end
        if running == 0 then break end
    end
    local parts = {}
    for i, h in ipairs(kids) do
        core.child_poll({ h }, 0)
        for _, l in ipairs(h:lines("channel")) do
            if l:match("%S") and not l:match("^sync %d+$") then last[i] = l end
        end
        forward(h, i, o.n)
        parts[i] = result_of(h, last[i], i, o.n)
        parts[i].pid = h:pid()
        h:close()
    end
    clean()
    return parts
end

return _M
