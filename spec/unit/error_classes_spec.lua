-- The error classes are declared once (core/base/ab_error.h,
-- AB_ERROR_CLASSES): docs/run-object.md's class rows must be exactly the
-- table's, in order, with the table's kind and one-line meaning.  On a
-- mismatch the expected block is printed so that it can be pasted into the
-- doc.
local core = require("arkbench.core")

local ROOT = os.getenv("ARKBENCH_ROOT") or "."

local function read(path)
    local f = assert(io.open(path, "rb"))
    local s = f:read("*a")
    f:close()
    return s
end

-- The rows between <!-- error-classes ... --> (and its two header lines)
-- and <!-- /error-classes -->.
local function doc_block(text)
    local open = text:find("<!%-%- error%-classes[^\n]*%-%->\n")
    local close = text:find("<!%-%- /error%-classes %-%->")
    assert(open and close, "docs/run-object.md has no error-classes block")
    local body = text:sub(text:find("\n", open) + 1, close - 1)
    return (body:gsub("^| key | kind | meaning |\n|%-%-%-|%-%-%-|%-%-%-|\n", ""))
end

local function expected_block()
    local rows = {}
    for _, c in ipairs(core.error_classes()) do
        rows[#rows + 1] = ("| `%s` | %s | %s |\n"):format(c.key, c.kind, c.doc)
    end
    return table.concat(rows)
end

local KINDS = { closed = true, reset = true, refused = true, unreachable = true, timed_out = true,
                bad_reply = true, http_status = true }

describe("core.error_classes", function()
    it("lists every class once, with a kind and a doc", function()
        local seen = {}
        for _, c in ipairs(core.error_classes()) do
            assert.is_nil(seen[c.key], c.key .. " declared twice")
            seen[c.key] = true
            assert.is_true(KINDS[c.kind], c.key .. ": kind " .. tostring(c.kind))
            assert.is_true(#c.doc > 10)
        end
        for _, key in ipairs({ "ECLOSED", "ECONNRESET", "ECONNREFUSED", "ETIMEDOUT", "EPROTO", "EFRAME",
                               "EPAYLOAD", "ESIZE", "ESEQ", "HTTP <status>" }) do
            assert.is_true(seen[key], key)
        end
        -- ours are not the peer's
        for _, key in ipairs({ "ENOMEM", "ECONFIG", "ESCRIPT", "EINVAL" }) do
            assert.is_nil(seen[key], key)
        end
    end)
end)

describe("docs/run-object.md", function()
    local text = read(ROOT .. "/docs/run-object.md")

    it("has the class table's rows", function()
        local want, got = expected_block(), doc_block(text)
        if want ~= got then
            print("\nexpected error-classes block:\n" .. want)
        end
        assert.are.equal(want, got)
    end)

    it("is checked for real: a changed row is caught", function()
        local tampered = text:gsub("| `ECLOSED` | closed | [^\n]*", "| `ECLOSED` | closed | something else |", 1)
        assert.are_not.equal(expected_block(), doc_block(tampered))
    end)
end)
