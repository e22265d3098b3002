-- proto_memcached_spec.lua -- arkbench.proto.memcached (docs/lua-api.md
-- "Sharing a workload"): requests encode as the text protocol has them;
-- every reply is found and decoded whole, every prefix of it (a split at
-- each byte boundary) is incomplete, never an error; a reader fed the
-- bytes in two pieces at every boundary gives the same replies; bytes that
-- are no reply raise.
local mc = require("arkbench.proto.memcached")

local REPLIES = {
    { "END\r\n", { values = {} } },
    { "VALUE k 0 3\r\nabc\r\nEND\r\n", { values = { { key = "k", flags = 0, value = "abc" } } } },
    { "VALUE a 5 2 77\r\nxy\r\nVALUE b 0 4 78\r\nEND\r\r\nEND\r\n",
      { values = { { key = "a", flags = 5, value = "xy", cas = 77 }, { key = "b", flags = 0, value = "END\r", cas = 78 } } } },
    { "STORED\r\n", "STORED" },
    { "NOT_STORED\r\n", "NOT_STORED" },
    { "EXISTS\r\n", "EXISTS" },
    { "NOT_FOUND\r\n", "NOT_FOUND" },
    { "DELETED\r\n", "DELETED" },
    { "TOUCHED\r\n", "TOUCHED" },
    { "42\r\n", 42 },
    { "ERROR\r\n", "ERROR" },
    { "CLIENT_ERROR bad data chunk\r\n", "CLIENT_ERROR bad data chunk" },
    { "SERVER_ERROR out of memory\r\n", "SERVER_ERROR out of memory" },
    { "VERSION 1.6.18\r\n", "VERSION 1.6.18" },
}

describe("arkbench.proto.memcached", function()
    it("encodes requests", function()
        assert.are.equal("get k\r\n", mc.get("k"))
        assert.are.equal("gets a b\r\n", mc.gets("a", "b"))
        assert.are.equal("set k 0 0 3\r\nabc\r\n", mc.set("k", "abc"))
        assert.are.equal("add k 7 60 2\r\n12\r\n", mc.add("k", 12, 7, 60))
        assert.are.equal("cas k 0 0 1 99\r\nv\r\n", mc.cas("k", "v", 99))
        assert.are.equal("delete k\r\n", mc.delete("k"))
        assert.are.equal("incr n 5\r\n", mc.incr("n", 5))
        assert.has_error(function() mc.get() end)
    end)

    it("finds and decodes every reply, and no prefix of one is whole", function()
        for _, c in ipairs(REPLIES) do
            local bytes, want = c[1], c[2]
            assert.are.equal(#bytes, mc.expect(bytes), bytes)
            assert.are.equal(#bytes, mc.expect(bytes .. "STORED\r\n"), bytes)
            local v, nxt = mc.decode(bytes)
            assert.are.same(want, v)
            assert.are.equal(#bytes + 1, nxt)
            for cut = 0, #bytes - 1 do
                assert.is_nil(mc.expect(bytes:sub(1, cut)), bytes .. " cut at " .. cut)
            end
        end
        assert.is_true(mc.is_error("ERROR"))
        assert.is_true(mc.is_error("SERVER_ERROR out of memory"))
        assert.is_false(mc.is_error("STORED"))
        assert.is_false(mc.is_error({ values = {} }))
    end)

    it("reads a stream split at every byte boundary into the same replies", function()
        local all, want = {}, {}
        for i, c in ipairs(REPLIES) do all[i] = c[1]; want[i] = c[2] end
        local stream = table.concat(all)
        for cut = 0, #stream do
            local r = mc.reader()
            local got = {}
            for _, piece in ipairs({ stream:sub(1, cut), stream:sub(cut + 1) }) do
                r:push(piece)
                while true do
                    local v = r:next()
                    if v == nil then break end
                    got[#got + 1] = v
                end
            end
            assert.are.same(want, got, "cut at " .. cut)
            assert.are.equal("", r:pending())
        end
    end)

    it("raises on bytes that are no reply", function()
        for _, b in ipairs({ "HELLO\r\n", "VALUE k x 3\r\n", "VALUE k 0 1\r\nab\r\nEND\r\n", "Q" }) do
            local ok, err = pcall(mc.expect, b)
            assert.is_false(ok, b)
            assert.truthy(tostring(err):find("^memcached: "), tostring(err))
        end
    end)
end)

describe("memcached.expect_ok", function()
    it("is expect, raising on an error reply", function()
        assert.are.equal(8, mc.expect_ok("STORED\r\n"))
        assert.is_nil(mc.expect_ok("SERVER_ERR"))
        assert.has_error(function() mc.expect_ok("SERVER_ERROR out of memory\r\n") end,
            'memcached: error reply "SERVER_ERROR out of memory"')
    end)
end)
