-- spec/helpers/files.lua -- the repository root, shell quoting, temp
-- folders and files, whole-file reads and writes, for the specs.
--
-- Specs find these modules with a one-line prelude:
--   package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
-- and remove their temp folders in teardown with files.remove_tmpdirs().
local M = {}

-- $ARKBENCH_ROOT (ctest sets it), else the working folder.
M.ROOT = os.getenv("ARKBENCH_ROOT") or "."

-- s quoted for a POSIX shell.
function M.shq(s)
    return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

local function sh_ok(cmd)
    local r = os.execute(cmd)
    return r == true or r == 0
end

-- The whole file, or nil when it cannot be opened.
function M.read_file(path)
    local f = io.open(path, "rb")
    if not f then return nil end
    local s = f:read("*a")
    f:close()
    return s
end

function M.write_file(path, text)
    local f = assert(io.open(path, "wb"))
    f:write(text)
    f:close()
end

-- A new file (os.tmpname()) holding `content`; its path. The caller
-- removes it.
function M.tmpfile(content)
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write(content)
    f:close()
    return path
end

-- Whether path exists (a file, a folder or anything else).
function M.exists(path)
    return sh_ok("test -e " .. M.shq(path))
end

local made = {}

-- A new folder named after a fresh os.tmpname() plus `suffix` (default
-- "_spec"); remove_tmpdirs() removes it.
function M.tmpdir(suffix)
    local p = os.tmpname()
    os.remove(p)
    p = p .. (suffix or "_spec")
    assert(sh_ok("mkdir -p " .. M.shq(p)))
    made[#made + 1] = p
    return p
end

-- Removes every folder tmpdir() made so far.
function M.remove_tmpdirs()
    for _, d in ipairs(made) do os.execute("rm -rf " .. M.shq(d)) end
    made = {}
end

return M
