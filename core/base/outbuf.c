/* outbuf.c -- see outbuf.h. */
#include "base/outbuf.h"

#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"

void ab_outbuf_init(ab_outbuf_t *ob) { memset(ob, 0, sizeof(*ob)); }

void ab_outbuf_free(ab_outbuf_t *ob) {
  free(ob->buf);
  memset(ob, 0, sizeof(*ob));
}

uint8_t *ab_outbuf_reserve(ab_outbuf_t *ob, size_t n) {
  if (ob->cap - ob->len < n) {
    size_t want = ob->cap ? ob->cap * 2 : 4096;
    while (want < ob->len + n) want *= 2;
    uint8_t *p = realloc(ob->buf, want);
    if (p == NULL) return NULL;
    ob->buf = p;
    ob->cap = want;
  }
  return ob->buf + ob->len;
}

int ab_outbuf_append(ab_outbuf_t *ob, const void *p, size_t n) {
  uint8_t *dst = ab_outbuf_reserve(ob, n);
  if (dst == NULL) return AB_ENOMEM;
  memcpy(dst, p, n);
  ab_outbuf_commit(ob, n);
  return 0;
}
