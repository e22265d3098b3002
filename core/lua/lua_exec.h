/* lua_exec.h -- execution = "lua": connections driven by the scenario's own
 * Lua code (the user reference is docs/lua-api.md).
 *
 * The engine (engine.h) keeps topology, phases, timing and accounting and
 * calls the driver this module provides (ab_driver_t, engine/driver.h).  Each loop gets
 * its own lua_State (Lua states are not shared between threads), made on
 * the coordinator thread in loop_open, used only on that loop's thread
 * while the loop runs, and closed in loop_close after the loop ended.
 *
 * Lifetime: ab_lua_exec_new() before ab_run_case(), ab_lua_exec_free()
 * after it returned (the driver points into the object).
 *
 * Errors: functions return 0 or a negative ab_error.h code with a sentence
 * in err[0..errlen).  A Lua error inside a hook never escapes: it is
 * counted here as a script error (with file:line and a traceback), every
 * loop stops driving its connections at once, and the run ends with the
 * loop's first error set (so ok = false).
 */
#ifndef AB_LUA_EXEC_H
#define AB_LUA_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include <lua.h>

#include "engine/engine.h"

typedef struct ab_lua_exec_s ab_lua_exec_t;

/* Reads, from the run table at index idx of L: scenario_path (string,
 * required), scenario_sets (list of "key=value" strings), quick (boolean),
 * index (the case's 1-based index in the expanded matrix, which picks the
 * scenario part) and case_id (checked against that index).  Copies L's
 * package.path, package.cpath and ARKBENCH_ROOT for the loop states.
 * 0, AB_ECONFIG or AB_ENOMEM (err says why). */
int ab_lua_exec_new(lua_State *L, int idx, ab_lua_exec_t **out, char *err, size_t errlen);

/* The driver to put in ab_case_cfg_t.driver (valid until ab_lua_exec_free). */
const ab_driver_t *ab_lua_exec_driver(const ab_lua_exec_t *x);

/* After the run: the number of script errors, and in *first the full
 * message of the first one (file:line, message, traceback), or NULL. */
int ab_lua_exec_script_errors(const ab_lua_exec_t *x, const char **first);

/* After the run: bytes of the replies of measure-phase round trips that
 * completed inside [start, deadline] (for payload_mib_per_s). */
uint64_t ab_lua_exec_reply_bytes(const ab_lua_exec_t *x);

void ab_lua_exec_free(ab_lua_exec_t *x);

#endif
