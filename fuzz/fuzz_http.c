/* fuzz_http.c -- libFuzzer target: the HTTP codec (ab_codec_http) over
 * llhttp: the client's response path and the server's request path.
 *
 * Input: byte 0 picks the delivery split (bits 0-2) and max_msg (bits
 * 3-5); the rest is the byte stream.  Each side parses it twice, whole and
 * split, like the engine (unconsumed bytes kept and presented again),
 * reading every byte of every message and, on the client, ending with
 * ab_http_client_eof(); the two runs must agree on the messages, the final
 * code, the non-2xx count and every byte written (404s, replies).  The
 * parse loop and the checks are in harness.h.
 * Build: fuzz/build.sh OUTDIR (see fuzz/README.md).
 */
#include "harness.h"

/* The client ends with EOF; stats[0] = the non-2xx count. */
static int http_finish(ab_codec_t *c, int is_client, int rc, fz_run_t *res) {
  if (is_client && rc >= 0) rc = ab_http_client_eof(c);
  ab_http_stats(c, &res->stats[0]);
  return rc;
}

static const fz_target_t target = {
    .codec = {&ab_codec_http, NULL},
    .maxes = {0, 1, 16, 100, 1000, 65536, 100000, 1 << 20},
    .finish = http_finish,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fz_one_input(&target, data, size);
}
