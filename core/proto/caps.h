/* caps.h -- what this build runs: the one table of protocols, execution
 * modes, framings, topology models and limits.
 *
 * Every rule about which scenario values are allowed comes from here:
 * ab_case_check() (engine.h) refuses a case against it as a safety net,
 * and core.capabilities() (core/lua/lua_caps.c) hands the same table to
 * lua/arkbench/scenario/check.lua, which validates scenario files against
 * it and holds the words users read (docs/scenarios.md lists the keys).
 * Adding a protocol is one row in caps.c; letting an execution mode run a
 * protocol is one bit in its row.
 *
 * The tables are static and constant: any thread may read them, nothing is
 * allocated, nothing is freed.  Names are the scenario files' values.
 */
#ifndef AB_CAPS_H
#define AB_CAPS_H

#include <stddef.h>
#include <stdint.h>

/* Protocol ids (ab_case_cfg_t.protocol); 0 is never a protocol. */
enum { AB_PROTO_TCP = 1, AB_PROTO_UDP, AB_PROTO_TLS, AB_PROTO_WS, AB_PROTO_WSS,
       AB_PROTO_HTTP, AB_PROTO_HTTPS, AB_PROTO_H2, AB_PROTO_H2C };
/* Execution modes (ab_case_cfg_t.execution).  AB_EXEC_HOOKS is a driver
 * built outside the registry of core/drivers (an ab_driver_t, engine/driver.h);
 * its scenario name is "lua", the one such driver today (core/lua/lua_exec.c). */
enum { AB_EXEC_CALLBACK = 1, AB_EXEC_COROUTINE = 2, AB_EXEC_HOOKS = 3 };
#define AB_EXEC_BIT(e) (1u << (e))
/* framing = "length" | "raw" of the length-framed stream protocols */
enum { AB_FRAMING_LENGTH = 1, AB_FRAMING_RAW = 2 };
/* topology = "sharded:N" | "shared:N" | "pool:N" (docs/topologies.md) */
enum { AB_MODEL_SHARDED = 1, AB_MODEL_SHARED = 2, AB_MODEL_POOL = 3 };

/* The largest UDP payload (65535 - 8 UDP header - 20 IPv4 header). */
#define AB_UDP_MAX_PAYLOAD 65507

enum { AB_TRANSPORT_STREAM = 1, AB_TRANSPORT_DATAGRAM = 2 };

typedef struct {
  const char *name;      /* "tcp" */
  int id;                /* AB_PROTO_* */
  int transport;         /* AB_TRANSPORT_STREAM: a byte stream, messages
                            framed by the codec; _DATAGRAM: one message per
                            datagram, no codec */
  int tls;               /* 1: the stream goes through the TLS transform */
  const char *codec;     /* "framing" (length or raw, per the framing key),
                            "ws", "http"; NULL for datagrams */
  unsigned executions;   /* AB_EXEC_BIT() of each mode that runs it */
  uint32_t payload_max;  /* bytes; at most the global payload_max */
  unsigned shared_executions; /* AB_EXEC_BIT() of each mode that runs it on
                                 shared:N with N > 1 (one reactor, N
                                 threads; docs/topologies.md) */
  unsigned churn_executions; /* AB_EXEC_BIT() of each mode that runs
                                requests_per_connection (connection churn:
                                a new connection after K round trips);
                                never on shared:N with N > 1 (limits) */
  int streams;           /* 1: every message is a stream of its own on a
                            multiplexed connection (HTTP/2): replies come
                            back in any order, `window` is streams in
                            flight (engine/window.h AB__WIN_STREAMS) */
  const char *alpn;      /* TLS rows: the ALPN protocol the client offers
                            by default and the server must select (NULL:
                            none) */
} ab_proto_cap_t;

/* A named value of a scenario key: execution, framing, topology model. */
typedef struct {
  const char *name;
  int id;
} ab_cap_name_t;

typedef struct {
  uint32_t payload_min, payload_max; /* bytes per message */
  uint32_t clients_min, clients_max; /* connections per case */
  uint32_t window_min, window_max;   /* messages in flight per connection */
  uint32_t threads_min, threads_max; /* N of sharded:N / shared:N / pool:N */
  uint64_t work_max;                 /* iterations of server work per echo */
  uint64_t inflight_max;             /* bytes: clients x window x payload */
  /* bytes per coroutine stack (execution = "coroutine", scenario key
   * coroutine_stack): the guard page comes on top (base/coro.h) */
  uint32_t coroutine_stack_min, coroutine_stack_max, coroutine_stack_default;
  int open_loop;                     /* 1 when rate (open-loop load) is
                                        built (it is); 0 refuses a rate */
  uint32_t requests_per_connection_max; /* churn quota, round trips */
  double connect_rate_max;           /* connections opened per second */
  /* open loop: rate in messages/s, all connections together, at most
   * rate_max; at least clients / duration (one message per connection in
   * the measure phase: ab_caps_rate_ok) -- issue 27 */
  double rate_max;
  int churn_shared;                  /* 1 when shared:N (N > 1) runs
                                        requests_per_connection (0: it
                                        does not reopen connections) */
} ab_caps_limits_t;

/* The rows, in the order users see them listed; *n gets the count. */
const ab_proto_cap_t *ab_caps_protocols(size_t *n);
const ab_cap_name_t *ab_caps_executions(size_t *n);
const ab_cap_name_t *ab_caps_framings(size_t *n);
const ab_cap_name_t *ab_caps_models(size_t *n);
const ab_caps_limits_t *ab_caps_limits(void);

/* Open loop: is `rate` (messages/s) within the bounds for `clients`
 * connections and a measure phase of `duration_s`?  rate_max at most, and
 * rate x duration >= clients, so each connection's schedule has a message
 * in the measure phase and every instant (t0 + index / rate + k x clients
 * / rate, ns) stays within twice the phase: no overflow at any rate the
 * check lets through.  1 yes, 0 no (NaN: no). */
int ab_caps_rate_ok(double rate, uint32_t clients, double duration_s);

/* The protocol with this id / name, or NULL. */
const ab_proto_cap_t *ab_caps_protocol(int id);
const ab_proto_cap_t *ab_caps_protocol_named(const char *name);

/* The id of name in tab[0..n), or 0 when it is not there; the name of id,
 * or NULL. */
int ab_caps_id(const ab_cap_name_t *tab, size_t n, const char *name);
const char *ab_caps_name(const ab_cap_name_t *tab, size_t n, int id);

/* Whether shared:N (N > 1) runs protocol row p in execution exec. */
static inline int ab_caps_runs_shared(const ab_proto_cap_t *p, int exec) {
  return p != NULL && exec > 0 && exec < 32 && (p->shared_executions & AB_EXEC_BIT(exec)) != 0;
}

/* Whether execution exec runs requests_per_connection over protocol p. */
static inline int ab_caps_runs_churn(const ab_proto_cap_t *p, int exec) {
  return p != NULL && exec > 0 && exec < 32 && (p->churn_executions & AB_EXEC_BIT(exec)) != 0;
}

/* 1 when execution mode `exec` (AB_EXEC_*) runs protocol p, else 0. */
static inline int ab_caps_runs(const ab_proto_cap_t *p, int exec) {
  return p != NULL && exec > 0 && exec < 32 && (p->executions & AB_EXEC_BIT(exec)) != 0;
}

#endif
