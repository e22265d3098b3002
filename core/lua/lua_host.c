/* lua_host.c -- the set-up every Lua state shares (see lua_host.h). */
#include "lua/lua_host.h"

#include <lauxlib.h>
#include <lualib.h>

#include "lua/lua_core.h"

extern int luaopen_cjson(lua_State *L);

void ab_lua_host_setup(lua_State *L, const char *root, const char *path, const char *cpath) {
  luaL_openlibs(L);
  lua_getglobal(L, "package");
  /* our tree first, then the system's (busted, penlight) */
  if (path) {
    lua_pushstring(L, path);
  } else if (root) {
    lua_getfield(L, -1, "path");
    lua_pushfstring(L, "%s/lua/?.lua;%s/lua/?/init.lua;%s", root, root, lua_tostring(L, -1));
    lua_remove(L, -2);
  } else {
    lua_getfield(L, -1, "path");
  }
  lua_setfield(L, -2, "path");
  if (cpath) {
    lua_pushstring(L, cpath);
    lua_setfield(L, -2, "cpath");
  }
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, luaopen_cjson);
  lua_setfield(L, -2, "cjson");
  lua_pushcfunction(L, ab_luaopen_core);
  lua_setfield(L, -2, "arkbench.core");
  lua_pop(L, 2);
  if (root) {
    lua_pushstring(L, root);
    lua_setglobal(L, "ARKBENCH_ROOT");
  }
}

int ab_lua_host_traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) msg = lua_tostring(L, -1);
    else msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}
