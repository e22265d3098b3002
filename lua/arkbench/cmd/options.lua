-- arkbench.cmd.options: every command and option of the command line as
-- one data table, read from the per-command help tables (cli.lua's HELP,
-- url.lua's USAGE) -- what `arkbench completion` (cmd/completion.lua) and
-- the man page are generated from (docs/one-liner.md, "Shell completion").
--
--   options.commands() -> { { name, args, summary, options = { opt, ... } }, ... }
--       in the help's order; name "URL" is the one-liner (any scheme://).
--       opt = { name = "--out", short = "-o" | nil, value = "DIR" | nil,
--               help = "write results into DIR instead (absent or empty)" }
--       args: the command's positional words as its help writes them
--       ("FILE.lua", "DIR", "A B", "[COMMAND]"), summary its first help line.
--   options.value_kind(value) -> "dir" | "file" | "lua" | nil
--       what a value or an argument completes to
--
-- Why the help text is the source: each option is written once, in the
-- help a user reads (a line "      --name VALUE   what it does", or a
-- list such as "--pairs N --duration S" on one line); the table, the
-- completion and the man page follow it, and an option added to a help
-- table (by anyone, on any branch) completes without another edit. Why
-- the parser is not lua-argparse: docs/one-liner.md, "Shell completion".

local ipairs, type, concat = ipairs, type, table.concat
local find, match, gmatch, gsub = string.find, string.match, string.gmatch, string.gsub

local _M = {}

-- a value placeholder after an option: N, HOST:PORT, key=value, FILE.lua,
-- true|false, P%, R0, 'N: V' (upper case, digits, : . | % = and lower-case
-- key=value, or quoted)
local function placeholder(w)
    if not w then return nil end
    if match(w, "^[%u][%u%d_:%.|%%]*$") and not match(w, "^%u%l") then return w end
    if match(w, "^%l+=%l+$") or w == "true|false" or w == "FILE.lua" or match(w, "^'") then return w end
    return nil
end

-- options on one help line ("--a X --b", "-c, --connections N text",
-- "--floor-only  the floor alone;  --cpu N | --no-pin  placement"): each
-- with its value and the words after it up to the next option (its help)
local function parse_line(line)
    local out = {}
    local words = {}
    for w in gmatch(line, "%S+") do words[#words + 1] = w end
    local short, cur, help
    local function close()
        if cur then
            local h = help and #help > 0 and gsub(concat(help, " "), "^|%s*", "") or nil
            cur.help = h ~= "" and h or nil
        end
    end
    local i = 1
    while i <= #words do
        local w = gsub(words[i], ",$", "")
        if match(w, "^%-%a$") then
            close(); cur = nil
            short = w
        elseif match(w, "^%-%-%w[%w%-]*$") then
            close()
            local v = not find(words[i], ",$") and placeholder(words[i + 1]) or nil
            if v then
                i = i + 1
                -- a quoted value runs to its closing quote ('N: V')
                if match(v, "^'") and not match(v, "'$") then
                    while words[i + 1] do
                        i = i + 1
                        v = v .. " " .. words[i]
                        if match(words[i], "'$") then break end
                    end
                end
            end
            cur = { name = w, short = short, value = v }
            out[#out + 1] = cur
            short, help = nil, {}
        elseif cur then
            help[#help + 1] = words[i]
        end
        i = i + 1
    end
    close()
    return out
end

-- one command's help text -> args, summary, options (deduplicated)
local function parse_help(text)
    local options, seen = {}, {}
    local first = match(text, "^%s*(.-)\n") or text
    local head, summary = match(first, "^(.-)%s%s+(%S.*)$")
    head = head or first
    local args = match(head, "^%S+%s+(.*)$")
    local last, lineno = nil, 0
    local in_summary = summary ~= nil
    for line in gmatch(text, "([^\n]*)\n?") do
        lineno = lineno + 1
        -- the summary goes on while lines are indented as its first
        if lineno > 1 and in_summary and match(line, "^                      %S") then
            summary = summary .. " " .. match(line, "^%s+(.-)%s*$")
        elseif lineno > 1 then
            in_summary = false
        end
        -- an option line, or a usage line naming options ("  compare DIR --pair KEY")
        if match(line, "^%s+%-") or (lineno > 1 and match(line, "^  %l%S* .-%-%-%w")) then
            local opts = parse_line(line)
            for _, o in ipairs(opts) do
                if not seen[o.name] then
                    seen[o.name] = o
                    options[#options + 1] = o
                elseif not seen[o.name].value and o.value then
                    seen[o.name].value = o.value
                end
            end
            last = #opts == 1 and opts[1] or nil
        elseif last and match(line, "^%s+%S") then
            -- a description continued on the next line
            local more = match(line, "^%s+(.-)%s*$")
            last.help = last.help and (last.help .. " " .. more) or more
        else
            last = nil
        end
    end
    return args, summary, options
end

function _M.value_kind(value)
    if type(value) ~= "string" then return nil end
    if find(value, "%.lua") then return "lua" end
    if value == "DIR" or value == "A" or find(value, "^DIR") or value == "A B" then return "dir" end
    if find(value, "FILE") then return "file" end
    return nil
end

function _M.commands()
    local cli = require("arkbench.cmd.cli")
    local out = {}
    for _, name in ipairs(cli.HELP_ORDER) do
        local text = name == "URL" and require("arkbench.cmd.url").USAGE:gsub("^usage:[^\n]*\n\n", "")
            or cli.HELP[name]
        local args, summary, opts = parse_help(text)
        if name == "URL" then
            args, summary = "URL", "one case against a server, wrk-style"
        end
        out[#out + 1] = { name = name, args = args, summary = summary, options = opts }
    end
    -- a search takes run's --set, --filter, --out, --quick: their values too
    local by = {}
    for _, c in ipairs(out) do
        for _, o in ipairs(c.name ~= "URL" and c.options or {}) do
            if o.help and not by[o.name] then by[o.name] = o end
        end
    end
    for _, c in ipairs(out) do
        for _, o in ipairs(c.options) do
            -- "--set, --filter, --out, --quick as for run": run's
            if not o.value and not o.help and by[o.name] then o.value, o.help = by[o.name].value, by[o.name].help end
        end
    end
    return out
end

return _M
