-- arkbench.run.fds: the file descriptors one process of a case needs, and
-- what to say when the host does not allow them (docs/scenarios.md,
-- "Host limits").
--
--   fds.need(case[, processes]) -> descriptors per process
--   fds.fit(case, limit) -> the least processes (1 .. 64) whose need fits
--                           limit with placement = "split" (or target), or nil
--   fds.refusal(case, need, limit) -> the sentence
--
-- A connection has two ends (same-process), or one end in each side's
-- process (split; target: only the client end). With processes = N a
-- client process has its exact share, ceil(clients / N); the servers get
-- theirs from the kernel's SO_REUSEPORT hash, which spreads connections
-- binomially: 4 standard deviations of room over the share
-- (4 sqrt(clients / N)) cover it. Every process also keeps RESERVE
-- descriptors for itself (listeners, loops, pipes, files).

local format = string.format

local _M = {}

_M.RESERVE = 256
_M.MAX_PROCESSES = 64

function _M.need(case, processes)
    local clients = tonumber(case.clients) or 1
    local split = case.placement == "split"
    if not case.target and not split then return 2 * clients + _M.RESERVE end
    local n = processes or tonumber(case.processes) or 1
    local share = math.ceil(clients / n)
    local spread = (split and n > 1) and math.ceil(4 * math.sqrt(clients / n)) or 0
    return share + spread + _M.RESERVE
end

function _M.fit(case, limit)
    local c = {}
    for k, v in pairs(case) do c[k] = v end
    if not c.target then c.placement = "split" end
    for n = 1, math.min(_M.MAX_PROCESSES, tonumber(case.clients) or 1) do
        if _M.need(c, n) <= limit then return n end
    end
    return nil
end

function _M.refusal(case, need, limit)
    local split = case.placement == "split"
    local n = tonumber(case.processes) or 1
    local what = format("clients = %d%s", case.clients,
        split and (n > 1 and format(' (placement = "split", processes = %d)', n)
                   or ' (placement = "split")')
        or (case.target and n > 1 and format(" (processes = %d)", n) or ""))
    local fit = _M.fit(case, limit)
    local hint = ""
    if fit == 1 and not split and not case.target then
        hint = ', use placement = "split" (one end per process)'
    elseif fit and fit > n then
        hint = (split or case.target) and format(", use processes = %d", fit)
            or format(', use placement = "split" with processes = %d', fit)
    end
    return format("%s needs about %d file descriptors per process, but this host allows %d"
        .. " (ulimit -n; fs.nr_open); lower clients%s or raise the limit", what, need, limit, hint)
end

return _M
