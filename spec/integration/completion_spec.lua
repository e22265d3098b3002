-- completion_spec.lua -- `arkbench completion bash|zsh|fish` (issue 24,
-- docs/one-liner.md "Shell completion"): the bash script, sourced in a
-- `bash -c`, registers _arkbench (complete -p) and, driven through
-- COMP_WORDS/COMP_CWORD, completes the commands, each command's options
-- (every option its help names: the script is made from the help tables),
-- the one-liner's options after a URL, folders after --out and *.lua
-- scenarios after run; zsh and fish get the same commands and options;
-- an unknown shell is exit 2. Runtime: ~3 s.
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
        if proc.sh_ok("command -v zsh >/dev/null 2>&1") then
            local d = files.tmpdir("_compl_z")
            files.write_file(d .. "/_arkbench", z)
            assert.is_true(proc.sh_ok("zsh -n " .. shq(d .. "/_arkbench")))
        end
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
