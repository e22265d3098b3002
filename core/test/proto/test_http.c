/* test_http.c -- http.h: the HTTP/1.1 echo codec over llhttp.
 *
 * Round trips client -> server -> client in memory through outbufs that
 * are never flushed (stream NULL), input delivered whole, in 7-byte and in
 * 1-byte pieces; hand-written responses for the awkward shapes a real
 * server may send (chunked with extensions and trailers, 1xx, 204, early
 * EOF, errors) and requests a real client may send.
 */
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "proto/codecs.h"
#include "proto/framing.h"
#include "test/ab_test.h"
#include "test/proto/codec_feed.h"

#define MIB (1024 * 1024)
#define N(a) (sizeof(a) / sizeof((a)[0]))

static long feed_str(ab_codec_t *c, parse_fn parse, const char *s, size_t split,
                     msg_fn on_msg, void *ctx) {
  return feed(c, parse, (const uint8_t *)s, strlen(s), split, on_msg, ctx);
}

static void fill(uint8_t *p, size_t n, uint64_t seq) {
  if (n >= AB_MSG_MIN_PAYLOAD) ab_msg_fill(p, n, AB_PHASE_MEASURE, 11, seq);
  else
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 37 + seq);
}

typedef struct {
  ab_codec_t *reply_to;
  const uint8_t *expect[4];
  size_t expect_len[4];
  int got;
} sink_t;

static void on_msg(void *ctx, const uint8_t *p, size_t n) {
  sink_t *k = ctx;
  if (k->got < 4 && k->expect[k->got]) {
    CHECK_EQ_U64(n, k->expect_len[k->got]);
    CHECK(n == k->expect_len[k->got] && memcmp(p, k->expect[k->got], n) == 0);
  }
  k->got++;
  if (k->reply_to) CHECK(k->reply_to->vt->server_reply(k->reply_to, p, n) == 0);
}

static const uint8_t *ob_data(ab_outbuf_t *ob) { return ob->buf; }
static size_t ob_len(ab_outbuf_t *ob) { return ob->len; }

typedef struct {
  ab_outbuf_t ob;
  ab_codec_t *c;
} one_t;

static void one_open(one_t *o, int is_client, uint64_t max_msg) {
  ab_outbuf_init(&o->ob);
  CHECK(ab_codec_create(&ab_codec_http, &o->ob, max_msg, is_client, &o->c) == 0);
}

static void one_close(one_t *o) {
  ab_codec_destroy(o->c);
  ab_outbuf_free(&o->ob);
}

/* ---- round trips --------------------------------------------------------- */

static void roundtrip(const size_t *lens, int count, size_t split) {
  one_t cl, sv;
  one_open(&cl, 1, 2 * MIB);
  one_open(&sv, 0, 2 * MIB);
  size_t cap = 0;
  for (int i = 0; i < count; i++) cap += ab_codec_http.max_overhead + lens[i];
  uint8_t *req = malloc(cap + 1), *d = req;
  uint8_t *payloads[4];
  for (int i = 0; i < count; i++) {
    size_t h = ab_codec_http.client_begin(cl.c, d, lens[i]);
    CHECK(h <= ab_codec_http.max_overhead);
    fill(d + h, lens[i], (uint64_t)i + 3);
    payloads[i] = malloc(lens[i] + 1);
    memcpy(payloads[i], d + h, lens[i]);
    CHECK(ab_codec_http.client_end(cl.c, d + h, lens[i], d + h + lens[i]) == 0);
    d += h + lens[i];
  }
  sink_t k = {.reply_to = sv.c};
  for (int i = 0; i < count; i++) {
    k.expect[i] = payloads[i];
    k.expect_len[i] = lens[i];
  }
  CHECK(feed(sv.c, ab_codec_http.server_parse, req, (size_t)(d - req), split, on_msg, &k) ==
        count);
  sink_t kc = k;
  kc.reply_to = NULL;
  kc.got = 0;
  CHECK(feed(cl.c, ab_codec_http.client_parse, ob_data(&sv.ob), ob_len(&sv.ob), split, on_msg,
             &kc) == count);
  CHECK(kc.got == count);
  CHECK(ab_http_client_eof(cl.c) == 0);
  uint64_t non2xx = 1;
  ab_http_stats(cl.c, &non2xx);
  CHECK_EQ_U64(non2xx, 0);
  CHECK_EQ_U64(cl.c->protocol_errors + sv.c->protocol_errors, 0);
  for (int i = 0; i < count; i++) free(payloads[i]);
  free(req);
  one_close(&cl);
  one_close(&sv);
}

static void test_roundtrips(void) {
  static const size_t sizes[] = {0, 1, 16, 125, 126, 127, 65535, 65536, 65537, MIB};
  static const size_t splits[] = {1, 7, 0};
  for (size_t i = 0; i < N(sizes); i++)
    for (size_t j = 0; j < N(splits); j++) roundtrip(&sizes[i], 1, splits[j]);
  size_t mixed[4] = {16, 0, 70000, 1024}; /* pipelined */
  for (size_t j = 0; j < N(splits); j++) roundtrip(mixed, 4, splits[j]);
}

/* ---- wire format --------------------------------------------------------- */

static void test_wire(void) {
  one_t cl, sv;
  one_open(&cl, 1, 1000);
  one_open(&sv, 0, 1000);
  uint8_t b[400];
  size_t h = ab_codec_http.client_begin(cl.c, b, 16);
  const char *want = "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 16\r\n\r\n";
  CHECK(h == strlen(want) && memcmp(b, want, h) == 0);
  CHECK(ab_http_set_host(cl.c, "bench.test:8443") == 0);
  h = ab_codec_http.client_begin(cl.c, b, 0);
  want = "POST /echo HTTP/1.1\r\nHost: bench.test:8443\r\nContent-Length: 0\r\n\r\n";
  CHECK(h == strlen(want) && memcmp(b, want, h) == 0);
  CHECK(ab_http_set_host(cl.c, "") == AB_EINVAL);
  CHECK(ab_http_set_host(cl.c, "a\r\nX: y") == AB_EINVAL);
  char longhost[AB_HTTP_HOST_MAX + 2];
  memset(longhost, 'h', sizeof(longhost) - 1);
  longhost[sizeof(longhost) - 1] = 0;
  CHECK(ab_http_set_host(cl.c, longhost) == AB_EINVAL);
  longhost[AB_HTTP_HOST_MAX] = 0;
  CHECK(ab_http_set_host(cl.c, longhost) == 0);
  h = ab_codec_http.client_begin(cl.c, b, SIZE_MAX);
  CHECK(h == ab_codec_http.max_overhead); /* the largest header fits the bound */
  CHECK(ab_codec_http.server_reply(sv.c, (const uint8_t *)"hello", 5) == 0);
  want = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: application/octet-stream\r\n"
         "\r\nhello";
  CHECK(ob_len(&sv.ob) == strlen(want) && memcmp(ob_data(&sv.ob), want, strlen(want)) == 0);
  one_close(&cl);
  one_close(&sv);
}

/* ---- responses a real server may send ------------------------------------ */

static const size_t splits[] = {1, 7, 0};

static void test_chunked_response(void) {
  const char *r = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "5;name=value\r\nhello\r\n"
                  "1\r\n \r\n"
                  "5;ext\r\nworld\r\n"
                  "0\r\nX-Trailer: t\r\nX-Other: o\r\n\r\n";
  for (size_t j = 0; j < N(splits); j++) {
    one_t cl;
    one_open(&cl, 1, 1000);
    sink_t k = {.expect = {(const uint8_t *)"hello world"}, .expect_len = {11}};
    CHECK(feed_str(cl.c, ab_codec_http.client_parse, r, splits[j], on_msg, &k) == 1);
    CHECK(k.got == 1);
    CHECK(ab_http_client_eof(cl.c) == 0);
    one_close(&cl);
  }
}

static void test_interim_responses(void) {
  const char *r = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
                  "HTTP/1.1 100 Continue\r\n\r\n"
                  "HTTP/1.1 103 Early Hints\r\nContent-Length: 5\r\n\r\n" /* no body all the same */
                  "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
  for (size_t j = 0; j < N(splits); j++) {
    one_t cl;
    one_open(&cl, 1, 1000);
    sink_t k = {.expect = {(const uint8_t *)"abc"}, .expect_len = {3}};
    CHECK(feed_str(cl.c, ab_codec_http.client_parse, r, splits[j], on_msg, &k) == 1);
    one_close(&cl);
  }
}

static void test_no_body_responses(void) {
  const char *r = "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n"
                  "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  for (size_t j = 0; j < N(splits); j++) {
    one_t cl;
    one_open(&cl, 1, 1000);
    sink_t k = {.expect = {(const uint8_t *)"", (const uint8_t *)"", (const uint8_t *)"ok"},
                .expect_len = {0, 0, 2}};
    CHECK(feed_str(cl.c, ab_codec_http.client_parse, r, splits[j], on_msg, &k) == 3);
    uint64_t non2xx;
    ab_http_stats(cl.c, &non2xx);
    CHECK_EQ_U64(non2xx, 1); /* the 304 */
    one_close(&cl);
  }
}

/* Statuses outside 2xx are counted by status (each its own error class,
 * "HTTP 404"), the first AB_CODEC_STATUSES distinct ones; the rest only in
 * the total. */
static void test_status_counts(void) {
  char r[8192];
  size_t n = 0;
  int statuses[] = {404, 500, 404, 200, 503, 404, 301, 400, 401, 402, 403, 405, 406, 407};
  for (size_t i = 0; i < N(statuses); i++)
    n += (size_t)snprintf(r + n, sizeof(r) - n, "HTTP/1.1 %d X\r\nContent-Length: 0\r\n\r\n",
                          statuses[i]);
  one_t cl;
  one_open(&cl, 1, 1000);
  CHECK(feed(cl.c, ab_codec_http.client_parse, (const uint8_t *)r, n, 0, NULL, NULL) ==
        (int)N(statuses));
  ab_codec_stats_t st;
  memset(&st, 0, sizeof(st));
  ab_codec_stats(cl.c, &st);
  CHECK_EQ_U64(st.status_errors, N(statuses) - 1); /* all but the 200 */
  CHECK_EQ_U64(st.nstatus, AB_CODEC_STATUSES);
  int want[] = {404, 500, 503, 301, 400, 401, 402, 403};
  uint64_t want_n[] = {3, 1, 1, 1, 1, 1, 1, 1};
  uint64_t sum = 0;
  for (int i = 0; i < st.nstatus && i < AB_CODEC_STATUSES; i++) {
    CHECK(st.by_status[i].status == want[i]);
    CHECK_EQ_U64(st.by_status[i].n, want_n[i]);
    sum += st.by_status[i].n;
  }
  CHECK_EQ_U64(st.status_errors - sum, 3); /* 405, 406, 407: past the table */
  one_close(&cl);
}

static void test_premature_eof(void) {
  char r[2000];
  int n = snprintf(r, sizeof(r), "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n");
  memset(r + n, 'x', 600);
  for (size_t j = 0; j < N(splits); j++) {
    one_t cl;
    one_open(&cl, 1, 1000);
    CHECK(feed(cl.c, ab_codec_http.client_parse, (const uint8_t *)r, (size_t)n + 600,
               splits[j], NULL, NULL) == 0);
    CHECK(ab_http_client_eof(cl.c) == AB_EPROTO);
    CHECK_EQ_U64(cl.c->protocol_errors, 1);
    one_close(&cl);
  }
  /* EOF inside the status line or headers too; a body read to EOF is ours
   * to refuse */
  const char *partial[] = {"HTTP/1.", "HTTP/1.1 200 OK\r\nContent-Le",
                           "HTTP/1.1 200 OK\r\n\r\nbody until eof"};
  for (size_t i = 0; i < N(partial); i++) {
    one_t cl;
    one_open(&cl, 1, 1000);
    CHECK(feed_str(cl.c, ab_codec_http.client_parse, partial[i], 0, NULL, NULL) == 0);
    CHECK(ab_http_client_eof(cl.c) == AB_EPROTO);
    one_close(&cl);
  }
}

static void test_response_errors(void) {
  one_t cl;
  one_open(&cl, 1, 1000);
  sink_t k = {.expect = {(const uint8_t *)"oops"}, .expect_len = {4}};
  CHECK(feed_str(cl.c, ab_codec_http.client_parse,
                 "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops", 0, on_msg,
                 &k) == 1);
  uint64_t non2xx;
  ab_http_stats(cl.c, &non2xx);
  CHECK_EQ_U64(non2xx, 1);
  one_close(&cl);

  struct {
    const char *resp;
    int err;
  } bad[] = {
      {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
       AB_EPROTO},
      {"HTTX/1.1 200 OK\r\n\r\n", AB_EPROTO},
      {"HTTP/1.1 099 Odd\r\n\r\n", AB_EPROTO},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1001\r\n\r\n", AB_EFRAME},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n", AB_EPROTO + 1000},
      {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nab", AB_EPROTO},
  };
  for (size_t i = 0; i < N(bad); i++) {
    for (size_t j = 0; j < N(splits); j++) {
      one_open(&cl, 1, 1000);
      long r = feed_str(cl.c, ab_codec_http.client_parse, bad[i].resp, splits[j], NULL, NULL);
      if (bad[i].err == AB_EPROTO + 1000) {
        /* chunks adding up past max_msg: 1000 fits, one more does not */
        CHECK(r == 0);
        char more[1100];
        memset(more, 'y', 1000);
        memcpy(more + 1000, "\r\n1\r\nz\r\n", 8);
        r = feed(cl.c, ab_codec_http.client_parse, (const uint8_t *)more, 1008, splits[j], NULL,
                 NULL);
        CHECK(r == AB_EFRAME);
      } else {
        CHECK(r == bad[i].err);
      }
      CHECK_EQ_U64(cl.c->protocol_errors, 1);
      /* every failure has a reason in HTTP's words */
      CHECK(ab_codec_why(cl.c)[0] != '\0');
      if (i == 3)
        CHECK(strcmp(ab_codec_why(cl.c),
                     "response body of 1001 bytes is larger than the payload (1000)") == 0);
      size_t used;
      ab_msgview_t m;
      CHECK(ab_codec_http.client_parse(cl.c, (const uint8_t *)"H", 1, &used, &m) < 0);
      one_close(&cl);
    }
  }
}

/* ---- requests a real client may send -------------------------------------- */

static void test_server_requests(void) {
  const char *reqs = "GET / HTTP/1.1\r\nHost: h\r\n\r\n"
                     "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "3;x=y\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
                     "POST /other HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyz"
                     "POST /echo?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nfg";
  const char *want = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
                     "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                     "Content-Type: application/octet-stream\r\n\r\nabcde"
                     "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
                     "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                     "Content-Type: application/octet-stream\r\n\r\nfg";
  for (size_t j = 0; j < N(splits); j++) {
    one_t sv;
    one_open(&sv, 0, 1000);
    sink_t k = {.reply_to = sv.c,
                .expect = {(const uint8_t *)"abcde", (const uint8_t *)"fg"},
                .expect_len = {5, 2}};
    CHECK(feed_str(sv.c, ab_codec_http.server_parse, reqs, splits[j], on_msg, &k) == 2);
    CHECK(ob_len(&sv.ob) == strlen(want) && memcmp(ob_data(&sv.ob), want, strlen(want)) == 0);
    CHECK_EQ_U64(sv.c->protocol_errors, 0);
    one_close(&sv);
  }
}

static void test_server_close(void) {
  /* Connection: close on an echo: the reply says so and returns ECLOSED */
  one_t sv;
  one_open(&sv, 0, 1000);
  const char *r = "POST /echo HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi"
                  "POST /echo HTTP/1.1\r\nContent-Length: 2\r\n\r\nno";
  size_t used;
  ab_msgview_t m;
  CHECK(ab_codec_http.server_parse(sv.c, (const uint8_t *)r, strlen(r), &used, &m) == 1);
  CHECK(m.len == 2 && memcmp(m.data, "hi", 2) == 0);
  CHECK(ab_codec_http.server_reply(sv.c, m.data, m.len) == AB_ECLOSED);
  const char *want = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                     "Content-Type: application/octet-stream\r\nConnection: close\r\n\r\nhi";
  CHECK(ob_len(&sv.ob) == strlen(want) && memcmp(ob_data(&sv.ob), want, strlen(want)) == 0);
  CHECK(ab_codec_http.server_parse(sv.c, (const uint8_t *)r + used, strlen(r) - used, &used,
                                   &m) == AB_ECLOSED);
  CHECK_EQ_U64(sv.c->protocol_errors, 0);
  one_close(&sv);

  /* parsed ahead of the replies: the close goes with the right reply */
  one_open(&sv, 0, 1000);
  r = "POST /echo HTTP/1.1\r\nContent-Length: 1\r\n\r\na"
      "POST /echo HTTP/1.1\r\nConnection: close\r\nContent-Length: 1\r\n\r\nb";
  size_t off = 0;
  CHECK(ab_codec_http.server_parse(sv.c, (const uint8_t *)r, strlen(r), &used, &m) == 1);
  off += used;
  CHECK(ab_codec_http.server_parse(sv.c, (const uint8_t *)r + off, strlen(r) - off, &used,
                                   &m) == 1);
  CHECK(ab_codec_http.server_reply(sv.c, (const uint8_t *)"a", 1) == 0);
  CHECK(ab_codec_http.server_reply(sv.c, (const uint8_t *)"b", 1) == AB_ECLOSED);
  one_close(&sv);

  /* a 404 with Connection: close, and HTTP/1.0 without keep-alive */
  const char *closers[] = {"GET / HTTP/1.1\r\nConnection: close\r\n\r\n",
                           "GET /x HTTP/1.0\r\n\r\n"};
  for (size_t i = 0; i < N(closers); i++) {
    one_open(&sv, 0, 1000);
    CHECK(feed_str(sv.c, ab_codec_http.server_parse, closers[i], 0, NULL, NULL) == AB_ECLOSED);
    const char *w = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    CHECK(ob_len(&sv.ob) == strlen(w) && memcmp(ob_data(&sv.ob), w, strlen(w)) == 0);
    one_close(&sv);
  }
  one_open(&sv, 0, 1000);
  CHECK(feed_str(sv.c, ab_codec_http.server_parse,
                 "POST /echo HTTP/1.0\r\nContent-Length: 1\r\n\r\nz", 0, NULL, NULL) == 1);
  CHECK(ab_codec_http.server_reply(sv.c, (const uint8_t *)"z", 1) == AB_ECLOSED);
  one_close(&sv);

  /* too big, malformed */
  one_open(&sv, 0, 10);
  CHECK(feed_str(sv.c, ab_codec_http.server_parse,
                 "POST /echo HTTP/1.1\r\nContent-Length: 11\r\n\r\n", 0, NULL, NULL) == AB_EFRAME);
  CHECK_EQ_U64(sv.c->protocol_errors, 1);
  one_close(&sv);
  one_open(&sv, 0, 10);
  CHECK(feed_str(sv.c, ab_codec_http.server_parse, "POST /echo HTTP/1.1\r\nBad Header\r\n\r\n",
                 0, NULL, NULL) == AB_EPROTO);
  one_close(&sv);
}

/* A whole Content-Length body comes out in place. */
static void test_in_place(void) {
  one_t cl;
  one_open(&cl, 1, 100);
  const char *r = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\n";
  size_t used;
  ab_msgview_t m;
  CHECK(ab_codec_http.client_parse(cl.c, (const uint8_t *)r, strlen(r), &used, &m) == 1);
  CHECK(m.data == (const uint8_t *)strstr(r, "hello") && m.len == 5);
  CHECK_EQ_U64(used, strstr(r, "hello") + 5 - r);
  CHECK(ab_codec_http.client_parse(cl.c, (const uint8_t *)r + used, strlen(r) - used, &used,
                                   &m) == 0);
  CHECK(ab_http_client_eof(cl.c) == AB_EPROTO);
  one_close(&cl);
}

int main(void) {
  test_roundtrips();
  test_wire();
  test_chunked_response();
  test_interim_responses();
  test_no_body_responses();
  test_premature_eof();
  test_status_counts();
  test_response_errors();
  test_server_requests();
  test_server_close();
  test_in_place();
  TEST_DONE();
}
