/* harness.h -- what the codec fuzz targets (fuzz_*.c) share: byte 0 of the
 * input picks the delivery split (bits 0-2), max_msg (bits 3-5) and, where
 * a target has two codecs, the second one (bit 6); the rest is the byte
 * stream.  Each side (server, then client) parses it twice, whole and
 * split, like the engine (unconsumed bytes kept and presented again),
 * reading every byte of every message and echoing server-side messages
 * through server_reply; the two runs must agree on the messages, the final
 * code, what was written and the target's own counters.  A parse that
 * breaks the codec contract aborts.
 *
 * A target fills an fz_target_t and calls fz_one_input() from
 * LLVMFuzzerTestOneInput.  Build: fuzz/build.sh OUTDIR.
 */
#ifndef AB_FUZZ_HARNESS_H
#define AB_FUZZ_HARNESS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "proto/codecs.h"

/* What one parse of the stream produced. */
typedef struct {
  long msgs;
  uint64_t hash, out_hash;
  uint64_t stats[2]; /* the target's counters (finish fills them), else 0 */
  int rc;
} fz_run_t;

typedef struct {
  /* the codec; codec[1] (if not NULL) when bit 6 of byte 0 is set */
  const ab_codec_vt_t *codec[2];
  /* max_msg by bits 3-5 of byte 0 */
  uint64_t maxes[8];
  /* after the stream: may read counters into res->stats or adjust
   * res->out_hash; returns the final code (rc, or what it became); NULL:
   * rc as it is */
  int (*finish)(ab_codec_t *c, int is_client, int rc, fz_run_t *res);
  /* further checks of one side over the stream (whole, then split), or NULL */
  void (*side)(int is_client, const uint8_t *data, size_t n, size_t split);
} fz_target_t;

static inline uint64_t fz_fnv(uint64_t h, const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * UINT64_C(0x100000001b3);
  return h;
}

/* One parse of data[0..n), delivered `split` bytes at a time. */
static inline void fz_run(const fz_target_t *t, const ab_codec_vt_t *vt, int is_client,
                          uint64_t max_msg, const uint8_t *data, size_t n, size_t split,
                          fz_run_t *res) {
  memset(res, 0, sizeof(*res));
  res->hash = res->out_hash = UINT64_C(0xcbf29ce484222325);
  ab_outbuf_t ob;
  ab_outbuf_init(&ob);
  ab_codec_t *c = NULL;
  if (ab_codec_create(vt, &ob, max_msg, is_client, &c) < 0) {
    res->rc = -1;
    return;
  }
  uint8_t *pend = malloc(n + 1);
  size_t plen = 0, pos = 0;
  int rc = 0;
  while (pos < n && rc >= 0) {
    size_t k = split < n - pos ? split : n - pos;
    memcpy(pend + plen, data + pos, k);
    plen += k;
    pos += k;
    size_t off = 0;
    while (off < plen) {
      size_t used = (size_t)-1;
      ab_msgview_t m = {NULL, (size_t)-1};
      int r = is_client ? vt->client_parse(c, pend + off, plen - off, &used, &m)
                        : vt->server_parse(c, pend + off, plen - off, &used, &m);
      if (r < 0) {
        rc = r;
        if (used > plen - off) abort();
        break;
      }
      if (used > plen - off) abort();
      off += used;
      if (r == 0) {
        if (off != plen) abort();
        break;
      }
      if (r != 1 || m.data == NULL || m.len > max_msg) abort();
      res->msgs++;
      res->hash = fz_fnv(res->hash, m.data, m.len);
      res->hash = fz_fnv(res->hash, (const uint8_t *)&m.len, sizeof(m.len));
      if (!is_client) {
        int e = vt->server_reply(c, m.data, m.len);
        if (e < 0 && e != AB_ECLOSED) abort();
      }
    }
    res->out_hash = fz_fnv(res->out_hash, ob.buf, ob.len);
    ob.len = 0;
    memmove(pend, pend + off, plen - off);
    plen -= off;
  }
  res->rc = t->finish ? t->finish(c, is_client, rc, res) : rc;
  free(pend);
  ab_codec_destroy(c);
  ab_outbuf_free(&ob);
}

static inline int fz_one_input(const fz_target_t *t, const uint8_t *data, size_t size) {
  static const size_t splits[8] = {1, 2, 3, 5, 7, 13, 64, 4096};
  if (size < 1) return 0;
  size_t split = splits[data[0] & 7];
  uint64_t max_msg = t->maxes[(data[0] >> 3) & 7];
  const ab_codec_vt_t *vt = (data[0] & 0x40) && t->codec[1] ? t->codec[1] : t->codec[0];
  data++;
  size--;
  for (int is_client = 0; is_client <= 1; is_client++) {
    fz_run_t whole, parts;
    fz_run(t, vt, is_client, max_msg, data, size, size + 1, &whole);
    fz_run(t, vt, is_client, max_msg, data, size, split, &parts);
    if (whole.msgs != parts.msgs || whole.hash != parts.hash || whole.rc != parts.rc ||
        whole.out_hash != parts.out_hash || whole.stats[0] != parts.stats[0] ||
        whole.stats[1] != parts.stats[1])
      abort();
    if (t->side) t->side(is_client, data, size, split);
  }
  return 0;
}

#endif
