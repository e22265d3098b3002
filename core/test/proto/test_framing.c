/* test_framing.c -- framing.h: length prefixes and the message pattern. */
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "proto/framing.h"
#include "test/ab_test.h"

static void test_prefix_roundtrip(void) {
  uint64_t lens[] = {0, 1, 253, 254, 255, 65535, 65536, 16777216, UINT64_C(1) << 40};
  size_t sizes[] = {1, 1, 1, 3, 3, 3, 9, 9, 9};
  for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
    uint8_t b[9];
    size_t n = ab_prefix_encode(b, lens[i]);
    CHECK_EQ_U64(n, sizes[i]);
    CHECK_EQ_U64(ab_prefix_size(lens[i]), sizes[i]);
    uint64_t got = 0;
    CHECK(ab_prefix_decode(b, n, UINT64_MAX, &got) == (int)n);
    CHECK_EQ_U64(got, lens[i]);
    /* every shorter read asks for more */
    for (size_t k = 0; k < n; k++)
      CHECK(ab_prefix_decode(b, k, UINT64_MAX, &got) == AB_EAGAIN);
  }
}

static void test_prefix_rejects(void) {
  uint64_t len;
  uint8_t nonmin3[3] = {254, 10, 0};              /* 10 fits in one byte */
  CHECK(ab_prefix_decode(nonmin3, 3, UINT64_MAX, &len) == AB_EFRAME);
  uint8_t nonmin9[9] = {255, 0xff, 0xff, 0, 0, 0, 0, 0, 0}; /* 65535 */
  CHECK(ab_prefix_decode(nonmin9, 9, UINT64_MAX, &len) == AB_EFRAME);
  uint8_t edge3[3] = {254, 254, 0};               /* 254: minimal */
  CHECK(ab_prefix_decode(edge3, 3, UINT64_MAX, &len) == 3);
  CHECK_EQ_U64(len, 254);
  uint8_t big[9];
  ab_prefix_encode(big, 1000000);
  CHECK(ab_prefix_decode(big, 9, 999999, &len) == AB_EFRAME);
  CHECK(ab_prefix_decode(big, 9, 1000000, &len) == 9);
}

/* The bytes ab_msg_fill writes, one at a time from the definition (the
 * header, then body word k = seed + k * 0x9E3779B97F4A7C15 in little-endian
 * order, the last word cut): the vectorised fill and check must keep the
 * wire format byte for byte at every length around their block sizes. */
static uint8_t ref_byte(size_t i, uint8_t phase, uint32_t conn, uint64_t seq) {
  if (i < 16) {
    uint8_t h[16] = {'A', 'B', phase, 0, (uint8_t)conn, (uint8_t)(conn >> 8),
                     (uint8_t)(conn >> 16), (uint8_t)(conn >> 24)};
    for (int b = 0; b < 8; b++) h[8 + b] = (uint8_t)(seq >> (8 * b));
    return h[i];
  }
  uint64_t seed = seq * UINT64_C(0xD1B54A32D192ED03) ^ ((uint64_t)conn << 32 | conn);
  uint64_t k = (i - 16) / 8 + 1;
  uint64_t w = seed + k * UINT64_C(0x9E3779B97F4A7C15);
  return (uint8_t)(w >> (8 * ((i - 16) % 8)));
}

static void test_message_reference(void) {
  uint8_t *p = malloc(4096 + 64);
  for (size_t n = 16; n <= 4096 + 40; n += (n < 300 ? 1 : 61)) {
    uint64_t seq = UINT64_C(0x0123456789ABCDEF) + n;
    ab_msg_fill(p, n, AB_PHASE_WARMUP, 0xA1B2C3D4u, seq);
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
      if (p[i] != ref_byte(i, AB_PHASE_WARMUP, 0xA1B2C3D4u, seq)) bad = i;
    CHECK_EQ_U64(bad, n);
    uint8_t ph;
    uint32_t c;
    uint64_t s;
    CHECK(ab_msg_check(p, n, &ph, &c, &s) == 0);
    /* a flipped bit in every body word, vector blocks and tail alike */
    for (size_t i = 16; i < n; i += 8) {
      p[i] ^= 0x01;
      CHECK(ab_msg_check(p, n, &ph, &c, &s) == AB_EPAYLOAD);
      p[i] ^= 0x01;
    }
  }
  free(p);
}

static void test_message_pattern(void) {
  size_t sizes[] = {16, 17, 23, 24, 25, 64, 1000, 1024, 16383, 16384, 16385, 65537};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    size_t n = sizes[i];
    uint8_t *p = malloc(n);
    ab_msg_fill(p, n, AB_PHASE_MEASURE, 7, 123456789);
    uint8_t ph;
    uint32_t c;
    uint64_t s;
    CHECK(ab_msg_check(p, n, &ph, &c, &s) == 0);
    CHECK(ph == AB_PHASE_MEASURE && c == 7 && s == 123456789);
    /* any single flipped byte, header or body, is caught */
    for (size_t k = 0; k < n; k += (n > 64 ? n / 37 + 1 : 1)) {
      p[k] ^= 0x40;
      int r = ab_msg_check(p, n, &ph, &c, &s);
      /* a damaged id or sequence may still read as another valid message
       * (always for 16-byte payloads): the caller then sees the wrong
       * (conn, seq) and rejects it */
      CHECK(r == AB_EMAGIC || r == AB_EPAYLOAD ||
            (k >= 4 && k < 16 && r == 0 && (c != 7 || s != 123456789)));
      p[k] ^= 0x40;
    }
    if (n > 16) {
      p[n - 1] ^= 1; /* the last byte, also in a cut word */
      CHECK(ab_msg_check(p, n, &ph, &c, &s) == AB_EPAYLOAD);
    }
    free(p);
  }
  /* different sequences and connections give different bodies */
  uint8_t a[64], b[64];
  ab_msg_fill(a, 64, AB_PHASE_WARMUP, 1, 1);
  ab_msg_fill(b, 64, AB_PHASE_WARMUP, 1, 2);
  CHECK(memcmp(a + 16, b + 16, 48) != 0);
  ab_msg_fill(b, 64, AB_PHASE_WARMUP, 2, 1);
  CHECK(memcmp(a + 16, b + 16, 48) != 0);
  uint8_t ph; uint32_t c; uint64_t s;
  CHECK(ab_msg_check(a, 15, &ph, &c, &s) == AB_ESIZE);
  /* a body swapped between two messages is caught even with a valid header */
  ab_msg_fill(a, 64, AB_PHASE_WARMUP, 1, 1);
  ab_msg_fill(b, 64, AB_PHASE_WARMUP, 1, 2);
  memcpy(a + 16, b + 16, 48);
  CHECK(ab_msg_check(a, 64, &ph, &c, &s) == AB_EPAYLOAD);
}

int main(void) {
  test_prefix_roundtrip();
  test_prefix_rejects();
  test_message_pattern();
  test_message_reference();
  TEST_DONE();
}
