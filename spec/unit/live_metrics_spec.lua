-- live_metrics_spec.lua -- arkbench.run.live_metrics's address rules
-- (docs/reports.md "Live metrics"): a port alone is loopback, a host must
-- be numeric or localhost, and which hosts are loopback.
local live = require("arkbench.run.live_metrics")

describe("live_metrics.parse_addr", function()
    it("takes HOST:PORT, [V6]:PORT, :PORT and PORT (loopback)", function()
        assert.are.same({ "127.0.0.1", 9464 }, { live.parse_addr("127.0.0.1:9464") })
        assert.are.same({ "::1", 0 }, { live.parse_addr("[::1]:0") })
        assert.are.same({ "127.0.0.1", 9464 }, { live.parse_addr(":9464") })
        assert.are.same({ "127.0.0.1", 0 }, { live.parse_addr("0") })
        assert.are.same({ "0.0.0.0", 80 }, { live.parse_addr("0.0.0.0:80") })
        assert.are.same({ "localhost", 1 }, { live.parse_addr("localhost:1") })
    end)

    it("refuses what is not an address, saying what is expected", function()
        local function why(s) return select(2, live.parse_addr(s)) end
        assert.are.equal("'x': expected HOST:PORT (e.g. 127.0.0.1:9464, or :0 for a free port)", why("x"))
        assert.are.equal("'1.2.3.4:99999': the port must be from 0 to 65535", why("1.2.3.4:99999"))
        assert.truthy(why("example.com:80"):find("numeric address", 1, true))
        assert.are.equal("expected HOST:PORT", why(""))
    end)

    it("knows the loopback hosts", function()
        assert.is_true(live.is_loopback("127.0.0.1"))
        assert.is_true(live.is_loopback("127.3.2.1"))
        assert.is_true(live.is_loopback("::1"))
        assert.is_true(live.is_loopback("localhost"))
        assert.is_false(live.is_loopback("0.0.0.0"))
        assert.is_false(live.is_loopback("10.0.0.1"))
    end)
end)
