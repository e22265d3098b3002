-- The run object's counters are declared once (core/engine/counters.h):
-- docs/run-object.md's counter rows must be exactly the table's, in order,
-- with the table's one-line meaning.  On a mismatch the expected block is
-- printed so that it can be pasted into the doc.
local core = require("arkbench.core")

local ROOT = os.getenv("ARKBENCH_ROOT") or "."

local function read(path)
    local f = assert(io.open(path, "rb"))
    local s = f:read("*a")
    f:close()
    return s
end

-- The rows between <!-- counters:GROUP ... --> and <!-- /counters:GROUP -->.
local function doc_block(text, group)
    local open = text:find("<!%-%- counters:" .. group .. "[^\n]*%-%->\n")
    local close = text:find("<!%-%- /counters:" .. group .. " %-%->")
    assert(open and close, "docs/run-object.md has no counters:" .. group .. " block")
    local body = text:sub(text:find("\n", open) + 1, close - 1)
    return body
end

local function expected_block(group)
    local rows = {}
    for _, c in ipairs(core.counters()) do
        if c.group == group then
            local key = group == "datagram" and ("udp." .. c.name)
                or group == "h2" and ("h2." .. c.name:sub(4)) or c.name
            rows[#rows + 1] = ("| `%s` | integer | %s |\n"):format(key, c.doc)
        end
    end
    return table.concat(rows)
end

describe("core.counters", function()
    it("lists every counter once, with a merge rule, a group and a doc", function()
        local seen = {}
        local list = core.counters()
        assert.is_true(#list >= 15)
        for _, c in ipairs(list) do
            assert.is_nil(seen[c.name], c.name .. " declared twice")
            seen[c.name] = true
            assert.is_truthy(c.merge == "sum" or c.merge == "max")
            assert.is_truthy(c.group == "run" or c.group == "datagram" or c.group == "h2")
            assert.is_true(#c.doc > 10)
        end
        for _, name in ipairs({ "sent", "completed", "drained", "timed_out", "message_errors",
                                "unfinished", "warmup_completed", "late", "reordered",
                                "duplicated", "server_drops" }) do
            assert.is_true(seen[name], name)
        end
    end)
end)

describe("docs/run-object.md", function()
    local text = read(ROOT .. "/docs/run-object.md")
    for _, group in ipairs({ "run", "datagram", "h2" }) do
        it("has the counters table's " .. group .. " rows", function()
            local want, got = expected_block(group), doc_block(text, group)
            if want ~= got then
                print("\nexpected counters:" .. group .. " block:\n" .. want)
            end
            assert.are.equal(want, got)
        end)
    end

    it("is checked for real: a changed row is caught", function()
        local want = expected_block("run")
        local tampered = text:gsub("| `sent` | integer | [^\n]*", "| `sent` | integer | something else |", 1)
        assert.are_not.equal(want, doc_block(tampered, "run"))
    end)
end)
