/* lua_engine.c -- core.run_case(case) from Lua.
 *
 *   core.run_case{ protocol="tcp", framing="length"|"raw",
 *                  execution="callback", payload=, clients=, window=,
 *                  topology="sharded:N"|"shared:N"|"pool:N", work=, warmup=,
 *                  duration=, timeout= }
 *     execution="lua" also reads scenario_path, scenario_sets, quick, index
 *     and case_id (core/lua/lua_exec.h); its result may hold script_error =
 *     true (status "script_error") and local_errors.ESCRIPT.
 *     -> result | nil, "ECONFIG: ...", "ECONFIG"
 *
 * result holds the measured fields of a run object (docs/run-object.md):
 * ok, status ("ok", "degraded" or "failed": the engine's judgement; the
 * worker adds script_error, interrupted and max_error_rate), error, sent, completed, drained, timed_out, message_errors,
 * unfinished, warmup_completed, measured_s, round_trips_per_s,
 * payload_mib_per_s, rtt_us {min p50 p90 p95 p99 p999 max mean stdev count},
 * rtt_histogram, connect_us, connect_histogram, cpu_percent, cpu_user_s,
 * cpu_sys_s, cpu_machine_percent, rss_peak_bytes, rss_end_bytes,
 * errors {CLASS = count} (the peer's), local_errors {NAME = count} (ours),
 * error_reasons {KEY = first failure}, loops, workers, model, connections_per_loop,
 * notes, logical_cpus, load_model.  The fields of an empty RTT stat (count
 * 0) and an interval's percentiles without RTTs are null (cjson.null).
 * The call blocks for the length of the run; it makes no Lua call while
 * the run is going.
 *
 *   progress_fd = n (client roles): each finished interval but the last is
 *     written on fd n while the run goes, one JSON line
 *     {"interval":0,"intervals":10,"t_s":0,"duration_s":1,"sent":..,
 *      "completed":..,"errors":..,"timed_out":..,"round_trips_per_s":..,
 *      "p50_us":..,"p99_us":..,"max_us":..} (the live line's; the fd is
 *     made non-blocking: a line the reader does not take is dropped).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <unistd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "base/ab_error.h"
#include "base/coro.h"
#include "drivers/registry.h"
#include "engine/engine.h"
#include "io/proc.h"
#include "lua/lua_core.h"
#include "lua/lua_exec.h"
#include "lua/lua_request.h"
#include "base/procstat.h"
#include "proto/caps.h"

static const char *opt_string(lua_State *L, const char *key, const char *def) {
  lua_getfield(L, 1, key);
  const char *s = lua_isnil(L, -1) ? def : lua_tostring(L, -1);
  lua_pop(L, 1);
  return s ? s : def;
}

static double opt_number(lua_State *L, const char *key, double def) {
  lua_getfield(L, 1, key);
  double v = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : def;
  lua_pop(L, 1);
  return v;
}

static int config_error(lua_State *L, const char *msg) {
  lua_pushnil(L);
  lua_pushfstring(L, "ECONFIG: %s", msg);
  lua_pushliteral(L, "ECONFIG");
  return 3;
}

/* cjson's null (a NULL light userdata): a field present in the JSON, as
 * null (docs/run-object.md: nulls when count = 0). */
static void push_null(lua_State *L) { lua_pushlightuserdata(L, NULL); }

static void push_stats(lua_State *L, const ab_hist_t *h) {
  static const char *const fields[] = {"min", "p50", "p90", "p95", "p99", "p999", "max", "mean", "stdev"};
  lua_newtable(L);
  lua_pushnumber(L, (double)h->count);
  lua_setfield(L, -2, "count");
  if (h->count == 0) {
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
      push_null(L);
      lua_setfield(L, -2, fields[i]);
    }
    return;
  }
  struct { const char *k; double p; } ps[] = {
      {"p50", 50}, {"p90", 90}, {"p95", 95}, {"p99", 99}, {"p999", 99.9}};
  lua_pushnumber(L, (double)h->min / 1000.0);
  lua_setfield(L, -2, "min");
  for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
    lua_pushnumber(L, (double)ab_hist_percentile(h, ps[i].p) / 1000.0);
    lua_setfield(L, -2, ps[i].k);
  }
  lua_pushnumber(L, (double)h->max / 1000.0);
  lua_setfield(L, -2, "max");
  lua_pushnumber(L, ab_hist_mean(h) / 1000.0);
  lua_setfield(L, -2, "mean");
  lua_pushnumber(L, ab_hist_stdev(h) / 1000.0);
  lua_setfield(L, -2, "stdev");
}

static void push_encoded(lua_State *L, const ab_hist_t *h) {
  size_t need = ab_hist_encode(h, NULL, 0);
  char *buf = malloc(need + 1);
  if (buf == NULL) {
    lua_pushnil(L);
    return;
  }
  ab_hist_encode(h, buf, need + 1);
  lua_pushlstring(L, buf, need);
  free(buf);
}

/* "host:port" or "[v6]:port" -> sockaddr (numeric or resolved). */
static int parse_hostport(const char *s, struct sockaddr_storage *out, char *err, size_t errlen) {
  char host[256];
  const char *colon = strrchr(s, ':');
  if (colon == NULL || colon == s || colon[1] == '\0') {
    snprintf(err, errlen, "'%s' is not host:port", s);
    return -1;
  }
  size_t hl = (size_t)(colon - s);
  if (s[0] == '[' && hl >= 2 && s[hl - 1] == ']') {
    s++;
    hl -= 2;
  }
  if (hl >= sizeof(host)) hl = sizeof(host) - 1;
  memcpy(host, s, hl);
  host[hl] = '\0';
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int r = getaddrinfo(host, colon + 1, &hints, &res);
  if (r != 0 || res == NULL) {
    snprintf(err, errlen, "cannot resolve '%s': %s", s, gai_strerror(r));
    return -1;
  }
  memset(out, 0, sizeof(*out));
  memcpy(out, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  return 0;
}

static volatile int serve_stop = 0;
static void on_stop_signal(int sig) {
  (void)sig;
  serve_stop = 1;
}

typedef struct case_strings_s case_strings_t;
static void print_listening(int port, void *arg);

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

/* cfg->on_interval: one JSON line per finished interval on the progress
 * fd (coordinator thread; never blocks). */
static void write_interval(const ab_live_interval_t *v, void *arg) {
  const case_strings_t *keep = arg;
  char line[512];
  int n = snprintf(line, sizeof(line),
                   "{\"interval\":%u,\"intervals\":%u,\"t_s\":%.6g,\"duration_s\":%.6g,"
                   "\"sent\":%llu,\"completed\":%llu,\"errors\":%llu,\"timed_out\":%llu,"
                   "\"round_trips_per_s\":%.6g,\"p50_us\":%.6g,\"p99_us\":%.6g,"
                   "\"max_us\":%.6g}\n",
                   v->index, v->count, v->t_s, v->duration_s, (unsigned long long)v->sent,
                   (unsigned long long)v->completed, (unsigned long long)v->errors,
                   (unsigned long long)v->timed_out, v->round_trips_per_s, v->p50_us, v->p99_us,
                   v->max_us);
  if (n > 0 && (size_t)n < sizeof(line)) {
    ssize_t w = write(keep->progress_fd, line, (size_t)n);
    (void)w; /* a full pipe or a gone reader: the line is dropped */
  }
}

/* progress_fd = n: the live intervals go there (client roles). */
static void read_progress(lua_State *L, ab_case_cfg_t *cfg, case_strings_t *keep) {
  keep->progress_fd = (int)opt_number(L, "progress_fd", -1);
  if (keep->progress_fd < 0 || cfg->role == AB_ROLE_SERVER) return;
  int fl = fcntl(keep->progress_fd, F_GETFL);
  if (fl < 0 || fcntl(keep->progress_fd, F_SETFL, fl | O_NONBLOCK) < 0) return;
  cfg->on_interval = write_interval;
  cfg->on_interval_arg = keep;
}

/* The port a server listens on is known only now (`listen` may ask for
 * port 0): printed, and kept for the result (listen_port). */
static void print_listening(int port, void *arg) {
  case_strings_t *keep = arg;
  keep->listen_port = port;
  fprintf(stdout, "listening on %s:%d\n", keep->listen_host, port);
  fflush(stdout);
}

/* processes = N: the group barrier of a client part (engine.h cfg->sync).
 * It writes "sync STAGE\n" on out_fd (the part's result channel, read by
 * the group's leader, lua/arkbench/run/group.lua) and reads "go NS\n" on
 * in_fd (its stdin): the CLOCK_MONOTONIC start of the next phase, common
 * to the group.  EOF (the leader is gone) is EPIPE; an interrupt EINTR. */
typedef struct {
  int out_fd, in_fd;
  char buf[128];
  size_t len;
} group_sync_t;

static int64_t group_sync(int stage, void *arg) {
  group_sync_t *g = arg;
  char line[32];
  int n = snprintf(line, sizeof(line), "sync %d\n", stage);
  if (write(g->out_fd, line, (size_t)n) != n) return -EPIPE;
  for (;;) {
    char *nl = memchr(g->buf, '\n', g->len);
    if (nl) {
      unsigned long long t = 0;
      *nl = '\0';
      int ok = sscanf(g->buf, "go %llu", &t) == 1;
      size_t used = (size_t)(nl - g->buf) + 1;
      memmove(g->buf, g->buf + used, g->len - used);
      g->len -= used;
      if (ok) return (int64_t)t;
      continue;
    }
    if (g->len == sizeof(g->buf)) return AB_EPROTO;
    if (ab_proc_interrupted()) return AB_EINTR;
    struct pollfd p = {g->in_fd, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    ssize_t r = read(g->in_fd, g->buf + g->len, sizeof(g->buf) - g->len);
    if (r == 0) return -EPIPE;
    if (r < 0 && errno != EINTR && errno != EAGAIN) return -errno;
    if (r > 0) g->len += (size_t)r;
  }
}

/* The group fields of a part (engine.h): id_base, id_stride,
 * clients_total, the source addresses `bind` (a list of IP addresses,
 * into *bind, malloc'd), reuse_port, and sync_fd/go_fd for the barrier. */
static const char *read_group(lua_State *L, ab_case_cfg_t *cfg, group_sync_t *g,
                              struct sockaddr_storage **bind) {
  cfg->id_base = (uint32_t)opt_number(L, "id_base", 0);
  cfg->id_stride = (uint32_t)opt_number(L, "id_stride", 1);
  cfg->clients_total = (uint32_t)opt_number(L, "clients_total", 0);
  lua_getfield(L, 1, "reuse_port");
  cfg->reuse_port = lua_toboolean(L, -1);
  lua_pop(L, 1);
  g->out_fd = (int)opt_number(L, "sync_fd", -1);
  g->in_fd = (int)opt_number(L, "go_fd", 0);
  if (g->out_fd >= 0) {
    cfg->sync = group_sync;
    cfg->sync_arg = g;
  }
  lua_getfield(L, 1, "bind");
  int n = lua_istable(L, -1) ? (int)lua_objlen(L, -1) : 0;
  if (n > 0) {
    *bind = calloc((size_t)n, sizeof(**bind));
    if (*bind == NULL) return "out of memory";
    for (int i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      const char *a = lua_tostring(L, -1);
      struct sockaddr_storage *ss = &(*bind)[i - 1];
      struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
      struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
      if (a && inet_pton(AF_INET, a, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
      } else if (a && inet_pton(AF_INET6, a, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
      } else {
        lua_pop(L, 2);
        return "bind: every entry must be an IPv4 or IPv6 address";
      }
      if (ss->ss_family != (*bind)[0].ss_family) {
        lua_pop(L, 2);
        return "bind: the addresses must be of one family";
      }
      lua_pop(L, 1);
    }
    cfg->bind = *bind;
    cfg->nbind = (uint32_t)n;
  }
  lua_pop(L, 1);
  return NULL;
}

/* protocol, framing, execution, topology, sizes and phases; returns NULL
 * or the sentence saying what is wrong. */
static const char *read_shape(lua_State *L, ab_case_cfg_t *cfg) {
  const char *proto = opt_string(L, "protocol", "tcp");
  const char *framing = opt_string(L, "framing", "length");
  const char *exec = opt_string(L, "execution", "callback");
  const char *topo = opt_string(L, "topology", "sharded:1");
  /* names -> ids through the capability table (proto/caps.h) */
  size_t nexec, nframing, nmodel;
  const ab_cap_name_t *execs = ab_caps_executions(&nexec);
  const ab_cap_name_t *framings = ab_caps_framings(&nframing);
  const ab_cap_name_t *models = ab_caps_models(&nmodel);
  const ab_proto_cap_t *pcap = ab_caps_protocol_named(proto);
  if (pcap == NULL) return lua_pushfstring(L, "protocol '%s' is not built into the engine yet", proto);
  cfg->protocol = pcap->id;
  cfg->framing = ab_caps_id(framings, nframing, framing);
  cfg->execution = ab_caps_id(execs, nexec, exec);
  if (cfg->execution == 0) return lua_pushfstring(L, "execution '%s' is not built into the engine yet", exec);
  unsigned n = 0;
  char model[16] = "";
  if (sscanf(topo, "%15[a-z]:%u", model, &n) != 2) return "topology must be sharded:N, shared:N or pool:N";
  cfg->model = ab_caps_id(models, nmodel, model);
  cfg->threads = n;
  cfg->rate = opt_number(L, "rate", 0);
  cfg->requests_per_connection = (uint32_t)opt_number(L, "requests_per_connection", 0);
  cfg->connect_rate = opt_number(L, "connect_rate", 0);
  cfg->payload = (uint32_t)opt_number(L, "payload", 1024);
  cfg->clients = (uint32_t)opt_number(L, "clients", 1);
  cfg->window = (uint32_t)opt_number(L, "window", 1);
  cfg->work = (uint64_t)opt_number(L, "work", 0);
  cfg->warmup_s = opt_number(L, "warmup", 0.25);
  cfg->duration_s = opt_number(L, "duration", 1);
  cfg->timeout_s = opt_number(L, "timeout", 2);
  cfg->connect_timeout_s = opt_number(L, "connect_timeout", 0);
  /* the time series' interval: 1 s unless given; never longer than the
   * duration (--quick shortens the duration after the scenario check) */
  cfg->interval_s = opt_number(L, "interval", 1);
  if (cfg->interval_s > cfg->duration_s) cfg->interval_s = cfg->duration_s;
  /* checked here: the engine leaves stacks to the drivers */
  const ab_caps_limits_t *lim = ab_caps_limits();
  double stack = opt_number(L, "coroutine_stack", 0);
  if (stack != 0 && !(stack >= lim->coroutine_stack_min && stack <= lim->coroutine_stack_max))
    return lua_pushfstring(L, "coroutine_stack must be %d .. %d bytes", (int)lim->coroutine_stack_min,
                           (int)lim->coroutine_stack_max);
  cfg->task_stack = (uint32_t)stack;
  return NULL;
}

/* tls = { version=, ciphers=, sni=, alpn= (string or list), resume=,
 * cert= (serve: where to write the PEM) | ca= (client: the PEM to trust) } */
static void read_tls(lua_State *L, ab_case_cfg_t *cfg, case_strings_t *keep) {
  lua_getfield(L, 1, "tls");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "version");
    cfg->transport.tls_version = lua_tostring(L, -1);
    lua_getfield(L, -2, "ciphers");
    cfg->transport.tls_ciphers = lua_tostring(L, -1);
    lua_getfield(L, -3, "sni");
    cfg->transport.tls_sni = lua_tostring(L, -1);
    lua_getfield(L, -4, "resume");
    cfg->transport.tls_resume = lua_toboolean(L, -1);
    lua_getfield(L, -5, "alpn");
    if (lua_istable(L, -1)) {
      int n = (int)lua_objlen(L, -1);
      for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, i);
        const char *a = lua_tostring(L, -1);
        if (a) {
          if (keep->alpn[0]) strncat(keep->alpn, ",", sizeof(keep->alpn) - strlen(keep->alpn) - 1);
          strncat(keep->alpn, a, sizeof(keep->alpn) - strlen(keep->alpn) - 1);
        }
        lua_pop(L, 1);
      }
      cfg->transport.tls_alpn = keep->alpn;
    } else if (lua_isstring(L, -1)) {
      snprintf(keep->alpn, sizeof(keep->alpn), "%s", lua_tostring(L, -1));
      cfg->transport.tls_alpn = keep->alpn;
    }
    lua_getfield(L, -6, "cert");
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      lua_getfield(L, -6, "ca");
    }
    cfg->transport.tls_cert_out = lua_tostring(L, -1);
    /* the strings stay referenced by the tls table (argument 1) */
    lua_pop(L, 6);
  }
  lua_pop(L, 1);
}

static void read_udp(lua_State *L, ab_case_cfg_t *cfg) {
  lua_getfield(L, 1, "udp");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "send_buffer");
    cfg->transport.udp_send_buffer = (uint32_t)lua_tonumber(L, -1);
    lua_getfield(L, -2, "recv_buffer");
    cfg->transport.udp_recv_buffer = (uint32_t)lua_tonumber(L, -1);
    lua_getfield(L, -3, "server_recv_buffer");
    cfg->transport.udp_server_recv_buffer = (uint32_t)lua_tonumber(L, -1);
    lua_pop(L, 3);
  }
  lua_pop(L, 1);
}

/* Copies the host part of "host:port"; with unbracket, "[v6]:port" gives
 * the bare v6 address. */
static void host_of(const char *where, int unbracket, char *out, size_t outlen) {
  const char *colon = strrchr(where, ':');
  size_t hl = (size_t)(colon - where);
  if (unbracket && where[0] == '[' && hl >= 2) {
    where++;
    hl -= 2;
  }
  if (hl >= outlen) hl = outlen - 1;
  memcpy(out, where, hl);
  out[hl] = '\0';
}

/* role = "both" | "client" (target = "host:port") | "server" (listen =);
 * returns NULL or what is wrong. */
static const char *read_role(lua_State *L, ab_case_cfg_t *cfg, case_strings_t *keep,
                             char *err, size_t errlen) {
  const char *role = opt_string(L, "role", "both");
  const char *where = NULL;
  snprintf(keep->listen_host, sizeof(keep->listen_host), "127.0.0.1");
  if (strcmp(role, "client") == 0) {
    cfg->role = AB_ROLE_CLIENT;
    where = opt_string(L, "target", NULL);
    if (where == NULL) return "role client needs target = \"host:port\"";
  } else if (strcmp(role, "server") == 0) {
    cfg->role = AB_ROLE_SERVER;
    where = opt_string(L, "listen", "127.0.0.1:0");
  }
  if (where && parse_hostport(where, &cfg->addr, err, errlen) != 0) return err;
  if (cfg->role == AB_ROLE_CLIENT) {
    host_of(where, 1, keep->target_host, sizeof(keep->target_host));
    cfg->host = keep->target_host;
  }
  if (cfg->role != AB_ROLE_SERVER) {
    /* a worker that installed the orchestrator's handlers
     * (core.signals_install) ends its run early on SIGINT/SIGTERM and
     * keeps the numbers; without them the flag never rises */
    cfg->interrupted = ab_proc_interrupted;
  }
  if (cfg->role == AB_ROLE_SERVER) {
    host_of(where, 0, keep->listen_host, sizeof(keep->listen_host));
    cfg->on_listening = print_listening;
    cfg->on_listening_arg = keep;
    cfg->stop = &serve_stop;
    serve_stop = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigaction(SIGTERM, &sa, NULL);
    /* sigint = false: a server the worker of a split case started stops
     * on its SIGTERM only, after the clients drained -- a Ctrl-C to the
     * process group must not close their connections first */
    lua_getfield(L, 1, "sigint");
    int ignore_int = lua_isboolean(L, -1) && !lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (ignore_int) sa.sa_handler = SIG_IGN;
    sigaction(SIGINT, &sa, NULL);
  }
  return NULL;
}

/* Sets the counters of one group (engine/counters.h) in the table on top
 * of the stack: AB_GROUP_RUN into the result, AB_GROUP_DATAGRAM into its
 * `udp` table. */
static void push_counters(lua_State *L, const ab_result_t *r, int group) {
#define PUSH_COUNTER(name, merge, grp, doc) \
  if ((grp) == group) SETNUM(#name, r->name);
  AB_COUNTERS(PUSH_COUNTER)
#undef PUSH_COUNTER
}

static void push_hists(lua_State *L, const ab_result_t *r) {
  push_stats(L, &r->rtt);
  lua_setfield(L, -2, "rtt_us");
  push_encoded(L, &r->rtt);
  lua_setfield(L, -2, "rtt_histogram");
  push_stats(L, &r->connect);
  lua_setfield(L, -2, "connect_us");
  if (r->handshake.count > 0) {
    push_stats(L, &r->handshake);
    lua_setfield(L, -2, "handshake_us");
    push_encoded(L, &r->handshake);
    lua_setfield(L, -2, "handshake_histogram");
  }
  push_encoded(L, &r->connect);
  lua_setfield(L, -2, "connect_histogram");
}

static void push_tls(lua_State *L, const ab_result_t *r) {
  lua_newtable(L);
  lua_pushstring(L, r->session.tls_version);
  lua_setfield(L, -2, "version");
  lua_pushstring(L, r->session.tls_cipher);
  lua_setfield(L, -2, "cipher");
  lua_pushstring(L, r->session.tls_alpn);
  lua_setfield(L, -2, "alpn");
  lua_pushstring(L, r->session.tls_sni);
  lua_setfield(L, -2, "sni_received");
  lua_pushboolean(L, r->session.tls_resumed);
  lua_setfield(L, -2, "resumed");
  lua_setfield(L, -2, "tls");
}

static void push_udp(lua_State *L, const ab_result_t *r) {
  lua_newtable(L);
  SETNUM("lost", r->timed_out);
  SETNUM("late", r->late); /* a run counter, kept here too */
  push_counters(L, r, AB_GROUP_DATAGRAM);
  SETNUM("loss_percent", r->sent ? (double)r->timed_out / (double)r->sent * 100.0 : 0.0);
  lua_newtable(L);
  const ab_udp_buffers_t *bs[2] = {&r->session.udp_client_buffers, &r->session.udp_server_buffers};
  const char *names[2] = {"client", "server"};
  for (int i = 0; i < 2; i++) {
    lua_newtable(L);
    SETNUM("send_requested", bs[i]->send_requested);
    SETNUM("send_granted", bs[i]->send_granted);
    SETNUM("recv_requested", bs[i]->recv_requested);
    SETNUM("recv_granted", bs[i]->recv_granted);
    lua_setfield(L, -2, names[i]);
  }
  lua_setfield(L, -2, "buffers");
  lua_setfield(L, -2, "udp");
}

/* Adds n to field key of the table on top. */
static void add_count(lua_State *L, const char *key, uint64_t n) {
  lua_getfield(L, -1, key);
  double had = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : 0;
  lua_pop(L, 1);
  lua_pushnumber(L, had + (double)n);
  lua_setfield(L, -2, key);
}

/* errors {class -> count}: what the peer did (ab_error.h
 * AB_ERROR_CLASSES); local_errors {name -> count}: our own failures;
 * error_reasons {key -> the first such failure, worded}: for both. */
static void push_errors(lua_State *L, const ab_result_t *r) {
  for (int side = 1; side >= 0; side--) {
    lua_newtable(L);
    for (int i = 0; i < r->nerrors; i++) {
      char key[32];
      if (ab_err_is_peer(r->errors[i].code) != side) continue;
      add_count(L, ab_err_class_key(r->errors[i].code, key, sizeof(key)), r->errors[i].count);
    }
    lua_setfield(L, -2, side ? "errors" : "local_errors");
  }
  lua_newtable(L);
  for (int i = 0; i < r->nerrors; i++) {
    char key[32];
    ab_err_class_key(r->errors[i].code, key, sizeof(key));
    lua_getfield(L, -1, key);
    int have = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (have || r->errors[i].why[0] == '\0') continue;
    lua_pushstring(L, r->errors[i].why);
    lua_setfield(L, -2, key);
  }
  lua_setfield(L, -2, "error_reasons");
}

/* CPU, memory, errors, topology and notes. */
static void push_host(lua_State *L, const ab_case_cfg_t *cfg, const ab_result_t *r) {
  int ncpu = ab_logical_cpus();
  double cpu = r->cpu_wall_s > 0 ? (r->cpu_user_s + r->cpu_sys_s) / r->cpu_wall_s * 100.0 : 0;
  SETNUM("cpu_percent", cpu);
  SETNUM("cpu_user_s", r->cpu_user_s);
  SETNUM("cpu_sys_s", r->cpu_sys_s);
  SETNUM("cpu_machine_percent", cpu / ncpu);
  SETNUM("rss_peak_bytes", r->rss_peak_bytes);
  SETNUM("rss_end_bytes", r->rss_end_bytes);
  SETNUM("rss_base_bytes", r->rss_base_bytes);
  push_errors(L, r);
  SETNUM("loops", r->loops);
  SETNUM("workers", r->workers);
  size_t nmodel;
  const ab_cap_name_t *models = ab_caps_models(&nmodel);
  lua_pushstring(L, ab_caps_name(models, nmodel, cfg->model));
  lua_setfield(L, -2, "model");
  lua_createtable(L, (int)r->loops, 0);
  for (uint32_t i = 0; i < r->loops; i++) {
    lua_pushnumber(L, r->conns_per_loop[i]);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_setfield(L, -2, "connections_per_loop");
  lua_createtable(L, r->nnotes, 0);
  for (int i = 0; i < r->nnotes; i++) {
    lua_pushstring(L, r->notes[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "notes");
  SETNUM("logical_cpus", ncpu);
}

/* load_model and, open loop, the rate accounting and the raw RTT and send
 * lag views (docs/run-object.md, docs/scenarios.md: rate). */
static void push_load(lua_State *L, const ab_case_cfg_t *cfg, const ab_result_t *r) {
  if (!(cfg->rate > 0)) {
    lua_pushliteral(L, "closed");
    lua_setfield(L, -2, "load_model");
    return;
  }
  lua_pushliteral(L, "open");
  lua_setfield(L, -2, "load_model");
  /* the schedule's measure-phase sends are sent + unsent (one at the
   * interval's start, then every 1/rate): the rate is met by the share of
   * them that went out, so few sends in a short interval (rate x duration
   * near 1) do not read as more than asked */
  uint64_t slots = r->sent + r->unsent;
  double achieved = slots > 0 && r->measured_s > 0 ? cfg->rate * (double)r->sent / (double)slots : 0;
  SETNUM("rate_asked", cfg->rate);
  SETNUM("rate_achieved", achieved);
  lua_pushboolean(L, achieved >= 0.99 * cfg->rate && r->unsent == 0);
  lua_setfield(L, -2, "rate_met");
  push_stats(L, &r->rtt_raw);
  lua_setfield(L, -2, "rtt_raw_us");
  push_encoded(L, &r->rtt_raw);
  lua_setfield(L, -2, "rtt_raw_histogram");
  push_stats(L, &r->send_lag);
  lua_setfield(L, -2, "send_lag_us");
  push_encoded(L, &r->send_lag);
  lua_setfield(L, -2, "send_lag_histogram");
}

/* A histogram's percentile p in us, null when empty. */
static void set_pct(lua_State *L, const char *key, const ab_hist_t *h, double p) {
  if (h->count == 0) push_null(L);
  else lua_pushnumber(L, (double)(p >= 100 ? h->max : ab_hist_percentile(h, p)) / 1000.0);
  lua_setfield(L, -2, key);
}

/* intervals = { {t_s, duration_s, sent, completed, errors, timed_out,
 * connections, round_trips_per_s, p50_us, p90_us, p99_us, max_us, [send_lag_p99_us,
 * send_lag_histogram],
 * rtt_histogram}, ... } (docs/run-object.md). */
static void push_intervals(lua_State *L, const ab_result_t *r) {
  lua_createtable(L, (int)r->niv, 0);
  for (uint32_t i = 0; i < r->niv; i++) {
    const ab__iv_t *v = &r->iv[i];
    double t = (double)i * r->interval_s;
    double len = t + r->interval_s <= r->measured_s ? r->interval_s : r->measured_s - t;
    lua_createtable(L, 0, 15);
    SETNUM("t_s", t);
    SETNUM("duration_s", len > 0 ? len : 0);
    SETNUM("sent", v->sent);
    SETNUM("completed", v->completed);
    SETNUM("errors", v->errors);
    SETNUM("timed_out", v->timed_out);
    SETNUM("connections", v->connections);
    SETNUM("round_trips_per_s", len > 0 ? (double)v->completed / len : 0);
    set_pct(L, "p50_us", &v->rtt, 50);
    set_pct(L, "p90_us", &v->rtt, 90);
    set_pct(L, "p99_us", &v->rtt, 99);
    set_pct(L, "max_us", &v->rtt, 100);
    if (r->iv_lag) {
      set_pct(L, "send_lag_p99_us", &r->iv_lag[i], 99);
      push_encoded(L, &r->iv_lag[i]); /* for an exact merge across processes */
      lua_setfield(L, -2, "send_lag_histogram");
    }
    push_encoded(L, &v->rtt);
    lua_setfield(L, -2, "rtt_histogram");
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_setfield(L, -2, "intervals");
}

/* tags = { NAME = {sent, warmup_sent, completed, drained, errors,
 * round_trips_per_s, rtt_us, rtt_histogram}, ... } (engine/tags.h;
 * docs/run-object.md "Tags"), when the case has any tag. */
static void push_tags(lua_State *L, const ab_result_t *r) {
  if (r->tags == NULL || r->ntags == 0) return;
  double per_s = r->measured_s > 0 ? 1.0 / r->measured_s : 0;
  lua_createtable(L, 0, (int)r->ntags);
  for (uint32_t i = 0; i < r->ntags; i++) {
    const ab_tag_stats_t *t = &r->tags[i];
    lua_createtable(L, 0, 8);
    SETNUM("sent", t->sent);
    SETNUM("warmup_sent", t->warmup_sent);
    SETNUM("completed", t->completed);
    SETNUM("drained", t->drained);
    /* every measure message ends in one bucket (the identity) */
    SETNUM("errors", t->sent - t->completed - t->drained);
    SETNUM("round_trips_per_s", (double)t->completed * per_s);
    push_stats(L, &t->rtt);
    lua_setfield(L, -2, "rtt_us");
    push_encoded(L, &t->rtt);
    lua_setfield(L, -2, "rtt_histogram");
    lua_setfield(L, -2, r->tag_names[i]);
  }
  lua_setfield(L, -2, "tags");
}

/* The result table of a run that happened (docs/run-object.md). */
static void push_result(lua_State *L, const ab_case_cfg_t *cfg, const ab_result_t *r) {
  lua_newtable(L);
  lua_pushboolean(L, r->ok);
  lua_setfield(L, -2, "ok");
  static const char *const statuses[] = {"ok", "degraded", "failed"};
  lua_pushstring(L, statuses[r->status >= 0 && r->status <= AB_RUN_FAILED ? r->status : AB_RUN_FAILED]);
  lua_setfield(L, -2, "status");
  if (r->error[0]) {
    lua_pushstring(L, r->error);
    lua_setfield(L, -2, "error");
  }
  push_counters(L, r, AB_GROUP_RUN);
  SETNUM("measured_s", r->measured_s);
  /* an interrupt before the measure phase leaves nothing measured */
  double per_s = r->measured_s > 0 ? 1.0 / r->measured_s : 0;
  SETNUM("round_trips_per_s", (double)r->completed * per_s);
  SETNUM("payload_mib_per_s", (double)r->completed * cfg->payload * per_s / 1048576.0);
  SETNUM("connections_per_s", (double)r->connections_opened * per_s);
  SETNUM("connect_phase_s", r->connect_phase_s);
  SETNUM("tls_handshakes", r->session.tls_handshakes);
  SETNUM("tls_resumed", r->session.tls_resumed_count);
  if (r->interrupted) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "interrupted");
  }
  push_hists(L, r);
  /* the stack each coroutine had (the key's value or the default) */
  if (cfg->execution == AB_EXEC_COROUTINE)
    SETNUM("coroutine_stack", cfg->task_stack ? cfg->task_stack : ab_caps_limits()->coroutine_stack_default);
  if (cfg->protocol == AB_PROTO_TLS || cfg->protocol == AB_PROTO_WSS ||
      cfg->protocol == AB_PROTO_HTTPS)
    push_tls(L, r);
  push_host(L, cfg, r);
  push_load(L, cfg, r);
  push_intervals(L, r);
  if (cfg->protocol == AB_PROTO_UDP) push_udp(L, r);
  ab_lua_push_http(L, cfg, r);
  push_tags(L, r);
}

/* execution = "lua": a script error makes status script_error with the
 * whole message (file:line, traceback); payload MiB/s counts the reply
 * bytes actually read. */
static void push_script_outcome(lua_State *L, const ab_lua_exec_t *lx, const ab_result_t *r) {
  const char *script_msg = NULL;
  int script_errors = ab_lua_exec_script_errors(lx, &script_msg);
  if (script_errors > 0) {
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "ok");
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "script_error");
    lua_pushstring(L, script_msg ? script_msg : "script error");
    lua_setfield(L, -2, "error");
    /* the script's failure is ours, not the peer's */
    lua_getfield(L, -1, "local_errors");
    SETNUM("ESCRIPT", script_errors);
    lua_pop(L, 1);
  }
  SETNUM("payload_mib_per_s", r->measured_s > 0 ? (double)ab_lua_exec_reply_bytes(lx) / r->measured_s / 1048576.0 : 0);
}

static int l_run_case(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  ab_case_cfg_t cfg;
  case_strings_t keep;
  char err[256];
  memset(&cfg, 0, sizeof(cfg));
  memset(&keep, 0, sizeof(keep));
  const char *bad = read_shape(L, &cfg);
  if (bad) return config_error(L, bad);
  read_tls(L, &cfg, &keep);
  read_udp(L, &cfg);
  if ((bad = read_role(L, &cfg, &keep, err, sizeof(err))) != NULL) return config_error(L, bad);
  read_progress(L, &cfg, &keep);
  group_sync_t gsync;
  memset(&gsync, 0, sizeof(gsync));
  struct sockaddr_storage *bind = NULL;
  if ((bad = read_group(L, &cfg, &gsync, &bind)) != NULL) {
    free(bind);
    return config_error(L, bad);
  }
  if (cfg.nbind > 0 && cfg.role != AB_ROLE_SERVER && cfg.bind[0].ss_family != cfg.addr.ss_family &&
      cfg.addr.ss_family != 0) {
    free(bind);
    return config_error(L, "bind: the source addresses are not of the target's address family");
  }
  ab_lua_requests_t reqs;
  if (ab_lua_read_request(L, &cfg, &reqs, err, sizeof(err)) != 0) {
    ab_lua_requests_free(&reqs);
    free(bind);
    return config_error(L, err);
  }
  /* execution = "lua": the scenario's Lua code drives the connections
   * (lua_exec.c); the run table says which scenario, sets and case */
  ab_lua_exec_t *lx = NULL;
  if (cfg.execution == AB_EXEC_HOOKS) {
    if (ab_lua_exec_new(L, 1, &lx, err, sizeof(err)) != 0) {
      ab_lua_requests_free(&reqs);
      free(bind);
      return config_error(L, err);
    }
    cfg.driver = ab_lua_exec_driver(lx);
    cfg.tagged = 1; /* conn:call(req, expect, tag), message -> bytes, tag */
  } else {
    cfg.driver = ab_driver_for(cfg.protocol, cfg.execution);
  }
  if (ab_case_check(&cfg, err, sizeof(err)) != 0) {
    ab_lua_exec_free(lx);
    ab_lua_requests_free(&reqs);
    free(bind);
    return config_error(L, err);
  }
  ab_result_t *r = malloc(sizeof(*r));
  if (r == NULL) {
    ab_lua_exec_free(lx);
    ab_lua_requests_free(&reqs);
    free(bind);
    return ab_lua_fail(L, AB_ENOMEM);
  }
  int rc = ab_run_case(&cfg, r);
  /* ARKBENCH_CORO_STACK_USE=1: the deepest coroutine stack of the process
   * so far (base/coro.h), for sizing coroutine_stack (docs/execution.md) */
  if (ab_coro_stack_peak() > 0)
    fprintf(stderr, "arkbench: coroutine stack high-water: %zu bytes\n", ab_coro_stack_peak());
  if (rc < 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", ab_err_name(rc), r->error);
    lua_pushstring(L, ab_err_name(rc));
  } else {
    push_result(L, &cfg, r);
    if (keep.listen_port > 0) SETNUM("listen_port", keep.listen_port);
    if (lx) push_script_outcome(L, lx, r);
  }
  ab_result_free(r);
  free(r);
  free(bind);
  ab_lua_exec_free(lx);
  ab_lua_requests_free(&reqs);
  return rc < 0 ? 3 : 1;
}

/* core.counters() -> { {name=, merge="sum"|"max", group="run"|"datagram",
 * doc=}, ... } in table order: the one declaration of engine/counters.h,
 * for the docs spec and anyone listing the run object's counts. */
static int l_counters(lua_State *L) {
  lua_newtable(L);
  int i = 0;
#define PUSH_ROW(name, merge, grp, doc)                                              \
  lua_newtable(L);                                                                   \
  lua_pushliteral(L, #name);                                                         \
  lua_setfield(L, -2, "name");                                                       \
  lua_pushstring(L, (merge) == AB_MERGE_MAX ? "max" : "sum");                        \
  lua_setfield(L, -2, "merge");                                                      \
  lua_pushstring(L, (grp) == AB_GROUP_DATAGRAM ? "datagram" : "run");                \
  lua_setfield(L, -2, "group");                                                      \
  lua_pushliteral(L, doc);                                                           \
  lua_setfield(L, -2, "doc");                                                        \
  lua_rawseti(L, -2, ++i);
  AB_COUNTERS(PUSH_ROW)
#undef PUSH_ROW
  return 1;
}

/* core.error_classes() -> { {key=, kind=, doc=}, ... } in table order: the
 * one declaration of base/ab_error.h's AB_ERROR_CLASSES, for the docs spec
 * and the terminal. */
static int l_error_classes(lua_State *L) {
  lua_newtable(L);
  int i = 0;
#define PUSH_CLASS(key, kind, doc)                                                   \
  lua_newtable(L);                                                                   \
  lua_pushliteral(L, key);                                                           \
  lua_setfield(L, -2, "key");                                                        \
  lua_pushliteral(L, kind);                                                          \
  lua_setfield(L, -2, "kind");                                                       \
  lua_pushliteral(L, doc);                                                           \
  lua_setfield(L, -2, "doc");                                                        \
  lua_rawseti(L, -2, ++i);
  AB_ERROR_CLASSES(PUSH_CLASS)
#undef PUSH_CLASS
  return 1;
}

void ab_lua_register_engine(lua_State *L) {
  lua_pushcfunction(L, l_error_classes);
  lua_setfield(L, -2, "error_classes");
  lua_pushcfunction(L, l_run_case);
  lua_setfield(L, -2, "run_case");
  lua_pushcfunction(L, l_counters);
  lua_setfield(L, -2, "counters");
}
