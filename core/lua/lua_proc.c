/* lua_proc.c -- child processes and interrupts for the orchestrator (proc.h).
 *
 *   core.spawn_wait(argv, opts) -> res | nil, "ENAME: text", "ENAME"
 *       argv  list of strings; argv[1] is the executable (PATH-searched when
 *             it has no slash)
 *       opts  optional { timeout_s = number (hard limit; absent or <= 0:
 *             none), env = optional list of "K=V" added to the environment,
 *             channel = true: the child's fd 3 is a pipe captured into
 *             res.channel (the worker's run object, apart from stdout),
 *             on_progress = function(line): the child's fd 4 is a pipe
 *             too, each line written on it is passed to the function as it
 *             comes (implies channel; an error the function raises is
 *             written on stderr once and further lines are dropped) }
 *       res   { stdout = string, stderr = string, exit_code = integer | nil,
 *               term_signal = "SIGKILL" | nil, timed_out = bool,
 *               interrupted = bool, elapsed_s = number, pid = integer
 *               (0 if nothing was spawned), truncated = true when a stream
 *               passed AB_PROC_OUTPUT_MAX bytes (absent otherwise),
 *               channel = string (with opts.channel) }
 *       Fails (nil, err, code) only when the child cannot be started
 *       (ENOENT, EACCES, ENOMEM).  A recorded interrupt returns at once with
 *       interrupted = true and nothing spawned.
 *   core.signals_install([{ sigint = false }]) -> true | nil, err, code
 *       (once; later calls no-op; sigint = false: SIGINT is ignored, only
 *       SIGTERM is recorded -- a split case's server, stopped by its worker)
 *   core.interrupted() -> "SIGINT" | "SIGTERM" | nil
 *   core.interrupt_clear()              forget a recorded signal (tests)
 *   core.exe_path() -> string | nil, err, code        (/proc/self/exe)
 *   core.die_with_parent([ppid]) -> true | nil, err, code
 *       PR_SET_PDEATHSIG(SIGKILL) for this process; ESRCH when ppid is given
 *       and the parent is already gone.  Workers call it at start.
 *   core.limit_self{ cpu_s = n, as_bytes = n } -> true | nil, err, code
 *       setrlimit for this process: RLIMIT_CPU (soft n s, hard n + 1: SIGXCPU
 *       then SIGKILL) and RLIMIT_AS (bytes of address space; allocations past
 *       it fail; not set in a sanitizer build, whose shadow memory
 *       needs the address space).  A field left out keeps its limit.  The scenario loader
 *       child calls it before it runs the user's file (uv_spawn has no hook
 *       between fork and exec, so the child limits itself).
 */
#include <errno.h>
#include <signal.h>
#include <limits.h>
#include <sys/resource.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "base/ab_error.h"
#include "lua/lua_core.h"
#include "io/proc.h"

/* List of strings at stack index idx -> NULL-terminated array in a userdata
 * left on the stack (collected with it).  The strings stay owned by the
 * table, which the caller keeps on the stack. */
const char **ab_lua_string_list(lua_State *L, int idx, int arg, const char *what,
                                int need_one) {
  size_t n = lua_objlen(L, idx);
  if (need_one && n == 0)
    luaL_argerror(L, arg, lua_pushfstring(L, "%s must not be empty", what));
  const char **v = lua_newuserdata(L, (n + 1) * sizeof(*v));
  for (size_t i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, (int)i);
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_argerror(L, arg,
                    lua_pushfstring(L, "%s[%d] must be a string, got %s", what,
                                    (int)i, luaL_typename(L, -1)));
    v[i - 1] = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  v[n] = NULL;
  return v;
}

/* opts.on_progress: the Lua function at stack index fn, called per line. */
typedef struct {
  lua_State *L;
  int fn;
  int failed;
} progress_t;

static void on_progress(void *arg, const char *line, size_t len) {
  progress_t *p = arg;
  if (p->failed) return;
  lua_pushvalue(p->L, p->fn);
  lua_pushlstring(p->L, line, len);
  if (lua_pcall(p->L, 1, 0, 0) != 0) {
    p->failed = 1;
    fprintf(stderr, "arkbench: warning: the progress callback failed: %s\n",
            lua_tostring(p->L, -1));
    lua_pop(p->L, 1);
  }
}

static int l_spawn_wait(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  ab_proc_opts_t opts;
  progress_t prog = {L, 0, 0};
  memset(&opts, 0, sizeof(opts));
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_getfield(L, 2, "timeout_s");
    if (!lua_isnil(L, -1)) {
      if (lua_type(L, -1) != LUA_TNUMBER)
        luaL_argerror(L, 2, "opts.timeout_s must be a number");
      opts.timeout_s = lua_tonumber(L, -1);
    }
    lua_pop(L, 1);
    lua_getfield(L, 2, "channel");
    opts.channel = lua_toboolean(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, 2, "on_progress"); /* stays on the stack while the child runs */
    if (!lua_isnil(L, -1)) {
      if (!lua_isfunction(L, -1)) luaL_argerror(L, 2, "opts.on_progress must be a function");
      prog.fn = lua_gettop(L);
      opts.channel = 1;
      opts.on_progress = on_progress;
      opts.on_progress_arg = &prog;
    }
    lua_getfield(L, 2, "env"); /* stays on the stack: owns the strings */
    if (!lua_isnil(L, -1)) {
      if (!lua_istable(L, -1)) luaL_argerror(L, 2, "opts.env must be a list");
      opts.env = ab_lua_string_list(L, lua_gettop(L), 2, "opts.env", 0);
    }
  }
  const char **argv = ab_lua_string_list(L, 1, 1, "argv", 1);

  ab_proc_result_t res;
  int err = ab_proc_spawn_wait(argv, &opts, &res);
  if (err != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: cannot run %s: %s", ab_err_name(err), argv[0],
                    ab_strerror(err));
    lua_pushstring(L, ab_err_name(err));
    return 3;
  }

  lua_createtable(L, 0, 10);
  lua_pushlstring(L, res.out.data ? res.out.data : "", res.out.len);
  lua_setfield(L, -2, "stdout");
  lua_pushlstring(L, res.err.data ? res.err.data : "", res.err.len);
  lua_setfield(L, -2, "stderr");
  if (opts.channel) {
    lua_pushlstring(L, res.chan.data ? res.chan.data : "", res.chan.len);
    lua_setfield(L, -2, "channel");
  }
  if (res.exited) {
    lua_pushinteger(L, res.exit_code);
    lua_setfield(L, -2, "exit_code");
  }
  if (res.term_signal) {
    char buf[16];
    lua_pushstring(L, ab_proc_signame(res.term_signal, buf, sizeof(buf)));
    lua_setfield(L, -2, "term_signal");
  }
  lua_pushboolean(L, res.timed_out);
  lua_setfield(L, -2, "timed_out");
  lua_pushboolean(L, res.interrupted);
  lua_setfield(L, -2, "interrupted");
  lua_pushnumber(L, res.elapsed_s);
  lua_setfield(L, -2, "elapsed_s");
  lua_pushinteger(L, res.pid);
  lua_setfield(L, -2, "pid");
  if (res.out.truncated || res.err.truncated) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "truncated");
  }
  ab_proc_result_free(&res);
  return 1;
}

static int l_signals_install(lua_State *L) {
  int err = ab_proc_signals_install();
  if (err != 0) return ab_lua_fail(L, err);
  if (lua_istable(L, 1)) {
    lua_getfield(L, 1, "sigint");
    int ignore_int = lua_isboolean(L, -1) && !lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (ignore_int) signal(SIGINT, SIG_IGN);
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int l_interrupted(lua_State *L) {
  int sig = ab_proc_interrupted();
  if (sig == 0) {
    lua_pushnil(L);
  } else {
    char buf[16];
    lua_pushstring(L, ab_proc_signame(sig, buf, sizeof(buf)));
  }
  return 1;
}

static int l_interrupt_clear(lua_State *L) {
  (void)L;
  ab_proc_interrupt_clear();
  return 0;
}

static int l_exe_path(lua_State *L) {
  char buf[PATH_MAX + 1];
  int err = ab_proc_exe_path(buf, sizeof(buf));
  if (err != 0) return ab_lua_fail(L, err);
  lua_pushstring(L, buf);
  return 1;
}

static int l_die_with_parent(lua_State *L) {
  int ppid = (int)luaL_optinteger(L, 1, 0);
  int err = ab_proc_die_with_parent(ppid);
  if (err != 0) return ab_lua_fail(L, err);
  lua_pushboolean(L, 1);
  return 1;
}

static int set_limit(int resource, rlim_t soft, rlim_t hard) {
  struct rlimit cur;
  if (getrlimit(resource, &cur) != 0) return -errno;
  /* never above the current hard limit: an unprivileged process cannot
   * raise it */
  if (cur.rlim_max != RLIM_INFINITY && hard > cur.rlim_max) hard = cur.rlim_max;
  if (soft > hard) soft = hard;
  struct rlimit want = {soft, hard};
  if (setrlimit(resource, &want) != 0) return -errno;
  return 0;
}

static int l_limit_self(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int err = 0;
  lua_getfield(L, 1, "cpu_s");
  if (!lua_isnil(L, -1)) {
    lua_Number s = luaL_checknumber(L, -1);
    if (!(s >= 1 && s < 1e9)) luaL_argerror(L, 1, "cpu_s must be from 1 to 1e9");
    err = set_limit(RLIMIT_CPU, (rlim_t)s, (rlim_t)s + 1);
  }
  lua_pop(L, 1);
  lua_getfield(L, 1, "as_bytes");
  if (err == 0 && !lua_isnil(L, -1)) {
    lua_Number b = luaL_checknumber(L, -1);
    if (!(b >= 1 << 20 && b < 1e18))
      luaL_argerror(L, 1, "as_bytes must be from 1 MiB to 1e18");
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    /* AddressSanitizer and ThreadSanitizer reserve terabytes of address
     * space for their shadow memory: an address-space limit makes them
     * fail at the first allocation, so a sanitized build (AB_SANITIZE,
     * AB_TSAN) keeps only the CPU limit and the caller's wall-clock kill */
    (void)b;
#else
    err = set_limit(RLIMIT_AS, (rlim_t)b, (rlim_t)b);
#endif
  }
  lua_pop(L, 1);
  if (err != 0) return ab_lua_fail(L, err);
  lua_pushboolean(L, 1);
  return 1;
}

void ab_lua_register_proc(lua_State *L) {
  static const luaL_Reg fns[] = {{"spawn_wait", l_spawn_wait},
                                 {"signals_install", l_signals_install},
                                 {"interrupted", l_interrupted},
                                 {"interrupt_clear", l_interrupt_clear},
                                 {"exe_path", l_exe_path},
                                 {"die_with_parent", l_die_with_parent},
                                 {"limit_self", l_limit_self},
                                 {NULL, NULL}};
  for (const luaL_Reg *r = fns; r->name; r++) {
    lua_pushcfunction(L, r->func);
    lua_setfield(L, -2, r->name);
  }
}
