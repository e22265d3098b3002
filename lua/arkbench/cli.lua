local _M = {}
function _M.main(args)
  if args[1] == "dev-busted" then
    arg = { [0] = "/usr/bin/busted" }
    for i = 2, #args do arg[i - 1] = args[i] end
    dofile("/usr/bin/busted")
    return 0
  end
  io.stderr:write("arkbench: no command\n")
  return 2
end
return _M
