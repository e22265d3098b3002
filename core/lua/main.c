/* main.c -- the arkbench host.
 *
 * Embeds LuaJIT, sets the state up as every arkbench state is (lua_host.h:
 * paths, the C modules cjson and arkbench.core) and hands the command line
 * to lua/arkbench/cmd/cli.lua.  All start-up runs inside one protected call
 * with the host's traceback handler, so a Lua error anywhere prints
 * file:line and a traceback instead of a PANIC.  The Lua tree (the folder
 * holding lua/arkbench/) is, in this order: $ARKBENCH_ROOT (bin/arkbench
 * sets it to the checkout); AB_DATA_REL beside the executable when it holds
 * the tree (an installed arkbench: <prefix>/bin/arkbench finds
 * <prefix>/share/arkbench, wherever the prefix was moved); the source
 * directory the binary was built from (build/arkbench in a checkout).
 * docs/architecture.md, "Where the Lua tree is".
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lua.h>
#include <lauxlib.h>

#include "io/proc.h"
#include "lua/lua_host.h"

#ifndef AB_DATA_REL
#define AB_DATA_REL "../share/arkbench"
#endif

struct start_args {
  int argc;
  char **argv;
  int exit_code;
};

/* Whether dir holds the Lua tree (its command line module). */
static int holds_tree(const char *dir) {
  char probe[PATH_MAX];
  int n = snprintf(probe, sizeof(probe), "%s/lua/arkbench/cmd/cli.lua", dir);
  return n > 0 && (size_t)n < sizeof(probe) && access(probe, R_OK) == 0;
}

/* The installed tree: AB_DATA_REL from the executable's folder, made
 * absolute (realpath) into buf; 0, or -1 when there is none. */
static int installed_root(char *buf, size_t len) {
  char exe[PATH_MAX], rel[PATH_MAX];
  if (ab_proc_exe_path(exe, sizeof(exe)) != 0) return -1;
  char *slash = strrchr(exe, '/');
  if (slash == NULL) return -1;
  *slash = '\0';
  int n = snprintf(rel, sizeof(rel), "%s/%s", exe, AB_DATA_REL);
  if (n < 0 || (size_t)n >= sizeof(rel) || !holds_tree(rel)) return -1;
  char real[PATH_MAX];
  if (realpath(rel, real) == NULL || strlen(real) >= len) return -1;
  memcpy(buf, real, strlen(real) + 1);
  return 0;
}

static int start(lua_State *L) {
  struct start_args *a = lua_touserdata(L, 1);
  static char found[PATH_MAX];
  const char *root = getenv("ARKBENCH_ROOT");
  if (root != NULL && root[0] != '\0') {
    if (!holds_tree(root)) {
      fprintf(stderr,
              "arkbench: ARKBENCH_ROOT=%s holds no lua/arkbench/cmd/cli.lua; "
              "unset it, or set it to the folder that holds lua/arkbench\n",
              root);
      a->exit_code = 2;
      return 0;
    }
  } else if (installed_root(found, sizeof(found)) == 0) {
    root = found;
  } else if (holds_tree(AB_SOURCE_DIR)) {
    root = AB_SOURCE_DIR;
  } else {
    fprintf(stderr,
            "arkbench: cannot find its Lua modules: neither <executable's folder>/" AB_DATA_REL
            " nor %s holds lua/arkbench/cmd/cli.lua; set ARKBENCH_ROOT to the folder that "
            "holds lua/arkbench\n",
            AB_SOURCE_DIR);
    a->exit_code = 2;
    return 0;
  }

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
