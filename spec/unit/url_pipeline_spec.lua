-- url_pipeline_spec.lua -- issue 25: the one-liner never turns HTTP/1.1
-- pipelining on by itself (docs/one-liner.md, --pipeline): -w above 1 over
-- http/https needs --pipeline, which is refused for the echo schemes.
local url = require("arkbench.cmd.url")

describe("one-liner -w over http", function()
    it("refuses -w 4 over http:// without --pipeline, saying what to do", function()
        local o, why = url.parse_args({ "http://127.0.0.1:8080/", "-w", "4", "-R", "100" })
        assert.is_nil(o)
        assert.equals("-w 4 over http:// pipelines 4 requests on each connection (HTTP/1.1"
            .. " pipelining, which many servers serve one by one or refuse); add --pipeline to ask"
            .. " for it, or raise -c for more requests in flight", why)
        assert.is_nil((url.parse_args({ "https://127.0.0.1:8443/", "-w", "2" })))
    end)

    it("takes -w N over http with --pipeline, and -w 1 or echo schemes without it", function()
        local o = assert(url.parse_args({ "http://127.0.0.1:8080/", "-w", "4", "--pipeline" }))
        assert.equals(4, o.window)
        assert.is_true(o.pipeline)
        assert.truthy(url.parse_args({ "http://127.0.0.1:8080/", "-w", "1" }))
        assert.truthy(url.parse_args({ "tcp://127.0.0.1:7000", "-w", "16" }))
    end)

    it("refuses --pipeline for the echo schemes", function()
        local o, why = url.parse_args({ "tcp://127.0.0.1:7000", "--pipeline" })
        assert.is_nil(o)
        assert.equals("--pipeline is for http:// and https:// URLs", why)
    end)
end)
