-- cmake/manpage.lua OUT -- writes arkbench(1) to OUT, from the command
-- line's own help (arkbench.cmd.manpage over cli.help_data()).  Run by the
-- build (cmake/install.cmake): arkbench dev-lua cmake/manpage.lua OUT
local out = assert(arg[1], "usage: arkbench dev-lua cmake/manpage.lua OUT")
local text = require("arkbench.cmd.manpage").render(require("arkbench.cmd.cli").help_data())
local f = assert(io.open(out .. ".tmp", "w"))
assert(f:write(text))
assert(f:close())
assert(os.rename(out .. ".tmp", out))
