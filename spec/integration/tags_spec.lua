-- tags_spec.lua -- tags in execution = "lua" (docs/lua-api.md "Tags"):
-- conn:call(request, expect, tag) and the light form's message returning
-- (bytes, tag), against arkbench's own echo (no peer): each tag's counts
-- and histogram in the run object, summing with the untagged messages to
-- the run's own; and the refusals: a 17th distinct tag, a tag that is not
-- a string, each naming the scenario's line. The memcached get/set mix is
-- memcached_spec.lua; request mode's tags are in http_request_spec.lua.
-- Runtime: ~10 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local ark = require("helpers.arkbench")
local files = require("helpers.files")

teardown(function() files.remove_tmpdirs() end)

local HEAD = [[
local MSG = string.rep("m", 64)
return { name = "tags", execution = "lua", framing = "raw", payload = 64, clients = 4,
    window = %d, warmup = 0.1, duration = 0.4, repetitions = 1, topology = "sharded:%d",
]]

local function scenario(window, loops, body)
    return HEAD:format(window, loops) .. body .. "\n}\n"
end

local function brief(r) return ark.brief(r) .. " tags=" .. ark.cjson.encode(r.tags or {}) end

-- every tag balances; tagged + untagged = the run's counts
local function assert_tag_books(r, untagged_expected)
    local sent, completed, drained = 0, 0, 0
    for name, t in pairs(r.tags) do
        assert.are.equal(t.sent, t.completed + t.drained + t.errors, name .. " " .. brief(r))
        assert.are.equal(t.completed + t.drained, t.rtt_us.count, name)
        assert.is_truthy(t.rtt_histogram:match("^ab1:"), name)
        assert.is_true(t.completed > 0 and t.warmup_sent > 0 and t.rtt_us.p50 > 0, name .. " " .. brief(r))
        sent, completed, drained = sent + t.sent, completed + t.completed, drained + t.drained
    end
    if untagged_expected then
        assert.is_true(r.sent > sent, brief(r))
    else
        assert.are.equal(r.sent, sent, brief(r))
        assert.are.equal(r.completed, completed, brief(r))
        assert.are.equal(r.drained, drained, brief(r))
    end
end

describe("tags in execution = lua", function()
    it("conn:call(request, expect, tag): each tag's counts and latency, on one and two loops", function()
        for _, loops in ipairs({ 1, 2 }) do
            local res = ark.run_scenario(scenario(1, loops, [[
    client = function(conn)
        local i = 0
        while true do
            i = i + 1
            local tag = i % 4 == 0 and "set" or "get"
            if not conn:call(MSG, 64, tag) then return end
        end
    end,]]))
            assert.are.equal(0, res.rc, res.stdout .. res.stderr)
            local r = res.runs[1]
            ark.assert_identity(r)
            assert.is_true(r.ok, brief(r))
            assert.same({ "get", "set" }, ark.keys(r.tags))
            assert_tag_books(r, false)
            -- one in four is a set, on every connection
            local ratio = r.tags.set.sent / r.sent
            assert.is_true(ratio > 0.24 and ratio < 0.26, brief(r))
        end
    end)

    it("the light form: message returns (bytes, tag), nil for an untagged message", function()
        local res = ark.run_scenario(scenario(8, 1, [[
    message = function(i, id)
        if i % 3 == 0 then return MSG, "third" end
        if i % 3 == 1 then return MSG, "fir" .. "st" end -- built, not a constant: the same tag
        return MSG
    end,
    expect = 64,]]))
        assert.are.equal(0, res.rc, res.stdout .. res.stderr)
        local r = res.runs[1]
        ark.assert_identity(r)
        assert.is_true(r.ok, brief(r))
        assert.same({ "first", "third" }, ark.keys(r.tags))
        assert_tag_books(r, true)
        local third = r.tags.third.sent / r.sent
        assert.is_true(third > 0.32 and third < 0.35, brief(r))
        -- the end of the run prints a line per tag under the case's row,
        -- with its round trips/s (docs/reports.md, "The terminal table")
        local table_text = res.stdout
        for _, name in ipairs({ "first", "third" }) do
            local rate = table_text:match("\n  tag " .. name .. ": ([%d,]+) rt/s, p50 [%d.,]+ µs, p99 [%d.,]+ µs\n")
            assert.is_truthy(rate, table_text)
            assert.are.equal(math.floor(r.tags[name].round_trips_per_s + 0.5), tonumber((rate:gsub(",", ""))))
        end
    end)

    it("the scenario's tag key: every message of a constant message carries it", function()
        for _, loops in ipairs({ 1, 2 }) do
            local res = ark.run_scenario(scenario(8, loops, [[
    message = MSG, tag = "ping",]]))
            assert.are.equal(0, res.rc, res.stdout .. res.stderr)
            local r = res.runs[1]
            ark.assert_identity(r)
            assert.is_true(r.ok, brief(r))
            assert.same({ "ping" }, ark.keys(r.tags))
            assert_tag_books(r, false)
            assert.are.equal(r.rtt_us.count, r.tags.ping.rtt_us.count, brief(r))
        end
    end)

    it("refuses the tag key without a string message, or not a tag name, naming file:line and key", function()
        local cases = {
            { [[
    message = function(i) return MSG end, expect = 64,
    tag = "ping",]], "key 'tag': given without a string message (a function message returns its"
                .. " tag as its second value: return bytes, tag)" },
            { [[
    client = function(conn) end,
    tag = "ping",]], "key 'tag': given without a string message (client = function(conn) tags"
                .. " each round trip itself: conn:call(request, expect, tag))" },
            { [[
    message = MSG,
    tag = string.rep("t", 49),]], "key 'tag': got string \"ttt" },
            { [[
    message = MSG,
    tag = 7,]], "key 'tag': got 7; expected a tag name: a string of 1 to 48 bytes without control"
                .. " characters" },
        }
        for i, c in ipairs(cases) do
            local res = ark.run_scenario(scenario(1, 1, c[1]), { name = "badtag" .. i })
            assert.are.equal(2, res.rc, res.stderr)
            -- the tag's line: line 5 of the file (HEAD is 4 lines)
            assert.matches("badtag" .. i .. ".lua:5: " .. c[2], res.stderr, 1, true)
            assert.are.equal(0, #res.runs)
        end
    end)

    it("refuses a 17th distinct tag as a script error at the call's line", function()
        local res = ark.run_scenario(scenario(1, 1, [[
    client = function(conn)
        local i = 0
        while true do
            i = i + 1
            if not conn:call(MSG, 64, "t" .. (i % 17)) then return end -- line 8
        end
    end,]]), { name = "many" })
        local r = res.runs[1]
        assert.are.equal("script_error", r.status, brief(r))
        assert.matches("many.lua:8: conn:call: tag 't0': a case has at most 16 distinct tags"
            .. " (it has t1, t2, t3", r.error, 1, true)
    end)

    it("refuses a tag that is not a string, naming the line (full form) or the function (light)", function()
        local res = ark.run_scenario(scenario(1, 1, [[
    client = function(conn)
        while true do
            if not conn:call(MSG, 64, 7) then return end -- line 6
        end
    end,]]), { name = "badcall" })
        local r = res.runs[1]
        assert.are.equal("script_error", r.status, brief(r))
        assert.matches("badcall.lua:6: bad argument #3 to 'call' (a tag name, a string, expected;"
            .. " got number)", r.error, 1, true)

        res = ark.run_scenario(scenario(4, 1, [[
    message = function(i) -- line 4
        return MSG, { "not a tag" }
    end,
    expect = 64,]]), { name = "badlight" })
        r = res.runs[1]
        assert.are.equal("script_error", r.status, brief(r))
        assert.matches("badlight.lua:4: message(1): its second value is table; expected nil or a tag"
            .. " name (a string)", r.error, 1, true)
    end)
end)
