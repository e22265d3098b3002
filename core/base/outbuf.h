/* outbuf.h -- a connection's outgoing bytes, double-buffered over libuv.
 *
 * Connections (io/conn.h) use it only as a growing byte buffer (reserve,
 * commit, append: where codecs write): their bytes reach the socket
 * through sockio, not through the libuv stream half below.
 *
 * Bytes are appended to the active buffer; ab_outbuf_flush() hands them to
 * the socket with uv_try_write() and, for what the kernel did not take,
 * starts one uv_write() and switches appends to the other buffer.  When that
 * write completes the other buffer is flushed in turn.  Buffers grow to the
 * connection's high-water mark and are then reused: no allocation per
 * message in steady state, one uv_write_t per connection.
 *
 * Errors are reported through the `on_error` callback given to init (from
 * the flush or the write callback), once per failure, with a libuv code.
 */
#ifndef AB_OUTBUF_H
#define AB_OUTBUF_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

typedef struct ab_outbuf_s ab_outbuf_t;
typedef void (*ab_outbuf_error_cb)(ab_outbuf_t *ob, int err);

struct ab_outbuf_s {
  uv_stream_t *stream;
  ab_outbuf_error_cb on_error;
  uint8_t *buf[2];
  size_t cap[2];
  size_t len[2];
  int active;   /* index appends go to */
  int writing;  /* a uv_write of buf[!active] is in flight */
  int closed;   /* no more flushes (error or shutdown) */
  uv_write_t req;
};

void ab_outbuf_init(ab_outbuf_t *ob, uv_stream_t *stream, ab_outbuf_error_cb cb);
void ab_outbuf_free(ab_outbuf_t *ob);

/* Returns a pointer where n more bytes can be written, growing the active
 * buffer if needed (NULL when out of memory); commit them with _commit. */
uint8_t *ab_outbuf_reserve(ab_outbuf_t *ob, size_t n);
static inline void ab_outbuf_commit(ab_outbuf_t *ob, size_t n) {
  ob->len[ob->active] += n;
}

/* Copies n bytes in.  Returns 0 or AB_ENOMEM. */
int ab_outbuf_append(ab_outbuf_t *ob, const void *p, size_t n);

/* True when nothing is buffered or in flight: a caller may then try to
 * write straight from its own memory with ab_outbuf_write_direct(). */
static inline int ab_outbuf_idle(const ab_outbuf_t *ob) {
  return !ob->writing && ob->len[ob->active] == 0;
}

/* Writes p[0..n) now if the socket takes it, buffering the rest.  Only when
 * ab_outbuf_idle().  Returns 0 or a negative error (also reported). */
int ab_outbuf_write_direct(ab_outbuf_t *ob, const uint8_t *p, size_t n);

/* Hands the active buffer to the socket.  Returns 0 or a negative error
 * (also reported through on_error). */
int ab_outbuf_flush(ab_outbuf_t *ob);

#endif
