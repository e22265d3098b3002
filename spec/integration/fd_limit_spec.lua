-- fd_limit_spec.lua -- the file-descriptor check counts per process
-- (issue 15): a connection has two ends in one worker (same-process) but
-- one end per process with placement = "split", so a split case may have
-- about twice the clients. With the host's hard limit H, clients just above
-- (H - 256) / 2 is refused same-process, naming placement = "split", and
-- runs ok split; past what split holds, the message names the exact
-- processes = N that fits. Runtime: ~5 s (10k loopback connections where
-- H = 20000).
package.path = (os.getenv("ARKBENCH_ROOT") or ".") .. "/spec/?.lua;" .. package.path
local files = require("helpers.files")
local proc = require("helpers.proc")
local ark = require("helpers.arkbench")

teardown(function() files.remove_tmpdirs() end)

describe("the file-descriptor check", function()
    local hard = tonumber((proc.sh_out("ulimit -Hn") or ""):match("%d+"))
    local clients = hard and math.floor((hard - 256) / 2) + 100

    it("refuses same-process past the limit, naming split, and runs the case split", function()
        if not hard or hard > 40000 then
            pending("the hard limit is " .. tostring(hard) .. ": too many connections for this spec")
            return
        end
        local d = files.tmpdir("_fd")
        local path = d .. "/fd.lua"
        files.write_file(path, string.format('return { name = "fd", protocol = "tcp", clients = %d,'
            .. ' window = 1, warmup = 0.5, duration = 1, repetitions = 1, timeout = 10 }\n', clients))
        local rc, _, err = ark.run({ "run", path })
        assert.equals(2, rc)
        -- the line itself (a busy machine adds a warning line before it)
        local line = string.format('arkbench: %s: clients = %d needs about %d file descriptors per'
            .. ' process, but this host allows %d (ulimit -n; fs.nr_open); lower clients, use'
            .. ' placement = "split" (one end per process) or raise the limit\n', path, clients,
            2 * clients + 256, hard)
        assert.truthy(err:find(line, 1, true), err)
        assert.is_nil(err:find("needs about", err:find(line, 1, true) + #line, true))
        -- past what one process per side could hold: the exact processes
        -- that fit (arkbench.run.fds: the share, room for SO_REUSEPORT's
        -- spread over the servers, 256 of its own)
        local rc3, _, err3 = ark.run({ "run", path, "--set", "clients=" .. hard })
        assert.equals(2, rc3)
        local k = 1
        repeat
            k = k + 1
            local n = math.ceil(hard / k) + math.ceil(4 * math.sqrt(hard / k)) + 256
        until n <= hard
        assert.truthy(err3:find(string.format('lower clients, use placement = "split" with processes'
            .. ' = %d or raise the limit', k), 1, true), err3)
        -- split already, one process per side: processes is what is missing
        local rc4, _, err4 = ark.run({ "run", path, "--set", "clients=" .. hard, "--set",
                                       "placement=split" })
        assert.equals(2, rc4)
        assert.truthy(err4:find(string.format('clients = %d (placement = "split") needs about %d file'
            .. ' descriptors per process, but this host allows %d (ulimit -n; fs.nr_open); lower'
            .. ' clients, use processes = %d or raise the limit', hard, hard + 256, hard, k), 1, true),
            err4)
        local rc2, _, err2 = ark.run({ "run", path, "--set", "placement=split", "--out", d .. "/out" })
        assert.equals(0, rc2, err2)
        local runs = ark.read_runs(d .. "/out/runs.jsonl")
        assert.equals(1, #runs)
        assert.is_true(runs[1].ok, runs[1].error)
        assert.is_true(runs[1].completed > 0)
    end)
end)
