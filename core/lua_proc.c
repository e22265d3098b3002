/* lua_proc.c -- placeholder until the proc binding lands. */
#include "lua_core.h"

void ab_lua_register_proc(lua_State *L) { (void)L; }
