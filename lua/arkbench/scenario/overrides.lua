-- arkbench.scenario.overrides: `--set KEY.SUB=value` for the scenario keys
-- whose value is a table of known sub-keys (tls, udp, request): one sub-key at a
-- time, merged into the file's table, so `--set tls.ca=FILE` and
-- `--set tls.version=1.2` do on the command line what `tls = { ca = ..,
-- version = .. }` does in a file. The sub-key is checked against the same
-- list as in a file (with a "did you mean" for a misspelt one); the value
-- is then validated with the rest of the table, by the same rules and in
-- the same words (arkbench.scenario.check), placed at this --set.

local type, pairs, ipairs = type, pairs, ipairs
local str_match = string.match
local tbl_concat, tbl_sort = table.concat, table.sort

local check = require("arkbench.scenario.check")
local msg = require("arkbench.scenario.msg")

local _M = {}

-- key -> its sub-keys, in documented order
local SUB_KEYS = check.SUB_KEYS
-- sub-keys whose --set value is text as given (tls.version=1.2 is the
-- string "1.2", as in a file; a cipher list may hold commas)
local TEXT = { tls = { version = true, ciphers = true, sni = true, ca = true },
               request = { method = true, path = true, body = true } }

local function table_keys()
    local out = {}
    for k in pairs(SUB_KEYS) do out[#out + 1] = k end
    tbl_sort(out)
    return out
end

-- "tls.ca" -> "tls", "ca"; nil for a key without a dot.
function _M.split(key)
    return str_match(key, "^([^.]+)%.(.+)$")
end

-- Applies `--set KEY.SUB=raw` (entry as typed, `at` its place) to the
-- scenario table t. parse_value turns text into a value (numbers, booleans,
-- comma lists). Returns true when applied; else the error was recorded in
-- ctx (fail_at) and nothing changed.
function _M.apply(ctx, t, key, sub, raw, at, parse_value)
    local subs = SUB_KEYS[key]
    if not check.KNOWN[key] then
        msg.fail_at(ctx, at, msg.unknown_key(key, check.KEYS))
        return false
    end
    if not subs then
        msg.fail_at(ctx, at, "key '" .. key .. "' takes a value, not sub-keys; --set KEY.SUB=value"
            .. " is for " .. tbl_concat(table_keys(), ", "))
        return false
    end
    local known = false
    for _, s in ipairs(subs) do known = known or s == sub end
    if not known then
        msg.fail_at(ctx, at, "key '" .. key .. "': " .. msg.unknown_key(sub, subs))
        return false
    end
    -- a copy: the file's table (maybe shared by several parts) stays as is
    local merged = {}
    if type(t[key]) == "table" then
        for k, v in pairs(t[key]) do merged[k] = v end
    end
    merged[sub] = (TEXT[key] and TEXT[key][sub]) and raw or parse_value(raw)
    t[key] = merged
    ctx.origin[key] = at
    -- a file path typed on the command line is the shell's: relative to the
    -- current directory, not to the scenario's folder (check.lua)
    ctx.set_subs = ctx.set_subs or {}
    ctx.set_subs[key .. "." .. sub] = true
    return true
end

return _M
