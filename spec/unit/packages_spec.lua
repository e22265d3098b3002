-- packages_spec.lua -- packages.txt is the one apt package list: README.md's
-- quick-start install line lists exactly its packages in its order,
-- .ci/run installs what its own command reads from the file, and
-- bin/arkbench names the [build] section when a build tool is missing.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")

local ROOT = files.ROOT
local shq = files.shq

-- packages.txt -> { all = { names in order }, build = {...}, test = {...}, sections = { names } }
local function parse(text)
    local got = { all = {}, sections = {} }
    local section
    local n = 0
    for raw in (text .. "\n"):gmatch("(.-)\n") do
        n = n + 1
        local line = raw:gsub("#.*", ""):match("^%s*(.-)%s*$")
        if line ~= "" then
            local s = line:match("^%[(%a+)%]$")
            if s then
                section = s
                got.sections[#got.sections + 1] = s
                got[s] = {}
            else
                assert.is_truthy(line:match("^[a-z0-9][a-z0-9.+-]+$"),
                    "packages.txt:" .. n .. ": not a package name: " .. raw)
                assert.is_truthy(section, "packages.txt:" .. n .. ": a package before any section")
                got.all[#got.all + 1] = line
                got[section][#got[section] + 1] = line
            end
        end
    end
    return got
end

local function words(s)
    local t = {}
    for w in s:gmatch("%S+") do t[#t + 1] = w end
    return t
end

describe("packages.txt", function()
    local list = parse(assert(files.read_file(ROOT .. "/packages.txt"), "packages.txt is missing"))

    it("has a [build] and a [test] section and no package twice", function()
        assert.are.same({ "build", "test" }, list.sections)
        assert.is_true(#list.build > 0 and #list.test > 0)
        local seen = {}
        for _, p in ipairs(list.all) do
            assert.is_nil(seen[p], p .. " is listed twice")
            seen[p] = true
        end
    end)

    it("is README.md's quick-start install line, package for package, in order", function()
        local readme = assert(files.read_file(ROOT .. "/README.md"))
        local lines = {}
        for l in readme:gmatch("[^\n]+") do
            if l:match("apt%-get install") and l:match("^sudo ") then lines[#lines + 1] = l end
        end
        assert.are.equal(1, #lines, "README.md should have one `sudo apt-get install` line")
        local pkgs = lines[1]:match("^sudo apt%-get install %-y (.*)$")
        assert.is_truthy(pkgs, "README's line is not `sudo apt-get install -y PKG...`: " .. lines[1])
        assert.are.same(list.all, words(pkgs))
    end)

    it("is what .ci/run installs: its own read of the file gives every package, after apt-get update", function()
        local ci = assert(files.read_file(ROOT .. "/.ci/run"))
        local read = ci:match("\n(mapfile %-t pkgs [^\n]*packages%.txt[^\n]*)\n")
        assert.is_truthy(read, ".ci/run does not read packages.txt with `mapfile -t pkgs ...`")
        local out = proc.sh_out("cd " .. shq(ROOT) .. " && bash -c " .. shq(read .. '; printf "%s\\n" "${pkgs[@]}"'))
        assert.are.same(list.all, words(out))
        local update = ci:find("\napt-get update\n", 1, true)
        local install = ci:find('\napt-get install -y --no-install-recommends "${pkgs[@]}"\n', 1, true)
        assert.is_truthy(update, "no apt-get update")
        assert.is_truthy(install, "no apt-get install -y --no-install-recommends of the list")
        assert.is_true(update < install, "apt-get update comes after the install")
    end)

    it("has no second copy: .ci/run and bin/arkbench name no package of their own", function()
        for _, path in ipairs({ ".ci/run", "bin/arkbench" }) do
            local text = assert(files.read_file(ROOT .. "/" .. path))
            -- a package list is a line naming several packages
            for line in text:gmatch("[^\n]+") do
                local n = 0
                for _, p in ipairs(list.all) do
                    if (" " .. line .. " "):find("[%s\"']" .. p:gsub("%p", "%%%0") .. "[%s\"']") then n = n + 1 end
                end
                assert.is_true(n < 3, path .. " lists packages itself: " .. line)
            end
        end
    end)

    it("bin/arkbench, missing its build tools, prints the [build] section's install line and exits 2", function()
        if proc.sh_out("uname -m"):match("^%s*(.-)%s*$") ~= "x86_64" then
            pending("bin/arkbench reports missing tools only on x86_64")
            return
        end
        -- a PATH with just the tools the launcher needs before its check
        local bin = files.tmpdir("_pkgpath")
        for _, t in ipairs({ "dirname", "uname", "sed", "tr" }) do
            local where = proc.sh_out("command -v " .. t):match("^%s*(.-)%s*$")
            assert.is_true(where ~= "", t .. " not found")
            assert.is_true(proc.sh_ok("ln -s " .. shq(where) .. " " .. shq(bin .. "/" .. t)))
        end
        local rc, out, err = proc.run_cmd({ "env", "PATH=" .. bin, "/bin/sh", ROOT .. "/bin/arkbench", "help" },
            { limit = 10 })
        files.remove_tmpdirs()
        assert.are.equal(2, rc, "stdout:\n" .. out .. "\nstderr:\n" .. err)
        assert.are.equal("arkbench: missing build dependencies: cmake gcc make pkg-config\n"
            .. "install them with:\n"
            .. "  sudo apt-get install -y " .. table.concat(list.build, " ") .. "\n", err)
    end)
end)
