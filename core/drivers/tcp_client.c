/* tcp_client.c -- the built-in echo client over TCP, callback style.
 *
 * Per connection: `window` messages in flight, issued and accounted by the
 * window (engine/window.h).  The socket's IO is our own (sockio.h: recv/send on a uv_poll_t).  Each
 * recv takes one clock reading, completes every whole echo it delivered
 * (full content check, RTT into the loop's histogram), then refills the
 * window in one batch: the messages are built in the loop's send scratch,
 * the clock is read once more just before the bytes go to the socket, and
 * that time stamps the whole batch.  No allocation, lock or Lua call per
 * message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "base/clock.h"
#include "drivers/drivers_int.h"
#include "engine/window.h"
#include "proto/codecs.h"
#include "proto/framing.h"

#define READ_CHUNK 65536

void ab__client_on_closed(uv_handle_t *h) {
  ab__dclient_t *c = h->data;
  ab__conn_fold_stats(c->h.loop, &c->conn);
  ab__layers_free(&c->ly);
  ab_conn_free(&c->conn);
  free(c->sbuf);
  c->sbuf = NULL;
  free(c->rbuf);
  c->rbuf = NULL;
  c->rcap = c->rlen = 0;
  /* the conn's own handles close in the same pass: the engine starts a
   * reopen from its sweep, after this pass (ab__client_reset then) */
  if (c->h.reopen) ab__client_closed(&c->h);
}

void ab__client_reset(ab__dclient_t *c) {
  /* a coroutine still on it ends first (it has, in practice: a client's
   * task returns right after failing its connection) */
  if (c->task && ab_task_current() != c->task) ab_sched_cancel(c->task);
  free(c->dgram);
  /* the driver's part as allocated; the engine's header is kept */
  memset((char *)c + sizeof(ab__client_t), 0, sizeof(*c) - sizeof(ab__client_t));
}

/* shared:N: a connection closed on another loop's thread than its home's
 * stops its IO there; its handle belongs to the home's libuv loop, which
 * closes it soon (home_close.c calls this again, from home; so does the
 * engine's stop). */
void ab__client_close(ab__dclient_t *c) {
  if (c->tcp.data == NULL) return;
  if (!c->h.closing) {
    c->h.closing = 1;
    c->h.alive = 0;
    ab_conn_close(&c->conn); /* before the handle that owns the descriptor */
    if (c->h.loop != c->h.home) {
      c->h.close_later = 1;
      ab__home_close_client(c);
      return;
    }
  } else if (!c->h.close_later || c->h.loop != c->h.home) {
    return;
  }
  c->h.close_later = 0;
  uv_close((uv_handle_t *)&c->tcp, ab__client_on_closed);
}

int ab__client_recycle(ab__dclient_t *c) {
  if (!c->h.alive || !ab__client_retire(&c->h)) return 0;
  /* every reply is in: the close is a FIN, never a reset.  No TLS
   * close_notify (as most HTTPS clients): the server would answer it with
   * its own after this socket is gone, and this host's kernel would answer
   * that with a reset.  The session stays resumable (tls.h). */
  ab__client_close(c);
  return 1;
}

/* The server closes after the reply just counted, as that reply said
 * (AB_EPEERCLOSE: HTTP Connection: close): counted in server_closes and
 * reopened in its place (sweep.c: not a reconnect), no error.  Requests
 * pipelined behind that reply can get no answer: message errors, under
 * one ECLOSED that says why. */
static void client_closed_in_order(ab__dclient_t *c) {
  ab__loop_t *l = c->h.loop;
  c->h.alive = 0;
  if (c->task && ab_task_current() != c->task) ab_sched_cancel(c->task);
  l->server_closes++;
  if (c->h.win.inflight > 0 && l->phase != AB__PH_STOPPING) {
    char msg[320];
    snprintf(msg, sizeof(msg), "connection %u: the server closed it after a response that said"
             " Connection: close, with %u more requests pipelined on it unanswered (raise the"
             " server's keep-alive limit, e.g. nginx keepalive_requests, or use window = 1)",
             c->h.id, (unsigned)c->h.win.inflight);
    ab__loop_error(l, AB_ECLOSED, msg);
  }
  c->h.planned = 1; /* its reopen is no reconnect */
  ab__client_lost(&c->h, AB_ECLOSED); /* reopened once closed */
  ab__win_release(&c->h, &l->message_errors);
  ab__client_close(c);
  ab__loop_check_progress(l);
}

void ab__client_fail(ab__dclient_t *c, int code, const char *what) {
  ab__loop_t *l = c->h.loop;
  if (!c->h.alive) return;
  if (code == AB_EPEERCLOSE) {
    client_closed_in_order(c);
    return;
  }
  /* the server's orderly close is one class however it was met: a read of
   * its FIN, or a write that met the RST its kernel sent after it */
  code = ab_err_stream_end(code, AB_SIDE_CLIENT);
  c->h.alive = 0;
  /* a coroutine blocked on this connection returns AB_EINTR and ends
   * before its handle closes (from inside itself it just returns) */
  if (c->task && ab_task_current() != c->task) ab_sched_cancel(c->task);
  if (l->phase != AB__PH_STOPPING) {
    char why[200], msg[320];
    snprintf(msg, sizeof(msg), "connection %u: %s: %s", c->h.id, what,
             ab_conn_reason(&c->conn, code, why, sizeof(why)));
    ab__loop_error(l, code, msg);
  }
  ab__client_lost(&c->h, code); /* reopened once closed (engine sweep.c) */
  ab__win_release(&c->h, code == AB_ETIMEDOUT ? &l->timed_out : &l->message_errors);
  ab__client_close(c);
  ab__loop_check_progress(l);
}

static void on_io_error(ab_sockio_t *io, int err) {
  ab__dclient_t *c = (ab__dclient_t *)((char *)io - offsetof(ab__dclient_t, conn.io));
  c->h.loop = io->watch.running; /* shared:N: the loop of the thread running it */
  ab__client_fail(c, err, "socket");
}

/* Fills the window.  now is a recent clock reading used only to decide
 * whether the phase still sends; the batch is stamped with a fresh reading
 * taken after the messages are built, just before they reach the socket.
 * The batch is built in the loop's scratch when the socket has nothing
 * pending and it fits, else at the end of the connection's pending output. */
static void pump(ab__dclient_t *c, uint64_t now) {
  ab__loop_t *l = c->h.loop;
  ab__win_grant_t g;
  if (!c->h.alive) return;
  if (ab__win_grant(&c->h, now, &g) == 0) {
    if (ab__win_spent(&c->h)) ab__client_recycle(c); /* churn */
    return;
  }
  uint32_t n = g.n;
  uint8_t phase = g.phase;
  size_t pfx = l->pfx, fsz = l->fsz;
  size_t bytes = (size_t)n * fsz;
  int scratch = ab_sockio_idle(&c->conn.io) && bytes <= AB__IO_TX;
  uint8_t *dst = scratch ? l->d->io_tx : ab_sockio_reserve(&c->conn.io, bytes);
  if (dst == NULL) {
    ab__client_fail(c, AB_ENOMEM, "send buffer");
    return;
  }
  const uint8_t *batch = dst;
  uint64_t seq = g.seq;
  for (uint32_t i = 0; i < n; i++, dst += fsz) {
    if (pfx) ab_prefix_encode(dst, l->payload);
    ab_msg_fill(dst + pfx, l->payload, phase, c->h.id, seq + i);
  }
  /* built but too late: never sent, never counted */
  if (ab__win_stamp(&c->h, &g, n, ab_now_ns()) == 0) return;
  ab__client_count_sent(l, phase, bytes);
  int r = scratch ? ab_sockio_send(&c->conn.io, batch, bytes) : ab_sockio_commit(&c->conn.io, bytes);
  if (r < 0) ab__client_fail(c, r, "write");
}

void ab__client_pump(ab__dclient_t *c) { pump(c, ab_now_ns()); }

/* Completes the whole replies in p[0..len).  Returns the bytes they take,
 * or -1 after failing the connection. */
static ssize_t complete_replies(ab__dclient_t *c, const uint8_t *p, size_t len, uint64_t now) {
  const ab__loop_t *l = c->h.loop;
  size_t off = 0;
  for (;;) {
    const uint8_t *m = p + off;
    size_t avail = len - off;
    uint64_t plen = l->payload;
    size_t hdr = 0;
    if (l->pfx) {
      int r = ab_prefix_decode(m, avail, l->payload, &plen);
      if (r == AB_EAGAIN) break;
      if (r < 0) {
        ab__client_fail(c, r, "reply framing");
        return -1;
      }
      hdr = (size_t)r;
      if (plen != l->payload) {
        ab__client_fail(c, AB_ESIZE, "reply length");
        return -1;
      }
    }
    if (avail < hdr + plen) break;
    int r = ab__win_reply(&c->h, m + hdr, (size_t)plen, now);
    if (r < 0) {
      ab__client_fail(c, r, "reply check");
      return -1;
    }
    off += hdr + (size_t)plen;
  }
  return (ssize_t)off;
}

/* Reads until the socket has nothing more.  With no partial reply kept, a
 * recv lands in the loop's shared buffer and only a trailing partial reply
 * is copied to the connection's own; otherwise it appends to that. */
static void on_readable(ab_sockio_t *io) {
  ab__dclient_t *c = (ab__dclient_t *)((char *)io - offsetof(ab__dclient_t, conn.io));
  ab__loop_t *l = c->h.loop = io->watch.running; /* shared:N: this thread's loop */
  ab_sockio_kept_t kept = {&c->rbuf, &c->rcap, &c->rlen};
  uint8_t *shared = l->fsz <= AB__IO_SHARED_MAX ? l->d->io_rx : NULL;
  while (c->h.alive) {
    const uint8_t *data;
    size_t len, room;
    ssize_t n = ab_sockio_recv_frames(io, shared, AB__IO_RX, kept, READ_CHUNK, &data, &len, &room);
    if (n == 0) return;
    if (n < 0) {
      ab__client_fail(c, n == UV_EOF ? AB_ECLOSED : (int)n, n == AB_ENOMEM ? "read buffer" : "read");
      return;
    }
    uint64_t now = ab_now_ns();
    ssize_t used = complete_replies(c, data, len, now);
    if (used < 0) return;
    ab__client_count_received(l, (size_t)used, now);
    if (ab_sockio_keep(kept, data, len, (size_t)used) != 0) {
      ab__client_fail(c, AB_ENOMEM, "read buffer");
      return;
    }
    if (used > 0) {
      pump(c, now);
      ab__loop_check_progress(l);
    }
    if ((size_t)n < room) return;
  }
}

const char *ab__addr_text(const struct sockaddr_storage *a, char *out, size_t cap) {
  char ip[48] = "?";
  if (a->ss_family == AF_INET6) {
    uv_ip6_name((const struct sockaddr_in6 *)a, ip, sizeof(ip));
    snprintf(out, cap, "[%s]:%u", ip, ntohs(((const struct sockaddr_in6 *)a)->sin6_port));
  } else {
    uv_ip4_name((const struct sockaddr_in *)a, ip, sizeof(ip));
    snprintf(out, cap, "%s:%u", ip, ntohs(((const struct sockaddr_in *)a)->sin_port));
  }
  return out;
}

void ab__client_connect_timed_out(ab__dclient_t *c) {
  ab__loop_t *l = c->h.loop;
  char addr[64], msg[256];
  ab__addr_text(&l->connect_addr, addr, sizeof(addr));
  snprintf(msg, sizeof(msg), "connection %u: connect to %s: no answer within the connect timeout"
           " of %g s (ECONNTIMEDOUT)", c->h.id, addr, ab__connect_timeout_s(l->eng->cfg));
  ab__client_setup_error(&c->h, AB_ECONNTIMEDOUT, msg); /* retried, or the run's error */
  c->connect_timed_out = 1;
  ab__client_close(c);
}

void ab__client_connect_expired(ab__dclient_t *c) {
  if (c->h.alive || c->h.closing || c->tcp.data == NULL || c->connect_timed_out) return;
  ab__client_connect_timed_out(c);
}

static void on_connect(uv_connect_t *req, int status) {
  ab__dclient_t *c = req->data;
  ab__loop_t *l = c->h.loop;
  if (status == UV_ECANCELED && c->connect_timed_out) {
    ab__client_connect_done(&c->h); /* counted already */
    return;
  }
  if (status == UV_ECANCELED && l->phase == AB__PH_STOPPING) {
    ab__client_connect_done(&c->h); /* a reopen cut short by the end */
    return;
  }
  ab_hist_record(&l->connect, ab_now_ns() - c->connect_start_ns);
  if (status < 0) {
    char msg[160];
    snprintf(msg, sizeof(msg), "connection %u: connect: %s (%s)", c->h.id,
             ab_strerror(status), ab_err_name(status));
    ab__client_setup_error(&c->h, status, msg);
    ab__client_close(c);
  } else {
    /* shared:N: other threads may run it as soon as it is watched */
    ab__client_take(l, &c->h);
    c->h.alive = 1;
    if (!c->h.reopening || c->h.first_pending) l->ready_clients++; /* the coordinator's count of first connects */
    ab_reactor_watch_set_lock(&c->conn.io.watch, l->eng->shared ? &c->h.mu : NULL);
    int r = ab_sockio_start(&c->conn.io, &l->d->reactor, &c->tcp, on_readable, on_io_error);
    if (r == 0) r = ab__client_allow(c, l->fsz);
    if (r < 0) ab__client_fail(c, r, "read start");
    if (c->h.reopening) {
      /* shared:N: a reopen's end touches c (it is woken): still holding it */
      ab__client_connect_done(&c->h);
      ab__client_give(l, &c->h);
      return;
    }
    ab__client_give(l, &c->h);
  }
  ab__client_connect_done(&c->h);
}

void ab__client_connect(ab__dclient_t *c, const struct sockaddr *addr) {
  ab__loop_t *l = c->h.loop;
  int r = ab__client_tcp_init(l, &c->tcp);
  if (r == 0) {
    c->tcp.data = c;
    c->creq.data = c;
    uv_tcp_nodelay(&c->tcp, 1);
    r = ab__client_tcp_bind(l, &c->tcp, c->h.id);
    c->connect_start_ns = ab_now_ns();
    if (r == 0)
      r = uv_tcp_connect(&c->creq, &c->tcp, addr, on_connect);
  }
  if (r < 0) {
    char msg[160];
    snprintf(msg, sizeof(msg), "connection %u: connect: %s (%s)", c->h.id,
             ab_strerror(r), ab_err_name(r));
    ab__client_setup_error(&c->h, r, msg);
    int opened = c->tcp.data != NULL;
    if (opened) ab__client_close(c);
    ab__client_connect_done(&c->h);
    if (!opened && c->h.reopen) ab__client_closed(&c->h); /* no close callback comes */
  }
}
