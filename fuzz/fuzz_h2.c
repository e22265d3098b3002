/* fuzz_h2.c -- libFuzzer target: our glue around the nghttp2 session
 * (ab_codec_h2, core/proto/h2.c), client and server side.
 *
 * Input: byte 0 picks the delivery split (bits 0-2), max_msg (bits 3-4),
 * the side (bit 5: client; fuzz/build.sh builds one binary per side with
 * it fixed, fuzz_h2_client and fuzz_h2_server) and, on the client,
 * request mode (bit 6); the
 * rest is what the peer sends (the server side gets the client preface's
 * magic first, so the bytes reach the frame parser).  The codec is driven
 * as stream.c drives it: SETTINGS at setup, bytes in by parse (unconsumed
 * ones presented again), every message handed out read to its last byte,
 * the client opening streams whenever mux_room allows (up to 64 in all)
 * and asking mux_reply / reply_verdict of every reply, the server
 * answering every request through server_reply; output is dropped as if
 * sent.  Aborts when the codec contract breaks: *used past avail, a NULL
 * message, a reply for a stream never opened, an error that is not
 * sticky; the sanitizers catch the rest.  fuzz/README.md.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "proto/codecs.h"
#include "proto/framing.h"

static const size_t SPLITS[8] = {1, 2, 3, 5, 7, 13, 64, 4096};
static const uint64_t MAXES[4] = {16, 100, 1024, 70000};
static const char MAGIC[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

static ab_h2_plan_t *plan(void) {
  static const uint16_t only404[] = {404};
  static const ab_http_request_opts_t reqs[] = {
      {.method = "GET", .path = "/", .headers = "Accept: */*\r\nHost: example\r\n"},
      {.method = "HEAD", .path = "/"},
      {.method = "POST", .path = "/x", .body = "hello", .body_len = 5, .status = only404,
       .nstatus = 1},
  };
  static ab_h2_plan_t *p;
  char err[200];
  if (p == NULL && ab_h2_plan_new(reqs, 3, "127.0.0.1", 0, &p, err, sizeof(err)) < 0) abort();
  return p;
}

static uint64_t sink;

static void read_all(const ab_msgview_t *m) {
  if (m->data == NULL) abort();
  for (size_t i = 0; i < m->len && i < 70000; i++) sink += m->data[i];
}

/* Opens what mux_room allows, up to 64 streams in all. */
static void open_streams(ab_codec_t *c, int reqmode, uint64_t *next, uint64_t payload) {
  uint32_t room = c->vt->mux_room(c);
  uint32_t n = 0;
  while (n < room && n < 4 && *next + n < 64) {
    if (!reqmode) {
      uint8_t *b = c->vt->mux_body(c, n, payload);
      if (b == NULL) abort();
      ab_msg_fill(b, payload, 2, 0, *next + n);
    }
    n++;
  }
  if (n == 0) return;
  c->vt->mux_submit(c, *next, n);
  *next += n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t ctl = data[0];
  size_t split = SPLITS[ctl & 7];
  uint64_t max_msg = MAXES[(ctl >> 3) & 3];
#ifdef FZ_SIDE /* built once per side (fuzz/build.sh): 1 client, 0 server */
  int is_client = FZ_SIDE;
#else
  int is_client = (ctl >> 5) & 1;
#endif
  int reqmode = is_client && ((ctl >> 6) & 1);
  const uint8_t *in = data + 1;
  size_t n = size - 1;
  /* the server first reads the client preface's magic */
  size_t pre = is_client ? 0 : sizeof(MAGIC) - 1;
  uint8_t *stream = malloc(pre + n + 1);
  memcpy(stream, MAGIC, pre);
  memcpy(stream + pre, in, n);
  n += pre;

  ab_outbuf_t ob;
  ab_outbuf_init(&ob);
  ab_codec_t *c = NULL;
  if (ab_codec_create(&ab_codec_h2, &ob, max_msg, is_client, &c) < 0) abort();
  ab_h2_settings_t hs;
  memset(&hs, 0, sizeof(hs));
  if (ab_h2_set_settings(c, &hs) < 0) abort();
  if (reqmode && ab_codec_set_requests(c, plan(), 0) < 0) abort();
  uint64_t next = 0, payload = max_msg < 64 ? max_msg : 64;
  uint8_t *pend = malloc(n + 1);
  size_t plen = 0, pos = 0;
  int rc = 0;
  while (pos < n && rc >= 0) {
    size_t k = split < n - pos ? split : n - pos;
    memcpy(pend + plen, stream + pos, k);
    plen += k;
    pos += k;
    size_t off = 0;
    for (;;) {
      size_t used = (size_t)-1;
      ab_msgview_t m = {NULL, 0};
      int r = is_client ? c->vt->client_parse(c, pend + off, plen - off, &used, &m)
                        : c->vt->server_parse(c, pend + off, plen - off, &used, &m);
      if (used > plen - off) abort();
      off += used;
      if (r < 0) {
        /* sticky: the same code again, nothing consumed */
        size_t u2 = 1;
        ab_msgview_t m2;
        int r2 = is_client ? c->vt->client_parse(c, pend + off, plen - off, &u2, &m2)
                           : c->vt->server_parse(c, pend + off, plen - off, &u2, &m2);
        if (r2 == 1) { /* a reply queued before the error: still handed out */
          read_all(&m2);
          continue;
        }
        if (r2 != r || u2 != 0) abort();
        rc = r;
        break;
      }
      if (r == 0) {
        if (off != plen) abort();
        break;
      }
      read_all(&m);
      if (m.len > max_msg && !is_client) abort();
      if (is_client) {
        uint64_t seq = UINT64_MAX;
        const char *why = NULL;
        int e = c->vt->mux_reply(c, &seq, &why);
        if (seq >= next) abort(); /* never opened */
        if (e == 0 && reqmode) {
          int status = 0;
          c->vt->reply_verdict(c, &status);
        }
      } else {
        c->vt->server_reply(c, m.data, m.len);
      }
    }
    memmove(pend, pend + off, plen - off);
    plen -= off;
    if (is_client && rc >= 0) open_streams(c, reqmode, &next, payload);
    ob.len = 0; /* sent */
  }
  if (is_client) ab_codec_client_eof(c);
  ab_codec_stats_t st;
  memset(&st, 0, sizeof(st));
  ab_codec_stats(c, &st);
  ab_codec_destroy(c);
  ab_outbuf_free(&ob);
  free(pend);
  free(stream);
  return 0;
}
