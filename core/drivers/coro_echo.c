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
 * Reading stays started for the life of a connection: the read callback
 * appends what arrived (decrypted, for TLS) to the connection's buffer and
 * wakes the task if it waits.  Starting and stopping a read per call
 * (ab_task_read) would add two epoll_ctl calls per read and measure that
 * instead of the coroutine model.  Writes are ab_task_write: uv_try_write,
 * and the task suspends only when the kernel did not take everything.
 * Plain tcp moves its bytes as the callback path does (sockio.h: recv/send
 * on a uv_poll_t; what the kernel does not take waits in the connection's
 * pending output, and an echo server stops reading meanwhile), so the
 * callback/coroutine ratio compares execution models, not IO calls.
 * All protocols go through their codec (codecs.h), plain tcp included.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "base/clock.h"
#include "proto/codecs.h"
#include "drivers/drivers_int.h"
#include "engine/window.h"
#include "proto/framing.h"
#include "io/scheduler.h"
#include "base/work.h"

#define STACK_SIZE (64 * 1024)
#define READ_CHUNK 65536

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

/* Writes plaintext p[0..n): through TLS when there is TLS, through the
 * sockio when plain tcp has one.  0 or error. */
static int co_write(uv_stream_t *st, ab_sockio_t *io, ab__layers_t *ly, uint8_t **cbuf,
                    size_t *ccap, const uint8_t *p, size_t n) {
  if (io->started) return n ? ab_sockio_send(io, p, n) : 0;
  if (ly->tls == NULL) return n ? ab_task_write(st, p, n) : 0;
  if (n) {
    int r = ab_tls_write(ly->tls, p, n);
    if (r < 0) return r;
  }
  size_t pend = ab_tls_pending_out(ly->tls);
  if (pend == 0) return 0;
  if (ab_buf_grow(cbuf, ccap, 0, pend) != 0) return AB_ENOMEM;
  size_t got = ab_tls_take_out(ly->tls, *cbuf, pend);
  return ab_task_write(st, *cbuf, got);
}

/* ---- client ------------------------------------------------------------- */

static void c_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  ab__client_t *c = h->data;
  (void)hint;
  ab__ly_alloc(&c->ly, c->loop, &c->rbuf, &c->rcap, c->rlen, buf);
}

static void c_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  ab__client_t *c = st->data;
  if (nread == 0) return;
  if (nread < 0) {
    c->co_err = nread == UV_EOF ? AB_ECLOSED : (int)nread;
  } else {
    c->co_now = ab_now_ns();
    int r = ab__ly_ingest(&c->ly, &c->rbuf, &c->rcap, &c->rlen, buf, nread);
    if (r < 0) c->co_err = r;
  }
  wake(c->task, &c->co_waiting);
}

/* Appends what plain tcp's socket has to a connection's buffer (the task
 * parses it later, so not to the loop's shared one).  Returns 0 or the
 * error for the task (AB_ECLOSED at end of stream); *got is set when bytes
 * arrived. */
static int co_recv(ab_sockio_t *io, ab_sockio_kept_t k, int *got) {
  for (;;) {
    const uint8_t *data;
    size_t len, room;
    ssize_t n = ab_sockio_recv_frames(io, NULL, 0, k, READ_CHUNK, &data, &len, &room);
    if (n == 0) return 0;
    if (n < 0) return n == UV_EOF ? AB_ECLOSED : (int)n;
    *k.len = len;
    *got = 1;
    if ((size_t)n < room) return 0;
  }
}

static void c_io_readable(ab_sockio_t *io) {
  ab__client_t *c = (ab__client_t *)((char *)io - offsetof(ab__client_t, io));
  int got = 0;
  int r = co_recv(io, (ab_sockio_kept_t){&c->rbuf, &c->rcap, &c->rlen}, &got);
  if (got) c->co_now = ab_now_ns();
  if (r < 0) c->co_err = r;
  wake(c->task, &c->co_waiting);
}

static void c_io_error(ab_sockio_t *io, int err) {
  ab__client_t *c = (ab__client_t *)((char *)io - offsetof(ab__client_t, io));
  c->co_err = err;
  wake(c->task, &c->co_waiting);
}

static void c_setup_fail(ab__client_t *c, int code, const char *what, const char *detail) {
  char msg[256];
  snprintf(msg, sizeof(msg), "connection %u: %s: %s (%s)", c->id, what,
           detail && detail[0] ? detail : ab_strerror(code), ab_err_name(code));
  ab__loop_error(c->loop, code, msg);
  c->alive = 0;
  ab__client_reported(c);
}

/* Builds and writes as many messages as the window allows.  0 or error. */
static int c_send(ab__client_t *c) {
  ab__loop_t *l = c->loop;
  const ab_case_cfg_t *cfg = l->eng->cfg;
  const ab_codec_vt_t *vt = l->eng->dc->codec_vt;
  ab__win_grant_t g;
  /* the clock of the last read is recent enough for the phase gate */
  if (ab__win_grant(c, c->co_now, &g) == 0) return 0;
  uint32_t n = g.n;
  uint8_t phase = g.phase;
  size_t most = (size_t)n * (vt->max_overhead + cfg->payload);
  if (ab_buf_grow(&c->sbuf, &c->scap, 0, most) != 0) return AB_ENOMEM;
  uint64_t seq = g.seq;
  size_t total = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint8_t *m = c->sbuf + total;
    size_t hdr = vt->client_begin(c->ly.codec, m, cfg->payload);
    ab_msg_fill(m + hdr, cfg->payload, phase, c->id, seq + i);
    total += hdr + cfg->payload +
             vt->client_end(c->ly.codec, m + hdr, cfg->payload, m + hdr + cfg->payload);
  }
  if (ab__win_stamp(c, &g, n, ab_now_ns()) == 0) return 0; /* built too late: never sent */
  return co_write((uv_stream_t *)&c->tcp, &c->io, &c->ly, &c->cbuf, &c->ccap, c->sbuf, total);
}

static void c_main(void *arg) {
  ab__client_t *c = arg;
  ab__loop_t *l = c->loop;
  ab__engine_t *eng = l->eng;
  const ab_codec_vt_t *vt = eng->dc->codec_vt;
  int r;

  /* connect and handshakes: before warm-up, timed apart */
  r = ab_task_connect(&c->tcp, (const struct sockaddr *)&l->connect_addr);
  uint64_t now = ab_now_ns();
  ab_hist_record(&l->connect, now - c->connect_start_ns);
  if (r < 0) {
    c_setup_fail(c, r, "connect", NULL);
    return;
  }
  c->ly.t_connected = now;
  ab_outbuf_init(&c->ly.plain, NULL, NULL);
  if (eng->dc->use_tls) r = ab_tls_conn_new(eng->dc->tls_client, 1, eng->dc->verify_host, &c->ly.tls);
  if (r == 0) r = ab_codec_create(vt, &c->ly.plain, eng->cfg->payload, 1, &c->ly.codec);
  if (r == 0 && vt == &ab_codec_http) ab_http_set_host(c->ly.codec, eng->dc->host);
  if (r == 0)
    r = eng->cfg->protocol == AB_PROTO_TCP
            ? ab_sockio_start(&c->io, &l->loop, &c->tcp, 0, c_io_readable, c_io_error)
            : uv_read_start((uv_stream_t *)&c->tcp, c_alloc, c_read);
  if (r < 0) {
    c_setup_fail(c, r, "connection setup", NULL);
    return;
  }
  if (c->ly.tls) {
    c->ly.state = AB__LY_HS_TLS;
    for (;;) {
      int h = ab_tls_handshake(c->ly.tls);
      int w = co_write((uv_stream_t *)&c->tcp, &c->io, &c->ly, &c->cbuf, &c->ccap, NULL, 0);
      if (h < 0) {
        c_setup_fail(c, AB_EPROTO, "TLS handshake", ab_tls_error(c->ly.tls));
        return;
      }
      if (w < 0) {
        c_setup_fail(c, w, "TLS handshake write", NULL);
        return;
      }
      if (h == 1) break;
      if (wait_event(&c->co_waiting) < 0 || c->co_err) {
        c_setup_fail(c, c->co_err ? c->co_err : AB_EINTR, "TLS handshake", NULL);
        return;
      }
    }
    c->ly.state = AB__LY_READY;
    ab__ly_drain_tls(&c->ly, &c->rbuf, &c->rcap, &c->rlen);
  }
  if (eng->dc->use_ws) {
    char key[AB_WS_KEY_LEN + 1], req[1024];
    ab_ws_hs_t hs;
    int n = ab_ws_new_key(key) < 0 || ab_ws_hs_init(&hs, 1, key) < 0
                ? AB_EINVAL
                : ab_ws_request(req, sizeof(req), eng->dc->host, "/echo", key);
    if (n < 0 ||
        (r = co_write((uv_stream_t *)&c->tcp, &c->io, &c->ly, &c->cbuf, &c->ccap,
                      (const uint8_t *)req, (size_t)n)) < 0) {
      c_setup_fail(c, n < 0 ? n : r, "websocket upgrade", NULL);
      return;
    }
    for (;;) {
      size_t used = 0;
      int h = ab_ws_hs_feed(&hs, c->rbuf, c->rlen, &used);
      ab__consume(c->rbuf, &c->rlen, used);
      if (h < 0) {
        c_setup_fail(c, AB_EPROTO, "websocket upgrade", "the server's 101 answer was not valid");
        return;
      }
      if (h == 1) break;
      if (wait_event(&c->co_waiting) < 0 || c->co_err) {
        c_setup_fail(c, c->co_err ? c->co_err : AB_EINTR, "websocket upgrade", NULL);
        return;
      }
    }
  }
  c->ly.state = AB__LY_READY;
  c->alive = 1;
  c->loop->ready_clients++;
  if (eng->dc->use_tls || eng->dc->use_ws) ab_hist_record(&l->handshake, ab_now_ns() - c->ly.t_connected);
  ab__client_reported(c);

  /* the echo loop */
  for (;;) {
    if (!c->alive) return;
    if ((r = c_send(c)) < 0) {
      ab__client_fail(c, r, "write");
      return;
    }
    if (c->ly.plain.len[c->ly.plain.active] > 0) { /* pongs the codec queued */
      ab_outbuf_t *p = &c->ly.plain;
      r = co_write((uv_stream_t *)&c->tcp, &c->io, &c->ly, &c->cbuf, &c->ccap, p->buf[p->active],
                   p->len[p->active]);
      p->len[p->active] = 0;
      if (r < 0) {
        ab__client_fail(c, r, "write");
        return;
      }
    }
    /* replies already here (they may have arrived while this task was
     * writing) are parsed before waiting, so no wake-up is lost */
    now = c->co_now;
    size_t off = 0;
    int got = 0;
    for (;;) {
      size_t used = 0;
      ab_msgview_t msg;
      r = vt->client_parse(c->ly.codec, c->rbuf + off, c->rlen - off, &used, &msg);
      off += used;
      if (r == 0) break;
      if (r > 0) r = ab__client_reply(c, &msg, now);
      if (r < 0) {
        ab__client_fail(c, r, "reply");
        return;
      }
      got = 1;
    }
    ab__consume(c->rbuf, &c->rlen, off);
    if (got) {
      ab__loop_check_progress(l);
      continue; /* refill the window first */
    }
    if (c->co_err) {
      int e = c->co_err;
      if (e == AB_ECLOSED && vt == &ab_codec_http && ab_http_client_eof(c->ly.codec) < 0)
        e = AB_EPROTO;
      ab__client_fail(c, e, e == AB_EPROTO ? "premature EOF" : "read");
      return;
    }
    if (wait_event(&c->co_waiting) < 0) return; /* cancelled */
    if (!c->alive) return;
  }
}

static void c_exit(ab_task_t *t, void *arg) {
  ab__client_t *c = arg;
  (void)t;
  c->task = NULL;
}

void ab__co_client_start(ab__client_t *c) {
  ab__loop_t *l = c->loop;
  int r = uv_tcp_init(&l->loop, &c->tcp);
  if (r == 0) {
    c->tcp.data = c;
    uv_tcp_nodelay(&c->tcp, 1);
    c->connect_start_ns = ab_now_ns();
    r = ab_task_c_new(l->d->sched, &c->task, STACK_SIZE, c_main, c);
  }
  if (r < 0) {
    c->task = NULL;
    c_setup_fail(c, r, "coroutine", NULL);
    if (c->tcp.data) ab__client_close(c);
    return;
  }
  ab_task_on_exit(c->task, c_exit, c);
  ab_task_start(c->task);
}

void ab__co_client_wake(ab__client_t *c) { wake(c->task, &c->co_waiting); }

/* ---- server ------------------------------------------------------------- */

static void s_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  ab__sconn_t *s = h->data;
  (void)hint;
  ab__ly_alloc(&s->ly, s->loop, &s->rbuf, &s->rcap, s->rlen, buf);
}

static void s_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  ab__sconn_t *s = st->data;
  if (nread == 0) return;
  if (nread < 0) {
    s->co_err = nread == UV_EOF ? AB_ECLOSED : (int)nread;
  } else {
    int r = ab__ly_ingest(&s->ly, &s->rbuf, &s->rcap, &s->rlen, buf, nread);
    if (r < 0) s->co_err = r;
  }
  wake(s->task, &s->co_waiting);
}

/* While the task waits for the pool, reads stop past AB__HOLD_BYTES (the
 * task lets them go on when it parses again): a client that sends faster
 * than the pool works is pushed back instead of buffered. */
static void s_io_readable(ab_sockio_t *io) {
  ab__sconn_t *s = (ab__sconn_t *)((char *)io - offsetof(ab__sconn_t, io));
  int got = 0;
  int r = co_recv(io, (ab_sockio_kept_t){&s->rbuf, &s->rcap, &s->rlen}, &got);
  if (r < 0) s->co_err = r;
  if (s->jobs_out > 0 && s->rlen > AB__HOLD_BYTES) ab_sockio_hold_reads(io, 1);
  wake(s->task, &s->co_waiting);
}

static void s_io_error(ab_sockio_t *io, int err) {
  ab__sconn_t *s = (ab__sconn_t *)((char *)io - offsetof(ab__sconn_t, io));
  s->co_err = err;
  wake(s->task, &s->co_waiting);
}

static int s_flush(ab__sconn_t *s) {
  ab_outbuf_t *p = &s->ly.plain;
  int r = co_write((uv_stream_t *)&s->tcp, &s->io, &s->ly, &s->cbuf, &s->ccap, p->buf[p->active],
                   p->len[p->active]);
  p->len[p->active] = 0;
  return r;
}

static void s_main(void *arg) {
  ab__sconn_t *s = arg;
  ab__loop_t *l = s->loop;
  ab__engine_t *eng = l->eng;
  const ab_codec_vt_t *vt = eng->dc->codec_vt;
  int r = eng->cfg->protocol == AB_PROTO_TCP
              ? ab_sockio_start(&s->io, &l->loop, &s->tcp, 1, s_io_readable, s_io_error)
              : uv_read_start((uv_stream_t *)&s->tcp, s_alloc, s_read);
  if (r < 0) goto done;
  if (s->ly.tls) {
    for (;;) {
      int h = ab_tls_handshake(s->ly.tls);
      if ((r = co_write((uv_stream_t *)&s->tcp, &s->io, &s->ly, &s->cbuf, &s->ccap, NULL, 0)) < 0 ||
          h < 0)
        goto done;
      if (h == 1) break;
      if (wait_event(&s->co_waiting) < 0 || s->co_err) goto done;
    }
    s->ly.state = AB__LY_READY;
    ab__record_tls(eng, s->ly.tls);
    ab__ly_drain_tls(&s->ly, &s->rbuf, &s->rcap, &s->rlen);
  }
  if (eng->dc->use_ws) {
    ab_ws_hs_t hs;
    ab_ws_hs_init(&hs, 0, NULL);
    for (;;) {
      size_t used = 0;
      int h = ab_ws_hs_feed(&hs, s->rbuf, s->rlen, &used);
      if (h != 0) {
        char reply[512];
        int n = ab_ws_hs_reply(&hs, reply, sizeof(reply));
        if (n > 0) ab_outbuf_append(&s->ly.plain, reply, (size_t)n);
        ab__consume(s->rbuf, &s->rlen, used);
        s_flush(s);
        if (h < 0) {
          ab__loop_error(l, AB_EPROTO, "server: websocket upgrade refused");
          goto done;
        }
        break;
      }
      ab__consume(s->rbuf, &s->rlen, used);
      if (wait_event(&s->co_waiting) < 0 || s->co_err) goto done;
    }
  }
  s->ly.state = AB__LY_READY;
  /* plain tcp without a pool echoes whole frames straight from the read
   * buffer, as the callback server does, instead of copying each through
   * server_reply */
  int direct = !eng->pool && !s->ly.tls && (vt == &ab_codec_length || vt == &ab_codec_raw);
  for (;;) {
    if (s->io.held) ab_sockio_hold_reads(&s->io, 0); /* parsing again */
    size_t off = 0;
    uint64_t held = 0;
    size_t run_lo = 0, run_hi = 0; /* frames to echo from rbuf[run_lo, run_hi) */
    for (;;) {
      size_t used = 0, before = off;
      ab_msgview_t msg;
      r = vt->server_parse(s->ly.codec, s->rbuf + off, s->rlen - off, &used, &msg);
      off += used;
      if (r == 0) break;
      if (r < 0) {
        if (r != AB_ECLOSED) ab__loop_error(l, r, "server: request from a client");
        s_flush(s); /* a close frame, or the reply before Connection: close */
        goto done;
      }
      l->server_messages++;
      l->server_bytes += msg.len;
      if (direct && msg.data >= s->rbuf + before && msg.data + msg.len <= s->rbuf + off) {
        if (eng->cfg->work) l->work_sink ^= ab_work(eng->cfg->work, l->work_sink + 1);
        if (run_hi != before) run_lo = before; /* (always contiguous in practice) */
        run_hi = off;
        continue;
      }
      if (run_hi > run_lo) { /* keep the order: earlier frames first */
        ab_outbuf_append(&s->ly.plain, s->rbuf + run_lo, run_hi - run_lo);
        run_lo = run_hi = 0;
      }
      if (eng->pool) {
        /* hand the work to the pool; replies go out when all returned */
        size_t need = 4 + msg.len;
        if (ab_buf_grow(&s->held, &s->hcap, s->hlen, need) != 0) goto done;
        uint32_t len = (uint32_t)msg.len;
        memcpy(s->held + s->hlen, &len, 4);
        memcpy(s->held + s->hlen + 4, msg.data, msg.len);
        s->hlen += need;
        s->jobs_out++;
        held++;
        ab__pool_submit(eng->pool, &s->job);
      } else {
        if (eng->cfg->work) l->work_sink ^= ab_work(eng->cfg->work, l->work_sink + 1);
        if (vt->server_reply(s->ly.codec, msg.data, msg.len) < 0) {
          s_flush(s);
          goto done;
        }
      }
    }
    if (run_hi > run_lo) {
      /* straight from rbuf when nothing is queued before it; what the
       * kernel does not take is copied to the pending output (a write
       * must not point into rbuf: the read callback may move it) */
      ab_outbuf_t *pl = &s->ly.plain;
      size_t n = run_hi - run_lo;
      if (pl->len[pl->active] == 0 && s->io.started) { /* plain tcp */
        if (ab_sockio_send(&s->io, s->rbuf + run_lo, n) < 0) goto done;
      } else {
        ab_outbuf_append(pl, s->rbuf + run_lo, n);
      }
    }
    ab__consume(s->rbuf, &s->rlen, off);
    if (held) {
      while (s->jobs_back < held) {
        if (wait_event(&s->co_waiting) < 0) goto done;
      }
      s->jobs_back -= held;
      s->jobs_out -= held;
      size_t p = 0;
      while (p < s->hlen) {
        uint32_t len;
        memcpy(&len, s->held + p, 4);
        vt->server_reply(s->ly.codec, s->held + p + 4, len);
        p += 4 + (size_t)len;
      }
      s->hlen = 0;
    }
    if ((r = s_flush(s)) < 0) goto done;
    if (s->co_err) goto done;
    if (off == 0 && wait_event(&s->co_waiting) < 0) goto done;
  }
done:
  if (!s->closing) ab__sconn_close(s);
}

static void s_exit(ab_task_t *t, void *arg) {
  ab__sconn_t *s = arg;
  (void)t;
  s->task = NULL;
}

void ab__co_server_accept(ab__sconn_t *s) {
  ab__loop_t *l = s->loop;
  ab__engine_t *eng = l->eng;
  ab_outbuf_init(&s->ly.plain, NULL, NULL);
  int r = 0;
  if (eng->dc->use_tls) r = ab_tls_conn_new(eng->dc->tls_server, 0, NULL, &s->ly.tls);
  if (r == 0)
    r = ab_codec_create(eng->dc->codec_vt, &s->ly.plain,
                        eng->dc->codec_vt == &ab_codec_raw ? eng->cfg->payload : eng->max_frame, 0,
                        &s->ly.codec);
  if (r == 0) r = ab_task_c_new(l->d->sched, &s->task, STACK_SIZE, s_main, s);
  if (r < 0) {
    s->task = NULL;
    ab__sconn_error(s, r, "accept setup");
    return;
  }
  s->ly.state = eng->dc->use_tls ? AB__LY_HS_TLS : AB__LY_READY;
  ab_task_on_exit(s->task, s_exit, s);
  ab_task_start(s->task);
}

void ab__co_job_done(ab__sconn_t *s) {
  s->jobs_back++;
  wake(s->task, &s->co_waiting);
}
