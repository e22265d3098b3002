/* lua_exec_conn.c -- execution = "lua": the conn object of the full form
 * (docs/lua-api.md).  The conn methods are Lua (lua/arkbench/exec/conn.lua)
 * over the C primitives here: a primitive that cannot finish returns
 * `false` and the method calls wait(), which records a cleanup on the task
 * and yields; the libuv callback that brings what it waits for (bytes, an
 * error, the next phase, its sleep timer) resumes it, and the method tries
 * again.
 *
 * Reading stays started for the life of a connection; bytes collect in the
 * connection's buffer (the engine's rbuf/rcap/rlen, so its close callback
 * frees them; `roff` here marks what Lua consumed).  Writes go through the
 * connection object (io/conn.h): send(2) straight from the Lua string when
 * nothing is queued and there is no TLS, copying only what the kernel did
 * not take; with TLS the string is encrypted first.  Nothing here knows
 * which protocol it is.
 */
#include "lua/lua_exec_int.h"

#include <math.h>
#include <string.h>

#include <lauxlib.h>

#include "base/ab_error.h"
#include "base/clock.h"
#include "lua/lua_core.h"

/* ---- connection state ----------------------------------------------- */

static int conn_dead(const ab__lx_conn_t *k) {
  if (k->err) return 1;
  return k->is_client ? !k->c->h.alive : k->s->closing;
}

/* Before a read: what Lua consumed is dropped, so the buffer does not
 * grow with the connection's lifetime. */
void ab__lx_compact(ab__lx_conn_t *k) {
  if (k->roff == 0) return;
  size_t left = *k->rlen - k->roff;
  if (left) memmove(*k->rbuf, *k->rbuf + k->roff, left);
  *k->rlen = left;
  k->roff = 0;
}

int ab__lx_send(ab__lx_conn_t *k, const uint8_t *p, size_t n) {
  int r = n ? ab_conn_send(k->conn, p, n) : 0;
  if (r < 0) ab__lx_conn_failed(k, r, "write");
  return r;
}

int ab__lx_want_met(const ab__lx_conn_t *k) {
  if (k->want == AB__LX_W_NONE || k->want == AB__LX_W_PHASE) return 0;
  if (k->err) return 1;
  size_t n = ab__lx_avail(k);
  if (k->want == AB__LX_W_ANY) return n > 0;
  if (k->want == AB__LX_W_LINE) return n > 0 && memchr(ab__lx_rdata(k), '\n', n) != NULL;
  return n >= (size_t)k->want;
}

void ab__lx_wake(ab__lx_conn_t *k) {
  if (k->task && k->waiting) {
    k->waiting = 0;
    ab_task_wake(k->task, 0);
  }
}

/* An IO failure of a connection: sticky; a client's also fails it for the
 * run (counted, its in-flight round trips released) -- without cancelling
 * its task, so the script sees the error. */
void ab__lx_conn_failed(ab__lx_conn_t *k, int code, const char *what) {
  /* the script sees the class the run counts (ab_error.h) */
  code = ab_err_stream_end(code, k->is_client ? AB_SIDE_CLIENT : AB_SIDE_SERVER);
  if (k->err == 0) k->err = code;
  if (k->is_client) {
    k->c->task = NULL;
    ab__client_fail(k->c, code, what);
  }
  if (k->waiting && k->want != AB__LX_W_NONE) ab__lx_wake(k);
}

/* ---- C primitives under the conn methods (full form) ---------------- */

static ab__lx_conn_t *arg_conn(lua_State *L) {
  ab__lx_conn_t *k = lua_touserdata(L, 1);
  if (k == NULL || lua_type(L, 1) != LUA_TLIGHTUSERDATA || k->magic != AB__LX_MAGIC)
    luaL_argerror(L, 1, "not an arkbench connection");
  return k;
}

/* own(k): may the running coroutine wait on k? */
static int f_own(lua_State *L) {
  ab__lx_conn_t *k = arg_conn(L);
  lua_pushboolean(L, k->task != NULL && k->task == ab_task_current() && k->co == L);
  return 1;
}

/* Nothing to return yet: false (the Lua method waits), or the connection's
 * error once (then false, and waiting parks the task until it ends). */
static int not_yet(lua_State *L, ab__lx_conn_t *k) {
  if (conn_dead(k)) {
    if (!k->reported) {
      k->reported = 1;
      return ab_lua_fail(L, k->err ? k->err : AB_ECLOSED);
    }
    k->want = AB__LX_W_NONE;
  }
  lua_pushboolean(L, 0);
  return 1;
}

/* send(k, s) -> true | nil, err, code */
static int f_send(lua_State *L) {
  ab__lx_conn_t *k = arg_conn(L);
  size_t n;
  const char *p = luaL_checklstring(L, 2, &n);
  if (conn_dead(k)) return ab_lua_fail(L, k->err ? k->err : AB_ECLOSED);
  int r = ab__lx_send(k, (const uint8_t *)p, n);
  if (r < 0 || conn_dead(k)) return ab_lua_fail(L, k->err ? k->err : r < 0 ? r : AB_ECLOSED);
  if (!k->is_client) k->lx->l->server_messages++;
  lua_pushboolean(L, 1);
  return 1;
}

/* recv(k, n): n > 0 bytes, or (n == 0) a line without its CR LF ->
 * string | false | nil, err, code */
static int f_recv(lua_State *L) {
  ab__lx_conn_t *k = arg_conn(L);
  lua_Integer n = lua_tointeger(L, 2);
  size_t have = ab__lx_avail(k);
  if (n > 0) {
    if (have >= (size_t)n) {
      lua_pushlstring(L, (const char *)ab__lx_rdata(k), (size_t)n);
      ab__lx_consume(k, (size_t)n);
      return 1;
    }
    k->want = (long)n;
  } else {
    const char *p = have ? (const char *)ab__lx_rdata(k) : NULL;
    const char *nl = have ? memchr(p, '\n', have) : NULL;
    if (nl) {
      size_t len = (size_t)(nl - p);
      size_t used = len + 1;
      if (len > 0 && p[len - 1] == '\r') len--;
      lua_pushlstring(L, p, len);
      ab__lx_consume(k, used);
      return 1;
    }
    k->want = AB__LX_W_LINE;
  }
  return not_yet(L, k);
}

/* peek(k) -> the buffered bytes (maybe ""), dead */
static int f_peek(lua_State *L) {
  ab__lx_conn_t *k = arg_conn(L);
  size_t have = ab__lx_avail(k);
  lua_pushlstring(L, have ? (const char *)ab__lx_rdata(k) : "", have);
  lua_pushboolean(L, conn_dead(k));
  k->want = AB__LX_W_ANY;
  return 2;
}

static int f_consume(lua_State *L) {
  ab__lx_conn_t *k = arg_conn(L);
  lua_Integer n = luaL_checkinteger(L, 2);
  if (n < 0 || (size_t)n > ab__lx_avail(k)) return luaL_argerror(L, 2, "more than is buffered");
  ab__lx_consume(k, (size_t)n);
  return 0;
}

/* fail(k) -> nil, err, code (the first time) | false */
static int f_fail(lua_State *L) {
  ab__lx_conn_t *k = arg_conn(L);
  return not_yet(L, k);
}

static void clear_waiting(void *arg) { ((ab__lx_conn_t *)arg)->waiting = 0; }

static int yield_wait(lua_State *L, ab__lx_conn_t *k, void (*cleanup)(void *)) {
  if (k->task == NULL || k->task != ab_task_current() || k->co != L)
    return luaL_error(L, "a connection can only wait inside its own client/server function");
  k->waiting = 1;
  ab_task_set_cleanup(k->task, cleanup, k);
  return lua_yield(L, 0);
}

/* wait(k): suspends until what the last primitive asked for (k->want). */
static int f_wait(lua_State *L) {
  ab__lx_conn_t *k = arg_conn(L);
  return yield_wait(L, k, clear_waiting);
}

static void sleep_cb(uv_timer_t *tm) {
  ab__lx_conn_t *k = tm->data;
  uint64_t now = ab_now_ns();
  if (now < k->sleep_until) {
    /* the loop's millisecond clock runs behind: never wake early */
    uv_timer_start(tm, sleep_cb, (k->sleep_until - now + 999999) / 1000000, 0);
    return;
  }
  ab__lx_wake(k);
}

static void sleep_cleanup(void *arg) {
  ab__lx_conn_t *k = arg;
  k->waiting = 0;
  uv_timer_stop(&k->timer);
}

/* sleep(k, seconds) */
static int f_sleep(lua_State *L) {
  ab__lx_conn_t *k = arg_conn(L);
  double s = luaL_checknumber(L, 2);
  if (!(s >= 0) || s > 1e9) return luaL_argerror(L, 2, "seconds from 0 to 1e9 expected");
  uv_loop_t *loop = &k->lx->l->loop;
  if (!k->timer_open) {
    int r = uv_timer_init(loop, &k->timer);
    if (r < 0) return ab_lua_fail(L, r);
    k->timer.data = k;
    k->timer_open = 1;
  }
  uint64_t now = ab_now_ns();
  k->sleep_until = now + (uint64_t)ceil(s * 1e9);
  uv_update_time(loop);
  uv_timer_start(&k->timer, sleep_cb, (k->sleep_until - now + 999999) / 1000000, 0);
  k->want = AB__LX_W_NONE;
  return yield_wait(L, k, sleep_cleanup);
}

/* call_begin(k, request, tag) -> true (sent and timed) | false (not
 * sending now: wait for the next phase) | nil, err, code; tag: the case's
 * tag id (lua_exec_tags.c), 0 for none */
static int f_call_begin(lua_State *L) {
  ab__lx_conn_t *k = arg_conn(L);
  size_t n;
  const char *p = luaL_checklstring(L, 2, &n);
  if (!k->is_client) return luaL_error(L, "conn:call is for client connections");
  if (conn_dead(k)) return not_yet(L, k);
  ab__dclient_t *c = k->c;
  ab__win_grant_t g;
  uint64_t t = ab_now_ns();
  /* not sending now (no phase, its deadline passed, or the window is
   * full): wait for the next phase */
  if (ab__win_grant(&c->h, t, &g) > 0) g.tag = (uint8_t)lua_tointeger(L, 3);
  if (g.n == 0 || ab__win_stamp(&c->h, &g, 1, t) == 0) {
    k->want = AB__LX_W_PHASE;
    lua_pushboolean(L, 0);
    return 1;
  }
  k->call_seq = g.seq - 1;
  k->call_t0 = t;
  k->call_active = 1;
  int r = ab__lx_send(k, (const uint8_t *)p, n);
  if (r < 0 || conn_dead(k)) {
    k->call_active = 0;
    k->reported = 1;
    return ab_lua_fail(L, k->err ? k->err : r < 0 ? r : AB_ECLOSED);
  }
  k->call_consumed = k->consumed;
  lua_pushboolean(L, 1);
  return 1;
}

/* call_end(k): the reply of the call in flight was read. */
static int f_call_end(lua_State *L) {
  ab__lx_conn_t *k = arg_conn(L);
  if (!k->is_client || !k->call_active) return 0;
  k->call_active = 0;
  ab__dclient_t *c = k->c;
  ab__lx_loop_t *lx = k->lx;
  uint64_t now = k->now;
  if (now < k->call_t0) now = ab_now_ns(); /* the reply was there before the call */
  int r = ab__win_complete(&c->h, 0, c->h.id, k->call_seq, now);
  if (r == AB_ESEQ) return 0; /* released meanwhile (the drain ended, the connection failed) */
  if (r == AB_ETIMEDOUT) {
    ab__lx_conn_failed(k, r, "no reply within the timeout");
    return 0;
  }
  if (r == AB__WIN_MEASURED) lx->reply_bytes += (size_t)(k->consumed - k->call_consumed);
  ab__loop_check_progress(lx->l);
  return 0;
}

static int f_phase(lua_State *L) {
  ab__lx_loop_t *lx = lua_touserdata(L, lua_upvalueindex(1));
  uint64_t dl;
  uint8_t ph = ab__win_phase(lx->l, ab_now_ns(), &dl);
  if (ph == AB_PHASE_WARMUP) lua_pushliteral(L, "warmup");
  else if (ph == AB_PHASE_MEASURE) lua_pushliteral(L, "measure");
  else lua_pushliteral(L, "idle");
  return 1;
}

/* The conn methods, in Lua over the primitives above; returns the conn
 * metatable.  Waiting is always: try; if false, wait(k); try again. */

/* The conn methods: require("arkbench.exec.conn").metatable(primitives)
 * (called from boot(), protected); leaves the conn metatable on L's
 * stack. */
void ab__lx_conn_open(lua_State *L, ab__lx_loop_t *lx) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "arkbench.exec.conn");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "metatable");
  lua_remove(L, -2);
  static const luaL_Reg prims[] = {
      {"own", f_own},   {"send", f_send},   {"recv", f_recv},       {"peek", f_peek},
      {"consume", f_consume}, {"fail", f_fail}, {"wait", f_wait},   {"call_begin", f_call_begin},
      {"call_end", f_call_end}, {"sleep", f_sleep}, {NULL, NULL}};
  lua_newtable(L);
  for (const luaL_Reg *r = prims; r->name; r++) {
    lua_pushcfunction(L, r->func);
    lua_setfield(L, -2, r->name);
  }
  lua_pushlightuserdata(L, lx);
  lua_pushcclosure(L, f_phase, 1);
  lua_setfield(L, -2, "phase");
  ab__lx_tags_prims(L, lx);
  if (lx->dgram) ab__lx_udp_prims(L);
  lua_call(L, 1, 1);
}
