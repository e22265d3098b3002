-- arkbench.exec.conn: the conn object of execution = "lua"'s full form
-- (docs/lua-api.md "The conn object"), in Lua over the C primitives of
-- core/lua/lua_exec_conn.c. A primitive that cannot finish returns false
-- and the method calls wait(), which records a cleanup on the task and
-- yields; the libuv callback that brings what it waits for (bytes, an
-- error, the next phase, its sleep timer) resumes it, and the method tries
-- again. Errors name the caller's line (error levels 2 and 3 skip these
-- frames).

local _M = {}

-- C: the primitives (own, send, recv, peek, consume, fail, wait,
-- call_begin, call_end, sleep, phase, tag; over udp also dg_*) -> the conn
-- metatable
function _M.metatable(C)
    local type, error, tostring, rawget, unpack = type, error, tostring, rawget, unpack
    local floor = math.floor
    local find, sub, format = string.find, string.sub, string.format
    local getinfo = debug.getinfo
    local own, send, recv, peek, consume, fail, wait, call_begin, call_end, sleep, phase, tag_id =
        C.own, C.send, C.recv, C.peek, C.consume, C.fail, C.wait, C.call_begin, C.call_end,
        C.sleep, C.phase, C.tag
    -- tag name -> the case's id (core/lua/lua_exec_tags.c), per loop state:
    -- C is asked once per new name
    local tag_ids = {}
    local methods = setmetatable({}, { __index = function(_, key)
        if key == 'phase' then return phase() end
    end })
    local mt = { __index = methods, __metatable = false }
    function mt.__tostring(self) return 'arkbench conn ' .. tostring(rawget(self, 'id')) end
    local function conn_of(self, name, blocking)
        local k = type(self) == 'table' and rawget(self, '_k')
        if not k then error(format('bad self to conn:%s (call it as conn:%s(...))', name, name), 3) end
        if blocking and not own(k) then
            error(format('conn:%s: a connection can only wait inside its own client/server function'
                .. ' (not in another connection\'s function, nor in a coroutine of your own)', name), 3)
        end
        return k
    end
    local function where(f)
        local i = getinfo(f, 'S')
        return i.short_src .. ':' .. i.linedefined
    end
    local function check_expect(how, name, argn)
        local t = type(how)
        if (t == 'number' and how >= 1 and how == floor(how) and how < 2^53) or t == 'string'
            or t == 'function' then return end
        error(format('bad argument #%d to \'%s\' (expected a length in bytes, "line", "*l", a'
            .. ' pattern or a function(buf); got %s)', argn, name,
            t == 'number' and tostring(how) or t), 3)
    end
    local function read(k, how)
        local t = type(how)
        if t == 'number' or how == '*l' or how == 'line' then
            local n = t == 'number' and how or 0
            while true do
                local s, e, c = recv(k, n)
                if s ~= false then return s, e, c end
                wait(k)
            end
        end
        while true do
            local buf, dead = peek(k)
            if buf ~= '' then
                if t == 'function' then
                    local n = how(buf)
                    if n ~= nil and n ~= false then
                        if type(n) ~= 'number' or n < 1 or n > #buf or n ~= floor(n) then
                            error(format('%s: expect(buf) returned %s; expected nil (reply incomplete) or an'
                                .. ' integer from 1 to #buf (%d)', where(how), tostring(n), #buf), 0)
                        end
                        consume(k, n)
                        if n == #buf then return buf end
                        return sub(buf, 1, n)
                    end
                else
                    local r = { pcall(find, buf, how) }
                    if not r[1] then
                        error(format('conn:receive: bad pattern %q: %s', how, tostring(r[2])), 2)
                    end
                    table.remove(r, 1)
                    if r[1] then
                        consume(k, r[2])
                        if #r > 2 then return unpack(r, 3) end
                        return sub(buf, r[1], r[2])
                    end
                end
            end
            if dead then
                local a, e, c = fail(k)
                if a == nil then return nil, e, c end
            end
            wait(k)
        end
    end
    function methods.send(self, data)
        local k = conn_of(self, 'send')
        if type(data) ~= 'string' then
            error('bad argument #1 to \'send\' (string expected, got ' .. type(data) .. ')', 2)
        end
        return send(k, data)
    end
    function methods.receive(self, how)
        local k = conn_of(self, 'receive', true)
        if how == nil then how = '*l' end
        check_expect(how, 'receive', 1)
        return read(k, how)
    end
    -- conn:call's tag -> the case's tag id (0: none) | nil, why
    local function tag_of(tag)
        if tag == nil then return 0 end
        local id = tag_ids[tag]
        if id then return id end
        if type(tag) ~= 'string' then
            return nil, 'bad argument #3 to \'call\' (a tag name, a string, expected; got '
                .. type(tag) .. ')'
        end
        local why
        id, why = tag_id(tag)
        if not id then return nil, 'conn:call: ' .. why end
        tag_ids[tag] = id
        return id
    end
    function methods.call(self, request, expect, tag)
        local k = conn_of(self, 'call', true)
        if not rawget(self, '_client') then
            error('conn:call is for client connections (a server answers with conn:send)', 2)
        end
        if type(request) ~= 'string' then
            error('bad argument #1 to \'call\' (string expected, got ' .. type(request) .. ')', 2)
        end
        check_expect(expect, 'call', 2)
        local id, why = tag_of(tag)
        if not id then error(why, 2) end
        while true do
            local ok, e, c = call_begin(k, request, id)
            if ok then break end
            if ok == nil then return nil, e, c end
            wait(k)
        end
        local reply, e, c = read(k, expect)
        if reply == nil then return nil, e, c end
        call_end(k)
        return reply
    end
    function methods.sleep(self, s)
        local k = conn_of(self, 'sleep', true)
        if type(s) ~= 'number' or not (s >= 0) or s > 1e9 then
            error('bad argument #1 to \'sleep\' (seconds from 0 to 1e9 expected, got '
                .. tostring(s) .. ')', 2)
        end
        sleep(k, s)
        return true
    end
    -- over a datagram protocol: send, receive and call of datagrams
    if C.dg_recv then require("arkbench.exec.dgram").methods(methods, C, conn_of, tag_of) end
    return mt
end

return _M
