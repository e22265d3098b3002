/* lua_child.c -- several child processes at once from Lua (io/child.h).
 *
 *   core.child_start(argv, { env = {"K=V", ...}, stdin = true })
 *       -> child | nil, "ENAME: text", "ENAME"
 *   core.child_poll({child, ...}, timeout_s) -> events (0: timeout or a
 *       signal) | nil, err, code: reads what their pipes hold, reaps those
 *       that ended
 *   child:lines(stream) -> { line, ... }: the complete lines of "stdout",
 *       "stderr" or "channel" (fd 3) that arrived since the last call
 *       (without the newline); a last unterminated line is given once the
 *       stream is at EOF
 *   child:text(stream) -> everything the stream had so far
 *   child:write(s) -> true | nil, err, code      (to its stdin)
 *   child:close_stdin()
 *   child:signal("TERM" | "INT" | "KILL")
 *   child:state() -> nil while it runs | { exit_code = n | nil,
 *       term_signal = "SIGKILL" | nil }
 *   child:pid() -> integer
 *   child:close()      SIGKILL if it still runs, reaped, pipes closed (also
 *                      when collected)
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "base/ab_error.h"
#include "io/child.h"
#include "lua/lua_core.h"

#define MT "arkbench.child"

typedef struct {
  ab_child_t c;
  size_t cursor[3]; /* lines handed out up to here */
} lchild_t;

static lchild_t *check(lua_State *L, int i) { return luaL_checkudata(L, i, MT); }

static int stream_of(lua_State *L, int i) {
  static const char *const names[] = {"stdout", "stderr", "channel", NULL};
  return luaL_checkoption(L, i, NULL, names);
}

static int l_start(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const char **env = NULL;
  int with_stdin = 0;
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_getfield(L, 2, "stdin");
    with_stdin = lua_toboolean(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, 2, "env"); /* stays on the stack: owns the strings */
    if (lua_istable(L, -1)) env = ab_lua_string_list(L, lua_gettop(L), 2, "opts.env", 0);
  }
  const char **argv = ab_lua_string_list(L, 1, 1, "argv", 1);
  lchild_t *k = lua_newuserdata(L, sizeof(*k));
  memset(k, 0, sizeof(*k));
  k->c.in_fd = -1;
  k->c.out_fd[0] = k->c.out_fd[1] = k->c.out_fd[2] = -1;
  luaL_getmetatable(L, MT);
  lua_setmetatable(L, -2);
  int r = ab_child_start(&k->c, argv, env, with_stdin);
  if (r < 0) return ab_lua_fail(L, r);
  return 1;
}

static int l_poll(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  double t = luaL_optnumber(L, 2, 0);
  int n = (int)lua_objlen(L, 1);
  ab_child_t **kids = lua_newuserdata(L, (size_t)(n ? n : 1) * sizeof(*kids));
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, i);
    kids[i - 1] = &check(L, -1)->c;
    lua_pop(L, 1);
  }
  int r = ab_child_poll(kids, n, t < 0 ? -1 : (int)(t * 1000.0 + 0.5));
  if (r < 0) return ab_lua_fail(L, r);
  lua_pushinteger(L, r);
  return 1;
}

static int l_lines(lua_State *L) {
  lchild_t *k = check(L, 1);
  int s = stream_of(L, 2);
  const ab_proc_buf_t *b = &k->c.buf[s];
  lua_newtable(L);
  int n = 0;
  size_t at = k->cursor[s];
  while (at < b->len) {
    const char *nl = memchr(b->data + at, '\n', b->len - at);
    size_t end = nl ? (size_t)(nl - b->data) : b->len;
    if (!nl && k->c.out_fd[s] >= 0) break; /* the rest of it is to come */
    lua_pushlstring(L, b->data + at, end - at);
    lua_rawseti(L, -2, ++n);
    at = nl ? end + 1 : end;
  }
  k->cursor[s] = at;
  return 1;
}

static int l_text(lua_State *L) {
  lchild_t *k = check(L, 1);
  const ab_proc_buf_t *b = &k->c.buf[stream_of(L, 2)];
  lua_pushlstring(L, b->data ? b->data : "", b->len);
  return 1;
}

static int l_write(lua_State *L) {
  lchild_t *k = check(L, 1);
  size_t len;
  const char *s = luaL_checklstring(L, 2, &len);
  int r = ab_child_write(&k->c, s, len);
  if (r < 0) return ab_lua_fail(L, r);
  lua_pushboolean(L, 1);
  return 1;
}

static int l_close_stdin(lua_State *L) {
  ab_child_close_stdin(&check(L, 1)->c);
  return 0;
}

static int l_signal(lua_State *L) {
  lchild_t *k = check(L, 1);
  static const char *const names[] = {"TERM", "INT", "KILL", NULL};
  static const int sigs[] = {SIGTERM, SIGINT, SIGKILL};
  ab_child_signal(&k->c, sigs[luaL_checkoption(L, 2, "TERM", names)]);
  return 0;
}

static int l_state(lua_State *L) {
  lchild_t *k = check(L, 1);
  if (!k->c.exited) {
    lua_pushnil(L);
    return 1;
  }
  lua_createtable(L, 0, 2);
  if (k->c.term_signal == 0) {
    lua_pushinteger(L, k->c.exit_code);
    lua_setfield(L, -2, "exit_code");
  } else {
    char buf[16];
    lua_pushstring(L, ab_proc_signame(k->c.term_signal, buf, sizeof(buf)));
    lua_setfield(L, -2, "term_signal");
  }
  return 1;
}

static int l_pid(lua_State *L) {
  lua_pushinteger(L, check(L, 1)->c.pid);
  return 1;
}

static int l_close(lua_State *L) {
  ab_child_close(&check(L, 1)->c);
  return 0;
}

void ab_lua_register_child(lua_State *L) {
  static const luaL_Reg methods[] = {
      {"lines", l_lines},   {"text", l_text},   {"write", l_write}, {"close_stdin", l_close_stdin},
      {"signal", l_signal}, {"state", l_state}, {"pid", l_pid},     {"close", l_close},
      {NULL, NULL}};
  if (luaL_newmetatable(L, MT)) {
    lua_newtable(L);
    luaL_register(L, NULL, methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_close);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, l_start);
  lua_setfield(L, -2, "child_start");
  lua_pushcfunction(L, l_poll);
  lua_setfield(L, -2, "child_poll");
}
