-- arkbench.cmd.manpage: arkbench(1) in roff, made from the text
-- `arkbench help` prints (cmd/cli.lua's help_data()), so the page and the
-- help cannot say different things. cmake/manpage.lua writes it at build
-- time; `cmake --install` puts it in share/man/man1 (docs/install.md).
--
--   manpage.render(data) -> string      data: cli.help_data()'s table
--   manpage.parse(text, flat) -> { entry... } one help block as entries:
--       { term = "run FILE.lua", level = 1 | 2, text = { line... } }
--       level 1: a command, 2: one of its options; flat (the one-liner's
--       usage): every term is level 1, descriptions at column 23
--
-- The help's layout is what the parser reads: a term at indent 2
-- (commands, the one-liner's options) or 6 (a command's options), its
-- description after two or more spaces (or one, at column 23 or 27),
-- continuation lines indented deeper.

local ipairs, type = ipairs, type
local concat = table.concat

local _M = {}

-- Text for a roff text line: backslashes escaped, an option's dashes as
-- \- (so they copy as ASCII), a leading . or ' made literal.
local function esc_words(s)
    s = s:gsub("\\", "\\e")
    return (s:gsub("%S+", function(w)
        if w:match("^[%(%[|'\"]*%-") then return (w:gsub("%-", "\\-")) end
        return w
    end))
end

local function esc(s)
    s = esc_words(s)
    if s:match("^[.']") then s = "\\&" .. s end
    return s
end

-- A term: options bold, metavariables (FILE.lua, DIR, N, HOST:PORT)
-- italic, a command's name bold, the rest roman.
local function term_roff(term, command)
    local first = true
    local out = term:gsub("%S+", function(w)
        local open, core, close = w:match("^([%[%(]*)(.-)([%]%),]*)$")
        local r
        if core == "" then r = esc_words(w)
        elseif core:match("^%-") or (command and first) then
            r = open .. "\\fB" .. esc_words(core) .. "\\fR" .. close
        elseif core:match("^[A-Z][A-Z0-9_]*") and not core:match("^[A-Z][a-z]") then
            r = open .. "\\fI" .. esc_words(core) .. "\\fR" .. close
        else r = esc_words(w) end
        first = false
        return r
    end)
    if out:match("^[.']") then out = "\\&" .. out end
    return out
end

-- A term line split into term and description, or nil (not a term line).
local function split_term(line, flat)
    local indent, rest = line:match("^( *)(%S.*)$")
    if not indent or (#indent ~= 2 and #indent ~= 6) then return nil end
    local term, desc = rest:match("^(.-%S)%s%s+(%S.*)$")
    if term then return #indent, term, desc end
    -- one space before the description's column: 23 at indent 2 ("  -c,
    -- --connections N connections"), 27 at indent 6 ("--max-regression P% exit")
    local col = (#indent == 2 or flat) and 23 or 27
    if #line >= col and line:sub(col - 1, col - 1) == " " and line:sub(col, col) ~= " " then
        return #indent, line:sub(#indent + 1, col - 2):match("^(.-)%s*$"), line:sub(col)
    end
    return #indent, rest, nil
end

function _M.parse(text, flat)
    local entries = {}
    for line in text:gmatch("[^\n]+") do
        local indent, term, desc = split_term(line, flat)
        if indent then
            entries[#entries + 1] = { term = term, level = (indent == 2 or flat) and 1 or 2, text = { desc } }
        elseif line:match("^ +%S") and #entries > 0 then
            local t = entries[#entries].text
            t[#t + 1] = line:match("^%s*(.-)%s*$")
        end
    end
    return entries
end

-- Entries as .TP paragraphs, options one level in.
local function entries_roff(out, entries, command)
    local inner = false
    for _, e in ipairs(entries) do
        if e.level == 1 and inner then out[#out + 1] = ".RE"; inner = false end
        if e.level == 2 and not inner then out[#out + 1] = ".RS"; inner = true end
        out[#out + 1] = ".TP"
        out[#out + 1] = term_roff(e.term, command and e.level == 1)
        if #e.text == 0 then out[#out + 1] = "\\&" end
        for _, t in ipairs(e.text) do out[#out + 1] = esc(t) end
    end
    if inner then out[#out + 1] = ".RE" end
end

-- "exit codes: 0 every run ok, 1 ..., 130 interrupted" -> { {code, text} }
-- or nil when it does not read so.
local function exit_items(text)
    local s = text:gsub("^%s*exit codes:%s*", ""):gsub("%s+", " "):gsub("%s$", "")
    if not s:match("^%d+ ") then return nil end
    local items, from = {}, 1
    while true do
        local code, rest_at = s:match("^(%d+) ()", from)
        if not code then return nil end
        local stop = s:find(", %d+ ", rest_at)
        items[#items + 1] = { code, s:sub(rest_at, (stop or #s + 1) - 1) }
        if not stop then return items end
        from = stop + 2
    end
end

-- the list of codes, then each paragraph after a blank line as its own
local function exit_roff(out, text)
    local list, rest = text:match("^(.-)\n%s*\n(.*)$")
    list = list or text
    local items = exit_items(list)
    if not items then
        out[#out + 1] = esc((list:gsub("%s+", " ")))
    else
        for _, it in ipairs(items) do
            out[#out + 1] = ".TP"
            out[#out + 1] = "\\fB" .. it[1] .. "\\fR"
            out[#out + 1] = esc(it[2])
        end
    end
    for para in (rest or ""):gsub("\n%s*\n", "\0"):gmatch("[^%z]+") do
        if para:match("%S") then
            out[#out + 1] = ".PP"
            out[#out + 1] = esc((para:gsub("%s+", " "):gsub("^ ", ""):gsub(" $", "")))
        end
    end
end

function _M.render(data)
    local out = {}
    local function add(s) out[#out + 1] = s end
    add('.\\" arkbench(1): generated from `arkbench help` (lua/arkbench/cmd/manpage.lua); do not edit')
    add('.TH ARKBENCH 1 "" "arkbench ' .. esc(data.version or "") .. '" "User Commands"')
    add(".nh")
    add(".ad l")
    add(".SH NAME")
    add("arkbench \\- a Lua\\-scriptable network benchmark runtime")
    add(".SH SYNOPSIS")
    for _, c in ipairs(data.order) do
        local first = _M.parse(data.help[c])[1]
        if first then
            add(".br")
            add("\\fBarkbench\\fR " .. term_roff(first.term, true))
        end
    end
    add(".SH DESCRIPTION")
    add("arkbench runs network benchmarks described by scenario files in Lua:")
    add("a C core does every per\\-message operation, every repetition of every case")
    add("runs in a fresh process, and the results (JSON, Markdown, HTML, SVG charts)")
    add("go to \\fIresults/<name>/<UTC>/\\fR under the current directory, or to")
    add("\\fB\\-\\-out\\fR \\fIDIR\\fR.")
    add("Each command below also prints its own help:")
    add("\\fBarkbench help\\fR \\fICOMMAND\\fR or \\fBarkbench\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR.")
    add(".SH COMMANDS")
    for _, c in ipairs(data.order) do entries_roff(out, _M.parse(data.help[c]), true) end
    if type(data.url_usage) == "string" then
        add(".SH \"ONE\\-LINER OPTIONS\"")
        add("\\fBarkbench\\fR \\fIURL\\fR [\\fIoptions\\fR] takes these:")
        entries_roff(out, _M.parse(data.url_usage, true), false)
    end
    add(".SH \"EXIT STATUS\"")
    exit_roff(out, data.exit_codes)
    local own = {}
    for _, c in ipairs(data.order) do
        if data.exit_codes_of and data.exit_codes_of[c] then own[#own + 1] = c end
    end
    for _, c in ipairs(own) do
        add(".PP")
        add("\\fB" .. esc(c) .. "\\fR exits:")
        exit_roff(out, data.exit_codes_of[c])
    end
    add(".SH ENVIRONMENT")
    add(".TP")
    add("\\fBARKBENCH_ROOT\\fR")
    add("The folder holding arkbench's Lua tree (\\fIlua/arkbench/\\fR).")
    add("When unset, an installed arkbench uses \\fI../share/arkbench\\fR beside")
    add("its executable and a binary in a source checkout's build folder uses")
    add("that checkout; \\fIbin/arkbench\\fR sets it to the checkout.")
    add(".SH FILES")
    add(".TP")
    add("\\fIresults/<name>/<UTC>/\\fR")
    add("A run's results: runs.jsonl, summary.json, env.json, report.md,")
    add("report.html, charts/.")
    add(".TP")
    add("\\fI<prefix>/share/arkbench/scenarios/\\fR")
    add("The shipped scenarios (tcp.lua, udp.lua, tls.lua, ws.lua, http.lua, ...).")
    add(".TP")
    add("\\fI<prefix>/share/doc/arkbench/\\fR")
    add("README.md and docs/: every scenario key, the run object, the reports.")
    add(".SH \"SEE ALSO\"")
    add("\\fBwrk\\fR(1), \\fBh2load\\fR(1)")
    return concat(out, "\n") .. "\n"
end

return _M
