/* fuzz_http.c -- libFuzzer target: the HTTP codec (ab_codec_http) over
 * llhttp: the client's response path and the server's request path.
 *
 * Input: byte 0 picks the delivery split (bits 0-2) and max_msg (bits
 * 3-5); the rest is the byte stream.  Each side parses it twice, whole and
 * split, like the engine (unconsumed bytes kept and presented again),
 * reading every byte of every message and, on the client, ending with
 * ab_http_client_eof(); the two runs must agree on the messages, the final
 * code, the non-2xx count and every byte written (404s, replies).
 * Build: fuzz/build.sh OUTDIR (see fuzz/README.md).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ab_error.h"
#include "codecs.h"

typedef struct {
  long msgs;
  uint64_t hash, out_hash, non2xx;
  int rc;
} run_t;

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * UINT64_C(0x100000001b3);
  return h;
}

static void run(const ab_codec_vt_t *vt, int is_client, uint64_t max_msg, const uint8_t *data,
                size_t n, size_t split, run_t *res) {
  memset(res, 0, sizeof(*res));
  res->hash = res->out_hash = UINT64_C(0xcbf29ce484222325);
  ab_outbuf_t ob;
  ab_outbuf_init(&ob, NULL, NULL);
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
      res->hash = fnv(res->hash, m.data, m.len);
      res->hash = fnv(res->hash, (const uint8_t *)&m.len, sizeof(m.len));
      if (!is_client) {
        int e = vt->server_reply(c, m.data, m.len);
        if (e < 0 && e != AB_ECLOSED) abort();
      }
    }
    res->out_hash = fnv(res->out_hash, ob.buf[ob.active], ob.len[ob.active]);
    ob.len[ob.active] = 0;
    memmove(pend, pend + off, plen - off);
    plen -= off;
  }
  if (is_client && rc >= 0) rc = ab_http_client_eof(c);
  res->rc = rc;
  ab_http_stats(c, &res->non2xx);
  free(pend);
  ab_codec_destroy(c);
  ab_outbuf_free(&ob);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const size_t splits[8] = {1, 2, 3, 5, 7, 13, 64, 4096};
  static const uint64_t maxes[8] = {0, 1, 16, 100, 1000, 65536, 100000, 1 << 20};
  if (size < 1) return 0;
  size_t split = splits[data[0] & 7];
  uint64_t max_msg = maxes[(data[0] >> 3) & 7];
  const ab_codec_vt_t *vt = &ab_codec_http;
  data++;
  size--;
  for (int is_client = 0; is_client <= 1; is_client++) {
    run_t whole, parts;
    run(vt, is_client, max_msg, data, size, size + 1, &whole);
    run(vt, is_client, max_msg, data, size, split, &parts);
    if (whole.msgs != parts.msgs || whole.hash != parts.hash || whole.rc != parts.rc ||
        whole.out_hash != parts.out_hash || whole.non2xx != parts.non2xx)
      abort();
  }
  return 0;
}
