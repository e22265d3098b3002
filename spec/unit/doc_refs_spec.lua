-- Code comments and docs cite the repo's own documents (docs/*.md,
-- README.md), never a design document the repo does not contain: a reader
-- of a clone must be able to follow every reference.
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")

local ROOT = os.getenv("ARKBENCH_ROOT") or "."
-- built from parts so that this file does not match itself
local WORD = "DES" .. "IGN"

local function tracked(dirs)
    local p = io.popen("cd " .. files.shq(ROOT) .. " && git ls-files " .. table.concat(dirs, " ") .. " 2>/dev/null")
    local out = {}
    for line in p:lines() do out[#out + 1] = line end
    p:close()
    return out
end

describe("references in code and docs", function()
    it("name no document outside the repo", function()
        local list = tracked({ "core", "lua", "docs", "bench", "spec", "fuzz", "scenarios", "README.md", "CMakeLists.txt" })
        assert.is_true(#list > 50, "git ls-files listed " .. #list .. " files")
        local bad = {}
        for _, path in ipairs(list) do
            local text = files.read_file(ROOT .. "/" .. path) or ""
            local n = 0
            for line in (text .. "\n"):gmatch("([^\n]*)\n") do
                n = n + 1
                if line:find(WORD, 1, true) then bad[#bad + 1] = path .. ":" .. n .. ": " .. line end
            end
        end
        assert.are.same({}, bad)
    end)
end)
