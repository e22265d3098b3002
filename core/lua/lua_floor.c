/* lua_floor.c -- the floor echo (floor.h) from Lua.
 *
 *   core.floor_run{payload=, clients=, window=, warmup=, duration=}
 *     -> { round_trips=, elapsed_s=, round_trips_per_s=, mean_rtt_us=,
 *          cpu_user_s=, cpu_sys_s= }
 *      | nil, err, code
 *
 * payload (bytes), clients and window are required integers; warmup and
 * duration are seconds, defaulting to 0.25 and 1 as in a scenario.  The call
 * blocks this thread for about warmup + duration seconds.  A value out of
 * range returns nil, "ECONFIG: bad run configuration: <field> must be ...",
 * "ECONFIG"; a socket failure returns nil, "EMFILE: too many open files",
 * "EMFILE" and the like.  mean_rtt_us (Little's law) is nil when no round
 * trip completed.  A non-table argument, a field of the wrong type, a
 * fractional count or an unknown field raises (misuse).
 */
#include <math.h>
#include <string.h>

#include <lauxlib.h>

#include "base/ab_error.h"
#include "io/floor.h"
#include "lua/lua_core.h"

static const char *const known[] = {"payload", "clients",  "window",
                                    "warmup",  "duration", NULL};

/* Field `key` of the table at index 1 as a number; `def` when absent
 * (def < 0 means required). */
static double get_number(lua_State *L, const char *key, double def) {
  lua_getfield(L, 1, key);
  double v = def;
  if (lua_isnil(L, -1)) {
    if (def < 0)
      luaL_argerror(L, 1, lua_pushfstring(L, "field '%s' is required", key));
  } else if (lua_type(L, -1) != LUA_TNUMBER) {
    luaL_argerror(L, 1,
                  lua_pushfstring(L, "field '%s' must be a number, got %s", key,
                                  luaL_typename(L, -1)));
  } else {
    v = lua_tonumber(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

/* A whole number, mapped into [0, max + 1] so that out-of-range values stay
 * out of range for ab_floor_check (which names the field and its range). */
static double get_count(lua_State *L, const char *key, double max) {
  double v = get_number(L, key, -1);
  if (v != v || floor(v) != v)
    luaL_argerror(L, 1,
                  lua_pushfstring(L, "field '%s' must be an integer", key));
  if (v < 0) return 0;
  if (v > max) return max + 1;
  return v;
}

/* Misspelt fields would silently fall back to defaults: refuse them. */
static void check_keys(lua_State *L) {
  lua_pushnil(L);
  while (lua_next(L, 1) != 0) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_argerror(
          L, 1, lua_pushfstring(L, "unexpected %s key", luaL_typename(L, -1)));
    const char *k = lua_tostring(L, -1);
    int ok = 0;
    for (int i = 0; known[i] != NULL; i++)
      if (strcmp(k, known[i]) == 0) ok = 1;
    if (!ok)
      luaL_argerror(L, 1,
                    lua_pushfstring(L,
                                    "unknown field '%s' (expected "
                                    "payload, clients, window, warmup, "
                                    "duration)",
                                    k));
  }
}

static void set_number(lua_State *L, const char *k, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, k);
}

static int l_floor_run(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  check_keys(L);
  ab_floor_cfg_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.payload = (size_t)get_count(L, "payload", (double)AB_FLOOR_MAX_PAYLOAD);
  cfg.clients = (int)get_count(L, "clients", AB_FLOOR_MAX_CLIENTS);
  cfg.window = (int)get_count(L, "window", AB_FLOOR_MAX_WINDOW);
  cfg.warmup_s = get_number(L, "warmup", 0.25);
  cfg.duration_s = get_number(L, "duration", 1.0);

  const char *why = NULL;
  if (ab_floor_check(&cfg, &why) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s: %s", ab_err_name(AB_ECONFIG),
                    ab_strerror(AB_ECONFIG), why);
    lua_pushstring(L, ab_err_name(AB_ECONFIG));
    return 3;
  }

  ab_floor_result_t r;
  int err = ab_floor_run(&cfg, &r);
  if (err != 0) return ab_lua_fail(L, err);

  lua_createtable(L, 0, 6);
  set_number(L, "round_trips", (double)r.round_trips);
  set_number(L, "elapsed_s", r.elapsed_s);
  set_number(L, "round_trips_per_s", r.round_trips_per_s);
  if (r.round_trips > 0) set_number(L, "mean_rtt_us", r.mean_rtt_us);
  set_number(L, "cpu_user_s", r.cpu_user_s);
  set_number(L, "cpu_sys_s", r.cpu_sys_s);
  return 1;
}

void ab_lua_register_floor(lua_State *L) {
  lua_pushcfunction(L, l_floor_run);
  lua_setfield(L, -2, "floor_run");
}
