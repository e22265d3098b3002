-- install_spec.lua -- arkbench installs (issue 22, acceptance 4;
-- docs/install.md): `cmake --install` into a temp prefix gives a tree
-- whose binary finds its own Lua modules (moved elsewhere too) and runs
-- tcp.lua --quick from `/`; arkbench(1) renders with `man -l` and is the
-- command line's own help; `cpack -G DEB` makes arkbench_<version>_<arch>.deb
-- whose Depends are the runtime packages of packages.txt's [build]
-- section, and `dpkg --root` installs it into a throwaway root (the real
-- system's package database copied there, so the Depends are checked
-- against what this machine has), from where it runs again.
-- Runtime: ~30-60 s (most of it cpack).
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")

local shq = files.shq
local ROOT = files.ROOT
local BIN = ark.BIN
local BUILD = assert(BIN:match("^(.*)/arkbench$"), "ARKBENCH_BIN is not <build>/arkbench: " .. BIN)

teardown(function() files.remove_tmpdirs() end)

local function trim(s) return (s or ""):match("^%s*(.-)%s*$") end

-- argv run from `/` with none of the checkout's variables, so only the
-- binary's own search can find its tree; -> rc, stdout, stderr
local function from_root(argv, limit, env)
    local rc, out, err = proc.capture("env -u ARKBENCH_ROOT -u ARKBENCH_BIN " .. (env or "") .. " timeout -k 3 "
        .. (limit or 60) .. " ", argv, { cwd = "/" })
    return rc, out, err
end

local VERSION = require("arkbench.util.env").VERSION

-- man and groff in a locale every Debian has (an ungenerated $LANG would
-- add a warning of its own), 100 columns
local MAN = "LC_ALL=C.UTF-8 MANWIDTH=100 MANPAGER=cat "

-- The tree the binary at exe uses (its ARKBENCH_ROOT global), from `/`.
local function tree_of(exe)
    local script = files.tmpdir("_root") .. "/root.lua"
    files.write_file(script, "io.write(tostring(ARKBENCH_ROOT))\n")
    local rc, out, err = from_root({ exe, "dev-lua", script })
    assert.are.equal(0, rc, err)
    return out
end

-- One --quick case of the shipped tcp.lua run by exe from `/` into a new
-- folder: its run objects.
local function quick_tcp(exe, scenario, env)
    local out = files.tmpdir("_out") .. "/r"
    local rc, so, se = from_root({ exe, "run", scenario, "--quick", "--filter", "payload=64",
        "--filter", "topology=sharded:1", "--filter", "clients=1", "--out", out }, 120, env)
    assert.are.equal(0, rc, "stdout:\n" .. so .. "\nstderr:\n" .. se)
    local runs = ark.read_runs(out .. "/runs.jsonl")
    assert.are.equal(1, #runs)
    local r = runs[1]
    assert.are.equal("ok", r.status, tostring(r.error))
    assert.are.equal("payload=64 clients=1 window=1 topology=sharded:1", r.case_id)
    assert.are.equal("tcp", r.case.protocol)
    assert.is_true(r.completed > 0)
    ark.assert_identity(r)
    local text = files.read_file(out .. "/env.json")
    assert.is_truthy(text, out .. "/env.json")
    local env = ark.cjson.decode(text)
    assert.are.equal(VERSION, env.arkbench_version)
    assert.are.equal(scenario, env.scenario_path)
    return r
end

local function real(path) return trim(proc.sh_out("realpath " .. shq(path))) end

local function head_commit()
    local c = trim(proc.sh_out("git -C " .. shq(ROOT) .. " rev-parse HEAD 2>/dev/null"))
    return c:match("^%x+$") and #c == 40 and c or nil
end

describe("cmake --install into a temp prefix", function()
    local P
    setup(function()
        P = files.tmpdir("_prefix") .. "/p"
        local rc, out, err = proc.run_cmd({ "cmake", "--install", BUILD, "--prefix", P }, { limit = 120 })
        assert.are.equal(0, rc, out .. err)
    end)

    it("holds the binary, the whole Lua tree, the scenarios, the docs and the man page", function()
        assert.is_true(proc.sh_ok("test -x " .. shq(P .. "/bin/arkbench")))
        for _, f in ipairs({ "share/arkbench/scenarios/tcp.lua", "share/arkbench/scenarios/custom/dns.lua",
                             "share/doc/arkbench/README.md", "share/doc/arkbench/docs/architecture.md",
                             "share/doc/arkbench/copyright", "share/man/man1/arkbench.1" }) do
            assert.is_true(files.exists(P .. "/" .. f), f)
        end
        -- no license is granted, and none invented
        local copyright = files.read_file(P .. "/share/doc/arkbench/copyright")
        assert.truthy(copyright:find("all rights are\nreserved by its authors", 1, true), copyright)
        assert.truthy(copyright:find("lua-cjson", 1, true) and copyright:find("llhttp", 1, true), copyright)
        -- every module of the checkout, nothing else
        local function list(dir)
            return proc.sh_out("cd " .. shq(dir) .. " && find . -name '*.lua' | LC_ALL=C sort")
        end
        local want = list(ROOT .. "/lua")
        assert.is_true(#want > 0)
        assert.are.equal(want, list(P .. "/share/arkbench/lua"))
        -- the commit installed, for --version (no git checkout there)
        local commit = head_commit()
        if commit then
            assert.matches("^" .. commit .. "[ %a]*\n$", files.read_file(P .. "/share/arkbench/git-commit"))
        end
    end)

    it("finds its own tree beside the executable, also after the prefix is moved", function()
        assert.are.equal(real(P .. "/share/arkbench"), tree_of(P .. "/bin/arkbench"))
        local moved = files.tmpdir("_moved") .. "/elsewhere"
        assert.is_true(proc.sh_ok("cp -a " .. shq(P) .. " " .. shq(moved)))
        assert.are.equal(real(moved .. "/share/arkbench"), tree_of(moved .. "/bin/arkbench"))
        -- its workers (fresh processes) load their modules from there too:
        -- the moved tree's worker.lua, marked, says where it ran
        local wpath = moved .. "/share/arkbench/lua/arkbench/cmd/worker.lua"
        local mark = files.tmpdir("_mark") .. "/workers"
        files.write_file(wpath, "if arg and arg[1] == 'worker' and os.getenv('AB_INSTALL_MARK') then "
            .. "local f = io.open(os.getenv('AB_INSTALL_MARK'), 'a'); f:write(ARKBENCH_ROOT, ' ', "
            .. "debug.getinfo(1, 'S').source, '\\n'); f:close() end\n" .. files.read_file(wpath))
        quick_tcp(moved .. "/bin/arkbench", moved .. "/share/arkbench/scenarios/tcp.lua",
            "AB_INSTALL_MARK=" .. shq(mark))
        local root = real(moved .. "/share/arkbench")
        assert.are.equal(root .. " @" .. root .. "/lua/arkbench/cmd/worker.lua\n", files.read_file(mark))
        -- $ARKBENCH_ROOT still wins (bin/arkbench's checkout)
        local script = files.tmpdir("_root") .. "/root.lua"
        files.write_file(script, "io.write(tostring(ARKBENCH_ROOT))\n")
        local rc, out = proc.capture("env ARKBENCH_ROOT=" .. shq(ROOT) .. " ",
            { moved .. "/bin/arkbench", "dev-lua", script }, { cwd = "/" })
        assert.are.equal(0, rc)
        assert.are.equal(ROOT, out)
        -- one that holds no tree is refused, naming it, before anything runs
        local err
        rc, out, err = proc.capture("env ARKBENCH_ROOT=/nonexistent ", { moved .. "/bin/arkbench", "help" },
            { cwd = "/" })
        assert.are.equal(2, rc)
        assert.are.equal("", out)
        assert.matches("^arkbench: ARKBENCH_ROOT=/nonexistent holds no lua/arkbench/cmd/cli%.lua", err)
    end)

    it("runs the installed tcp.lua --quick from /, its workers too, results in --out", function()
        local r = quick_tcp(P .. "/bin/arkbench", P .. "/share/arkbench/scenarios/tcp.lua")
        assert.are.equal("tcp", r.scenario.name)
        assert.are.equal(P .. "/share/arkbench/scenarios/tcp.lua", r.scenario.path)
    end)

    it("answers --version, help and env from /", function()
        local rc, out, err = from_root({ P .. "/bin/arkbench", "--version" })
        assert.are.equal(0, rc, err)
        assert.matches("^arkbench " .. VERSION:gsub("%.", "%%.") .. " %(git ", out)
        local commit = head_commit()
        if commit then assert.truthy(out:find("(git " .. commit:sub(1, 12), 1, true), out) end
        rc, out, err = from_root({ P .. "/bin/arkbench", "help" })
        assert.are.equal(0, rc, err)
        assert.truthy(out:find("usage: arkbench <command> [options]", 1, true), out)
        rc, out, err = from_root({ P .. "/bin/arkbench", "env" })
        assert.are.equal(0, rc, err)
        local env = ark.cjson.decode(out)
        assert.are.equal(VERSION, env.arkbench_version)
        if commit then assert.are.equal(commit, env.git_commit) end
    end)

    it("has arkbench(1): man -l renders it without a warning, and it is the CLI's help", function()
        local page = P .. "/share/man/man1/arkbench.1"
        assert.are.equal("", proc.sh_out(MAN .. "man -l " .. shq(page) .. " 2>&1 >/dev/null"))
        assert.are.equal("", proc.sh_out(MAN .. "groff -man -Tutf8 -ww -z " .. shq(page) .. " 2>&1"))
        local text = proc.sh_out(MAN .. "man -l " .. shq(page) .. " 2>/dev/null")
        assert.matches("^ARKBENCH%(1%)", text)
        local data = require("arkbench.cmd.cli").help_data()
        for _, c in ipairs(data.order) do
            assert.truthy(text:find("\n       " .. c, 1, true), "no entry for " .. c)
        end
        for _, opt in ipairs({ "--threshold RULE", "--max-regression P%", "--connect-timeout T", "--processes N" }) do
            assert.truthy(text:find("\n              " .. opt, 1, true) or text:find("\n       " .. opt, 1, true),
                opt .. " missing:\n" .. text)
        end
        -- generated, not written: the page is what this checkout's help renders
        assert.are.equal(require("arkbench.cmd.manpage").render(data), files.read_file(page))
    end)
end)

describe("what cmake --install takes from the build folder", function()
    it("is the binary and the man page alone: `--target arkbench manpage` is enough (docs/install.md)", function()
        local text = assert(files.read_file(BUILD .. "/cmake_install.cmake"))
        local built = {}
        for path in text:gmatch('FILES "([^"]+)"') do
            if path:sub(1, #BUILD + 1) == BUILD .. "/" then built[#built + 1] = path:sub(#BUILD + 2) end
        end
        table.sort(built)
        assert.are.same({ "arkbench", "arkbench.1" }, built)
    end)
end)

describe("the .deb", function()
    local DIR, DEB, ARCH
    setup(function()
        DIR = files.tmpdir("_deb")
        local rc, out, err = proc.run_cmd({ "cpack", "-G", "DEB", "--config", BUILD .. "/CPackConfig.cmake",
                                            "-B", DIR }, { limit = 600 })
        assert.are.equal(0, rc, out .. err)
        ARCH = trim(proc.sh_out("dpkg --print-architecture"))
        DEB = DIR .. "/arkbench_" .. VERSION .. "_" .. ARCH .. ".deb"
    end)

    it("is arkbench_<version>_<arch>.deb, alone", function()
        assert.are.equal(DEB .. "\n", proc.sh_out("ls " .. shq(DIR) .. "/*.deb"))
        assert.are.equal("arkbench", trim(proc.sh_out("dpkg-deb -f " .. shq(DEB) .. " Package")))
        assert.are.equal(VERSION, trim(proc.sh_out("dpkg-deb -f " .. shq(DEB) .. " Version")))
        assert.are.equal(ARCH, trim(proc.sh_out("dpkg-deb -f " .. shq(DEB) .. " Architecture")))
        assert.are.equal("ca-certificates", trim(proc.sh_out("dpkg-deb -f " .. shq(DEB) .. " Recommends")))
    end)

    it("depends on what the binary links, each the runtime package of a [build] package", function()
        local depends = trim(proc.sh_out("dpkg-deb -f " .. shq(DEB) .. " Depends"))
        local named = {}
        for group in depends:gmatch("[^,]+") do
            local first = trim(group):match("^([%w.+-]+)")
            assert.is_truthy(first, group)
            named[first] = true
        end
        -- what the [build] section's packages depend on (libuv1-dev ->
        -- libuv1 ...), read from this machine's package database
        local runtime, section = { libc6 = true }, nil
        for line in assert(files.read_file(ROOT .. "/packages.txt")):gmatch("[^\n]+") do
            local p = trim((line:gsub("#.*", "")))
            section = p:match("^%[(%a+)%]$") or section
            if section == "build" and p:match("^[%w.+-]+$") then
                for dep in proc.sh_out("dpkg-query -W -f='${Depends}' " .. shq(p) .. " 2>/dev/null"):gmatch("[^,|]+") do
                    local n = trim(dep):match("^([%w.+-]+)")
                    if n then runtime[n] = true end
                end
            end
        end
        for n in pairs(named) do
            assert.is_true(runtime[n] == true, n .. " (in Depends: " .. depends
                .. ") is no runtime package of packages.txt's [build] section")
        end
        -- every library the binary needs comes from a package it depends on
        local needed = proc.sh_out("objdump -p " .. shq(BIN) .. " | awk '$1 == \"NEEDED\" { print $2 }'")
        local ldd = proc.sh_out("ldd " .. shq(BIN))
        local n = 0
        for so in needed:gmatch("%S+") do
            n = n + 1
            -- the file the loader picks, by its path in dpkg's database
            -- (usrmerge: /lib/... or /usr/lib/...)
            local path = ldd:match("\n%s*" .. so:gsub("%p", "%%%0") .. " => (%S+)")
            assert.is_truthy(path, so .. " not in ldd's answer:\n" .. ldd)
            local owner = proc.sh_out("dpkg -S " .. shq(path) .. " 2>/dev/null || dpkg -S "
                .. shq("/usr" .. path) .. " 2>/dev/null"):match("^([%w.+-]+)")
            assert.is_truthy(owner, so .. ": no package owns it")
            assert.is_true(named[owner] == true, so .. " is in " .. owner .. ", not in Depends: " .. depends)
        end
        assert.is_true(n >= 4, needed)
        for _, p in ipairs({ "libc6", "libuv1", "libssl3" }) do assert.is_true(named[p] == true, p) end
        assert.truthy(depends:find("libluajit-5.1-2", 1, true), depends)
        -- docs/install.md quotes it without the versions, which drift
        local quoted = files.read_file(ROOT .. "/docs/install.md"):match("```\n(libc6, [^\n]+)\n```")
        assert.is_truthy(quoted, "docs/install.md quotes no Depends line")
        assert.are.equal(quoted, (depends:gsub(" %b()", "")))
    end)

    it("installs with dpkg --root into a throwaway root, and runs from / there", function()
        if trim(proc.sh_out("id -u")) ~= "0" then
            pending("dpkg --root needs root (CI runs as root)")
            return
        end
        local R = files.tmpdir("_root") .. "/r"
        assert.is_true(proc.sh_ok("mkdir -p " .. shq(R .. "/var/lib/dpkg/info") .. " " .. shq(R .. "/var/lib/dpkg/updates")
            .. " && cp /var/lib/dpkg/status " .. shq(R .. "/var/lib/dpkg/status")
            .. " && : >" .. shq(R .. "/var/lib/dpkg/available")))
        -- the status copied: dpkg checks the Depends against this machine's
        -- packages (it warns that their file lists are not there)
        local rc, out, err = proc.run_cmd({ "dpkg", "--root=" .. R, "-i", DEB }, { limit = 120 })
        assert.are.equal(0, rc, out .. err)
        assert.matches("Status: install ok installed",
            proc.sh_out("dpkg --root=" .. shq(R) .. " -s arkbench"))
        local listed = proc.sh_out("dpkg --root=" .. shq(R) .. " -L arkbench")
        for _, f in ipairs({ "/usr/bin/arkbench", "/usr/share/arkbench/lua/arkbench/cmd/cli.lua",
                             "/usr/share/arkbench/scenarios/tcp.lua", "/usr/share/man/man1/arkbench.1",
                             "/usr/share/doc/arkbench/README.md", "/usr/share/doc/arkbench/copyright" }) do
            assert.truthy(listed:find("\n" .. f .. "\n", 1, true), f)
            assert.is_true(files.exists(R .. f), f)
        end
        assert.are.equal(real(R .. "/usr/share/arkbench"), tree_of(R .. "/usr/bin/arkbench"))
        quick_tcp(R .. "/usr/bin/arkbench", R .. "/usr/share/arkbench/scenarios/tcp.lua")
        -- `man arkbench` finds the page in that root's manual tree
        local page = proc.sh_out(MAN .. "man -M " .. shq(R .. "/usr/share/man") .. " arkbench 2>&1")
        assert.matches("^ARKBENCH%(1%)", page)
        assert.truthy(page:find("run FILE.lua", 1, true), page)
    end)
end)
