/* lua_engine.c -- core.run_case(case) from Lua.
 *
 *   core.run_case{ protocol="tcp", framing="length"|"raw",
 *                  execution="callback", payload=, clients=, window=,
 *                  topology="sharded:N"|"shared:N"|"pool:N", work=, warmup=,
 *                  duration=, timeout= }
 *     execution="lua" also reads scenario_path, scenario_sets, quick, index
 *     and case_id (core/lua/lua_exec.h); its result may hold script_error =
 *     true (status "script_error") and local_errors.ESCRIPT.
 *     -> result | nil, "ECONFIG: ...", "ECONFIG"
 *
 * result holds the measured fields of a run object (docs/run-object.md):
 * ok, status ("ok", "degraded" or "failed": the engine's judgement; the
 * worker adds script_error, interrupted and max_error_rate), error, sent, completed, drained, timed_out, message_errors,
 * unfinished, warmup_completed, measured_s, round_trips_per_s,
 * payload_mib_per_s, rtt_us {min p50 p90 p95 p99 p999 max mean stdev count},
 * rtt_histogram, connect_us, connect_histogram, cpu_percent, cpu_user_s,
 * cpu_sys_s, cpu_machine_percent, rss_peak_bytes, rss_end_bytes,
 * errors {CLASS = count} (the peer's), local_errors {NAME = count} (ours),
 * error_reasons {KEY = first failure}, loops, workers, model, connections_per_loop,
 * notes, logical_cpus, load_model.  The fields of an empty RTT stat (count
 * 0) and an interval's percentiles without RTTs are null (cjson.null).
 * The call blocks for the length of the run; it makes no Lua call while
 * the run is going.
 *
 *   progress_fd = n (client roles): each finished interval but the last is
 *     written on fd n while the run goes, one JSON line
 *     {"interval":0,"intervals":10,"t_s":0,"duration_s":1,"sent":..,
 *      "completed":..,"errors":..,"timed_out":..,"round_trips_per_s":..,
 *      "p50_us":..,"p99_us":..,"max_us":..} (the live line's; the fd is
 *     made non-blocking: a line the reader does not take is dropped).
 *
 * The case table is read in lua_engine_cfg.c (with lua_request.c for
 * request mode's keys), the result table pushed in lua_engine_result.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "base/ab_error.h"
#include "base/coro.h"
#include "drivers/registry.h"
#include "engine/engine.h"
#include "lua/lua_core.h"
#include "lua/lua_exec.h"
#include "lua/lua_request.h"
#include "lua/lua_engine_int.h"

static int config_error(lua_State *L, const char *msg) {
  lua_pushnil(L);
  lua_pushfstring(L, "ECONFIG: %s", msg);
  lua_pushliteral(L, "ECONFIG");
  return 3;
}

static int l_run_case(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  ab_case_cfg_t cfg;
  case_strings_t keep;
  char err[256];
  memset(&cfg, 0, sizeof(cfg));
  memset(&keep, 0, sizeof(keep));
  group_sync_t gsync;
  memset(&gsync, 0, sizeof(gsync));
  struct sockaddr_storage *bind = NULL;
  const char *bad = ab_lua_case_read(L, &cfg, &keep, &gsync, &bind, err, sizeof(err));
  if (bad) {
    free(bind);
    return config_error(L, bad);
  }
  ab_lua_requests_t reqs;
  if (ab_lua_read_request(L, &cfg, &reqs, err, sizeof(err)) != 0) {
    ab_lua_requests_free(&reqs);
    free(bind);
    return config_error(L, err);
  }
  /* execution = "lua": the scenario's Lua code drives the connections
   * (lua_exec.c); the run table says which scenario, sets and case */
  ab_lua_exec_t *lx = NULL;
  if (cfg.execution == AB_EXEC_HOOKS) {
    if (ab_lua_exec_new(L, 1, &lx, err, sizeof(err)) != 0) {
      ab_lua_requests_free(&reqs);
      free(bind);
      return config_error(L, err);
    }
    cfg.driver = ab_lua_exec_driver(lx);
    cfg.tagged = 1; /* conn:call(req, expect, tag), message -> bytes, tag */
  } else {
    cfg.driver = ab_driver_for(cfg.protocol, cfg.execution);
  }
  if (ab_case_check(&cfg, err, sizeof(err)) != 0) {
    ab_lua_exec_free(lx);
    ab_lua_requests_free(&reqs);
    free(bind);
    return config_error(L, err);
  }
  ab_result_t *r = malloc(sizeof(*r));
  if (r == NULL) {
    ab_lua_exec_free(lx);
    ab_lua_requests_free(&reqs);
    free(bind);
    return ab_lua_fail(L, AB_ENOMEM);
  }
  int rc = ab_run_case(&cfg, r);
  /* ARKBENCH_CORO_STACK_USE=1: the deepest coroutine stack of the process
   * so far (base/coro.h), for sizing coroutine_stack (docs/execution.md) */
  if (ab_coro_stack_peak() > 0)
    fprintf(stderr, "arkbench: coroutine stack high-water: %zu bytes\n", ab_coro_stack_peak());
  if (rc < 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", ab_err_name(rc), r->error);
    lua_pushstring(L, ab_err_name(rc));
  } else {
    ab_lua_push_result(L, &cfg, r);
    if (keep.listen_port > 0) SETNUM("listen_port", keep.listen_port);
    if (lx) ab_lua_push_script_outcome(L, lx, r);
  }
  ab_result_free(r);
  free(r);
  free(bind);
  ab_lua_exec_free(lx);
  ab_lua_requests_free(&reqs);
  return rc < 0 ? 3 : 1;
}

/* core.counters() -> { {name=, merge="sum"|"max", group="run"|"datagram",
 * doc=}, ... } in table order: the one declaration of engine/counters.h,
 * for the docs spec and anyone listing the run object's counts. */
static int l_counters(lua_State *L) {
  lua_newtable(L);
  int i = 0;
#define PUSH_ROW(name, merge, grp, doc)                                              \
  lua_newtable(L);                                                                   \
  lua_pushliteral(L, #name);                                                         \
  lua_setfield(L, -2, "name");                                                       \
  lua_pushstring(L, (merge) == AB_MERGE_MAX ? "max" : "sum");                        \
  lua_setfield(L, -2, "merge");                                                      \
  lua_pushstring(L, (grp) == AB_GROUP_DATAGRAM ? "datagram" : (grp) == AB_GROUP_H2 ? "h2" : "run");                \
  lua_setfield(L, -2, "group");                                                      \
  lua_pushliteral(L, doc);                                                           \
  lua_setfield(L, -2, "doc");                                                        \
  lua_rawseti(L, -2, ++i);
  AB_COUNTERS(PUSH_ROW)
#undef PUSH_ROW
  return 1;
}

/* core.error_classes() -> { {key=, kind=, doc=}, ... } in table order: the
 * one declaration of base/ab_error.h's AB_ERROR_CLASSES, for the docs spec
 * and the terminal. */
static int l_error_classes(lua_State *L) {
  lua_newtable(L);
  int i = 0;
#define PUSH_CLASS(key, kind, doc)                                                   \
  lua_newtable(L);                                                                   \
  lua_pushliteral(L, key);                                                           \
  lua_setfield(L, -2, "key");                                                        \
  lua_pushliteral(L, kind);                                                          \
  lua_setfield(L, -2, "kind");                                                       \
  lua_pushliteral(L, doc);                                                           \
  lua_setfield(L, -2, "doc");                                                        \
  lua_rawseti(L, -2, ++i);
  AB_ERROR_CLASSES(PUSH_CLASS)
#undef PUSH_CLASS
  return 1;
}

void ab_lua_register_engine(lua_State *L) {
  lua_pushcfunction(L, l_error_classes);
  lua_setfield(L, -2, "error_classes");
  lua_pushcfunction(L, l_run_case);
  lua_setfield(L, -2, "run_case");
  lua_pushcfunction(L, l_counters);
  lua_setfield(L, -2, "counters");
}
