-- coroutine_stack_spec.lua -- issue 15 ("coroutine stacks sized
-- sensibly"): the coroutine_stack key end to end. A coroutine run with the
-- smallest stack (16 KiB) runs ok over tcp and tls and records the size in
-- its run object; with ARKBENCH_CORO_STACK_USE=1 the worker reports the
-- deepest stack of the run (base/coro.h), which must be above zero and
-- below the 16 KiB (the margin docs/execution.md states); a run without the
-- key records the default, a callback run none.
--
-- Runtime: ~4 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")

teardown(function() files.remove_tmpdirs() end)

-- runs scenario text with ARKBENCH_CORO_STACK_USE=1; returns rc, runs, stderr
local function run_with_use(text)
    local d = files.tmpdir()
    files.write_file(d .. "/cs.lua", text)
    local rc, _, se = proc.run_cmd({ ark.BIN, "run", d .. "/cs.lua", "--out", d .. "/out" },
        { limit = 90, env = { "ARKBENCH_CORO_STACK_USE=1" } })
    return rc, ark.read_runs(d .. "/out/runs.jsonl"), se
end

describe("coroutine_stack", function()
    for _, proto in ipairs({ "tcp", "tls" }) do
        it("16 KiB runs " .. proto .. " ok, is recorded, and the deepest stack fits it", function()
            local rc, runs, se = run_with_use(string.format([[
return { name = "cs_%s", protocol = "%s", execution = "coroutine", coroutine_stack = "16KiB",
         clients = 8, window = 4, payload = 1024, warmup = 0.05, duration = 0.2,
         repetitions = 1 }
]], proto, proto))
            assert.equals(0, rc, se)
            assert.equals(1, #runs)
            local r = runs[1]
            assert.is_true(r.ok, ark.brief(r))
            assert.is_true(r.completed > 0)
            ark.assert_identity(r)
            assert.equals(16384, r.coroutine_stack)
            assert.equals(16384, r.case.coroutine_stack)
            local hw = tonumber(se:match("coroutine stack high%-water: (%d+) bytes"))
            assert.is_number(hw, se)
            assert.is_true(hw > 0 and hw < 16384, "high-water " .. tostring(hw))
        end)
    end

    it("a coroutine run without the key has the default; a callback run none", function()
        local res = ark.run_scenario([[
return { name = "cs_default", protocol = "tcp", execution = { "coroutine", "callback" },
         clients = 2, window = 1, warmup = 0, duration = 0.1, repetitions = 1 }
]], { name = "cs_default" })
        assert.equals(0, res.rc, res.stderr)
        assert.equals(2, #res.runs)
        for _, r in ipairs(res.runs) do
            assert.is_true(r.ok, ark.brief(r))
            if r.case.execution == "coroutine" then
                assert.equals(32768, r.coroutine_stack)
            else
                assert.is_nil(r.coroutine_stack)
            end
            assert.is_nil(res.stderr:match("high%-water"))
        end
    end)
end)
