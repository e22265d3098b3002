/* test_tls_bio.c -- the ciphertext buffer BIO under tls.c (proto/tls_bio.h):
 * bytes come out in order across appends, partial reads, slides and
 * growth; an empty buffer reads as "retry" (want-read), never end of
 * stream; the pending counts are the unread bytes; the in-place view and
 * drop agree with BIO reads.  (test_tls runs whole handshakes over it.) */
#include <stdlib.h>
#include <string.h>

#include "proto/tls_bio.h"
#include "test/ab_test.h"

static uint8_t byte_at(size_t i) { return (uint8_t)(i * 131u + (i >> 9)); }

/* Writes n pattern bytes from position *w through the BIO. */
static void put(BIO *bio, size_t *w, size_t n) {
  uint8_t *tmp = malloc(n);
  for (size_t i = 0; i < n; i++) tmp[i] = byte_at(*w + i);
  size_t written = 0;
  CHECK(BIO_write_ex(bio, tmp, n, &written) == 1);
  CHECK_EQ_U64(written, n);
  *w += n;
  free(tmp);
}

/* Reads up to n bytes and checks they continue the pattern at *r. */
static size_t take(BIO *bio, size_t *r, size_t n) {
  uint8_t *tmp = malloc(n);
  size_t got = 0;
  if (BIO_read_ex(bio, tmp, n, &got) != 1) got = 0;
  int same = 1;
  for (size_t i = 0; i < got; i++) same &= tmp[i] == byte_at(*r + i);
  CHECK(same);
  *r += got;
  free(tmp);
  return got;
}

static void test_empty_is_retry(void) {
  ab_cbuf_t *b = NULL;
  BIO *bio = ab_cbuf_bio_new(&b);
  CHECK(bio != NULL && b != NULL);
  uint8_t x;
  size_t got = 7;
  CHECK(BIO_read_ex(bio, &x, 1, &got) == 0);
  CHECK(BIO_should_retry(bio));
  CHECK(BIO_should_read(bio));
  CHECK(BIO_eof(bio) == 0);
  CHECK_EQ_U64(BIO_ctrl_pending(bio), 0);
  CHECK_EQ_U64(ab_cbuf_pending(b), 0);
  BIO_free(bio); /* frees b */
}

static void test_order_across_slides_and_growth(void) {
  ab_cbuf_t *b = NULL;
  BIO *bio = ab_cbuf_bio_new(&b);
  size_t w = 0, r = 0;
  /* odd sizes, reads that leave a rest, so the buffer slides and grows */
  const size_t writes[] = {1, 5, 16384, 333, 70000, 2, 4096, 131072, 17};
  const size_t reads[] = {3, 16000, 1, 90000, 7, 200000};
  size_t wi = 0, ri = 0;
  for (int round = 0; round < 40; round++) {
    put(bio, &w, writes[wi++ % (sizeof(writes) / sizeof(writes[0]))]);
    CHECK_EQ_U64(BIO_ctrl_pending(bio), w - r);
    take(bio, &r, reads[ri++ % (sizeof(reads) / sizeof(reads[0]))]);
    CHECK_EQ_U64(ab_cbuf_pending(b), w - r);
    CHECK(b->cap <= 4u << 20); /* bounded by the largest backlog, not the total */
  }
  while (ab_cbuf_pending(b) > 0) take(bio, &r, 50000);
  CHECK_EQ_U64(r, w);
  CHECK_EQ_U64(b->off, 0); /* emptied: back to the front */
  CHECK_EQ_U64(b->len, 0);
  BIO_free(bio);
}

static void test_view_and_append(void) {
  ab_cbuf_t *b = NULL;
  BIO *bio = ab_cbuf_bio_new(&b);
  size_t w = 0, r = 0;
  put(bio, &w, 1000);
  /* the owner's side: the view shows the same bytes a BIO read would */
  CHECK_EQ_U64(ab_cbuf_pending(b), 1000);
  int same = 1;
  for (size_t i = 0; i < 400; i++) same &= ab_cbuf_data(b)[i] == byte_at(i);
  CHECK(same);
  ab_cbuf_drop(b, 400);
  r = 400;
  uint8_t more[600];
  for (size_t i = 0; i < sizeof(more); i++) more[i] = byte_at(w + i);
  CHECK(ab_cbuf_append(b, more, sizeof(more)) == 0);
  w += sizeof(more);
  CHECK(ab_cbuf_append(b, more, 0) == 0);
  CHECK_EQ_U64(take(bio, &r, 5000), 1200);
  CHECK_EQ_U64(r, w);
  ab_cbuf_drop(b, 0);
  CHECK_EQ_U64(ab_cbuf_pending(b), 0);
  BIO_free(bio);
}

/* Lent bytes are read in place; keep copies the unread rest, so the
 * lender may overwrite its buffer; own bytes go before lent ones. */
static void test_lend_and_keep(void) {
  ab_cbuf_t *b = NULL;
  BIO *bio = ab_cbuf_bio_new(&b);
  size_t w = 0, r = 0;
  uint8_t rx[3000];
  for (size_t i = 0; i < sizeof(rx); i++) rx[i] = byte_at(w + i);
  CHECK(ab_cbuf_lend(b, rx, sizeof(rx)) == 0);
  w += sizeof(rx);
  CHECK_EQ_U64(ab_cbuf_pending(b), 0); /* nothing copied */
  CHECK_EQ_U64(BIO_ctrl_pending(bio), 3000);
  CHECK_EQ_U64(take(bio, &r, 1000), 1000);
  CHECK(ab_cbuf_keep(b) == 0);
  memset(rx, 0xEE, sizeof(rx)); /* the lender reuses its buffer */
  CHECK_EQ_U64(ab_cbuf_pending(b), 2000);
  /* a second loan while own bytes are unread is copied behind them */
  for (size_t i = 0; i < 500; i++) rx[i] = byte_at(w + i);
  CHECK(ab_cbuf_lend(b, rx, 500) == 0);
  w += 500;
  CHECK_EQ_U64(ab_cbuf_pending(b), 2500);
  memset(rx, 0xDD, 500);
  CHECK(ab_cbuf_keep(b) == 0); /* nothing lent: nothing to do */
  CHECK_EQ_U64(take(bio, &r, 10000), 2500);
  CHECK_EQ_U64(r, w);
  /* a loan read whole needs no copy at keep */
  for (size_t i = 0; i < 100; i++) rx[i] = byte_at(w + i);
  CHECK(ab_cbuf_lend(b, rx, 100) == 0);
  w += 100;
  CHECK_EQ_U64(take(bio, &r, 100), 100);
  CHECK(ab_cbuf_keep(b) == 0);
  CHECK_EQ_U64(BIO_ctrl_pending(bio), 0);
  uint8_t x;
  size_t got;
  CHECK(BIO_read_ex(bio, &x, 1, &got) == 0 && BIO_should_retry(bio));
  BIO_free(bio);
}

int main(void) {
  test_empty_is_retry();
  test_lend_and_keep();
  test_order_across_slides_and_growth();
  test_view_and_append();
  TEST_DONE();
}
