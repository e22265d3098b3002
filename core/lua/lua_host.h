/* lua_host.h -- the one set-up of every Lua state arkbench makes: the
 * host's own (main.c) and the Lua driver's, one per event loop
 * (lua_exec.c).  Each gets the standard libraries, package.path with our
 * tree first, the C modules preloaded (cjson, arkbench.core), the global
 * ARKBENCH_ROOT, and runs its chunks under ab_lua_host_traceback.
 *
 * Threads: a state belongs to the thread that drives it; setting one up
 * touches nothing shared.
 */
#ifndef AB_LUA_HOST_H
#define AB_LUA_HOST_H

#include <lua.h>

/* Sets up L (fresh from luaL_newstate).  root: the tree holding
 * lua/arkbench/ (NULL: no ARKBENCH_ROOT, paths as below).  path: the
 * package.path to use as is (a parent state's, so both find the same
 * modules); NULL = "<root>/lua/?.lua;<root>/lua/?/init.lua;" before
 * LuaJIT's default.  cpath: package.cpath as is; NULL = the default.
 * Raises a Lua error on failure (out of memory): call it protected. */
void ab_lua_host_setup(lua_State *L, const char *root, const char *path, const char *cpath);

/* Message handler for lua_pcall: the error message (or its __tostring, or
 * what kind of value it is) followed by a stack traceback.  Returns 1. */
int ab_lua_host_traceback(lua_State *L);

#endif
