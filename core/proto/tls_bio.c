/* tls_bio.c -- the ciphertext buffer BIO (see tls_bio.h). */
#include "proto/tls_bio.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"

static BIO_METHOD *method;
static pthread_once_t method_once = PTHREAD_ONCE_INIT;

int ab_cbuf_append(ab_cbuf_t *b, const uint8_t *p, size_t n) {
  if (n == 0) return 0;
  if (b->cap - b->len < n && b->off > 0) { /* slide the unread rest out first */
    memmove(b->p, b->p + b->off, b->len - b->off);
    b->len -= b->off;
    b->off = 0;
  }
  if (b->cap - b->len < n) {
    size_t want = b->cap ? b->cap * 2 : 16384 + 512;
    while (want - b->len < n) want *= 2;
    uint8_t *q = realloc(b->p, want);
    if (q == NULL) return AB_ENOMEM;
    b->p = q;
    b->cap = want;
  }
  memcpy(b->p + b->len, p, n);
  b->len += n;
  return 0;
}

int ab_cbuf_lend(ab_cbuf_t *b, const uint8_t *p, size_t n) {
  if (ab_cbuf_pending(b) > 0 || b->blen > 0) return ab_cbuf_append(b, p, n);
  b->bp = p;
  b->blen = n;
  return 0;
}

int ab_cbuf_keep(ab_cbuf_t *b) {
  if (b->blen == 0) return 0;
  const uint8_t *p = b->bp;
  size_t n = b->blen;
  b->bp = NULL;
  b->blen = 0;
  return ab_cbuf_append(b, p, n);
}

static int cb_write(BIO *bio, const char *data, size_t n, size_t *written) {
  BIO_clear_retry_flags(bio);
  if (ab_cbuf_append(BIO_get_data(bio), (const uint8_t *)data, n) != 0) return 0;
  *written = n;
  return 1;
}

static int cb_read(BIO *bio, char *out, size_t cap, size_t *got) {
  ab_cbuf_t *b = BIO_get_data(bio);
  BIO_clear_retry_flags(bio);
  size_t n = ab_cbuf_pending(b);
  if (n > 0) { /* our own bytes come first: they arrived first */
    if (n > cap) n = cap;
    memcpy(out, ab_cbuf_data(b), n);
    ab_cbuf_drop(b, n);
  } else if (b->blen > 0) {
    n = b->blen < cap ? b->blen : cap;
    memcpy(out, b->bp, n);
    b->bp += n;
    b->blen -= n;
  } else {
    BIO_set_retry_read(bio); /* no input yet: want-read, not end of stream */
    return 0;
  }
  *got = n;
  return 1;
}

static long cb_ctrl(BIO *bio, int cmd, long num, void *ptr) {
  (void)num;
  (void)ptr;
  switch (cmd) {
  case BIO_CTRL_PENDING:
  case BIO_CTRL_WPENDING: {
    const ab_cbuf_t *b = BIO_get_data(bio);
    return (long)(ab_cbuf_pending(b) + b->blen);
  }
  case BIO_CTRL_FLUSH:
  case BIO_CTRL_DUP:
    return 1;
  default: /* BIO_CTRL_EOF (never: empty is retry), kTLS queries, ... */
    return 0;
  }
}

static int cb_create(BIO *bio) {
  BIO_set_init(bio, 1);
  return 1;
}

static int cb_destroy(BIO *bio) {
  ab_cbuf_t *b = BIO_get_data(bio);
  if (b) {
    free(b->p);
    free(b);
    BIO_set_data(bio, NULL);
  }
  return 1;
}

static void method_init(void) {
  BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "arkbench ciphertext");
  if (m == NULL) return;
  if (!BIO_meth_set_write_ex(m, cb_write) || !BIO_meth_set_read_ex(m, cb_read) ||
      !BIO_meth_set_ctrl(m, cb_ctrl) || !BIO_meth_set_create(m, cb_create) ||
      !BIO_meth_set_destroy(m, cb_destroy)) {
    BIO_meth_free(m);
    return;
  }
  method = m;
}

BIO *ab_cbuf_bio_new(ab_cbuf_t **buf) {
  pthread_once(&method_once, method_init);
  if (method == NULL) return NULL;
  ab_cbuf_t *b = calloc(1, sizeof(*b));
  if (b == NULL) return NULL;
  BIO *bio = BIO_new(method);
  if (bio == NULL) {
    free(b);
    return NULL;
  }
  BIO_set_data(bio, b);
  *buf = b;
  return bio;
}
