/* registry.h -- which driver runs a protocol in an execution mode.
 *
 * The layer above the engine (core/lua/lua_engine.c) picks the driver when
 * it builds the case and puts it in ab_case_cfg_t.driver; the engine never
 * chooses.  The Lua driver is not a row here: core/lua/lua_exec.c builds it
 * on the row ab_driver_scripted_base() gives.
 */
#ifndef AB_REGISTRY_H
#define AB_REGISTRY_H

#include "engine/driver.h"

/* The row for protocol (AB_PROTO_*) and execution (AB_EXEC_CALLBACK or
 * AB_EXEC_COROUTINE), or NULL when no built-in driver runs that pair
 * (ab_case_check then refuses the case).  The rows are static and
 * read-only. */
const ab_driver_t *ab_driver_for(int protocol, int execution);

/* The row a driver built outside the registry (execution = "lua") builds
 * on for protocol: its loop halves (scheduler, server side, buffers) and
 * per-case setup; the coroutine row for a stream, the scripted udp row
 * (callback udp's loop with a scheduler) for a datagram protocol.  NULL
 * for an unknown protocol. */
const ab_driver_t *ab_driver_scripted_base(int protocol);

#endif
