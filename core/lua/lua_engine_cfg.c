/* lua_engine_cfg.c -- the case table of core.run_case into an
 * ab_case_cfg_t (lua_engine.c has the keys): its shape, tls, udp, the
 * role (a server's listen address, its stop signal and the line saying
 * where it listens), the progress fd for the live intervals and a group
 * part's fields with its barrier (processes = N).  The keys were checked
 * by the scenario check first; what is still wrong is said here.
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
#include <time.h>

#include <lauxlib.h>

#include "base/ab_error.h"
#include "engine/engine.h"
#include "io/proc.h"
#include "lua/lua_engine_int.h"

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

static void print_listening(int port, void *arg);

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

/* cfg->on_phase: where connecting and the warm-up are, one JSON line on
 * the progress fd (coordinator thread; never blocks). */
static void write_phase(const ab_live_phase_t *p, void *arg) {
  const case_strings_t *keep = arg;
  char line[256];
  int n = snprintf(line, sizeof(line),
                   "{\"phase\":\"%s\",\"connected\":%u,\"clients\":%u,\"t_s\":%.6g,"
                   "\"duration_s\":%.6g}\n",
                   p->phase == AB_LIVE_CONNECT ? "connect" : "warmup", p->done, p->clients, p->t_s,
                   p->duration_s);
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
  cfg->on_phase = write_phase;
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

/* A shard's wall-clock plan (group_sync_t): stage 1 (connected) starts the
 * warm-up at plan - lead, stage 2 the measure phase at plan, each as the
 * CLOCK_MONOTONIC instant that CLOCK_REALTIME reads then; 0 (now) when
 * that instant is past. */
static int64_t plan_sync(int stage, void *arg) {
  group_sync_t *g = arg;
  struct timespec rt, mt;
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_MONOTONIC, &mt);
  int64_t real = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
  int64_t mono = (int64_t)mt.tv_sec * 1000000000 + mt.tv_nsec;
  int64_t want = g->plan_unix_ns - (stage == 1 ? g->lead_ns : 0);
  return want > real ? mono + (want - real) : 0;
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
  } else if (opt_number(L, "plan_measure_unix_us", 0) > 0) {
    g->plan_unix_ns = (int64_t)(opt_number(L, "plan_measure_unix_us", 0) * 1e3);
    g->lead_ns = (int64_t)(opt_number(L, "plan_lead_s", 0) * 1e9);
    cfg->sync = plan_sync;
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
  /* "sleep" (default) or "spin" (engine.h, rate.c); the scenario check
   * refuses anything else */
  cfg->rate_precision = strcmp(opt_string(L, "rate_precision", "sleep"), "spin") == 0 ? AB_RATE_SPIN
                                                                                     : AB_RATE_SLEEP;
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

/* h2 = { max_concurrent_streams=, initial_window_size=, max_frame_size=,
 * header_table_size= } (checked by the scenario layer). */
static void read_h2(lua_State *L, ab_case_cfg_t *cfg) {
  lua_getfield(L, 1, "h2");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "max_concurrent_streams");
    cfg->transport.h2_max_concurrent_streams = (uint32_t)lua_tonumber(L, -1);
    lua_getfield(L, -2, "initial_window_size");
    cfg->transport.h2_initial_window_size_set = lua_isnumber(L, -1);
    cfg->transport.h2_initial_window_size = (uint32_t)lua_tonumber(L, -1);
    lua_getfield(L, -3, "max_frame_size");
    cfg->transport.h2_max_frame_size = (uint32_t)lua_tonumber(L, -1);
    lua_getfield(L, -4, "header_table_size");
    cfg->transport.h2_header_table_size_set = lua_isnumber(L, -1);
    cfg->transport.h2_header_table_size = (uint32_t)lua_tonumber(L, -1);
    lua_pop(L, 4);
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

const char *ab_lua_case_read(lua_State *L, ab_case_cfg_t *cfg, case_strings_t *keep,
                             group_sync_t *gsync, struct sockaddr_storage **bind, char *err,
                             size_t errlen) {
  const char *bad = read_shape(L, cfg);
  if (bad) return bad;
  read_tls(L, cfg, keep);
  read_udp(L, cfg);
  read_h2(L, cfg);
  if ((bad = read_role(L, cfg, keep, err, errlen)) != NULL) return bad;
  read_progress(L, cfg, keep);
  if ((bad = read_group(L, cfg, gsync, bind)) != NULL) return bad;
  if (cfg->nbind > 0 && cfg->role != AB_ROLE_SERVER && cfg->bind[0].ss_family != cfg->addr.ss_family &&
      cfg->addr.ss_family != 0)
    return "bind: the source addresses are not of the target's address family";
  return NULL;
}
