/* buf.h -- growing a byte buffer that is reused for the life of a
 * connection (read buffers, pending output, batches). */
#ifndef AB_BUF_H
#define AB_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/ab_error.h"

/* Makes room for `free_at_least` bytes past buf[len]: the capacity doubles
 * (starting at twice the request) until they fit.  The contents are kept.
 * Returns 0, or AB_ENOMEM with the buffer unchanged. */
static inline int ab_buf_grow(uint8_t **buf, size_t *cap, size_t len, size_t free_at_least) {
  if (*cap - len >= free_at_least) return 0;
  size_t want = *cap ? *cap * 2 : 2 * free_at_least;
  while (want - len < free_at_least) want *= 2;
  uint8_t *p = realloc(*buf, want);
  if (p == NULL) return AB_ENOMEM;
  *buf = p;
  *cap = want;
  return 0;
}

#endif
