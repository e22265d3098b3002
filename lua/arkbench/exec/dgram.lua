-- arkbench.exec.dgram: the conn methods of execution = "lua" over a
-- datagram protocol (udp; docs/lua-api.md "Over udp"), replacing the
-- stream ones of arkbench.exec.conn, over the datagram primitives of
-- core/lua/lua_exec_udp.c. One datagram per send; conn:receive returns
-- the next datagram whole; conn:call sends one datagram and reads
-- datagrams until expect(d) accepts one (without expect, the next one),
-- which completes the timed round trip. The others answer no call in
-- flight (counted late or ESEQ by C). As in conn.lua, a primitive that
-- cannot finish returns false and the method waits.

local _M = {}

-- methods: the conn methods table to change; C: the primitives (dg_send,
-- dg_recv, dg_call_begin, dg_call_end, dg_stray, wait); conn_of: conn.lua's
-- check of self (its errors name the caller's line); tag_of: conn.lua's
-- tag name -> id | nil, why
function _M.methods(methods, C, conn_of, tag_of)
    local type, error, rawget = type, error, rawget
    local send, recv, call_begin, call_end, stray, wait =
        C.dg_send, C.dg_recv, C.dg_call_begin, C.dg_call_end, C.dg_stray, C.wait

    function methods.send(self, data)
        local k = conn_of(self, 'send')
        if type(data) ~= 'string' then
            error('bad argument #1 to \'send\' (string expected, got ' .. type(data) .. ')', 2)
        end
        return send(k, data)
    end

    function methods.receive(self, how)
        local k = conn_of(self, 'receive', true)
        if how ~= nil then
            error('bad argument #1 to \'receive\' (over udp it takes none: it returns the next'
                .. ' datagram whole; got ' .. type(how) .. ')', 2)
        end
        while true do
            local d, e, c = recv(k, false)
            if d ~= false then return d, e, c end
            wait(k)
        end
    end

    function methods.call(self, request, expect, tag)
        local k = conn_of(self, 'call', true)
        if not rawget(self, '_client') then
            error('conn:call is for client connections (a server answers with conn:send)', 2)
        end
        if type(request) ~= 'string' then
            error('bad argument #1 to \'call\' (string expected, got ' .. type(request) .. ')', 2)
        end
        if expect ~= nil and type(expect) ~= 'function' then
            error('bad argument #2 to \'call\' (over udp: nil, the next datagram is the reply, or'
                .. ' function(d) returning true for the reply; got ' .. type(expect) .. ')', 2)
        end
        local id, why = tag_of(tag)
        if not id then error(why, 2) end
        while true do
            local ok, e, c = call_begin(k, request, id)
            if ok then break end
            if ok == nil then return nil, e, c end
            wait(k)
        end
        while true do
            local d, e, c = recv(k, true)
            if d == nil then return nil, e, c end
            if d then
                if expect == nil or expect(d) then
                    local ok, e2, c2 = call_end(k)
                    if ok then return d end
                    return nil, e2, c2
                end
                stray(k)
            else
                wait(k)
            end
        end
    end
end

return _M
