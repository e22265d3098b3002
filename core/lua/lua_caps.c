/* lua_caps.c -- core.capabilities(): the capability table (proto/caps.h)
 * as plain Lua tables, for lua/arkbench/scenario/check.lua.
 *
 *   core.capabilities() -> {
 *     protocols = { { name = "tcp", transport = "stream" | "datagram",
 *                     tls = boolean, codec = "framing" | "ws" | "http" | "h2" | nil,
 *                     streams = true | nil,   -- a stream per message (h2, h2c)
 *                     alpn = "h2" | nil,      -- the ALPN a TLS row requires
 *                     executions = { "callback", ... },
 *                     shared_executions = { ... },  -- on shared:N, N > 1
 *                     churn_executions = { ... },   -- requests_per_connection
 *                     payload_max = bytes },
 *                   ... },                 -- in the order users see them
 *     executions = { "callback", "coroutine", "lua" },
 *     framings = { "length", "raw" },
 *     models = { "sharded", "shared", "pool" },   -- topology = "MODEL:N"
 *     limits = { payload_min, payload_max, clients_min, clients_max,
 *                window_min, window_max, threads_min, threads_max, work_max,
 *                inflight_max, coroutine_stack_min, coroutine_stack_max,
 *                coroutine_stack_default (bytes), open_loop = boolean,
 *                requests_per_connection_max, connect_rate_max, rate_max,
 *                churn_shared = boolean },
 *   }
 * A fresh table on every call: the caller may keep or change it.
 */
#include <lauxlib.h>

#include "lua/lua_core.h"
#include "proto/caps.h"

static void push_names(lua_State *L, const ab_cap_name_t *tab, size_t n) {
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, tab[i].name);
    lua_rawseti(L, -2, (int)i + 1);
  }
}

#define SETNUM(name, v) (lua_pushnumber(L, (double)(v)), lua_setfield(L, -2, name))

static void push_protocol(lua_State *L, const ab_proto_cap_t *p, const ab_cap_name_t *execs,
                          size_t nexec) {
  lua_createtable(L, 0, 7);
  lua_pushstring(L, p->name);
  lua_setfield(L, -2, "name");
  lua_pushstring(L, p->transport == AB_TRANSPORT_DATAGRAM ? "datagram" : "stream");
  lua_setfield(L, -2, "transport");
  lua_pushboolean(L, p->tls);
  lua_setfield(L, -2, "tls");
  if (p->codec) {
    lua_pushstring(L, p->codec);
    lua_setfield(L, -2, "codec");
  }
  lua_newtable(L);
  int k = 0;
  for (size_t i = 0; i < nexec; i++) {
    if (!ab_caps_runs(p, execs[i].id)) continue;
    lua_pushstring(L, execs[i].name);
    lua_rawseti(L, -2, ++k);
  }
  lua_setfield(L, -2, "executions");
  lua_newtable(L);
  k = 0;
  for (size_t i = 0; i < nexec; i++) {
    if (!ab_caps_runs_shared(p, execs[i].id)) continue;
    lua_pushstring(L, execs[i].name);
    lua_rawseti(L, -2, ++k);
  }
  lua_setfield(L, -2, "shared_executions");
  lua_newtable(L);
  k = 0;
  for (size_t i = 0; i < nexec; i++) {
    if (!ab_caps_runs_churn(p, execs[i].id)) continue;
    lua_pushstring(L, execs[i].name);
    lua_rawseti(L, -2, ++k);
  }
  lua_setfield(L, -2, "churn_executions");
  SETNUM("payload_max", p->payload_max);
  if (p->streams) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "streams");
  }
  if (p->alpn) {
    lua_pushstring(L, p->alpn);
    lua_setfield(L, -2, "alpn");
  }
}

static int l_capabilities(lua_State *L) {
  size_t nproto, nexec, nframing, nmodel;
  const ab_proto_cap_t *protos = ab_caps_protocols(&nproto);
  const ab_cap_name_t *execs = ab_caps_executions(&nexec);
  const ab_cap_name_t *framings = ab_caps_framings(&nframing);
  const ab_cap_name_t *models = ab_caps_models(&nmodel);
  const ab_caps_limits_t *lim = ab_caps_limits();
  lua_createtable(L, 0, 5);
  lua_createtable(L, (int)nproto, 0);
  for (size_t i = 0; i < nproto; i++) {
    push_protocol(L, &protos[i], execs, nexec);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_setfield(L, -2, "protocols");
  push_names(L, execs, nexec);
  lua_setfield(L, -2, "executions");
  push_names(L, framings, nframing);
  lua_setfield(L, -2, "framings");
  push_names(L, models, nmodel);
  lua_setfield(L, -2, "models");
  lua_createtable(L, 0, 11);
  SETNUM("payload_min", lim->payload_min);
  SETNUM("payload_max", lim->payload_max);
  SETNUM("clients_min", lim->clients_min);
  SETNUM("clients_max", lim->clients_max);
  SETNUM("window_min", lim->window_min);
  SETNUM("window_max", lim->window_max);
  SETNUM("threads_min", lim->threads_min);
  SETNUM("threads_max", lim->threads_max);
  SETNUM("work_max", lim->work_max);
  SETNUM("inflight_max", lim->inflight_max);
  SETNUM("coroutine_stack_min", lim->coroutine_stack_min);
  SETNUM("coroutine_stack_max", lim->coroutine_stack_max);
  SETNUM("coroutine_stack_default", lim->coroutine_stack_default);
  lua_pushboolean(L, lim->open_loop);
  lua_setfield(L, -2, "open_loop");
  SETNUM("requests_per_connection_max", lim->requests_per_connection_max);
  SETNUM("connect_rate_max", lim->connect_rate_max);
  SETNUM("rate_max", lim->rate_max);
  lua_pushboolean(L, lim->churn_shared);
  lua_setfield(L, -2, "churn_shared");
  lua_setfield(L, -2, "limits");
  return 1;
}

void ab_lua_register_caps(lua_State *L) {
  lua_pushcfunction(L, l_capabilities);
  lua_setfield(L, -2, "capabilities");
}
