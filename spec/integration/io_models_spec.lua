-- io_models_spec.lua -- the IO-model study against its native reference:
-- `bench/io_models.sh --quick` prints its table (every case, each side a
-- rate, n/a or FAILED, and the ratio), and the Asio reference
-- (bench/asio_echo.cpp) speaks arkbench's wire format both ways: arkbench's
-- client against `asio_echo --mode server`, and `asio_echo --mode client`
-- against `arkbench serve --protocol tcp`; and scenarios/io_models.lua
-- runs whole with --quick (one payload). Loopback only, bounded; no
-- assertion on speed. The Asio parts are pending when asio_echo was not
-- built (no g++ or libasio-dev).
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local ark = require("helpers.arkbench")
local files = require("helpers.files")
local proc = require("helpers.proc")
local peers = require("helpers.peers")

-- the build folder of $ARKBENCH_BIN (ctest's); without it, the checkout's
-- build/ -- never bin/, which holds the launcher, not a build
local BUILD = os.getenv("ARKBENCH_BIN") and ark.BIN:match("^(.*)/[^/]+$") or (ark.ROOT .. "/build")
local ASIO = BUILD .. "/asio_echo"
local HAVE_ASIO = proc.sh_ok("test -x " .. files.shq(ASIO))

describe("bench/io_models.sh --quick", function()
    local rc, out, err, dir
    setup(function()
        dir = files.tmpdir("_iom") .. "/out"
        rc, out, err = proc.run_cmd({ "bash", "bench/io_models.sh", "--quick", "--out", dir },
            { limit = 300, env = { "ARKBENCH_BUILD_DIR=" .. BUILD } })
    end)
    teardown(files.remove_tmpdirs)

    it("exits 0 and prints the header, the table and the notes", function()
        assert.are.equal(0, rc, err .. out)
        assert.truthy(out:find("io_models: native Asio echo (bench/asio_echo.cpp) vs arkbench", 1, true), out)
        assert.truthy(out:find("\nload +threads +execution +arkbench +asio +asio rt/s +arkbench rt/s "
            .. "+arkbench/asio +asio x1thr +ark x1thr\n"), out)
        assert.truthy(out:find("(*) pool:T has no Asio counterpart", 1, true), out)
        assert.are.equal(out, files.read_file(dir .. "/summary.txt"))
    end)

    it("has a row per load x threads x execution x model, each cell a rate, n/a or FAILED", function()
        local rows = {}
        for line in out:gmatch("[^\n]+") do
            local load, t, ex, model = line:match("^(%d+x%d+) +(%d) +[over ]*(%a+) +(%a+:%d) ")
            if load then
                local key = load .. " " .. t .. " " .. ex .. " " .. model
                assert.is_nil(rows[key], "twice: " .. key)
                rows[key] = line
                -- the last cells: asio rt/s, arkbench rt/s, the ratio, asio x1thr
                -- (not on pool rows) and ark x1thr
                local a, k, r
                if model:match("^pool") then
                    a, k, r = line:match("%(%*%) +(%S+) +(%S+) +(%S+) +(%S+)$")
                else
                    a, k, r = line:match(" thr[ea]*d? +(%S+) +(%S+) +(%S+) +%S+ +%S+$")
                end
                assert.truthy(a, line)
                for _, v in ipairs({ a, k }) do
                    assert.truthy(v == "n/a" or v:match("^%d+$"), line)
                end
                assert.truthy(r == "n/a" or r:match("^%d+%.%d%dx$"), line)
                assert.are.equal(t == "4", line:find(" 4 over ", 1, true) ~= nil, line)
            end
        end
        local n = 0
        for _, load in ipairs({ "16x16", "1x1" }) do
            for _, t in ipairs({ "1", "2", "4" }) do
                for _, ex in ipairs({ "callback", "coroutine" }) do
                    for _, m in ipairs({ "sharded", "shared", "pool" }) do
                        local key = load .. " " .. t .. " " .. ex .. " " .. m .. ":" .. t
                        assert.truthy(rows[key], "no row " .. key .. " in\n" .. out)
                        n = n + 1
                    end
                end
            end
        end
        assert.are.equal(36, n)
        -- arkbench's sharded:N always runs: a rate there, and the ratio when Asio ran
        local line = rows["16x16 2 callback sharded:2"]
        local a, k, r = line:match(" thread +(%S+) +(%S+) +(%S+) +%S+ +%S+$")
        assert.truthy(k and k:match("^%d+$") and tonumber(k) > 0, line)
        if HAVE_ASIO then
            assert.truthy(a:match("^%d+$") and tonumber(a) > 0, line)
            assert.truthy(r:match("^%d+%.%d%dx$"), line)
        end
    end)

    it("refuses a wrong command line with exit 2", function()
        local c, _, e = proc.run_cmd({ "bash", "bench/io_models.sh", "--reps", "0" })
        assert.are.equal(2, c)
        assert.truthy(e:find("--reps: got '0'; expected an integer >= 1", 1, true), e)
    end)
end)

local function asio_it(name, fn)
    if HAVE_ASIO then it(name, fn) else pending(name .. " (asio_echo not built)") end
end

describe("the Asio reference and arkbench speak one wire format", function()
    teardown(function()
        proc.stop_all()
        files.remove_tmpdirs()
    end)

    asio_it("arkbench's client against asio_echo --mode server (both styles)", function()
        for _, style in ipairs({ "callback", "coroutine" }) do
            local srv = proc.spawn({ ASIO, "--mode", "server", "--style", style, "--topology", "shared:2",
                                     "--listen", "127.0.0.1:0" }, { name = "asio_echo server", limit = 60 })
            local port = peers.wait_listening(srv)
            local res = ark.run_scenario(string.format([[
return { protocol = "tcp", payload = 1024, clients = 4, window = 8, warmup = 0.05,
         duration = 0.3, repetitions = 1, target = "127.0.0.1:%d" }
]], port), { name = "asio_target" })
            local served = peers.last_json(proc.stop(srv), "asio_echo server")
            assert.are.equal(0, res.rc, res.stderr .. res.stdout)
            assert.are.equal(1, #res.runs)
            local r = res.runs[1]
            assert.is_true(r.ok, ark.brief(r))
            assert.is_true(r.completed > 0, ark.brief(r))
            ark.assert_identity(r)
            assert.are.same({}, r.errors or {}, ark.brief(r))
            assert.are.equal(0, served.errors, served.error)
            assert.is_true(served.server_messages >= r.completed, "served " .. served.server_messages)
        end
    end)

    asio_it("asio_echo --mode client against arkbench serve --protocol tcp (both styles)", function()
        for _, style in ipairs({ "callback", "coroutine" }) do
            local srv = peers.serve("tcp", { "--topology", "sharded:2" })
            local port = peers.wait_listening(srv)
            local rc, out, err = proc.run_cmd({ ASIO, "--mode", "client", "--style", style,
                "--topology", "sharded:2", "--connect", "127.0.0.1:" .. port, "--clients", "4",
                "--window", "8", "--warmup", "0.05", "--duration", "0.3" }, { limit = 30 })
            local served = peers.last_json(proc.stop(srv), "serve's output")
            assert.are.equal(0, rc, err .. out)
            local line = peers.last_json(out, "asio_echo client")
            assert.are.equal("client", line.mode)
            assert.are.equal(0, line.errors, tostring(line.error))
            assert.is_true(line.round_trips_per_s > 0, out)
            -- the client checks each echoed batch against what it sent
            assert.is_true(served.messages >= line.round_trips, "serve answered " .. served.messages)
            assert.are.same({}, served.errors)
        end
    end)

    asio_it("asio_echo refuses a wrong command line with exit 2 and names the option", function()
        local rc, _, err = proc.run_cmd({ ASIO, "--topology", "ring:2" })
        assert.are.equal(2, rc)
        assert.truthy(err:find("--topology: got 'ring:2'; expected shared:N or sharded:N", 1, true), err)
        rc, _, err = proc.run_cmd({ ASIO, "--payload", "16384", "--window", "4096" })
        assert.are.equal(2, rc)
        assert.truthy(err:find("is over 1 MiB", 1, true), err)
    end)
end)

-- scenarios/io_models.lua runs whole (issue 13, acceptance 1): every
-- topology, coroutine on shared:N included. One payload and work 0 here
-- (24 cases, --quick), every case ok, and the key findings printed for
-- each load and execution.
describe("scenarios/io_models.lua --quick", function()
    teardown(files.remove_tmpdirs)

    it("runs every topology x execution ok and prints the key findings", function()
        local out_dir = files.tmpdir("_iomsc") .. "/out"
        local rc, out, err = proc.run_cmd({ ark.BIN, "run", "scenarios/io_models.lua", "--quick",
            "--filter", "payload=64", "--filter", "work=0", "--out", out_dir }, { limit = 240 })
        assert.are.equal(0, rc, err .. out)
        local runs = ark.read_runs(out_dir .. "/runs.jsonl")
        assert.are.equal(24, #runs, err)
        local seen = {}
        for _, r in ipairs(runs) do
            assert.is_true(r.ok, ark.brief(r))
            ark.assert_identity(r)
            seen[r.case.topology .. " " .. r.case.execution] = true
        end
        for _, t in ipairs({ "sharded:1", "shared:2", "shared:4", "sharded:2", "sharded:4", "pool:4" }) do
            for _, e in ipairs({ "callback", "coroutine" }) do
                assert.is_true(seen[t .. " " .. e], t .. " " .. e)
            end
        end
        assert.truthy(out:find("key findings:", 1, true), out)
        for _, load in ipairs({ "1 client, window 1", "16 clients, window 16" }) do
            for _, e in ipairs({ "callback", "coroutine" }) do
                -- (one work value here: the group does not name it)
                local line = "tcp, " .. load .. ", execution " .. e .. ": "
                assert.truthy(out:find(line, 1, true), line .. " in\n" .. out)
            end
        end
    end)
end)
