/* lua_exec_tcp.c -- execution = "lua": the plain tcp connections the Lua
 * code drives -- the Lua driver rows client_start, wake and
 * accept, and the libuv connect, read and write callbacks.  A
 * client connects as in tcp_client.c, then starts its task (full form) or
 * fills its window (light form); an accepted connection runs the server
 * function as a task, or the built-in echo when there is none.  Bytes
 * read wake the task waiting for them (ab__lx_want_met) or go to the
 * light form's parser.
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

static void report_connected(ab__client_t *c) {
  ab__loop_t *l = c->loop;
  if (c->ly.reported) return;
  c->ly.reported = 1;
  ab__loop_connect_done(l);
}

static void c_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  ab__client_t *c = h->data;
  (void)hint;
  ab__lx_buf_alloc(ab__lx_conn_of(c->loop->drv_state, c), buf);
}

static void c_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  ab__client_t *c = st->data;
  ab__lx_loop_t *lx = c->loop->drv_state;
  ab__lx_conn_t *k = ab__lx_conn_of(lx, c);
  (void)buf;
  if (nread == 0) return;
  if (nread < 0) {
    ab__lx_conn_failed(k, nread == UV_EOF ? AB_ECLOSED : (int)nread, "read");
    return;
  }
  k->now = ab_now_ns();
  *k->rlen += (size_t)nread;
  if (lx->stopping || !c->alive) return;
  if (lx->mode == AB__LX_MODE_LIGHT) ab__lx_light_parse(k);
  else if (k->waiting && ab__lx_want_met(k)) ab__lx_wake(k);
}

static void on_cwrite_error(ab_outbuf_t *ob, int err) {
  ab__client_t *c = CONTAINER_OF(ob, ab__client_t, out);
  ab__lx_conn_failed(ab__lx_conn_of(c->loop->drv_state, c), err, "write");
}

static void c_exit(ab_task_t *t, void *arg) {
  ab__lx_conn_t *k = arg;
  if (k->c->task == t) k->c->task = NULL;
  ab__client_close(k->c); /* the client function returned: done with it */
}

static void start_client(ab__lx_conn_t *k) {
  ab__lx_loop_t *lx = k->lx;
  int r = ab__lx_task_new(lx, k, lx->ref_client);
  if (r < 0) {
    ab__client_fail(k->c, r, "client task");
    return;
  }
  k->c->task = k->task; /* a reply timeout fails the client: the engine cancels it */
  ab_task_on_exit(k->task, c_exit, k);
  ab_task_start(k->task);
}

static void on_connect(uv_connect_t *req, int status) {
  ab__client_t *c = req->data;
  ab__loop_t *l = c->loop;
  ab__lx_loop_t *lx = l->drv_state;
  ab__lx_conn_t *k = ab__lx_conn_of(lx, c);
  if (status != UV_ECANCELED) ab_hist_record(&l->connect, ab_now_ns() - c->connect_start_ns);
  if (status < 0 || lx->stopping || c->closing) {
    if (status < 0 && status != UV_ECANCELED && l->phase != AB__PH_STOPPING) {
      char msg[160];
      snprintf(msg, sizeof(msg), "connection %u: connect: %s (%s)", c->id, ab_strerror(status),
               ab_err_name(status));
      ab__loop_error(l, status, msg);
    }
    ab__client_close(c);
    report_connected(c);
    return;
  }
  c->alive = 1;
  l->ready_clients++;
  int r = uv_read_start(k->stream, c_alloc, c_read);
  report_connected(c);
  if (r < 0) {
    ab__client_fail(c, r, "read start");
    return;
  }
  if (lx->mode == AB__LX_MODE_FULL) start_client(k);
  else ab__lx_light_pump(k);
}

void ab__lx_client_start(ab__client_t *c) {
  ab__lx_loop_t *lx = c->loop->drv_state;
  ab__loop_t *l = c->loop;
  ab__lx_conn_t *k = ab__lx_conn_of(lx, c);
  k->magic = AB__LX_MAGIC;
  k->lx = lx;
  k->is_client = 1;
  k->id = c->id;
  k->c = c;
  k->stream = (uv_stream_t *)&c->tcp;
  k->rbuf = &c->rbuf;
  k->rcap = &c->rcap;
  k->rlen = &c->rlen;
  k->out = &c->out;
  k->co_ref = LUA_NOREF;
  int r = 0;
  if (!lx->stopping) {
    r = uv_tcp_init(&l->loop, &c->tcp);
    if (r == 0) {
      c->tcp.data = c;
      uv_tcp_nodelay(&c->tcp, 1);
      ab_outbuf_init(&c->out, k->stream, on_cwrite_error);
      c->creq.data = c;
      /* as tcp_client.c: past 20,000 connections per loop, further
       * loopback source addresses (one destination port gives ~28k
       * ephemeral ports) */
      if (l->nclients > 20000 && l->connect_addr.ss_family == AF_INET) {
        uint32_t n = (c->id / l->eng->nloops) / 20000 + 1;
        struct sockaddr_in src;
        char ip[32];
        snprintf(ip, sizeof(ip), "127.0.%u.%u", (n + 1) >> 8, (n + 1) & 255);
        uv_ip4_addr(ip, 0, &src);
        r = uv_tcp_bind(&c->tcp, (const struct sockaddr *)&src, 0);
      }
      c->connect_start_ns = ab_now_ns();
      if (r == 0)
        r = uv_tcp_connect(&c->creq, &c->tcp, (const struct sockaddr *)&l->connect_addr, on_connect);
      if (r == 0) return;
    }
    char msg[160];
    snprintf(msg, sizeof(msg), "connection %u: connect: %s (%s)", c->id, ab_strerror(r),
             ab_err_name(r));
    ab__loop_error(l, r, msg);
    if (c->tcp.data) ab__client_close(c);
  }
  /* not connecting: counted as done (the engine's connect pacing goes on
   * with the next ones) */
  c->ly.reported = 1;
  ab__loop_connect_done(l);
}

void ab__lx_client_wake(ab__client_t *c) {
  ab__lx_loop_t *lx = c->loop->drv_state;
  ab__lx_conn_t *k = ab__lx_conn_of(lx, c);
  if (k->magic != AB__LX_MAGIC || lx->stopping || !c->alive) return;
  if (lx->mode == AB__LX_MODE_LIGHT) ab__lx_light_pump(k);
  else if (k->waiting && k->want == AB__LX_W_PHASE) ab__lx_wake(k);
}

/* ---- server connections ----------------------------------------------- */

static ab__lx_conn_t *sconn_of(ab__sconn_t *s) {
  return s->task ? ab_task_ctx(s->task) : NULL;
}

static void s_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  ab__sconn_t *s = h->data;
  ab__lx_conn_t *k = sconn_of(s);
  (void)hint;
  if (k) {
    ab__lx_buf_alloc(k, buf);
  } else if (ab_buf_grow(&s->rbuf, &s->rcap, s->rlen, AB__LX_READ_CHUNK) == 0) {
    *buf = uv_buf_init((char *)s->rbuf + s->rlen, (unsigned)(s->rcap - s->rlen));
  } else {
    *buf = uv_buf_init(NULL, 0);
  }
}

static void s_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  ab__sconn_t *s = st->data;
  ab__lx_conn_t *k = sconn_of(s);
  (void)buf;
  if (nread == 0 || k == NULL) return;
  if (nread < 0) {
    ab__lx_conn_failed(k, nread == UV_EOF ? AB_ECLOSED : (int)nread, "read");
    return;
  }
  k->now = ab_now_ns();
  *k->rlen += (size_t)nread;
  s->loop->server_bytes += (uint64_t)nread;
  if (k->waiting && ab__lx_want_met(k)) ab__lx_wake(k);
}

static void on_swrite_error(ab_outbuf_t *ob, int err) {
  ab__sconn_t *s = CONTAINER_OF(ob, ab__sconn_t, out);
  ab__lx_conn_t *k = sconn_of(s);
  if (k) ab__lx_conn_failed(k, err, "write");
}

static void s_exit(ab_task_t *t, void *arg) {
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
  k->stream = (uv_stream_t *)&s->tcp;
  k->rbuf = &s->rbuf;
  k->rcap = &s->rcap;
  k->rlen = &s->rlen;
  k->out = &s->out;
  k->co_ref = LUA_NOREF;
  k->next = lx->sconns;
  lx->sconns = k;
  ab_outbuf_init(&s->out, k->stream, on_swrite_error);
  int r = ab__lx_task_new(lx, k, lx->ref_server);
  if (r < 0) {
    ab__sconn_error(s, r, "server task");
    return;
  }
  s->task = k->task;
  ab_task_on_exit(k->task, s_exit, k);
  r = uv_read_start(k->stream, s_alloc, s_read);
  if (r < 0) k->err = r; /* the function sees it at its first receive */
  ab_task_start(k->task);
}
