/* lua_exec_task.c -- execution = "lua": script errors, and the Lua task
 * kind (AB_TASK_LUA) that runs a client/server function as a coroutine on
 * the loop's scheduler (scheduler.h).
 *
 * Errors.  Every C->Lua call is protected: lua_resume for tasks (the
 * traceback is taken from the dead coroutine), lua_pcall with a traceback
 * handler for the light form.  A Lua error is a script error: its message
 * (file:line, text, traceback) is kept, the loop's first error is set, and
 * every loop is told (uv_async) to stop driving connections: in-flight
 * round trips count as unfinished, tasks are cancelled, clients closed.
 * ab__engine_abort() then ends the run at once (not at its deadline), with the counts so
 * far.  IO failures return nil, "ENAME: text", "ENAME" to Lua (luv style);
 * a client connection's failure is also the run's error, as in the
 * built-in echo.  Cancellation (STOP, a reply timeout) ends a Lua task
 * without resuming its coroutine: the coroutine is dropped, its sleep
 * timer closed, nothing of it is pending in libuv.
 */
#include "lua/lua_exec_int.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

void ab__lx_close_noop(uv_handle_t *h) { (void)h; }

/* ---- script errors -------------------------------------------------- */

/* Records a script error (msg: file:line, text, traceback) and tells every
 * loop to stop driving its connections.  This loop stops at once from its
 * own async callback, outside whatever Lua call failed. */
void ab__lx_script_error(ab__lx_loop_t *lx, const char *msg) {
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
  /* and the coordinator stops waiting for the deadline: the run ends now */
  ab__engine_abort(l);
}

/* The error of a coroutine that died (its message on top of co). */
static void coroutine_error(ab__lx_loop_t *lx, lua_State *co) {
  lua_State *L = lx->L;
  const char *msg = lua_tostring(co, -1);
  if (msg == NULL) msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(co, -1));
  else lua_pushnil(L); /* keeps the pop count the same */
  luaL_traceback(L, co, msg, 0);
  ab__lx_script_error(lx, lua_tostring(L, -1));
  lua_pop(L, 2);
}

/* ---- the Lua task kind ------------------------------------------------ */

static int lx_resume(ab_task_t *t) {
  ab__lx_conn_t *k = ab_task_ctx(t);
  ab__lx_loop_t *lx = k->lx;
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
    ab__lx_script_error(lx, lua_tostring(lx->L, -1));
    lua_pop(lx->L, 2);
    return 1;
  }
  if (st != 0) coroutine_error(lx, k->co);
  return 1;
}

static void lx_release(ab_task_t *t) {
  ab__lx_conn_t *k = ab_task_ctx(t);
  ab__lx_loop_t *lx = k->lx;
  if (k->co_ref != LUA_NOREF) luaL_unref(lx->L, LUA_REGISTRYINDEX, k->co_ref);
  k->co_ref = LUA_NOREF;
  k->co = NULL;
  k->task = NULL;
  k->waiting = 0;
  if (k->timer_open) {
    k->timer_open = 0;
    uv_close((uv_handle_t *)&k->timer, ab__lx_close_noop);
  }
}

static const ab_task_kind_t lua_kind = {AB_TASK_LUA, "lua", lx_resume, lx_release};

/* Makes the task running fn_ref(conn) for k; 0 or an error code. */
int ab__lx_task_new(ab__lx_loop_t *lx, ab__lx_conn_t *k, int fn_ref) {
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
  int r = ab_task_new(lx->l->d->sched, &k->task, &lua_kind, k);
  if (r < 0) {
    luaL_unref(L, LUA_REGISTRYINDEX, k->co_ref);
    k->co_ref = LUA_NOREF;
    k->co = NULL;
    k->task = NULL;
  }
  return r;
}
