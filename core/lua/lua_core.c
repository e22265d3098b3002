/* lua_core.c -- builds the `arkbench.core` table. */
#include "lua/lua_core.h"

#include <lauxlib.h>

#include "base/ab_error.h"

int ab_lua_fail(lua_State *L, int err) {
  lua_pushnil(L);
  lua_pushfstring(L, "%s: %s", ab_err_name(err), ab_strerror(err));
  lua_pushstring(L, ab_err_name(err));
  return 3;
}

int ab_luaopen_core(lua_State *L) {
  lua_newtable(L);
  ab_lua_register_hist(L);
  ab_lua_register_sys(L);
  ab_lua_register_engine(L);
  ab_lua_register_proc(L);
  ab_lua_register_floor(L);
  ab_lua_register_caps(L);
  ab_lua_register_fs(L);
  ab_lua_register_tls(L);
  ab_lua_register_child(L);
  ab_lua_register_metrics(L);
  return 1;
}
