-- h2_nginx_spec.lua -- HTTP/2 request mode against nginx (nginx-light, its
-- http2 module; worker_processes 1, a 601-byte file): the one-liner's
-- --h2 (TLS, ALPN h2) and --h2c (prior knowledge) with -m N streams per
-- connection, per-status counts, a 404 path counted per status, and a
-- server that does not select h2 by ALPN refused with what it selected
-- (docs/one-liner.md, docs/protocols.md).  Needs: nginx, openssl.
-- Runtime: ~10 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local peers = require("helpers.peers")
local ark = require("helpers.arkbench")

teardown(function()
    peers.stop_started()
    files.remove_tmpdirs()
end)

local SHORT = { "-c", "4", "-m", "8", "-d", "300ms", "--warmup", "100ms" }
local FILE = string.rep("0123456789", 60) .. "\n" -- 601 bytes

local function oneliner(url, more)
    local out = files.tmpdir("_h2ngx") .. "/out"
    local args = { url, "--out", out }
    for _, v in ipairs(SHORT) do args[#args + 1] = v end
    for _, v in ipairs(more or {}) do args[#args + 1] = v end
    local rc, so, se = ark.run(args)
    local runs = ark.read_runs(out .. "/runs.jsonl") or {}
    return rc, so, se, runs[1]
end

local function identity(r)
    assert.equals(r.sent, r.completed + r.drained + r.timed_out + r.message_errors + r.unfinished,
        "accounting identity")
end

describe("HTTP/2 against nginx", function()
    local tls_d, tls_port, clear_port, h1_d, h1_port, ka_port
    setup(function()
        assert.equals(601, #FILE)
        tls_d = files.tmpdir("_h2ngx")
        tls_port = peers.start_nginx(tls_d, { tls = true, http2 = true, html = { f601 = FILE } })
        clear_port = peers.start_nginx(files.tmpdir("_h2ngx"), { http2 = true, html = { f601 = FILE } })
        h1_d = files.tmpdir("_h2ngx")
        h1_port = peers.start_nginx(h1_d, { tls = true, html = { f601 = FILE } })
        ka_port = peers.start_nginx(files.tmpdir("_h2ngx"),
            { http2 = true, keepalive_requests = 50, html = { f601 = FILE } })
    end)

    it("--h2: TLS with ALPN h2, -m 8 streams per connection, every response 200", function()
        local rc, so, se, r = oneliner("https://127.0.0.1:" .. tls_port .. "/f601",
            { "--h2", "--ca", tls_d .. "/cert.pem" })
        assert.equals(0, rc, so .. se)
        assert.equals("ok", r.status)
        assert.equals("h2", r.case.protocol)
        assert.equals(8, r.case.window)
        assert.equals("h2", r.tls.alpn)
        assert.is_true(r.completed > 0)
        identity(r)
        assert.equals(0, r.message_errors)
        assert.is_true(r.http.status["200"] >= r.completed)
        assert.matches("Status codes: 200 × [%d,]+", so)
    end)

    it("--h2c: prior knowledge over cleartext", function()
        local rc, so, se, r = oneliner("http://127.0.0.1:" .. clear_port .. "/f601", { "--h2c" })
        assert.equals(0, rc, so .. se)
        assert.equals("ok", r.status)
        assert.equals("h2c", r.case.protocol)
        assert.is_true(r.completed > 0)
        identity(r)
        assert.is_true(r.http.status["200"] >= r.completed)
    end)

    it("a 404 path gives numbers, every response counted under its status", function()
        local rc, so, se, r = oneliner("http://127.0.0.1:" .. clear_port .. "/missing", { "--h2c" })
        -- a response outside the success set is a completion with its
        -- latency, counted by status: degraded with numbers, exit 1
        assert.equals(1, rc, so .. se)
        assert.equals("degraded", r.status)
        assert.is_true(r.completed > 0)
        identity(r)
        assert.equals(0, r.message_errors)
        assert.equals(r.completed + r.drained, r.http.status["404"])
        assert.equals(r.http.status["404"], r.non_success)
        assert.equals(r.non_success, r.errors["HTTP 404"])
        assert.matches("404 × [%d,]+", so)
    end)

    it("keepalive_requests 50: nginx's GOAWAY(NO_ERROR) replaces the connection, no error", function()
        -- stock nginx ends an HTTP/2 connection with an orderly GOAWAY after
        -- keepalive_requests requests: as HTTP/1.1's Connection: close, not a fault
        local rc, so, se, r = oneliner("http://127.0.0.1:" .. ka_port .. "/f601",
            { "--h2c", "-d", "1s" })
        assert.equals(0, rc, so .. se)
        assert.equals("ok", r.status)
        identity(r)
        assert.is_true(r.completed > 0)
        assert.equals(0, r.message_errors)
        assert.equals(0, r.reconnects)
        assert.equals(0, r.reconnects_given_up)
        assert.is_nil(next(r.errors or {}))
        assert.is_true(r.h2.goaways > 0)
        assert.equals(0, r.h2.goaway_code)
        assert.equals(0, r.h2.rst_refused_stream)
        assert.is_true(r.server_closes >= r.h2.goaways)
        -- at most 50 requests a connection: the run went through many
        assert.is_true(r.h2.goaways >= math.floor(r.completed / 50) - 4 * 2)
        assert.is_true(r.http.status["200"] >= r.completed)
    end)

    it("refuses a server that does not select h2 by ALPN, naming what it selected", function()
        local rc, so, se, r = oneliner("https://127.0.0.1:" .. h1_port .. "/f601",
            { "--h2", "--ca", h1_d .. "/cert.pem" })
        assert.equals(1, rc, so .. se)
        assert.is_false(r.ok)
        assert.matches('the server selected "http/1.1" by ALPN, not h2', so .. se .. tostring(r.error), 1, true)
    end)
end)
