/* lua_floor.c -- placeholder until the floor binding lands. */
#include "lua_core.h"

void ab_lua_register_floor(lua_State *L) { (void)L; }
