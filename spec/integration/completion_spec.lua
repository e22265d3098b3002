-- completion_spec.lua -- `arkbench completion bash|zsh|fish` (issue 24,
-- docs/one-liner.md "Shell completion"): the bash script, sourced in a
-- `bash -c`, registers _arkbench (complete -p) and, driven through
-- COMP_WORDS/COMP_CWORD, completes the commands, each command's options
-- (every option its help names: the script is made from the help tables),
-- the one-liner's options after a URL, folders after --out and *.lua
-- scenarios after run; the zsh function, run with zsh's completion
-- builtins replaced by printing ones, and fish's `complete -C` give the
-- same; an unknown shell is exit 2. Needs zsh and fish (packages.txt
-- [test]). Runtime: ~5 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")

local run, shq = ark.run, files.shq

teardown(function() files.remove_tmpdirs() end)

local SCRIPT

-- the completions of a command line (words; the last is the one completed)
local function complete(words)
    local quoted = {}
    for i, w in ipairs(words) do quoted[i] = shq(w) end
    local prog = "source " .. shq(SCRIPT) .. "; COMP_WORDS=(" .. table.concat(quoted, " ") .. "); "
        .. "COMP_CWORD=" .. (#words - 1) .. "; COMPREPLY=(); _arkbench; printf '%s\\n' \"${COMPREPLY[@]}\""
    local rc, out, err = proc.capture("", { "bash", "-c", prog })
    assert.equals(0, rc, err)
    local set = {}
    for w in out:gmatch("[^\n]+") do set[w] = true end
    return set, out
end

describe("arkbench completion", function()
    setup(function()
        local rc, out, err = run({ "completion", "bash" })
        assert.equals(0, rc, err)
        SCRIPT = files.tmpdir("_compl") .. "/arkbench.bash"
        files.write_file(SCRIPT, out)
    end)

    it("bash: registers _arkbench for arkbench", function()
        local rc, out = proc.capture("", { "bash", "-c", "source " .. shq(SCRIPT) .. "; complete -p arkbench" })
        assert.equals(0, rc)
        assert.truthy(out:find("-F _arkbench arkbench", 1, true), out)
    end)

    it("bash: completes the commands, and only those matching", function()
        local set = complete({ "arkbench", "" })
        for _, c in ipairs({ "run", "search", "calibrate", "serve", "report", "compare", "env", "version",
                             "completion", "help" }) do
            assert.is_true(set[c], c)
        end
        local r, out = complete({ "arkbench", "r" })
        assert.same({ run = true, report = true }, r, out)
        assert.same({ bash = true, zsh = true, fish = true }, (complete({ "arkbench", "completion", "" })))
    end)

    it("bash: completes every option each command's help names", function()
        for _, cmd in ipairs({ "run", "search", "calibrate", "serve", "report", "compare" }) do
            local rc, help = run({ "help", cmd })
            assert.equals(0, rc)
            local set, out = complete({ "arkbench", cmd, "--" })
            local n = 0
            for opt in help:gmatch("%-%-[%w][%w%-]*") do
                n = n + 1
                assert.is_true(set[opt] == true, cmd .. " " .. opt .. ": " .. out)
            end
            assert.is_true(n >= 3, cmd)
        end
        local set = complete({ "arkbench", "run", "--met" })
        assert.same({ ["--metrics-listen"] = true }, set)
    end)

    it("bash: completes the one-liner's options after a URL, long and short", function()
        -- COMP_WORDBREAKS splits the URL at ':'
        local set, out = complete({ "arkbench", "tcp", ":", "//127.0.0.1:9000", "-" })
        for _, o in ipairs({ "--connections", "-c", "--duration", "-d", "--rate", "-R", "--csv", "--hgrm",
                             "--openmetrics", "--json", "--metrics-listen" }) do
            assert.is_true(set[o] == true, o .. ": " .. out)
        end
        assert.is_nil(set["--set"])
    end)

    it("bash: folders after --out, scenario files after run", function()
        local d = files.tmpdir("_compl_tree")
        assert(os.execute("mkdir -p " .. shq(d .. "/res_a") .. " && touch " .. shq(d .. "/s1.lua") .. " "
            .. shq(d .. "/notes.txt")))
        local set, out = complete({ "arkbench", "run", "--out", d .. "/res" })
        assert.same({ [d .. "/res_a"] = true }, set, out)
        set, out = complete({ "arkbench", "run", d .. "/" })
        assert.is_true(set[d .. "/s1.lua"], out)
        assert.is_true(set[d .. "/res_a"], out)
        assert.is_nil(set[d .. "/notes.txt"], out)
        -- a value that is free text completes to nothing
        set = complete({ "arkbench", "run", "--set", "" })
        assert.same({}, set)
    end)

    it("zsh and fish: the same commands and options", function()
        local rc, z = run({ "completion", "zsh" })
        assert.equals(0, rc)
        local rc2, f = run({ "completion", "fish" })
        assert.equals(0, rc2)
        assert.truthy(z:find("^#compdef arkbench\n"))
        for _, c in ipairs({ "run", "search", "report", "completion" }) do
            assert.truthy(z:find("'" .. c .. ":", 1, true), c)
            assert.truthy(f:find("-n '__fish_use_subcommand' -a " .. c .. " ", 1, true), c)
        end
        for _, o in ipairs({ "--metrics-listen", "--csv", "--threshold" }) do
            assert.truthy(z:find("'" .. o .. ":", 1, true), o)
            assert.truthy(f:find("__fish_seen_subcommand_from run' -l " .. o:sub(3) .. " ", 1, true), o)
        end
    end)

    it("zsh: the function completes commands, options, folders and scenario files", function()
        local rc, z = run({ "completion", "zsh" })
        assert.equals(0, rc)
        local d = files.tmpdir("_compl_zsh")
        files.write_file(d .. "/_arkbench", z)
        assert.is_true(proc.sh_ok("zsh -n " .. shq(d .. "/_arkbench")), "zsh -n")
        -- zsh's completion builtins replaced by ones that print what they are given
        files.write_file(d .. "/drive.zsh", [[
compdef() { :; }
_describe() { local -a arr; arr=("${(@P)2}"); print -l -- "${arr[@]%%:*}"; }
compadd() { shift; print -l -- "$@"; }
_files() { print -- "_files $*"; }
source ]] .. shq(d .. "/_arkbench") .. [[

words=("$@"); CURRENT=${#words}; PREFIX=${words[-1]}
_arkbench
]])
        local function zc(...)
            local argv = { "zsh", d .. "/drive.zsh" }
            for _, w in ipairs({ ... }) do argv[#argv + 1] = w end
            local zrc, out, err = proc.capture("", argv)
            assert.equals(0, zrc, err)
            return out
        end
        local out = zc("arkbench", "")
        assert.truthy(out:find("\nsearch\n", 1, true) and out:find("\ncompletion\n", 1, true), out)
        out = zc("arkbench", "run", "--")
        assert.truthy(out:find("--metrics-listen\n", 1, true), out)
        assert.equals("_files -/\n", zc("arkbench", "run", "--out", ""))
        assert.equals("_files -g *.lua\n", zc("arkbench", "run", ""))
        out = zc("arkbench", "tcp://127.0.0.1:1", "-")
        assert.truthy(out:find("\n-c\n", 1, true) and out:find("--metrics-listen\n", 1, true), out)
        assert.equals("bash\nzsh\nfish\n", zc("arkbench", "completion", ""))
    end)

    it("fish: complete -C gives the commands, options and the one-liner's", function()
        local rc, f = run({ "completion", "fish" })
        assert.equals(0, rc)
        local d = files.tmpdir("_compl_fish")
        files.write_file(d .. "/arkbench.fish", f)
        local function fc(line)
            local frc, out, err = proc.capture("", { "fish", "--no-config", "-c",
                "source " .. d .. "/arkbench.fish; complete -C " .. shq(line) })
            assert.equals(0, frc, err)
            local set = {}
            for w in out:gmatch("([^\t\n]+)[^\n]*\n") do set[w] = true end
            return set, out
        end
        local set, out = fc("arkbench ")
        assert.is_true(set.run and set.search and set.completion, out)
        set, out = fc("arkbench run --me")
        assert.same({ ["--metrics-listen"] = true }, set, out)
        set, out = fc("arkbench tcp://127.0.0.1:1 --conn")
        assert.same({ ["--connections"] = true, ["--connect-timeout"] = true }, set, out)
        set, out = fc("arkbench report --")
        assert.is_true(set["--csv"] and set["--hgrm"] and set["--openmetrics"], out)
    end)

    it("refuses an unknown or missing shell with exit 2", function()
        local rc, _, err = run({ "completion", "ksh" })
        assert.equals(2, rc)
        assert.equals("arkbench: completion: unknown shell 'ksh'; expected bash, zsh or fish\n", err)
        rc, _, err = run({ "completion" })
        assert.equals(2, rc)
        assert.truthy(err:find("needs a shell", 1, true), err)
    end)
end)
