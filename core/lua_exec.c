/* lua_exec.c -- execution = "lua": the scenario's Lua code drives each
 * connection (DESIGN §6; user reference: docs/lua-api.md).
 *
 * Two forms, chosen by the scenario part's hooks:
 *
 *   full   client = function(conn) ... end runs as a Lua coroutine per
 *          client connection, a task of kind AB_TASK_LUA on the loop's
 *          scheduler (scheduler.h); optional server = function(conn) the
 *          same way per accepted connection.  The conn methods are a small
 *          Lua prelude (PRELUDE below) over C primitives: a primitive that
 *          cannot finish returns `false` and the prelude calls wait(), which
 *          records a cleanup on the task and yields; the libuv callback
 *          that brings what it waits for (bytes, an error, the next phase,
 *          its sleep timer) resumes it, and the prelude tries again.
 *   light  message = bytes | function(i), expect = length | "line" |
 *          function(buf): C connects, keeps `window` messages in flight,
 *          writes and parses like the callback echo (tcp_client.c), and
 *          calls Lua only to build a message (when message is a function)
 *          and to find where a reply ends (when expect is a function).
 *
 * Timing and accounting are the built-in echo's (coro_echo.c): a round
 * trip takes a slot (slot_seq/slot_ns/slot_phase), is stamped just before
 * its bytes reach uv_try_write, completes at the clock reading taken in the
 * read callback that delivered its last byte, and counts in the phase it
 * was sent in; nothing is sent after the phase deadline (a conn:call made
 * then waits for the next phase, or for cancellation at STOP).
 *
 * Reading stays started for the life of a connection; bytes collect in the
 * connection's buffer (the engine's rbuf/rcap/rlen, so its close callback
 * frees them; `roff` here marks what Lua consumed).  Writes go through the
 * connection's outbuf: uv_try_write straight from the Lua string, copying
 * only what the kernel did not take.
 *
 * Errors.  Every C->Lua call is protected: lua_resume for tasks (the
 * traceback is taken from the dead coroutine), lua_pcall with a traceback
 * handler for the light form.  A Lua error is a script error: its message
 * (file:line, text, traceback) is kept, the loop's first error is set, and
 * every loop is told (uv_async) to stop driving connections: in-flight
 * round trips count as unfinished, tasks are cancelled, clients closed.
 * The engine then ends the run at its phase deadline with the counts so
 * far.  IO failures return nil, "ENAME: text", "ENAME" to Lua (luv style);
 * a client connection's failure is also the run's error, as in the
 * built-in echo.  Cancellation (STOP, a reply timeout) ends a Lua task
 * without resuming its coroutine: the coroutine is dropped, its sleep
 * timer closed, nothing of it is pending in libuv.
 *
 * Threads: a loop's lx_loop_t, lua_State and connections are touched only
 * by that loop's thread while the loop runs (and by the coordinator thread
 * in loop_open / loop_close).  The shared ab_lua_exec_t holds the first
 * script error (mutex) and the list of loops to wake on one (uv_async_send
 * is thread-safe; the list is complete before any loop thread starts).
 */
#include "lua_exec.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "ab_error.h"
#include "clock.h"
#include "engine_int.h"
#include "framing.h"
#include "lua_core.h"
#include "scheduler.h"

extern int luaopen_cjson(lua_State *L);

#define LX_MAGIC 0x4c58636eu /* "LXcn" */
#define READ_CHUNK 65536
#define ERRMSG_MAX 8192

#define CONTAINER_OF(p, type, member) ((type *)((char *)(p) - offsetof(type, member)))

/* main-state stack slots (light form) */
enum { IDX_TRACEBACK = 1, IDX_MESSAGE = 2, IDX_EXPECT = 3 };

enum { MODE_FULL = 1, MODE_LIGHT = 2 };
enum { EXP_LEN = 1, EXP_LINE = 2, EXP_FN = 3 };

/* What a waiting task waits for (lx_conn_t.want). */
enum {
  W_NONE = 0,   /* nothing wakes it but cancellation (a sleep, a dead conn) */
  W_ANY = -1,   /* any new bytes or an error */
  W_LINE = -2,  /* a '\n' in the buffer or an error */
  W_PHASE = -3  /* the next phase (client_wake) */
};                /* > 0: that many bytes buffered, or an error */

typedef struct lx_loop_s lx_loop_t;

typedef struct lx_conn_s {
  uint32_t magic;
  lx_loop_t *lx;
  int is_client;
  uint32_t id;
  ab__client_t *c;              /* client side */
  ab__sconn_t *s;               /* server side */
  uv_stream_t *stream;
  uint8_t **rbuf;               /* the engine's buffer fields of c or s */
  size_t *rcap, *rlen;
  size_t roff;                  /* rbuf[roff..rlen) not consumed yet */
  uint64_t consumed;            /* bytes consumed so far */
  ab_outbuf_t *out;
  /* the task (full form) */
  ab_task_t *task;
  lua_State *co;
  int co_ref;
  int started;
  int waiting;                  /* suspended in wait() or sleep() */
  long want;                    /* W_* or a byte count */
  int err;                      /* sticky IO error (AB_ECLOSED at EOF) */
  int reported;                 /* err was returned to Lua once */
  uint64_t now;                 /* clock at the last read */
  /* conn:call */
  int call_active;
  uint64_t call_seq, call_t0, call_consumed;
  /* conn:sleep */
  uv_timer_t timer;
  int timer_open;
  uint64_t sleep_until;
  /* light form: messages built so far; bytes to show expect(buf) first */
  uint64_t msg_i;
  size_t hint;
  struct lx_conn_s *next;       /* server conns of the loop */
} lx_conn_t;

struct ab_lua_exec_s {
  ab_exec_hooks_t hooks;
  char *scenario_path;
  char **sets;
  int nsets;
  int quick;
  int index;
  char *case_id;
  char *lua_path, *lua_cpath, *root;
  pthread_mutex_t mu;
  int nscript_errors;           /* guarded by mu */
  char errmsg[ERRMSG_MAX];      /* guarded by mu */
  lx_loop_t **loops;            /* complete before the loop threads start */
  uint32_t nloops;
  uint64_t reply_bytes;         /* summed in loop_close */
};

struct lx_loop_s {
  ab_lua_exec_t *x;
  ab__loop_t *l;
  lua_State *L;
  int mode;
  int ref_client, ref_server, ref_mt, ref_message, ref_expect;
  /* light form */
  const char *msg;              /* message string (pinned by ref_message) */
  size_t msg_len;
  int msg_fn;
  int expect_kind;
  size_t expect_len;
  lx_conn_t *cconns;            /* one per client of the loop */
  lx_conn_t *sconns;            /* Lua-served connections (list) */
  uint32_t next_sid;
  uv_async_t abort_async;
  int stopping;                 /* a script error: drive nothing more */
  int stopped;
  uint64_t reply_bytes;
};

static lx_conn_t *conn_of(lx_loop_t *lx, ab__client_t *c) {
  return &lx->cconns[c - lx->l->clients];
}

static void close_noop(uv_handle_t *h) { (void)h; }

/* ---- script errors -------------------------------------------------- */

static void stop_loop(lx_loop_t *lx);

/* Records a script error (msg: file:line, text, traceback) and tells every
 * loop to stop driving its connections.  This loop stops at once from its
 * own async callback, outside whatever Lua call failed. */
static void script_error(lx_loop_t *lx, const char *msg) {
  ab_lua_exec_t *x = lx->x;
  ab__loop_t *l = lx->l;
  if (msg == NULL) msg = "(no message)";
  pthread_mutex_lock(&x->mu);
  x->nscript_errors++;
  if (x->errmsg[0] == '\0') snprintf(x->errmsg, sizeof(x->errmsg), "script error: %s", msg);
  pthread_mutex_unlock(&x->mu);
  if (l->first_error[0] == '\0') {
    size_t line = strcspn(msg, "\n");
    snprintf(l->first_error, sizeof(l->first_error), "script error: %.*s", (int)line, msg);
  }
  lx->stopping = 1;
  for (uint32_t i = 0; i < x->nloops; i++) uv_async_send(&x->loops[i]->abort_async);
}

/* The error of a coroutine that died (its message on top of co). */
static void coroutine_error(lx_loop_t *lx, lua_State *co) {
  lua_State *L = lx->L;
  const char *msg = lua_tostring(co, -1);
  if (msg == NULL) msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(co, -1));
  else lua_pushnil(L); /* keeps the pop count the same */
  luaL_traceback(L, co, msg, 0);
  script_error(lx, lua_tostring(L, -1));
  lua_pop(L, 2);
}

/* The message handler of the light form's calls. */
static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) msg = lua_tostring(L, -1);
    else msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

static int panic(lua_State *L) {
  fprintf(stderr, "arkbench: unprotected Lua error in execution = lua: %s\n",
          lua_tostring(L, -1) ? lua_tostring(L, -1) : "?");
  abort();
  return 0;
}

/* "file:line" where the function at idx was defined. */
static const char *fn_where(lua_State *L, int idx) {
  lua_Debug ar;
  lua_pushvalue(L, idx);
  if (!lua_getinfo(L, ">S", &ar)) return lua_pushstring(L, "?"), lua_tostring(L, -1);
  return lua_pushfstring(L, "%s:%d", ar.short_src, ar.linedefined);
}

/* ---- connection state ----------------------------------------------- */

static int conn_dead(const lx_conn_t *k) {
  if (k->err) return 1;
  return k->is_client ? !k->c->alive : k->s->closing;
}

static size_t avail(const lx_conn_t *k) { return *k->rlen - k->roff; }
static const uint8_t *rdata(const lx_conn_t *k) { return *k->rbuf + k->roff; }

static void consume(lx_conn_t *k, size_t n) {
  k->roff += n;
  k->consumed += n;
  if (k->roff >= *k->rlen) k->roff = *k->rlen = 0;
}

/* uv alloc for a connection's buffer: what Lua consumed is dropped first. */
static void buf_alloc(lx_conn_t *k, uv_buf_t *buf) {
  if (k->roff > 0) {
    size_t left = *k->rlen - k->roff;
    if (left) memmove(*k->rbuf, *k->rbuf + k->roff, left);
    *k->rlen = left;
    k->roff = 0;
  }
  if (ab__grow(k->rbuf, k->rcap, *k->rlen, READ_CHUNK) != 0) {
    *buf = uv_buf_init(NULL, 0); /* libuv reports UV_ENOBUFS */
    return;
  }
  *buf = uv_buf_init((char *)*k->rbuf + *k->rlen, (unsigned)(*k->rcap - *k->rlen));
}

static int want_met(const lx_conn_t *k) {
  if (k->want == W_NONE || k->want == W_PHASE) return 0;
  if (k->err) return 1;
  size_t n = avail(k);
  if (k->want == W_ANY) return n > 0;
  if (k->want == W_LINE) return n > 0 && memchr(rdata(k), '\n', n) != NULL;
  return n >= (size_t)k->want;
}

static void wake(lx_conn_t *k) {
  if (k->task && k->waiting) {
    k->waiting = 0;
    ab_task_wake(k->task, 0);
  }
}

/* An IO failure of a connection: sticky; a client's also fails it for the
 * run (counted, its in-flight round trips released) -- without cancelling
 * its task, so the script sees the error. */
static void conn_failed(lx_conn_t *k, int code, const char *what) {
  if (k->err == 0) k->err = code;
  if (k->is_client) {
    k->c->task = NULL;
    ab__client_fail(k->c, code, what);
  }
  if (k->waiting && k->want != W_NONE) wake(k);
}

static void report_connected(ab__client_t *c) {
  ab__loop_t *l = c->loop;
  if (c->ly.reported) return;
  c->ly.reported = 1;
  if (--l->connects_pending == 0) ab__loop_reached(l, AB__ST_CONNECTED);
  else ab__clients_connect_more(l);
}

/* ---- accounting (tcp_client.c's, shared by every client path) ------- */

/* The reply of the round trip in `slot` completed at `now` (never before
 * it was sent: bytes that were there earlier complete it "now"). */
static void complete_slot(lx_loop_t *lx, ab__client_t *c, uint32_t slot, uint64_t now, size_t bytes) {
  uint8_t ph = c->slot_phase[slot];
  if (now < c->slot_ns[slot]) now = c->slot_ns[slot];
  if (ab__client_complete(c, ph, c->id, c->slot_seq[slot], now) != 0) return;
  if (ph == AB_PHASE_MEASURE && now <= lx->l->deadline_ns) lx->reply_bytes += bytes;
  ab__client_advance_oldest(c);
}

/* A script error stopped the run: what is in flight will never complete. */
static void release_unfinished(lx_loop_t *lx, ab__client_t *c) {
  ab__loop_t *l = lx->l;
  uint32_t w = l->eng->cfg->window;
  for (uint32_t i = 0; i < w && c->inflight > 0; i++) {
    if (c->slot_ns[i] == 0) continue;
    if (c->slot_phase[i] == AB_PHASE_MEASURE) {
      l->unfinished++;
      l->meas_inflight--;
    } else {
      l->warm_inflight--;
    }
    c->slot_ns[i] = 0;
    c->inflight--;
  }
  c->oldest_seq = c->next_seq;
}

/* ---- the Lua task kind ------------------------------------------------ */

static int lx_resume(ab_task_t *t) {
  lx_conn_t *k = ab_task_ctx(t);
  lx_loop_t *lx = k->lx;
  /* cancelled (STOP, a timeout, a script error elsewhere): the coroutine
   * is dropped where it waits; nothing of it is pending in libuv */
  if (ab_task_cancelled(t) || lx->stopping) return 1;
  int nargs = 0;
  if (!k->started) {
    k->started = 1;
    nargs = 1; /* the conn, above the function */
  }
  k->waiting = 0;
  int st = lua_resume(k->co, nargs);
  if (st == LUA_YIELD) {
    if (k->waiting) return 0;
    /* a plain coroutine.yield(): nothing would ever resume it */
    const char *msg = lua_pushfstring(lx->L, "%s function of connection %d: coroutine.yield() "
                                      "out of the connection's function; use conn:sleep(0) to "
                                      "let others run", k->is_client ? "client" : "server",
                                      (int)k->id);
    luaL_traceback(lx->L, k->co, msg, 0);
    script_error(lx, lua_tostring(lx->L, -1));
    lua_pop(lx->L, 2);
    return 1;
  }
  if (st != 0) coroutine_error(lx, k->co);
  return 1;
}

static void lx_release(ab_task_t *t) {
  lx_conn_t *k = ab_task_ctx(t);
  lx_loop_t *lx = k->lx;
  if (k->co_ref != LUA_NOREF) luaL_unref(lx->L, LUA_REGISTRYINDEX, k->co_ref);
  k->co_ref = LUA_NOREF;
  k->co = NULL;
  k->task = NULL;
  k->waiting = 0;
  if (k->timer_open) {
    k->timer_open = 0;
    uv_close((uv_handle_t *)&k->timer, close_noop);
  }
}

static const ab_task_kind_t lua_kind = {AB_TASK_LUA, "lua", lx_resume, lx_release};

/* Makes the task running fn_ref(conn) for k; 0 or an error code. */
static int task_new(lx_loop_t *lx, lx_conn_t *k, int fn_ref) {
  lua_State *L = lx->L;
  lua_State *co = lua_newthread(L);
  k->co_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  k->co = co;
  lua_rawgeti(co, LUA_REGISTRYINDEX, fn_ref);
  lua_createtable(co, 0, 3);
  lua_pushlightuserdata(co, k);
  lua_setfield(co, -2, "_k");
  lua_pushnumber(co, k->id);
  lua_setfield(co, -2, "id");
  lua_pushboolean(co, k->is_client);
  lua_setfield(co, -2, "_client");
  lua_rawgeti(co, LUA_REGISTRYINDEX, lx->ref_mt);
  lua_setmetatable(co, -2);
  int r = ab_task_new(lx->l->sched, &k->task, &lua_kind, k);
  if (r < 0) {
    luaL_unref(L, LUA_REGISTRYINDEX, k->co_ref);
    k->co_ref = LUA_NOREF;
    k->co = NULL;
    k->task = NULL;
  }
  return r;
}

/* ---- C primitives under the conn methods (full form) ---------------- */

static lx_conn_t *arg_conn(lua_State *L) {
  lx_conn_t *k = lua_touserdata(L, 1);
  if (k == NULL || lua_type(L, 1) != LUA_TLIGHTUSERDATA || k->magic != LX_MAGIC)
    luaL_argerror(L, 1, "not an arkbench connection");
  return k;
}

/* own(k): may the running coroutine wait on k? */
static int f_own(lua_State *L) {
  lx_conn_t *k = arg_conn(L);
  lua_pushboolean(L, k->task != NULL && k->task == ab_task_current() && k->co == L);
  return 1;
}

/* Nothing to return yet: false (the prelude waits), or the connection's
 * error once (then false, and waiting parks the task until it ends). */
static int not_yet(lua_State *L, lx_conn_t *k) {
  if (conn_dead(k)) {
    if (!k->reported) {
      k->reported = 1;
      return ab_lua_fail(L, k->err ? k->err : AB_ECLOSED);
    }
    k->want = W_NONE;
  }
  lua_pushboolean(L, 0);
  return 1;
}

/* send(k, s) -> true | nil, err, code */
static int f_send(lua_State *L) {
  lx_conn_t *k = arg_conn(L);
  size_t n;
  const char *p = luaL_checklstring(L, 2, &n);
  if (conn_dead(k)) return ab_lua_fail(L, k->err ? k->err : AB_ECLOSED);
  int r = 0;
  if (n > 0) {
    if (ab_outbuf_idle(k->out)) {
      r = ab_outbuf_write_direct(k->out, (const uint8_t *)p, n);
    } else if ((r = ab_outbuf_append(k->out, p, n)) == 0) {
      r = ab_outbuf_flush(k->out);
    }
  }
  if (r < 0 || conn_dead(k)) return ab_lua_fail(L, k->err ? k->err : r < 0 ? r : AB_ECLOSED);
  if (!k->is_client) k->lx->l->srv_messages++;
  lua_pushboolean(L, 1);
  return 1;
}

/* recv(k, n): n > 0 bytes, or (n == 0) a line without its CR LF ->
 * string | false | nil, err, code */
static int f_recv(lua_State *L) {
  lx_conn_t *k = arg_conn(L);
  lua_Integer n = lua_tointeger(L, 2);
  size_t have = avail(k);
  if (n > 0) {
    if (have >= (size_t)n) {
      lua_pushlstring(L, (const char *)rdata(k), (size_t)n);
      consume(k, (size_t)n);
      return 1;
    }
    k->want = (long)n;
  } else {
    const char *p = have ? (const char *)rdata(k) : NULL;
    const char *nl = have ? memchr(p, '\n', have) : NULL;
    if (nl) {
      size_t len = (size_t)(nl - p);
      size_t used = len + 1;
      if (len > 0 && p[len - 1] == '\r') len--;
      lua_pushlstring(L, p, len);
      consume(k, used);
      return 1;
    }
    k->want = W_LINE;
  }
  return not_yet(L, k);
}

/* peek(k) -> the buffered bytes (maybe ""), dead */
static int f_peek(lua_State *L) {
  lx_conn_t *k = arg_conn(L);
  size_t have = avail(k);
  lua_pushlstring(L, have ? (const char *)rdata(k) : "", have);
  lua_pushboolean(L, conn_dead(k));
  k->want = W_ANY;
  return 2;
}

static int f_consume(lua_State *L) {
  lx_conn_t *k = arg_conn(L);
  lua_Integer n = luaL_checkinteger(L, 2);
  if (n < 0 || (size_t)n > avail(k)) return luaL_argerror(L, 2, "more than is buffered");
  consume(k, (size_t)n);
  return 0;
}

/* fail(k) -> nil, err, code (the first time) | false */
static int f_fail(lua_State *L) {
  lx_conn_t *k = arg_conn(L);
  return not_yet(L, k);
}

static void clear_waiting(void *arg) { ((lx_conn_t *)arg)->waiting = 0; }

static int yield_wait(lua_State *L, lx_conn_t *k, void (*cleanup)(void *)) {
  if (k->task == NULL || k->task != ab_task_current() || k->co != L)
    return luaL_error(L, "a connection can only wait inside its own client/server function");
  k->waiting = 1;
  ab_task_set_cleanup(k->task, cleanup, k);
  return lua_yield(L, 0);
}

/* wait(k): suspends until what the last primitive asked for (k->want). */
static int f_wait(lua_State *L) {
  lx_conn_t *k = arg_conn(L);
  return yield_wait(L, k, clear_waiting);
}

static void sleep_cb(uv_timer_t *tm) {
  lx_conn_t *k = tm->data;
  uint64_t now = ab_now_ns();
  if (now < k->sleep_until) {
    /* the loop's millisecond clock runs behind: never wake early */
    uv_timer_start(tm, sleep_cb, (k->sleep_until - now + 999999) / 1000000, 0);
    return;
  }
  wake(k);
}

static void sleep_cleanup(void *arg) {
  lx_conn_t *k = arg;
  k->waiting = 0;
  uv_timer_stop(&k->timer);
}

/* sleep(k, seconds) */
static int f_sleep(lua_State *L) {
  lx_conn_t *k = arg_conn(L);
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
  k->want = W_NONE;
  return yield_wait(L, k, sleep_cleanup);
}

/* call_begin(k, request) -> true (sent and timed) | false (not sending
 * now: wait for the next phase) | nil, err, code */
static int f_call_begin(lua_State *L) {
  lx_conn_t *k = arg_conn(L);
  size_t n;
  const char *p = luaL_checklstring(L, 2, &n);
  if (!k->is_client) return luaL_error(L, "conn:call is for client connections");
  if (conn_dead(k)) return not_yet(L, k);
  ab__client_t *c = k->c;
  lx_loop_t *lx = k->lx;
  uint64_t dl;
  uint8_t ph = ab__sending_phase(lx->l, &dl);
  if (ph == 0 || c->inflight >= lx->l->eng->cfg->window) {
    k->want = W_PHASE;
    lua_pushboolean(L, 0);
    return 1;
  }
  uint64_t t = ab_now_ns();
  if (t >= dl) { /* the deadline passed: nothing more is sent in this phase */
    k->want = W_PHASE;
    lua_pushboolean(L, 0);
    return 1;
  }
  k->call_seq = c->next_seq;
  k->call_t0 = t;
  k->call_active = 1;
  ab__client_stamp(c, c->next_seq, 1, t, ph);
  int r = 0;
  if (n > 0) {
    if (ab_outbuf_idle(k->out)) {
      r = ab_outbuf_write_direct(k->out, (const uint8_t *)p, n);
    } else if ((r = ab_outbuf_append(k->out, p, n)) == 0) {
      r = ab_outbuf_flush(k->out);
    }
  }
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
  lx_conn_t *k = arg_conn(L);
  if (!k->is_client || !k->call_active) return 0;
  k->call_active = 0;
  ab__client_t *c = k->c;
  lx_loop_t *lx = k->lx;
  uint32_t slot = (uint32_t)(k->call_seq % lx->l->eng->cfg->window);
  /* released meanwhile (the drain ended, the connection failed)? */
  if (c->slot_ns[slot] == 0 || c->slot_seq[slot] != k->call_seq) return 0;
  uint64_t now = k->now;
  if (now < k->call_t0) now = ab_now_ns(); /* the reply was there before the call */
  complete_slot(lx, c, slot, now, (size_t)(k->consumed - k->call_consumed));
  ab__loop_check_progress(lx->l);
  return 0;
}

static int f_phase(lua_State *L) {
  lx_loop_t *lx = lua_touserdata(L, lua_upvalueindex(1));
  const ab__loop_t *l = lx->l;
  uint64_t now = ab_now_ns();
  if (l->phase == AB__PH_WARMUP && now < l->warm_deadline_ns) lua_pushliteral(L, "warmup");
  else if (l->phase == AB__PH_MEASURE && now < l->deadline_ns) lua_pushliteral(L, "measure");
  else lua_pushliteral(L, "idle");
  return 1;
}

/* The conn methods, in Lua over the primitives above; returns the conn
 * metatable.  Waiting is always: try; if false, wait(k); try again. */
static const char PRELUDE[] =
    "local C = ...\n"
    "local type, error, tostring, rawget, unpack = type, error, tostring, rawget, unpack\n"
    "local floor = math.floor\n"
    "local find, sub, format = string.find, string.sub, string.format\n"
    "local getinfo = debug.getinfo\n"
    "local own, send, recv, peek, consume, fail, wait, call_begin, call_end, sleep, phase =\n"
    "  C.own, C.send, C.recv, C.peek, C.consume, C.fail, C.wait, C.call_begin, C.call_end,\n"
    "  C.sleep, C.phase\n"
    "local methods = setmetatable({}, { __index = function(_, key)\n"
    "  if key == 'phase' then return phase() end\n"
    "end })\n"
    "local mt = { __index = methods, __metatable = false }\n"
    "function mt.__tostring(self) return 'arkbench conn ' .. tostring(rawget(self, 'id')) end\n"
    "local function conn_of(self, name, blocking)\n"
    "  local k = type(self) == 'table' and rawget(self, '_k')\n"
    "  if not k then error(format('bad self to conn:%s (call it as conn:%s(...))', name, name), 3) end\n"
    "  if blocking and not own(k) then\n"
    "    error(format('conn:%s: a connection can only wait inside its own client/server function'\n"
    "      .. ' (not in another connection\\'s function, nor in a coroutine of your own)', name), 3)\n"
    "  end\n"
    "  return k\n"
    "end\n"
    "local function where(f)\n"
    "  local i = getinfo(f, 'S')\n"
    "  return i.short_src .. ':' .. i.linedefined\n"
    "end\n"
    "local function check_expect(how, name, argn)\n"
    "  local t = type(how)\n"
    "  if (t == 'number' and how >= 1 and how == floor(how) and how < 2^53) or t == 'string'\n"
    "     or t == 'function' then return end\n"
    "  error(format('bad argument #%d to \\'%s\\' (expected a length in bytes, \"line\", \"*l\", a'\n"
    "    .. ' pattern or a function(buf); got %s)', argn, name,\n"
    "    t == 'number' and tostring(how) or t), 3)\n"
    "end\n"
    "local function read(k, how)\n"
    "  local t = type(how)\n"
    "  if t == 'number' or how == '*l' or how == 'line' then\n"
    "    local n = t == 'number' and how or 0\n"
    "    while true do\n"
    "      local s, e, c = recv(k, n)\n"
    "      if s ~= false then return s, e, c end\n"
    "      wait(k)\n"
    "    end\n"
    "  end\n"
    "  while true do\n"
    "    local buf, dead = peek(k)\n"
    "    if buf ~= '' then\n"
    "      if t == 'function' then\n"
    "        local n = how(buf)\n"
    "        if n ~= nil and n ~= false then\n"
    "          if type(n) ~= 'number' or n < 1 or n > #buf or n ~= floor(n) then\n"
    "            error(format('%s: expect(buf) returned %s; expected nil (reply incomplete) or an'\n"
    "              .. ' integer from 1 to #buf (%d)', where(how), tostring(n), #buf), 0)\n"
    "          end\n"
    "          consume(k, n)\n"
    "          if n == #buf then return buf end\n"
    "          return sub(buf, 1, n)\n"
    "        end\n"
    "      else\n"
    "        local r = { find(buf, how) }\n"
    "        if r[1] then\n"
    "          consume(k, r[2])\n"
    "          if #r > 2 then return unpack(r, 3) end\n"
    "          return sub(buf, r[1], r[2])\n"
    "        end\n"
    "      end\n"
    "    end\n"
    "    if dead then\n"
    "      local a, e, c = fail(k)\n"
    "      if a == nil then return nil, e, c end\n"
    "    end\n"
    "    wait(k)\n"
    "  end\n"
    "end\n"
    "function methods.send(self, data)\n"
    "  local k = conn_of(self, 'send')\n"
    "  if type(data) ~= 'string' then\n"
    "    error('bad argument #1 to \\'send\\' (string expected, got ' .. type(data) .. ')', 2)\n"
    "  end\n"
    "  return send(k, data)\n"
    "end\n"
    "function methods.receive(self, how)\n"
    "  local k = conn_of(self, 'receive', true)\n"
    "  if how == nil then how = '*l' end\n"
    "  check_expect(how, 'receive', 1)\n"
    "  return read(k, how)\n"
    "end\n"
    "function methods.call(self, request, expect)\n"
    "  local k = conn_of(self, 'call', true)\n"
    "  if not rawget(self, '_client') then\n"
    "    error('conn:call is for client connections (a server answers with conn:send)', 2)\n"
    "  end\n"
    "  if type(request) ~= 'string' then\n"
    "    error('bad argument #1 to \\'call\\' (string expected, got ' .. type(request) .. ')', 2)\n"
    "  end\n"
    "  check_expect(expect, 'call', 2)\n"
    "  while true do\n"
    "    local ok, e, c = call_begin(k, request)\n"
    "    if ok then break end\n"
    "    if ok == nil then return nil, e, c end\n"
    "    wait(k)\n"
    "  end\n"
    "  local reply, e, c = read(k, expect)\n"
    "  if reply == nil then return nil, e, c end\n"
    "  call_end(k)\n"
    "  return reply\n"
    "end\n"
    "function methods.sleep(self, s)\n"
    "  local k = conn_of(self, 'sleep', true)\n"
    "  if type(s) ~= 'number' or not (s >= 0) or s > 1e9 then\n"
    "    error('bad argument #1 to \\'sleep\\' (seconds from 0 to 1e9 expected, got '\n"
    "      .. tostring(s) .. ')', 2)\n"
    "  end\n"
    "  sleep(k, s)\n"
    "  return true\n"
    "end\n"
    "return mt\n";

/* Picks the hooks of this case's scenario part -> hooks | nil, message. */
static const char BOOT[] =
    "local path, sets, quick, index, case_id = ...\n"
    "local scenario = require('arkbench.scenario')\n"
    "local matrix = require('arkbench.matrix')\n"
    "local spec, err = scenario.load(path, sets)\n"
    "if not spec then return nil, err end\n"
    "if quick then scenario.apply_quick(spec) end\n"
    "if not index or not spec.parts or #spec.parts < 2 then return spec.hooks end\n"
    "local all = matrix.expand(spec)\n"
    "local case = all[index]\n"
    "if not case or (case_id and case.case_id ~= case_id) then\n"
    "  return nil, string.format('%s: case %s (index %d) is not in the scenario as loaded by'\n"
    "    .. ' the worker', path, tostring(case_id), index)\n"
    "end\n"
    "local n = 0\n"
    "for _, part in ipairs(spec.parts) do\n"
    "  local copy = {}\n"
    "  for k, v in pairs(part) do copy[k] = v end\n"
    "  copy.parts = nil\n"
    "  n = n + #matrix.expand(copy)\n"
    "  if index <= n then return part.hooks end\n"
    "end\n"
    "return nil, path .. ': case index ' .. index .. ' is past the last scenario part'\n";

/* ---- light form ------------------------------------------------------- */

/* message(i, id) on the loop's state; leaves the string on the stack.
 * 0, or -1 after a script error (stack clean). */
static int light_message(lx_loop_t *lx, lx_conn_t *k, uint64_t i, const char **p, size_t *n) {
  lua_State *L = lx->L;
  lua_pushvalue(L, IDX_MESSAGE);
  lua_pushnumber(L, (lua_Number)i);
  lua_pushnumber(L, k->id);
  if (lua_pcall(L, 2, 1, IDX_TRACEBACK) != 0) {
    script_error(lx, lua_tostring(L, -1));
    lua_pop(L, 1);
    return -1;
  }
  if (lua_type(L, -1) != LUA_TSTRING) {
    const char *at = fn_where(L, IDX_MESSAGE);
    script_error(lx, lua_pushfstring(L, "%s: message(%d) returned %s; expected a string (the "
                                        "request's bytes)", at, (int)i, luaL_typename(L, -2)));
    lua_pop(L, 3);
    return -1;
  }
  *p = lua_tolstring(L, -1, n);
  return 0;
}

/* expect(buf): 1 and *used, 0 (incomplete), -1 after a script error. */
static int light_expect(lx_loop_t *lx, const uint8_t *p, size_t n, size_t *used) {
  lua_State *L = lx->L;
  lua_pushvalue(L, IDX_EXPECT);
  lua_pushlstring(L, (const char *)p, n);
  if (lua_pcall(L, 1, 1, IDX_TRACEBACK) != 0) {
    script_error(lx, lua_tostring(L, -1));
    lua_pop(L, 1);
    return -1;
  }
  int t = lua_type(L, -1);
  if (t == LUA_TNIL || (t == LUA_TBOOLEAN && !lua_toboolean(L, -1))) {
    lua_pop(L, 1);
    return 0;
  }
  double v = t == LUA_TNUMBER ? lua_tonumber(L, -1) : -1;
  if (!(v >= 1 && v <= (double)n && v == floor(v))) {
    const char *got = t == LUA_TNUMBER ? lua_pushfstring(L, "%f", v) : luaL_typename(L, -1);
    if (t != LUA_TNUMBER) lua_pushnil(L);
    const char *at = fn_where(L, IDX_EXPECT);
    script_error(lx, lua_pushfstring(L, "%s: expect(buf) returned %s; expected nil (reply "
                                        "incomplete) or an integer from 1 to #buf (%d)",
                                     at, got, (int)n));
    lua_pop(L, 4);
    return -1;
  }
  lua_pop(L, 1);
  *used = (size_t)v;
  return 1;
}

/* Fills the window: builds the messages, stamps them with one clock
 * reading just before they reach the socket, writes them in one batch. */
static void light_pump(lx_conn_t *k) {
  lx_loop_t *lx = k->lx;
  ab__client_t *c = k->c;
  ab__loop_t *l = lx->l;
  uint32_t w = l->eng->cfg->window;
  uint64_t dl;
  if (!c->alive || lx->stopping) return;
  uint8_t ph = ab__sending_phase(l, &dl);
  if (ph == 0 || c->inflight >= w || ab_now_ns() >= dl) return;
  uint32_t n = w - c->inflight;
  ab_outbuf_t *out = k->out;
  size_t total = 0;
  for (uint32_t i = 0; i < n; i++) {
    const char *p = lx->msg;
    size_t len = lx->msg_len;
    if (lx->msg_fn && light_message(lx, k, k->msg_i + 1 + i, &p, &len) < 0) return;
    uint8_t *dst = len ? ab_outbuf_reserve(out, total + len) : NULL;
    if (len && dst == NULL) {
      if (lx->msg_fn) lua_pop(lx->L, 1);
      ab__client_fail(c, AB_ENOMEM, "send buffer");
      return;
    }
    if (len) memcpy(dst + total, p, len);
    total += len;
    if (lx->msg_fn) lua_pop(lx->L, 1);
  }
  uint64_t t = ab_now_ns();
  if (t >= dl) return; /* built too late: never sent, never counted */
  ab__client_stamp(c, c->next_seq, n, t, ph);
  k->msg_i += n;
  ab_outbuf_commit(out, total);
  ab_outbuf_flush(out); /* errors arrive through on_cwrite_error */
}

/* Completes every whole reply in the buffer (in order: the oldest round
 * trip in flight), then refills the window. */
static void light_parse(lx_conn_t *k) {
  lx_loop_t *lx = k->lx;
  ab__client_t *c = k->c;
  ab__loop_t *l = lx->l;
  uint32_t w = l->eng->cfg->window;
  int got = 0;
  while (c->alive && !lx->stopping) {
    size_t have = avail(k), used = 0;
    if (have == 0) break;
    const uint8_t *p = rdata(k);
    if (lx->expect_kind == EXP_LEN) {
      if (have < lx->expect_len) break;
      used = lx->expect_len;
    } else if (lx->expect_kind == EXP_LINE) {
      const uint8_t *nl = memchr(p, '\n', have);
      if (nl == NULL) break;
      used = (size_t)(nl - p) + 1;
    } else {
      /* expect(buf) sees a prefix first: twice the last reply's size, not
       * the whole pipelined buffer (a copy per call).  A reply may arrive
       * split anywhere, so a correct expect answers nil to any prefix that
       * is not a whole reply; then it sees everything buffered. */
      size_t show = k->hint && k->hint < have ? k->hint : have;
      int r = light_expect(lx, p, show, &used);
      if (r == 0 && show < have) r = light_expect(lx, p, show = have, &used);
      if (r <= 0) break;
      k->hint = used < 32 ? 64 : 2 * used;
    }
    uint32_t slot = (uint32_t)(c->oldest_seq % w);
    if (c->inflight == 0 || c->slot_ns[slot] == 0 || c->slot_seq[slot] != c->oldest_seq) {
      if (l->phase >= AB__PH_DONE) { /* late, after a forced end: dropped */
        consume(k, have);
        break;
      }
      ab__client_fail(c, AB_ESEQ, "reply with no request in flight");
      return;
    }
    complete_slot(lx, c, slot, k->now, used);
    consume(k, used);
    got = 1;
  }
  if (got && c->alive) {
    light_pump(k);
    ab__loop_check_progress(l);
  }
}

/* ---- client connections ----------------------------------------------- */

static void c_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  ab__client_t *c = h->data;
  (void)hint;
  buf_alloc(conn_of(c->loop->exec_state, c), buf);
}

static void c_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  ab__client_t *c = st->data;
  lx_loop_t *lx = c->loop->exec_state;
  lx_conn_t *k = conn_of(lx, c);
  (void)buf;
  if (nread == 0) return;
  if (nread < 0) {
    conn_failed(k, nread == UV_EOF ? AB_ECLOSED : (int)nread, "read");
    return;
  }
  k->now = ab_now_ns();
  *k->rlen += (size_t)nread;
  if (lx->stopping || !c->alive) return;
  if (lx->mode == MODE_LIGHT) light_parse(k);
  else if (k->waiting && want_met(k)) wake(k);
}

static void on_cwrite_error(ab_outbuf_t *ob, int err) {
  ab__client_t *c = CONTAINER_OF(ob, ab__client_t, out);
  conn_failed(conn_of(c->loop->exec_state, c), err, "write");
}

static void c_exit(ab_task_t *t, void *arg) {
  lx_conn_t *k = arg;
  if (k->c->task == t) k->c->task = NULL;
  ab__client_close(k->c); /* the client function returned: done with it */
}

static void start_client(lx_conn_t *k) {
  lx_loop_t *lx = k->lx;
  int r = task_new(lx, k, lx->ref_client);
  if (r < 0) {
    ab__client_fail(k->c, r, "client task");
    return;
  }
  k->c->task = k->task; /* a reply timeout fails the client: the engine cancels it */
  ab_task_on_exit(k->task, c_exit, k);
  ab_task_start(k->task);
}

static void on_connect(uv_connect_t *req, int status) {
  ab__client_t *c = req->data;
  ab__loop_t *l = c->loop;
  lx_loop_t *lx = l->exec_state;
  lx_conn_t *k = conn_of(lx, c);
  if (status != UV_ECANCELED) ab_hist_record(&l->connect, ab_now_ns() - c->connect_start_ns);
  if (status < 0 || lx->stopping || c->closing) {
    if (status < 0 && status != UV_ECANCELED && l->phase != AB__PH_STOPPING) {
      char msg[160];
      snprintf(msg, sizeof(msg), "connection %u: connect: %s (%s)", c->id, ab_strerror(status),
               ab_err_name(status));
      ab__loop_error(l, status, msg);
    }
    ab__client_close(c);
    report_connected(c);
    return;
  }
  c->alive = 1;
  l->ready_clients++;
  int r = uv_read_start(k->stream, c_alloc, c_read);
  report_connected(c);
  if (r < 0) {
    ab__client_fail(c, r, "read start");
    return;
  }
  if (lx->mode == MODE_FULL) start_client(k);
  else light_pump(k);
}

static void lx_client_start(void *state, ab__client_t *c) {
  lx_loop_t *lx = state;
  ab__loop_t *l = c->loop;
  lx_conn_t *k = conn_of(lx, c);
  k->magic = LX_MAGIC;
  k->lx = lx;
  k->is_client = 1;
  k->id = c->id;
  k->c = c;
  k->stream = (uv_stream_t *)&c->tcp;
  k->rbuf = &c->rbuf;
  k->rcap = &c->rcap;
  k->rlen = &c->rlen;
  k->out = &c->out;
  k->co_ref = LUA_NOREF;
  int r = 0;
  if (!lx->stopping) {
    r = uv_tcp_init(&l->loop, &c->tcp);
    if (r == 0) {
      c->tcp.data = c;
      uv_tcp_nodelay(&c->tcp, 1);
      ab_outbuf_init(&c->out, k->stream, on_cwrite_error);
      c->creq.data = c;
      /* as tcp_client.c: past 20,000 connections per loop, further
       * loopback source addresses (one destination port gives ~28k
       * ephemeral ports) */
      if (l->nclients > 20000 && l->connect_addr.ss_family == AF_INET) {
        uint32_t n = (c->id / l->eng->nloops) / 20000 + 1;
        struct sockaddr_in src;
        char ip[32];
        snprintf(ip, sizeof(ip), "127.0.%u.%u", (n + 1) >> 8, (n + 1) & 255);
        uv_ip4_addr(ip, 0, &src);
        r = uv_tcp_bind(&c->tcp, (const struct sockaddr *)&src, 0);
      }
      c->connect_start_ns = ab_now_ns();
      if (r == 0)
        r = uv_tcp_connect(&c->creq, &c->tcp, (const struct sockaddr *)&l->connect_addr, on_connect);
      if (r == 0) return;
    }
    char msg[160];
    snprintf(msg, sizeof(msg), "connection %u: connect: %s (%s)", c->id, ab_strerror(r),
             ab_err_name(r));
    ab__loop_error(l, r, msg);
    if (c->tcp.data) ab__client_close(c);
  }
  /* not connecting: counted as done without starting more from here (the
   * caller, ab__clients_connect_more, goes on with the next ones) */
  c->ly.reported = 1;
  if (--l->connects_pending == 0) ab__loop_reached(l, AB__ST_CONNECTED);
}

static void lx_client_wake(void *state, ab__client_t *c) {
  lx_loop_t *lx = state;
  lx_conn_t *k = conn_of(lx, c);
  if (k->magic != LX_MAGIC || lx->stopping || !c->alive) return;
  if (lx->mode == MODE_LIGHT) light_pump(k);
  else if (k->waiting && k->want == W_PHASE) wake(k);
}

/* ---- server connections ----------------------------------------------- */

static lx_conn_t *sconn_of(ab__sconn_t *s) {
  return s->task ? ab_task_ctx(s->task) : NULL;
}

static void s_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  ab__sconn_t *s = h->data;
  lx_conn_t *k = sconn_of(s);
  (void)hint;
  if (k) {
    buf_alloc(k, buf);
  } else if (ab__grow(&s->rbuf, &s->rcap, s->rlen, READ_CHUNK) == 0) {
    *buf = uv_buf_init((char *)s->rbuf + s->rlen, (unsigned)(s->rcap - s->rlen));
  } else {
    *buf = uv_buf_init(NULL, 0);
  }
}

static void s_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  ab__sconn_t *s = st->data;
  lx_conn_t *k = sconn_of(s);
  (void)buf;
  if (nread == 0 || k == NULL) return;
  if (nread < 0) {
    conn_failed(k, nread == UV_EOF ? AB_ECLOSED : (int)nread, "read");
    return;
  }
  k->now = ab_now_ns();
  *k->rlen += (size_t)nread;
  s->loop->srv_bytes += (uint64_t)nread;
  if (k->waiting && want_met(k)) wake(k);
}

static void on_swrite_error(ab_outbuf_t *ob, int err) {
  ab__sconn_t *s = CONTAINER_OF(ob, ab__sconn_t, out);
  lx_conn_t *k = sconn_of(s);
  if (k) conn_failed(k, err, "write");
}

static void s_exit(ab_task_t *t, void *arg) {
  lx_conn_t *k = arg;
  if (k->s->task == t) k->s->task = NULL;
  if (!k->s->closing) ab__sconn_close(k->s);
}

static void lx_server_accept(void *state, ab__sconn_t *s) {
  lx_loop_t *lx = state;
  ab__loop_t *l = lx->l;
  if (lx->ref_server == LUA_NOREF) { /* no server function: the built-in echo */
    ab__co_server_accept(s);
    return;
  }
  if (lx->stopping) {
    ab__sconn_close(s);
    return;
  }
  lx_conn_t *k = calloc(1, sizeof(*k));
  if (k == NULL) {
    ab__sconn_error(s, AB_ENOMEM, "accept");
    return;
  }
  k->magic = LX_MAGIC;
  k->lx = lx;
  k->id = lx->next_sid++ * l->eng->nloops + l->index;
  k->s = s;
  k->stream = (uv_stream_t *)&s->tcp;
  k->rbuf = &s->rbuf;
  k->rcap = &s->rcap;
  k->rlen = &s->rlen;
  k->out = &s->out;
  k->co_ref = LUA_NOREF;
  k->next = lx->sconns;
  lx->sconns = k;
  ab_outbuf_init(&s->out, k->stream, on_swrite_error);
  int r = task_new(lx, k, lx->ref_server);
  if (r < 0) {
    ab__sconn_error(s, r, "server task");
    return;
  }
  s->task = k->task;
  ab_task_on_exit(k->task, s_exit, k);
  r = uv_read_start(k->stream, s_alloc, s_read);
  if (r < 0) k->err = r; /* the function sees it at its first receive */
  ab_task_start(k->task);
}

/* ---- stopping after a script error ------------------------------------ */

static void stop_loop(lx_loop_t *lx) {
  ab__loop_t *l = lx->l;
  if (lx->stopped) return;
  lx->stopped = 1;
  lx->stopping = 1;
  if (l->phase == AB__PH_STOPPING) return;
  for (uint32_t i = 0; i < l->nclients; i++) release_unfinished(lx, &l->clients[i]);
  ab_sched_cancel_all(l->sched);
  for (uint32_t i = 0; i < l->nclients; i++) ab__client_close(&l->clients[i]);
  ab__loop_check_progress(l);
}

static void abort_cb(uv_async_t *a) { stop_loop(a->data); }

/* ---- loop_open / loop_close ------------------------------------------- */

static void boot_fail(lua_State *L, const char *fmt, const char *path) {
  lua_pushfstring(L, fmt, path);
  lua_error(L);
}

/* Runs protected with lx as argument 1: opens the libraries, loads the
 * scenario, picks the part's hooks and loads the conn prelude. */
static int boot(lua_State *L) {
  lx_loop_t *lx = lua_touserdata(L, 1);
  ab_lua_exec_t *x = lx->x;
  const char *path = x->scenario_path;
  luaL_openlibs(L);
  lua_getglobal(L, "package");
  if (x->lua_path) {
    lua_pushstring(L, x->lua_path);
    lua_setfield(L, -2, "path");
  }
  if (x->lua_cpath) {
    lua_pushstring(L, x->lua_cpath);
    lua_setfield(L, -2, "cpath");
  }
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, luaopen_cjson);
  lua_setfield(L, -2, "cjson");
  lua_pushcfunction(L, ab_luaopen_core);
  lua_setfield(L, -2, "arkbench.core");
  lua_pop(L, 2);
  if (x->root) {
    lua_pushstring(L, x->root);
    lua_setglobal(L, "ARKBENCH_ROOT");
  }

  if (luaL_loadbuffer(L, BOOT, sizeof(BOOT) - 1, "=arkbench.lua_exec.boot") != 0) lua_error(L);
  lua_pushstring(L, path);
  lua_createtable(L, x->nsets, 0);
  for (int i = 0; i < x->nsets; i++) {
    lua_pushstring(L, x->sets[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_pushboolean(L, x->quick);
  if (x->index > 0) lua_pushinteger(L, x->index);
  else lua_pushnil(L);
  if (x->case_id) lua_pushstring(L, x->case_id);
  else lua_pushnil(L);
  lua_call(L, 5, 2);
  if (!lua_istable(L, -2)) {
    if (!lua_isstring(L, -1)) lua_pushfstring(L, "%s: the scenario has no hooks", path);
    lua_error(L);
  }
  lua_pop(L, 1);
  int hooks = lua_gettop(L);

  lua_getfield(L, hooks, "client");
  if (lua_isfunction(L, -1)) lx->ref_client = luaL_ref(L, LUA_REGISTRYINDEX);
  else lua_pop(L, 1);
  lua_getfield(L, hooks, "server");
  if (lua_isfunction(L, -1)) lx->ref_server = luaL_ref(L, LUA_REGISTRYINDEX);
  else lua_pop(L, 1);
  lua_getfield(L, hooks, "message");
  int mt = lua_type(L, -1);
  if (mt == LUA_TSTRING) {
    lx->msg = lua_tolstring(L, -1, &lx->msg_len);
    lx->ref_message = luaL_ref(L, LUA_REGISTRYINDEX);
  } else if (mt == LUA_TFUNCTION) {
    lx->msg_fn = 1;
    lx->ref_message = luaL_ref(L, LUA_REGISTRYINDEX);
  } else {
    lua_pop(L, 1);
  }
  lua_getfield(L, hooks, "expect");
  int et = lua_type(L, -1);
  if (et == LUA_TNUMBER && lua_tonumber(L, -1) >= 1) {
    lx->expect_kind = EXP_LEN;
    lx->expect_len = (size_t)lua_tonumber(L, -1);
    lua_pop(L, 1);
  } else if (et == LUA_TSTRING && strcmp(lua_tostring(L, -1), "line") == 0) {
    lx->expect_kind = EXP_LINE;
    lua_pop(L, 1);
  } else if (et == LUA_TFUNCTION) {
    lx->expect_kind = EXP_FN;
    lx->ref_expect = luaL_ref(L, LUA_REGISTRYINDEX);
  } else {
    lua_pop(L, 1);
  }

  if (lx->ref_client != LUA_NOREF) {
    lx->mode = MODE_FULL;
    if (mt != LUA_TNIL || et != LUA_TNIL)
      boot_fail(L, "%s: execution = \"lua\": give either client = function(conn) or "
                   "message/expect, not both", path);
  } else if (mt != LUA_TNIL) {
    lx->mode = MODE_LIGHT;
    if (lx->expect_kind == 0) {
      if (lx->msg_fn)
        boot_fail(L, "%s: execution = \"lua\": message = function(i) needs expect = a length, "
                     "\"line\" or function(buf) to know where a reply ends", path);
      lx->expect_kind = EXP_LEN; /* an echo: the reply is as long as the message */
      lx->expect_len = lx->msg_len;
    }
  } else {
    boot_fail(L, "%s: execution = \"lua\" needs client = function(conn) ... end, or "
                 "message = bytes | function(i) with expect = length | \"line\" | function(buf)",
              path);
  }

  /* the conn methods */
  if (luaL_loadbuffer(L, PRELUDE, sizeof(PRELUDE) - 1, "=arkbench.conn") != 0) lua_error(L);
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
  lua_call(L, 1, 1);
  lx->ref_mt = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

static void free_loop(lx_loop_t *lx) {
  if (lx->L) lua_close(lx->L);
  lx_conn_t *k = lx->sconns;
  while (k) {
    lx_conn_t *n = k->next;
    free(k);
    k = n;
  }
  free(lx->cconns);
  free(lx);
}

static void *lx_loop_open(void *arg, ab__loop_t *l, char *err, size_t errlen) {
  ab_lua_exec_t *x = arg;
  if (l->eng->cfg->protocol != AB_PROTO_TCP) {
    snprintf(err, errlen, "execution = \"lua\" drives plain tcp connections; use protocol = \"tcp\"");
    return NULL;
  }
  lx_loop_t *lx = calloc(1, sizeof(*lx));
  lx_loop_t **loops = realloc(x->loops, (x->nloops + 1) * sizeof(*loops));
  if (loops) x->loops = loops;
  if (lx == NULL || loops == NULL ||
      (lx->cconns = calloc(l->nclients ? l->nclients : 1, sizeof(lx_conn_t))) == NULL) {
    snprintf(err, errlen, "execution = \"lua\": out of memory");
    free(lx);
    return NULL;
  }
  lx->x = x;
  lx->l = l;
  lx->ref_client = lx->ref_server = lx->ref_mt = lx->ref_message = lx->ref_expect = LUA_NOREF;
  lx->L = luaL_newstate();
  if (lx->L == NULL) {
    snprintf(err, errlen, "execution = \"lua\": cannot create a Lua state (out of memory)");
    free_loop(lx);
    return NULL;
  }
  lua_State *L = lx->L;
  lua_atpanic(L, panic);
  lua_pushcfunction(L, boot);
  lua_pushlightuserdata(L, lx);
  if (lua_pcall(L, 1, 0, 0) != 0) {
    snprintf(err, errlen, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "execution = \"lua\": "
             "the scenario could not be loaded");
    free_loop(lx);
    return NULL;
  }
  /* stack of the light form's calls: handler, message, expect */
  lua_settop(L, 0);
  lua_pushcfunction(L, traceback);
  if (lx->msg_fn) lua_rawgeti(L, LUA_REGISTRYINDEX, lx->ref_message);
  else lua_pushnil(L);
  if (lx->expect_kind == EXP_FN) lua_rawgeti(L, LUA_REGISTRYINDEX, lx->ref_expect);
  else lua_pushnil(L);

  int r = uv_async_init(&l->loop, &lx->abort_async, abort_cb);
  if (r < 0) {
    snprintf(err, errlen, "execution = \"lua\": %s", ab_strerror(r));
    free_loop(lx);
    return NULL;
  }
  lx->abort_async.data = lx;
  uv_unref((uv_handle_t *)&lx->abort_async); /* never keeps the loop alive */
  x->loops[x->nloops++] = lx;
  return lx;
}

static void lx_loop_close(void *arg, void *state) {
  ab_lua_exec_t *x = arg;
  lx_loop_t *lx = state;
  if (!uv_is_closing((uv_handle_t *)&lx->abort_async)) {
    uv_close((uv_handle_t *)&lx->abort_async, close_noop);
    uv_run(&lx->l->loop, UV_RUN_NOWAIT);
  }
  x->reply_bytes += lx->reply_bytes;
  for (uint32_t i = 0; i < x->nloops; i++)
    if (x->loops[i] == lx) x->loops[i] = x->loops[--x->nloops];
  free_loop(lx);
}

/* ---- public ----------------------------------------------------------- */

static char *dup_field(lua_State *L, int idx, const char *key) {
  lua_getfield(L, idx, key);
  const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  char *d = s ? strdup(s) : NULL;
  lua_pop(L, 1);
  return d;
}

int ab_lua_exec_new(lua_State *L, int idx, ab_lua_exec_t **out, char *err, size_t errlen) {
  *out = NULL;
  if (idx < 0) idx = lua_gettop(L) + idx + 1;
  ab_lua_exec_t *x = calloc(1, sizeof(*x));
  if (x == NULL) goto nomem;
  pthread_mutex_init(&x->mu, NULL);
  x->scenario_path = dup_field(L, idx, "scenario_path");
  if (x->scenario_path == NULL) {
    snprintf(err, errlen, "execution = \"lua\" needs the scenario file (scenario_path): run it "
                          "with arkbench run");
    ab_lua_exec_free(x);
    return AB_ECONFIG;
  }
  lua_getfield(L, idx, "scenario_sets");
  if (lua_istable(L, -1)) {
    int n = (int)lua_objlen(L, -1);
    x->sets = calloc(n ? (size_t)n : 1, sizeof(char *));
    if (x->sets == NULL) {
      lua_pop(L, 1);
      goto nomem;
    }
    for (int i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      const char *s = lua_tostring(L, -1);
      if (s && (x->sets[x->nsets] = strdup(s)) != NULL) x->nsets++;
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  lua_getfield(L, idx, "quick");
  x->quick = lua_toboolean(L, -1);
  lua_getfield(L, idx, "index");
  x->index = lua_isnumber(L, -1) ? (int)lua_tointeger(L, -1) : 0;
  lua_pop(L, 2);
  x->case_id = dup_field(L, idx, "case_id");
  lua_getglobal(L, "package");
  if (lua_istable(L, -1)) {
    x->lua_path = dup_field(L, lua_gettop(L), "path");
    x->lua_cpath = dup_field(L, lua_gettop(L), "cpath");
  }
  lua_pop(L, 1);
  lua_getglobal(L, "ARKBENCH_ROOT");
  if (lua_type(L, -1) == LUA_TSTRING) x->root = strdup(lua_tostring(L, -1));
  lua_pop(L, 1);
  x->hooks.arg = x;
  x->hooks.loop_open = lx_loop_open;
  x->hooks.loop_close = lx_loop_close;
  x->hooks.client_start = lx_client_start;
  x->hooks.client_wake = lx_client_wake;
  x->hooks.server_accept = lx_server_accept;
  *out = x;
  return 0;
nomem:
  snprintf(err, errlen, "execution = \"lua\": out of memory");
  ab_lua_exec_free(x);
  return AB_ENOMEM;
}

const ab_exec_hooks_t *ab_lua_exec_hooks(const ab_lua_exec_t *x) { return &x->hooks; }

int ab_lua_exec_script_errors(const ab_lua_exec_t *x, const char **first) {
  *first = x->errmsg[0] ? x->errmsg : NULL;
  return x->nscript_errors;
}

uint64_t ab_lua_exec_reply_bytes(const ab_lua_exec_t *x) { return x->reply_bytes; }

void ab_lua_exec_free(ab_lua_exec_t *x) {
  if (x == NULL) return;
  for (int i = 0; i < x->nsets; i++) free(x->sets[i]);
  free(x->sets);
  free(x->scenario_path);
  free(x->case_id);
  free(x->lua_path);
  free(x->lua_cpath);
  free(x->root);
  free(x->loops);
  pthread_mutex_destroy(&x->mu);
  free(x);
}
