-- crr_loop_spec.lua -- bench/crr_loop.c, the raw baseline of bench/churn.sh
-- (issue 15): against `arkbench serve --framing raw`, every cycle is a
-- connection of its own (the server's accepted connections cover the
-- cycles counted) and every echo is compared; against a closed port every
-- failed connect is counted and the exit code says so.
--
-- Runtime: ~2 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")
local peers = require("helpers.peers")

-- next to the arkbench binary ctest runs (ARKBENCH_BIN), else in build/
local BUILD = os.getenv("ARKBENCH_BUILD_DIR")
    or (os.getenv("ARKBENCH_BIN") and os.getenv("ARKBENCH_BIN"):match("^(.*)/[^/]+$"))
    or (files.ROOT .. "/build")
local CRR = BUILD .. "/crr_loop"

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

describe("crr_loop", function()
    it("does connect, echo and close per cycle against a raw echo, no errors", function()
        local srv = peers.serve("tcp", { "--framing", "raw", "--payload", "7" })
        local port = peers.wait_listening(srv)
        local rc, so, se = proc.run_cmd({ CRR, "--connect", "127.0.0.1:" .. port, "--connections",
            "8", "--payload", "7", "--warmup", "0.05", "--duration", "0.3" }, { limit = 30 })
        proc.stop(srv)
        assert.equals(0, rc, se)
        local line = peers.last_json(so, "crr_loop")
        assert.equals("crr_loop", line.tool)
        assert.is_true(line.cycles > 0)
        assert.equals(0, line.connect_errors)
        assert.equals(0, line.echo_errors)
        assert.near(line.cycles / line.measured_s, line.connections_per_s, 1)
        local sl = peers.last_json(proc.stdout_of(srv), "serve")
        -- one connection per cycle: the server saw at least those
        assert.is_true(sl.connections >= line.cycles, sl.connections .. " < " .. line.cycles)
        assert.equals(sl.connections * 7 >= sl.bytes and sl.bytes > 0, true)
    end)

    it("counts refused connects and exits 1", function()
        local srv = peers.serve("tcp", {})
        local port = peers.wait_listening(srv)
        proc.stop(srv) -- the port is closed now
        local rc, so = proc.run_cmd({ CRR, "--connect", "127.0.0.1:" .. port, "--connections", "2",
            "--warmup", "0", "--duration", "0.1" }, { limit = 30 })
        assert.equals(1, rc)
        local line = peers.last_json(so, "crr_loop")
        assert.is_true(line.connect_errors > 0)
        assert.equals(0, line.cycles)
    end)

    it("refuses a wrong command line with exit 2", function()
        local rc, _, se = proc.run_cmd({ CRR, "--connections", "3" }, { limit = 10 })
        assert.equals(2, rc, se)
        assert.matches("%-%-connect HOST:PORT is required", se)
    end)
end)
