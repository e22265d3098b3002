-- exports.lua -- the files a result folder gets on request: --csv, --hgrm,
-- --openmetrics (docs/reports.md, "Exports"), the same from `arkbench
-- report DIR`, `arkbench run` and the one-liner.
--
--   exports.write(dir, runs, summary, want, out) -> true | nil, err
--       want: { csv = bool, hgrm = bool, openmetrics = bool }; each
--       export asked for writes its files and says so on `out` (a file,
--       default stderr): "wrote DIR/runs.csv, ... and DIR/intervals.csv";
--       each is attempted even when one before it failed; any failure:
--       nil, "the CSV files: DIR/runs.csv: ENOSPC: ...; the .hgrm files:
--       ..." (every failure, "; " between; a write failure: exit 1).
--   exports.any(want) -> bool

local format, concat = string.format, table.concat
local ipairs, tostring = ipairs, tostring

local _M = {}

local LIST = {
    { "csv", "the CSV files", function(dir, runs, summary)
        local paths, err = require("arkbench.report.csv").write(dir, runs, summary)
        if not paths then return nil, err end
        return "wrote " .. concat(paths, ", ", 1, #paths - 1) .. " and " .. paths[#paths]
    end },
    { "hgrm", "the .hgrm files", function(dir, runs, summary)
        local paths, err = require("arkbench.report.hgrm").write(dir, runs, summary)
        return paths and format("wrote %d .hgrm file%s in %s/hgrm", #paths,
            #paths == 1 and "" or "s", dir), err
    end },
    { "openmetrics", "the OpenMetrics file", function(dir, _, summary)
        local path, err = require("arkbench.report.openmetrics").write(dir, summary)
        return path and ("wrote " .. path), err
    end },
}

function _M.any(want)
    for _, e in ipairs(LIST) do
        if want[e[1]] then return true end
    end
    return false
end

function _M.write(dir, runs, summary, want, out)
    out = out or io.stderr
    local failed = {}
    for _, e in ipairs(LIST) do
        if want[e[1]] then
            local said, err = e[3](dir, runs, summary)
            if said then
                out:write(said, "\n")
            else
                failed[#failed + 1] = e[2] .. ": " .. tostring(err)
            end
        end
    end
    if #failed > 0 then return nil, concat(failed, "; ") end
    return true
end

return _M
