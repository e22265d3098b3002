/* lua_engine.c -- placeholder until the engine binding lands. */
#include "lua_core.h"

void ab_lua_register_engine(lua_State *L) { (void)L; }
