-- lua_udp_spec.lua -- execution = "lua" over protocol = "udp" (issue 14;
-- docs/lua-api.md "Over udp"), against arkbench's own udp echo (runs
-- without target) and a misbehaving one:
--   * the full form on two loops: conn:send / conn:receive of whole
--     datagrams, then conn:call with an expect function, every reply
--     checked; payload MiB/s is the measured replies' bytes;
--   * the light form with a string message (the reply is as long) and
--     with message(i) / expect(d, id, last) returning i;
--   * tags: conn:call's third argument and message's second value, counted
--     per tag;
--   * the light form against spec/fixtures/misbehaving/udp_faulty_echo.py
--     dropping every 10th datagram and duplicating every 7th: matched by
--     i, the losses are `udp.lost` and the copies `udp.duplicated`, and
--     the run stays ok;
--   * what udp refuses: a server function, expect = "line" (both at the
--     start of the run, ECONFIG), conn:receive with an argument (a script
--     error naming the line).
--
-- Needs: /usr/bin/python3 (the faulty echo).
-- Runtime: ~10 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")
local peers = require("helpers.peers")

local assert_identity, brief = ark.assert_identity, ark.brief

teardown(function()
    proc.stop_all()
    files.remove_tmpdirs()
end)

local function assert_ok(r)
    assert.are.equal("ok", r.status, brief(r))
    assert.is_true(r.ok, brief(r))
    assert.is_true(r.completed > 0, brief(r))
    assert_identity(r)
    assert.are.equal(0, ark.sum_values(r.errors), brief(r))
    assert.are.equal("lua", r.case.execution)
    assert.are.equal(r.timed_out, r.udp.lost, brief(r))
end

describe("execution = lua over udp against arkbench's udp echo", function()
    it("runs the full form: send/receive of whole datagrams, then timed calls", function()
        local res = ark.run_scenario([[
local MSG = string.rep("d", 40)
return { name = "udpfull", protocol = "udp", execution = "lua", clients = 4,
         topology = "sharded:2", warmup = 0.1, duration = 0.4, timeout = 2, repetitions = 1,
  client = function(conn)
    local hello = "hello " .. conn.id
    assert(conn:send(hello))
    local back = conn:receive()
    if back ~= hello then error("receive: got " .. tostring(back)) end
    local function is_reply(d) return d == MSG end
    while true do
      local r, err, code = conn:call(MSG, is_reply)
      if not r and code ~= "ETIMEDOUT" then error("call: " .. tostring(err)) end
    end
  end }
]], { name = "udpfull" })
        assert.are.equal(0, res.rc, res.stderr)
        assert.are.equal(1, #res.runs)
        local r = res.runs[1]
        assert_ok(r)
        assert.are.equal(0, r.udp.lost, brief(r))
        assert.are.equal(r.completed + r.drained, r.rtt_us.count)
        -- the bytes of the measured replies (40 each), not `payload`
        assert.is_true(math.abs(r.payload_mib_per_s * 1048576 * r.measured_s - 40 * r.completed) < 1,
            r.payload_mib_per_s .. " MiB/s for " .. r.completed .. " replies")
    end)

    it("runs the light form: a string message, and message(i) with expect(d, id, last)", function()
        local res = ark.run_scenario([[
local common = { name = "udplight", protocol = "udp", execution = "lua", clients = 2,
                 window = 4, warmup = 0.1, duration = 0.3, timeout = 2, repetitions = 1 }
local function part(t) for k, v in pairs(common) do t[k] = v end return t end
return {
  part { label = "string", message = string.rep("s", 24) },
  part { label = "numbered",
    message = function(i, id) return string.format("i=%d id=%d ", i, id) end,
    expect = function(d, id, last)
      local i, from = d:match("^i=(%d+) id=(%d+) $")
      if tonumber(from) ~= id then error("a reply for connection " .. tostring(from)) end
      i = tonumber(i)
      if i > last then error("reply " .. i .. " past the last message sent " .. last) end
      return i
    end },
}
]], { name = "udplight" })
        assert.are.equal(0, res.rc, res.stderr)
        assert.are.equal(2, #res.runs)
        for _, r in ipairs(res.runs) do
            assert_ok(r)
            assert.are.equal(0, r.udp.lost, brief(r))
            assert.are.equal(0, r.udp.duplicated + r.udp.reordered + r.udp.late, brief(r))
        end
    end)
end)

describe("execution = lua over udp with tags", function()
    it("counts conn:call's tag and message's second value per tag", function()
        local res = ark.run_scenario([[
local MSG = string.rep("x", 32)
local common = { name = "udptags", protocol = "udp", execution = "lua", clients = 2,
                 warmup = 0.1, duration = 0.3, timeout = 2, repetitions = 1 }
local function part(t) for k, v in pairs(common) do t[k] = v end return t end
return {
  part { label = "call", client = function(conn)
      local n = 0
      local function ok(d) return d == MSG end
      while true do n = n + 1; conn:call(MSG, ok, n % 3 == 0 and "set" or "get") end
    end },
  part { label = "light", window = 4,
    message = function(i) return "n" .. i, i % 3 == 0 and "set" or "get" end,
    expect = function(d) return tonumber(d:match("^n(%d+)$")) end },
  -- the scenario's tag key: every message of a constant message
  part { label = "constant", window = 4, message = MSG, tag = "const" },
}
]], { name = "udptags" })
        assert.are.equal(0, res.rc, res.stderr)
        assert.are.equal(3, #res.runs)
        local const = table.remove(res.runs)
        assert_ok(const)
        assert.same({ "const" }, ark.keys(const.tags))
        assert.are.equal(const.sent, const.tags.const.sent, brief(const))
        assert.are.equal(const.completed, const.tags.const.completed, brief(const))
        assert.are.equal(const.rtt_us.count, const.tags.const.rtt_us.count, brief(const))
        for _, r in ipairs(res.runs) do
            assert_ok(r)
            local get, set = r.tags.get, r.tags.set
            assert.is_truthy(get and set, brief(r))
            assert.are.equal(r.sent, get.sent + set.sent, brief(r))
            assert.are.equal(r.completed, get.completed + set.completed, brief(r))
            -- one set in three, per client (2 clients, a few in flight)
            assert.is_true(math.abs(get.sent - 2 * set.sent) <= 16,
                r.case_id .. ": get " .. get.sent .. ", set " .. set.sent)
        end
    end)
end)

describe("execution = lua over udp against an echo that drops and duplicates", function()
    it("matches replies by number: losses are lost, copies duplicated, the run ok", function()
        local res = peers.scenario_against_python(
            ark.ROOT .. "/spec/fixtures/misbehaving/udp_faulty_echo.py", function(port)
                return string.format([[
return { name = "udpfaulty", protocol = "udp", execution = "lua", target = "127.0.0.1:%d",
         clients = 2, window = 8, warmup = 0.1, duration = 0.6, timeout = 0.05, repetitions = 1,
  message = function(i) return "n" .. i end,
  expect = function(d) return tonumber(d:match("^n(%%d+)$")) end }
]], port)
            end, { name = "udpfaulty", args = { "drop=10", "dup=7" }, settle = 0.2 })
        assert.are.equal(1, #res.runs, res.stderr)
        local r = res.runs[1]
        assert_ok(r)
        assert.is_true(r.udp.lost > 0, brief(r))
        assert.is_true(r.udp.duplicated > 0, brief(r))
        -- about 1 in 10 lost (a busy machine may lose a few more)
        assert.is_true(r.udp.lost >= r.sent / 20, r.udp.lost .. " of " .. r.sent)
    end)
end)

describe("execution = lua over udp refuses", function()
    local function one(text, name)
        local res = ark.run_scenario(text, { name = name })
        assert.are.equal(1, #res.runs, res.stderr)
        return res.runs[1], res
    end

    it("a server function, and expect = \"line\", when the run starts", function()
        local r = one([[
return { name = "udpsrv", protocol = "udp", execution = "lua",
         warmup = 0.05, duration = 0.1, repetitions = 1,
  client = function(conn) conn:call("x") end,
  server = function(conn) end }
]], "udpsrv")
        assert.are.equal("failed", r.status, brief(r))
        assert.is_truthy(tostring(r.error):find("over udp runs a client only", 1, true), brief(r))
        r = one([[
return { name = "udpline", protocol = "udp", execution = "lua",
         warmup = 0.05, duration = 0.1, repetitions = 1, message = "a\n", expect = "line" }
]], "udpline")
        assert.are.equal("failed", r.status, brief(r))
        assert.is_truthy(tostring(r.error):find('expect = "line" means nothing for datagrams', 1, true),
            brief(r))
    end)

    it("conn:receive with an argument, naming the scenario's line", function()
        local r, res = one([[
return { name = "udprecv", protocol = "udp", execution = "lua",
         warmup = 0.05, duration = 0.1, repetitions = 1,
  client = function(conn)
    conn:send("x")
    conn:receive("*l")
  end }
]], "udprecv")
        assert.are.equal("script_error", r.status, brief(r))
        assert.is_truthy(tostring(r.error):find("udprecv.lua:5: bad argument #1 to 'receive' (over udp"
            .. " it takes none", 1, true), brief(r) .. "\n" .. res.stderr)
    end)
end)
