/* lua_exec_tcp.c -- execution = "lua": the stream connections the Lua
 * code drives -- the Lua driver rows client_start, wake and accept, the
 * connect callback and the connection object's
 * callbacks.  Each connection is an ab_conn_t (io/conn.h) set up for the
 * case's protocol by the engine (ab__conn_setup: plain tcp, or tls with the
 * run's TLS context), without a codec: Lua reads and writes plaintext
 * bytes, and nothing here knows whether they are encrypted.  A client
 * connects as in tcp_client.c; once its connection is ready (handshakes
 * done, before warm-up) it starts its task (full form) or fills its window
 * (light form); an accepted connection runs the server function as a task,
 * or the built-in echo when there is none.  Bytes read wake the task
 * waiting for them (ab__lx_want_met) or go to the light form's parser.
 */
#include "lua/lua_exec_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "base/ab_error.h"
#include "base/clock.h"

#define CONTAINER_OF(p, type, member) ((type *)((char *)(p) - offsetof(type, member)))

/* ---- client connections ----------------------------------------------- */

/* Appends everything the socket has now to k's buffer.  Returns the bytes
 * appended; *err gets a read error (AB_ECLOSED at end of stream, after the
 * bytes before it). */
static size_t read_all(ab__lx_conn_t *k, int *err) {
  *err = 0;
  ab__lx_compact(k);
  size_t start = *k->rlen;
  for (;;) {
    size_t room = 0;
    ssize_t n = ab_conn_recv(k->conn, &room);
    if (n < 0) *err = n == UV_EOF ? AB_ECLOSED : (int)n;
    if (n <= 0 || (size_t)n < room) break;
  }
  return *k->rlen - start;
}

static void client_on_readable(ab_conn_t *conn) {
  ab__lx_conn_t *k = conn->data;
  ab__lx_loop_t *lx = k->lx;
  int err;
  size_t got = read_all(k, &err);
  if (got > 0) k->now = ab_now_ns();
  if (got > 0 && !lx->stopping && k->c->h.alive) {
    if (lx->mode == AB__LX_MODE_LIGHT) ab__lx_light_parse(k);
    else if (k->waiting && ab__lx_want_met(k)) ab__lx_wake(k);
  }
  if (err) ab__lx_conn_failed(k, err, "read");
}

static void client_on_error(ab_conn_t *conn, int err) {
  ab__lx_conn_t *k = conn->data;
  if (err == UV_EOF) err = AB_ECLOSED;
  if (conn->ready) {
    ab__lx_conn_failed(k, err, "socket");
    return;
  }
  /* the handshakes failed: counted like a failed connect */
  ab__loop_t *l = k->c->h.loop;
  if (l->phase != AB__PH_STOPPING) {
    const char *why = err == AB_ETIMEDOUT ? "did not finish within the timeout" : ab_conn_error_text(conn);
    char msg[256];
    snprintf(msg, sizeof(msg), "connection %u: handshake: %s (%s)", k->c->h.id,
             why[0] ? why : ab_strerror(err), ab_err_name(err));
    ab__loop_error(l, err, msg);
  }
  k->err = err;
  ab__client_close(k->c);
  ab__client_reported(k->c);
}

static void client_task_exit(ab_task_t *t, void *arg) {
  ab__lx_conn_t *k = arg;
  if (k->c->task == t) k->c->task = NULL;
  ab__client_close(k->c); /* the client function returned: done with it */
}

void ab__lx_start_client(ab__lx_conn_t *k) {
  ab__lx_loop_t *lx = k->lx;
  int r = ab__lx_task_new(lx, k, lx->ref_client);
  if (r < 0) {
    ab__client_fail(k->c, r, "client task");
    return;
  }
  k->c->task = k->task; /* a reply timeout fails the client: the engine cancels it */
  ab_task_on_exit(k->task, client_task_exit, k);
  ab_task_start(k->task);
}

static void client_on_ready(ab_conn_t *conn) {
  ab__lx_conn_t *k = conn->data;
  ab__client_ready(k->c);
  if (k->lx->stopping) return;
  if (k->lx->mode == AB__LX_MODE_FULL) ab__lx_start_client(k);
  else ab__lx_light_pump(k);
}

static const ab_conn_cbs_t client_cbs = {
    .on_ready = client_on_ready,
    .on_readable = client_on_readable,
    .on_error = client_on_error,
};

static void on_connect(uv_connect_t *req, int status) {
  ab__dclient_t *c = req->data;
  ab__loop_t *l = c->h.loop;
  ab__lx_loop_t *lx = l->drv_state;
  ab__lx_conn_t *k = ab__lx_conn_of(lx, c);
  if (status != UV_ECANCELED) ab_hist_record(&l->connect, ab_now_ns() - c->connect_start_ns);
  if (status < 0 || lx->stopping || c->h.closing) {
    if (status < 0 && status != UV_ECANCELED && l->phase != AB__PH_STOPPING) {
      char msg[160];
      snprintf(msg, sizeof(msg), "connection %u: connect: %s (%s)", c->h.id, ab_strerror(status),
               ab_err_name(status));
      ab__loop_error(l, status, msg);
    }
    ab__client_close(c);
    ab__client_reported(c);
    return;
  }
  int r = ab__conn_setup(l, &c->conn, 1, 0, c->h.id);
  c->conn.data = k;
  if (r == 0)
    r = ab_conn_start(&c->conn, &l->d->reactor, &c->tcp,
                      (ab_sockio_kept_t){&c->rbuf, &c->rcap, &c->rlen}, &client_cbs);
  /* everything a Lua client writes is the script's own: its reads are
   * never pushed back by it (io/sockio.h) */
  if (r == 0) r = ab_sockio_allow(&c->conn.io, SIZE_MAX);
  if (r < 0) {
    /* alive for the failure to be counted like any other */
    c->h.alive = 1;
    ab__client_fail(c, r, "connection setup");
    ab__client_reported(c);
  }
}

void ab__lx_client_start(ab__client_t *hc) {
  ab__dclient_t *c = AB__DC(hc);
  ab__lx_loop_t *lx = c->h.loop->drv_state;
  ab__loop_t *l = c->h.loop;
  ab__lx_conn_t *k = ab__lx_conn_of(lx, c);
  k->magic = AB__LX_MAGIC;
  k->lx = lx;
  k->is_client = 1;
  k->id = c->h.id;
  k->c = c;
  k->conn = &c->conn;
  k->rbuf = &c->rbuf;
  k->rcap = &c->rcap;
  k->rlen = &c->rlen;
  k->co_ref = LUA_NOREF;
  int r = 0;
  if (!lx->stopping) {
    r = ab__client_tcp_init(l, &c->tcp);
    if (r == 0) {
      c->tcp.data = c;
      uv_tcp_nodelay(&c->tcp, 1);
      c->creq.data = c;
      r = ab__client_tcp_bind(l, &c->tcp, c->h.id);
      c->connect_start_ns = ab_now_ns();
      if (r == 0)
        r = uv_tcp_connect(&c->creq, &c->tcp, (const struct sockaddr *)&l->connect_addr, on_connect);
      if (r == 0) return;
    }
    char msg[160];
    snprintf(msg, sizeof(msg), "connection %u: connect: %s (%s)", c->h.id, ab_strerror(r),
             ab_err_name(r));
    ab__loop_error(l, r, msg);
    if (c->tcp.data) ab__client_close(c);
  }
  /* not connecting: counted as done (the engine's connect pacing goes on
   * with the next ones) */
  c->ly.reported = 1;
  ab__client_connect_done(&c->h);
}

void ab__lx_client_connect_expired(ab__client_t *hc) {
  ab__dclient_t *c = AB__DC(hc);
  if (c->ly.reported || c->h.closing || c->conn.ready) return;
  if (c->conn.data == NULL) {
    /* in its TCP connect: cancelled (on_connect sees it closing) */
    ab__client_connect_timed_out(c);
    return;
  }
  client_on_error(&c->conn, AB_ETIMEDOUT);
}

void ab__lx_client_wake(ab__client_t *hc) {
  ab__dclient_t *c = AB__DC(hc);
  ab__lx_loop_t *lx = c->h.loop->drv_state;
  ab__lx_conn_t *k = ab__lx_conn_of(lx, c);
  if (k->magic != AB__LX_MAGIC || lx->stopping || !c->h.alive) return;
  if (lx->mode == AB__LX_MODE_LIGHT) ab__lx_light_pump(k);
  else if (k->waiting && k->want == AB__LX_W_PHASE) ab__lx_wake(k);
}

/* ---- server connections ----------------------------------------------- */

static ab__lx_conn_t *sconn_of(ab__sconn_t *s) {
  return s->task ? ab_task_ctx(s->task) : NULL;
}

static void server_on_readable(ab_conn_t *conn) {
  ab__sconn_t *s = conn->data;
  ab__lx_conn_t *k = sconn_of(s);
  if (k == NULL) return;
  int err;
  size_t got = read_all(k, &err);
  if (got > 0) {
    k->now = ab_now_ns();
    s->loop->server_bytes += got;
    if (k->waiting && ab__lx_want_met(k)) ab__lx_wake(k);
  }
  if (err) ab__lx_conn_failed(k, err, "read");
}

static void server_on_ready(ab_conn_t *conn) {
  ab__sconn_t *s = conn->data;
  ab__lx_conn_t *k = sconn_of(s);
  if (k && k->waiting && k->want != AB__LX_W_NONE) ab__lx_wake(k);
}

static void server_on_error(ab_conn_t *conn, int err) {
  ab__sconn_t *s = conn->data;
  ab__lx_conn_t *k = sconn_of(s);
  if (k) ab__lx_conn_failed(k, err == UV_EOF ? AB_ECLOSED : err, conn->ready ? "socket" : "handshake");
}

static const ab_conn_cbs_t server_cbs = {
    .on_ready = server_on_ready,
    .on_readable = server_on_readable,
    .on_error = server_on_error,
};

static void server_task_exit(ab_task_t *t, void *arg) {
  ab__lx_conn_t *k = arg;
  if (k->s->task == t) k->s->task = NULL;
  if (!k->s->closing) ab__sconn_close(k->s);
}

void ab__lx_server_accept(ab__sconn_t *s) {
  ab__lx_loop_t *lx = s->loop->drv_state;
  ab__loop_t *l = lx->l;
  if (lx->ref_server == LUA_NOREF) { /* no server function: the built-in echo */
    ab__co_server_accept(s);
    return;
  }
  if (lx->stopping) {
    ab__sconn_close(s);
    return;
  }
  ab__lx_conn_t *k = calloc(1, sizeof(*k));
  if (k == NULL) {
    ab__sconn_error(s, AB_ENOMEM, "accept");
    return;
  }
  k->magic = AB__LX_MAGIC;
  k->lx = lx;
  k->id = lx->next_sid++ * l->eng->nloops + l->index;
  k->s = s;
  s->keep = 1; /* k (and the script's conn) point at it until the loop ends */
  k->conn = &s->conn;
  k->rbuf = &s->rbuf;
  k->rcap = &s->rcap;
  k->rlen = &s->rlen;
  k->co_ref = LUA_NOREF;
  k->next = lx->sconns;
  lx->sconns = k;
  int r = ab__conn_setup(l, &s->conn, 0, 0, 0);
  s->conn.data = s;
  if (r < 0) {
    ab__sconn_error(s, r, "accept setup");
    return;
  }
  r = ab__lx_task_new(lx, k, lx->ref_server);
  if (r < 0) {
    ab__sconn_error(s, r, "server task");
    return;
  }
  s->task = k->task;
  ab_task_on_exit(k->task, server_task_exit, k);
  r = ab_conn_start(&s->conn, &l->d->reactor, &s->tcp,
                    (ab_sockio_kept_t){&s->rbuf, &s->rcap, &s->rlen}, &server_cbs);
  if (r < 0) k->err = r; /* the function sees it at its first receive */
  ab_task_start(k->task);
}
