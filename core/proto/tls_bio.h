/* tls_bio.h -- the ciphertext buffers under an SSL (tls.c's rbio and wbio).
 *
 * An OpenSSL BIO over one growable byte buffer of ours, used in place of
 * BIO_s_mem(): the memory BIO zeroes every region it grows into before
 * copying over it (BUF_MEM_grow_clean) and is only reachable through
 * BIO_write/BIO_read, so each record it carries costs a memset and two
 * copies.  This one appends without clearing, and its owner (tls.c) reads
 * the buffer in place -- ciphertext goes from the buffer straight to the
 * socket, and what the socket read is appended without a BIO call.
 *
 * Reads from an empty buffer are "retry" (want-read), never end of stream,
 * as BIO_set_mem_eof_return(-1) made them for the memory BIO.  The buffer
 * keeps its high-water size; consumed bytes are slid out only when room is
 * needed.  One thread at a time, as its SSL.
 */
#ifndef AB_TLS_BIO_H
#define AB_TLS_BIO_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/bio.h>

typedef struct {
  uint8_t *p;
  size_t cap;
  size_t off, len;    /* the unread bytes of our own: p[off..len) */
  const uint8_t *bp;  /* then the caller's, read in place until it takes */
  size_t blen;        /* them back (ab_cbuf_keep) */
} ab_cbuf_t;

/* A new BIO owning a new empty buffer (*buf points at it until the BIO is
 * freed, which frees the buffer); NULL when out of memory. */
BIO *ab_cbuf_bio_new(ab_cbuf_t **buf);

/* Appends n bytes.  0 or AB_ENOMEM. */
int ab_cbuf_append(ab_cbuf_t *b, const uint8_t *p, size_t n);

/* Lends p[0..n) to the readers without copying it (appended, as a copy,
 * when unread bytes are there already or some are lent); ab_cbuf_keep()
 * copies what was not read of it and ends the loan, before p is reused.
 * 0 or AB_ENOMEM. */
int ab_cbuf_lend(ab_cbuf_t *b, const uint8_t *p, size_t n);
int ab_cbuf_keep(ab_cbuf_t *b);

/* The unread bytes of our own (what is lent is read through the BIO
 * only), and forgetting the first n of them. */
static inline size_t ab_cbuf_pending(const ab_cbuf_t *b) { return b->len - b->off; }
static inline const uint8_t *ab_cbuf_data(const ab_cbuf_t *b) { return b->p + b->off; }
static inline void ab_cbuf_drop(ab_cbuf_t *b, size_t n) {
  b->off += n;
  if (b->off >= b->len) b->off = b->len = 0;
}

#endif
