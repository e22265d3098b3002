-- spec/unit/request_spec.lua -- the scenario key `request` (http, https
-- request mode) and tls.verify: what the check accepts and normalises, and
-- every refusal, exactly as the user reads it (file:line or --set, key,
-- what was expected). The run itself is spec/integration/http_request_spec.lua.

local scenario = require("arkbench.scenario.load")
local matrix = require("arkbench.scenario.matrix")

local F = "spec/fixtures/scenarios/"

local function load_err(name, sets)
    local spec, err = scenario.load(F .. name, sets)
    assert.is_nil(spec)
    assert.is_string(err)
    return err
end

-- a scenario file with the given body (a Lua table constructor)
local function file_with(body)
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write("return " .. body .. "\n")
    f:close()
    return path
end

describe("scenario key request", function()
    it("normalises one table to a list of one, with the defaults", function()
        local spec = assert(scenario.load(F .. "minimal.lua", { "protocol=http", "request.path=/x" }))
        assert.same({ { method = "GET", path = "/x", headers = {} } }, spec.keys.request)
        local cases = matrix.expand(spec)
        assert.same(spec.keys.request, cases[1].request)
    end)

    it("keeps a list in order, headers as sorted 'Name: value' lines", function()
        local path = file_with([[{ protocol = { "http", "https" }, request = {
            { method = "POST", path = "/submit?a=1", body = "hi", headers = { ["X-B"] = "2", Accept = "*/*" } },
            { method = "HEAD", status = { 200, 404 } },
            { status = 204 },
        } }]])
        finally(function() os.remove(path) end)
        local spec = assert(scenario.load(path))
        assert.same({
            { method = "POST", path = "/submit?a=1", body = "hi", headers = { "Accept: */*", "X-B: 2" } },
            { method = "HEAD", path = "/", headers = {}, status = { 200, 404 } },
            { method = "GET", path = "/", headers = {}, status = { 204 } },
        }, spec.keys.request)
    end)

    it("refuses bad fields with file:line, the key and what was expected", function()
        local p = F .. "request_bad.lua:4: key 'request' element "
        assert.equals(table.concat({
            p .. "1: key 'method': got string \"GE T\"; expected an HTTP method token such as \"GET\" or \"POST\"",
            p .. "2: key 'path': got string \"index.html\"; expected a string starting with \"/\" without"
                .. " spaces or control characters (percent-encode them)",
            p .. "3: key 'headers': header 'Content-Length': set by arkbench from the body; expected no"
                .. " Content-Length header",
            p .. "3: key 'headers': header 'X-A': got string \"one\\13\\ntwo\"; expected a string without"
                .. " CR, LF or NUL",
            p .. "4: unknown key 'bdy'; did you mean 'body'?",
            p .. "4: key 'status' element 2: got 99; expected an integer from 100 to 599",
        }, "\n"), load_err("request_bad.lua"))
    end)

    it("keeps a function form as a hook; the case says \"function\"", function()
        local path = file_with([[{ protocol = "http", clients = 2,
            request = function(i, conn) return { path = "/" } end }]])
        finally(function() os.remove(path) end)
        local spec = assert(scenario.load(path))
        assert.equals("function", spec.keys.request)
        assert.equals("function", type(spec.hooks.request))
        assert.equals("function", matrix.expand(spec)[1].request)
    end)

    it("expands a function form per connection, until nil, each entry checked", function()
        local request = require("arkbench.scenario.request")
        local list, counts = request.expand_function(function(i, conn)
            if i > conn.id + 1 then return nil end
            return { path = "/" .. conn.id .. "/" .. i .. "/" .. conn.vars.v, method = "HEAD" }
        end, 3, { v = "x" })
        assert.same({ 1, 2, 3 }, counts)
        assert.equals(6, #list)
        assert.same({ method = "HEAD", path = "/0/1/x", headers = {} }, list[1])
        assert.equals("/2/3/x", list[6].path)
        local line = debug.getinfo(1, "l").currentline + 1
        local fn = function(i) if i == 2 then return { path = "/", bogus = 1 } end return { } end
        local _, err = request.expand_function(fn, 1)
        -- this file as the function's chunk names it (relative or absolute:
        -- ctest runs it from an absolute ARKBENCH_ROOT)
        local at = debug.getinfo(1, "S").short_src .. ":" .. line
        assert.equals(at .. ": key 'request': the function's request for i = 2, connection 0:"
            .. " unknown key 'bogus'; known keys: method, path, headers, body, status, tag", err)
        _, err = request.expand_function(function() return nil end, 2)
        assert.truthy(err:find(": key 'request': the function returned nil for i = 1, connection 0;"
            .. " expected at least one request per connection", 1, true), err)
    end)

    it("refuses other shapes", function()
        local path2 = file_with([[{ protocol = "http", request = { { path = "/" }, "GET /" } }]])
        finally(function() os.remove(path2) end)
        local _, err = scenario.load(path2)
        assert.equals(path2 .. ":1: key 'request' element 2: got string \"GET /\"; expected a table"
            .. " {method=, path=, headers=, body=, status=, tag=}", err)
        local path3 = file_with([[{ protocol = "http", request = { headers = { "X-A: 1" } } }]])
        finally(function() os.remove(path3) end)
        _, err = scenario.load(path3)
        assert.equals(path3 .. ":1: key 'request': key 'headers': got a list; expected"
            .. " a table of names to values, { [\"User-Agent\"] = \"x\" }", err)
    end)

    it("is only for protocol http, https, h2 or h2c, and not for execution lua", function()
        assert.equals("--set request.path=/x: key 'request': a case has protocol tcp; expected protocol"
            .. " http, https, h2 or h2c (request mode), for every case",
            load_err("minimal.lua", { "request.path=/x" }))
        assert.equals("--set request.path=/x: key 'request': a case has protocol ws; expected protocol"
            .. " http, https, h2 or h2c (request mode), for every case",
            load_err("minimal.lua", { "protocol=http,ws", "request.path=/x" }))
        local path = file_with([[{ protocol = "http", execution = "lua", message = "x", expect = 1,
            request = { path = "/" } }]])
        finally(function() os.remove(path) end)
        local _, err = scenario.load(path)
        assert.truthy(err:find(path .. ":2: key 'request': a case has execution = \"lua\"; expected"
            .. " execution callback or coroutine (the built-in http client)", 1, true), err)
    end)

    it("takes --set request.method/path/body, checked like the file's", function()
        assert.equals("--set request.pth=/x: key 'request': unknown key 'pth'; did you mean 'path'?",
            load_err("minimal.lua", { "protocol=http", "request.pth=/x" }))
        assert.equals("--set request.path=x: key 'request': key 'path': got string \"x\"; expected a"
            .. " string starting with \"/\" without spaces or control characters (percent-encode them)",
            load_err("minimal.lua", { "protocol=http", "request.path=x" }))
        local spec = assert(scenario.load(F .. "minimal.lua",
            { "protocol=http", "request.method=POST", "request.body=123" }))
        local list = file_with([[{ protocol = "http", request = { { path = "/a" }, { path = "/b" } } }]])
        finally(function() os.remove(list) end)
        local _, err = scenario.load(list, { "request.path=/x" })
        assert.equals("--set request.path=/x: key 'request': got a list of requests and the named keys"
            .. " path beside it; expected one request table or a list of them (--set request.KEY=..."
            .. " sets a key of a single request table)", err)
        -- text stays text: the body "123" is not a number
        assert.same({ { method = "POST", path = "/", headers = {}, body = "123" } }, spec.keys.request)
    end)

    it("keeps an entry's tag, and refuses a bad one or a 17th distinct one", function()
        local path = file_with([[{ protocol = "http", request = {
            { path = "/a", tag = "read" }, { path = "/b", tag = "write" }, { path = "/c", tag = "read" },
            { path = "/d" },
        } }]])
        finally(function() os.remove(path) end)
        local spec = assert(scenario.load(path))
        assert.same({ "read", "write", "read" },
            { spec.keys.request[1].tag, spec.keys.request[2].tag, spec.keys.request[3].tag })
        assert.is_nil(spec.keys.request[4].tag)
        assert.same(spec.keys.request, matrix.expand(spec)[1].request)

        local bad = file_with([[{ protocol = "http", request = { { tag = 7 }, { tag = "" } } }]])
        finally(function() os.remove(bad) end)
        local _, err = scenario.load(bad)
        assert.matches(bad .. ":1: key 'request' element 1: key 'tag': got 7; expected a name of 1"
            .. " to 48 bytes without control characters", err, 1, true)
        assert.matches("element 2: key 'tag': got string \"\"", err, 1, true)

        local entries = {}
        for i = 1, 17 do entries[i] = ("{ path = '/%d', tag = 't%d' }"):format(i, i) end
        local many = file_with("{ protocol = 'http', request = { " .. table.concat(entries, ", ") .. " } }")
        finally(function() os.remove(many) end)
        _, err = scenario.load(many)
        assert.matches("key 'request' element 17: key 'tag': got 't17', the 17th distinct tag;"
            .. " expected at most 16 distinct tags in a case", err, 1, true)
    end)
end)

describe("tls.verify", function()
    it("is a boolean; false is accepted with a loud warning", function()
        local spec = assert(scenario.load(F .. "minimal.lua", { "protocol=https", "tls.verify=false" }))
        assert.is_false(spec.keys.tls.verify)
        local found
        for _, w in ipairs(spec.warnings) do
            if w:find("verify = false: the server's certificate is NOT checked", 1, true) then found = w end
        end
        assert.equals("--set tls.verify=false: key 'tls': verify = false: the server's certificate is"
            .. " NOT checked (chain and name), so nothing proves who answers; the run object says"
            .. " tls.verify = false", found)
        assert.equals("--set tls.verify=no: key 'tls': key 'verify': got string \"no\"; expected a boolean",
            load_err("minimal.lua", { "protocol=https", "tls.verify=no" }))
    end)
end)
