/* test_codec_length.c -- codecs.h: the length-prefixed and raw codecs.
 *
 * Round trips client -> server -> client in memory through outbufs that
 * are never flushed (stream NULL), with input delivered whole, in 7-byte
 * and in 1-byte pieces; the feeder keeps unconsumed bytes like the engine.
 */
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "proto/codecs.h"
#include "proto/framing.h"
#include "test/ab_test.h"
#include "test/proto/codec_feed.h"

#define MIB (1024 * 1024)

static void fill(uint8_t *p, size_t n, uint64_t seq) {
  if (n >= AB_MSG_MIN_PAYLOAD) ab_msg_fill(p, n, AB_PHASE_MEASURE, 3, seq);
  else
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 31 + seq);
}

typedef struct {
  ab_codec_t *reply_to; /* server: echo each message back */
  const uint8_t *expect[4];
  size_t expect_len[4];
  int got;
} sink_t;

static void on_msg(void *ctx, const uint8_t *p, size_t n) {
  sink_t *k = ctx;
  if (k->got < 4) {
    CHECK_EQ_U64(n, k->expect_len[k->got]);
    CHECK(n == k->expect_len[k->got] && memcmp(p, k->expect[k->got], n) == 0);
  }
  k->got++;
  if (k->reply_to) {
    int r = k->reply_to->vt->server_reply(k->reply_to, p, n);
    CHECK(r == 0);
  }
}

static const uint8_t *ob_data(ab_outbuf_t *ob) { return ob->buf; }
static size_t ob_len(ab_outbuf_t *ob) { return ob->len; }

/* Builds `count` client requests of lens[] back to back; returns their
 * bytes (malloc'd) and fills payloads[] (malloc'd copies). */
static uint8_t *build(ab_codec_t *cl, const size_t *lens, int count, uint8_t **payloads,
                      size_t *total) {
  size_t cap = 0;
  for (int i = 0; i < count; i++) cap += cl->vt->max_overhead + lens[i];
  uint8_t *b = malloc(cap + 1), *d = b;
  for (int i = 0; i < count; i++) {
    size_t h = cl->vt->client_begin(cl, d, lens[i]);
    CHECK(h <= cl->vt->max_overhead);
    fill(d + h, lens[i], (uint64_t)i + 1);
    payloads[i] = malloc(lens[i] + 1);
    memcpy(payloads[i], d + h, lens[i]);
    size_t t = cl->vt->client_end(cl, d + h, lens[i], d + h + lens[i]);
    d += h + lens[i] + t;
  }
  *total = (size_t)(d - b);
  return b;
}

/* client -> server -> client for `count` messages written together. */
static void roundtrip(const ab_codec_vt_t *vt, uint64_t max_msg, const size_t *lens,
                      int count, size_t split) {
  ab_outbuf_t cob, sob;
  ab_outbuf_init(&cob);
  ab_outbuf_init(&sob);
  ab_codec_t *cl = NULL, *sv = NULL;
  CHECK(ab_codec_create(vt, &cob, max_msg, 1, &cl) == 0);
  CHECK(ab_codec_create(vt, &sob, max_msg, 0, &sv) == 0);
  uint8_t *payloads[4];
  size_t total;
  uint8_t *req = build(cl, lens, count, payloads, &total);
  sink_t k = {.reply_to = sv};
  for (int i = 0; i < count; i++) {
    k.expect[i] = payloads[i];
    k.expect_len[i] = lens[i];
  }
  CHECK(feed(sv, vt->server_parse, req, total, split, on_msg, &k) == count);
  CHECK(k.got == count);
  sink_t kc = k;
  kc.reply_to = NULL;
  kc.got = 0;
  CHECK(feed(cl, vt->client_parse, ob_data(&sob), ob_len(&sob), split, on_msg, &kc) == count);
  CHECK(kc.got == count);
  CHECK_EQ_U64(cl->protocol_errors + sv->protocol_errors, 0);
  for (int i = 0; i < count; i++) free(payloads[i]);
  free(req);
  ab_codec_destroy(cl);
  ab_codec_destroy(sv);
  ab_outbuf_free(&cob);
  ab_outbuf_free(&sob);
}

static const size_t sizes[] = {1, 16, 125, 126, 127, 253, 254, 65535, 65536, 65537, MIB};
static const size_t splits[] = {1, 7, 0};
#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_length_roundtrips(void) {
  for (size_t i = 0; i < N(sizes); i++)
    for (size_t j = 0; j < N(splits); j++) {
      if (sizes[i] == MIB && splits[j] == 1) continue; /* done once below */
      roundtrip(&ab_codec_length, 2 * MIB, &sizes[i], 1, splits[j]);
    }
  size_t one_mib = MIB;
  roundtrip(&ab_codec_length, MIB, &one_mib, 1, 1);
  size_t zero = 0;
  for (size_t j = 0; j < N(splits); j++) roundtrip(&ab_codec_length, 64, &zero, 1, splits[j]);
  /* several messages in one buffer, and across buffers */
  size_t mixed[4] = {16, 0, 70000, 300};
  for (size_t j = 0; j < N(splits); j++) roundtrip(&ab_codec_length, MIB, mixed, 4, splits[j]);
}

static void test_raw_roundtrips(void) {
  for (size_t i = 0; i < N(sizes); i++)
    for (size_t j = 0; j < N(splits); j++) {
      size_t lens[3] = {sizes[i], sizes[i], sizes[i]};
      int count = sizes[i] >= 65535 ? 1 : 3;
      roundtrip(&ab_codec_raw, sizes[i], lens, count, splits[j]);
    }
  ab_codec_t *c = NULL;
  CHECK(ab_codec_create(&ab_codec_raw, NULL, 0, 1, &c) == AB_EINVAL);
  CHECK(ab_codec_raw.max_overhead == 0 && ab_codec_length.max_overhead == AB_PREFIX_MAX);
}

/* One client parse of `in`, whole or byte by byte. */
static int parse_all(const ab_codec_vt_t *vt, uint64_t max_msg, const uint8_t *in, size_t n,
                     size_t split, uint64_t *perr) {
  ab_codec_t *c = NULL;
  CHECK(ab_codec_create(vt, NULL, max_msg, 1, &c) == 0);
  long r = feed(c, vt->client_parse, in, n, split, NULL, NULL);
  *perr = c->protocol_errors;
  ab_codec_destroy(c);
  return (int)r;
}

static void test_length_rejects(void) {
  uint64_t perr;
  uint8_t buf[32] = {0};
  /* 254 + u16 10: fits in one byte */
  uint8_t nonmin3[3 + 10] = {254, 10, 0};
  for (size_t s = 0; s < 2; s++) {
    CHECK(parse_all(&ab_codec_length, 1000, nonmin3, sizeof(nonmin3), s, &perr) == AB_EFRAME);
    CHECK_EQ_U64(perr, 1);
  }
  /* 255 + u64 65535: fits in three */
  memset(buf, 0, sizeof(buf));
  buf[0] = 255;
  buf[1] = 0xff;
  buf[2] = 0xff;
  for (size_t s = 0; s < 2; s++)
    CHECK(parse_all(&ab_codec_length, UINT64_MAX, buf, 9, s, &perr) == AB_EFRAME);
  /* above max_msg */
  size_t n = ab_prefix_encode(buf, 100);
  CHECK(parse_all(&ab_codec_length, 99, buf, n, 0, &perr) == AB_EFRAME);
  CHECK(parse_all(&ab_codec_length, 99, buf, n, 1, &perr) == AB_EFRAME);
  CHECK_EQ_U64(perr, 1);
  {
    ab_codec_t *b = NULL;
    size_t u;
    ab_msgview_t mv;
    CHECK(ab_codec_create(&ab_codec_length, NULL, 99, 1, &b) == 0);
    CHECK(b->vt->client_parse(b, buf, n, &u, &mv) == AB_EFRAME);
    CHECK(strcmp(ab_codec_why(b), "length prefix of 100 bytes is larger than the payload (99)") == 0);
    ab_codec_destroy(b);
  }
  /* an error sticks */
  ab_codec_t *c = NULL;
  CHECK(ab_codec_create(&ab_codec_length, NULL, 1000, 0, &c) == 0);
  size_t used;
  ab_msgview_t m;
  CHECK(c->vt->server_parse(c, nonmin3, 3, &used, &m) == AB_EFRAME);
  /* the reason is the codec's own, in framing's words */
  CHECK(strcmp(ab_codec_why(c), "length prefix not minimally encoded") == 0);
  uint8_t ok[2] = {1, 'x'};
  CHECK(c->vt->server_parse(c, ok, 2, &used, &m) == AB_EFRAME);
  CHECK_EQ_U64(used, 0);
  CHECK_EQ_U64(c->protocol_errors, 1);
  ab_codec_destroy(c);
}

/* A whole message in one buffer is handed out in place; a split one from
 * the codec's own buffer. */
static void test_in_place(void) {
  ab_codec_t *c = NULL;
  CHECK(ab_codec_create(&ab_codec_length, NULL, 1000, 1, &c) == 0);
  uint8_t b[1 + 20 + 1 + 5];
  b[0] = 20;
  fill(b + 1, 20, 9);
  b[21] = 5;
  memcpy(b + 22, "hello", 5);
  size_t used;
  ab_msgview_t m;
  CHECK(c->vt->client_parse(c, b, sizeof(b), &used, &m) == 1);
  CHECK(m.data == b + 1 && m.len == 20 && used == 21);
  CHECK(c->vt->client_parse(c, b + 21, 3, &used, &m) == 0);
  CHECK_EQ_U64(used, 3);
  CHECK(c->vt->client_parse(c, b + 24, 3, &used, &m) == 1);
  CHECK(used == 3 && m.len == 5 && memcmp(m.data, "hello", 5) == 0);
  CHECK(m.data < b || m.data >= b + sizeof(b));
  CHECK(c->vt->client_parse(c, b, 0, &used, &m) == 0 && used == 0);
  ab_codec_destroy(c);
}

int main(void) {
  test_length_roundtrips();
  test_raw_roundtrips();
  test_length_rejects();
  test_in_place();
  TEST_DONE();
}
