-- bigbody_spec.lua -- a large request body reaches the workers: the case
-- goes to a worker in a file when it is too large for its command line
-- (arkbench.run.casearg: E2BIG past 128 KiB per argument), and the
-- one-liner's -b @FILE above 64 KiB is read by the generated scenario,
-- not written into it as a literal. A 1 MiB binary body via the one-liner
-- and via a scenario (with processes = 2, the part workers) both run;
-- /dev/zero and a folder as the body file are refused with exit 2.
-- Runtime: ~10 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local peers = require("helpers.peers")
local ark = require("helpers.arkbench")

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

-- n bytes covering every byte value (binary, not valid UTF-8)
local function binary(n)
    local t = {}
    for i = 1, 256 do t[i] = string.char(i - 1) end
    local block = table.concat(t)
    return block:rep(math.ceil(n / 256)):sub(1, n)
end

describe("a 1 MiB request body", function()
    local port, dir, body_path
    setup(function()
        port = peers.wait_listening(peers.serve("http"))
        dir = files.tmpdir("_bb")
        body_path = dir .. "/body.bin"
        files.write_file(body_path, binary(1024 * 1024))
    end)

    it("runs through the one-liner (-b @FILE)", function()
        local out = dir .. "/ol"
        local rc, _, se = ark.run({ "http://127.0.0.1:" .. port .. "/", "-m", "POST", "-c", "2",
            "-d", "300ms", "--warmup", "50ms", "--ok-status", "4xx", "-b", "@" .. body_path,
            "--out", out })
        assert.equals(0, rc, se)
        local runs = ark.read_runs(out .. "/runs.jsonl")
        assert.equals(1, #runs)
        assert.is_not.equals("crashed", runs[1].status, runs[1].error)
        assert.equals("ok", runs[1].status)
        assert.is_true(runs[1].completed > 0)
        -- every request carried the whole body
        assert.is_true(runs[1].bytes_sent >= runs[1].completed * 1024 * 1024)
    end)

    it("runs through a scenario, in one process and in two", function()
        local text = string.format([[
local f = assert(io.open(%q, "rb"))
local body = f:read("*a")
f:close()
return { name = "bigbody", protocol = "http", target = "127.0.0.1:%d", clients = 2,
         processes = { 1, 2 }, warmup = 0.05, duration = 0.3, repetitions = 1,
         request = { method = "POST", path = "/", body = body, status = { 404 } } }
]], body_path, port)
        local r = ark.run_scenario(text, { name = "bigbody" })
        assert.equals(0, r.rc, r.stderr)
        assert.equals(2, #r.runs)
        for _, run in ipairs(r.runs) do
            assert.equals("ok", run.status, tostring(run.error))
            assert.is_true(run.completed > 0)
            assert.is_true(run.bytes_sent >= run.completed * 1024 * 1024)
        end
    end)

    it("refuses /dev/zero and a folder as the body file (exit 2)", function()
        local url = "http://127.0.0.1:" .. port .. "/"
        local rc, _, se = ark.run({ url, "-b", "@/dev/zero" })
        assert.equals(2, rc)
        assert.matches("larger than 64 MiB", se)
        rc, _, se = ark.run({ url, "--body-file", dir })
        assert.equals(2, rc)
        assert.matches("is a directory", se)
    end)
end)
