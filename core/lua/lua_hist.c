/* lua_hist.c -- histogram encodings from Lua: merge and summarise.
 *
 *   core.hist_merge({enc1, enc2, ...}) -> enc | nil, err, code
 *   core.hist_summary(enc) -> { count=, overflow=, min=, p50=, p90=, p95=,
 *                               p99=, p999=, max=, mean=, stdev= } (µs)
 *                             | nil, err, code
 *   core.hist_percentile(enc, pct) -> µs | nil, err, code
 * Values are microseconds as Lua numbers (exact to the nanosecond);
 * count/overflow are integers.  An empty histogram's summary has count = 0
 * and every other field nil ("no data", written as JSON null).
 */
#include <stdlib.h>

#include <lauxlib.h>

#include "base/ab_error.h"
#include "base/histogram.h"
#include "lua/lua_core.h"

static int push_encoded(lua_State *L, const ab_hist_t *h) {
  size_t need = ab_hist_encode(h, NULL, 0);
  char *buf = malloc(need + 1);
  if (buf == NULL) return ab_lua_fail(L, AB_ENOMEM);
  ab_hist_encode(h, buf, need + 1);
  lua_pushlstring(L, buf, need);
  free(buf);
  return 1;
}

static int l_hist_merge(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  ab_hist_t *acc = malloc(2 * sizeof(ab_hist_t));
  if (acc == NULL) return ab_lua_fail(L, AB_ENOMEM);
  ab_hist_t *one = acc + 1;
  ab_hist_init(acc);
  int n = (int)lua_objlen(L, 1);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, i);
    const char *s = lua_tostring(L, -1);
    if (s == NULL || ab_hist_decode(one, s) != 0) {
      free(acc);
      lua_pushnil(L);
      lua_pushfstring(L, "EINVAL: histogram %d is not a valid encoding", i);
      lua_pushliteral(L, "EINVAL");
      return 3;
    }
    lua_pop(L, 1);
    ab_hist_merge(acc, one);
  }
  int r = push_encoded(L, acc);
  free(acc);
  return r;
}

static void set_us(lua_State *L, const char *k, uint64_t ns) {
  lua_pushnumber(L, (double)ns / 1000.0);
  lua_setfield(L, -2, k);
}

static int decode_arg(lua_State *L, ab_hist_t *h) {
  const char *s = luaL_checkstring(L, 1);
  return ab_hist_decode(h, s);
}

static int l_hist_summary(lua_State *L) {
  ab_hist_t *h = malloc(sizeof(*h));
  if (h == NULL) return ab_lua_fail(L, AB_ENOMEM);
  if (decode_arg(L, h) != 0) {
    free(h);
    return ab_lua_fail(L, AB_EINVAL);
  }
  lua_newtable(L);
  lua_pushnumber(L, (double)h->count);
  lua_setfield(L, -2, "count");
  lua_pushnumber(L, (double)h->overflow);
  lua_setfield(L, -2, "overflow");
  if (h->count > 0) {
    set_us(L, "min", h->min);
    set_us(L, "p50", ab_hist_percentile(h, 50));
    set_us(L, "p90", ab_hist_percentile(h, 90));
    set_us(L, "p95", ab_hist_percentile(h, 95));
    set_us(L, "p99", ab_hist_percentile(h, 99));
    set_us(L, "p999", ab_hist_percentile(h, 99.9));
    set_us(L, "max", h->max);
    lua_pushnumber(L, ab_hist_mean(h) / 1000.0);
    lua_setfield(L, -2, "mean");
    lua_pushnumber(L, ab_hist_stdev(h) / 1000.0);
    lua_setfield(L, -2, "stdev");
  }
  free(h);
  return 1;
}

static int l_hist_percentile(lua_State *L) {
  double pct = luaL_checknumber(L, 2);
  ab_hist_t *h = malloc(sizeof(*h));
  if (h == NULL) return ab_lua_fail(L, AB_ENOMEM);
  if (decode_arg(L, h) != 0) {
    free(h);
    return ab_lua_fail(L, AB_EINVAL);
  }
  if (h->count == 0) lua_pushnil(L);
  else lua_pushnumber(L, (double)ab_hist_percentile(h, pct) / 1000.0);
  free(h);
  return 1;
}

void ab_lua_register_hist(lua_State *L) {
  lua_pushcfunction(L, l_hist_merge);
  lua_setfield(L, -2, "hist_merge");
  lua_pushcfunction(L, l_hist_summary);
  lua_setfield(L, -2, "hist_summary");
  lua_pushcfunction(L, l_hist_percentile);
  lua_setfield(L, -2, "hist_percentile");
}
