local json = require("arkbench.util.json")

describe("json.encode", function()
    it("writes NaN and infinities as null, at any depth", function()
        assert.are.equal("null", json.encode(0 / 0))
        assert.are.equal("[null,null,null]", json.encode({ 0 / 0, 1 / 0, -1 / 0 }))
        assert.are.equal('{"a":{"b":[1,null]},"c":null}',
            json.encode({ a = { b = { 1, 0 / 0 } }, c = 1 / 0 }))
    end)

    it("keeps json.null as null", function()
        assert.are.equal(require("cjson").null, json.null)
        assert.are.equal('{"x":null}', json.encode({ x = json.null }))
        assert.are.equal("[1,null,3]", json.encode({ 1, json.null, 3 }))
    end)

    it("writes integers with all their digits", function()
        assert.are.equal("0", json.encode(0))
        assert.are.equal("-42", json.encode(-42))
        assert.are.equal("99999999999999", json.encode(99999999999999))
        assert.are.equal("100000000000000", json.encode(1e14))
        assert.are.equal("123456789012345", json.encode(123456789012345))
        assert.are.equal("1000000000000000", json.encode(1e15))
        assert.are.equal("9007199254740991", json.encode(2 ^ 53 - 1))
        assert.are.equal("9007199254740992", json.encode(2 ^ 53))
        assert.are.equal("-9007199254740992", json.encode(-2 ^ 53))
    end)

    it("writes other numbers with the fewest digits that read back exactly", function()
        assert.are.equal("0.1", json.encode(0.1))
        assert.are.equal("2.5", json.encode(2.5))
        assert.are.equal("0.3333333333333333", json.encode(1 / 3))
        assert.are.equal("12345678901234.5", json.encode(12345678901234.5))
        assert.are.equal("1e+300", json.encode(1e300))
        assert.are.equal("1.5e-07", json.encode(1.5e-7))
        assert.are.equal("0", json.encode(-0.0))
        for _, v in ipairs({ 1 / 3, 2 / 3, 0.1 + 0.2, 123.456, 1e-300, 5e-324, 1.7976931348623157e308,
            123456789012345678 }) do
            assert.are.equal(v, json.decode(json.encode(v)))
        end
    end)

    it("writes and reads '.' decimals even under a ',' locale", function()
        local old = os.setlocale(nil, "numeric")
        if not os.setlocale("de_DE.UTF-8", "numeric") then
            pending("the de_DE.UTF-8 locale is not installed on this host")
            return
        end
        local ok, enc, dec = pcall(function()
            return json.encode({ 0.5, 1234.25 }), json.decode("[0.5,1234.25]")
        end)
        os.setlocale(old, "numeric")
        assert.is_true(ok, enc)
        assert.are.equal("[0.5,1234.25]", enc)
        assert.are.same({ 0.5, 1234.25 }, dec)
    end)

    it("sorts object keys and tells arrays from objects", function()
        assert.are.equal('{"a":1,"b":true,"c":"x"}', json.encode({ c = "x", a = 1, b = true }))
        assert.are.equal("[1,2,3]", json.encode({ 1, 2, 3 }))
        assert.are.equal("[1,null,3]", json.encode({ [1] = 1, [3] = 3 }))
        assert.are.equal('{"1":"a","x":"b"}', json.encode({ "a", x = "b" }))
        assert.are.equal('{"100":1}', json.encode({ [100] = 1 }))
        assert.are.equal("{}", json.encode({}))
        assert.are.equal("[]", json.encode(json.array()))
        assert.are.equal("[4]", json.encode(json.array({ 4 })))
        assert.is_true(json.is_array(json.array()))
        assert.is_false(json.is_array({}))
    end)

    it("escapes strings as JSON needs, and leaves '/' alone", function()
        assert.are.equal([["a\"b\\c\n\t\r\b\f\u0001\u0000"]], json.encode('a"b\\c\n\t\r\b\f\1\0'))
        assert.are.equal([["/work/main/results"]], json.encode("/work/main/results"))
        assert.are.equal('"µs"', json.encode("µs"))
    end)

    it("pretty-prints with opts.indent", function()
        local s = json.encode({ b = { 1, 2 }, a = json.array(), c = {} }, { indent = 2 })
        assert.are.equal('{\n  "a": [],\n  "b": [\n    1,\n    2\n  ],\n  "c": {}\n}', s)
        assert.are.equal('{\n\t"a": 1\n}', json.encode({ a = 1 }, { indent = "\t" }))
    end)

    it("raises on values JSON cannot hold", function()
        local t = {}
        t.self = t
        local ok, err = pcall(json.encode, t)
        assert.is_false(ok)
        assert.matches("json.encode: table contains a cycle$", err)
        ok, err = pcall(json.encode, { f = print })
        assert.is_false(ok)
        assert.matches("json.encode: cannot encode a function$", err)
        ok, err = pcall(json.encode, { [true] = 1 })
        assert.is_false(ok)
        assert.matches("json.encode: cannot use a boolean as an object key$", err)
    end)
end)

describe("json.decode", function()
    it("decodes objects, arrays, numbers and null", function()
        local v = json.decode('{"a":[1,2.5,null],"b":"x\\/y","c":123456789012345,"d":false}')
        assert.are.same({ a = { 1, 2.5, json.null }, b = "x/y", c = 123456789012345, d = false }, v)
        assert.are.equal(json.null, v.a[3])
    end)

    it("returns nil and a message for malformed text instead of raising", function()
        local v, err = json.decode("[1,2")
        assert.is_nil(v)
        assert.are.equal("Expected comma or array end but found T_END at character 5", err)
        v, err = json.decode("")
        assert.is_nil(v)
        assert.is_string(err)
    end)

    it("refuses NaN and Infinity literals", function()
        local v, err = json.decode('{"a":NaN}')
        assert.is_nil(v)
        assert.matches("invalid token", err)
        assert.is_nil((json.decode("[Infinity]")))
    end)

    it("refuses a non-string argument", function()
        local v, err = json.decode(nil)
        assert.is_nil(v)
        assert.are.equal("json.decode: string expected, got nil", err)
    end)

    it("round-trips a run-object-like value", function()
        local run = {
            schema_version = 1, ok = true, error = json.null, sent = 123456789012345,
            round_trips_per_s = 48213.7, rtt_us = { p50 = 20.4, p99 = 31.02, count = 964274 },
            errors = { ECONNRESET = 2 }, notes = { "idle loop" },
        }
        local back = json.decode(json.encode(run))
        assert.are.equal(json.encode(run), json.encode(back))
        assert.are.equal(123456789012345, back.sent)
        assert.are.equal(48213.7, back.round_trips_per_s)
        assert.are.equal(31.02, back.rtt_us.p99)
    end)
end)
