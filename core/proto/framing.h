/* framing.h -- the built-in echo's bytes on the wire (docs/protocols.md).
 *
 * Length prefix (tcp/tls, framing = "length"), the reference library's:
 *   len < 254            1 byte: len
 *   len <= 65535         3 bytes: 254, u16 little-endian
 *   otherwise            9 bytes: 255, u64 little-endian
 * A prefix longer than needed (e.g. 254 followed by 10) is a protocol error:
 * the minimal encoding is the only valid one.
 *
 * Message body (every protocol), `payload` bytes; payload >= 16:
 *   0..1   magic 'A','B'
 *   2      phase (AB_PHASE_WARMUP or AB_PHASE_MEASURE)
 *   3      0 (reserved)
 *   4..7   connection id, u32 little-endian
 *   8..15  sequence number, u64 little-endian
 *   16..   deterministic pattern of (connection id, sequence): 64-bit words
 *          w_k = seed + (k + 1) * 0x9E3779B97F4A7C15 (little-endian), where
 *          seed = seq * 0xD1B54A32D192ED03 ^ (conn << 32 | conn), the last
 *          word cut to the bytes that remain.
 * Payload 1 .. 15 (no room for the header): the bytes are a code of
 * (connection id, sequence), so that every byte is still checked:
 *   0..m-1  m = min(payload, 8) bytes, little-endian: mix_b((seq + key) mod
 *           2^b), b = 8m, key = conn * 0x9E3779B97F4A7C15 +
 *           0x632BE59BD9B4E019, where mix_b is a bijection of b-bit values
 *           (x *= 0xBF58476D1CE4E5B9, x ^= x >> b/2, x *= 0x94D049BB133111EB,
 *           x ^= x >> b/2, each mod 2^b);
 *   8..     (payload 9 .. 15) the bytes of the first pattern word above.
 * The phase is not carried: the client knows the phase of each message it
 * has in flight.  Given the connection id, the code gives back the
 * sequence mod 2^b (ab_msg_small_seq): a stream client checks that it is
 * the oldest in flight (any damaged byte gives another sequence), a
 * datagram client finds the message in flight with it (engine/window.h).
 * The client fills a message with ab_msg_fill() and checks every echoed
 * byte with ab_msg_check() (payload >= 16) or ab_msg_small_seq().
 */
#ifndef AB_FRAMING_H
#define AB_FRAMING_H

#include <stddef.h>
#include <stdint.h>

#include "base/ab_error.h"

#define AB_MSG_HEADER 16
#define AB_MSG_MIN_PAYLOAD 1
#define AB_MSG_MAX_PAYLOAD (16u * 1024 * 1024)
#define AB_PREFIX_MAX 9

enum { AB_PHASE_WARMUP = 1, AB_PHASE_MEASURE = 2 };

/* Bytes the minimal prefix for len takes: 1, 3 or 9. */
static inline size_t ab_prefix_size(uint64_t len) {
  return len < 254 ? 1 : len <= 65535 ? 3 : 9;
}

/* Writes the minimal prefix for len into out (>= 9 bytes); returns its size. */
size_t ab_prefix_encode(uint8_t *out, uint64_t len);

/* The u64 little-endian at p[0..8). */
static inline uint64_t ab__get_u64le(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* Reads a prefix from in[0..avail).  Returns the prefix size (> 0) and sets
 * *len; AB_EAGAIN when more bytes are needed; AB_EFRAME when the prefix is
 * not minimal or len > max_len. */
static inline int ab_prefix_decode(const uint8_t *in, size_t avail, uint64_t max_len,
                     uint64_t *len) {
  if (avail < 1) return AB_EAGAIN;
  uint64_t v;
  int n;
  if (in[0] < 254) {
    v = in[0];
    n = 1;
  } else if (in[0] == 254) {
    if (avail < 3) return AB_EAGAIN;
    v = (uint64_t)in[1] | (uint64_t)in[2] << 8;
    if (v < 254) return AB_EFRAME;
    n = 3;
  } else {
    if (avail < 9) return AB_EAGAIN;
    v = ab__get_u64le(in + 1);
    if (v <= 65535) return AB_EFRAME;
    n = 9;
  }
  if (v > max_len) return AB_EFRAME;
  *len = v;
  return n;
}

/* The frame at p[0..avail) of a plain framing: a minimal length prefix
 * then the payload (raw: no prefix, the payload exactly max bytes).
 * Returns the frame's size (> 0) with *hdr its prefix bytes and *plen its
 * payload length; 0 when it is not all there yet; AB_EFRAME when the
 * length codec would refuse the prefix (its parse says why).  Drivers
 * that keep their input cut frames with this instead of calling the
 * codec (ab_codec_vt_t.plain_frames). */
static inline int64_t ab_frame_cut(const uint8_t *p, size_t avail, int raw, uint64_t max,
                                   size_t *hdr, uint64_t *plen) {
  if (raw) {
    *hdr = 0;
    *plen = max;
    return avail >= max ? (int64_t)max : 0;
  }
  uint64_t len;
  int r = ab_prefix_decode(p, avail, max, &len);
  if (r == AB_EAGAIN) return 0;
  if (r < 0) return r;
  if (avail - (size_t)r < len) return 0;
  *hdr = (size_t)r;
  *plen = len;
  return (int64_t)((size_t)r + len);
}

/* Fills p[0..len) with the message for (phase, conn, seq); len >= 1 (below
 * 16 the code of (conn, seq), without the phase). */
void ab_msg_fill(uint8_t *p, size_t len, uint8_t phase, uint32_t conn,
                 uint64_t seq);

/* A small message (len 1 .. 15) carries its sequence mod 2^(8 min(len, 8)):
 * this mask (UINT64_MAX from 8 bytes on: the whole sequence). */
static inline uint64_t ab_msg_small_mask(size_t len) {
  return len >= 8 ? UINT64_MAX : ((uint64_t)1 << (8 * len)) - 1;
}

/* Reads a small message p[0..len) (len 1 .. 15) of connection conn: sets
 * *seq to the sequence it was filled for, taken as the first one at or
 * after `base` with the sequence's low bits (base + ((code - base) & mask),
 * mod 2^64).  Returns 0; AB_EPAYLOAD when bytes 8.. are not *seq's pattern;
 * AB_ESIZE when len is not 1 .. 15. */
int ab_msg_small_seq(const uint8_t *p, size_t len, uint32_t conn, uint64_t base,
                     uint64_t *seq);

/* Checks a whole echoed message.  Returns 0 and the header fields, or
 * AB_EMAGIC (header damaged) or AB_EPAYLOAD (pattern differs) or
 * AB_ESIZE (len < 16). */
int ab_msg_check(const uint8_t *p, size_t len, uint8_t *phase, uint32_t *conn,
                 uint64_t *seq);

#endif
