/* fuzz_length.c -- libFuzzer target: the length-prefixed and raw codecs
 * (codecs.h), client and server parse.
 *
 * Input: byte 0 picks the delivery split (bits 0-2), max_msg (bits 3-5)
 * and the codec (bit 6: raw); the rest is the byte stream.  Each side
 * parses it twice, whole and split, like the engine (unconsumed bytes kept
 * and presented again), reading every byte of every message; the two runs
 * must agree on the messages, the final code and what was written.  The
 * parse loop and the checks are in harness.h.
 * Build: fuzz/build.sh OUTDIR (see fuzz/README.md).
 */
#include "harness.h"

static const fz_target_t target = {
    .codec = {&ab_codec_length, &ab_codec_raw},
    .maxes = {1, 16, 253, 254, 65535, 65536, 100000, 1 << 20},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fz_one_input(&target, data, size);
}
