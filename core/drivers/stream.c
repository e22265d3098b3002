/* stream.c -- tls, ws, wss, http and https over TCP: the layered path.
 *
 *   socket <-> [TLS, tls.h: memory BIOs] <-> plaintext
 *          <-> [WebSocket upgrade, ws.h] <-> codec (codecs.h)
 *
 * The client connects, runs the TLS handshake and the WebSocket upgrade
 * before warm-up (their time goes to `handshake_us`, never into RTT), then
 * sends requests built by the codec and checks every reply exactly like the
 * plain TCP client.  The server accepts, answers the handshakes and echoes
 * each request through the codec (its work inline, or on the shared:N pool
 * with replies released in arrival order).  Plain `tcp` does not come
 * here: it keeps its own leaner path (tcp_client.c, tcp_server.c).
 *
 * Writes: the codec appends plaintext to ly->plain (TLS) or straight to the
 * socket's outbuf (no TLS); ly_flush() encrypts what is pending and hands
 * the ciphertext to the socket.  Reads: the alloc callback hands out the
 * loop's ciphertext buffer (TLS) or the connection's read buffer, and
 * ingest() turns what arrived into plaintext at the end of the read buffer.
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
#include "base/work.h"

#define READ_CHUNK 65536
#define TLS_CHUNK 16384

/* ---- shared ------------------------------------------------------------ */

void ab__layers_free(ab__layers_t *ly) {
  ab_tls_conn_free(ly->tls);
  ly->tls = NULL;
  free(ly->ws_hs);
  ly->ws_hs = NULL;
  ab_codec_destroy(ly->codec);
  ly->codec = NULL;
  ab_outbuf_free(&ly->plain);
}

static ab_outbuf_t *ly_out(ab__layers_t *ly, ab_outbuf_t *sock) {
  return ly->tls ? &ly->plain : sock;
}

/* Encrypts pending plaintext and flushes the socket buffer. */
static int ly_flush(ab__layers_t *ly, ab_outbuf_t *sock) {
  if (ly->tls) {
    ab_outbuf_t *p = &ly->plain;
    int a = p->active;
    if (p->len[a] > 0 && ly->state != AB__LY_HS_TLS) {
      int r = ab_tls_write(ly->tls, p->buf[a], p->len[a]);
      p->len[a] = 0;
      if (r < 0) return r;
    }
    size_t n;
    while ((n = ab_tls_pending_out(ly->tls)) > 0) {
      uint8_t *d = ab_outbuf_reserve(sock, n);
      if (d == NULL) return AB_ENOMEM;
      size_t got = ab_tls_take_out(ly->tls, d, n);
      ab_outbuf_commit(sock, got);
      if (got == 0) break;
    }
  }
  return ab_outbuf_flush(sock);
}

void ab__ly_alloc(ab__layers_t *ly, ab__loop_t *l, uint8_t **rbuf, size_t *rcap,
                     size_t rlen, uv_buf_t *buf) {
  if (ly->tls) {
    *buf = uv_buf_init((char *)l->d->cipher_rx, READ_CHUNK);
    return;
  }
  if (ab_buf_grow(rbuf, rcap, rlen, READ_CHUNK) != 0) {
    *buf = uv_buf_init(NULL, 0);
    return;
  }
  *buf = uv_buf_init((char *)*rbuf + rlen, (unsigned)(*rcap - rlen));
}

/* What the socket delivered becomes plaintext at rbuf[rlen..].  For TLS it
 * also drives the handshake.  Returns 0, or AB_ECLOSED (close_notify: the
 * plaintext before it is kept), or a negative error. */
int ab__ly_ingest(ab__layers_t *ly, uint8_t **rbuf, size_t *rcap, size_t *rlen,
                     const uv_buf_t *buf, ssize_t n) {
  if (ly->tls == NULL) {
    *rlen += (size_t)n;
    return 0;
  }
  int r = ab_tls_feed(ly->tls, (const uint8_t *)buf->base, (size_t)n);
  if (r < 0) return r;
  if (ly->state == AB__LY_HS_TLS) return 0; /* the caller drives it */
  for (;;) {
    if (ab_buf_grow(rbuf, rcap, *rlen, TLS_CHUNK) != 0) return AB_ENOMEM;
    size_t got = 0;
    r = ab_tls_read(ly->tls, *rbuf + *rlen, *rcap - *rlen, &got);
    *rlen += got;
    if (r < 0) return r;
    if (got == 0) return 0;
  }
}

void ab__ly_drain_tls(ab__layers_t *ly, uint8_t **rbuf, size_t *rcap, size_t *rlen) {
  for (;;) {
    size_t got = 0;
    if (ab_buf_grow(rbuf, rcap, *rlen, TLS_CHUNK) != 0) return;
    int r = ab_tls_read(ly->tls, *rbuf + *rlen, *rcap - *rlen, &got);
    *rlen += got;
    if (r < 0 || got == 0) return;
  }
}

void ab__consume(uint8_t *buf, size_t *len, size_t used) {
  if (used == 0) return;
  *len -= used;
  if (*len > 0) memmove(buf, buf + used, *len);
}

void ab__record_tls(ab__engine_t *eng, ab_tls_conn_t *tls) {
  ab_tls_info_t info;
  if (ab_tls_info(tls, &info) != 0) return;
  /* once per run: the first handshake a server completes (engine lock:
   * once per connection, never per message) */
  pthread_mutex_lock(&eng->mu);
  if (eng->dc->session.tls_sni[0] == '\0' && info.sni && info.sni[0])
    snprintf(eng->dc->session.tls_sni, sizeof(eng->dc->session.tls_sni), "%s", info.sni);
  if (eng->cfg->role == AB_ROLE_SERVER && eng->dc->session.tls_version[0] == '\0') {
    snprintf(eng->dc->session.tls_version, sizeof(eng->dc->session.tls_version), "%s", info.version ? info.version : "");
    snprintf(eng->dc->session.tls_cipher, sizeof(eng->dc->session.tls_cipher), "%s", info.cipher ? info.cipher : "");
    snprintf(eng->dc->session.tls_alpn, sizeof(eng->dc->session.tls_alpn), "%.63s", info.alpn);
    eng->dc->session.tls_resumed = info.resumed;
  }
  pthread_mutex_unlock(&eng->mu);
}

/* ---- client ------------------------------------------------------------ */

void ab__client_reported(ab__client_t *c) {
  ab__loop_t *l = c->loop;
  if (c->ly.reported) return;
  c->ly.reported = 1;
  ab__loop_connect_done(l);
}

static void hs_fail(ab__client_t *c, int code, const char *what, const char *detail) {
  ab__loop_t *l = c->loop;
  char msg[256];
  snprintf(msg, sizeof(msg), "connection %u: %s: %s%s%s", c->id, what,
           detail && detail[0] ? detail : ab_strerror(code),
           detail && detail[0] ? "" : " ", detail && detail[0] ? "" : ab_err_name(code));
  ab__loop_error(l, code, msg);
  c->alive = 0;
  ab__client_close(c);
  ab__client_reported(c);
}

static void client_ready(ab__client_t *c) {
  ab__loop_t *l = c->loop;
  c->ly.state = AB__LY_READY;
  c->alive = 1;
  c->loop->ready_clients++;
  if (l->eng->dc->use_tls || l->eng->dc->use_ws)
    ab_hist_record(&l->handshake, ab_now_ns() - c->ly.t_connected);
  if (c->ly.tls && c->id == 0) {
    ab_tls_info_t info;
    if (ab_tls_info(c->ly.tls, &info) == 0) {
      ab__dcase_t *e = l->eng->dc;
      snprintf(e->session.tls_version, sizeof(e->session.tls_version), "%s", info.version ? info.version : "");
      snprintf(e->session.tls_cipher, sizeof(e->session.tls_cipher), "%s", info.cipher ? info.cipher : "");
      snprintf(e->session.tls_alpn, sizeof(e->session.tls_alpn), "%.63s", info.alpn);
      e->session.tls_resumed = info.resumed;
    }
  }
  ab__client_reported(c);
}

static void send_upgrade(ab__client_t *c) {
  char key[AB_WS_KEY_LEN + 1];
  char req[1024];
  c->ly.ws_hs = calloc(1, sizeof(ab_ws_hs_t));
  if (c->ly.ws_hs == NULL || ab_ws_new_key(key) < 0 ||
      ab_ws_hs_init(c->ly.ws_hs, 1, key) < 0) {
    hs_fail(c, AB_ENOMEM, "websocket upgrade", NULL);
    return;
  }
  int n = ab_ws_request(req, sizeof(req), c->loop->eng->dc->host, "/echo", key);
  if (n < 0 || ab_outbuf_append(ly_out(&c->ly, &c->out), req, (size_t)n) < 0) {
    hs_fail(c, AB_EINVAL, "websocket upgrade request", NULL);
    return;
  }
  c->ly.state = AB__LY_HS_WS;
  ly_flush(&c->ly, &c->out);
}

static void sc_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  ab__client_t *c = h->data;
  (void)hint;
  ab__ly_alloc(&c->ly, c->loop, &c->rbuf, &c->rcap, c->rlen, buf);
}

static void sc_pump(ab__client_t *c, uint64_t now) {
  ab__loop_t *l = c->loop;
  const ab_case_cfg_t *cfg = l->eng->cfg;
  const ab_codec_vt_t *vt = l->eng->dc->codec_vt;
  ab__win_grant_t g;
  if (!c->alive || c->ly.state != AB__LY_READY || ab__win_grant(c, now, &g) == 0) return;
  uint32_t n = g.n;
  uint8_t phase = g.phase;
  ab_outbuf_t *out = ly_out(&c->ly, &c->out);
  size_t most = vt->max_overhead + cfg->payload;
  uint8_t *dst = ab_outbuf_reserve(out, (size_t)n * most);
  if (dst == NULL) {
    ab__client_fail(c, AB_ENOMEM, "send buffer");
    return;
  }
  uint64_t seq = g.seq;
  size_t total = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint8_t *m = dst + total;
    size_t hdr = vt->client_begin(c->ly.codec, m, cfg->payload);
    ab_msg_fill(m + hdr, cfg->payload, phase, c->id, seq + i);
    size_t tail = vt->client_end(c->ly.codec, m + hdr, cfg->payload, m + hdr + cfg->payload);
    total += hdr + cfg->payload + tail;
  }
  /* built too late: never sent, never counted */
  if (ab__win_stamp(c, &g, n, ab_now_ns()) == 0) return;
  ab_outbuf_commit(out, total);
  int r = ly_flush(&c->ly, &c->out);
  if (r < 0 && r != AB_ECLOSED) ab__client_fail(c, r, "send");
}

void ab__sclient_pump(ab__client_t *c) { sc_pump(c, ab_now_ns()); }

/* One reply: check it and account for it.  Returns 0 or an error code
 * (AB_ETIMEDOUT: it came later than the timeout). */
int ab__client_reply(ab__client_t *c, const ab_msgview_t *msg, uint64_t now) {
  uint8_t ph;
  uint32_t cid;
  uint64_t seq;
  if (msg->len != c->loop->eng->cfg->payload) return AB_ESIZE;
  int r = ab_msg_check(msg->data, msg->len, &ph, &cid, &seq);
  if (r == 0) r = ab__win_complete(c, ph, cid, seq, now);
  return r < 0 ? r : 0;
}

static void sc_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  ab__client_t *c = st->data;
  ab__loop_t *l = c->loop;
  ab__engine_t *eng = l->eng;
  const ab_codec_vt_t *vt = eng->dc->codec_vt;
  if (nread == 0 || c->closing) return;
  if (nread < 0) {
    int code = nread == UV_EOF ? AB_ECLOSED : (int)nread;
    const char *what = "read";
    if (c->ly.state == AB__LY_READY && vt == &ab_codec_http &&
        ab_http_client_eof(c->ly.codec) < 0) {
      code = AB_EPROTO;
      what = "connection closed in the middle of a response (premature EOF)";
    }
    if (c->ly.state != AB__LY_READY) hs_fail(c, code, "handshake", NULL);
    else ab__client_fail(c, code, what);
    return;
  }
  uint64_t now = ab_now_ns();
  int ir = ab__ly_ingest(&c->ly, &c->rbuf, &c->rcap, &c->rlen, buf, nread);
  if (ir < 0 && ir != AB_ECLOSED) {
    if (c->ly.state != AB__LY_READY)
      hs_fail(c, ir, "TLS", c->ly.tls ? ab_tls_error(c->ly.tls) : NULL);
    else
      ab__client_fail(c, ir, "TLS read");
    return;
  }
  if (c->ly.state == AB__LY_HS_TLS) {
    int h = ab_tls_handshake(c->ly.tls);
    if (h < 0) {
      ly_flush(&c->ly, &c->out); /* let the alert out */
      hs_fail(c, AB_EPROTO, "TLS handshake", ab_tls_error(c->ly.tls));
      return;
    }
    if (ly_flush(&c->ly, &c->out) < 0) return;
    if (h == 0) return;
    /* records that came with the end of the handshake */
    c->ly.state = AB__LY_READY; /* lets ly_ingest read plaintext */
    ab__ly_drain_tls(&c->ly, &c->rbuf, &c->rcap, &c->rlen);
    if (eng->dc->use_ws) {
      send_upgrade(c);
      if (c->closing) return;
    } else {
      client_ready(c);
    }
  }
  if (c->ly.state == AB__LY_HS_WS) {
    size_t used = 0;
    int h = ab_ws_hs_feed(c->ly.ws_hs, c->rbuf, c->rlen, &used);
    ab__consume(c->rbuf, &c->rlen, used);
    if (h < 0) {
      hs_fail(c, AB_EPROTO, "websocket upgrade", "the server's 101 answer was not valid");
      return;
    }
    if (h == 0) return;
    free(c->ly.ws_hs);
    c->ly.ws_hs = NULL;
    client_ready(c);
  }
  if (c->ly.state != AB__LY_READY || !c->alive) return;
  size_t off = 0;
  for (;;) {
    size_t used = 0;
    ab_msgview_t msg;
    int r = vt->client_parse(c->ly.codec, c->rbuf + off, c->rlen - off, &used, &msg);
    if (r > 0) r = ab__client_reply(c, &msg, now);
    off += used;
    if (r < 0) {
      ly_flush(&c->ly, &c->out); /* a close frame the codec wrote */
      ab__client_fail(c, r, "reply");
      return;
    }
    if (r == 0 && used == 0) break;
    if (r == 0 && off >= c->rlen) break;
  }
  ab__consume(c->rbuf, &c->rlen, off);
  /* pongs and other control answers the codec queued */
  if (ly_out(&c->ly, &c->out)->len[ly_out(&c->ly, &c->out)->active] > 0)
    ly_flush(&c->ly, &c->out);
  if (ir == AB_ECLOSED) {
    ab__client_fail(c, AB_ECLOSED, "TLS close_notify");
    return;
  }
  sc_pump(c, now);
  ab__loop_check_progress(l);
}

static void sc_write_error(ab_outbuf_t *ob, int err) {
  ab__client_t *c = (ab__client_t *)((char *)ob - offsetof(ab__client_t, out));
  if (c->ly.state != AB__LY_READY) hs_fail(c, err, "write", NULL);
  else ab__client_fail(c, err, "write");
}

static void sc_connected(uv_connect_t *req, int status) {
  ab__client_t *c = req->data;
  ab__loop_t *l = c->loop;
  ab__engine_t *eng = l->eng;
  uint64_t now = ab_now_ns();
  ab_hist_record(&l->connect, now - c->connect_start_ns);
  if (status < 0) {
    hs_fail(c, status, "connect", NULL);
    return;
  }
  c->ly.t_connected = now;
  ab_outbuf_init(&c->ly.plain, NULL, NULL);
  int r = 0;
  if (eng->dc->use_tls) r = ab_tls_conn_new(eng->dc->tls_client, 1, eng->dc->verify_host, &c->ly.tls);
  if (r == 0)
    r = ab_codec_create(eng->dc->codec_vt, ly_out(&c->ly, &c->out), eng->cfg->payload, 1,
                        &c->ly.codec);
  if (r < 0) {
    hs_fail(c, r, "connection setup", NULL);
    return;
  }
  if (eng->dc->codec_vt == &ab_codec_http) ab_http_set_host(c->ly.codec, eng->dc->host);
  r = uv_read_start((uv_stream_t *)&c->tcp, sc_alloc, sc_read);
  if (r < 0) {
    hs_fail(c, r, "read start", NULL);
    return;
  }
  if (eng->dc->use_tls) {
    c->ly.state = AB__LY_HS_TLS;
    int h = ab_tls_handshake(c->ly.tls); /* writes the ClientHello */
    if (h < 0) {
      hs_fail(c, AB_EPROTO, "TLS handshake", ab_tls_error(c->ly.tls));
      return;
    }
    ly_flush(&c->ly, &c->out);
  } else if (eng->dc->use_ws) {
    send_upgrade(c);
  } else {
    client_ready(c);
  }
}

void ab__sclient_connect(ab__client_t *c, const struct sockaddr *addr) {
  ab__loop_t *l = c->loop;
  int r = uv_tcp_init(&l->loop, &c->tcp);
  if (r == 0) {
    c->tcp.data = c;
    c->creq.data = c;
    ab_outbuf_init(&c->out, (uv_stream_t *)&c->tcp, sc_write_error);
    uv_tcp_nodelay(&c->tcp, 1);
    c->connect_start_ns = ab_now_ns();
    r = uv_tcp_connect(&c->creq, &c->tcp, addr, sc_connected);
  }
  if (r < 0) {
    if (c->tcp.data == NULL) {
      /* never initialised: nothing to close */
      char msg[160];
      snprintf(msg, sizeof(msg), "connection %u: connect: %s (%s)", c->id, ab_strerror(r),
               ab_err_name(r));
      ab__loop_error(l, r, msg);
      c->ly.reported = 1;
      ab__loop_connect_done(l);
      return;
    }
    hs_fail(c, r, "connect", NULL);
  }
}

/* ---- server ------------------------------------------------------------ */

static void ss_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  ab__sconn_t *s = h->data;
  (void)hint;
  ab__ly_alloc(&s->ly, s->loop, &s->rbuf, &s->rcap, s->rlen, buf);
}

/* The reply to one request (work already done). */
static int ss_reply(ab__sconn_t *s, const uint8_t *p, size_t n) {
  return s->loop->eng->dc->codec_vt->server_reply(s->ly.codec, p, n);
}

static void ss_close_after_flush(ab__sconn_t *s) {
  ly_flush(&s->ly, &s->out);
  ab__sconn_close(s);
}

void ab__sserver_release(ab__sconn_t *s, uint64_t n) {
  s->jobs_back += n;
  if (s->closing) return;
  while (s->jobs_back > 0 && s->hlen - s->hoff >= 4) {
    uint32_t len;
    memcpy(&len, s->held + s->hoff, 4);
    int r = ss_reply(s, s->held + s->hoff + 4, len);
    s->hoff += 4 + (size_t)len;
    s->jobs_back--;
    if (r < 0) {
      ss_close_after_flush(s);
      return;
    }
  }
  if (s->hoff == s->hlen) s->hoff = s->hlen = 0;
  ly_flush(&s->ly, &s->out);
}

static int hold(ab__sconn_t *s, const ab_msgview_t *m) {
  size_t need = 4 + m->len;
  if (s->hoff > 0 && s->hlen + need > s->hcap) {
    memmove(s->held, s->held + s->hoff, s->hlen - s->hoff);
    s->hlen -= s->hoff;
    s->hoff = 0;
  }
  if (ab_buf_grow(&s->held, &s->hcap, s->hlen, need) != 0) return AB_ENOMEM;
  uint32_t len = (uint32_t)m->len;
  memcpy(s->held + s->hlen, &len, 4);
  memcpy(s->held + s->hlen + 4, m->data, m->len);
  s->hlen += need;
  return 0;
}

static void ss_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  ab__sconn_t *s = st->data;
  ab__loop_t *l = s->loop;
  ab__engine_t *eng = l->eng;
  if (nread == 0 || s->closing) return;
  if (nread < 0) {
    ab__sconn_read_failed(s, nread);
    return;
  }
  int ir = ab__ly_ingest(&s->ly, &s->rbuf, &s->rcap, &s->rlen, buf, nread);
  if (ir < 0 && ir != AB_ECLOSED) {
    ab__sconn_error(s, ir, "TLS");
    return;
  }
  if (s->ly.state == AB__LY_HS_TLS) {
    int h = ab_tls_handshake(s->ly.tls);
    ly_flush(&s->ly, &s->out);
    if (h < 0) {
      char what[200];
      snprintf(what, sizeof(what), "TLS handshake: %s", ab_tls_error(s->ly.tls));
      ab__sconn_error(s, AB_EPROTO, what);
      return;
    }
    if (h == 0) return;
    ab__record_tls(eng, s->ly.tls);
    s->ly.state = eng->dc->use_ws ? AB__LY_HS_WS : AB__LY_READY;
    ab__ly_drain_tls(&s->ly, &s->rbuf, &s->rcap, &s->rlen);
  }
  if (s->ly.state == AB__LY_HS_WS) {
    size_t used = 0;
    int h = ab_ws_hs_feed(s->ly.ws_hs, s->rbuf, s->rlen, &used);
    if (h == 0) {
      ab__consume(s->rbuf, &s->rlen, used);
      return;
    }
    char reply[512];
    int n = ab_ws_hs_reply(s->ly.ws_hs, reply, sizeof(reply));
    if (n > 0) ab_outbuf_append(ly_out(&s->ly, &s->out), reply, (size_t)n);
    if (h < 0) {
      ab__loop_error(l, AB_EPROTO, "server: websocket upgrade refused");
      ss_close_after_flush(s);
      return;
    }
    ab__consume(s->rbuf, &s->rlen, used);
    free(s->ly.ws_hs);
    s->ly.ws_hs = NULL;
    s->ly.state = AB__LY_READY;
  }
  if (s->ly.state != AB__LY_READY) return;
  const ab_codec_vt_t *vt = eng->dc->codec_vt;
  size_t off = 0;
  for (;;) {
    size_t used = 0;
    ab_msgview_t msg;
    int r = vt->server_parse(s->ly.codec, s->rbuf + off, s->rlen - off, &used, &msg);
    off += used;
    if (r == 0) break;
    if (r < 0) {
      if (r != AB_ECLOSED) {
        char what[160];
        snprintf(what, sizeof(what), "server: request from a client (%s)", ab_err_name(r));
        ab__loop_error(l, r, what);
      }
      ss_close_after_flush(s);
      return;
    }
    l->server_messages++;
    l->server_bytes += msg.len;
    if (eng->pool) {
      if (hold(s, &msg) != 0) {
        ab__sconn_error(s, AB_ENOMEM, "held requests");
        return;
      }
      s->jobs_out++;
      ab__pool_submit(eng->pool, &s->job);
    } else {
      if (eng->cfg->work) l->work_sink ^= ab_work(eng->cfg->work, l->work_sink + 1);
      if (ss_reply(s, msg.data, msg.len) < 0) {
        ab__consume(s->rbuf, &s->rlen, off);
        ss_close_after_flush(s);
        return;
      }
    }
  }
  ab__consume(s->rbuf, &s->rlen, off);
  ly_flush(&s->ly, &s->out);
  if (ir == AB_ECLOSED) ab__sconn_close(s);
}

void ab__sserver_accept(ab__sconn_t *s) {
  ab__loop_t *l = s->loop;
  ab__engine_t *eng = l->eng;
  ab_outbuf_init(&s->ly.plain, NULL, NULL);
  int r = 0;
  if (eng->dc->use_tls) r = ab_tls_conn_new(eng->dc->tls_server, 0, NULL, &s->ly.tls);
  if (r == 0)
    r = ab_codec_create(eng->dc->codec_vt, ly_out(&s->ly, &s->out),
                        eng->dc->codec_vt == &ab_codec_raw ? eng->cfg->payload : eng->max_frame, 0,
                        &s->ly.codec);
  if (r == 0 && eng->dc->use_ws) {
    s->ly.ws_hs = calloc(1, sizeof(ab_ws_hs_t));
    r = s->ly.ws_hs ? ab_ws_hs_init(s->ly.ws_hs, 0, NULL) : AB_ENOMEM;
  }
  if (r < 0) {
    ab__sconn_error(s, r, "accept setup");
    return;
  }
  s->ly.state = eng->dc->use_tls ? AB__LY_HS_TLS : eng->dc->use_ws ? AB__LY_HS_WS : AB__LY_READY;
  r = uv_read_start((uv_stream_t *)&s->tcp, ss_alloc, ss_read);
  if (r < 0) ab__sconn_error(s, r, "read start");
}
