-- cli_spec.lua -- the command-line conventions users of wrk/k6/oha expect
-- (issue 14), through the real binary: --version, per-command help
-- (`help CMD`, `CMD --help`), units in --set and calibrate flags, and the
-- end of a run naming report.html. Runtime: ~5 s.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")

local run = ark.run

teardown(function() files.remove_tmpdirs() end)

local COMMANDS = { "run", "search", "calibrate", "serve", "report", "compare", "env", "version", "help" }

describe("arkbench --version", function()
    it("names the version, the checkout's commit and the libraries it runs on", function()
        local rc, out = run({ "--version" })
        assert.equals(0, rc)
        local commit = proc.sh_out("git -C " .. files.shq(ark.ROOT) .. " rev-parse HEAD 2>/dev/null")
        commit = commit and commit:match("%x+")
        assert.matches("^arkbench %d+%.%d+%.%d+ %(git ", out)
        if commit then assert.truthy(out:find(commit:sub(1, 12), 1, true), out) end
        assert.matches("\nLuaJIT 2%.1[^,]*, libuv %d+%.%d+%.%d+, OpenSSL 3%.", out)
        local rc2, out2 = run({ "version" })
        assert.equals(0, rc2)
        assert.equals(out, out2)
    end)
end)

describe("help", function()
    it("has a page for every command, by `help CMD` and by `CMD --help`, exit 0", function()
        for _, c in ipairs(COMMANDS) do
            local rc, out = run({ "help", c })
            assert.equals(0, rc, c)
            assert.truthy(out:find("usage: arkbench " .. c, 1, true), c .. ": " .. out)
            assert.truthy(out:find("exit codes:", 1, true), c)
            if c ~= "help" and c ~= "version" then
                local rc2, out2 = run({ c, "--help" })
                assert.equals(0, rc2, c .. " --help")
                assert.equals(out, out2, c .. " --help")
                local rc3, out3 = run({ c, "-h" })
                assert.equals(0, rc3, c .. " -h")
                assert.equals(out, out3)
            end
        end
    end)

    it("gives serve every option serve takes, and serve's own exit codes", function()
        local rc, out = run({ "help", "serve" })
        assert.equals(0, rc)
        -- every key of serve.lua's option table (so a new option fails here
        -- until the help names it)
        local src = files.read_file(os.getenv("ARKBENCH_ROOT") .. "/lua/arkbench/cmd/serve.lua")
        local opts = assert(src:match("local OPTS = (%b{})"), "serve.lua's OPTS")
        local n = 0
        for opt in opts:gmatch('%[?"?([%w%-]+)"?%]? = true') do
            n = n + 1
            assert.truthy(out:find("--" .. opt, 1, true), opt .. ": " .. out)
        end
        assert.equals(12, n)
        assert.truthy(out:find("exit codes: 0 stopped by SIGINT/SIGTERM", 1, true), out)
        assert.falsy(out:find("threshold", 1, true), out)
    end)

    it("still lists every command on `arkbench help`", function()
        local rc, out = run({ "help" })
        assert.equals(0, rc)
        for _, c in ipairs(COMMANDS) do
            assert.truthy(out:find("\n  " .. c .. " ", 1, true) or out:find("\n  " .. c .. "\n", 1, true), c)
        end
    end)

    it("refuses an unknown command's help with exit 2", function()
        local rc, _, err = run({ "help", "frobnicate" })
        assert.equals(2, rc)
        assert.equals("arkbench: help: unknown command 'frobnicate' (see arkbench help)\n", err)
    end)

    it("does not take an option's value -h for a help request", function()
        local rc, out, err = run({ "run", "does-not-exist.lua", "--set", "name=x", "--filter", "-h" })
        assert.is_nil(out:find("usage: arkbench run", 1, true))
        assert.equals(2, rc)
        assert.truthy(err:find("arkbench: cannot open does-not-exist.lua", 1, true), err)
    end)
end)

describe("units on the command line", function()
    it("calibrate takes --duration 50ms and --payload 1KiB", function()
        local rc, out, err = run({ "calibrate", "--floor-only", "--pairs", "1", "--warmup", "20ms",
            "--duration", "50ms", "--payload", "1KiB", "--clients", "1", "--window", "1" })
        assert.equals(0, rc, err)
        assert.truthy(out:find("1024 B", 1, true), out)
    end)

    it("calibrate refuses a duration with an unknown unit, naming the forms", function()
        local rc, _, err = run({ "calibrate", "--duration", "5x" })
        assert.equals(2, rc)
        assert.truthy(err:find("--duration must be a number > 0 and <= 3600 or a duration such as"
            .. ' "250ms", "10s", "2m", got \'5x\'', 1, true), err)
    end)
end)

describe("the end of a run", function()
    it("names report.html, and it exists; the resolved numbers are what the run records", function()
        local d = files.tmpdir("_cli")
        local path = d .. "/u.lua"
        files.write_file(path, 'return { name = "u", protocol = "tcp", clients = 1, window = 1,'
            .. ' warmup = "20ms", duration = "100ms", repetitions = 1 }\n')
        local rc, _, err = run({ "run", path, "--set", "payload=2KiB", "--out", d .. "/out" })
        assert.equals(0, rc, err)
        local html = err:match("\nreport:  (%S+)\n")
        assert.equals(d .. "/out/report.html", html)
        assert.is_true(files.exists(html))
        local runs = ark.read_runs(d .. "/out/runs.jsonl")
        assert.equals(1, #runs)
        assert.equals(2048, runs[1].case.payload)
        assert.equals(0.1, runs[1].case.duration)
        assert.equals(0.02, runs[1].case.warmup)
    end)
end)

describe("compare", function()
    it("exits 2 saying so when two results have no case in common", function()
        local d = files.tmpdir("_cli")
        local path = d .. "/c.lua"
        files.write_file(path, 'return { name = "c", protocol = "tcp", clients = 1, window = 1,'
            .. ' warmup = 0.02, duration = 0.05, repetitions = 1 }\n')
        assert.equals(0, (run({ "run", path, "--set", "payload=64", "--out", d .. "/a" })))
        assert.equals(0, (run({ "run", path, "--set", "payload=128", "--out", d .. "/b" })))
        local rc, out, err = run({ "compare", d .. "/a", d .. "/b" })
        assert.equals(2, rc)
        assert.equals("", out)
        -- one case each, both named "default" (as two one-liner runs): said so,
        -- not as "no case in common (A's: default; B's: default)"
        assert.equals(string.format("arkbench: %s/a and %s/b have no case in common: each has one"
            .. " case, both named 'default', but they differ in payload (A 64, B 128); --force pairs"
            .. " the single cases anyway\n", d, d), err)
        -- --force pairs them, saying what differs
        local rcf, outf, errf = run({ "compare", d .. "/a", d .. "/b", "--force" })
        assert.equals(0, rcf, errf)
        assert.truthy(outf:find("paired the single cases with --force; they differ in payload (A 64, B 128)",
            1, true), outf)
        assert.truthy(outf:find("over 1 case ", 1, true), outf)
        -- one case in common: compared, exit 0
        assert.equals(0, (run({ "run", path, "--set", "payload=64", "--out", d .. "/c" })))
        local rc2, out2 = run({ "compare", d .. "/a", d .. "/c" })
        assert.equals(0, rc2)
        assert.truthy(out2:find("over 1 case ", 1, true), out2)
    end)
end)

describe("warnings after --filter", function()
    it("speak only of the topology/clients pairs that still run", function()
        local rc, so, se = run({ "run", "scenarios/tcp.lua", "--list", "--filter", "payload=1024",
            "--filter", "topology=sharded:1" })
        assert.equals(0, rc, se)
        assert.is_nil(se:find("loops run without a connection", 1, true), se)
        local rc2, _, se2 = run({ "run", "scenarios/tcp.lua", "--list", "--filter", "topology=sharded:4" })
        assert.equals(0, rc2)
        assert.truthy(se2:find("sharded:4 with clients=1: 3 of 4 loops run without", 1, true), se2)
        assert.is_nil(se2:find("sharded:2 with", 1, true), se2)
        assert.truthy(so ~= nil)
    end)

    it("are not printed when the run is refused anyway (exit 2)", function()
        local rc, _, se = run({ "run", "scenarios/tcp.lua", "--shard", "0/4" })
        assert.equals(2, rc, se)
        assert.truthy(se:find("--shard needs a target", 1, true), se)
        assert.is_nil(se:find("warning", 1, true), se)
        local rc2, _, se2 = run({ "run", "scenarios/tcp.lua", "--out", "-x" })
        assert.equals(2, rc2, se2)
        assert.is_nil(se2:find("warning", 1, true), se2)
    end)
end)

describe("small command-line rules", function()
    it("--filter matches a unit value against the resolved number", function()
        local rc, so = run({ "run", "scenarios/tcp.lua", "--list", "--filter", "payload=1KiB",
            "--filter", "topology=sharded:1" })
        assert.equals(0, rc)
        assert.truthy(so:find("2 cases, 6 runs", 1, true), so)
    end)

    it("help --help and help URL are help, exit 0", function()
        local rc, so = run({ "help", "--help" })
        assert.equals(0, rc)
        assert.truthy(so:find("usage: arkbench help", 1, true))
        local rc2, so2 = run({ "help", "tcp://x:1" })
        assert.equals(0, rc2)
        assert.truthy(so2:find("usage: arkbench URL [options]", 1, true))
    end)

    it("--set followed by another option is missing its value", function()
        local rc, _, se = run({ "run", "scenarios/tcp.lua", "--set", "--list" })
        assert.equals(2, rc)
        assert.equals("arkbench: --set needs a value\n", se)
    end)
end)

describe("serve options", function()
    it("an option followed by another option is missing its value (not given the option's name)", function()
        local rc, _, se = run({ "serve", "--processes", "--listen", "127.0.0.1:0" })
        assert.equals(2, rc)
        assert.equals("arkbench serve: --processes needs a value\n", se)
    end)
end)

describe("serve --cert-out", function()
    it("refuses a path it cannot write before listening, and warns when the protocol has no TLS", function()
        local rc, so, se = run({ "serve", "--protocol", "tls", "--cert-out", "/nonexistent-dir/x.pem" })
        assert.equals(2, rc)
        assert.equals("", so)
        assert.equals("arkbench serve: --cert-out /nonexistent-dir/x.pem: cannot write it: No such file"
            .. " or directory\n", se)
        local d = files.tmpdir("_cli")
        local rc2, so2, se2 = proc.capture("timeout 1 ", { ark.BIN, "serve", "--protocol", "tcp",
            "--listen", "127.0.0.1:0", "--cert-out", d .. "/x.pem" })
        assert.equals(124, rc2)
        assert.truthy(so2:find("listening on", 1, true))
        assert.truthy(se2:find("warning: --cert-out has no effect: --protocol tcp has no certificate", 1, true), se2)
        assert.is_false(files.exists(d .. "/x.pem"))
    end)
end)
