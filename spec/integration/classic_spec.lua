-- classic_spec.lua -- issue 15 acceptance 4: `arkbench run
-- scenarios/classic.lua --quick` runs every case of the classic study ok,
-- 4-byte messages included, and ends with the coroutine-vs-callback server
-- comparison: one row per payload x topology, the median ratio per payload
-- and per topology, and the median of the per-case ratios.
--
-- Runtime: ~30 s (55 cases of 1000 connections, split processes).
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local ark = require("helpers.arkbench")
local files = require("helpers.files")
local proc = require("helpers.proc")

local brief = ark.brief

describe("scenarios/classic.lua --quick", function()
    local rc, out, err, runs, want

    setup(function()
        local dir = files.tmpdir("_classic") .. "/out"
        rc, out, err = proc.run_cmd({ ark.BIN, "run", ark.ROOT .. "/scenarios/classic.lua", "--quick",
                                      "--out", dir }, { limit = 600 })
        runs = ark.read_runs(dir .. "/runs.jsonl")
        local _, list = ark.run({ "run", "scenarios/classic.lua", "--quick", "--list" })
        want = tonumber(list:match("(%d+) cases"))
    end)

    teardown(files.remove_tmpdirs)

    it("runs every case once, ok, the 4-byte ones included", function()
        assert.are.equal(0, rc, (err or "") .. (out or ""))
        assert.is_true(want ~= nil and want >= 35, tostring(want))
        assert.are.equal(want, #runs)
        local small = 0
        for _, r in ipairs(runs) do
            assert.is_true(r.ok, brief(r))
            assert.is_true(r.completed > 0, brief(r))
            assert.are.equal(1000, r.case.clients)
            ark.assert_identity(r)
            if r.case.payload == 4 then
                small = small + 1
                assert.are.same({}, r.errors, brief(r))
            end
        end
        assert.is_true(small >= 7, "4-byte runs: " .. small)
    end)

    it("prints the coroutine vs callback comparison per payload and topology, with its medians", function()
        assert.is_truthy(out:find("each value against execution=callback (baseline), per case", 1, true), out)
        -- each coroutine case has its row, with the ratio of the two runs
        local rt, co = {}, 0
        for _, r in ipairs(runs) do
            rt[r.case.payload .. " " .. r.case.topology .. " " .. r.case.execution] = r.round_trips_per_s
        end
        for _, r in ipairs(runs) do
            if r.case.execution == "coroutine" then
                co = co + 1
                local p, t = r.case.payload, r.case.topology
                local ratio = string.format("%.2fx", r.round_trips_per_s / rt[p .. " " .. t .. " callback"])
                local row = "payload=" .. p .. " topology=" .. t .. " execution=coroutine "
                local line = out:match("\n(" .. row:gsub("%p", "%%%0") .. "[^\n]*)")
                assert.is_truthy(line, "no row for " .. row .. "\n" .. out)
                assert.is_truthy(line:find(" " .. ratio .. " [", 1, true), ratio .. " not in: " .. line)
            end
        end
        local by_payload = out:match("median throughput ratio by payload %(cases%): ([^\n]+)")
        assert.is_truthy(by_payload, out)
        for _, p in ipairs({ 4, 32, 128, 1024, 4096 }) do
            assert.is_truthy(by_payload:find("%f[%d]" .. p .. " [%d.]+x %(%d+%)"), p .. ": " .. by_payload)
        end
        assert.is_truthy(out:find("median throughput ratio by topology (cases): sharded:1 ", 1, true), out)
        local n = out:match("median of per%-case throughput ratios: [%d.]+x over (%d+) cases")
        assert.are.equal(co, tonumber(n), out)
    end)
end)
