/* fuzz_ws.c -- libFuzzer target: the WebSocket frame parser (ab_codec_ws,
 * client and server side) and the upgrade handshake parser (ab_ws_hs_t,
 * both sides).
 *
 * Input: byte 0 picks the delivery split (bits 0-2) and max_msg (bits
 * 3-5); the rest is the byte stream.  Each parser reads it twice, whole and
 * split, like the engine (unconsumed bytes kept and presented again),
 * reading every byte of every message; the two runs must agree on the
 * messages, the final code, the pings answered and (server side, whose
 * frames are unmasked) every byte written.  The frame parse loop and its
 * checks are in harness.h.
 * Build: fuzz/build.sh OUTDIR (see fuzz/README.md).
 */
#include "harness.h"

/* stats = pings, pongs sent; the client's bytes are not compared. */
static int ws_finish(ab_codec_t *c, int is_client, int rc, fz_run_t *res) {
  ab_ws_stats(c, &res->stats[0], &res->stats[1]);
  if (is_client) res->out_hash = 0; /* masked with random keys */
  return rc;
}

/* The handshake parser over data[0..n): its code, bytes taken, reply. */
static void hs_run(int is_client, const uint8_t *data, size_t n, size_t split, int *rc,
                   size_t *taken) {
  ab_ws_hs_t h;
  if (ab_ws_hs_init(&h, is_client, is_client ? "dGhlIHNhbXBsZSBub25jZQ==" : NULL) < 0) abort();
  size_t off = 0;
  int r = 0;
  while (off < n) {
    size_t k = split < n - off ? split : n - off, used = (size_t)-1;
    r = ab_ws_hs_feed(&h, data + off, k, &used);
    if (used > k) abort();
    off += used;
    if (r != 0) break;
    if (used != k) abort();
  }
  if (!is_client && r != 0) {
    char reply[512];
    if (ab_ws_hs_reply(&h, reply, sizeof(reply)) <= 0) abort();
  }
  *rc = r;
  *taken = off;
}

/* The handshake, whole and split, must agree on the code and (when it
 * did not fail) the bytes taken. */
static void hs_side(int is_client, const uint8_t *data, size_t n, size_t split) {
  int rc1, rc2;
  size_t t1, t2;
  hs_run(is_client, data, n, n + 1, &rc1, &t1);
  hs_run(is_client, data, n, split, &rc2, &t2);
  if (rc1 != rc2 || (rc1 >= 0 && t1 != t2)) abort();
}

static const fz_target_t target = {
    .codec = {&ab_codec_ws, NULL},
    .maxes = {0, 1, 125, 126, 65535, 65536, 100000, 1 << 20},
    .finish = ws_finish,
    .side = hs_side,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fz_one_input(&target, data, size);
}
