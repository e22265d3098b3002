-- scenarios_spec.lua -- every shipped scenario runs to completion (issue 3
-- acceptance 1, issue 4 acceptance 1): each file under scenarios/ (but the
-- reference tcp matrix, which reference_matrix_spec runs in full, and the
-- custom examples that need an external server) with --quick, every run ok,
-- one run per case, the accounting identity on each.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local ark = require("helpers.arkbench")
local files = require("helpers.files")

local SHIPPED = { "udp", "tls", "ws", "wss", "http", "https", "all", "coroutine",
                  "custom/line_echo" }

describe("shipped scenarios run to completion with --quick", function()
    teardown(files.remove_tmpdirs)

    for _, name in ipairs(SHIPPED) do
        it(name, function()
            local dir = files.tmpdir("_scen") .. "/out"
            local rc, out, err = ark.run({ "run", "scenarios/" .. name .. ".lua", "--quick",
                                           "--out", dir })
            local _, list = ark.run({ "run", "scenarios/" .. name .. ".lua", "--quick", "--list" })
            local want = tonumber(list:match("(%d+) cases"))
            assert.is_true(want and want > 0, list)
            local runs = {}
            for line in (files.read_file(dir .. "/runs.jsonl") or ""):gmatch("[^\n]+") do
                runs[#runs + 1] = ark.cjson.decode(line)
            end
            assert.are.equal(want, #runs)
            -- every run ok; on a busy machine a heavy case's replies may all
            -- come after --quick's 0.2 s (exit 1): the path still worked
            local slow = 0
            for _, r in ipairs(runs) do
                if ark.slow_but_working(r) then
                    slow = slow + 1
                else
                    assert.is_true(r.ok, ark.brief(r))
                    assert.is_true(r.completed > 0, ark.brief(r))
                end
                ark.assert_identity(r)
            end
            assert.are.equal(slow > 0 and 1 or 0, rc, (err or "") .. (out or ""))
            assert.is_true(files.exists(dir .. "/report.md"))
        end)
    end

    it("coroutine.lua prints the callback -> coroutine pairing and its median", function()
        local dir = files.tmpdir("_scen") .. "/co"
        local rc, out = ark.run({ "run", "scenarios/coroutine.lua", "--quick", "--out", dir,
                                  "--filter", "work=0" })
        assert.are.equal(0, rc)
        assert.is_truthy(out:find("each value against execution=callback", 1, true))
        local median = out:match("median of per%-case throughput ratios: ([%d.]+)x over 6 cases")
        assert.is_truthy(median, out)
        assert.is_true(tonumber(median) > 0)
    end)
end)
