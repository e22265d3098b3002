/* tcp_client.c -- the built-in echo client over TCP, callback style.
 *
 * Per connection: `window` slots; message seq lives in slot seq % window.
 * A read callback takes one clock reading, completes every whole echo in the
 * buffer (full content check, RTT into the loop's histogram), then refills
 * the window in one batch: messages are written into the connection's
 * outbuf, the clock is read once more just before the bytes go to the
 * socket, and that time stamps the whole batch.  No allocation, lock or Lua
 * call per message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ab_error.h"
#include "clock.h"
#include "engine_int.h"
#include "codecs.h"
#include "framing.h"

#define READ_CHUNK 65536

void ab__client_on_closed(uv_handle_t *h) {
  ab__client_t *c = h->data;
  if (c->ly.codec && c->ly.codec->vt == &ab_codec_http) {
    uint64_t n = 0;
    ab_http_stats(c->ly.codec, &n);
    c->loop->http_non2xx += n;
  }
  ab__layers_free(&c->ly);
  free(c->sbuf);
  free(c->cbuf);
  c->sbuf = c->cbuf = NULL;
  ab_outbuf_free(&c->out);
  free(c->rbuf);
  c->rbuf = NULL;
  c->rcap = c->rlen = 0;
}

void ab__client_close(ab__client_t *c) {
  if (c->closing || c->tcp.data == NULL) return;
  c->closing = 1;
  c->alive = 0;
  uv_close((uv_handle_t *)&c->tcp, ab__client_on_closed);
}

/* Accounts every message still in flight on c as `as` (timed out, errored,
 * unfinished) and frees the slots. */
static void release_inflight(ab__client_t *c, uint64_t *as) {
  ab__loop_t *l = c->loop;
  uint32_t w = l->eng->cfg->window;
  for (uint32_t i = 0; i < w && c->inflight > 0; i++) {
    if (c->slot_ns[i] == 0) continue;
    if (c->slot_phase[i] == AB_PHASE_MEASURE) {
      (*as)++;
      l->meas_inflight--;
    } else {
      l->warm_inflight--;
    }
    c->slot_ns[i] = 0;
    c->inflight--;
  }
  c->oldest_seq = c->next_seq;
}

void ab__client_fail(ab__client_t *c, int code, const char *what) {
  ab__loop_t *l = c->loop;
  if (!c->alive) return;
  c->alive = 0;
  /* a coroutine blocked on this connection returns AB_EINTR and ends
   * before its handle closes (from inside itself it just returns) */
  if (c->task && ab_task_current() != c->task) ab_sched_cancel(c->task);
  if (l->phase != AB__PH_STOPPING) {
    char msg[200];
    snprintf(msg, sizeof(msg), "connection %u: %s: %s (%s)", c->id, what,
             ab_strerror(code), ab_err_name(code));
    ab__loop_error(l, code, msg);
  }
  release_inflight(c, code == AB_ETIMEDOUT ? &l->timed_out : &l->message_errors);
  ab__client_close(c);
  ab__loop_check_progress(l);
}

static void on_write_error(ab_outbuf_t *ob, int err) {
  ab__client_t *c = (ab__client_t *)((char *)ob - offsetof(ab__client_t, out));
  ab__client_fail(c, err, "write");
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  ab__client_t *c = h->data;
  (void)hint;
  if (ab__grow(&c->rbuf, &c->rcap, c->rlen, READ_CHUNK) != 0) {
    *buf = uv_buf_init(NULL, 0); /* libuv reports UV_ENOBUFS */
    return;
  }
  *buf = uv_buf_init((char *)c->rbuf + c->rlen, (unsigned)(c->rcap - c->rlen));
}

uint8_t ab__sending_phase(const ab__loop_t *l, uint64_t *dl) {
  if (l->phase == AB__PH_WARMUP) {
    *dl = l->warm_deadline_ns;
    return AB_PHASE_WARMUP;
  }
  if (l->phase == AB__PH_MEASURE) {
    *dl = l->deadline_ns;
    return AB_PHASE_MEASURE;
  }
  return 0;
}

void ab__client_stamp(ab__client_t *c, uint64_t seq, uint32_t n, uint64_t t, uint8_t phase) {
  ab__loop_t *l = c->loop;
  uint32_t w = l->eng->cfg->window;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t slot = (uint32_t)((seq + i) % w);
    c->slot_seq[slot] = seq + i;
    c->slot_ns[slot] = t;
    c->slot_phase[slot] = phase;
  }
  if (c->inflight == 0) c->oldest_seq = seq;
  c->next_seq = seq + n;
  c->inflight += n;
  if (phase == AB_PHASE_MEASURE) {
    l->sent += n;
    l->meas_inflight += n;
  } else {
    l->warm_inflight += n;
  }
}

void ab__client_advance_oldest(ab__client_t *c) {
  uint32_t w = c->loop->eng->cfg->window;
  while (c->oldest_seq < c->next_seq && c->slot_ns[c->oldest_seq % w] == 0) c->oldest_seq++;
}

/* Fills the window.  now is a recent clock reading used only to decide
 * whether the phase still sends; the batch is stamped with a fresh reading
 * taken after the messages are built, just before they reach the socket. */
static void pump(ab__client_t *c, uint64_t now) {
  ab__loop_t *l = c->loop;
  const ab_case_cfg_t *cfg = l->eng->cfg;
  uint64_t dl = 0;
  if (!c->alive) return;
  uint8_t phase = ab__sending_phase(l, &dl);
  if (phase == 0 || c->inflight >= cfg->window || now >= dl) return;
  uint32_t n = cfg->window - c->inflight;
  size_t pfx = cfg->framing == AB_FRAMING_LENGTH ? ab_prefix_size(cfg->payload) : 0;
  size_t fsz = pfx + cfg->payload;
  uint8_t *dst = ab_outbuf_reserve(&c->out, (size_t)n * fsz);
  if (dst == NULL) {
    ab__client_fail(c, AB_ENOMEM, "send buffer");
    return;
  }
  uint64_t seq = c->next_seq;
  for (uint32_t i = 0; i < n; i++, dst += fsz) {
    if (pfx) ab_prefix_encode(dst, cfg->payload);
    ab_msg_fill(dst + pfx, cfg->payload, phase, c->id, seq + i);
  }
  uint64_t t = ab_now_ns();
  if (t >= dl) return; /* built but too late: never sent, never counted */
  ab__client_stamp(c, seq, n, t, phase);
  ab_outbuf_commit(&c->out, (size_t)n * fsz);
  ab_outbuf_flush(&c->out); /* errors arrive through on_write_error */
}

void ab__client_pump(ab__client_t *c) { pump(c, ab_now_ns()); }

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  ab__client_t *c = s->data;
  ab__loop_t *l = c->loop;
  const ab_case_cfg_t *cfg = l->eng->cfg;
  (void)buf;
  if (nread <= 0) {
    if (nread == 0) return;
    if (nread == UV_EOF) ab__client_fail(c, AB_ECLOSED, "read");
    else ab__client_fail(c, (int)nread, "read");
    return;
  }
  uint64_t now = ab_now_ns();
  c->rlen += (size_t)nread;
  if (!c->alive) return;
  size_t off = 0;
  for (;;) {
    const uint8_t *p = c->rbuf + off;
    size_t avail = c->rlen - off;
    uint64_t len = cfg->payload;
    size_t hdr = 0;
    if (cfg->framing == AB_FRAMING_LENGTH) {
      int r = ab_prefix_decode(p, avail, cfg->payload, &len);
      if (r == AB_EAGAIN) break;
      if (r < 0) {
        ab__client_fail(c, r, "reply framing");
        return;
      }
      hdr = (size_t)r;
      if (len != cfg->payload) {
        ab__client_fail(c, AB_ESIZE, "reply length");
        return;
      }
    }
    if (avail < hdr + len) break;
    uint8_t ph;
    uint32_t cid;
    uint64_t seq;
    int r = ab_msg_check(p + hdr, (size_t)len, &ph, &cid, &seq);
    if (r == 0) r = ab__client_complete(c, ph, cid, seq, now);
    if (r < 0) {
      ab__client_fail(c, r, "reply check");
      return;
    }
    off += hdr + (size_t)len;
  }
  if (off > 0) {
    c->rlen -= off;
    if (c->rlen > 0) memmove(c->rbuf, c->rbuf + off, c->rlen);
    ab__client_advance_oldest(c);
    pump(c, now);
    ab__loop_check_progress(l);
  }
}

static void on_connect(uv_connect_t *req, int status) {
  ab__client_t *c = req->data;
  ab__loop_t *l = c->loop;
  ab_hist_record(&l->connect, ab_now_ns() - c->connect_start_ns);
  if (status < 0) {
    char msg[160];
    snprintf(msg, sizeof(msg), "connection %u: connect: %s (%s)", c->id,
             ab_strerror(status), ab_err_name(status));
    ab__loop_error(l, status, msg);
    ab__client_close(c);
  } else {
    c->alive = 1;
    c->loop->ready_clients++;
    int r = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    if (r < 0) ab__client_fail(c, r, "read start");
  }
  if (--l->connects_pending == 0) ab__loop_reached(l, AB__ST_CONNECTED);
  else ab__clients_connect_more(l);
}

/* At most this many connects in flight per loop: a burst larger than the
 * listen backlog (net.core.somaxconn, 4096; SYN backlog 2048) overflows it,
 * and the dropped handshakes come back only after retransmission timeouts,
 * which would then sit inside the first measured RTTs. */
#define CONNECTS_IN_FLIGHT 256

void ab__clients_connect_more(ab__loop_t *l) {
  while (l->connects_started < l->nclients &&
         l->connects_started - (l->nclients - l->connects_pending) < CONNECTS_IN_FLIGHT) {
    ab__client_t *c = &l->clients[l->connects_started++];
    if (l->eng->hooks) l->eng->hooks->client_start(l->exec_state, c);
    else if (l->eng->coro) ab__co_client_start(c);
    else if (l->eng->layered) ab__sclient_connect(c, (const struct sockaddr *)&l->connect_addr);
    else ab__client_connect(c, (const struct sockaddr *)&l->connect_addr);
  }
}

void ab__client_connect(ab__client_t *c, const struct sockaddr *addr) {
  ab__loop_t *l = c->loop;
  int r = uv_tcp_init(&l->loop, &c->tcp);
  if (r == 0) {
    c->tcp.data = c;
    c->creq.data = c;
    ab_outbuf_init(&c->out, (uv_stream_t *)&c->tcp, on_write_error);
    uv_tcp_nodelay(&c->tcp, 1);
    /* one destination port gives ~28k ephemeral source ports (Linux
     * ip_local_port_range 32768-60999): past 20,000 connections per loop
     * use further loopback source addresses 127.0.0.2, .3, ... */
    if (l->nclients > 20000 && addr->sa_family == AF_INET) {
      uint32_t k = (c->id / l->eng->nloops) / 20000 + 1;
      struct sockaddr_in src;
      char ip[32];
      snprintf(ip, sizeof(ip), "127.0.%u.%u", (k + 1) >> 8, (k + 1) & 255);
      uv_ip4_addr(ip, 0, &src);
      r = uv_tcp_bind(&c->tcp, (const struct sockaddr *)&src, 0);
    }
    c->connect_start_ns = ab_now_ns();
    if (r == 0)
      r = uv_tcp_connect(&c->creq, &c->tcp, addr, on_connect);
  }
  if (r < 0) {
    char msg[160];
    snprintf(msg, sizeof(msg), "connection %u: connect: %s (%s)", c->id,
             ab_strerror(r), ab_err_name(r));
    ab__loop_error(l, r, msg);
    if (c->tcp.data) ab__client_close(c);
    if (--l->connects_pending == 0) ab__loop_reached(l, AB__ST_CONNECTED);
  }
}

void ab__clients_tick(ab__loop_t *l, uint64_t now) {
  const ab_case_cfg_t *cfg = l->eng->cfg;
  uint64_t limit = (uint64_t)(cfg->timeout_s * 1e9);
  for (uint32_t i = 0; i < l->nclients; i++) {
    ab__client_t *c = &l->clients[i];
    if (!c->alive || c->inflight == 0) continue;
    uint32_t slot = (uint32_t)(c->oldest_seq % cfg->window);
    uint64_t t = c->slot_ns[slot];
    if (t != 0 && now > t && now - t > limit)
      ab__client_fail(c, AB_ETIMEDOUT, "no reply within the timeout");
  }
}
