/* coro_echo.c -- execution = "coroutine": the built-in echo written as
 * blocking-style code, one stackful C coroutine per connection end, on the
 * loop's scheduler (scheduler.h).  docs/execution.md.
 *
 * The same work as the callback path, in straight-line form:
 *   client:  connect; [TLS handshake]; [WebSocket upgrade];
 *            loop { fill the window and write it; wait for bytes;
 *                   check every reply }
 *   server:  [handshakes]; loop { wait for bytes; parse requests; do the
 *            work; write the replies }
 * Every message is timed exactly as in callback mode (clock read after the
 * batch is built, just before the write; and when the read that completes
 * the echo returns), so callback/coroutine ratios mean something.
 *
 * Every protocol moves its bytes through its connection object (io/conn.h:
 * sockio recv/send on the loop's reactor, the TLS transform, the codec),
 * as the callback path does, so callback/coroutine ratios compare
 * execution models, not IO calls.  Reading stays started while the
 * connection keeps up: the readable callback appends what arrived
 * (decrypted, at most CO_READ_MAX per call, so the task parses between) to
 * the connection's buffer and wakes the task if it waits; starting and
 * stopping a read per call would add two epoll_ctl calls per read and
 * measure that instead of the coroutine model.  Writes never suspend: what
 * the kernel does not take waits in the connection's pending output, and
 * reading stops while that backlog -- replies, pongs, and a server's
 * requests waiting for the pool -- is over the bound of io/sockio.h, as in
 * callback mode.  The TLS handshake is the connection's; the task waits
 * for it to be ready.
 *
 * shared:N (docs/topologies.md): a task belongs to its connection and is
 * resumed only by whoever holds the connection's lock -- the reactor
 * callback of whichever thread took the connection's event, or the home
 * loop (its connect, phase wake-ups, sweep and stop) after
 * ab__client_take -- so it runs on any loop thread, one at a time, its
 * stack migrating with it (base/coro.h).  Every callback first points the
 * connection at the running thread's loop, and the task reads its loop
 * afresh after every wait (never a copy from before), so its counters,
 * histograms and errors go to the thread that did the work.  The TCP
 * connect is the driver's own (uv_tcp_connect on the home loop, whose
 * callback takes the lock before it resumes the task), not the
 * scheduler's ab_task_connect.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "base/clock.h"
#include "proto/caps.h"
#include "proto/codecs.h"
#include "drivers/drivers_int.h"
#include "engine/window.h"
#include "proto/framing.h"
#include "io/scheduler.h"
#include "base/work.h"

/* the scenario's coroutine_stack, or the capability table's default */
#define STACK_SIZE(l) ((size_t)((l)->eng->cfg->task_stack ? (l)->eng->cfg->task_stack \
                                 : ab_caps_limits()->coroutine_stack_default))
#define READ_CHUNK 65536
/* What one readable callback appends before the task parses it (the rest
 * stays in the socket: level-triggered, the callback runs again). */
#define CO_READ_MAX ((size_t)256 << 10)

/* ---- waiting ------------------------------------------------------------ */

static void clear_flag(void *arg) { *(int *)arg = 0; }

/* Suspends the current task until wake() (data, an error, a phase change,
 * returned work) or cancellation.  Returns 0 or AB_EINTR. */
static int wait_event(int *waiting) {
  ab_task_t *t = ab_task_current();
  *waiting = 1;
  ab_task_set_cleanup(t, clear_flag, waiting);
  int r = ab_task_suspend();
  *waiting = 0;
  return r;
}

static void wake(ab_task_t *t, int *waiting) {
  if (t && *waiting) {
    *waiting = 0;
    ab_task_wake(t, 0);
  }
}

/* Appends what the socket has now (up to CO_READ_MAX) to the connection's
 * input (the task parses it later, so not into the loop's shared buffer).
 * Returns 0 or the error for the task (AB_ECLOSED at end of stream, after
 * the plaintext before it); *got is set when bytes arrived. */
static int co_recv(ab_conn_t *conn, int *got) {
  size_t start = *conn->in.len;
  for (;;) {
    size_t room = 0, before = *conn->in.len;
    ssize_t n = ab_conn_recv(conn, &room);
    if (*conn->in.len > before) *got = 1;
    if (n == 0) return 0;
    if (n < 0) return n == UV_EOF ? AB_ECLOSED : (int)n;
    if ((size_t)n < room || *conn->in.len - start >= CO_READ_MAX) return 0;
  }
}

/* Plain tcp, the task waiting to parse with nothing kept (co_idle): one
 * recv into the loop's shared io_rx.  The task, woken at once inside this
 * callback, parses the bytes there and copies only a trailing partial frame
 * to its own buffer (co_consume), so thousands of connections stream
 * through one hot buffer, as in callback mode.  0 or the error for the
 * task. */
static int co_recv_view(ab_conn_t *conn, uint8_t *rx, const uint8_t **view, size_t *vlen,
                        int *got) {
  ssize_t n = ab_sockio_recv(&conn->io, rx, AB__IO_RX);
  if (n > 0) {
    *view = rx;
    *vlen = (size_t)n;
    *got = 1;
    return 0;
  }
  if (n == 0) return 0;
  return n == UV_EOF ? AB_ECLOSED : (int)n;
}

/* After the task parsed in[0..used) of its input: the rest stays for the
 * next read -- moved to the front of its own buffer, or copied there from
 * io_rx when the input was a view.  0 or AB_ENOMEM. */
static int co_consume(const uint8_t **view, size_t *vlen, ab_sockio_kept_t kept, size_t used) {
  if (*view == NULL) {
    ab__consume(*kept.buf, kept.len, used);
    return 0;
  }
  const uint8_t *v = *view;
  *view = NULL;
  return ab_sockio_keep(kept, v, *vlen, used);
}

/* The next message in in[0..avail): as the codec's parse (side's
 * function), but a plain framing (length, raw) is cut here, inline, and
 * an incomplete frame stays in the caller's input for the next read --
 * the task keeps its input, so the codec's gathering is not needed.  A
 * frame the cut refuses goes to the codec, which counts and words it. */
static inline int co_parse(ab_codec_t *codec, int client, const uint8_t *in, size_t avail,
                           size_t *used, ab_msgview_t *msg) {
  const ab_codec_vt_t *vt = codec->vt;
  if (vt->plain_frames) {
    size_t hdr;
    uint64_t plen;
    int64_t n = ab_frame_cut(in, avail, vt->plain_frames == AB_FRAMES_RAW, codec->max_msg, &hdr, &plen);
    if (n > 0) {
      msg->data = in + hdr;
      msg->len = (size_t)plen;
      *used = (size_t)n;
      return 1;
    }
    if (n == 0) {
      *used = 0;
      return 0;
    }
  }
  return client ? vt->client_parse(codec, in, avail, used, msg)
                : vt->server_parse(codec, in, avail, used, msg);
}

/* ---- client ------------------------------------------------------------- */

static void client_on_readable(ab_conn_t *conn) {
  ab__dclient_t *c = conn->data;
  c->h.loop = conn->io.watch.running; /* shared:N: this thread's loop */
  int got = 0;
  int r = c->co_idle && c->co_waiting && c->rlen == 0
              ? co_recv_view(conn, c->h.loop->d->io_rx, &c->co_view, &c->co_vlen, &got)
              : co_recv(conn, &got);
  if (got) c->co_now = ab_now_ns();
  if (r < 0) c->co_err = ab_err_stream_end(r, AB_SIDE_CLIENT);
  wake(c->task, &c->co_waiting);
  c->co_view = NULL; /* parsed (or the task ended): io_rx is the next one's */
}

static void client_on_ready(ab_conn_t *conn) {
  ab__dclient_t *c = conn->data;
  c->h.loop = conn->io.watch.running;
  wake(c->task, &c->co_waiting);
}

static void client_on_error(ab_conn_t *conn, int err) {
  ab__dclient_t *c = conn->data;
  c->h.loop = conn->io.watch.running;
  c->co_err = ab_err_stream_end(err, AB_SIDE_CLIENT);
  wake(c->task, &c->co_waiting);
}

static const ab_conn_cbs_t client_cbs = {
    .on_ready = client_on_ready,
    .on_readable = client_on_readable,
    .on_error = client_on_error,
};

static void client_setup_failed(ab__dclient_t *c, int code, const char *what, const char *detail) {
  char msg[256];
  snprintf(msg, sizeof(msg), "connection %u: %s: %s (%s)", c->h.id, what,
           detail && detail[0] ? detail : ab_strerror(code), ab_err_name(code));
  /* a task cancelled at stop is no error of the run */
  if (c->h.loop->phase != AB__PH_STOPPING) ab__client_setup_error(&c->h, code, msg);
  c->h.alive = 0;
  /* closed now, so that a reopen that failed can be tried again */
  if (c->tcp.data) ab__client_close(c);
  ab__client_reported(c);
}

/* Builds and writes as many messages as the window allows.  0 or error. */
static int client_send(ab__dclient_t *c) {
  ab__win_grant_t g;
  /* the clock of the last read is recent enough for the phase gate */
  if (ab__win_grant(&c->h, c->co_now, &g) == 0) return 0;
  uint32_t n = g.n;
  size_t room = (size_t)n * ab__msg_room(c->h.loop);
  /* a batch that fits is built in the loop's io_tx (ab_conn_send copies
   * what the kernel does not take), so connections share hot bytes */
  uint8_t *dst = c->h.loop->d->io_tx;
  if (room > AB__IO_TX) {
    if (ab_buf_grow(&c->sbuf, &c->scap, 0, room) != 0) return AB_ENOMEM;
    dst = c->sbuf;
  }
  size_t total = ab__client_build(c, dst, n, g.phase, g.seq);
  if (ab__win_stamp(&c->h, &g, n, ab_now_ns()) == 0) return 0; /* built too late: never sent */
  ab__client_count_sent(c->h.loop, g.phase, total);
  return ab_conn_send(&c->conn, dst, total);
}

/* The TCP connect finished (home loop): the task resumes holding the
 * connection's lock, as every resume does. */
static void client_connected(uv_connect_t *req, int status) {
  ab__dclient_t *c = req->data;
  ab__client_take(c->h.home, &c->h);
  c->co_connect = status < 0 ? status : 1;
  wake(c->task, &c->co_waiting);
  ab__client_give(c->h.home, &c->h);
}

/* Connects c's socket (on its home loop, where the task runs now).  0 or
 * an error: the connect's, AB_ETIMEDOUT (the connect limit) or AB_EINTR. */
static int client_connect(ab__dclient_t *c) {
  c->co_connect = 0;
  c->creq.data = c;
  int r = uv_tcp_connect(&c->creq, &c->tcp, (const struct sockaddr *)&c->h.loop->connect_addr,
                         client_connected);
  while (r == 0 && c->co_connect == 0 && !c->co_err)
    if (wait_event(&c->co_waiting) < 0) r = AB_EINTR;
  if (r == 0 && c->co_connect == 0) r = c->co_err;
  return r < 0 ? r : c->co_connect < 0 ? c->co_connect : 0;
}

/* Connect and handshakes: before warm-up, timed apart.  0, or -1 after
 * reporting the failure.  (c->h.loop is read afresh after each wait.) */
static int client_open(ab__dclient_t *c) {
  ab__engine_t *eng = c->h.loop->eng;
  int r = client_connect(c);
  uint64_t now = ab_now_ns();
  if (r == AB_ECONNTIMEDOUT) {
    /* no answer by the connect timeout: counted with the address, closed */
    ab__client_connect_timed_out(c);
    c->h.alive = 0;
    ab__client_reported(c);
    return -1;
  }
  ab_hist_record(&c->h.loop->connect, now - c->connect_start_ns);
  if (r < 0) {
    client_setup_failed(c, r, "connect", r == AB_ETIMEDOUT ? "did not finish within the timeout" : NULL);
    return -1;
  }
  ab__loop_t *l = c->h.loop; /* the home: the task runs in its connect callback */
  r = ab__conn_setup(l, &c->conn, 1, 1, c->h.id);
  c->conn.data = c;
  /* shared:N: other threads may run it as soon as it is watched */
  ab_reactor_watch_set_lock(&c->conn.io.watch, eng->shared ? &c->h.mu : NULL);
  if (r == 0) r = ab_conn_start(&c->conn, &l->d->reactor, &c->tcp,
                                (ab_sockio_kept_t){&c->rbuf, &c->rcap, &c->rlen}, &client_cbs);
  if (r == 0) r = ab__client_allow(c, eng->dc->codec_vt->max_overhead + eng->cfg->payload);
  if (r < 0) {
    client_setup_failed(c, r, "connection setup", ab_conn_error_text(&c->conn));
    return -1;
  }
  while (!c->conn.ready && !c->co_err) {
    if (wait_event(&c->co_waiting) < 0) {
      client_setup_failed(c, AB_EINTR, "TLS handshake", NULL);
      return -1;
    }
  }
  if (!c->conn.ready && c->co_err == AB_ETIMEDOUT) {
    client_setup_failed(c, AB_ETIMEDOUT, "handshake", "did not finish within the timeout");
    return -1;
  }
  if (!c->conn.ready) {
    client_setup_failed(c, c->co_err, "TLS handshake",
                        c->co_err == AB_EPROTO ? ab_conn_error_text(&c->conn) : NULL);
    return -1;
  }
  if (eng->dc->use_ws) {
    char key[AB_WS_KEY_LEN + 1], req[1024];
    ab_ws_hs_t hs;
    int n = ab_ws_new_key(key) < 0 || ab_ws_hs_init(&hs, 1, key) < 0
                ? AB_EINVAL
                : ab_ws_request(req, sizeof(req), eng->dc->host, "/echo", key);
    if (n < 0 || (r = ab_conn_send(&c->conn, (const uint8_t *)req, (size_t)n)) < 0) {
      client_setup_failed(c, n < 0 ? n : r, "websocket upgrade", NULL);
      return -1;
    }
    for (;;) {
      size_t used = 0;
      int h = ab_ws_hs_feed(&hs, c->rbuf, c->rlen, &used);
      ab__consume(c->rbuf, &c->rlen, used);
      if (h < 0) {
        client_setup_failed(c, AB_EPROTO, "websocket upgrade",
                            "the server's 101 answer was not valid");
        return -1;
      }
      if (h == 1) break;
      if (wait_event(&c->co_waiting) < 0 || c->co_err) {
        client_setup_failed(c, c->co_err ? c->co_err : AB_EINTR, "websocket upgrade", NULL);
        return -1;
      }
    }
  }
  ab__client_ready(c);
  return 0;
}

/* One echo reply of a plain framing: ab__client_reply (stream.c) without
 * what a plain framing never has -- request mode, a reply that asks to
 * close -- so the call and its checks stay off the per-message path.  0
 * or an error code. */
static inline int co_reply_plain(ab__dclient_t *c, const ab_msgview_t *msg, uint64_t now) {
  if (msg->len != c->h.loop->payload) return AB_ESIZE;
  int r = ab__win_reply(&c->h, msg->data, msg->len, now);
  return r < 0 ? r : 0;
}

static void client_main(void *arg) {
  ab__dclient_t *c = arg;
  int r;
  if (client_open(c) < 0) return;
  /* echo replies of a plain framing are checked here, inline */
  int plain = c->conn.codec->vt->plain_frames && !c->h.loop->eng->dc->requests;
  /* plain tcp reads may land in io_rx while the task waits (co_recv_view) */
  int viewed = c->conn.codec->vt->plain_frames && c->conn.tls == NULL &&
               c->h.loop->fsz <= AB__IO_SHARED_MAX;
  ab_sockio_kept_t kept = {&c->rbuf, &c->rcap, &c->rlen};
  for (;;) {
    if (!c->h.alive) return;
    if ((r = client_send(c)) < 0) {
      ab__client_fail(c, r, "write");
      return;
    }
    /* churn: its round trips done, it is replaced by a new task */
    if (ab__win_spent(&c->h) && ab__client_recycle(c)) return;
    ab_outbuf_t *pl = ab_conn_out(&c->conn);
    if (pl->len > 0 && (r = ab_conn_flush(&c->conn)) < 0) { /* pongs */
      ab__client_fail(c, r, "write");
      return;
    }
    /* replies already here (they may have arrived while this task was
     * writing) are parsed before waiting, so no wake-up is lost */
    uint64_t now = c->co_now;
    size_t off = 0;
    int got = 0;
    const uint8_t *in = c->co_view ? c->co_view : c->rbuf;
    size_t avail = c->co_view ? c->co_vlen : c->rlen;
    for (;;) {
      size_t used = 0;
      ab_msgview_t msg;
      r = co_parse(c->conn.codec, 1, in + off, avail - off, &used, &msg);
      off += used;
      if (r == 0) break;
      if (r > 0) r = plain ? co_reply_plain(c, &msg, now) : ab__client_reply(c, &msg, now);
      if (r < 0) {
        ab__client_fail(c, r, "reply");
        return;
      }
      got = 1;
    }
    ab__client_count_received(c->h.loop, off, now);
    if (co_consume(&c->co_view, &c->co_vlen, kept, off) != 0) {
      ab__client_fail(c, AB_ENOMEM, "read buffer");
      return;
    }
    /* pongs the parse queued go out now, where the bound counts them */
    if (pl->len > 0 && (r = ab_conn_flush(&c->conn)) < 0) {
      ab__client_fail(c, r, "write");
      return;
    }
    if (got) {
      ab__loop_check_progress(c->h.loop);
      continue; /* refill the window first */
    }
    if (c->co_err) {
      int e = c->co_err;
      const char *what = "read";
      if (e == AB_ECLOSED && ab_codec_client_eof(c->conn.codec) < 0) {
        e = AB_EPROTO;
        what = "connection closed in the middle of a response (premature EOF)";
      }
      ab__client_fail(c, e, what);
      return;
    }
    c->co_idle = viewed;
    r = wait_event(&c->co_waiting);
    c->co_idle = 0;
    if (r < 0) return; /* cancelled */
    if (!c->h.alive) return;
  }
}

static void client_task_exit(ab_task_t *t, void *arg) {
  ab__dclient_t *c = arg;
  (void)t;
  c->task = NULL;
}

void ab__co_client_start(ab__dclient_t *c) {
  ab__loop_t *l = c->h.loop; /* its home: the engine starts it there */
  int r = ab__client_tcp_init(l, &c->tcp);
  if (r == 0) {
    c->tcp.data = c;
    uv_tcp_nodelay(&c->tcp, 1);
    c->connect_start_ns = ab_now_ns();
    r = ab__client_tcp_bind(l, &c->tcp, c->h.id);
    if (r == 0) r = ab_task_c_new(l->d->sched, &c->task, STACK_SIZE(l), client_main, c);
  }
  if (r < 0) {
    c->task = NULL;
    client_setup_failed(c, r, "coroutine", NULL);
    if (c->tcp.data) ab__client_close(c);
    else if (c->h.reopen) ab__client_closed(&c->h); /* no close callback comes */
    return;
  }
  ab_task_on_exit(c->task, client_task_exit, c);
  ab_task_start(c->task);
}

void ab__co_client_wake(ab__dclient_t *c) { wake(c->task, &c->co_waiting); }

void ab__co_client_connect_expired(ab__dclient_t *c) {
  /* a task waiting for its connect or its handshakes is told: a connect
   * with no answer is its own class (client_open) */
  if (c->ly.reported || c->task == NULL || !c->co_waiting) return;
  c->co_err = c->conn.data == NULL ? AB_ECONNTIMEDOUT : AB_ETIMEDOUT;
  wake(c->task, &c->co_waiting);
}

/* ---- server ------------------------------------------------------------- */

/* While the task waits for the pool, what it holds and what arrives
 * meanwhile are owed output (ab__sconn_owe_held): past the bound reads stop
 * until the task answers them, so a client that sends faster than the pool
 * works is pushed back instead of buffered. */
static void server_on_readable(ab_conn_t *conn) {
  ab__sconn_t *s = conn->data;
  s->loop = conn->io.watch.running; /* shared:N: this thread's loop */
  int got = 0;
  int r = s->co_idle && s->co_waiting && s->rlen == 0
              ? co_recv_view(conn, s->loop->d->io_rx, &s->co_view, &s->co_vlen, &got)
              : co_recv(conn, &got);
  if (r < 0) s->co_err = r;
  if (s->jobs_out > 0) ab__sconn_owe_held(s, s->hlen + s->rlen);
  wake(s->task, &s->co_waiting);
}

static void server_on_ready(ab_conn_t *conn) {
  ab__sconn_t *s = conn->data;
  s->loop = conn->io.watch.running;
  wake(s->task, &s->co_waiting);
}

static void server_on_error(ab_conn_t *conn, int err) {
  ab__sconn_t *s = conn->data;
  s->loop = conn->io.watch.running;
  s->co_err = ab_err_stream_end(err, AB_SIDE_SERVER);
  wake(s->task, &s->co_waiting);
}

/* pending output all sent: a task finishing a half-closed client's
 * replies (server_drain) goes on */
static void server_on_drained(ab_conn_t *conn) {
  ab__sconn_t *s = conn->data;
  s->loop = conn->io.watch.running;
  wake(s->task, &s->co_waiting);
}

static const ab_conn_cbs_t server_cbs = {
    .on_ready = server_on_ready,
    .on_readable = server_on_readable,
    .on_error = server_on_error,
    .on_drained = server_on_drained,
};

static int server_flush(ab__sconn_t *s) { return ab_conn_flush(&s->conn); }

/* Plain frames echoed in place (tcp without a pool): the whole frames at
 * the start of s's input, cut and counted at once as the callback server
 * does.  Returns the bytes they take; what follows is a partial frame, or
 * one the cut refuses (the codec's parse then says why). */
static size_t echo_run(ab__sconn_t *s, const uint8_t *in, size_t avail, int raw) {
  ab__loop_t *l = s->loop;
  uint64_t max = s->conn.codec->max_msg, work = l->eng->cfg->work;
  uint64_t frames = 0, bytes = 0;
  size_t off = 0;
  for (;;) {
    size_t hdr;
    uint64_t plen;
    int64_t n = ab_frame_cut(in + off, avail - off, raw, max, &hdr, &plen);
    if (n <= 0) break;
    off += (size_t)n;
    frames++;
    bytes += plen;
  }
  l->server_messages += frames;
  l->server_bytes += bytes;
  if (work) {
    for (uint64_t i = 0; i < frames; i++) l->work_sink ^= ab_work(work, l->work_sink + 1);
  }
  return off;
}

/* The client's orderly close (its FIN, TLS close_notify) is a half-close
 * (docs/run-object.md): the replies still in the pending output go out
 * before the connection closes, as the callback server does, with reads
 * held (a readable end of stream would wake the task for ever).  Returns
 * once they are gone, the connection failed or the task is cancelled. */
static void server_drain(ab__sconn_t *s) {
  ab_sockio_t *io = &s->conn.io;
  if (ab_sockio_hold_reads(io, 1) < 0) return;
  while (s->co_err == AB_ECLOSED && !io->failed && !ab_sockio_idle(io)) {
    if (wait_event(&s->co_waiting) < 0) return;
  }
}

/* WebSocket: the client's upgrade request read and answered (0), or
 * refused or the connection gone (-1). */
static int server_ws_upgrade(ab__sconn_t *s, ab_outbuf_t *out) {
  ab_ws_hs_t hs;
  ab_ws_hs_init(&hs, 0, NULL);
  for (;;) {
    size_t used = 0;
    int h = ab_ws_hs_feed(&hs, s->rbuf, s->rlen, &used);
    if (h != 0) {
      char reply[512];
      int n = ab_ws_hs_reply(&hs, reply, sizeof(reply));
      if (n > 0) ab_outbuf_append(out, reply, (size_t)n);
      ab__consume(s->rbuf, &s->rlen, used);
      server_flush(s);
      if (h < 0) {
        ab__loop_error(s->loop, AB_EPROTO, "server: websocket upgrade refused");
        return -1;
      }
      return 0;
    }
    ab__consume(s->rbuf, &s->rlen, used);
    if (wait_event(&s->co_waiting) < 0 || s->co_err) return -1;
  }
}

/* pool:N: msg held (length and bytes, in order) and its work handed to
 * the pool; -1 when out of memory. */
static int server_hold(ab__sconn_t *s, const ab_msgview_t *msg) {
  size_t need = 4 + msg->len;
  if (ab_buf_grow(&s->held, &s->hcap, s->hlen, need) != 0) return -1;
  uint32_t len = (uint32_t)msg->len;
  memcpy(s->held + s->hlen, &len, 4);
  memcpy(s->held + s->hlen + 4, msg->data, msg->len);
  s->hlen += need;
  s->jobs_out++;
  s->jobs_held++;
  ab__sconn_submit(s);
  return 0;
}

/* pool:N: waits until the work of the `held` requests came back, then
 * replies to them in order (0; -1: the connection is gone). */
static int server_take_back(ab__sconn_t *s, const ab_codec_vt_t *vt, uint64_t held) {
  ab__sconn_owe_held(s, s->hlen + s->rlen);
  while (s->jobs_back < held) {
    if (wait_event(&s->co_waiting) < 0) return -1;
  }
  s->jobs_back -= held;
  s->jobs_out -= held;
  s->jobs_held -= held;
  size_t p = 0;
  while (p < s->hlen) {
    uint32_t len;
    memcpy(&len, s->held + p, 4);
    vt->server_reply(s->conn.codec, s->held + p + 4, len);
    p += 4 + (size_t)len;
  }
  s->hlen = 0;
  return 0;
}

static void server_main(void *arg) {
  ab__sconn_t *s = arg;
  ab__loop_t *home = s->loop; /* started on the loop that accepted it */
  ab__engine_t *eng = home->eng;
  const ab_codec_vt_t *vt = eng->dc->codec_vt;
  ab_outbuf_t *out = ab_conn_out(&s->conn);
  int r = ab_conn_start(&s->conn, &home->d->reactor, &s->tcp,
                        (ab_sockio_kept_t){&s->rbuf, &s->rcap, &s->rlen}, &server_cbs);
  if (r < 0) goto done;
  while (!s->conn.ready) {
    if (s->co_err || wait_event(&s->co_waiting) < 0) goto done;
  }
  if (eng->dc->use_ws && server_ws_upgrade(s, out) < 0) goto done;
  s->ly.state = AB__LY_READY;
  /* (s->loop, the thread running it now, is read afresh after every wait) */
  /* plain tcp without a pool echoes whole frames straight from the read
   * buffer, as the callback server does, instead of copying each through
   * server_reply */
  int direct = !eng->pool && !s->conn.tls && vt->request_is_reply;
  int plain = direct && vt->plain_frames, raw = vt->plain_frames == AB_FRAMES_RAW;
  ab_sockio_kept_t kept = {&s->rbuf, &s->rcap, &s->rlen};
  for (;;) {
    ab_sockio_owe(&s->conn.io, 0); /* parsing again: nothing held */
    size_t off = 0;
    uint64_t held = 0;
    /* the input: s's own buffer, or the loop's io_rx (co_recv_view) */
    const uint8_t *in = s->co_view ? s->co_view : s->rbuf;
    size_t avail = s->co_view ? s->co_vlen : s->rlen;
    size_t run_lo = 0, run_hi = 0; /* frames to echo from in[run_lo, run_hi) */
    if (plain) run_hi = off = echo_run(s, in, avail, raw);
    for (;;) {
      size_t used = 0, before = off;
      ab_msgview_t msg;
      r = co_parse(s->conn.codec, 0, in + off, avail - off, &used, &msg);
      off += used;
      if (r == 0) break;
      if (r < 0) {
        if (r != AB_ECLOSED) {
          char why[160], what[200];
          snprintf(what, sizeof(what), "server: request from a client: %s",
                   ab_conn_reason(&s->conn, r, why, sizeof(why)));
          ab__loop_error(s->loop, r, what);
        }
        server_flush(s); /* a close frame, or the reply before Connection: close */
        goto done;
      }
      s->loop->server_messages++;
      s->loop->server_bytes += msg.len;
      if (direct && msg.data >= in + before && msg.data + msg.len <= in + off) {
        if (eng->cfg->work) s->loop->work_sink ^= ab_work(eng->cfg->work, s->loop->work_sink + 1);
        if (run_hi != before) run_lo = before; /* (always contiguous in practice) */
        run_hi = off;
        continue;
      }
      if (run_hi > run_lo) { /* keep the order: earlier frames first */
        ab_outbuf_append(out, in + run_lo, run_hi - run_lo);
        run_lo = run_hi = 0;
      }
      if (eng->pool) {
        /* hand the work to the pool; replies go out when all returned */
        if (server_hold(s, &msg) < 0) goto done;
        held++;
      } else {
        if (eng->cfg->work) s->loop->work_sink ^= ab_work(eng->cfg->work, s->loop->work_sink + 1);
        if (vt->server_reply(s->conn.codec, msg.data, msg.len) < 0) {
          server_flush(s);
          goto done;
        }
      }
    }
    if (run_hi > run_lo) {
      /* straight from the input when nothing is queued before it (plain
       * tcp); what the kernel does not take is copied to the pending
       * output */
      if ((r = ab_conn_send(&s->conn, in + run_lo, run_hi - run_lo)) < 0) {
        ab__sconn_error(s, r, "write");
        goto done;
      }
    }
    if (co_consume(&s->co_view, &s->co_vlen, kept, off) != 0) {
      ab__sconn_error(s, AB_ENOMEM, "read buffer");
      goto done;
    }
    if (held && server_take_back(s, vt, held) < 0) goto done;
    if ((r = server_flush(s)) < 0) {
      ab__sconn_error(s, r, "write");
      goto done;
    }
    if (s->co_err == AB_ECLOSED) server_drain(s);
    if (s->co_err) goto done;
    if (off == 0) {
      s->co_idle = plain && s->conn.tls == NULL;
      r = wait_event(&s->co_waiting);
      s->co_idle = 0;
      if (r < 0) goto done;
    }
  }
done:
  /* a read's failure or the socket's: counted by the server's one rule (a
   * client's reset is a reset, its orderly close no error) */
  if (!s->closing && s->co_err) ab__sconn_error(s, s->co_err, "read");
  if (!s->closing) ab__sconn_close(s);
}

static void server_task_exit(ab_task_t *t, void *arg) {
  ab__sconn_t *s = arg;
  (void)t;
  s->task = NULL;
}

void ab__co_server_accept(ab__sconn_t *s) {
  ab__loop_t *l = s->loop;
  int r = ab__conn_setup(l, &s->conn, 0, 1, 0);
  s->conn.data = s;
  s->conn.io.watch.lock = l->eng->shared ? &s->mu : NULL; /* a new connection: nobody reads it yet */
  if (r == 0) r = ab_task_c_new(l->d->sched, &s->task, STACK_SIZE(l), server_main, s);
  if (r < 0) {
    s->task = NULL;
    ab__sconn_error(s, r, "accept setup");
    return;
  }
  s->ly.state = AB__LY_READY;
  ab_task_on_exit(s->task, server_task_exit, s);
  ab_task_start(s->task);
}

void ab__co_job_done(ab__sconn_t *s) {
  s->jobs_back++;
  wake(s->task, &s->co_waiting);
}
