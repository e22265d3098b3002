-- http_request_spec.lua -- the built-in http/https client in request mode
-- (scenario key `request`, docs/protocols.md "Request mode") against a
-- real server: nginx (nginx-light) started here on loopback with a config
-- written here, serving a static page (Content-Length), a gzip'd file
-- (chunked: nginx compresses on the fly, so the length is unknown), 204
-- and 304 answers (no body), a `return 200 "text"` and nothing at
-- /missing (404); HEAD of the page has a Content-Length and no body. Over
-- https nginx presents an EC P-256 certificate made here with the openssl
-- CLI; the client verifies it through tls.ca, or not at all with
-- tls.verify = false (said in the run object).
--
-- Each case: 16 connections, callback and coroutine, window 1 and 4
-- (pipelined), every run ok and its books balanced; a 404 is a completion
-- with its latency, counted as status 404, in non_success and in
-- errors["HTTP 404"] (the run degraded, exit 1), never a framing error,
-- unless status = {404} makes it a success; strict = false leaves the exit
-- code to the thresholds.
--
-- Needs: nginx, openssl (.ci/run installs nginx-light). nginx runs under
-- `timeout`, in the foreground of its own process, stopped in teardown.
-- The one-liner (`arkbench http://...`, `https://... --ca | -k`) runs against
-- the same nginx.
-- Runtime: ~25 s.
local cjson_mod = require("cjson")

local ROOT = os.getenv("ARKBENCH_ROOT") or "."
local BIN = os.getenv("ARKBENCH_BIN") or (ROOT .. "/bin/arkbench")

local cjson = cjson_mod.new()

package.path = ROOT .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local shq, read_file, write_file = files.shq, files.read_file, files.write_file
local sh_ok, sh_out = proc.sh_ok, proc.sh_out

local peers = require("helpers.peers")

local function tmpdir() return files.tmpdir("_httpreq") end

teardown(function()
    peers.stop_started()
    files.remove_tmpdirs()
end)

local LOCATIONS = [[
        location = /empty { return 204; }
        location = /same { return 304; }
        location = /status { stub_status; }
        location = /text { default_type text/plain; return 200 "hello\n"; }
        location /fn/ { access_log {D}/fn.log fn; default_type text/plain; return 200 "fn\n"; }
        location = /chunked {
            default_type text/plain;
            gzip on; gzip_min_length 0; gzip_types text/plain;
            alias {D}/html/page.txt;
        }]]

-- Starts nginx (tls: with a certificate made in d; opts.keepalive_requests);
-- returns d, port.
local function start_nginx(tls, opts)
    local d = tmpdir()
    -- 4 KiB of text: the page (Content-Length) and, gzip'd, the chunked answer
    local lines = {}
    for i = 1, 64 do lines[i] = string.format("line %04d ", i) .. string.rep("abcdef", 9) end
    local page = table.concat(lines, "\n") .. "\n"
    local port = peers.start_nginx(d, { tls = tls, locations = LOCATIONS,
        http_lines = "    log_format fn '$connection $request_uri';",
        html = { ["index.html"] = page, ["page.txt"] = page },
        keepalive_requests = opts and opts.keepalive_requests })
    return d, port
end

-- Runs a scenario (the text of a table constructor's fields) against
-- 127.0.0.1:port; returns the exit code, the run objects, the output.
local runs_made = 0
local function run(d, port, fields)
    runs_made = runs_made + 1
    local file = d .. "/s" .. tostring(runs_made) .. ".lua"
    write_file(file, ([[return { name = "http_request", target = "127.0.0.1:%d",
        clients = 16, topology = "sharded:1", warmup = 0.1, duration = 0.4, repetitions = 1,
        %s }]]):format(port, fields))
    local out = file .. ".out"
    local rc = tonumber(sh_out("cd " .. shq(ROOT) .. " && " .. shq(BIN) .. " run " .. shq(file)
        .. " --out " .. shq(file .. ".r") .. " >" .. shq(out) .. " 2>&1 </dev/null; echo $?")
        :match("(%d+)"))
    local runs = {}
    for line in (read_file(file .. ".r/runs.jsonl") or ""):gmatch("[^\n]+") do
        runs[#runs + 1] = cjson.decode(line)
    end
    return rc, runs, read_file(out) or ""
end

local function balanced(r)
    assert.are.equal(r.sent, r.completed + r.drained + r.timed_out + r.message_errors
        + r.unfinished, r.case_id)
end

-- the http.status counts, summed
local function status_total(r)
    local n = 0
    for _, v in pairs(r.http.status) do n = n + v end
    return n
end

local function brief(r)
    return tostring(r.case_id) .. ": " .. tostring(r.error) .. " errors " .. cjson.encode(r.errors)
        .. " http " .. cjson.encode(r.http or {})
end

-- every shape of response, in one rotation per connection
local MIX = [[protocol = "%s", window = { 1, 4 }, execution = { "callback", "coroutine" },
    request = {
        { path = "/" },
        { method = "HEAD", path = "/", headers = { ["User-Agent"] = "arkbench-spec" } },
        { path = "/empty" },
        { path = "/same", status = { 304 } },
        { path = "/chunked", headers = { ["Accept-Encoding"] = "gzip" } },
        { method = "GET", path = "/text" },
    }]]

local function assert_mix_ok(rc, runs, out, d)
    assert.are.equal(0, rc, out .. (read_file(d .. "/error.log") or ""))
    assert.are.equal(4, #runs, out)
    for _, r in ipairs(runs) do
        assert.is_true(r.ok, brief(r))
        assert.is_nil(next(r.errors), brief(r))
        balanced(r)
        assert.is_true(r.completed > 0, brief(r))
        assert.are.equal(0, r.message_errors, brief(r))
        -- every response of a measured message is counted by its status:
        -- 4 of the 6 entries answer 200, one 204, one 304
        assert.are.equal(r.completed + r.drained, status_total(r), brief(r))
        assert.is_true(r.http.status["200"] > 0 and r.http.status["204"] > 0
            and r.http.status["304"] > 0, brief(r))
        assert.is_true(math.abs(r.http.status["200"] / 4 - r.http.status["204"]) <= 16, brief(r))
        assert.is_true(r.rtt_us.count > 0 and r.rtt_us.min > 0, brief(r))
    end
end

describe("http request mode against nginx", function()
    local d, port

    it("runs every response shape ok: Content-Length, HEAD, 204, 304, chunked; window 1 and 4", function()
        d, port = start_nginx(false)
        local rc, runs, out = run(d, port, MIX:format("http"))
        assert_mix_ok(rc, runs, out, d)
    end)

    it("counts a 404 as a completion with its latency: status 404, non_success, degraded", function()
        local rc, runs, out = run(d, port, [[protocol = "http", window = { 1, 4 },
            request = { path = "/missing" }]])
        assert.are.equal(1, rc, out) -- degraded: exit 1
        assert.are.equal(2, #runs, out)
        for _, r in ipairs(runs) do
            assert.are.equal("degraded", r.status, brief(r))
            assert.is_false(r.ok)
            balanced(r)
            assert.are.equal(0, r.message_errors, brief(r))
            -- every reply is a completion (or drained), with its latency
            assert.is_true(r.completed > 16 * 4, brief(r))
            assert.are.equal(r.completed + r.drained, r.rtt_us.count, brief(r))
            assert.is_true(r.round_trips_per_s > 0 and r.rtt_us.p50 > 0, brief(r))
            -- ... each counted by its status, as non-success and by class
            assert.are.equal(r.completed + r.drained, r.http.status["404"], brief(r))
            assert.are.equal(r.non_success, r.http.status["404"], brief(r))
            assert.are.equal(r.non_success, r.errors["HTTP 404"], brief(r))
            -- the successful ones alone: none
            assert.are.equal(0, r.http.rtt_ok_us.count, brief(r))
            assert.is_nil(r.errors.EFRAME, brief(r))
            assert.is_nil(r.errors.EPROTO, brief(r))
            assert.is_nil(r.errors.ECLOSED, brief(r))
            assert.truthy(tostring(r.error):find("status outside the success set", 1, true), brief(r))
            -- the bytes both ways: every request and every reply of the measure phase
            assert.is_true(r.bytes_sent >= r.sent * #"GET /missing HTTP/1.1\r\n", brief(r))
            assert.is_true(r.bytes_received >= r.completed * #"HTTP/1.1 404 Not Found\r\n", brief(r))
            assert.is_true(r.transfer_mib_per_s > 0, brief(r))
        end
    end)

    it("with strict = false a degraded run exits 0 and the thresholds decide", function()
        local rc, runs, out = run(d, port, [[protocol = "http", strict = false,
            request = { path = "/missing" }]])
        assert.are.equal(0, rc, out)
        assert.are.equal("degraded", runs[1].status, out)
        assert.are.equal(false, runs[1].case.strict, out)
        rc, runs, out = run(d, port, [[protocol = "http", strict = false,
            request = { path = "/missing" }, thresholds = { "error_rate < 0.5" }]])
        assert.are.equal(3, rc, out)
        assert.truthy(out:find('threshold crossed: default: "error_rate < 0.5" (error_rate = 1)', 1, true),
            out)
    end)

    it("counts mixed 200 and 404 replies by status, adding up to the replies, per tag too", function()
        local rc, runs, out = run(d, port, [[protocol = "http", window = { 1, 4 },
            request = { { path = "/text", tag = "ok" }, { path = "/missing", tag = "gone" } },
            thresholds = { "p99_us{tag=ok} < 10000000", "error_rate{tag=gone} > 0.99",
                           "error_rate{tag=ok} == 0" }]])
        assert.are.equal(1, rc, out) -- degraded
        assert.are.equal(2, #runs, out)
        for _, r in ipairs(runs) do
            balanced(r)
            local s200, s404 = r.http.status["200"], r.http.status["404"]
            assert.is_true(s200 > 0 and s404 > 0, brief(r))
            -- the status counts add up to the replies: completed + drained
            assert.are.equal(r.completed + r.drained, s200 + s404, brief(r))
            assert.are.equal(s404, r.non_success, brief(r))
            assert.are.equal(s404, r.errors["HTTP 404"], brief(r))
            -- one entry of two each: the counts differ by the window at most
            assert.is_true(math.abs(s200 - s404) <= 16 * 4, brief(r))
            -- the successful replies' own latency, completed ones only
            assert.is_true(r.http.rtt_ok_us.count > 0 and r.http.rtt_ok_us.count <= s200, brief(r))
            assert.are.equal(r.tags.gone.non_success, s404, brief(r))
            assert.are.equal(0, r.tags.ok.non_success, brief(r))
            assert.are.equal(0, r.tags.gone.errors, brief(r))
        end
        -- the thresholds by tag all held (the run is degraded: exit 1 first)
        assert.truthy(out:find("thresholds: all 3 held in every case", 1, true), out)
    end)

    it("keeps each tag's counts and latency apart (request entries with tag)", function()
        local rc, runs, out = run(d, port, [[protocol = "http", window = { 1, 4 },
            execution = { "callback", "coroutine" },
            request = { { path = "/text", tag = "text" }, { path = "/", tag = "page" },
                        { path = "/text", tag = "text" }, { path = "/missing", tag = "missing" },
                        { path = "/empty" } }]])
        assert.are.equal(1, rc, out) -- the 404s make the runs degraded
        assert.are.equal(4, #runs, out)
        for _, r in ipairs(runs) do
            balanced(r)
            local t = r.tags
            assert.is_table(t, brief(r))
            local sent, completed = 0, 0
            for name, v in pairs(t) do
                assert.are.equal(v.sent, v.completed + v.drained + v.errors, name)
                assert.is_true(v.warmup_sent > 0, name)
                sent, completed = sent + v.sent, completed + v.completed
            end
            -- entry k of 5 goes with message k mod 5 on every connection:
            -- /text twice, / once, /missing once, /empty (untagged) once
            assert.is_true(t.text.sent > 0 and t.page.sent > 0 and t.missing.sent > 0, brief(r))
            assert.is_true(math.abs(t.text.sent - 2 * t.page.sent) <= 2 * 16 * 4, brief(r))
            assert.is_true(r.sent - sent > 0, brief(r)) -- the untagged /empty
            assert.are.equal(0, t.text.errors, brief(r))
            assert.are.equal(0, t.page.errors, brief(r))
            -- every /missing is a 404: a completion, the tag's non_success
            -- are the run's
            assert.are.equal(t.missing.completed + t.missing.drained, t.missing.non_success, brief(r))
            assert.are.equal(r.non_success, t.missing.non_success, brief(r))
            assert.are.equal(0, t.missing.errors, brief(r))
            assert.are.equal(0, t.text.non_success, brief(r))
            assert.is_true(t.text.rtt_us.count == t.text.completed + t.text.drained
                and t.text.rtt_us.p50 > 0, brief(r))
            assert.is_truthy(t.page.rtt_histogram:match("^ab1:"), brief(r))
            assert.is_true(completed <= r.completed, brief(r))
        end
    end)

    it("takes a 404 as a success when status = {404} says so", function()
        local rc, runs, out = run(d, port, [[protocol = "http", execution = { "callback", "coroutine" },
            request = { path = "/missing", status = { 404 } }]])
        assert.are.equal(0, rc, out)
        assert.are.equal(2, #runs, out)
        for _, r in ipairs(runs) do
            assert.is_true(r.ok, brief(r))
            balanced(r)
            assert.are.equal(0, r.message_errors, brief(r))
            assert.are.equal(r.completed + r.drained, r.http.status["404"], brief(r))
        end
    end)
end)

-- nginx's log of /fn/ requests: { [nginx connection] = { uri, ... } } in order
local function fn_log(d)
    local by = {}
    for line in (read_file(d .. "/fn.log") or ""):gmatch("[^\n]+") do
        local c, uri = line:match("^(%d+) (%S+)$")
        if c then
            by[c] = by[c] or {}
            table.insert(by[c], uri)
        end
    end
    return by
end

describe("http request mode, request = function(i, conn)", function()
    it("gives each connection its own list, built up front and rotated from its start", function()
        local d, port = start_nginx(false)
        local rc, runs, out = run(d, port, [[protocol = "http", clients = 4,
            execution = { "callback", "coroutine" },
            request = function(i, conn)
                if i > conn.id + 1 then return nil end      -- connection k: k + 1 requests
                return { path = "/fn/" .. conn.id .. "/" .. i }
            end]])
        assert.are.equal(0, rc, out)
        assert.are.equal(2, #runs, out)
        for _, r in ipairs(runs) do
            assert.is_true(r.ok, brief(r))
            balanced(r)
            assert.are.equal("function", r.case.request)
        end
        -- every nginx connection saw one client's list, in order from entry 1
        local ids, conns = {}, 0
        for c, uris in pairs(fn_log(d)) do
            conns = conns + 1
            local id = assert(uris[1]:match("^/fn/(%d+)/1$"), c .. ": " .. uris[1])
            ids[id] = (ids[id] or 0) + 1
            local n = tonumber(id) + 1
            for k, uri in ipairs(uris) do
                assert.are.equal(("/fn/%s/%d"):format(id, (k - 1) % n + 1), uri, c)
            end
        end
        assert.are.equal(8, conns) -- 4 clients, 2 runs
        for id = 0, 3 do assert.are.equal(2, ids[tostring(id)], cjson.encode(ids)) end
    end)

    it("tags each connection's messages by its own list's entries", function()
        local d, port = start_nginx(false)
        -- connection k sends k + 1 requests in turn, all tagged "c<k>"
        local rc, runs, out = run(d, port, [[protocol = "http", clients = 3,
            request = function(i, conn)
                if i > conn.id + 1 then return nil end
                return { path = "/fn/" .. conn.id .. "/" .. i, tag = "c" .. conn.id }
            end]])
        assert.are.equal(0, rc, out)
        local r = runs[1]
        assert.is_true(r.ok, brief(r))
        local per = {}
        for _, uris in pairs(fn_log(d)) do
            local id = uris[1]:match("^/fn/(%d+)/")
            per[id] = (per[id] or 0) + #uris
        end
        for id = 0, 2 do
            local t = r.tags["c" .. id]
            assert.is_table(t, cjson.encode(r.tags))
            -- what nginx was sent on connection k is that tag's sends
            assert.are.equal(per[tostring(id)], t.sent + t.warmup_sent, cjson.encode(r.tags))
        end
    end)

    it("fails the run with the function's file:line when it errors or returns a bad value", function()
        local d, port = start_nginx(false)
        local rc, runs, out = run(d, port, [[protocol = "http",
            request = function(i, conn)
                if i > 1 then return nil end
                if conn.id == 3 then error("no request for 3") end
                return { path = "/fn/" .. conn.id }
            end]])
        assert.are.equal(1, rc, out)
        local e = tostring(runs[1].error)
        assert.truthy(e:find("s%d+%.lua:4: key 'request': the function failed for i = 1,"
            .. " connection 3: .*s%d+%.lua:6: no request for 3"), e)
        rc, runs, out = run(d, port, [[protocol = "http",
            request = function(i, conn) return i == 1 and "/fn/" or nil end]])
        assert.are.equal(1, rc, out)
        e = tostring(runs[1].error)
        assert.truthy(e:find("s%d+%.lua:4: key 'request': the function returned string \"/fn/\" for"
            .. " i = 1, connection 0; expected a table", 1), e)
        rc, runs, out = run(d, port, [[protocol = "http",
            request = function(i, conn) return { path = "/fn/" .. i } end]])
        assert.are.equal(1, rc, out)
        e = tostring(runs[1].error)
        assert.truthy(e:find("returned a request for i = 1001, connection 0; expected nil by i = 1001",
            1, true), e)
    end)
end)

-- nginx closes a keep-alive connection after keepalive_requests responses,
-- the last one saying Connection: close
describe("http request mode against a server that closes (Connection: close)", function()
    it("reopens the connection in its place, counted in server_closes, no error", function()
        local d, port = start_nginx(false, { keepalive_requests = 10 })
        local rc, runs, out = run(d, port, [[protocol = "http", clients = 4,
            execution = { "callback", "coroutine" }, request = { path = "/fn/close" }]])
        assert.are.equal(0, rc, out .. (read_file(d .. "/error.log") or ""))
        assert.are.equal(2, #runs, out)
        local served = 0
        for c, uris in pairs(fn_log(d)) do
            assert.is_true(#uris <= 10, c .. ": " .. #uris)
            served = served + #uris
        end
        local closes = 0
        for _, r in ipairs(runs) do
            assert.is_true(r.ok, brief(r))
            assert.is_nil(next(r.errors), brief(r))
            balanced(r)
            assert.are.equal(0, r.reconnects, brief(r))
            assert.are.equal(0, r.message_errors + r.timed_out + r.unfinished, brief(r))
            -- each connection closes after every 10th response, in any phase
            local answered = r.sent + r.warmup_completed
            assert.is_true(r.server_closes > 0, brief(r))
            assert.is_true(r.server_closes * 10 <= answered
                and r.server_closes * 10 > answered - 4 * 10, brief(r) .. " closes "
                .. r.server_closes .. " answered " .. answered)
            closes = closes + r.server_closes
        end
        assert.is_true(served >= closes * 10, served .. " " .. closes)
    end)

    it("counts requests pipelined behind the closing response as ECLOSED message errors", function()
        local d, port = start_nginx(false, { keepalive_requests = 10 })
        local rc, runs, out = run(d, port, [[protocol = "http", clients = 2, window = 4,
            request = { path = "/fn/close" }]])
        assert.are.equal(1, rc, out)
        local r = runs[1]
        assert.are.equal("degraded", r.status, brief(r))
        balanced(r)
        assert.is_true(r.server_closes > 0 and r.completed > 0, brief(r))
        assert.are.equal(0, r.reconnects, brief(r))
        -- each close leaves the 3 requests written behind the 10th unanswered
        assert.is_true(r.message_errors > 0 and r.message_errors <= 3 * r.server_closes, brief(r))
        assert.truthy(r.error_reasons.ECLOSED:find("Connection: close, with [123] more requests"
            .. " pipelined on it unanswered"), brief(r))
    end)
end)

-- nginx's own count of the requests it handled (stub_status; the query is one)
local function nginx_requests(port)
    local text = sh_out("bash -c 'exec 3<>/dev/tcp/127.0.0.1/" .. port
        .. "; printf \"GET /status HTTP/1.0\\r\\n\\r\\n\" >&3; cat <&3'")
    local n = tonumber(text:match("handled requests%s+%d+%s+%d+%s+(%d+)"))
    assert.is_truthy(n, "stub_status: " .. text)
    return n
end

describe("http request mode, counted against nginx's own books", function()
    it("sends exactly what nginx handles: sent + warm-up round trips", function()
        local d, port = start_nginx(false)
        local before = nginx_requests(port)
        local rc, runs, out = run(d, port, [[protocol = "http", window = 4,
            request = { { path = "/text" }, { path = "/" } }]])
        local after = nginx_requests(port)
        assert.are.equal(0, rc, out)
        local r = runs[1]
        assert.is_true(r.ok, brief(r))
        assert.are.equal(0, r.unfinished + r.timed_out + r.message_errors, brief(r))
        assert.are.equal(after - before - 1, r.sent + r.warmup_completed, brief(r))
        assert.are.equal(r.completed + r.drained, r.http.status["200"], brief(r))
    end)
end)

describe("https request mode against nginx", function()
    local d, port

    it("verifies nginx's certificate through tls.ca and runs every response shape ok", function()
        d, port = start_nginx(true)
        local rc, runs, out = run(d, port, MIX:format("https")
            .. (", tls = { ca = %q }"):format(d .. "/cert.pem"))
        assert_mix_ok(rc, runs, out, d)
        for _, r in ipairs(runs) do
            assert.are.equal("TLSv1.3", r.tls.version, brief(r))
            assert.is_nil(r.tls.verify)
            assert.are.equal(16, r.handshake_us.count)
        end
    end)

    it("fails the handshake without the CA (the system store does not know it)", function()
        local rc, runs, out = run(d, port, [[protocol = "https", request = { path = "/" }]])
        assert.are.equal(1, rc, out)
        assert.is_false(runs[1].ok)
        assert.truthy(tostring(runs[1].error):find("certificate verify failed", 1, true), brief(runs[1]))
    end)

    it("runs with tls.verify = false, said at load and in the run object", function()
        local rc, runs, out = run(d, port, [[protocol = "https", request = { path = "/text" },
            tls = { verify = false }]])
        assert.are.equal(0, rc, out)
        assert.truthy(out:find("verify = false: the server's certificate is NOT checked", 1, true), out)
        assert.is_true(runs[1].ok, brief(runs[1]))
        assert.is_false(runs[1].tls.verify)
        assert.are.equal(runs[1].completed + runs[1].drained, runs[1].http.status["200"])
    end)
end)

-- The one-liner (lua/arkbench/cmd/url.lua) writes a request-mode scenario
-- for http:// and https:// URLs: it runs against nginx too.
describe("the one-liner against nginx", function()
    local function oneliner(args)
        local d = tmpdir()
        local cmd = "cd " .. shq(ROOT) .. " && " .. shq(BIN)
        for _, a in ipairs(args) do cmd = cmd .. " " .. shq(a) end
        cmd = cmd .. " --json --out " .. shq(d .. "/r") .. " 2>" .. shq(d .. "/stderr") .. " </dev/null"
        local out = sh_out(cmd)
        local ok, v = pcall(cjson.decode, out)
        assert.is_true(ok, "not JSON: " .. out .. (read_file(d .. "/stderr") or ""))
        return v, read_file(d .. "/stderr") or ""
    end

    it("runs http://HOST:PORT/PATH and https with --ca or -k, counting statuses", function()
        local _, port = start_nginx(false)
        local v, err = oneliner({ "http://127.0.0.1:" .. port .. "/text", "-c", "16", "-d", "300ms" })
        assert.is_true(v.ok, err)
        assert.is_true(v.requests > 0 and v.http_status["200"] >= v.requests, err)
        v, err = oneliner({ "http://127.0.0.1:" .. port .. "/missing", "-c", "2", "-d", "200ms" })
        assert.is_false(v.ok)
        assert.are.equal("degraded", v.status, err)
        assert.are.equal(1, v.exit_code, err)
        assert.is_true(v.requests > 0 and v.latency_us.p50 > 0, err)
        assert.are.equal(v.non_success, v.http_status["404"], err)
        assert.are.equal(v.non_success, v.error_classes["HTTP 404"], err)
        assert.are.equal(0, v.success.requests, err)
        local ds, sport = start_nginx(true)
        v, err = oneliner({ "https://127.0.0.1:" .. sport .. "/", "-c", "16", "-d", "300ms",
            "--ca", ds .. "/cert.pem" })
        assert.is_true(v.ok, err)
        assert.is_true(v.requests > 0 and v.http_status["200"] >= v.requests, err)
        v, err = oneliner({ "https://127.0.0.1:" .. sport .. "/text", "-c", "4", "-d", "200ms", "-k" })
        assert.is_true(v.ok, err)
        assert.truthy(err:find("NOT checked", 1, true), err)
    end)
end)

-- Errors are counted, not fatal (issue #24): a URL that answers 404 gives
-- every number, the 404s counted by status; --ok-status makes them
-- successes; --no-strict leaves the exit code to the thresholds.
describe("the one-liner against a 404-ing URL", function()
    local port
    setup(function() _, port = start_nginx(false) end)

    -- stdout, stderr, exit code of the one-liner with args
    local function oneliner_text(args)
        local d = tmpdir()
        local cmd = "cd " .. shq(ROOT) .. " && " .. shq(BIN)
        for _, a in ipairs(args) do cmd = cmd .. " " .. shq(a) end
        cmd = cmd .. " --out " .. shq(d .. "/r") .. " >" .. shq(d .. "/out") .. " 2>" .. shq(d .. "/err")
            .. " </dev/null; echo $?"
        local rc = tonumber(sh_out(cmd):match("(%d+)"))
        return read_file(d .. "/out") or "", read_file(d .. "/err") or "", rc
    end

    it("prints throughput and latency with 404 × N, status degraded, exit 1", function()
        local out, err, rc = oneliner_text({ "http://127.0.0.1:" .. port .. "/missing", "-c", "4",
            "-d", "2s", "--warmup", "200ms" })
        assert.are.equal(1, rc, out .. err)
        local reqs = tonumber(out:match("\n  (%d+) requests in "))
        assert.is_true(reqs ~= nil and reqs > 0, out)
        assert.truthy(out:match("Requests/sec:%s+%d+%.%d%d"), out)
        assert.truthy(out:match("\n%s+99%%%s+[%d%.]+[mu]?s\n"), out)
        assert.truthy(out:find("Latency Histogram", 1, true), out)
        local n = out:match("Non%-success responses: 404 × ([%d,]+) %(4xx ")
        assert.is_truthy(n, out)
        n = tonumber((n:gsub(",", "")))
        -- the status line names the drained replies when they differ
        local st = out:match("Status codes: 404 × ([%d,]+)[^\n]*")
        assert.are.equal(n, tonumber((st:gsub(",", ""))), out)
        assert.is_true(n >= reqs, out)
        if n > reqs then
            local g = tostring(reqs):reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", "")
            assert.truthy(out:find(("= %s requests + "):format(g), 1, true), out)
        end
        assert.truthy(out:find("\nstatus: degraded: ", 1, true), out)
        assert.truthy(out:match("Transfer/sec:%s+%d+%.%d%dMiB"), out)
        assert.is_nil(out:find("FAILED", 1, true), out)
        -- one summary: the run's own table is not printed as well
        assert.is_nil((out .. err):find("round trips/s  MiB/s", 1, true), out .. err)
    end)

    it("exits 0 with --ok-status 404, and 3 with --no-strict and a crossed threshold", function()
        local out, err, rc = oneliner_text({ "http://127.0.0.1:" .. port .. "/missing", "-c", "2",
            "-d", "200ms", "--ok-status", "2xx,404" })
        assert.are.equal(0, rc, out .. err)
        assert.is_nil(out:find("Non-success", 1, true), out)
        out, err, rc = oneliner_text({ "http://127.0.0.1:" .. port .. "/missing", "-c", "2",
            "-d", "200ms", "--no-strict", "--threshold", "error_rate<0.5" })
        assert.are.equal(3, rc, out .. err)
        assert.truthy(out:find('threshold crossed: default: "error_rate<0.5" (error_rate = 1)', 1, true), out)
        out, err, rc = oneliner_text({ "http://127.0.0.1:" .. port .. "/missing", "-c", "2",
            "-d", "200ms", "--no-strict" })
        assert.are.equal(0, rc, out .. err)
        assert.truthy(out:find("\nstatus: degraded: ", 1, true), out)
    end)
end)
