-- udp_refused_spec.lua -- a UDP client against a loopback port where
-- nothing listens (issue 14, break-it): the kernel answers each datagram
-- with an ICMP port unreachable, which a connected UDP socket reports as
-- ECONNREFUSED on its next receive. The run's reason says which server
-- and what that means, not a bare "udp client: receive". Runtime: ~2 s.
local ROOT = os.getenv("ARKBENCH_ROOT") or "."
package.path = ROOT .. "/spec/?.lua;" .. package.path
local ark = require("helpers.arkbench")
local files = require("helpers.files")
local proc = require("helpers.proc")
local peers = require("helpers.peers")

teardown(function() files.remove_tmpdirs() end)

-- a loopback UDP port that was free a moment ago (bound, then closed)
local function closed_udp_port()
    return tonumber(proc.sh_out(peers.PY .. " -c 'import socket; s = socket.socket(socket.AF_INET,"
        .. " socket.SOCK_DGRAM); s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1])'"))
end

describe("udp against a closed port", function()
    it("names the server and the ICMP port unreachable behind ECONNREFUSED", function()
        local port = closed_udp_port()
        local res = ark.run_scenario(([[return { name = "refused", protocol = "udp",
            target = "127.0.0.1:%d", clients = 2, warmup = 0.1, duration = 0.3, repetitions = 1 }]])
            :format(port), { name = "refused" })
        assert.are.equal(1, res.rc, res.stdout .. res.stderr)
        local r = res.runs[1]
        assert.is_true(r.errors.ECONNREFUSED > 0, ark.brief(r))
        local want = ("udp receive, server 127.0.0.1:%d: ECONNREFUSED: an ICMP port unreachable came"
            .. " back for a datagram sent there (nothing listens on that UDP port)"):format(port)
        assert.truthy(r.error_reasons.ECONNREFUSED:find(want, 1, true), r.error_reasons.ECONNREFUSED)
        assert.truthy(r.error:find(want, 1, true), r.error)
        ark.assert_identity(r)
    end)
end)
