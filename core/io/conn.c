/* conn.c -- see conn.h. */
#include "io/conn.h"

#include <stdio.h>
#include <stddef.h>
#include <string.h>

#include "base/ab_error.h"
#include "base/buf.h"
#include "proto/codecs.h"

#define READ_CHUNK 65536
#define TLS_CHUNK 16384

static ab_conn_t *conn_of(ab_sockio_t *io) { return (ab_conn_t *)io; }

/* The ciphertext scratch of the thread reading now: in a shared reactor's
 * callback that thread's (reactor.h, scratch), else the loop's. */
static uint8_t *cipher_rx(const ab_conn_t *c) {
  const ab_reactor_t *cur = c->io.watch.cur;
  return cur && cur->scratch ? cur->scratch : c->cipher_rx;
}

void ab_conn_init(ab_conn_t *c, ab_tls_conn_t *tls, uint8_t *cipher_rx) {
  /* all but the watch, which ab_sockio_start sets up (reactor.h: a thread
   * holding an event for a closed watch may read it now) */
  size_t w0 = offsetof(ab_conn_t, io.watch), w1 = w0 + sizeof(ab_reactor_watch_t);
  memset(c, 0, w0);
  memset((char *)c + w1, 0, sizeof(*c) - w1);
  c->tls = tls;
  c->cipher_rx = cipher_rx;
  ab_outbuf_init(&c->plain);
}

/* Moves the ciphertext TLS has produced to the socket. */
static int send_tls_out(ab_conn_t *c) {
  const uint8_t *d;
  size_t n = ab_tls_out_peek(c->tls, &d);
  if (n == 0) return 0;
  /* straight from TLS's buffer; what the kernel does not take now is
   * copied to the pending output */
  int r = ab_sockio_send(&c->io, d, n);
  ab_tls_out_drop(c->tls, n);
  return r;
}

/* Plaintext that arrived with (or after) the records read so far. */
static int decrypt_into_in(ab_conn_t *c) {
  ab_sockio_kept_t k = c->in;
  for (;;) {
    if (ab_buf_grow(k.buf, k.cap, *k.len, TLS_CHUNK) != 0) return AB_ENOMEM;
    size_t got = 0;
    int r = ab_tls_read(c->tls, *k.buf + *k.len, *k.cap - *k.len, &got);
    *k.len += got;
    if (r == AB_ECLOSED && !c->peer_closed) {
      /* answer the peer's close_notify with ours (RFC 8446 6.1), so a
       * peer that waits for it (an unwrap()) sees a clean close */
      c->peer_closed = 1;
      if (ab_tls_close(c->tls) == 0) send_tls_out(c);
    }
    if (r < 0) return r;
    if (got == 0) return 0;
  }
}

static void fail_handshake(ab_conn_t *c, int err) {
  c->cbs->on_error(c, err);
}

/* The handshake is done: the owner learns it first, then reads what came
 * with it. */
static void become_ready(ab_conn_t *c) {
  c->ready = 1;
  int r = 0;
  if (c->tls && c->on_tls_done) c->on_tls_done(c, c->tls_done_arg);
  if (c->tls) {
    r = decrypt_into_in(c);
    if (r == AB_ECLOSED) r = 0; /* the owner's next recv meets it */
  }
  if (r < 0) {
    fail_handshake(c, r);
    return;
  }
  if (c->plain.len > 0 && (r = ab_conn_flush(c)) < 0) {
    fail_handshake(c, r);
    return;
  }
  c->cbs->on_ready(c);
  if (!c->io.failed && *c->in.len > 0) c->cbs->on_readable(c);
}

/* Readable before the TLS handshake is done: drive it. */
static void handshake_readable(ab_conn_t *c) {
  while (!c->ready && !c->io.failed) {
    uint8_t *rx = cipher_rx(c);
    ssize_t n = ab_sockio_recv(&c->io, rx, AB_CONN_CIPHER_RX);
    if (n == 0) return;
    if (n < 0) {
      fail_handshake(c, (int)n);
      return;
    }
    /* rx is read in place, and what the handshake left of it is copied
     * before anything else can read into rx */
    int r = ab_tls_feed_lent(c->tls, rx, (size_t)n);
    int h = r < 0 ? r : ab_tls_handshake(c->tls);
    int k = ab_tls_keep(c->tls);
    if (h >= 0 && k < 0) h = k;
    int w = send_tls_out(c); /* the next flight, or the alert of a failure */
    if (h < 0) {
      fail_handshake(c, h);
      return;
    }
    if (w < 0) {
      fail_handshake(c, w);
      return;
    }
    if (h == 1) become_ready(c);
  }
}

static void on_io_readable(ab_sockio_t *io) {
  ab_conn_t *c = conn_of(io);
  if (c->ready) c->cbs->on_readable(c);
  else handshake_readable(c);
}

static void on_io_error(ab_sockio_t *io, int err) {
  ab_conn_t *c = conn_of(io);
  c->cbs->on_error(c, err);
}

static void on_io_drained(ab_sockio_t *io) {
  ab_conn_t *c = conn_of(io);
  c->cbs->on_drained(c);
}

int ab_conn_start(ab_conn_t *c, ab_reactor_t *reactor, uv_tcp_t *tcp, ab_sockio_kept_t in,
                  const ab_conn_cbs_t *cbs) {
  c->in = in;
  c->cbs = cbs;
  int r = ab_sockio_start(&c->io, reactor, tcp, on_io_readable, on_io_error);
  if (r < 0) return r;
  if (cbs->on_drained) c->io.on_drained = on_io_drained;
  if (c->tls == NULL) {
    become_ready(c);
    return 0;
  }
  /* a client's ClientHello; a server writes nothing yet */
  int h = ab_tls_handshake(c->tls);
  if (h < 0) return h;
  return send_tls_out(c);
}

ssize_t ab_conn_recv(ab_conn_t *c, size_t *room) {
  if (c->tls == NULL) {
    const uint8_t *data;
    size_t len;
    ssize_t n = ab_sockio_recv_frames(&c->io, NULL, 0, c->in, READ_CHUNK, &data, &len, room);
    if (n > 0) *c->in.len = len;
    return n;
  }
  if (c->peer_closed) return AB_ECLOSED;
  *room = AB_CONN_CIPHER_RX;
  uint8_t *rx = cipher_rx(c);
  ssize_t n = ab_sockio_recv(&c->io, rx, AB_CONN_CIPHER_RX);
  if (n <= 0) return n;
  /* read in place; a partial record left is copied before rx is reused */
  int r = ab_tls_feed_lent(c->tls, rx, (size_t)n);
  if (r == 0) r = decrypt_into_in(c);
  int k = ab_tls_keep(c->tls);
  if (r == 0) r = k;
  /* what reading made TLS write (key updates, alerts) goes out now */
  if (ab_tls_pending_out(c->tls) > 0) {
    int w = send_tls_out(c);
    if (r == 0) r = w;
  }
  return r < 0 ? r : n;
}

ssize_t ab_conn_recv_discard(ab_conn_t *c) {
  return ab_sockio_recv(&c->io, cipher_rx(c), AB_CONN_CIPHER_RX);
}

int ab_conn_flush(ab_conn_t *c) {
  ab_outbuf_t *p = &c->plain;
  if (c->tls == NULL) {
    if (p->len == 0) return 0;
    int r = ab_sockio_send(&c->io, p->buf, p->len);
    p->len = 0;
    return r;
  }
  if (!c->ready) return 0; /* plaintext waits for the handshake */
  if (p->len > 0) {
    int r = ab_tls_write(c->tls, p->buf, p->len);
    p->len = 0;
    if (r < 0) return r;
  }
  return send_tls_out(c);
}

int ab_conn_send(ab_conn_t *c, const uint8_t *p, size_t n) {
  ab_outbuf_t *pl = &c->plain;
  if (pl->len == 0 && c->ready) {
    if (c->tls == NULL) return n ? ab_sockio_send(&c->io, p, n) : 0;
    int r = n ? ab_tls_write(c->tls, p, n) : 0;
    return r < 0 ? r : send_tls_out(c);
  }
  if (n && ab_outbuf_append(pl, p, n) < 0) return AB_ENOMEM;
  return ab_conn_flush(c);
}

const char *ab_conn_error_text(const ab_conn_t *c) {
  return c->tls ? ab_tls_error(c->tls) : "";
}

const char *ab_conn_reason(const ab_conn_t *c, int err, char *buf, size_t cap) {
  const char *tls = ab_conn_error_text(c);
  const char *codec = ab_codec_why(c->codec);
  if (err == AB_EPROTO && tls[0]) snprintf(buf, cap, "TLS: %s (%s)", tls, ab_err_name(err));
  else if ((err == AB_EPROTO || err == AB_EFRAME) && codec[0])
    snprintf(buf, cap, "%s (%s)", codec, ab_err_name(err));
  else snprintf(buf, cap, "%s (%s)", ab_strerror(err), ab_err_name(err));
  return buf;
}

int ab_conn_tls_info(ab_conn_t *c, ab_tls_info_t *info) {
  if (c->tls == NULL || !c->ready) return AB_EINVAL;
  return ab_tls_info(c->tls, info);
}

void ab_conn_close(ab_conn_t *c) { ab_sockio_close(&c->io); }

void ab_conn_free(ab_conn_t *c) {
  ab_tls_conn_free(c->tls);
  c->tls = NULL;
  ab_codec_destroy(c->codec);
  c->codec = NULL;
  ab_outbuf_free(&c->plain);
  ab_sockio_free(&c->io);
}
