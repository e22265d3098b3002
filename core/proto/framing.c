/* framing.c -- see framing.h. */
#include "proto/framing.h"

#include <string.h>

#include "base/ab_error.h"

#define GOLDEN UINT64_C(0x9E3779B97F4A7C15)

static inline void put_u64(uint8_t *p, uint64_t v) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  memcpy(p, &v, 8);
#else
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
#endif
}
static inline uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  memcpy(&v, p, 8);
#else
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
#endif
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

/* ---- small messages (payload < 16, framing.h) -------------------------- */

#define SMALL_KEY UINT64_C(0x632BE59BD9B4E019)
#define MIX1 UINT64_C(0xBF58476D1CE4E5B9)
#define MIX2 UINT64_C(0x94D049BB133111EB)
/* their inverses mod 2^64 (test_framing_small.c: every code reads back) */
#define MIX1_INV UINT64_C(0x96DE1B173F119089)
#define MIX2_INV UINT64_C(0x319642B2D24D8EC3)

static inline uint64_t small_key(uint32_t conn) { return (uint64_t)conn * GOLDEN + SMALL_KEY; }

/* mix_b and its inverse on the b-bit values x & mask (b = 8 .. 64): odd
 * multiplications and xor-shifts by b/2 (its own inverse) mod 2^b. */
static inline uint64_t mix(uint64_t x, uint64_t mask, unsigned half) {
  x = (x * MIX1) & mask;
  x ^= x >> half;
  x = (x * MIX2) & mask;
  return x ^ (x >> half);
}
static inline uint64_t unmix(uint64_t x, uint64_t mask, unsigned half) {
  x ^= x >> half;
  x = (x * MIX2_INV) & mask;
  x ^= x >> half;
  return (x * MIX1_INV) & mask;
}

/* Bytes 8 .. len-1 of a small message (len 9 .. 15): the first pattern
 * word of (conn, seq), as a large message's bytes 16 .. 23. */
static inline uint64_t small_tail(uint32_t conn, uint64_t seq) { return seed_of(conn, seq) + GOLDEN; }

static void fill_small(uint8_t *p, size_t len, uint32_t conn, uint64_t seq) {
  size_t m = len < 8 ? len : 8;
  uint64_t mask = ab_msg_small_mask(len);
  uint64_t code = mix((seq + small_key(conn)) & mask, mask, (unsigned)(4 * m));
  for (size_t i = 0; i < m; i++) p[i] = (uint8_t)(code >> (8 * i));
  uint64_t t = small_tail(conn, seq);
  for (size_t i = 8; i < len; i++) p[i] = (uint8_t)(t >> (8 * (i - 8)));
}

int ab_msg_small_seq(const uint8_t *p, size_t len, uint32_t conn, uint64_t base,
                     uint64_t *seq) {
  if (len < 1 || len >= AB_MSG_HEADER) return AB_ESIZE;
  size_t m = len < 8 ? len : 8;
  uint64_t mask = ab_msg_small_mask(len);
  uint64_t code = 0;
  for (size_t i = 0; i < m; i++) code |= (uint64_t)p[i] << (8 * i);
  uint64_t low = (unmix(code, mask, (unsigned)(4 * m)) - small_key(conn)) & mask;
  uint64_t s = base + ((low - base) & mask);
  if (len > 8) {
    uint64_t t = small_tail(conn, s);
    for (size_t i = 8; i < len; i++)
      if (p[i] != (uint8_t)(t >> (8 * (i - 8)))) return AB_EPAYLOAD;
  }
  *seq = s;
  return 0;
}

/* ---- messages with the header ------------------------------------------ */

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

/* Little-endian GCC/clang hosts walk the payload words in vectors of 4
 * (GCC's vector extension: AVX2 registers in the avx2 clone, pairs of SSE
 * ones otherwise); the scalar loops finish the last words. */
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define AB_VEC_WORDS 1
typedef uint64_t ab_v4_t __attribute__((vector_size(32)));
#else
#define AB_VEC_WORDS 0
#endif

AB_CLONES
void ab_msg_fill(uint8_t *p, size_t len, uint8_t phase, uint32_t conn,
                 uint64_t seq) {
  if (len < AB_MSG_HEADER) {
    fill_small(p, len, conn, seq);
    return;
  }
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
#if AB_VEC_WORDS
  /* 8 words per turn in two vectors (the words are an arithmetic
   * sequence: each lane steps by 8 GOLDEN) */
  if (off + 64 <= len) {
    ab_v4_t a = {w + GOLDEN, w + 2 * GOLDEN, w + 3 * GOLDEN, w + 4 * GOLDEN};
    ab_v4_t b = a + 4 * GOLDEN;
    for (; off + 64 <= len; off += 64) {
      memcpy(p + off, &a, 32);
      memcpy(p + off + 32, &b, 32);
      a += 8 * GOLDEN;
      b += 8 * GOLDEN;
    }
    if (off + 32 <= len) {
      memcpy(p + off, &a, 32);
      off += 32;
      a = b;
    }
    w = a[0] - GOLDEN;
  }
#endif
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
#if AB_VEC_WORDS
  if (off + 64 <= len) {
    ab_v4_t a = {w + GOLDEN, w + 2 * GOLDEN, w + 3 * GOLDEN, w + 4 * GOLDEN};
    ab_v4_t b = a + 4 * GOLDEN, d = {0, 0, 0, 0};
    for (; off + 64 <= len; off += 64) {
      ab_v4_t x, y;
      memcpy(&x, p + off, 32);
      memcpy(&y, p + off + 32, 32);
      d |= (x ^ a) | (y ^ b);
      a += 8 * GOLDEN;
      b += 8 * GOLDEN;
    }
    if (off + 32 <= len) {
      ab_v4_t x;
      memcpy(&x, p + off, 32);
      d |= x ^ a;
      off += 32;
      a = b;
    }
    w = a[0] - GOLDEN;
    diff = d[0] | d[1] | d[2] | d[3];
  }
#endif
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
