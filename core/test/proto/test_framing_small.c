/* test_framing_small.c -- framing.h: messages of 1 .. 15 bytes, too small
 * for the header: the code of (connection, sequence), every byte checked. */
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "proto/framing.h"
#include "test/ab_test.h"

/* Decodes p[0..n) for conn at base; UINT64_MAX on an error. */
static uint64_t seq_of(const uint8_t *p, size_t n, uint32_t conn, uint64_t base) {
  uint64_t s = 0;
  return ab_msg_small_seq(p, n, conn, base, &s) == 0 ? s : UINT64_MAX;
}

/* The wire format, from the formula in framing.h (computed apart, in
 * Python): a change of the code breaks these. */
static void test_golden(void) {
  static const struct {
    size_t n;
    uint32_t conn;
    uint64_t seq;
    const char *hex;
  } v[] = {
      {1, 0, 0, "bb"},
      {1, 3, 7, "c3"},
      {4, 1, 0, "b7112f8f"},
      {4, 1, 1, "23b747f2"},
      {4, 7, 123456789, "f325c40b"},
      {7, 2, 5, "dbbecfc61c8317"},
      {12, 9, UINT64_C(1) << 40, "82a7dae7e2499f301e7c4a7f"},
      {15, 4, 77, "fe9b871347fe348ff8c57b8806cbbe"},
  };
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
    uint8_t p[16];
    char hex[40];
    ab_msg_fill(p, v[i].n, AB_PHASE_MEASURE, v[i].conn, v[i].seq);
    for (size_t k = 0; k < v[i].n; k++) snprintf(hex + 2 * k, 3, "%02x", p[k]);
    CHECK(strcmp(hex, v[i].hex) == 0);
    if (strcmp(hex, v[i].hex) != 0) fprintf(stderr, "  n=%zu: %s, expected %s\n", v[i].n, hex, v[i].hex);
    /* the phase is not carried */
    uint8_t q[16];
    ab_msg_fill(q, v[i].n, AB_PHASE_WARMUP, v[i].conn, v[i].seq);
    CHECK(memcmp(p, q, v[i].n) == 0);
  }
}

/* Every size gives its sequence back, from any base up to 2^b - 1 below
 * it, also across the 2^b boundaries and for large sequences. */
static void test_roundtrip(void) {
  const uint64_t seqs[] = {0, 1, 2, 255, 256, 257, 65535, 65536, 0xFFFFFF, 0x1000000,
                           UINT64_C(0xFFFFFFFF), UINT64_C(1) << 32, UINT64_C(123456789012345),
                           UINT64_MAX - 1};
  const uint32_t conns[] = {0, 1, 7, 1000, UINT32_MAX};
  for (size_t n = 1; n < AB_MSG_HEADER; n++) {
    uint64_t mask = ab_msg_small_mask(n);
    CHECK_EQ_U64(mask, n >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * n)) - 1);
    for (size_t ci = 0; ci < sizeof(conns) / sizeof(conns[0]); ci++)
      for (size_t si = 0; si < sizeof(seqs) / sizeof(seqs[0]); si++) {
        uint8_t p[16];
        uint64_t s = seqs[si];
        ab_msg_fill(p, n, AB_PHASE_MEASURE, conns[ci], s);
        CHECK_EQ_U64(seq_of(p, n, conns[ci], s), s);
        CHECK_EQ_U64(seq_of(p, n, conns[ci], s - mask), s);       /* wraps below 0 too */
        CHECK_EQ_U64(seq_of(p, n, conns[ci], s - mask / 2), s);
        if (n < 8) {
          /* from base s + 1 it is the next sequence with those bits */
          CHECK_EQ_U64(seq_of(p, n, conns[ci], s + 1), s + mask + 1);
        }
      }
  }
  uint8_t p[16];
  uint64_t s;
  CHECK(ab_msg_small_seq(p, 0, 1, 0, &s) == AB_ESIZE);
  CHECK(ab_msg_small_seq(p, 16, 1, 0, &s) == AB_ESIZE);
}

/* 1 and 2 bytes: a bijection of the sequence's low bits for every
 * connection tried (so two messages in a row never look alike), and the
 * bytes are spread, not a counter. */
static void test_bijection(void) {
  const uint32_t conns[] = {0, 5, 99999};
  uint8_t *seen = calloc(65536, 1);
  for (size_t ci = 0; ci < 3; ci++) {
    for (size_t n = 1; n <= 2; n++) {
      uint32_t count = n == 1 ? 256 : 65536;
      memset(seen, 0, 65536);
      uint32_t distinct = 0;
      uint64_t base = UINT64_C(1) << 40; /* any multiple of 2^16 */
      for (uint32_t k = 0; k < count; k++) {
        uint8_t p[2] = {0, 0};
        ab_msg_fill(p, n, AB_PHASE_MEASURE, conns[ci], base + k);
        uint32_t v = p[0] | (uint32_t)p[1] << 8;
        if (!seen[v]) distinct++;
        seen[v] = 1;
        CHECK_EQ_U64(seq_of(p, n, conns[ci], base), base + k);
      }
      CHECK_EQ_U64(distinct, count);
    }
  }
  free(seen);
  /* 4 bytes: each byte takes many values over 1000 messages, and other
   * connections' messages differ */
  for (int b = 0; b < 4; b++) {
    uint8_t vals[256] = {0};
    uint32_t distinct = 0;
    for (uint64_t k = 0; k < 1000; k++) {
      uint8_t p[4], q[4];
      ab_msg_fill(p, 4, AB_PHASE_MEASURE, 3, k);
      ab_msg_fill(q, 4, AB_PHASE_MEASURE, 4, k);
      CHECK(memcmp(p, q, 4) != 0);
      if (!vals[p[b]]) distinct++;
      vals[p[b]] = 1;
    }
    CHECK(distinct > 200);
  }
}

/* Any damaged byte, any two bytes swapped (when they differ), and another
 * connection's or message's bytes read as another sequence: the window
 * then rejects the reply (engine/window.h). */
static void test_damage(void) {
  for (size_t n = 1; n < AB_MSG_HEADER; n++) {
    for (uint64_t s = 1000; s < 1064; s++) {
      uint8_t p[16], q[16];
      ab_msg_fill(p, n, AB_PHASE_MEASURE, 42, s);
      uint64_t base = s - (n < 8 ? ab_msg_small_mask(n) / 2 : 500);
      for (size_t k = 0; k < n; k++)
        for (int bit = 0; bit < 8; bit++) {
          memcpy(q, p, n);
          q[k] ^= (uint8_t)(1u << bit);
          CHECK(seq_of(q, n, 42, base) != s);
        }
      for (size_t a = 0; a < n; a++)
        for (size_t b = a + 1; b < n; b++) {
          if (p[a] == p[b]) continue;
          memcpy(q, p, n);
          q[a] = p[b];
          q[b] = p[a];
          CHECK(seq_of(q, n, 42, base) != s);
        }
      /* the next message's bytes, or the same sequence on another
       * connection, are not this message */
      ab_msg_fill(q, n, AB_PHASE_MEASURE, 42, s + 1);
      CHECK(seq_of(q, n, 42, base) != s);
      ab_msg_fill(q, n, AB_PHASE_MEASURE, 43, s);
      CHECK(seq_of(q, n, 42, base) != s);
    }
  }
  /* 9 .. 15 bytes: a damaged tail is a payload error */
  uint8_t p[15];
  uint64_t s;
  ab_msg_fill(p, 15, AB_PHASE_MEASURE, 1, 77);
  p[14] ^= 1;
  CHECK(ab_msg_small_seq(p, 15, 1, 0, &s) == AB_EPAYLOAD);
}

/* The 16-byte message is unchanged by the small form's branch. */
static void test_sixteen(void) {
  uint8_t p[16];
  ab_msg_fill(p, 16, AB_PHASE_MEASURE, 9, 1234);
  CHECK(p[0] == 'A' && p[1] == 'B' && p[2] == AB_PHASE_MEASURE);
  uint8_t ph;
  uint32_t c;
  uint64_t s;
  CHECK(ab_msg_check(p, 16, &ph, &c, &s) == 0);
  CHECK(c == 9 && s == 1234);
}

int main(void) {
  test_golden();
  test_roundtrip();
  test_bijection();
  test_damage();
  test_sixteen();
  TEST_DONE();
}
