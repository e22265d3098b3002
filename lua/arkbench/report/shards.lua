-- arkbench.report.shards: what report.md and report.html say of a folder
-- `arkbench merge` wrote (docs/distributed.md, docs/reports.md "A merged
-- folder"): how many shards, on which hosts, the start skew per case, the
-- shards missing, and each shard's CPU (machine % is its own host's: a
-- merge over several hosts has no one machine to divide by).
--
--   shards.of(env, runs) -> info | nil (nil: not a merged folder)
--       info = { count, hosts = {name...}, multi_host, missing = {index...},
--                rows = { {shard, host, runs, measured, statuses, cpu,
--                          machine} }, skew = { {case_id, us} } }
--   shards.sentence(info) -> "Merged by `arkbench merge` from 3 shards on
--       2 hosts (a, b); missing: shard 2."
--   shards.HEADER, shards.cells(info) -> the shards table (one row a shard)
--   shards.SKEW_HEADER, shards.skew_cells(info) -> start skew per case
--   shards.CPU_NOTE: the sentence on machine % for several hosts

local ipairs, pairs, type, tostring = ipairs, pairs, type, tostring
local format, concat = string.format, table.concat

local _M = {}

local function num(v) return type(v) == "number" and v == v and v or nil end

function _M.of(env, runs)
    local rs = type(env) == "table" and type(env.run_settings) == "table" and env.run_settings or {}
    local n = num(rs.merged_shards)
    if not n or n < 1 then return nil end
    local info = { count = n, hosts = {}, missing = {}, rows = {}, skew = {} }
    for i = 0, n - 1 do
        info.rows[i + 1] = { shard = i, host = "-", runs = 0, measured = 0, statuses = {}, given = false }
    end
    local seen_host = {}
    for _, s in ipairs(type(env.shards) == "table" and env.shards or {}) do
        local row = type(s) == "table" and num(s.shard) and info.rows[s.shard + 1]
        if row then
            row.given = true
            if type(s.hostname) == "string" then
                row.host = s.hostname
                if not seen_host[s.hostname] then
                    seen_host[s.hostname] = true
                    info.hosts[#info.hosts + 1] = s.hostname
                end
            end
        end
    end
    for _, row in ipairs(info.rows) do
        if not row.given then info.missing[#info.missing + 1] = row.shard end
    end
    info.multi_host = #info.hosts > 1
    local order, skew = {}, {}
    for _, r in ipairs(type(runs) == "table" and runs or {}) do
        for _, sh in ipairs(type(r.shards) == "table" and r.shards or {}) do
            local row = type(sh) == "table" and num(sh.shard) and info.rows[sh.shard + 1]
            if row then
                row.runs = row.runs + 1
                local st = tostring(sh.status)
                if st == "ok" or st == "degraded" then row.measured = row.measured + 1 end
                if st ~= "ok" then row.statuses[st] = (row.statuses[st] or 0) + 1 end
                local cpu, machine = num(sh.cpu_percent), num(sh.cpu_machine_percent)
                if cpu and (not row.cpu or cpu > row.cpu) then row.cpu = cpu end
                if machine and (not row.machine or machine > row.machine) then row.machine = machine end
            end
        end
        local id, s = tostring(r.case_id), num(r.start_skew_us)
        if skew[id] == nil then order[#order + 1] = id; skew[id] = false end
        if s and (not skew[id] or s > skew[id]) then skew[id] = s end
    end
    for _, id in ipairs(order) do info.skew[#info.skew + 1] = { id, skew[id] or nil } end
    return info
end

function _M.sentence(info)
    local missing = {}
    for _, i in ipairs(info.missing) do missing[#missing + 1] = "shard " .. i end
    return format("Merged by `arkbench merge` from %d shards on %d host%s (%s)%s.", info.count, #info.hosts,
                  #info.hosts == 1 and "" or "s", concat(info.hosts, ", "),
                  #missing > 0 and ("; missing (no folder given): " .. concat(missing, ", ")) or "")
end

_M.CPU_NOTE = "The shards ran on several hosts: CPU % sums the shards' processes, and machine % is"
    .. " left out (no one machine to divide by); each shard's own, on its host, is in the Shards table."

_M.HEADER = { { "shard", true }, { "host", false }, { "runs measured", true }, { "not ok", false },
              { "CPU % (max)", true }, { "machine % (max)", true } }

function _M.cells(info)
    local rows = {}
    for _, row in ipairs(info.rows) do
        local bad = {}
        for st, k in pairs(row.statuses) do bad[#bad + 1] = format("%s %d", st, k) end
        table.sort(bad)
        if not row.given then bad = { "missing (no folder given)" } end
        rows[#rows + 1] = {
            tostring(row.shard), row.host, format("%d/%d", row.measured, row.runs),
            #bad > 0 and concat(bad, ", ") or "-",
            row.cpu and format("%.0f", row.cpu) or "-", row.machine and format("%.1f", row.machine) or "-",
        }
    end
    return rows
end

_M.SKEW_HEADER = { { "case", false }, { "start skew µs (max)", true } }

function _M.skew_cells(info)
    local rows = {}
    for _, s in ipairs(info.skew) do
        rows[#rows + 1] = { s[1], s[2] and format("%.0f", s[2]) or "-" }
    end
    return rows
end

_M.NOTE = "Each shard's runs in this folder: how many measured (ok or degraded) of those merged, the"
    .. " statuses other than ok, and the largest CPU % and machine % (its own host's) of its runs."
    .. " Start skew: the largest, over a case's repetitions, of max - min of the shards' measure starts."


return _M
