-- tls_ca_spec.lua -- the CA a client trusts (`tls.ca`) is read whole: a
-- bundle longer than any fixed buffer, with the server's certificate
-- last, still verifies it (the first version read 64 KiB and dropped the
-- rest); an unreadable CA is refused, never a quiet fall-back to the
-- system store.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local peers = require("helpers.peers")
local ark = require("helpers.arkbench")

local SYSTEM_CAS = "/etc/ssl/certs/ca-certificates.crt"

-- whole certificates of the system bundle until `size` bytes, then `last`
local function bundle(size, last)
    local text = files.read_file(SYSTEM_CAS) or ""
    local out, n = {}, 0
    for cert in text:gmatch("%-%-%-%-%-BEGIN CERTIFICATE%-%-%-%-%-.-%-%-%-%-%-END CERTIFICATE%-%-%-%-%-\n") do
        if n >= size then break end
        out[#out + 1] = cert
        n = n + #cert
    end
    return table.concat(out) .. last, n
end

describe("tls.ca", function()
    after_each(function() proc.stop_all() end)

    it("reads a CA bundle past 64 KiB whole (the server's certificate last)", function()
        local d = files.tmpdir()
        local cert = d .. "/serve.pem"
        local srv = peers.serve("tls", { "--cert-out", cert })
        local port = peers.wait_listening(srv)
        assert.is_true(proc.wait_for(function() return files.read_file(cert) ~= nil end, 5))
        local text, before = bundle(70000, files.read_file(cert))
        assert.is_true(before >= 65536, "the system bundle gave only " .. before .. " bytes")
        files.write_file(d .. "/bundle.pem", text)
        local res = ark.run_scenario(([[
return { name = "ca_bundle", protocol = "tls", target = "127.0.0.1:%d",
         tls = { ca = %q }, clients = 1, payload = 64,
         warmup = 0, duration = 0.2, repetitions = 1 }
]]):format(port, d .. "/bundle.pem"))
        assert.are.equal(0, res.rc, res.stdout .. res.stderr)
        assert.are.equal(1, #res.runs)
        assert.are.equal("ok", res.runs[1].status, ark.brief(res.runs[1]))
        assert.is_true(res.runs[1].completed > 0)
        ark.assert_identity(res.runs[1])
    end)

    it("refuses a CA file that does not exist before anything runs", function()
        local res = ark.run_scenario([[
return { name = "ca_missing", protocol = "tls", target = "127.0.0.1:9",
         tls = { ca = "/nonexistent/ca.pem" }, clients = 1, payload = 64 }
]])
        assert.are.equal(2, res.rc, res.stdout .. res.stderr)
        assert.is_truthy(res.stderr:find("key 'ca'", 1, true), res.stderr)
        assert.are.equal(0, #res.runs)
    end)
end)
