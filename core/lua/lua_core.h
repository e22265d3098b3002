/* lua_core.h -- the `arkbench.core` Lua module: one table filled by several
 * glue files, one per concern.  Each ab_lua_register_* sets its functions on
 * the table at the top of the stack.
 *
 * Lua error convention (as luv): a failure the caller should handle returns
 * `nil, "ENAME: text", "ENAME"`; misuse (wrong argument types) raises with
 * luaL_argerror.
 */
#ifndef AB_LUA_CORE_H
#define AB_LUA_CORE_H

#include <lua.h>

int ab_luaopen_core(lua_State *L);

void ab_lua_register_hist(lua_State *L);   /* lua_hist.c   */
void ab_lua_register_sys(lua_State *L);    /* lua_sys.c    */
void ab_lua_register_engine(lua_State *L); /* lua_engine.c */
void ab_lua_register_proc(lua_State *L);   /* lua_proc.c   */
void ab_lua_register_floor(lua_State *L);  /* lua_floor.c  */
void ab_lua_register_caps(lua_State *L);   /* lua_caps.c   */
void ab_lua_register_fs(lua_State *L);     /* lua_fs.c     */
void ab_lua_register_tls(lua_State *L);    /* lua_tls.c    */
void ab_lua_register_child(lua_State *L);  /* lua_child.c  */
void ab_lua_register_metrics(lua_State *L); /* lua_metrics.c */

/* Pushes nil, "ENAME: text", "ENAME" for err and returns 3. */
int ab_lua_fail(lua_State *L, int err);

/* The list of strings at stack index idx -> a NULL-terminated array in a
 * userdata left on the stack; the strings stay owned by the table.  Raises
 * (argument arg, named what) on a non-string, or on an empty list with
 * need_one (lua_proc.c). */
const char **ab_lua_string_list(lua_State *L, int idx, int arg, const char *what, int need_one);

#endif
