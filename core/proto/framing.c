/* framing.c -- see framing.h. */
#include "proto/framing.h"

#include <string.h>

#include "base/ab_error.h"

#define GOLDEN UINT64_C(0x9E3779B97F4A7C15)

static inline void put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

size_t ab_prefix_encode(uint8_t *out, uint64_t len) {
  if (len < 254) {
    out[0] = (uint8_t)len;
    return 1;
  }
  if (len <= 65535) {
    out[0] = 254;
    out[1] = (uint8_t)len;
    out[2] = (uint8_t)(len >> 8);
    return 3;
  }
  out[0] = 255;
  put_u64(out + 1, len);
  return 9;
}

static inline uint64_t seed_of(uint32_t conn, uint64_t seq) {
  return seq * UINT64_C(0xD1B54A32D192ED03) ^ ((uint64_t)conn << 32 | conn);
}

/* The two per-message loops below are the only per-byte work the client
 * does; they are built with -O3 (CMakeLists.txt) and, on x86-64, cloned for
 * AVX2 with a run-time choice (GCC target_clones), which halves their cost
 * on 1 KiB payloads (not under the sanitizers: their runtime is not up yet
 * when the resolver runs). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define AB_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define AB_CLONES
#endif

AB_CLONES
void ab_msg_fill(uint8_t *p, size_t len, uint8_t phase, uint32_t conn,
                 uint64_t seq) {
  p[0] = 'A';
  p[1] = 'B';
  p[2] = phase;
  p[3] = 0;
  p[4] = (uint8_t)conn;
  p[5] = (uint8_t)(conn >> 8);
  p[6] = (uint8_t)(conn >> 16);
  p[7] = (uint8_t)(conn >> 24);
  put_u64(p + 8, seq);
  uint64_t w = seed_of(conn, seq);
  size_t off = AB_MSG_HEADER;
  /* little-endian hosts store the word directly */
  for (; off + 8 <= len; off += 8) {
    w += GOLDEN;
    uint64_t le = w;
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    le = __builtin_bswap64(w);
#endif
    memcpy(p + off, &le, 8);
  }
  if (off < len) {
    w += GOLDEN;
    for (size_t i = 0; off + i < len; i++) p[off + i] = (uint8_t)(w >> (8 * i));
  }
}

AB_CLONES
int ab_msg_check(const uint8_t *p, size_t len, uint8_t *phase, uint32_t *conn,
                 uint64_t *seq) {
  if (len < AB_MSG_HEADER) return AB_ESIZE;
  if (p[0] != 'A' || p[1] != 'B' || p[3] != 0 ||
      (p[2] != AB_PHASE_WARMUP && p[2] != AB_PHASE_MEASURE))
    return AB_EMAGIC;
  uint32_t c = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
               (uint32_t)p[7] << 24;
  uint64_t s = get_u64(p + 8);
  uint64_t w = seed_of(c, s);
  size_t off = AB_MSG_HEADER;
  uint64_t diff = 0;
  for (; off + 8 <= len; off += 8) {
    w += GOLDEN;
    uint64_t got;
    memcpy(&got, p + off, 8);
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    got = __builtin_bswap64(got);
#endif
    diff |= got ^ w;
  }
  if (off < len) {
    w += GOLDEN;
    for (size_t i = 0; off + i < len; i++)
      diff |= (uint64_t)(p[off + i] ^ (uint8_t)(w >> (8 * i)));
  }
  if (diff) return AB_EPAYLOAD;
  *phase = p[2];
  *conn = c;
  *seq = s;
  return 0;
}
