/* setup.c -- a case's loops before and after they run: the listening
 * socket of a loop's server, the loops and their clients (allocated,
 * windows and schedules initialised), each loop's libuv loop and handles
 * and the driver's part (coordinator thread, before the loop threads
 * start), and the teardown when setup fails part way.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/ab_error.h"
#include "engine/engine_int.h"
#include "engine/window.h"
#include "proto/framing.h"

int ab__server_socket(ab__loop_t *l, int type) {
  const ab_case_cfg_t *cfg = l->eng->cfg;
  struct sockaddr_storage ss;
  socklen_t len;
  memset(&ss, 0, sizeof(ss));
  if (cfg->role == AB_ROLE_SERVER && cfg->addr.ss_family != 0) {
    ss = cfg->addr;
  } else {
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
  /* the loops of a server-role sharded:N share the port the first one got */
  if (cfg->role == AB_ROLE_SERVER && l->index > 0) {
    int port = l->eng->loops[0].port;
    if (ss.ss_family == AF_INET6) ((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
    else ((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
  }
  len = ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
  int one = 1;
  /* several loops share the port through SO_REUSEPORT; first make sure no
   * other process already holds it (it would silently share it too) */
  int explicit_port = ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port != 0
                                               : ((struct sockaddr_in *)&ss)->sin_port != 0;
  int reuse = cfg->role == AB_ROLE_SERVER && (l->eng->nloops > 1 || cfg->reuse_port);
  if (reuse && l->index == 0 && explicit_port && !cfg->reuse_port) {
    int probe = socket(ss.ss_family, type | SOCK_CLOEXEC, 0);
    if (probe < 0) return -errno;
    setsockopt(probe, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(probe, (struct sockaddr *)&ss, len) != 0) {
      int e = -errno;
      close(probe);
      return e;
    }
    close(probe);
  }
  int fd = socket(ss.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (reuse) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  if (bind(fd, (struct sockaddr *)&ss, len) != 0) {
    int e = -errno;
    close(fd);
    return e;
  }
  return fd;
}

/* Frees a loop's clients, their windows and its series (setup failed, or
 * after the merge). */
void ab__loop_free_clients(ab__loop_t *l) {
  for (uint32_t i = 0; i < l->nclients; i++) {
    ab__win_free(&ab__loop_client(l, i)->win);
  }
  free(l->clients);
  l->clients = NULL;
  free(l->iv);
  free(l->iv_lag);
  free(l->tags);
  l->iv = NULL;
  l->iv_lag = NULL;
  l->tags = NULL;
  if (l->rate_fd >= 0) close(l->rate_fd);
  l->rate_fd = -1;
  if (l->sweep_fd >= 0) close(l->sweep_fd);
  l->sweep_fd = -1;
}

/* A setup step failed with r: the sentence for out->error. */
int ab__setup_error(ab_result_t *out, int r) {
  if (r == AB_ENOMEM)
    snprintf(out->error, sizeof(out->error), "out of memory setting up the case");
  else
    snprintf(out->error, sizeof(out->error), "setting up loop: %s (%s)", ab_strerror(r),
             ab_err_name(r));
  return r;
}

/* The loops and their clients; connection i lives on loop i mod N (client
 * and server ends). */
int ab__loops_alloc(ab__engine_t *eng, ab_result_t *out) {
  const ab_case_cfg_t *cfg = eng->cfg;
  eng->loops = calloc(eng->nloops, sizeof(ab__loop_t));
  out->conns_per_loop = calloc(eng->nloops, sizeof(uint32_t));
  if (eng->loops == NULL || out->conns_per_loop == NULL) return AB_ENOMEM;
  out->loops = eng->nloops;
  for (uint32_t i = 0; i < cfg->clients; i++) out->conns_per_loop[i % eng->nloops]++;
  uint32_t total = cfg->clients_total > cfg->clients ? cfg->clients_total : cfg->clients;
  for (uint32_t li = 0; li < eng->nloops; li++) {
    ab__loop_t *l = &eng->loops[li];
    l->eng = eng;
    l->index = li;
    l->rate_fd = -1;
    l->sweep_fd = -1;
    l->open_loop = cfg->rate > 0;
    l->busy_share = -1;
    ab_hist_init(&l->rtt);
    ab_hist_init(&l->connect);
    ab_hist_init(&l->handshake);
    l->payload = cfg->payload;
    l->window = cfg->window;
    l->window_pow2 = (cfg->window & (cfg->window - 1)) == 0;
    l->timeout_ns = (uint64_t)(cfg->timeout_s * 1e9);
    l->pfx = cfg->framing == AB_FRAMING_LENGTH ? (uint32_t)ab_prefix_size(cfg->payload) : 0;
    l->fsz = l->pfx + (size_t)cfg->payload;
    l->nclients = out->conns_per_loop[li];
    /* replies of a datagram transport may be lost, duplicated or reordered */
    const ab_proto_cap_t *pcap = ab_caps_protocol(cfg->protocol);
    int win_kind = pcap->transport == AB_TRANSPORT_DATAGRAM ? AB__WIN_DATAGRAM
                   : pcap->streams                          ? AB__WIN_STREAMS
                                                            : AB__WIN_ORDERED;
    /* a 1-byte datagram reply names its sequence mod 256: an outcome ring
     * of 256 tells every such reply's fate (window.h, ab__win_reply_datagram) */
    uint32_t history = cfg->payload < 2 ? 256u : 0u;
    l->client_size = eng->drv->client_size;
    if (l->client_size < sizeof(ab__client_t)) l->client_size = sizeof(ab__client_t);
    l->clients = calloc(l->nclients ? l->nclients : 1, l->client_size);
    if (l->clients == NULL || ab__series_alloc(l, cfg) < 0) return AB_ENOMEM;
    if (cfg->tagged) {
      /* each tag's counts and histogram (engine/tags.h) */
      if ((l->tags = malloc(AB_TAGS_MAX * sizeof(ab_tag_stats_t))) == NULL) return AB_ENOMEM;
      ab_tags_init(l->tags);
      l->tag_rot = cfg->tag_rot;
      l->ntag_rot = cfg->tag_rot ? cfg->ntag_rot : 0;
    }
    for (uint32_t k = 0; k < l->nclients; k++) {
      ab__client_t *c = ab__loop_client(l, k);
      c->loop = l;
      c->home = l;
      /* this process's connection li + k * nloops is the case's id */
      c->id = cfg->id_base + (li + k * eng->nloops) * (cfg->id_stride ? cfg->id_stride : 1);
      if (ab__win_init(&c->win, cfg->window, win_kind, l->open_loop, history) < 0) return AB_ENOMEM;
      if (cfg->tagged && (c->win.tag = calloc(cfg->window, 1)) == NULL) return AB_ENOMEM;
      c->win.tag_first = 0;
      c->win.tag_n = l->ntag_rot;
      if (l->ntag_rot && cfg->ntag_rot_conns > 0) {
        c->win.tag_first = cfg->tag_rot_first[c->id % cfg->ntag_rot_conns];
        c->win.tag_n = cfg->tag_rot_n[c->id % cfg->ntag_rot_conns];
      }
      /* the phases are spread over every connection of the case: the
       * case's rate over its clients_total, of which this process has
       * cfg->clients at cfg->rate */
      if (l->open_loop)
        ab__win_sched_init(&c->win, total == cfg->clients ? cfg->rate : cfg->rate * total / cfg->clients,
                           c->id, total);
    }
  }
  return 0;
}

/* Each loop's libuv loop and engine handles, then the driver's side of it
 * (coordinator thread, before the loop threads start).  *started counts
 * the loops whose uv_loop is initialised (they need closing on failure). */
int ab__loops_open(ab__engine_t *eng, uint32_t workers, uint32_t *started, ab_result_t *out) {
  for (uint32_t li = 0; li < eng->nloops; li++) {
    ab__loop_t *l = &eng->loops[li];
    int r = uv_loop_init(&l->loop);
    if (r < 0) return ab__setup_error(out, r);
    (*started)++;
    /* the loop's time blocked for events, for its busy share (loop.c) */
    if (l->nclients > 0) uv_loop_configure(&l->loop, UV_METRICS_IDLE_TIME);
    ab__loop_open_handles(l);
    ab__live_open(l);
    if ((r = ab__sweep_open(l)) < 0) return ab__setup_error(out, r);
    if ((r = ab__shared_loop_open(l)) < 0) return ab__setup_error(out, r);
    if (workers) ab__loop_open_pool_done(l);
    if (l->open_loop && l->nclients > 0 && (r = ab__rate_open(l)) < 0) return ab__setup_error(out, r);
    if ((r = eng->drv->loop_open(l, out->error, sizeof(out->error))) < 0)
      return out->error[0] ? r : ab__setup_error(out, r);
  }
  return 0;
}

/* Setup failed part way: loops [0, started) have live handles; close them
 * without threads, then free everything. */
void ab__loops_abandon(ab__engine_t *eng, uint32_t started) {
  for (uint32_t li = 0; li < started; li++) {
    ab__loop_t *l = &eng->loops[li];
    ab__loop_close_now(l);
    eng->drv->loop_close(l);
    uv_loop_close(&l->loop);
  }
  if (eng->loops) {
    ab__shared_close(eng);
    for (uint32_t li = 0; li < eng->nloops; li++)
      if (eng->loops[li].clients) ab__loop_free_clients(&eng->loops[li]);
  }
  free(eng->loops);
  eng->loops = NULL;
  if (eng->pool) {
    ab__pool_stop(eng->pool);
    ab__pool_free(eng->pool);
    eng->pool = NULL;
  }
}
