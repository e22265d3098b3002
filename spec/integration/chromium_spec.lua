-- chromium_spec.lua -- report.html rendered in headless Chromium (Debian
-- package `chromium`) through spec/integration/chromium_driver.sh:
--   * every chart has one bar per case (counted in the rendered DOM and
--     against summary.json), every line chart one point per ok case;
--   * the page's own self-check (<pre id="selfcheck">, filled by its inline
--     JS) reports no script error and a working table sort;
--   * Chromium's console log has no "Uncaught" error;
--   * a screenshot is written to the result folder (report.png);
--   * (issue 25) an open-loop rate sweep's report has every table header,
--     the open-loop columns included, inside a 1280 px window, and a
--     latency-vs-offered-load and a percentile chart; a single-case report
--     has no one-bar chart.
-- Pages broken on purpose (a bar removed, a script error) make the checks
-- fail, so they can.  Pending, with the reason, when chromium is missing.
--
-- Runs $ARKBENCH_BIN (ctest sets it), else $ARKBENCH_ROOT/bin/arkbench.
-- Runtime: ~40 s (short runs of 10, 3 and 1 cases, six renders).
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local cjson = require("cjson")
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")

local ROOT = ark.ROOT
local DRIVER = ROOT .. "/spec/integration/chromium_driver.sh"
local shq, read_file, write_file, status = files.shq, files.read_file, files.write_file, proc.status

local function chromium()
    return proc.sh_out("command -v chromium || command -v chromium-browser"):match("[^\n]+")
end

local function tmpdir() return files.tmpdir("_chromium") end

teardown(function()
    files.remove_tmpdirs()
end)

-- { dom =, log =, rc = } of rendering page (an absolute path)
local function render(page, screenshot)
    local work = tmpdir()
    local rc = status("sh " .. shq(DRIVER) .. " " .. shq(page) .. " " .. shq(work)
        .. (screenshot and (" " .. shq(screenshot)) or ""))
    return { rc = rc, dom = read_file(work .. "/dom.html") or "", log = read_file(work .. "/chromium.log") or "" }
end

local function selfcheck(dom)
    local text = dom:match('<pre id="selfcheck">(.-)</pre>')
    assert.is_not_nil(text, "no selfcheck element in the DOM")
    text = text:gsub("&lt;", "<"):gsub("&gt;", ">"):gsub("&quot;", '"'):gsub("&amp;", "&")
    local ok, v = pcall(cjson.decode, text)
    assert.is_true(ok, "selfcheck is not JSON: " .. text)
    return v
end

-- Cases of summary.json matching a chart's data-part ("protocol=tcp clients=1 window=1").
local function cases_of_part(summary, part)
    local want = {}
    for k, v in part:gmatch("([%w_]+)=(%S+)") do want[k] = v end
    local all, ok = 0, 0
    for _, c in ipairs(summary.cases) do
        local match = true
        for k, v in pairs(want) do
            if tostring(c.case[k]) ~= v then match = false end
        end
        if match then
            all = all + 1
            if c.runs_ok > 0 then ok = ok + 1 end
        end
    end
    return all, ok
end

local function uncaught(log)
    local out = {}
    for line in log:gmatch("[^\n]+") do
        if line:find("Uncaught", 1, true) or line:find("CONSOLE.*[Ee]rror") then out[#out + 1] = line end
    end
    return out
end

local have = chromium()

describe("report.html in headless Chromium", function()
    if not have then
        pending("chromium is not installed (apt-get install -y chromium): report.html not rendered")
        return
    end

    local DIR, summary, page

    setup(function()
        DIR = tmpdir() .. "/result"
        local rc = ark.run({ "run", "scenarios/tcp.lua", "--quick", "--filter", "payload=1024", "--out", DIR })
        assert.are.equal(0, rc)
        summary = cjson.decode(read_file(DIR .. "/summary.json"))
        page = render(DIR .. "/report.html", DIR .. "/report.png")
    end)

    it("renders every chart with one bar per case, as summary.json has them", function()
        assert.are.equal(0, page.rc, page.log)
        local charts = 0
        for attrs, body in page.dom:gmatch('<svg ([^>]*class="chart"[^>]*)>(.-)</svg>') do
            charts = charts + 1
            local kind = attrs:match('data%-kind="([^"]+)"')
            local part = attrs:match('data%-part="([^"]+)"')
            local all, ok = cases_of_part(summary, part)
            assert.is_true(all > 0, part)
            if kind == "percentile" then
                -- a curve per case: as many points as it declares, at least one per ok case
                local declared = tonumber(body:match('<g class="lines"[^>]* data%-points="(%d+)"'))
                local _, points = body:gsub('<circle class="point"', "")
                assert.are.equal(declared, points, kind .. " " .. part)
                assert.is_true(points >= ok, kind .. " " .. part)
            elseif kind == "line" then
                local _, points = body:gsub('<circle class="point"', "")
                assert.are.equal(ok, points, kind .. " " .. part)
            else
                local declared = tonumber(body:match('<g class="bars" data%-cases="(%d+)"'))
                local _, bars = body:gsub('<rect class="bar[ "]', "")
                assert.are.equal(all, declared, kind .. " " .. part)
                assert.are.equal(all, bars, kind .. " " .. part)
            end
        end
        local _, files = io.popen("ls " .. shq(DIR .. "/charts")):read("*a"):gsub("%.svg\n", "")
        assert.are.equal(files, charts)
        assert.is_true(charts >= 4)
    end)

    it("runs its inline self-check without errors: bars found, tables sort", function()
        local sc = selfcheck(page.dom)
        assert.are.equal("ok", sc.status, cjson.encode(sc))
        assert.are.same({}, sc.errors)
        assert.is_true(sc.sorted)
        assert.are.equal(0, sc.bad)
        for _, c in ipairs(sc.detail) do assert.are.equal(c.declared, c.found, c.part) end
        local _, files = io.popen("ls " .. shq(DIR .. "/charts")):read("*a"):gsub("%.svg\n", "")
        assert.are.equal(files, sc.charts)
    end)

    it("logs no console error", function()
        assert.are.same({}, uncaught(page.log))
    end)

    it("writes a 1280x2000 screenshot into the result folder", function()
        local png = read_file(DIR .. "/report.png")
        assert.is_not_nil(png, "no report.png")
        assert.are.equal("\137PNG\r\n\26\n", png:sub(1, 8))
        local function u32(s, i)
            local a, b, c, d = s:byte(i, i + 3)
            return ((a * 256 + b) * 256 + c) * 256 + d
        end
        assert.are.equal(1280, u32(png, 17))
        assert.are.equal(2000, u32(png, 21))
        assert.is_true(#png > 20000, "report.png is only " .. #png .. " bytes")
    end)

    it("keeps every column of an open-loop sweep inside 1280 px, with its load and percentile charts",
       function()
        local d = tmpdir()
        write_file(d .. "/sweep.lua", [[
return { name = "sweep", protocol = "tcp", payload = 64, clients = 2, window = 4,
         rate = { 200, 400, 800 }, rate_strict = false }
]])
        local rc = ark.run({ "run", d .. "/sweep.lua", "--quick", "--out", d .. "/r" })
        assert.are.equal(0, rc)
        local r = render(d .. "/r/report.html")
        assert.are.equal(0, r.rc, r.log)
        local sc = selfcheck(r.dom)
        assert.are.equal("ok", sc.status, cjson.encode(sc))
        assert.is_true(sc.viewport > 1200 and sc.viewport <= 1280, cjson.encode(sc))
        assert.are.same({}, sc.overflow)
        for _, col in ipairs({ "rate asked/s", "rate achieved/s", "unsent", "send lag p99 µs", "rate met" }) do
            assert.truthy(r.dom:find("<th[^>]*>" .. col:gsub("[%-/]", "%%%0") .. "</th>"), col)
        end
        local kinds = {}
        for _, c in ipairs(sc.detail) do kinds[c.kind] = true end
        assert.is_true(kinds["latency-vs-load"] and kinds.percentile, cjson.encode(sc))
        -- the check can fail: a table wider than the window is seen
        local page = read_file(d .. "/r/report.html")
        write_file(d .. "/wide.html", (page:gsub("<th>topology</th>",
            '<th style="min-width:1500px">topology</th>', 1)))
        local w = render(d .. "/wide.html")
        assert.is_true(#selfcheck(w.dom).overflow > 0)
    end)

    it("draws no one-bar chart for a single case", function()
        local d = tmpdir()
        local rc = ark.run({ "run", "scenarios/tcp.lua", "--quick", "--filter", "payload=64", "--filter",
            "clients=1", "--filter", "topology=sharded:1", "--out", d .. "/r" })
        assert.are.equal(0, rc)
        local r = render(d .. "/r/report.html")
        local sc = selfcheck(r.dom)
        assert.are.equal("ok", sc.status, cjson.encode(sc))
        for _, c in ipairs(sc.detail) do
            assert.is_not.equal("throughput", c.kind)
            assert.is_not.equal("p99", c.kind)
        end
        assert.is_nil(r.dom:find('<g class="bars"', 1, true))
        assert.are.same({}, sc.overflow)
    end)

    it("notices a missing bar and a script error (the checks can fail)", function()
        local html = read_file(DIR .. "/report.html")
        local t = tmpdir()
        local gone = html:gsub('<rect class="bar"', '<rect class="gone"', 1)
        write_file(t .. "/gone.html", gone)
        local r = render(t .. "/gone.html")
        local sc = selfcheck(r.dom)
        assert.are.equal("fail", sc.status)
        assert.are.equal(1, sc.bad)

        local broken = html:gsub("<body>", "<body>\n<script>no_such_function();</script>", 1)
        write_file(t .. "/broken.html", broken)
        r = render(t .. "/broken.html")
        assert.are.equal(1, #uncaught(r.log), r.log)
        assert.truthy(uncaught(r.log)[1]:find("no_such_function", 1, true))
        sc = selfcheck(r.dom)
        assert.are.equal("fail", sc.status)
        assert.are.equal(1, #sc.errors)
        assert.truthy(sc.errors[1]:find("no_such_function", 1, true))
    end)
end)
