/* caps.c -- the capability table (see caps.h). */
#include "proto/caps.h"

#include <string.h>

#include "proto/framing.h"

#define ALL_EXECS (AB_EXEC_BIT(AB_EXEC_CALLBACK) | AB_EXEC_BIT(AB_EXEC_COROUTINE))
#define STREAM AB_TRANSPORT_STREAM
#define SHARED_EXECS ALL_EXECS

/* Scenario order (docs/scenarios.md).  execution = "lua" drives tcp and
 * tls (its connections are io/conn.h's, TLS below the bytes Lua sees) and
 * udp (one datagram per send, core/lua/lua_exec_udp.c); a row gains
 * AB_EXEC_BIT(AB_EXEC_HOOKS) when the Lua driver runs over it.
 * The coroutine echo is stream-only.  The last column: what shared:N with
 * N > 1 runs (docs/topologies.md): callback and coroutine over the stream
 * protocols; the rest (udp, execution = "lua") is refused.  After it, what
 * runs requests_per_connection (churn: the stream protocols in callback and
 * coroutine execution; udp has no connection to replace, and a Lua client
 * owns its connection). */
static const ab_proto_cap_t protocols[] = {
    {"tcp", AB_PROTO_TCP, STREAM, 0, "framing", ALL_EXECS | AB_EXEC_BIT(AB_EXEC_HOOKS),
     AB_MSG_MAX_PAYLOAD, SHARED_EXECS, ALL_EXECS, 0, NULL},
    {"udp", AB_PROTO_UDP, AB_TRANSPORT_DATAGRAM, 0, NULL,
     AB_EXEC_BIT(AB_EXEC_CALLBACK) | AB_EXEC_BIT(AB_EXEC_HOOKS), AB_UDP_MAX_PAYLOAD, 0, 0, 0, NULL},
    {"ws", AB_PROTO_WS, STREAM, 0, "ws", ALL_EXECS, AB_MSG_MAX_PAYLOAD, SHARED_EXECS, ALL_EXECS, 0, NULL},
    {"tls", AB_PROTO_TLS, STREAM, 1, "framing", ALL_EXECS | AB_EXEC_BIT(AB_EXEC_HOOKS),
     AB_MSG_MAX_PAYLOAD, SHARED_EXECS, ALL_EXECS, 0, NULL},
    {"wss", AB_PROTO_WSS, STREAM, 1, "ws", ALL_EXECS, AB_MSG_MAX_PAYLOAD, SHARED_EXECS, ALL_EXECS, 0, NULL},
    {"http", AB_PROTO_HTTP, STREAM, 0, "http", ALL_EXECS, AB_MSG_MAX_PAYLOAD, SHARED_EXECS, ALL_EXECS, 0, NULL},
    {"https", AB_PROTO_HTTPS, STREAM, 1, "http", ALL_EXECS, AB_MSG_MAX_PAYLOAD, SHARED_EXECS, ALL_EXECS, 0, NULL},
    /* HTTP/2 (proto/h2.h): callback execution (coroutine and lua refused:
     * docs/protocols.md), a stream per message, churn refused */
    {"h2", AB_PROTO_H2, STREAM, 1, "h2", AB_EXEC_BIT(AB_EXEC_CALLBACK), AB_MSG_MAX_PAYLOAD,
     AB_EXEC_BIT(AB_EXEC_CALLBACK), 0, 1, "h2"},
    {"h2c", AB_PROTO_H2C, STREAM, 0, "h2", AB_EXEC_BIT(AB_EXEC_CALLBACK), AB_MSG_MAX_PAYLOAD,
     AB_EXEC_BIT(AB_EXEC_CALLBACK), 0, 1, NULL},
};

static const ab_cap_name_t executions[] = {
    {"callback", AB_EXEC_CALLBACK},
    {"coroutine", AB_EXEC_COROUTINE},
    {"lua", AB_EXEC_HOOKS},
};

static const ab_cap_name_t framings[] = {
    {"length", AB_FRAMING_LENGTH},
    {"raw", AB_FRAMING_RAW},
};

static const ab_cap_name_t models[] = {
    {"sharded", AB_MODEL_SHARDED},
    {"shared", AB_MODEL_SHARED},
    {"pool", AB_MODEL_POOL},
};

static const ab_caps_limits_t limits = {
    .payload_min = AB_MSG_MIN_PAYLOAD,
    .payload_max = AB_MSG_MAX_PAYLOAD,
    .clients_min = 1,
    .clients_max = 100000,
    .window_min = 1,
    .window_max = 4096,
    .threads_min = 1,
    .threads_max = 256,
    .work_max = 10000000,
    .inflight_max = 1073741824, /* 1 GiB */
    /* the echo's coroutines use at most ~8.5 KiB (TLS; plain tcp ~5 KiB),
     * measured with ARKBENCH_CORO_STACK_USE=1 (docs/execution.md): the
     * default keeps ~4x that, the minimum ~2x; only touched pages cost RSS */
    .coroutine_stack_min = 16 * 1024,
    .coroutine_stack_max = 8 * 1024 * 1024,
    .coroutine_stack_default = 32 * 1024,
    .open_loop = 1,
    .requests_per_connection_max = 1000000000,
    .connect_rate_max = 1e7,
    .rate_max = 1e9,
    .churn_shared = 0,
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const ab_proto_cap_t *ab_caps_protocols(size_t *n) {
  *n = COUNT(protocols);
  return protocols;
}

const ab_cap_name_t *ab_caps_executions(size_t *n) {
  *n = COUNT(executions);
  return executions;
}

const ab_cap_name_t *ab_caps_framings(size_t *n) {
  *n = COUNT(framings);
  return framings;
}

const ab_cap_name_t *ab_caps_models(size_t *n) {
  *n = COUNT(models);
  return models;
}

const ab_caps_limits_t *ab_caps_limits(void) { return &limits; }

const ab_proto_cap_t *ab_caps_protocol(int id) {
  for (size_t i = 0; i < COUNT(protocols); i++)
    if (protocols[i].id == id) return &protocols[i];
  return NULL;
}

const ab_proto_cap_t *ab_caps_protocol_named(const char *name) {
  if (name == NULL) return NULL;
  for (size_t i = 0; i < COUNT(protocols); i++)
    if (strcmp(protocols[i].name, name) == 0) return &protocols[i];
  return NULL;
}

int ab_caps_id(const ab_cap_name_t *tab, size_t n, const char *name) {
  if (name == NULL) return 0;
  for (size_t i = 0; i < n; i++)
    if (strcmp(tab[i].name, name) == 0) return tab[i].id;
  return 0;
}

const char *ab_caps_name(const ab_cap_name_t *tab, size_t n, int id) {
  for (size_t i = 0; i < n; i++)
    if (tab[i].id == id) return tab[i].name;
  return NULL;
}

int ab_caps_rate_ok(double rate, uint32_t clients, double duration_s) {
  if (!(rate > 0) || !(rate <= limits.rate_max) || !(duration_s > 0)) return 0;
  return rate * duration_s >= (double)clients;
}
