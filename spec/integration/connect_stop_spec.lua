-- connect_stop_spec.lua -- a run whose connects never finish ends in its
-- own time as failed instead of hanging until the orchestrator kills it:
-- more clients than the 256 a loop keeps in flight, every connect that
-- gets no answer failed at `connect_timeout` (0.3 s here) as ECONNTIMEDOUT
-- once its 6 tries (issue 27: retried after 50 .. 800 ms) are spent, so the
-- ones still waiting for their turn start and fail the same way (before
-- connect_timeout they sat out the run's backstop with no class). Each
-- connection counts one error, its 5 retries in connect_retries. The peer is a loopback
-- listener with a backlog of 0 that never accepts: the kernel drops the
-- SYNs past the first, so those connects stay in SYN_SENT.
-- Runtime: ~3-5 s.
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
         warmup = 0, duration = 0.5, repetitions = 1, timeout = 1, connect_timeout = 0.3 }
]], port), { name = "hang", limit = 60 })
        ffi.C.close(fd)
        assert.equals(1, #r.runs)
        local run = r.runs[1]
        assert.equals("failed", run.status, run.error)
        -- the connect or two the backlog took completed; every other one
        -- got no answer
        local n = run.errors.ECONNTIMEDOUT or 0
        assert.is_true(n >= 295 and n <= 299, ark.cjson.encode(run.errors))
        assert.truthy(tostring(run.error):find("no answer within the connect timeout of 0.3 s", 1, true),
            run.error)
        assert.equals(5 * n, run.connect_retries, ark.cjson.encode(run.errors))
        -- failed by its connects' own timeouts (two rounds of 6 tries: ~7 s),
        -- not killed at the worker's hard limit nor cut by the backstop
        assert.is_nil(tostring(run.error):find("connecting did not finish", 1, true), run.error)
    end)
end)
