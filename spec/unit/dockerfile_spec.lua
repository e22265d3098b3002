-- dockerfile_spec.lua -- the Dockerfile cannot drift from packages.txt:
-- its build stage installs what its own command reads from the file's
-- [build] section plus named packages that packages.txt lists, it builds
-- the .deb with cpack, and its runtime stage (Debian 12) installs that
-- .deb and no package of its own (the .deb's Depends, which
-- spec/integration/install_spec.lua checks against the [build] section,
-- bring the rest). Docker does not run here: this reads the file.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")

local ROOT = files.ROOT
local shq = files.shq

-- packages.txt -> { build = {...}, test = {...}, all = { name = section } }
local function packages()
    local got, section = { all = {} }, nil
    for raw in (assert(files.read_file(ROOT .. "/packages.txt")) .. "\n"):gmatch("(.-)\n") do
        local line = raw:gsub("#.*", ""):match("^%s*(.-)%s*$")
        local s = line:match("^%[(%a+)%]$")
        if s then
            section = s
            got[s] = {}
        elseif line ~= "" then
            got[section][#got[section] + 1] = line
            got.all[line] = section
        end
    end
    return got
end

-- The Dockerfile as stages: { { from = "debian:12 AS build", runs = { "cmd" }, copies = {...} } },
-- continuation lines joined.
local function stages(text)
    local list, cur = {}, nil
    text = text:gsub("\\\n", " ")
    for line in text:gmatch("[^\n]+") do
        local instr, rest = line:match("^(%u+)%s+(.*)$")
        if instr == "FROM" then
            cur = { from = rest, runs = {}, copies = {} }
            list[#list + 1] = cur
        elseif instr == "RUN" then
            cur.runs[#cur.runs + 1] = rest
        elseif instr == "COPY" then
            cur.copies[#cur.copies + 1] = rest
        end
    end
    return list
end

-- The words after `apt-get install` in each step of cmd that installs,
-- options dropped.
local function installed_words(cmd)
    local words = {}
    for step in (cmd .. "&&"):gmatch("(.-)&&") do
        local args = step:match("apt%-get install%s+(.*)$")
        if args then
            for w in args:gmatch("%S+") do
                if w:sub(1, 1) ~= "-" then words[#words + 1] = w end
            end
        end
    end
    return words
end

describe("Dockerfile", function()
    local text = assert(files.read_file(ROOT .. "/Dockerfile"), "no Dockerfile")
    local list = packages()
    local st = stages(text)

    it("has a build stage and a runtime stage, both Debian 12", function()
        assert.are.equal(2, #st, "two FROM lines")
        assert.matches("^debian:12 AS build$", st[1].from)
        assert.matches("^debian:12%-slim$", st[2].from)
    end)

    it("builds with packages.txt's [build] section, read from the file by its own command", function()
        local run = table.concat(st[1].runs, "\n")
        local sed = run:match("(sed %-n .- packages%.txt)")
        assert.is_truthy(sed, "the build stage does not read packages.txt with sed")
        local out = proc.sh_out("cd " .. shq(ROOT) .. " && " .. sed)
        local got = {}
        for w in out:gmatch("%S+") do got[#got + 1] = w end
        assert.are.same(list.build, got)
        assert.is_truthy(run:find("xargs -a /tmp/build-packages apt-get install", 1, true),
            "the list read is not what apt-get installs")
        assert.is_truthy(run:find(">/tmp/build-packages", 1, true), "the list is not written where xargs reads")
    end)

    it("names no package packages.txt does not list", function()
        for i, s in ipairs(st) do
            for _, run in ipairs(s.runs) do
                for _, w in ipairs(installed_words(run)) do
                    if not w:match("^/tmp/arkbench_%*%.deb$") then
                        assert.is_truthy(list.all[w], "stage " .. i .. " installs " .. w
                            .. ", which packages.txt does not list")
                    end
                end
            end
        end
    end)

    it("makes the .deb with cpack and installs only that (and its Recommends) in the runtime stage", function()
        local cmake = assert(files.read_file(ROOT .. "/cmake/install.cmake"))
        local build = table.concat(st[1].runs, "\n")
        assert.is_truthy(build:find("cd build && cpack -G DEB", 1, true), "no cpack -G DEB in build/")
        assert.are.same({ "--from=build /src/build/arkbench_*.deb /tmp/" }, st[2].copies)
        local words = {}
        for _, run in ipairs(st[2].runs) do
            for _, w in ipairs(installed_words(run)) do words[#words + 1] = w end
        end
        assert.are.same({ "/tmp/arkbench_*.deb" }, words)
        -- with the .deb's Recommends (ca-certificates)
        for _, run in ipairs(st[2].runs) do
            assert.is_falsy(run:find("--no-install-recommends", 1, true), run)
        end
        local rec = cmake:match("set%(CPACK_DEBIAN_PACKAGE_RECOMMENDS ([^)]*)%)")
        for w in (rec or ""):gmatch("[^%s,]+") do
            assert.is_truthy(list.all[w], "the .deb recommends " .. w .. ", which packages.txt does not list")
        end
        -- the name CPack gives it (cmake/install.cmake): arkbench_<version>_<arch>.deb
        assert.is_truthy(cmake:find("set(CPACK_PACKAGE_NAME arkbench)", 1, true))
        assert.is_truthy(cmake:find("set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)", 1, true))
    end)
end)
