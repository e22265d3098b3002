-- connect_stop_spec.lua -- a run whose connects never finish ends on its own
-- limit ("connecting did not finish in time", status failed) instead of
-- hanging until the orchestrator kills it: while a loop stops, the
-- connects it cancels no longer start the ones still waiting for their
-- turn (more clients than the 256 a loop keeps in flight). The peer is a
-- loopback listener with a backlog of 0 that never accepts: the kernel
-- drops the SYNs past the first, so those connects stay in SYN_SENT.
-- Runtime: ~12-25 s (timeout 1 s + the 10 s backstop, once more while a
-- connect still finished).
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local ffi = require("ffi")
local ark = require("helpers.arkbench")
local files = require("helpers.files")

ffi.cdef [[
int socket(int domain, int type, int protocol);
int bind(int fd, const void *addr, unsigned len);
int listen(int fd, int backlog);
int getsockname(int fd, void *addr, unsigned *len);
int close(int fd);
struct ab_sin { unsigned short family; unsigned short port; unsigned int addr; char zero[8]; };
]]

teardown(function() files.remove_tmpdirs() end)

describe("a connect phase that never finishes", function()
    it("ends the run as failed, in its own time", function()
        local fd = ffi.C.socket(2, 1, 0)
        assert.is_true(fd >= 0)
        local sa = ffi.new("struct ab_sin")
        sa.family = 2
        sa.addr = 0x0100007f -- 127.0.0.1, network order on a little-endian host
        assert.equals(0, ffi.C.bind(fd, sa, ffi.sizeof(sa)))
        assert.equals(0, ffi.C.listen(fd, 0))
        local len = ffi.new("unsigned[1]", ffi.sizeof(sa))
        assert.equals(0, ffi.C.getsockname(fd, sa, len))
        local port = bit.bor(bit.lshift(bit.band(sa.port, 0xff), 8), bit.rshift(sa.port, 8))
        local r = ark.run_scenario(string.format([[
return { name = "hang", protocol = "tcp", clients = 300, target = "127.0.0.1:%d",
         warmup = 0, duration = 0.5, repetitions = 1, timeout = 1 }
]], port), { name = "hang", limit = 60 })
        ffi.C.close(fd)
        assert.equals(1, #r.runs)
        local run = r.runs[1]
        assert.equals("failed", run.status, run.error)
        assert.truthy(tostring(run.error):find("connecting did not finish in time", 1, true), run.error)
    end)
end)
