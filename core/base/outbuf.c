/* outbuf.c -- see outbuf.h. */
#include "base/outbuf.h"

#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"

void ab_outbuf_init(ab_outbuf_t *ob, uv_stream_t *stream, ab_outbuf_error_cb cb) {
  memset(ob, 0, sizeof(*ob));
  ob->stream = stream;
  ob->on_error = cb;
  ob->req.data = ob;
}

void ab_outbuf_free(ab_outbuf_t *ob) {
  free(ob->buf[0]);
  free(ob->buf[1]);
  ob->buf[0] = ob->buf[1] = NULL;
  ob->cap[0] = ob->cap[1] = ob->len[0] = ob->len[1] = 0;
}

uint8_t *ab_outbuf_reserve(ab_outbuf_t *ob, size_t n) {
  int a = ob->active;
  if (ob->cap[a] - ob->len[a] < n) {
    size_t want = ob->cap[a] ? ob->cap[a] * 2 : 4096;
    while (want < ob->len[a] + n) want *= 2;
    uint8_t *p = realloc(ob->buf[a], want);
    if (p == NULL) return NULL;
    ob->buf[a] = p;
    ob->cap[a] = want;
  }
  return ob->buf[a] + ob->len[a];
}

int ab_outbuf_append(ab_outbuf_t *ob, const void *p, size_t n) {
  uint8_t *dst = ab_outbuf_reserve(ob, n);
  if (dst == NULL) return AB_ENOMEM;
  memcpy(dst, p, n);
  ab_outbuf_commit(ob, n);
  return 0;
}

static void fail(ab_outbuf_t *ob, int err) {
  if (ob->closed) return;
  ob->closed = 1;
  if (ob->on_error) ob->on_error(ob, err);
}

static void on_write(uv_write_t *req, int status) {
  ab_outbuf_t *ob = req->data;
  ob->writing = 0;
  ob->len[!ob->active] = 0;
  if (status < 0) {
    if (status != UV_ECANCELED) fail(ob, status);
    return;
  }
  if (!ob->closed && ob->len[ob->active] > 0) ab_outbuf_flush(ob);
}

/* Starts the async write of buf[a][off..len) and flips appends over. */
static int start_write(ab_outbuf_t *ob, int a, size_t off) {
  size_t rest = ob->len[a] - off;
  if (off > 0) memmove(ob->buf[a], ob->buf[a] + off, rest);
  ob->len[a] = rest;
  uv_buf_t b = uv_buf_init((char *)ob->buf[a], (unsigned)rest);
  int r = uv_write(&ob->req, ob->stream, &b, 1, on_write);
  if (r < 0) {
    fail(ob, r);
    return r;
  }
  ob->writing = 1;
  ob->active = !a;
  return 0;
}

int ab_outbuf_flush(ab_outbuf_t *ob) {
  int a = ob->active;
  if (ob->closed) return AB_ECLOSED;
  if (ob->writing || ob->len[a] == 0) return 0;
  uv_buf_t b = uv_buf_init((char *)ob->buf[a], (unsigned)ob->len[a]);
  int n = uv_try_write(ob->stream, &b, 1);
  if (n == (int)ob->len[a]) {
    ob->len[a] = 0;
    return 0;
  }
  if (n < 0 && n != UV_EAGAIN) {
    fail(ob, n);
    return n;
  }
  return start_write(ob, a, n < 0 ? 0 : (size_t)n);
}

int ab_outbuf_write_direct(ab_outbuf_t *ob, const uint8_t *p, size_t n) {
  if (ob->closed) return AB_ECLOSED;
  uv_buf_t b = uv_buf_init((char *)p, (unsigned)n);
  int w = uv_try_write(ob->stream, &b, 1);
  if (w == (int)n) return 0;
  if (w < 0 && w != UV_EAGAIN) {
    fail(ob, w);
    return w;
  }
  size_t done = w < 0 ? 0 : (size_t)w;
  if (ab_outbuf_append(ob, p + done, n - done) != 0) {
    fail(ob, AB_ENOMEM);
    return AB_ENOMEM;
  }
  return start_write(ob, ob->active, 0);
}
