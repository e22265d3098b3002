/* lua_sys.c -- small host facts for the Lua side.
 *
 *   core.now_ns() -> integer ns, CLOCK_MONOTONIC (a Lua number: exact < 2^53)
 *   core.wall_s() -> seconds since the epoch (CLOCK_REALTIME), fractional
 *   core.isatty(fd) -> boolean
 *   core.term_columns(fd) -> integer | nil   the terminal's width (ioctl
 *       TIOCGWINSZ on fd); nil when fd is not a terminal or says 0
 *   core.getpid() -> integer
 *   core.getcwd() -> the current directory's path | nil, err
 *   core.sha256_file(path) -> lowercase hex | nil, err, code
 *   core.sha256(string) -> lowercase hex
 *   core.uname() -> { sysname=, release=, version=, machine=, nodename= }
 *   core.build_info() -> { compiler=, c_flags=, build_type=, luajit=,
 *                          libuv=, openssl=, sanitizers= }
 *   core.pid_alive(pid) -> boolean (a process with that id exists)
 *   core.timer_floor(wakes, gap_us) -> { wakes, gap_us, p50_us, p99_us, max_us,
 *       cpu_us } | nil, err, code   the timer floor (base/timer_floor.h)
 *   core.nofile_limit([want]) -> soft, hard  (raises the soft limit towards
 *                                             `want` when given)
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <luajit.h>
#include <openssl/evp.h>
#include <openssl/opensslv.h>
#include <openssl/crypto.h>
#include <uv.h>

#include "base/timer_floor.h"
#include "lua/lua_core.h"

#ifndef AB_C_FLAGS
#define AB_C_FLAGS ""
#endif
#ifndef AB_BUILD_TYPE
#define AB_BUILD_TYPE ""
#endif

static int l_now_ns(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec);
  return 1;
}

static int l_wall_s(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  lua_pushnumber(L, (double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
  return 1;
}

static int l_isatty(lua_State *L) {
  lua_pushboolean(L, isatty((int)luaL_checkinteger(L, 1)));
  return 1;
}

static int l_term_columns(lua_State *L) {
  struct winsize ws;
  memset(&ws, 0, sizeof(ws));
  if (ioctl((int)luaL_checkinteger(L, 1), TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushinteger(L, ws.ws_col);
  return 1;
}

static int l_getcwd(lua_State *L) {
  char buf[4096];
  if (getcwd(buf, sizeof(buf)) == NULL) {
    lua_pushnil(L);
    lua_pushstring(L, strerror(errno));
    return 2;
  }
  lua_pushstring(L, buf);
  return 1;
}

static int l_getpid(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)getpid());
  return 1;
}

static void push_hex(lua_State *L, const unsigned char *md, unsigned len) {
  char hex[2 * EVP_MAX_MD_SIZE + 1];
  for (unsigned i = 0; i < len; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
  lua_pushlstring(L, hex, 2 * len);
}

static int l_sha256(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_Digest(s, n, md, &len, EVP_sha256(), NULL);
  push_hex(L, md, len);
  return 1;
}

static int l_sha256_file(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    int e = errno;
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, strerror(e));
    lua_pushstring(L, uv_err_name(-e));
    return 3;
  }
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
  unsigned char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) EVP_DigestUpdate(ctx, buf, n);
  fclose(f);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  push_hex(L, md, len);
  return 1;
}

static int l_uname(lua_State *L) {
  struct utsname u;
  lua_newtable(L);
  if (uname(&u) != 0) return 1;
  lua_pushstring(L, u.sysname);
  lua_setfield(L, -2, "sysname");
  lua_pushstring(L, u.release);
  lua_setfield(L, -2, "release");
  lua_pushstring(L, u.version);
  lua_setfield(L, -2, "version");
  lua_pushstring(L, u.machine);
  lua_setfield(L, -2, "machine");
  lua_pushstring(L, u.nodename);
  lua_setfield(L, -2, "nodename");
  return 1;
}

static int l_build_info(lua_State *L) {
  lua_newtable(L);
#ifdef __VERSION__
  lua_pushstring(L, "gcc " __VERSION__);
#else
  lua_pushstring(L, "unknown");
#endif
  lua_setfield(L, -2, "compiler");
  lua_pushstring(L, AB_C_FLAGS);
  lua_setfield(L, -2, "c_flags");
  lua_pushstring(L, AB_BUILD_TYPE);
  lua_setfield(L, -2, "build_type");
  lua_pushstring(L, LUAJIT_VERSION);
  lua_setfield(L, -2, "luajit");
  lua_pushstring(L, uv_version_string());
  lua_setfield(L, -2, "libuv");
  lua_pushstring(L, OpenSSL_version(OPENSSL_VERSION));
  lua_setfield(L, -2, "openssl");
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  lua_pushboolean(L, 1);
#else
  lua_pushboolean(L, 0);
#endif
  lua_setfield(L, -2, "sanitizers");
  return 1;
}

/* core.pin_cpu(n) -> true | nil, err: pins the calling thread (and the
 * threads it starts afterwards, which inherit it) to logical CPU n. */
static int l_pin_cpu(lua_State *L) {
  int n = (int)luaL_checkinteger(L, 1);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(n, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) return ab_lua_fail(L, -errno);
  lua_pushboolean(L, 1);
  return 1;
}

/* core.pid_alive(pid) -> boolean: a process with that id exists (kill 0;
 * EPERM still means it exists). */
static int l_pid_alive(lua_State *L) {
  lua_Number n = luaL_checknumber(L, 1);
  int alive = 0;
  if (n >= 1 && n <= 4194304 && n == (lua_Number)(pid_t)n)
    alive = kill((pid_t)n, 0) == 0 || errno == EPERM;
  lua_pushboolean(L, alive);
  return 1;
}

static int l_nofile_limit(lua_State *L) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return ab_lua_fail(L, -errno);
  if (!lua_isnoneornil(L, 1)) {
    rlim_t want = (rlim_t)luaL_checknumber(L, 1);
    if (want > rl.rlim_cur) {
      /* a privileged process may raise the hard limit too (up to
       * fs.nr_open); otherwise the soft limit goes as far as the hard one */
      struct rlimit up = {want, want > rl.rlim_max ? want : rl.rlim_max};
      if (setrlimit(RLIMIT_NOFILE, &up) != 0) {
        rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
      }
      getrlimit(RLIMIT_NOFILE, &rl);
    }
  }
  lua_pushnumber(L, (double)rl.rlim_cur);
  lua_pushnumber(L, (double)rl.rlim_max);
  return 2;
}

/* core.timer_floor(wakes, gap_us) -> { wakes, gap_us, p50_us, p99_us,
 * max_us, cpu_us } | nil, err, code: the machine's timer floor
 * (base/timer_floor.h), on the calling thread. */
static int l_timer_floor(lua_State *L) {
  double wakes = luaL_checknumber(L, 1), gap_us = luaL_checknumber(L, 2);
  ab_timer_floor_t f;
  int r = ab_timer_floor_measure(wakes >= 1 && wakes <= 100000 ? (uint32_t)wakes : 0,
                                 gap_us >= 1 && gap_us <= 1e6 ? (uint64_t)(gap_us * 1000.0) : 0, &f);
  if (r < 0) return ab_lua_fail(L, r);
  lua_createtable(L, 0, 6);
  lua_pushnumber(L, f.wakes);
  lua_setfield(L, -2, "wakes");
  lua_pushnumber(L, f.gap_us);
  lua_setfield(L, -2, "gap_us");
  lua_pushnumber(L, f.p50_us);
  lua_setfield(L, -2, "p50_us");
  lua_pushnumber(L, f.p99_us);
  lua_setfield(L, -2, "p99_us");
  lua_pushnumber(L, f.max_us);
  lua_setfield(L, -2, "max_us");
  lua_pushnumber(L, f.cpu_us);
  lua_setfield(L, -2, "cpu_us");
  return 1;
}

void ab_lua_register_sys(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"getcwd", l_getcwd},
      {"now_ns", l_now_ns},           {"wall_s", l_wall_s},
      {"isatty", l_isatty},           {"getpid", l_getpid},
      {"term_columns", l_term_columns},
      {"sha256", l_sha256},           {"sha256_file", l_sha256_file},
      {"uname", l_uname},             {"build_info", l_build_info},
      {"nofile_limit", l_nofile_limit}, {"pin_cpu", l_pin_cpu},
      {"pid_alive", l_pid_alive},     {"timer_floor", l_timer_floor},
      {NULL, NULL}};
  for (const luaL_Reg *r = fns; r->name; r++) {
    lua_pushcfunction(L, r->func);
    lua_setfield(L, -2, r->name);
  }
}
