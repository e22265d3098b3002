/* lua_metrics.c -- the live-metrics listener for Lua (io/metrics_srv.h).
 *
 *   core.metrics_listen(host, port) -> srv, bound_port | nil, "ENAME: text", "ENAME"
 *   srv:set(text)        the text served from now on
 *   srv:scrapes() -> n   requests answered 200 so far
 *   srv:close()          stop serving (also when srv is collected)
 */
#include <lauxlib.h>

#include "io/metrics_srv.h"
#include "lua/lua_core.h"

#define MT "arkbench.metrics_srv"

typedef struct {
  ab_metrics_srv_t *srv;
} box_t;

static box_t *check(lua_State *L) { return luaL_checkudata(L, 1, MT); }

static int l_listen(lua_State *L) {
  const char *host = luaL_checkstring(L, 1);
  int port = (int)luaL_checkinteger(L, 2);
  box_t *b = lua_newuserdata(L, sizeof(*b));
  b->srv = NULL;
  luaL_getmetatable(L, MT);
  lua_setmetatable(L, -2);
  int bound = 0;
  int err = ab_metrics_srv_start(host, port, &b->srv, &bound);
  if (err != 0) return ab_lua_fail(L, err);
  lua_pushinteger(L, bound);
  return 2;
}

static int l_set(lua_State *L) {
  box_t *b = check(L);
  size_t len;
  const char *text = luaL_checklstring(L, 2, &len);
  if (b->srv) ab_metrics_srv_set(b->srv, text, len);
  return 0;
}

static int l_scrapes(lua_State *L) {
  box_t *b = check(L);
  lua_pushnumber(L, b->srv ? (lua_Number)ab_metrics_srv_scrapes(b->srv) : 0);
  return 1;
}

static int l_close(lua_State *L) {
  box_t *b = check(L);
  if (b->srv) ab_metrics_srv_stop(b->srv);
  b->srv = NULL;
  return 0;
}

void ab_lua_register_metrics(lua_State *L) {
  if (luaL_newmetatable(L, MT)) {
    static const luaL_Reg m[] = {{"set", l_set}, {"scrapes", l_scrapes}, {"close", l_close}, {NULL, NULL}};
    lua_newtable(L);
    for (const luaL_Reg *r = m; r->name; r++) {
      lua_pushcfunction(L, r->func);
      lua_setfield(L, -2, r->name);
    }
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_close);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, l_listen);
  lua_setfield(L, -2, "metrics_listen");
}
