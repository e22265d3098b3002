-- proto_resp_spec.lua -- arkbench.proto.resp (docs/lua-api.md "Sharing a
-- workload"): commands encode as arrays of bulk strings; every reply type
-- is found and decoded whole, and every prefix of it (a split at each
-- byte boundary) is incomplete, never an error; a reader fed the bytes in
-- two pieces at every boundary gives the same replies; bytes that are no
-- reply raise, naming the byte.
local resp = require("arkbench.proto.resp")

local REPLIES = {
    { "+OK\r\n", "OK" },
    { "-ERR unknown command 'FOO'\r\n", "err" },
    { ":1234\r\n", 1234 },
    { ":-7\r\n", -7 },
    { "$5\r\nhello\r\n", "hello" },
    { "$0\r\n\r\n", "" },
    { "$-1\r\n", resp.null },
    { "$6\r\na\r\nb\r\n\r\n", "a\r\nb\r\n" },
    { "*-1\r\n", resp.null },
    { "*0\r\n", {} },
    { "*3\r\n$3\r\nGET\r\n:1\r\n*2\r\n+a\r\n$-1\r\n", { "GET", 1, { "a", resp.null } } },
    { "%1\r\n+k\r\n:2\r\n", { k = 2 } },
    { ",3.5\r\n", 3.5 },
    { "#t\r\n", true },
    { "_\r\n", resp.null },
    { "=8\r\ntxt:abcd\r\n", "abcd" },
}

describe("arkbench.proto.resp", function()
    it("encodes a command as an array of bulk strings", function()
        assert.are.equal("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\n42\r\n", resp.command("SET", "k", 42))
        assert.are.equal("*1\r\n$4\r\nPING\r\n", resp.command("PING"))
        assert.are.equal("*2\r\n$3\r\nGET\r\n$0\r\n\r\n", resp.command("GET", ""))
        assert.are.equal("*4\r\n$4\r\nMSET\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n", resp.command("MSET", "a", 1, "b"))
        assert.are.equal("*0\r\n", resp.command())
    end)

    it("finds and decodes every reply type, and no prefix of one is whole", function()
        for _, c in ipairs(REPLIES) do
            local bytes, want = c[1], c[2]
            assert.are.equal(#bytes, resp.expect(bytes), bytes)
            assert.are.equal(#bytes, resp.expect(bytes .. "+NEXT\r\n"), bytes)
            local v, nxt = resp.decode(bytes)
            assert.are.equal(#bytes + 1, nxt)
            if want == "err" then
                assert.is_true(resp.is_error(v))
                assert.are.equal("ERR unknown command 'FOO'", v.err)
            else
                assert.are.same(want, v)
            end
            for cut = 0, #bytes - 1 do
                assert.is_nil(resp.expect(bytes:sub(1, cut)), bytes .. " cut at " .. cut)
                assert.is_nil(resp.decode(bytes:sub(1, cut)), bytes .. " cut at " .. cut)
            end
        end
    end)

    it("reads a stream split at every byte boundary into the same replies", function()
        local all, want = {}, {}
        for i, c in ipairs(REPLIES) do all[i] = c[1]; want[i] = c[2] end
        local stream = table.concat(all)
        for cut = 0, #stream do
            local r = resp.reader()
            local got = {}
            for _, piece in ipairs({ stream:sub(1, cut), stream:sub(cut + 1) }) do
                r:push(piece)
                while true do
                    local v = r:next()
                    if v == nil then break end
                    got[#got + 1] = v
                end
            end
            assert.are.equal(#want, #got, "cut at " .. cut)
            for i, w in ipairs(want) do
                if w == "err" then assert.is_true(resp.is_error(got[i])) else assert.are.same(w, got[i]) end
            end
            assert.are.equal("", r:pending())
        end
    end)

    it("raises on bytes that are no reply, naming where", function()
        for _, b in ipairs({ "hello\r\n", "$x\r\n", "$3\r\nabcde\r\n", "*1\r\n?\r\n", "Z" }) do
            local ok, err = pcall(resp.expect, b)
            assert.is_false(ok, b)
            assert.truthy(tostring(err):find("^RESP: .* at byte %d+"), tostring(err))
        end
    end)

    it("calls through a conn in the full form", function()
        local sent
        local conn = { call = function(_, req, expect, tag)
            sent = { req, tag }
            local reply = "*2\r\n$1\r\nv\r\n:3\r\n"
            assert.are.equal(#reply, expect(reply))
            return reply
        end }
        assert.are.same({ "v", 3 }, resp.call(conn, { "MGET", "a" }, "get"))
        assert.are.same({ resp.command("MGET", "a"), "get" }, sent)
        local failing = { call = function() return nil, "closed", "ECLOSED" end }
        local v, err, code = resp.call(failing, { "PING" })
        assert.is_nil(v)
        assert.are.equal("closed", err)
        assert.are.equal("ECLOSED", code)
    end)
end)

describe("resp.expect_ok", function()
    it("is expect, raising on an error reply", function()
        assert.are.equal(5, resp.expect_ok("+OK\r\n"))
        assert.is_nil(resp.expect_ok("-ERR x"))
        assert.has_error(function() resp.expect_ok("-ERR wrong type\r\n") end, 'RESP: error reply "-ERR wrong type"')
    end)
end)

describe("decode and expect agree on bytes that are no reply", function()
    local BAD = {
        { ":abc\r\n", "not an integer" },
        { ":\r\n", "not an integer" },
        { "(12x\r\n", "not an integer" },
        { ",abc\r\n", "not a double" },
        { "#x\r\n", "not a boolean" },
        { "_x\r\n", "not a null" },
        { "$1\r\nab\r\n", "not ended by CR LF" },
        { "$0x3\r\nabc\r\n", "not a length" },
        { "$ 3\r\nabc\r\n", "not a length" },
        { "$3.0\r\nabc\r\n", "not a length" },
        { "*1e0\r\n:1\r\n", "not a length" },
        { ("*1\r\n"):rep(100000) .. ":1\r\n", "nested deeper than 64" },
    }
    for _, c in ipairs(BAD) do
        it(("%q"):format(c[1]:sub(1, 20)) .. ": both raise RESP: " .. c[2], function()
            local ok1, e1 = pcall(resp.expect, c[1])
            local ok2, e2 = pcall(resp.decode, c[1])
            assert.is_false(ok1)
            assert.is_false(ok2)
            assert.matches("^RESP: .*" .. c[2], e1)
            assert.matches("^RESP: .*" .. c[2], e2)
            -- a reader raises the same
            local r = resp.reader()
            r:push(c[1])
            assert.has_error(function() r:next() end)
        end)
    end

    it("still decodes the edge forms that are replies", function()
        assert.are.same({ -12, 7 }, { resp.decode(":-12\r\n") })
        assert.are.same({ 12, 7 }, { resp.decode(":+12\r\n") })
        assert.are.equal(math.huge, (resp.decode(",inf\r\n")))
        assert.are.equal(-1.5, (resp.decode(",-1.5\r\n")))
        assert.are.equal(false, (resp.decode("#f\r\n")))
        assert.are.equal(resp.null, (resp.decode("$-1\r\n")))
        assert.are.equal("", (resp.decode("$0\r\n\r\n")))
        local nested = ("*1\r\n"):rep(64) .. ":1\r\n"
        assert.are.equal(#nested, resp.expect(nested))
        assert.is_table((resp.decode(nested)))
        -- incomplete stays nil in both
        assert.is_nil(resp.decode("$3\r\nab"))
        assert.is_nil(resp.expect("$3\r\nab"))
        assert.is_nil(resp.decode(":12"))
    end)
end)
