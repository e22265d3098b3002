/* fuzz_http.c -- libFuzzer target: the HTTP codec (ab_codec_http) over
 * llhttp: the client's response path and the server's request path.
 *
 * Input: byte 0 picks the delivery split (bits 0-2) and max_msg (bits
 * 3-5); the rest is the byte stream.  Each side parses it twice, whole and
 * split, like the engine (unconsumed bytes kept and presented again),
 * reading every byte of every message and, on the client, ending with
 * ab_http_client_eof(); the two runs must agree on the messages, the final
 * code, the non-2xx count and every byte written (404s, replies).  The
 * parse loop and the checks are in harness.h.  The client side also runs
 * in request mode (a plan of GET, HEAD and GET with status {404}, whose
 * HEAD skips a body by the response's position): whole and split must
 * agree on the responses, each one's status and verdict, and the code.
 * Build: fuzz/build.sh OUTDIR (see fuzz/README.md).
 */
#include "harness.h"

/* The client ends with EOF; stats[0] = the non-2xx count. */
static int http_finish(ab_codec_t *c, int is_client, int rc, fz_run_t *res) {
  if (is_client && rc >= 0) rc = ab_http_client_eof(c);
  ab_http_stats(c, &res->stats[0]);
  return rc;
}

/* Request mode: the responses' statuses and verdicts hashed, the code. */
static void request_run(const ab_http_plan_t *plan, const uint8_t *data, size_t n, size_t split,
                        fz_run_t *res) {
  memset(res, 0, sizeof(*res));
  res->hash = UINT64_C(0xcbf29ce484222325);
  ab_codec_t *c = NULL;
  if (ab_codec_create(&ab_codec_http, NULL, 16, 1, &c) < 0 || ab_codec_set_requests(c, plan, 0) < 0)
    abort();
  uint8_t req[256];
  for (uint64_t seq = 0; seq < 3; seq++) c->vt->client_request(c, req, seq);
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
      int r = c->vt->client_parse(c, pend + off, plen - off, &used, &m);
      if (used > plen - off) abort();
      if (r < 0) {
        rc = r;
        break;
      }
      off += used;
      if (r == 0) break;
      if (m.data == NULL || m.len != 0) abort(); /* bodies are never kept */
      int status = 0, v = c->vt->reply_verdict(c, &status);
      if (status < 100 || status > 999 || (v != 0 && v != AB_ERR_HTTP(status))) abort();
      res->msgs++;
      res->hash = fz_fnv(res->hash, (const uint8_t *)&status, sizeof(status));
      res->hash = fz_fnv(res->hash, (const uint8_t *)&v, sizeof(v));
    }
    memmove(pend, pend + off, plen - off);
    plen -= off;
  }
  res->rc = rc >= 0 ? ab_http_client_eof(c) : rc;
  free(pend);
  ab_codec_destroy(c);
}

static void request_side(int is_client, const uint8_t *data, size_t n, size_t split) {
  static const uint16_t only404[] = {404};
  static const ab_http_request_opts_t reqs[] = {
      {.method = "GET", .path = "/"},
      {.method = "HEAD", .path = "/"},
      {.method = "GET", .path = "/x", .status = only404, .nstatus = 1},
  };
  static ab_http_plan_t *plan;
  char err[200];
  if (!is_client) return;
  if (plan == NULL && ab_http_plan_new(reqs, 3, "127.0.0.1", &plan, err, sizeof(err)) < 0) abort();
  fz_run_t whole, parts;
  request_run(plan, data, n, n + 1, &whole);
  request_run(plan, data, n, split, &parts);
  if (whole.msgs != parts.msgs || whole.hash != parts.hash || whole.rc != parts.rc) abort();
}

static const fz_target_t target = {
    .codec = {&ab_codec_http, NULL},
    .maxes = {0, 1, 16, 100, 1000, 65536, 100000, 1 << 20},
    .finish = http_finish,
    .side = request_side,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fz_one_input(&target, data, size);
}
