-- redis_mix.lua -- 90 % GET, 10 % SET over 1000 keys, tagged (docs/lua-api.md,
-- "Sharing a workload"): bin/arkbench run scenarios/custom/redis_mix.lua
local resp = require("arkbench.proto.resp")
return {
    name = "redis_mix", execution = "lua", target = "127.0.0.1:6379",
    clients = 16, window = 16, warmup = 0.25, duration = 1, repetitions = 3,
    message = function(i, id)
        local key = "arkbench:" .. (id * 7919 + i) % 1000
        if i % 10 == 0 then return resp.command("SET", key, "v"), "set" end
        return resp.command("GET", key), "get"
    end,
    expect = resp.expect_ok,
}
