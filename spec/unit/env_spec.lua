local env = require("arkbench.util.env")
local json = require("arkbench.util.json")
local core = require("arkbench.core")

local SHA256_ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local tmpfile = require("helpers.files").tmpfile

local function tmpdir()
    local path = os.tmpname()
    os.remove(path)
    assert(os.execute("mkdir -p '" .. path .. "'") == 0)
    return path
end

local function sh(cmd)
    local p = io.popen(cmd .. " 2>/dev/null; echo \"@$?\"")
    local out = p:read("*a")
    p:close()
    local body, code = out:match("^(.-)@(%d+)%s*$")
    return body, tonumber(code)
end

local CPUINFO = table.concat({
    "processor\t: 0",
    "vendor_id\t: GenuineIntel",
    "model name\t: Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
    "",
    "processor\t: 1",
    "model name\t: Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
    "",
    "processor\t: 2",
    "model name\t: Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
    "",
}, "\n")

local MEMINFO = "MemTotal:       16318540 kB\nMemFree:         1234567 kB\n"
local OS_RELEASE = 'NAME="Debian GNU/Linux"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\n'

local FIELDS = {
    "arkbench_version", "cpu_model", "logical_cpus", "memory_bytes", "os", "kernel", "machine",
    "hostname", "compiler", "c_flags", "build_type", "luajit", "libuv", "openssl", "sanitizers",
    "git_commit", "git_dirty", "binary_sha256", "scenario_path", "scenario_sha256",
    "scenario_source", "load_average_start", "started_utc", "ended_utc",
}

describe("env.utc_stamp / env.utc_iso", function()
    it("formats seconds since the epoch in UTC", function()
        assert.are.equal("20261130T041230Z", env.utc_stamp(1796011950))
        assert.are.equal("2026-11-30T04:12:30Z", env.utc_iso(1796011950))
        assert.are.equal("19700101T000000Z", env.utc_stamp(0))
    end)

    it("drops fractions of a second instead of rounding up", function()
        assert.are.equal("2026-11-30T04:12:30Z", env.utc_iso(1796011950.999))
    end)

    it("defaults to now", function()
        assert.matches("^%d%d%d%d%d%d%d%dT%d%d%d%d%d%dZ$", env.utc_stamp())
        assert.are.equal(env.utc_iso(os.time()):sub(1, 10), env.utc_iso():sub(1, 10))
    end)

    it("refuses a non-number", function()
        local ok, err = pcall(function() env.utc_iso("now") end)
        assert.is_false(ok)
        -- blamed on the caller's line
        assert.matches("env_spec%.lua:%d+: env: seconds since the epoch expected, got now$", err)
    end)
end)

describe("env.collect", function()
    local files, scenario

    before_each(function()
        files = {
            cpuinfo = tmpfile(CPUINFO), meminfo = tmpfile(MEMINFO), os_release = tmpfile(OS_RELEASE),
        }
        scenario = tmpfile("abc")
    end)

    after_each(function()
        for _, p in pairs(files) do os.remove(p) end
        os.remove(scenario)
    end)

    it("reads CPU, memory and OS from cpuinfo, meminfo and os-release", function()
        local e = env.collect({ files = files, root = "/nonexistent" })
        assert.are.equal("Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", e.cpu_model)
        assert.are.equal(3, e.logical_cpus)
        assert.are.equal(16318540 * 1024, e.memory_bytes)
        assert.are.equal("Debian GNU/Linux 12 (bookworm)", e.os)
    end)

    it("takes kernel, machine and hostname from uname", function()
        local u = core.uname()
        local e = env.collect({ files = files })
        assert.are.equal(u.release .. " " .. u.version, e.kernel)
        assert.are.equal(u.machine, e.machine)
        assert.are.equal(u.nodename, e.hostname)
    end)

    it("takes the build from core.build_info", function()
        local b = core.build_info()
        local e = env.collect({ files = files })
        assert.are.equal(b.luajit, e.luajit)
        assert.are.equal(b.libuv, e.libuv)
        assert.are.equal(b.openssl, e.openssl)
        assert.are.equal(b.build_type, e.build_type)
        assert.are.equal((b.c_flags:gsub("^%s+", ""):gsub("%s+$", "")), e.c_flags)
        assert.are.equal(b.sanitizers, e.sanitizers)
        assert.matches("^LuaJIT ", e.luajit)
        assert.are.equal("0.1.0", e.arkbench_version)
    end)

    it("hashes the binary and the scenario, and keeps the scenario's source", function()
        local e = env.collect({
            files = files, binary = scenario, scenario_path = scenario,
            started_utc = "2026-11-30T04:12:30Z", ended_utc = "2026-11-30T04:13:02Z",
        })
        assert.are.equal(SHA256_ABC, e.binary_sha256)
        assert.are.equal(SHA256_ABC, e.scenario_sha256)
        assert.are.equal("abc", e.scenario_source)
        assert.are.equal(scenario, e.scenario_path)
        assert.are.equal("2026-11-30T04:12:30Z", e.started_utc)
        assert.are.equal("2026-11-30T04:13:02Z", e.ended_utc)
    end)

    it("hashes /proc/self/exe by default", function()
        local e = env.collect({ files = files })
        assert.are.equal(core.sha256_file("/proc/self/exe"), e.binary_sha256)
        assert.matches("^%x+$", e.binary_sha256)
        assert.are.equal(64, #e.binary_sha256)
    end)

    it("has every field, null when it cannot be found", function()
        local e = env.collect({
            files = { cpuinfo = "/nonexistent", meminfo = "/nonexistent", os_release = "/nonexistent",
                      loadavg = "/nonexistent" },
            root = "/nonexistent", binary = "/nonexistent", scenario_path = "/nonexistent",
        })
        for _, k in ipairs(FIELDS) do
            assert.is_not_nil(e[k], k)
        end
        for _, k in ipairs({ "cpu_model", "logical_cpus", "memory_bytes", "os", "git_commit",
            "git_dirty", "binary_sha256", "scenario_sha256", "scenario_source", "started_utc",
            "ended_utc", "load_average_start" }) do
            assert.are.equal(json.null, e[k], k)
        end
        assert.are.equal("/nonexistent", e.scenario_path)
        local keys = 0
        for _ in pairs(e) do keys = keys + 1 end
        assert.are.equal(#FIELDS, keys)
    end)

    it("reads the load average", function()
        local d = os.tmpname()
        local f = io.open(d, "w")
        f:write("1.50 0.75 0.25 2/345 6789\n")
        f:close()
        assert.are.same({ 1.5, 0.75, 0.25 }, env.load_average(d))
        os.remove(d)
        assert.is_nil(env.load_average("/nonexistent"))
    end)

    it("warns of a busy machine above half the logical CPUs, not at or below", function()
        local function warn(load)
            local d = os.tmpname()
            local f = io.open(d, "w")
            f:write(load .. " 0.75 0.25 2/345 6789\n")
            f:close()
            local w = env.busy_warning({ loadavg = d, cpuinfo = files.cpuinfo })
            os.remove(d)
            return w
        end
        -- files.cpuinfo lists 3 logical CPUs
        assert.are.equal("warning: this machine is busy (load average 1.60 on 3 logical CPUs);"
            .. " the numbers will show it", warn("1.60"))
        assert.is_nil(warn("1.50"))
        assert.is_nil(warn("0.10"))
        assert.is_nil(env.busy_warning({ loadavg = "/nonexistent", cpuinfo = files.cpuinfo }))
    end)

    it("encodes to strict JSON", function()
        local e = env.collect({ files = files, scenario_path = scenario })
        local back = json.decode(json.encode(e, { indent = 2 }))
        assert.are.equal(3, back.logical_cpus)
        assert.are.equal("abc", back.scenario_source)
    end)

    describe("git", function()
        local _, has_git = sh("git --version")
        local dir

        before_each(function() dir = tmpdir() end)
        after_each(function() os.execute("rm -rf '" .. dir .. "'") end)

        it("is null outside a git checkout", function()
            local e = env.collect({ files = files, root = dir })
            assert.are.equal(json.null, e.git_commit)
            assert.are.equal(json.null, e.git_dirty)
        end)

        it("gives the commit and whether the tree is dirty", function()
            if has_git ~= 0 then
                pending("git is not installed")
                return
            end
            local q = "'" .. dir .. "'"
            local _, rc = sh("cd " .. q .. " && git init -q && echo x > f && git add f"
                .. " && git -c user.name=t -c user.email=t@example.org commit -qm init")
            assert.are.equal(0, rc)
            local head = sh("git -C " .. q .. " rev-parse HEAD"):match("%x+")
            local e = env.collect({ files = files, root = dir })
            assert.are.equal(head, e.git_commit)
            assert.are.equal(40, #e.git_commit)
            assert.is_false(e.git_dirty)
            local f = assert(io.open(dir .. "/f", "wb"))
            f:write("changed\n")
            f:close()
            assert.is_true(env.collect({ files = files, root = dir }).git_dirty)
        end)
    end)
end)
