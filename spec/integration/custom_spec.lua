-- custom_spec.lua -- the shipped custom workloads (issue 4, acceptance 4 and
-- 5) against the real servers they were written for: scenarios/custom/
-- resp_ping.lua against a redis-server started here on a free port, and
-- scenarios/custom/http_get.lua against nginx (nginx-light) serving a
-- 1 KiB index.html from a generated config in a temp folder. Both run with
-- --set target=127.0.0.1:PORT --quick and every run must be ok.
--
-- Needs: redis-server (with redis-cli), nginx (.ci/run installs
-- redis-server and nginx-light). Servers run under `timeout`, in the
-- foreground of their own process, and are stopped in teardown.
-- Runtime: ~10 s.
local cjson_mod = require("cjson")

local ROOT = os.getenv("ARKBENCH_ROOT") or "."
local BIN = os.getenv("ARKBENCH_BIN") or (ROOT .. "/bin/arkbench")

local cjson = cjson_mod.new()
cjson.decode_invalid_numbers(false)

package.path = ROOT .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
-- shared helpers (spec/helpers/)
local shq = files.shq
local read_file = files.read_file
local write_file = files.write_file
local sh_ok = proc.sh_ok
local sh_out = proc.sh_out

local dirs, pids = {}, {}
local function tmpdir()
    local p = os.tmpname()
    os.remove(p)
    p = p .. "_custom"
    assert(sh_ok("mkdir -p " .. shq(p)))
    dirs[#dirs + 1] = p
    return p
end

teardown(function()
    for _, pid in ipairs(pids) do os.execute("kill -TERM " .. pid .. " 2>/dev/null") end
    for _, d in ipairs(dirs) do os.execute("rm -rf " .. shq(d)) end
end)

local function have(cmd)
    return sh_ok("command -v " .. cmd .. " >/dev/null 2>&1")
end

-- true once something accepts TCP connections on 127.0.0.1:port
local function listening(port)
    return sh_ok("bash -c 'exec 3<>/dev/tcp/127.0.0.1/" .. port .. "' 2>/dev/null")
end

local function port_free(port)
    return not listening(port)
end

-- Starts `cmd` (a shell command, its output to log) in the background under
-- `timeout`; returns its pid once `port` accepts connections, else nil.
local function start_server(cmd, port, log)
    local pid = tonumber(sh_out("timeout 300 " .. cmd .. " >" .. shq(log) .. " 2>&1 & echo $!"))
    assert.is_truthy(pid, "could not start: " .. cmd)
    pids[#pids + 1] = pid
    for _ = 1, 100 do
        if listening(port) then return pid end
        if not sh_ok("kill -0 " .. pid .. " 2>/dev/null") then break end
        sh_ok("sleep 0.05")
    end
    os.execute("kill -TERM " .. pid .. " 2>/dev/null")
    return nil, read_file(log) or ""
end

-- a port from 20000 up that nothing listens on
local next_port = 20000 + (tonumber(sh_out("echo $$")) or 0) % 5000
local function free_port()
    for _ = 1, 200 do
        next_port = next_port + 1
        if port_free(next_port) then return next_port end
    end
    error("no free port found from 20000 up")
end

-- Starts a server on a free port (retrying when another process took it).
local function start_on_free_port(make_cmd, log)
    local last
    for _ = 1, 5 do
        local port = free_port()
        local pid, out = start_server(make_cmd(port), port, log)
        if pid then return port, pid end
        last = out
    end
    error("server did not start: " .. tostring(last))
end

local function run(args)
    local d = tmpdir()
    local cmd = "cd " .. shq(ROOT) .. " && " .. shq(BIN) .. " run"
    for _, a in ipairs(args) do cmd = cmd .. " " .. shq(a) end
    cmd = cmd .. " --out " .. shq(d .. "/r") .. " >" .. shq(d .. "/stdout") .. " 2>"
        .. shq(d .. "/stderr") .. " </dev/null; echo $?"
    local rc = tonumber(sh_out(cmd):match("(%d+)"))
    local runs = {}
    for line in (read_file(d .. "/r/runs.jsonl") or ""):gmatch("[^\n]+") do
        runs[#runs + 1] = cjson.decode(line)
    end
    return rc, runs, (read_file(d .. "/stdout") or "") .. (read_file(d .. "/stderr") or "")
end

local function assert_all_ok(runs, n, out)
    assert.are.equal(n, #runs, out)
    for _, r in ipairs(runs) do
        assert.is_true(r.ok, tostring(r.case_id) .. ": " .. tostring(r.error))
        assert.are.equal("ok", r.status)
        assert.is_true(r.completed > 0)
        assert.are.equal(r.sent, r.completed + r.drained + r.timed_out + r.message_errors
            + r.unfinished)
        assert.is_true(r.rtt_us.count > 0 and r.rtt_us.min > 0)
    end
end

describe("custom workloads against real servers", function()
    it("runs resp_ping.lua (PING, SET/GET over RESP) against redis-server", function()
        assert.is_true(have("redis-server") and have("redis-cli"),
            "redis-server and redis-cli are needed (apt-get install redis-server)")
        local d = tmpdir()
        local port = start_on_free_port(function(p)
            return "redis-server --port " .. p .. " --bind 127.0.0.1 --save '' --appendonly no"
                .. " --daemonize no --dir " .. shq(d)
        end, d .. "/redis.log")
        local rc, runs, out = run({ "scenarios/custom/resp_ping.lua", "--set",
            "target=127.0.0.1:" .. port, "--quick" })
        assert.are.equal(0, rc, out)
        assert_all_ok(runs, 5, out)
        -- the SET/GET part wrote its per-connection keys: 64-byte values
        local v = sh_out("redis-cli -p " .. port .. " GET arkbench:0")
        assert.are.equal(string.rep("v", 64), (v:gsub("%s+$", "")))
        -- PING replies are 7 bytes each (+PONG\r\n)
        for _, r in ipairs(runs) do
            if r.case.payload == 16 then
                assert.is_true(math.abs(r.payload_mib_per_s * 1048576 * r.measured_s
                    - 7 * r.completed) < 1)
            end
        end
    end)

    it("runs http_get.lua (GET / with keep-alive) against nginx", function()
        assert.is_true(have("nginx"), "nginx is needed (apt-get install nginx-light)")
        local d = tmpdir()
        assert(sh_ok("mkdir -p " .. shq(d .. "/html") .. " " .. shq(d .. "/tmp")))
        write_file(d .. "/html/index.html", string.rep("a", 1023) .. "\n")
        local conf = d .. "/nginx.conf"
        local port = start_on_free_port(function(p)
            write_file(conf, ([[
daemon off;
master_process off;
worker_processes 1;
pid %s/nginx.pid;
error_log %s/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path %s/tmp/body;
    proxy_temp_path %s/tmp/proxy;
    fastcgi_temp_path %s/tmp/fastcgi;
    uwsgi_temp_path %s/tmp/uwsgi;
    scgi_temp_path %s/tmp/scgi;
    keepalive_requests 100000000;
    server {
        listen 127.0.0.1:%d;
        root %s/html;
    }
}
]]):format(d, d, d, d, d, d, d, p, d))
            return "nginx -e " .. shq(d .. "/error.log") .. " -p " .. shq(d) .. " -c " .. shq(conf)
        end, d .. "/nginx.out")
        local rc, runs, out = run({ "scenarios/custom/http_get.lua", "--set",
            "target=127.0.0.1:" .. port, "--quick" })
        assert.are.equal(0, rc, out .. (read_file(d .. "/error.log") or ""))
        assert_all_ok(runs, 2, out)
        -- each response is the headers plus the 1 KiB body
        for _, r in ipairs(runs) do
            local per = r.payload_mib_per_s * 1048576 * r.measured_s / r.completed
            assert.is_true(per > 1024 + 100 and per < 1024 + 400, "bytes per response " .. per)
        end
    end)
end)
