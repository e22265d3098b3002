-- http_get.lua -- wrk-style HTTP/1.1 GET / with keep-alive.
--
-- What it measures: round trips/s and RTT of `GET /` against a real HTTP
-- server (default nginx on 127.0.0.1:8080), the way wrk does it: each
-- connection sends a request, waits for the whole response and sends the
-- next one on the same connection (window = 1; window > 1 pipelines).
-- Light form (execution = "lua", docs/lua-api.md): C does the IO and the
-- timing, and Lua is called once per response to find where it ends
-- (status line, headers, Content-Length body). A status other than 2xx, a
-- chunked body or a missing Content-Length ends the run as a script error.
--
-- How to run (a server must be listening; docs/lua-api.md, "Starting the
-- peers", has the nginx configuration and command lines, plain and TLS):
--   bin/arkbench run scenarios/custom/http_get.lua
--   bin/arkbench run scenarios/custom/http_get.lua --quick
--   bin/arkbench run scenarios/custom/http_get.lua --set protocol=tls \
--       --set tls.ca=/path/to/cert.pem --set target=127.0.0.1:8443
-- The server must keep each connection open for the whole run: a closed
-- connection is not reopened (issue #10), and nginx by default closes one
-- after 1000 requests (set keepalive_requests 100000000; and
-- keepalive_time 24h; in its http block).
-- Pointing it elsewhere: --set target=HOST:PORT (the Host header says
-- "localhost"; edit REQUEST below for another host or path). Compare with
--   wrk -t1 -c16 -d2s http://HOST:PORT/
local find, sub, byte, format = string.find, string.sub, string.byte, string.format
local tonumber = tonumber

local REQUEST = "GET / HTTP/1.1\r\nHost: localhost\r\nUser-Agent: arkbench\r\n\r\n"

-- Called with the bytes received so far (from the start of the response):
-- nil while it is incomplete, else its length. No copies of buf are made.
local function expect_response(buf)
    local head_end = find(buf, "\r\n\r\n", 1, true)
    if not head_end then return nil end -- headers incomplete
    -- "HTTP/1.x 2.." : the status class is byte 10
    if byte(buf, 10) ~= 50 or not find(buf, "^HTTP/1%.[01] %d%d%d") then
        error(format("GET /: unexpected response %q", sub(buf, 1, 80)))
    end
    local at, _, len = find(buf, "\r\n[Cc][Oo][Nn][Tt][Ee][Nn][Tt]%-[Ll][Ee][Nn][Gg][Tt][Hh]:[ \t]*(%d+)")
    if not at or at > head_end then
        error("GET /: response without Content-Length (chunked bodies are not handled here)")
    end
    local total = head_end + 3 + tonumber(len)
    if #buf < total then return nil end -- body incomplete
    return total
end

return {
    name = "http_get",
    protocol = "tcp",
    execution = "lua",
    target = "127.0.0.1:8080",
    load = { { clients = 1, window = 1 }, { clients = 16, window = 1 } },
    topology = "sharded:1",
    warmup = 0.25, duration = 1, repetitions = 3,
    message = REQUEST,
    expect = expect_response,
}
