/* lua_exec.c -- execution = "lua": the scenario's Lua code drives each
 * connection (user reference: docs/lua-api.md; the modes: docs/execution.md).  This file: the
 * Lua driver (an ab_driver_t built on the row ab_driver_scripted_base()
 * gives: core/drivers/registry.c's coroutine row for a stream, its
 * scripted udp row over udp, lua_exec_udp.c), its per-loop state (a lua_State per loop, the
 * scenario loaded into it by boot()), stopping a loop after a script error,
 * and the public API (lua_exec.h).  The other parts are listed in lua_exec_int.h.
 *
 * Two forms, chosen by the scenario part's hooks:
 *
 *   full   client = function(conn) ... end runs as a Lua coroutine per
 *          client connection, a task of kind AB_TASK_LUA on the loop's
 *          scheduler (lua_exec_task.c); optional server = function(conn)
 *          the same way per accepted connection.  The conn methods are
 *          lua/arkbench/exec/conn.lua over C primitives (lua_exec_conn.c).
 *   light  message = bytes | function(i), expect = length | "line" |
 *          function(buf): C does the IO and calls Lua only to build a
 *          message and to find where a reply ends (lua_exec_light.c).
 *
 * Timing and accounting are the built-in echo's (engine/window.h): a round
 * trip takes a window slot, is stamped just before
 * its bytes reach uv_try_write, completes at the clock reading taken in the
 * read callback that delivered its last byte, and counts in the phase it
 * was sent in; nothing is sent after the phase deadline (a conn:call made
 * then waits for the next phase, or for cancellation at STOP).
 *
 * Errors (lua_exec_task.c): a Lua error is a script error; every loop is
 * told to stop driving connections, here in stop_loop().
 */
#include "lua/lua_exec.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "base/ab_error.h"
#include "drivers/registry.h"
#include "lua/lua_exec_int.h"
#include "lua/lua_host.h"
#include "proto/caps.h"

static int panic(lua_State *L) {
  fprintf(stderr, "arkbench: unprotected Lua error in execution = lua: %s\n",
          lua_tostring(L, -1) ? lua_tostring(L, -1) : "?");
  abort();
  return 0;
}

/* ---- stopping after a script error ------------------------------------ */

static void stop_loop(ab__lx_loop_t *lx) {
  ab__loop_t *l = lx->l;
  if (lx->stopped) return;
  lx->stopped = 1;
  lx->stopping = 1;
  if (l->phase == AB__PH_STOPPING) return;
  /* a script error stopped the run: what is in flight will never complete */
  for (uint32_t i = 0; i < l->nclients; i++) ab__win_release(ab__loop_client(l, i), &l->unfinished);
  ab_sched_cancel_all(l->d->sched);
  for (uint32_t i = 0; i < l->nclients; i++) ab__client_close(AB__DCLIENT(l, i));
  ab__loop_check_progress(l);
}

static void abort_cb(uv_async_t *a) { stop_loop(a->data); }

/* ---- loop_open / loop_close ------------------------------------------- */

static void boot_fail(lua_State *L, const char *fmt, const char *path) {
  lua_pushfstring(L, fmt, path);
  lua_error(L);
}

/* The scenario's hooks for this part (lua/arkbench/exec/boot.lua's
 * hooks(path, sets, quick, index, case_id)), left on the stack; returns
 * their index.  A scenario without them raises its error. */
static int load_hooks(lua_State *L, ab_lua_exec_t *x, const char *path) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "arkbench.exec.boot");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "hooks");
  lua_remove(L, -2);
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
  return lua_gettop(L);
}

/* The driver's mode from the hooks given (mt, et: the types of message
 * and expect): a client function, or the light form (message, expect);
 * both or neither raise. */
static void pick_mode(lua_State *L, ab__lx_loop_t *lx, int mt, int et, const char *path) {
  if (lx->ref_client != LUA_NOREF) {
    lx->mode = AB__LX_MODE_FULL;
    if (mt != LUA_TNIL || et != LUA_TNIL)
      boot_fail(L, "%s: execution = \"lua\": give either client = function(conn) or "
                   "message/expect, not both", path);
  } else if (mt != LUA_TNIL) {
    lx->mode = AB__LX_MODE_LIGHT;
    if (lx->expect_kind == 0) {
      if (lx->msg_fn)
        boot_fail(L, "%s: execution = \"lua\": message = function(i) needs expect = a length, "
                     "\"line\" or function(buf) to know where a reply ends", path);
      lx->expect_kind = AB__LX_EXP_LEN; /* an echo: the reply is as long as the message */
      lx->expect_len = lx->msg_len;
    }
  } else {
    boot_fail(L, "%s: execution = \"lua\" needs client = function(conn) ... end, or "
                 "message = bytes | function(i) with expect = length | \"line\" | function(buf)",
              path);
  }
}

/* Runs protected with lx as argument 1: sets the state up as the host's
 * (lua_host.h, with the worker's package paths), loads the scenario and
 * picks the part's hooks (lua/arkbench/exec/boot.lua), and makes the conn
 * metatable (lua/arkbench/exec/conn.lua). */
static int boot(lua_State *L) {
  ab__lx_loop_t *lx = lua_touserdata(L, 1);
  ab_lua_exec_t *x = lx->x;
  const char *path = x->scenario_path;
  ab_lua_host_setup(L, x->root, x->lua_path, x->lua_cpath);
  int hooks = load_hooks(L, x, path);

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
    lx->expect_kind = AB__LX_EXP_LEN;
    lx->expect_len = (size_t)lua_tonumber(L, -1);
    lua_pop(L, 1);
  } else if (et == LUA_TSTRING && strcmp(lua_tostring(L, -1), "line") == 0) {
    lx->expect_kind = AB__LX_EXP_LINE;
    lua_pop(L, 1);
  } else if (et == LUA_TFUNCTION) {
    lx->expect_kind = AB__LX_EXP_FN;
    lx->ref_expect = luaL_ref(L, LUA_REGISTRYINDEX);
  } else {
    lua_pop(L, 1);
  }

  /* tag = "get": every message of a constant message carries it
   * (scenario/check_hooks.lua allows it with a string message only) */
  lua_getfield(L, hooks, "tag");
  if (lua_type(L, -1) == LUA_TSTRING && mt == LUA_TSTRING) {
    const char *why = NULL;
    int id = ab__lx_tag_of(lx, lua_gettop(L), &why);
    if (id < 0) {
      lua_pushfstring(L, "%s: key 'tag': %s", path, why);
      lua_error(L);
    }
    lx->msg_tag = (uint8_t)id;
  }
  lua_pop(L, 1);

  pick_mode(L, lx, mt, et, path);

  if (lx->dgram) ab__lx_udp_boot_check(L, lx, path);

  /* the conn methods */
  ab__lx_conn_open(L, lx);
  lx->ref_mt = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

static void free_loop(ab__lx_loop_t *lx) {
  if (lx->L) lua_close(lx->L);
  ab__lx_conn_t *k = lx->sconns;
  while (k) {
    ab__lx_conn_t *n = k->next;
    free(k);
    k = n;
  }
  free(lx->cconns);
  free(lx->tagbuf);
  free(lx);
}

static void *lx_loop_open(ab_lua_exec_t *x, ab__loop_t *l, char *err, size_t errlen) {
  /* which protocols it drives is the capability table's row
   * (proto/caps.h), checked by ab_case_check() before any loop opens */
  ab__lx_loop_t *lx = calloc(1, sizeof(*lx));
  ab__lx_loop_t **loops = realloc(x->loops, (x->nloops + 1) * sizeof(*loops));
  if (loops) x->loops = loops;
  if (lx == NULL || loops == NULL ||
      (lx->cconns = calloc(l->nclients ? l->nclients : 1, sizeof(ab__lx_conn_t))) == NULL ||
      (lx->tagbuf = calloc(l->window, 1)) == NULL) {
    snprintf(err, errlen, "execution = \"lua\": out of memory");
    if (lx) free(lx->cconns);
    free(lx);
    return NULL;
  }
  lx->x = x;
  lx->l = l;
  lx->dgram = x->dgram;
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
  lua_pushcfunction(L, ab_lua_host_traceback);
  if (lx->msg_fn) lua_rawgeti(L, LUA_REGISTRYINDEX, lx->ref_message);
  else lua_pushnil(L);
  if (lx->expect_kind == AB__LX_EXP_FN) lua_rawgeti(L, LUA_REGISTRYINDEX, lx->ref_expect);
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

static void lx_loop_close(ab_lua_exec_t *x, ab__lx_loop_t *lx) {
  if (!uv_is_closing((uv_handle_t *)&lx->abort_async)) {
    uv_close((uv_handle_t *)&lx->abort_async, ab__lx_close_noop);
    uv_run(&lx->l->loop, UV_RUN_NOWAIT);
  }
  x->reply_bytes += lx->reply_bytes;
  for (uint32_t i = 0; i < x->nloops; i++)
    if (x->loops[i] == lx) x->loops[i] = x->loops[--x->nloops];
  free_loop(lx);
}

/* The driver's loop halves: the coroutine row's (scheduler, listener),
 * then this loop's Lua state; closed in the opposite order. */
static int drv_loop_open(ab__loop_t *l, char *err, size_t errlen) {
  int r = ab_driver_scripted_base(l->eng->cfg->protocol)->loop_open(l, err, errlen);
  if (r < 0) return r;
  l->drv_state = lx_loop_open(l->eng->drv->arg, l, err, errlen);
  return l->drv_state ? 0 : AB_ECONFIG;
}

static void drv_loop_close(ab__loop_t *l) {
  if (l->drv_state) lx_loop_close(l->eng->drv->arg, l->drv_state);
  l->drv_state = NULL;
  ab_driver_scripted_base(l->eng->cfg->protocol)->loop_close(l);
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
  /* the protocol's base row (streams: the coroutine row's scheduler,
   * listener, tick and pool returns; datagrams: callback udp's loop with a
   * scheduler), with the scenario's Lua driving each connection */
  lua_getfield(L, idx, "protocol");
  const ab_proto_cap_t *cap = lua_type(L, -1) == LUA_TSTRING ? ab_caps_protocol_named(lua_tostring(L, -1))
                                                             : ab_caps_protocol(AB_PROTO_TCP);
  lua_pop(L, 1);
  if (cap == NULL) {
    snprintf(err, errlen, "execution = \"lua\": unknown protocol");
    ab_lua_exec_free(x);
    return AB_ECONFIG;
  }
  x->dgram = cap->transport == AB_TRANSPORT_DATAGRAM;
  x->driver = *ab_driver_scripted_base(cap->id);
  x->driver.name = "lua";
  /* a lost connection is not reopened: its task sees the error and ends
   * (docs/execution.md) */
  x->driver.can_reopen = 0;
  x->driver.arg = x;
  x->driver.loop_open = drv_loop_open;
  x->driver.loop_close = drv_loop_close;
  x->driver.client_start = ab__lx_client_start;
  x->driver.wake = ab__lx_client_wake;
  x->driver.connect_expired = ab__lx_client_connect_expired;
  x->driver.accept = ab__lx_server_accept;
  if (x->dgram) { /* a socket per client, no connect, no listener of ours */
    x->driver.client_start = ab__lx_udp_client_start;
    x->driver.wake = ab__lx_udp_client_wake;
    x->driver.connect_expired = NULL;
    x->driver.accept = NULL;
  }
  *out = x;
  return 0;
nomem:
  snprintf(err, errlen, "execution = \"lua\": out of memory");
  ab_lua_exec_free(x);
  return AB_ENOMEM;
}

const ab_driver_t *ab_lua_exec_driver(const ab_lua_exec_t *x) { return &x->driver; }

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
