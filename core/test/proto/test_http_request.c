/* test_http_request.c -- http.h request mode: the plan's bytes (request
 * line, Host, headers, Content-Length rule), what the plan refuses, and
 * the client parsing any server's responses in a rotation (Content-Length
 * and chunked bodies of any size read past, no body for HEAD, 1xx, 204 and
 * 304, a body only EOF would end refused), each judged by the entry's
 * success set -- input whole, in 7-byte and in 1-byte pieces.
 */
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "proto/codecs.h"
#include "test/ab_test.h"
#include "test/proto/codec_feed.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const size_t splits[] = {1, 7, 0};

static int same(const ab_http_req_t *r, const char *want) {
  return r->len == strlen(want) && memcmp(r->bytes, want, r->len) == 0;
}

static void test_plan_bytes(void) {
  static const uint16_t st404[] = {404, 200};
  ab_http_request_opts_t o[] = {
      {.method = NULL, .path = NULL, .headers = ""},
      {.method = "POST", .path = "/submit?a=1", .headers = "X-A: 1\r\nAccept: */*\r\n",
       .body = "hello", .body_len = 5},
      {.method = "PUT", .path = "/p"},
      {.method = "HEAD", .path = "/h", .headers = "host: other.example\r\n", .status = st404,
       .nstatus = 2},
      {.method = "DELETE", .path = "/d", .body = "", .body_len = 0},
  };
  ab_http_plan_t *p = NULL;
  char err[200];
  CHECK(ab_http_plan_new(o, N(o), "example.org:8080", &p, err, sizeof(err)) == 0);
  CHECK(p->n == N(o));
  CHECK(same(&p->reqs[0], "GET / HTTP/1.1\r\nHost: example.org:8080\r\n\r\n"));
  CHECK(same(&p->reqs[1], "POST /submit?a=1 HTTP/1.1\r\nHost: example.org:8080\r\nX-A: 1\r\n"
                          "Accept: */*\r\nContent-Length: 5\r\n\r\nhello"));
  /* a method that usually has a body says Content-Length: 0 without one */
  CHECK(same(&p->reqs[2], "PUT /p HTTP/1.1\r\nHost: example.org:8080\r\nContent-Length: 0\r\n\r\n"));
  /* a Host of the entry's own replaces the target's */
  CHECK(same(&p->reqs[3], "HEAD /h HTTP/1.1\r\nhost: other.example\r\n\r\n"));
  CHECK(same(&p->reqs[4], "DELETE /d HTTP/1.1\r\nHost: example.org:8080\r\nContent-Length: 0\r\n\r\n"));
  CHECK(p->reqs[3].head && !p->reqs[0].head);
  CHECK_EQ_U64(p->max_len, p->reqs[1].len);
  /* success sets: any 2xx by default, else exactly the list */
  CHECK(ab_http_req_ok(&p->reqs[0], 200) && ab_http_req_ok(&p->reqs[0], 299));
  CHECK(!ab_http_req_ok(&p->reqs[0], 301) && !ab_http_req_ok(&p->reqs[0], 404));
  CHECK(ab_http_req_ok(&p->reqs[3], 404) && ab_http_req_ok(&p->reqs[3], 200));
  CHECK(!ab_http_req_ok(&p->reqs[3], 204));
  ab_http_plan_free(p);
}

static void test_plan_refuses(void) {
  static const uint16_t bad_status[] = {99};
  ab_http_request_opts_t bad[] = {
      {.method = "GE T", .path = "/"},
      {.method = "", .path = "/"},
      {.method = "GET", .path = "nope"},
      {.method = "GET", .path = "/a b"},
      {.method = "GET", .path = "/", .headers = "X-A: 1\r\nbroken\r\n"},
      {.method = "GET", .path = "/", .headers = "X A: 1\r\n"},
      {.method = "GET", .path = "/", .headers = "X-A: 1\n"},
      {.method = "GET", .path = "/", .status = bad_status, .nstatus = 1},
  };
  for (size_t i = 0; i < N(bad); i++) {
    ab_http_plan_t *p = (ab_http_plan_t *)1;
    char err[200] = "";
    CHECK(ab_http_plan_new(&bad[i], 1, "h", &p, err, sizeof(err)) == AB_EINVAL);
    CHECK(p == NULL && strncmp(err, "request 1: ", 11) == 0);
  }
  ab_http_request_opts_t ok = {.method = "GET", .path = "/"};
  ab_http_plan_t *p = NULL;
  char err[200];
  CHECK(ab_http_plan_new(&ok, 1, "bad host", &p, err, sizeof(err)) == AB_EINVAL);
}

typedef struct {
  ab_codec_t *c;
  int got;
  int status[8];
  int verdict[8];
  int closes[8];
} verdicts_t;

static void on_reply(void *ctx, const uint8_t *p, size_t n) {
  verdicts_t *v = ctx;
  (void)p;
  CHECK(n == 0); /* bodies are read past, never handed out */
  if (v->got < 8) {
    v->verdict[v->got] = v->c->vt->reply_verdict(v->c, &v->status[v->got]);
    v->closes[v->got] = ab_codec_closes_after(v->c);
  }
  v->got++;
}

/* A client codec in request mode on plan p; the first request's sequence is
 * seq0 (as the window numbers them). */
static ab_codec_t *client_on(const ab_http_plan_t *p, uint64_t seq0, size_t nsend) {
  ab_codec_t *c = NULL;
  CHECK(ab_codec_create(&ab_codec_http, NULL, 16, 1, &c) == 0); /* max_msg 16: bodies are not kept */
  CHECK(ab_codec_set_requests(c, p, 0) == 0);
  uint8_t buf[512];
  for (size_t i = 0; i < nsend; i++) {
    size_t n = c->vt->client_request(c, buf, seq0 + i);
    CHECK(n == p->reqs[(seq0 + i) % p->n].len && memcmp(buf, p->reqs[(seq0 + i) % p->n].bytes, n) == 0);
  }
  return c;
}

static void test_rotation_replies(void) {
  static const uint16_t only404[] = {404};
  ab_http_request_opts_t o[] = {
      {.method = "GET", .path = "/"},
      {.method = "HEAD", .path = "/"},
      {.method = "GET", .path = "/missing", .status = only404, .nstatus = 1},
      {.method = "GET", .path = "/gone"},
  };
  ab_http_plan_t *p = NULL;
  char err[200];
  CHECK(ab_http_plan_new(o, N(o), "127.0.0.1", &p, err, sizeof(err)) == 0);
  char big[3000];
  memset(big, 'b', sizeof(big));
  char r[8000];
  int n = snprintf(r, sizeof(r),
                   "HTTP/1.1 200 OK\r\nContent-Length: 3000\r\n\r\n%.3000s"
                   /* HEAD: a Content-Length, no body */
                   "HTTP/1.1 200 OK\r\nContent-Length: 123456\r\n\r\n"
                   "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "a\r\n0123456789\r\n0\r\n\r\n"
                   "HTTP/1.1 100 Continue\r\n\r\n"
                   "HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope"
                   /* the rotation again: 204 and 304 carry no body */
                   "HTTP/1.1 204 No Content\r\n\r\n"
                   "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n",
                   big);
  for (size_t j = 0; j < N(splits); j++) {
    /* the window's sequences need not start at 0: 8 is entry 0 */
    ab_codec_t *c = client_on(p, 8, 6);
    verdicts_t v = {.c = c};
    CHECK(feed(c, ab_codec_http.client_parse, (const uint8_t *)r, (size_t)n, splits[j], on_reply,
               &v) == 6);
    CHECK(v.got == 6);
    int want_status[] = {200, 200, 404, 404, 204, 304};
    /* 304 is no 2xx: outside the HEAD entry's default set */
    int want_verdict[] = {0, 0, 0, AB_ERR_HTTP(404), 0, AB_ERR_HTTP(304)};
    for (int i = 0; i < 6; i++) {
      CHECK(v.status[i] == want_status[i]);
      CHECK(v.verdict[i] == want_verdict[i]);
    }
    CHECK(ab_http_client_eof(c) == 0);
    CHECK_EQ_U64(c->protocol_errors, 0);
    /* request mode counts no non2xx of its own (the window does) */
    ab_codec_stats_t st = {0};
    ab_codec_stats(c, &st);
    CHECK_EQ_U64(st.status_errors, 0);
    ab_codec_destroy(c);
  }
  /* HEAD depends on the sequence: starting at entry 1 the first response
   * is HEAD's, so its Content-Length must not be waited for */
  ab_codec_t *c = client_on(p, 5, 2);
  verdicts_t v = {.c = c};
  const char *two = "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n"
                    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
  CHECK(feed(c, ab_codec_http.client_parse, (const uint8_t *)two, strlen(two), 0, on_reply,
             &v) == 2);
  CHECK(v.verdict[0] == 0 && v.status[1] == 404 && v.verdict[1] == 0);
  ab_codec_destroy(c);
  ab_http_plan_free(p);
}

static void test_close_delimited(void) {
  ab_http_request_opts_t o = {.method = "GET", .path = "/"};
  ab_http_plan_t *p = NULL;
  char err[200];
  CHECK(ab_http_plan_new(&o, 1, "127.0.0.1", &p, err, sizeof(err)) == 0);
  for (size_t j = 0; j < N(splits); j++) {
    ab_codec_t *c = client_on(p, 0, 1);
    const char *r = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end";
    CHECK(feed(c, ab_codec_http.client_parse, (const uint8_t *)r, strlen(r), splits[j], NULL,
               NULL) == AB_EPROTO);
    CHECK(strstr(ab_codec_why(c), "without Content-Length or chunked") != NULL);
    CHECK_EQ_U64(c->protocol_errors, 1);
    ab_codec_destroy(c);
  }
  /* a server codec has no request mode */
  ab_outbuf_t ob;
  ab_outbuf_init(&ob);
  ab_codec_t *s = NULL;
  CHECK(ab_codec_create(&ab_codec_http, &ob, 100, 0, &s) == 0);
  CHECK(ab_codec_set_requests(s, p, 0) == AB_EINVAL);
  ab_codec_destroy(s);
  ab_outbuf_free(&ob);
  /* nor do the other codecs */
  ab_codec_t *l = NULL;
  CHECK(ab_codec_create(&ab_codec_length, NULL, 100, 1, &l) == 0);
  CHECK(ab_codec_set_requests(l, p, 0) == AB_EINVAL);
  ab_codec_destroy(l);
  ab_http_plan_free(p);
}

/* Connection: close and HTTP/1.0 without keep-alive say the server closes
 * after that response (the driver reopens: server_closes); a 1.1 response
 * or a 1.0 one with keep-alive do not. */
static void test_closes_after(void) {
  ab_http_request_opts_t o = {.method = "GET", .path = "/"};
  ab_http_plan_t *p = NULL;
  char err[200];
  CHECK(ab_http_plan_new(&o, 1, "h", &p, err, sizeof(err)) == 0);
  static const char r[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                          "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok";
  static const char r10[] = "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok"
                            "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok";
  const char *in[] = {r, r10};
  size_t len[] = {sizeof(r) - 1, sizeof(r10) - 1};
  for (int k = 0; k < 2; k++) {
    ab_codec_t *c = client_on(p, 0, 2);
    verdicts_t v = {.c = c};
    CHECK(feed(c, ab_codec_http.client_parse, (const uint8_t *)in[k], len[k], 0, on_reply, &v) ==
          2);
    CHECK(v.got == 2 && v.verdict[0] == 0 && v.verdict[1] == 0);
    CHECK(v.closes[0] == 0 && v.closes[1] == 1);
    ab_codec_destroy(c);
  }
  ab_http_plan_free(p);
}

/* request = function(i, conn): each connection rotates through its own
 * list (ab_http_plan_split), never another's. */
static void test_per_connection_lists(void) {
  ab_http_request_opts_t o[] = {
      {.method = "GET", .path = "/a0"}, {.method = "GET", .path = "/a1"},
      {.method = "GET", .path = "/b0"},
      {.method = "GET", .path = "/c0"}, {.method = "GET", .path = "/c1"}, {.method = "GET", .path = "/c2"},
  };
  uint32_t counts[] = {2, 1, 3};
  ab_http_plan_t *p = NULL;
  char err[200];
  CHECK(ab_http_plan_new(o, N(o), "h", &p, err, sizeof(err)) == 0);
  uint32_t short_counts[] = {2, 1, 2}, zero[] = {2, 0, 4};
  CHECK(ab_http_plan_split(p, short_counts, 3, err, sizeof(err)) == AB_EINVAL);
  CHECK(ab_http_plan_split(p, zero, 3, err, sizeof(err)) == AB_EINVAL);
  CHECK(ab_http_plan_split(p, counts, 3, err, sizeof(err)) == 0);
  const char *want[3][7] = {
      {"/a0", "/a1", "/a0", "/a1", "/a0", "/a1", "/a0"},
      {"/b0", "/b0", "/b0", "/b0", "/b0", "/b0", "/b0"},
      {"/c0", "/c1", "/c2", "/c0", "/c1", "/c2", "/c0"},
  };
  for (uint32_t id = 0; id < 4; id++) { /* connection 3 has list 0 again */
    ab_codec_t *c = NULL;
    CHECK(ab_codec_create(&ab_codec_http, NULL, 16, 1, &c) == 0);
    CHECK(ab_codec_set_requests(c, p, id) == 0);
    for (uint64_t seq = 0; seq < 7; seq++) {
      uint8_t buf[256];
      size_t n = c->vt->client_request(c, buf, seq);
      char line[32];
      snprintf(line, sizeof(line), "GET %s HTTP/1.1\r\n", want[id % 3][seq]);
      CHECK(n > strlen(line) && memcmp(buf, line, strlen(line)) == 0);
    }
    ab_codec_destroy(c);
  }
  ab_http_plan_free(p);
}

int main(void) {
  test_plan_bytes();
  test_plan_refuses();
  test_rotation_replies();
  test_close_delimited();
  test_closes_after();
  test_per_connection_lists();
  TEST_DONE();
}
