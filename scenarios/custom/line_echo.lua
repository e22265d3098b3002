-- line_echo.lua -- a line protocol with both ends written in Lua.
--
-- What it measures: round trips/s and RTT of a text line protocol when the
-- connection logic of BOTH the client and the server is Lua (execution =
-- "lua", docs/lua-api.md): each client sends "ping <conn> <n>\n" with
-- conn:call and checks that the server's reply is the same line upper-
-- cased; each accepted connection runs the `server` function below. So it
-- is the cost of the Lua conn API on both sides, over loopback, in one
-- process (compare with scenarios/tcp.lua, which is all C).
--
-- How to run:
--   bin/arkbench run scenarios/custom/line_echo.lua            (3 reps)
--   bin/arkbench run scenarios/custom/line_echo.lua --quick    (smoke)
--
-- Pointing it elsewhere: `--set target=HOST:PORT` runs only the client
-- side against any server that answers each line with the same line in
-- upper case (the `server` function is then not used).
local upper, format = string.upper, string.format

return {
    name = "line_echo",
    protocol = "tcp",
    execution = "lua",
    load = { { clients = 1, window = 1 }, { clients = 16, window = 1 } },
    topology = "sharded:1",
    warmup = 0.25, duration = 1, repetitions = 3,

    client = function(conn)
        local n = 0
        while true do
            n = n + 1
            local line = format("ping %d %d", conn.id, n)
            local reply, err = conn:call(line .. "\n", "line")
            if not reply then return end -- the connection failed: counted by the engine
            if reply ~= upper(line) then
                error(format("connection %d: sent %q, got %q", conn.id, line, reply))
            end
        end
    end,

    server = function(conn)
        while true do
            local line = conn:receive("*l")
            if not line then return end -- the client closed
            conn:send(upper(line) .. "\n")
        end
    end,
}
