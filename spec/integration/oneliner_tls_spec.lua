-- oneliner_tls_spec.lua -- TLS versions (docs/one-liner.md, docs/protocols.md
-- request mode) against nginx (nginx-light) with `ssl_protocols TLSv1.2;`,
-- as stock Debian nginx 1.22 is: the one-liner offers TLS 1.2 and 1.3 by
-- default and negotiates 1.2; `--tls-version 1.3` (and a scenario's default,
-- TLS 1.3 only) fails the handshake with a hint naming tls.version and
-- --tls-version; tls.version = "1.2-1.3" in a scenario negotiates too.
-- A relative tls.ca in a file is from the file's folder (the error names the
-- path tried); --ca and --set tls.ca=... are from the current directory.
-- Needs: nginx, openssl. Runtime: ~8 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local peers = require("helpers.peers")
local ark = require("helpers.arkbench")

teardown(function()
    peers.stop_started()
    files.remove_tmpdirs()
end)

local SHORT = { "-c", "2", "-d", "300ms", "--warmup", "50ms" }

describe("TLS versions against a TLS 1.2-only nginx", function()
    local d, port, url
    setup(function()
        d = files.tmpdir("_oltls")
        port = peers.start_nginx(d, { tls = true, ssl_protocols = "TLSv1.2",
            html = { ["index.html"] = "hello\n" } })
        url = "https://127.0.0.1:" .. port .. "/"
    end)

    local function oneliner(more)
        local out = files.tmpdir("_oltls") .. "/out"
        local args = { url, "--ca", d .. "/cert.pem", "--out", out }
        for _, v in ipairs(SHORT) do args[#args + 1] = v end
        for _, v in ipairs(more or {}) do args[#args + 1] = v end
        local rc, so, se = ark.run(args)
        local runs = ark.read_runs(out .. "/runs.jsonl") or {}
        return rc, so, se, runs[1]
    end

    it("the one-liner negotiates TLS 1.2 by default", function()
        local rc, so, se, r = oneliner()
        assert.equals(0, rc, so .. se)
        assert.equals("ok", r.status)
        assert.equals("1.2-1.3", r.case.tls.version)
        assert.equals("TLSv1.2", r.tls.version)
        assert.is_true(r.completed > 0)
    end)

    it("--tls-version 1.2 pins it, --tls-version 1.3 fails with the hint", function()
        local rc, so, se, r = oneliner({ "--tls-version", "1.2" })
        assert.equals(0, rc, so .. se)
        assert.equals("TLSv1.2", r.tls.version)
        rc, so, se, r = oneliner({ "--tls-version", "1.3" })
        assert.equals(1, rc, so .. se)
        assert.is_false(r.ok)
        local all = so .. se .. (r.error or "")
        assert.truthy(all:find("protocol version", 1, true), all)
        assert.truthy(all:find('the server does not offer TLS 1.3; set tls.version = "1.2"', 1, true), all)
        assert.truthy(all:find("--tls-version 1.2", 1, true), all)
        -- a failed run: the failure first, a short block (no empty ladder)
        -- (after the run's table)
        local at = so:find("\nFAILED: ", 1, true)
        assert.truthy(at, so)
        assert.truthy(so:match("\nFAILED: ([^\n]*)"):find("protocol version", 1, true), so)
        assert.is_nil(so:sub(1, at):find("test @", 1, true), so)
        assert.truthy(so:find("test @ " .. url .. ": 0 requests in ", 1, true), so)
        assert.is_nil(so:find("Latency Distribution", 1, true), so)
        assert.is_nil(so:find("Requests/sec", 1, true), so)
        assert.truthy(so:find("\nresults: ", 1, true), so)
    end)

    it("-k warns once that the certificate is not checked", function()
        local out = files.tmpdir("_oltls") .. "/out"
        local args = { url, "-k", "--out", out }
        for _, v in ipairs(SHORT) do args[#args + 1] = v end
        local rc, so, se = ark.run(args)
        assert.equals(0, rc, so .. se)
        local n = 0
        for l in (so .. "\n" .. se):gmatch("[^\n]+") do
            if l:find("warning", 1, true) and (l:find("verif", 1, true) or l:find("insecure", 1, true)) then
                n = n + 1
            end
        end
        assert.equals(1, n, so .. se)
        assert.truthy(se:find("verify = false: the server's certificate is NOT checked", 1, true), se)
    end)

    it("refuses a --tls-version other than 1.2 or 1.3", function()
        local rc, _, se = oneliner({ "--tls-version", "1.1" })
        assert.equals(2, rc)
        assert.truthy(se:find("--tls-version: expected 1.2 or 1.3, got '1.1'", 1, true), se)
    end)

    it("a scenario: TLS 1.3 by default gets the hint, \"1.2-1.3\" negotiates", function()
        local function scen(version)
            local f = d .. "/s" .. (version or "def"):gsub("%W", "") .. ".lua"
            files.write_file(f, ([[return { protocol = "https", target = "127.0.0.1:%d",
                clients = 2, warmup = 0.05, duration = 0.3, repetitions = 1,
                request = { path = "/" }, tls = { ca = %q%s } }]]):format(port, d .. "/cert.pem",
                version and (", version = %q"):format(version) or ""))
            local out = d .. "/out-" .. (version or "def"):gsub("%W", "")
            local rc, so, se = ark.run({ "run", f, "--out", out })
            return rc, so .. se, (ark.read_runs(out .. "/runs.jsonl") or {})[1]
        end
        local rc, text, r = scen(nil)
        assert.equals(1, rc, text)
        assert.truthy((text .. (r and r.error or "")):find("does not offer TLS 1.3", 1, true), text)
        rc, text, r = scen("1.2-1.3")
        assert.equals(0, rc, text)
        assert.equals("TLSv1.2", r.tls.version)
    end)

    it("a relative tls.ca is from the scenario's folder; --ca and --set from the cwd", function()
        local bin = ark.BIN
        if bin:sub(1, 1) ~= "/" then
            local pwd = io.popen("pwd"):read("*l")
            bin = pwd .. "/" .. bin:gsub("^%./", "")
        end
        local sub = d .. "/sub"
        os.execute("mkdir -p '" .. sub .. "'")
        local function scen(name, ca)
            local f = d .. "/" .. name .. ".lua"
            files.write_file(f, ([[return { protocol = "https", target = "127.0.0.1:%d",
                clients = 1, warmup = 0.05, duration = 0.2, repetitions = 1,
                request = { path = "/" }, tls = { version = "1.2"%s } }]]):format(port,
                ca and (", ca = %q"):format(ca) or ""))
            return f
        end
        -- run from the repository root: cert.pem is next to the file, not here
        local rc, so, se = ark.run({ "run", scen("rel", "cert.pem"), "--out", d .. "/o-rel" })
        assert.equals(0, rc, so .. se)
        assert.equals("ok", ark.read_runs(d .. "/o-rel/runs.jsonl")[1].status)
        rc, so, se = ark.run({ "run", scen("missing", "nope.pem"), "--out", d .. "/o-miss" })
        assert.equals(2, rc, so .. se)
        assert.truthy(se:find('key \'ca\': got string "nope.pem" (tried ' .. d .. "/nope.pem", 1, true), se)
        -- --set: the shell's relative path, from the current directory
        local f = scen("sub/noca", nil)
        rc, so, se = ark.run({ "run", f, "--set", "tls.ca=cert.pem", "--out", d .. "/o-set" }, { cwd = d, exe = bin })
        assert.equals(0, rc, so .. se)
        -- the one-liner's --ca, from the current directory
        local out = d .. "/o-ol"
        rc, so, se = ark.run({ url, "--ca", "cert.pem", "-c", "1", "-d", "200ms", "--warmup", "50ms",
            "--out", out }, { cwd = d, exe = bin })
        assert.equals(0, rc, so .. se)
    end)
end)
