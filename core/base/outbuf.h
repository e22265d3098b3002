/* outbuf.h -- a connection's outgoing bytes: one growing byte buffer.
 *
 * Codecs write into it (reserve + commit, or append); the connection
 * (io/conn.h) hands buf[0..len) to its socket IO or TLS transform and
 * then empties it (len = 0).  The buffer grows to the connection's
 * high-water mark and is then reused: no allocation per message in steady
 * state.  Owned by its connection; one thread.
 */
#ifndef AB_OUTBUF_H
#define AB_OUTBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct ab_outbuf_s {
  uint8_t *buf;
  size_t cap;   /* bytes allocated */
  size_t len;   /* bytes waiting: buf[0..len) */
} ab_outbuf_t;

void ab_outbuf_init(ab_outbuf_t *ob);
void ab_outbuf_free(ab_outbuf_t *ob);

/* Returns a pointer where n more bytes can be written, growing the buffer
 * if needed (NULL when out of memory); commit them with _commit. */
uint8_t *ab_outbuf_reserve(ab_outbuf_t *ob, size_t n);
static inline void ab_outbuf_commit(ab_outbuf_t *ob, size_t n) { ob->len += n; }

/* Copies n bytes in.  Returns 0 or AB_ENOMEM. */
int ab_outbuf_append(ab_outbuf_t *ob, const void *p, size_t n);

#endif
