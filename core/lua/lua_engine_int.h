/* lua_engine_int.h -- what the three files of core.run_case share:
 * lua_engine.c (the binding: core.run_case, core.counters,
 * core.error_classes), lua_engine_cfg.c (the case table into an
 * ab_case_cfg_t) and lua_engine_result.c (an ab_result_t into the result
 * table, docs/run-object.md).  Not a public header. */
#ifndef AB_LUA_ENGINE_INT_H
#define AB_LUA_ENGINE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <lua.h>

#include "engine/engine.h"
#include "lua/lua_exec.h"

#define SETNUM(name, v) (lua_pushnumber(L, (double)(v)), lua_setfield(L, -2, name))

/* Strings the case config points into while the run goes: kept here, on
 * the C stack of l_run_case (Lua strings stay referenced by argument 1). */
struct case_strings_s {
  char alpn[512];
  char listen_host[256];
  char target_host[256];
  int listen_port; /* a server's real port once it listens (0: not yet) */
  int progress_fd; /* progress_fd, or -1 */
};
typedef struct case_strings_s case_strings_t;

/* processes = N: the group barrier of a client part (engine.h cfg->sync).
 * It writes "sync STAGE\n" on out_fd (the part's result channel, read by
 * the group's leader, lua/arkbench/run/group.lua) and reads "go NS\n" on
 * in_fd (its stdin): the CLOCK_MONOTONIC start of the next phase, common
 * to the group.  EOF (the leader is gone) is EPIPE; an interrupt EINTR. */
typedef struct {
  int out_fd, in_fd;
  char buf[128];
  size_t len;
  /* a shard on a wall-clock plan (--start-at, docs/distributed.md), when
   * out_fd < 0: the measure phase starts at plan_unix_ns (CLOCK_REALTIME)
   * and the warm-up lead_ns before it; an instant already past is now */
  int64_t plan_unix_ns, lead_ns;
} group_sync_t;

/* The case table at index 1 into cfg (lua_engine_cfg.c): its shape (protocol,
 * framing, execution, topology, sizes and phases), tls, udp, role, the
 * progress fd and the group fields of a part (bind into *bind, malloc'd:
 * the caller frees it, on failure too).  Request mode's keys are
 * lua_request.c's.  Returns NULL or what is wrong (in err or static). */
const char *ab_lua_case_read(lua_State *L, ab_case_cfg_t *cfg, case_strings_t *keep,
                             group_sync_t *gsync, struct sockaddr_storage **bind, char *err,
                             size_t errlen);

/* The result table of a run that happened, pushed (lua_engine_result.c);
 * execution = "lua": then the script's outcome set in it. */
void ab_lua_push_result(lua_State *L, const ab_case_cfg_t *cfg, const ab_result_t *r);
void ab_lua_push_script_outcome(lua_State *L, const ab_lua_exec_t *lx, const ab_result_t *r);

#endif
