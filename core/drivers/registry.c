/* registry.c -- the built-in driver rows (engine/driver.h) and their loop
 * halves.
 *
 *   callback tcp     tcp_client.c + tcp_server.c (sockio, shared buffers)
 *   callback stream  stream.c: tls, ws, wss, http, https
 *   callback udp     udp.c
 *   coroutine        coro_echo.c, every stream protocol
 *   scripted udp     callback udp's loop (its server, receive buffer) with
 *                    the loop's scheduler: what the Lua driver builds on
 *                    over datagrams (ab_driver_scripted_base)
 * The stream rows share one listener (tcp_server.c) whose accept calls the
 * row's `accept`; a pool job coming back calls the row's `work_done`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "drivers/drivers_int.h"
#include "drivers/registry.h"
#include "proto/caps.h"

/* tls ciphertext is read into one per-loop buffer of this size */
#define CIPHER_RX 65536

static void close_noop(uv_handle_t *h) { (void)h; }

/* ---- every row: the driver's part of the loop ---------------------------- */

static int dloop_new(ab__loop_t *l) {
  l->d = calloc(1, sizeof(*l->d));
  if (l->d == NULL) return AB_ENOMEM;
  /* the loop's connections watch their sockets through this */
  if (l->eng->shared) ab_reactor_shared_init(&l->d->reactor, l->eng->rset, l, (int)l->index);
  else ab_reactor_uv_init(&l->d->reactor, &l->loop, l);
  l->reactor = &l->d->reactor;
  return ab__home_close_open(l);
}

/* After the loop ended: its server connections are closed, free them. */
static void dloop_free(ab__loop_t *l) {
  if (l->d == NULL) return;
  ab__server_reap(l);
  ab__sconn_t *s = l->d->sconns;
  while (s) {
    ab__sconn_t *n = s->next;
    if (l->eng->shared) pthread_mutex_destroy(&s->mu);
    free(s);
    s = n;
  }
  ab__home_close_free(l);
  free(l->d);
  l->d = NULL;
}

/* ---- stream rows: the listener and the TLS read buffer ------------------ */

static int stream_loop_open(ab__loop_t *l, char *err, size_t errlen) {
  (void)err;
  (void)errlen;
  int r;
  if (l->d == NULL && (r = dloop_new(l)) < 0) return r;
  if (l->eng->cfg->role != AB_ROLE_CLIENT && (r = ab__server_listen(l)) < 0) return r;
  if (l->eng->dc->use_tls && (l->d->cipher_rx = malloc(CIPHER_RX)) == NULL) return AB_ENOMEM;
  l->d->reactor.scratch = l->d->cipher_rx; /* shared:N: this thread's, in its callbacks */
  return 0;
}

static void stream_loop_close(ab__loop_t *l) {
  if (l->d) free(l->d->cipher_rx);
  dloop_free(l);
}

static void stream_stop(ab__loop_t *l) {
  ab__home_close_stop(l); /* what it would close, this closes now */
  for (uint32_t i = 0; i < l->nclients; i++) {
    ab__client_t *c = ab__loop_client(l, i);
    ab__client_take(l, c);
    ab__client_close(AB__DC(c));
    ab__client_give(l, c);
  }
  ab__server_close_all(l);
  if (l->d->listening) uv_close((uv_handle_t *)&l->d->listener, close_noop);
}

static void stream_start(ab__client_t *hc) {
  ab__dclient_t *c = AB__DC(hc);
  if (hc->reopening) ab__client_reset(c);
  ab__sclient_connect(c, (const struct sockaddr *)&c->h.loop->connect_addr);
}

static void stream_work_done(ab__sconn_t *s) { ab__sserver_release(s, 1); }

/* ---- callback tcp: the loop's shared receive and send buffers ------------ */

/* The loop's io_rx, and io_tx when it has clients (drivers_int.h). */
static int io_bufs_open(ab__loop_t *l) {
  if ((l->d->io_rx = malloc(AB__IO_RX)) == NULL) return AB_ENOMEM;
  if (l->eng->cfg->role != AB_ROLE_SERVER && (l->d->io_tx = malloc(AB__IO_TX)) == NULL)
    return AB_ENOMEM;
  return 0;
}

static void io_bufs_close(ab__loop_t *l) {
  if (l->d) {
    free(l->d->io_rx);
    free(l->d->io_tx);
  }
}

static int tcp_loop_open(ab__loop_t *l, char *err, size_t errlen) {
  int r = stream_loop_open(l, err, errlen);
  return r < 0 ? r : io_bufs_open(l);
}

static void tcp_loop_close(ab__loop_t *l) {
  io_bufs_close(l);
  stream_loop_close(l);
}

static void tcp_start(ab__client_t *hc) {
  ab__dclient_t *c = AB__DC(hc);
  if (hc->reopening) ab__client_reset(c);
  ab__client_connect(c, (const struct sockaddr *)&c->h.loop->connect_addr);
}

static void tcp_work_done(ab__sconn_t *s) { ab__server_work_returned(s, 1); }

/* ---- coroutine: the loop's scheduler ---------------------------------- */

/* Tasks read plain tcp into the loop's io_rx and build request batches in
 * its io_tx, as callback tcp does (coro_echo.c): the per-connection
 * buffers then hold only partial frames and unsent output. */
static int co_loop_open(ab__loop_t *l, char *err, size_t errlen) {
  int r = stream_loop_open(l, err, errlen);
  if (r == 0) r = io_bufs_open(l);
  if (r < 0) return r;
  return ab_sched_new(&l->d->sched, &l->loop) < 0 ? AB_ENOMEM : 0;
}

static void co_loop_close(ab__loop_t *l) {
  if (l->d && l->d->sched && ab_sched_free(l->d->sched) != 0)
    fprintf(stderr, "arkbench: loop %u: coroutine tasks still alive at the end\n", l->index);
  io_bufs_close(l);
  stream_loop_close(l);
}

/* Every task ends before its connection closes.  shared:N: another thread
 * may be running a connection of l's, so each task is cancelled holding
 * its connection's lock (clients first, as stream_stop closes them); what
 * is left (nothing, there) goes with the scheduler's own walk. */
static void co_stop(ab__loop_t *l) {
  if (l->d == NULL || l->d->sched == NULL) {
    stream_stop(l);
    return;
  }
  for (uint32_t i = 0; i < l->nclients; i++) {
    ab__client_t *c = ab__loop_client(l, i);
    ab__client_take(l, c);
    if (AB__DC(c)->task) ab_sched_cancel(AB__DC(c)->task);
    ab__client_give(l, c);
  }
  for (ab__sconn_t *s = l->d->sconns; s; s = s->next) {
    if (l->eng->shared) pthread_mutex_lock(&s->mu);
    s->loop = l;
    if (s->task) ab_sched_cancel(s->task);
    if (l->eng->shared) pthread_mutex_unlock(&s->mu);
  }
  ab_sched_cancel_all(l->d->sched);
  stream_stop(l);
}

/* ---- callback udp ------------------------------------------------------- */

static int udp_loop_open(ab__loop_t *l, char *err, size_t errlen) {
  (void)err;
  (void)errlen;
  int r;
  if ((r = dloop_new(l)) < 0) return r;
  if (l->eng->cfg->role != AB_ROLE_CLIENT && (r = ab__udp_server_open(l)) < 0) return r;
  if (l->d->udp_rx == NULL && (l->d->udp_rx = malloc(65536)) == NULL) return AB_ENOMEM;
  return 0;
}

static void udp_loop_close(ab__loop_t *l) {
  for (uint32_t i = 0; i < l->nclients; i++) {
    free(AB__DCLIENT(l, i)->dgram);
    AB__DCLIENT(l, i)->dgram = NULL;
  }
  if (l->d) ab__udp_free(l);
  dloop_free(l);
}

/* a datagram socket is ready as soon as it is open */
static void udp_start(ab__client_t *hc) {
  ab__dclient_t *c = AB__DC(hc);
  ab__udp_client_open(c, (const struct sockaddr *)&c->h.loop->connect_addr);
  ab__client_connect_done(&c->h);
}

static void udp_stop(ab__loop_t *l) {
  ab__home_close_stop(l);
  for (uint32_t i = 0; i < l->nclients; i++) ab__client_close(AB__DCLIENT(l, i));
  if (l->d->listening) uv_close((uv_handle_t *)&l->d->userver, close_noop);
}

/* ---- scripted udp: callback udp's loop with a scheduler ----------------- */

static int udp_sched_loop_open(ab__loop_t *l, char *err, size_t errlen) {
  int r = udp_loop_open(l, err, errlen);
  if (r < 0) return r;
  return ab_sched_new(&l->d->sched, &l->loop) < 0 ? AB_ENOMEM : 0;
}

static void udp_sched_loop_close(ab__loop_t *l) {
  if (l->d && l->d->sched && ab_sched_free(l->d->sched) != 0)
    fprintf(stderr, "arkbench: loop %u: scripted tasks still alive at the end\n", l->index);
  if (l->d) l->d->sched = NULL;
  udp_loop_close(l);
}

static void udp_sched_stop(ab__loop_t *l) {
  if (l->d && l->d->sched) ab_sched_cancel_all(l->d->sched);
  udp_stop(l);
}

/* ---- the rows ----------------------------------------------------------- */

/* The engine passes its client header; these are the drivers' clients
 * (AB__DC is a cast).  Called per phase or per connection, not per
 * message. */
static void tcp_wake(ab__client_t *c) { ab__client_pump(AB__DC(c)); }
static void stream_wake(ab__client_t *c) { ab__sclient_pump(AB__DC(c)); }
static void udp_wake(ab__client_t *c) { ab__udp_pump(AB__DC(c)); }
static void co_start(ab__client_t *c) {
  if (c->reopening) ab__client_reset(AB__DC(c));
  ab__co_client_start(AB__DC(c));
}
static void co_wake(ab__client_t *c) { ab__co_client_wake(AB__DC(c)); }
static void tcp_expired(ab__client_t *c) { ab__client_connect_expired(AB__DC(c)); }
static void stream_expired(ab__client_t *c) { ab__sclient_connect_expired(AB__DC(c)); }
static void co_expired(ab__client_t *c) { ab__co_client_connect_expired(AB__DC(c)); }
static void client_fail(ab__client_t *c, int code, const char *what) {
  ab__client_fail(AB__DC(c), code, what);
}

const ab_driver_t ab__driver_tcp_callback = {
    .name = "callback tcp",
    .client_size = sizeof(ab__dclient_t),
    .can_reopen = 1,
    .case_open = ab__transport_open,
    .case_close = ab__transport_close,
    .loop_open = tcp_loop_open,
    .loop_close = tcp_loop_close,
    .client_start = tcp_start,
    .wake = tcp_wake,
    .accept = ab__server_accept_plain,
    .client_fail = client_fail,
    .connect_expired = tcp_expired,
    .work_done = tcp_work_done,
    .stop = stream_stop,
};

const ab_driver_t ab__driver_stream_callback = {
    .name = "callback stream",
    .client_size = sizeof(ab__dclient_t),
    .can_reopen = 1,
    .case_open = ab__transport_open,
    .case_close = ab__transport_close,
    .loop_open = stream_loop_open,
    .loop_close = stream_loop_close,
    .client_start = stream_start,
    .wake = stream_wake,
    .accept = ab__sserver_accept,
    .client_fail = client_fail,
    .connect_expired = stream_expired,
    .work_done = stream_work_done,
    .stop = stream_stop,
};

const ab_driver_t ab__driver_udp_callback = {
    .name = "callback udp",
    .client_size = sizeof(ab__dclient_t),
    .loss_is_measured = 1,
    .case_open = ab__transport_open,
    .case_close = ab__transport_close,
    .loop_open = udp_loop_open,
    .loop_close = udp_loop_close,
    .client_start = udp_start,
    .wake = udp_wake,
    .client_fail = client_fail,
    .stop = udp_stop,
};

const ab_driver_t ab__driver_coroutine = {
    .name = "coroutine",
    .client_size = sizeof(ab__dclient_t),
    .can_reopen = 1,
    .case_open = ab__transport_open,
    .case_close = ab__transport_close,
    .loop_open = co_loop_open,
    .loop_close = co_loop_close,
    .client_start = co_start,
    .wake = co_wake,
    .accept = ab__co_server_accept,
    .client_fail = client_fail,
    .connect_expired = co_expired,
    .work_done = ab__co_job_done,
    .stop = co_stop,
};

/* The base of a scripted driver over datagrams: client_start and wake are
 * the echo's until the scripted driver replaces them (it does). */
const ab_driver_t ab__driver_udp_scripted = {
    .name = "scripted udp",
    .client_size = sizeof(ab__dclient_t),
    .loss_is_measured = 1,
    .case_open = ab__transport_open,
    .case_close = ab__transport_close,
    .loop_open = udp_sched_loop_open,
    .loop_close = udp_sched_loop_close,
    .client_start = udp_start,
    .wake = udp_wake,
    .client_fail = client_fail,
    .stop = udp_sched_stop,
};

const ab_driver_t *ab_driver_scripted_base(int protocol) {
  const ab_proto_cap_t *cap = ab_caps_protocol(protocol);
  if (cap == NULL) return NULL;
  return cap->transport == AB_TRANSPORT_DATAGRAM ? &ab__driver_udp_scripted : &ab__driver_coroutine;
}

const ab_driver_t *ab_driver_for(int protocol, int execution) {
  /* by the protocol's row, not its name: a new protocol needs no line here */
  const ab_proto_cap_t *cap = ab_caps_protocol(protocol);
  if (cap == NULL || !(cap->executions & AB_EXEC_BIT(execution))) return NULL;
  int datagram = cap->transport == AB_TRANSPORT_DATAGRAM;
  /* plain framed bytes take the callback tcp path with its shared buffers */
  int bare = !datagram && !cap->tls && cap->codec && strcmp(cap->codec, "framing") == 0;
  if (execution == AB_EXEC_COROUTINE) return datagram ? NULL : &ab__driver_coroutine;
  if (execution != AB_EXEC_CALLBACK) return NULL;
  if (datagram) return &ab__driver_udp_callback;
  return bare ? &ab__driver_tcp_callback : &ab__driver_stream_callback;
}
