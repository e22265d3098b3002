-- h2_spec.lua -- HTTP/2 (issue 23, acceptance 1): the reference matrices
-- scenarios/h2.lua (TLS + ALPN h2) and scenarios/h2c.lua (prior knowledge)
-- through the launcher users type, shortened as `--quick` does (0.2 s
-- measured, one repetition) but with a 0.5 s warm-up instead of --quick's
-- 0.05 s: the 16 KiB x 16 x 16 cases put 4 MiB in flight each way at the
-- start, which a loaded machine may not turn around within --quick's
-- 0.25 s, and no spec may depend on the machine being quiet.  Every case
-- ok, the accounting identity holds, every payload byte checked (the
-- client checks each echoed body, the server counts what it echoed).
local cjson = require("cjson").new()
cjson.decode_invalid_numbers(false)

local ROOT = os.getenv("ARKBENCH_ROOT") or "."
local LAUNCHER = ROOT .. "/bin/arkbench"

package.path = ROOT .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local shq, read_file = files.shq, files.read_file
local sh_ok = proc.sh_ok

local dir

setup(function()
    local p = os.tmpname()
    os.remove(p)
    dir = p .. "_h2"
    assert(sh_ok("mkdir -p " .. shq(dir)))
end)

teardown(function()
    if dir then os.execute("rm -rf " .. shq(dir)) end
end)

local function run(args, name)
    local cmd = "cd " .. shq(ROOT) .. " && " .. shq(LAUNCHER) .. " " .. args
        .. " >" .. shq(dir .. "/" .. name .. ".out") .. " 2>" .. shq(dir .. "/" .. name .. ".err")
        .. " </dev/null; echo $?"
    local h = io.popen(cmd)
    local rc = tonumber(h:read("*a"):match("(%d+)"))
    h:close()
    return rc, read_file(dir .. "/" .. name .. ".out") or "", read_file(dir .. "/" .. name .. ".err") or ""
end

local function runs_of(out)
    local text = read_file(out .. "/runs.jsonl")
    assert.is_truthy(text, "runs.jsonl is missing")
    local runs = {}
    for line in text:gmatch("[^\n]+") do runs[#runs + 1] = cjson.decode(line) end
    return runs
end

for _, proto in ipairs({ "h2", "h2c" }) do
    describe("bin/arkbench run scenarios/" .. proto .. ".lua --quick", function()
        it("runs every case ok, identity holding, every payload byte checked", function()
            local out = dir .. "/" .. proto
            local rc, _, err = run("run scenarios/" .. proto .. ".lua --set warmup=0.5 --set duration=0.2"
                .. " --set repetitions=1 --out " .. shq(out), proto)
            assert.are.equal(0, rc, err)
            local runs = runs_of(out)
            -- 3 payloads x 2 loads x 6 topologies, one repetition each
            assert.are.equal(36, #runs)
            local topo = {}
            for _, r in ipairs(runs) do
                local id = tostring(r.case_id)
                assert.is_true(r.ok, id .. ": " .. tostring(r.error))
                assert.are.equal("ok", r.status, id)
                assert.are.equal(proto, r.case.protocol, id)
                assert.is_true(r.completed > 0, id)
                assert.are.equal(r.sent, r.completed + r.drained + r.timed_out + r.message_errors
                    + r.unfinished, id .. ": accounting identity")
                assert.are.equal(0, r.message_errors, id)
                assert.is_nil(next(r.errors), id .. ": errors " .. cjson.encode(r.errors))
                -- the server echoed whole bodies of the case's payload
                assert.is_true(r.server_messages >= r.completed, id)
                assert.are.equal(r.server_messages * r.case.payload, r.server_bytes, id)
                topo[r.case.topology] = true
                if proto == "h2" then
                    assert.are.equal("h2", r.tls and r.tls.alpn, id .. ": ALPN")
                end
            end
            for _, t in ipairs({ "pool:1", "pool:2", "pool:4", "sharded:2", "sharded:4", "shared:2" }) do
                assert.is_true(topo[t], t)
            end
        end)
    end)
end
