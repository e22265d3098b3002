-- How a case reaches a worker on its command line.
--
-- A small case goes inline as `--case-json JSON`. A large one (a request
-- body of a few hundred KiB, a big parameter) cannot: Linux refuses one
-- argument above 128 KiB and the whole argv + environment above a few MiB
-- (E2BIG, "argument list too long"). Above CASE_INLINE_MAX bytes the case
-- is written to a private temporary file (mode 0600, os.tmpname) and the
-- worker gets `--case-file PATH`; the caller removes the file when the
-- worker has ended (done()).

local format = string.format

local _M = {}

-- Bytes of case JSON passed inline; above it, a file.
_M.CASE_INLINE_MAX = 16 * 1024

-- argv items for the case, and a function removing what was made (call it
-- once the worker has ended) | nil, error.
function _M.args(case_json)
    if #case_json <= _M.CASE_INLINE_MAX then
        return { "--case-json", case_json }, function() end
    end
    local path = os.tmpname()
    local f, err = io.open(path, "wb")
    if not f then
        os.remove(path)
        return nil, format("cannot write the case file %s: %s", path, tostring(err))
    end
    local ok, werr = f:write(case_json)
    local cok, cerr = f:close()
    if not ok or not cok then
        os.remove(path)
        return nil, format("cannot write the case file %s: %s", path, tostring(werr or cerr))
    end
    return { "--case-file", path }, function() os.remove(path) end
end

-- The worker's side: the case JSON text of --case-file PATH | nil, error.
function _M.read(path)
    local f, err = io.open(path, "rb")
    if not f then return nil, format("worker: cannot read --case-file: %s", tostring(err)) end
    local text = f:read("*a")
    f:close()
    if not text then return nil, "worker: cannot read --case-file " .. path end
    return text
end

return _M
