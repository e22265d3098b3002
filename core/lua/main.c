/* main.c -- the arkbench host.
 *
 * Embeds LuaJIT, sets the state up as every arkbench state is (lua_host.h:
 * paths, the C modules cjson and arkbench.core) and hands the command line
 * to lua/arkbench/cmd/cli.lua.  All start-up runs inside one protected call
 * with the host's traceback handler, so a Lua error anywhere prints
 * file:line and a traceback instead of a PANIC.  The Lua tree is found via
 * $ARKBENCH_ROOT (set by bin/arkbench), else the source directory the binary
 * was built from.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>

#include <lua.h>
#include <lauxlib.h>

#include "io/proc.h"
#include "lua/lua_host.h"

struct start_args {
  int argc;
  char **argv;
  int exit_code;
};

static int start(lua_State *L) {
  struct start_args *a = lua_touserdata(L, 1);
  const char *root = getenv("ARKBENCH_ROOT");
  if (root == NULL || root[0] == '\0') root = AB_SOURCE_DIR;

  ab_lua_host_setup(L, root, NULL, NULL);

  /* arg table as the standalone interpreter builds it. */
  lua_createtable(L, a->argc, 1);
  for (int i = 0; i < a->argc; i++) {
    lua_pushstring(L, a->argv[i]);
    lua_rawseti(L, -2, i);
  }
  lua_setglobal(L, "arg");

  lua_getglobal(L, "require");
  lua_pushliteral(L, "arkbench.cmd.cli");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "main");
  lua_createtable(L, a->argc, 0);
  for (int i = 1; i < a->argc; i++) {
    lua_pushstring(L, a->argv[i]);
    lua_rawseti(L, -2, i);
  }
  lua_call(L, 1, 1);
  a->exit_code = lua_isnumber(L, -1) ? (int)lua_tointeger(L, -1) : 0;
  return 0;
}

int main(int argc, char **argv) {
  /* a peer that closes while echoes are queued must be an EPIPE the run
   * counts, not a signal that kills the process */
  signal(SIGPIPE, SIG_IGN);
  /* every connection is a descriptor: the soft limit goes up to the hard
   * one at once (children inherit it; docs/scenarios.md, "Host limits") */
  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &nofile);
  }
  /* `run`: a Ctrl-C from the first millisecond on is recorded (and ends the
   * run with exit 130), even one that arrives while the Lua state starts or
   * the scenario loads -- a shell without job control starts background
   * commands with SIGINT ignored, so installing it later would lose it */
  if (argc > 1 && (strcmp(argv[1], "run") == 0 || strstr(argv[1], "://") != NULL))
    (void)ab_proc_signals_install();
  lua_State *L = luaL_newstate();
  if (L == NULL) {
    fprintf(stderr, "arkbench: cannot create a Lua state (out of memory)\n");
    return 1;
  }
  struct start_args a = {argc, argv, 0};
  lua_pushcfunction(L, ab_lua_host_traceback);
  lua_pushcfunction(L, start);
  lua_pushlightuserdata(L, &a);
  if (lua_pcall(L, 1, 0, 1) != 0) {
    fprintf(stderr, "arkbench: internal error: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return 1;
  }
  lua_close(L);
  return a.exit_code;
}
