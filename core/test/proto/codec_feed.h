/* codec_feed.h -- the C codec tests' driver: feeds bytes to a codec's
 * parse function whole or in pieces, keeping unconsumed bytes as the
 * engine does.  Include after ab_test.h. */
#ifndef AB_CODEC_FEED_H
#define AB_CODEC_FEED_H

#include <stdlib.h>
#include <string.h>

#include "proto/codec.h"

typedef int (*parse_fn)(ab_codec_t *, const uint8_t *, size_t, size_t *, ab_msgview_t *);
typedef void (*msg_fn)(void *ctx, const uint8_t *p, size_t n);

/* Feeds src[0..n) to parse in pieces of `split` bytes (0: all at once),
 * keeping unconsumed bytes like the engine and calling on_msg per message.
 * Returns the messages or the first error. */
static long feed(ab_codec_t *c, parse_fn parse, const uint8_t *src, size_t n,
                 size_t split, msg_fn on_msg, void *ctx) {
  uint8_t *pend = malloc(n + 1);
  size_t plen = 0, pos = 0;
  long count = 0;
  while (pos < n) {
    size_t k = split && split < n - pos ? split : n - pos;
    memcpy(pend + plen, src + pos, k);
    plen += k;
    pos += k;
    size_t off = 0;
    while (off < plen) {
      size_t used = 12345;
      ab_msgview_t m = {NULL, 0};
      int r = parse(c, pend + off, plen - off, &used, &m);
      if (r < 0) {
        free(pend);
        return r;
      }
      CHECK(used <= plen - off);
      off += used;
      if (r == 0) {
        CHECK(off == plen);
        break;
      }
      CHECK(m.data != NULL);
      count++;
      if (on_msg) on_msg(ctx, m.data, m.len);
    }
    memmove(pend, pend + off, plen - off);
    plen -= off;
  }
  free(pend);
  return count;
}

#endif
