/* test_h2.c -- the HTTP/2 codec (proto/h2.h) in memory: a client and a
 * server codec wired back to back, no socket.  The client waits for the
 * server's SETTINGS before opening streams, opens what mux_room allows,
 * the server echoes each body, the client gets every reply with the
 * message its stream carried and the bytes intact; a peer cap of 2 limits
 * mux_room; request mode judges statuses; the SETTINGS sent are recorded
 * on both sides with the peer's; garbage ends the session with nghttp2's
 * named reason, sticky; a GOAWAY with NO_ERROR is an orderly end, its
 * unprocessed streams no errors; one with an error code fails them. */
#include <stdio.h>
#include <string.h>

#include "proto/codecs.h"
#include "proto/framing.h"
#include "test/ab_test.h"

typedef struct {
  ab_outbuf_t cout, sout;
  ab_codec_t *c, *s;
} pair_t;

static void pair_new(pair_t *p, uint64_t payload, uint32_t server_streams) {
  memset(p, 0, sizeof(*p));
  ab_outbuf_init(&p->cout);
  ab_outbuf_init(&p->sout);
  CHECK(ab_codec_create(&ab_codec_h2, &p->cout, payload, 1, &p->c) == 0);
  CHECK(ab_codec_create(&ab_codec_h2, &p->sout, 1 << 20, 0, &p->s) == 0);
  ab_h2_settings_t cs = {0, 0, 0, 0, 0, 0}, ss = {server_streams, 0, 0, 0, 0, 0};
  CHECK(ab_h2_set_settings(p->c, &cs) == 0);
  CHECK(ab_h2_set_settings(p->s, &ss) == 0);
  CHECK(ab_h2_set_settings(p->c, &cs) == AB_EINVAL); /* sent already */
  CHECK(p->cout.len > 24 && memcmp(p->cout.buf, "PRI * HTTP/2.0", 14) == 0);
}

static void pair_free(pair_t *p) {
  ab_codec_destroy(p->c);
  ab_codec_destroy(p->s);
  ab_outbuf_free(&p->cout);
  ab_outbuf_free(&p->sout);
}

/* Moves the client's output to the server, which echoes every request;
 * returns the requests it handled. */
static int serve(pair_t *p) {
  int n = 0;
  size_t off = 0, len = p->cout.len;
  uint8_t *in = malloc(len + 1);
  memcpy(in, p->cout.buf, len);
  p->cout.len = 0;
  for (;;) {
    size_t used = 0;
    ab_msgview_t m;
    int r = ab_codec_h2.server_parse(p->s, in + off, len - off, &used, &m);
    off += used;
    CHECK(r >= 0);
    if (r <= 0) break;
    CHECK(ab_codec_h2.server_reply(p->s, m.data, m.len) == 0);
    n++;
  }
  CHECK(off == len);
  free(in);
  return n;
}

/* Moves the server's output to the client; every reply must be the echo of
 * the message its stream carried.  Returns the replies; *seen gets a bit
 * per sequence (< 64). */
static int take(pair_t *p, uint64_t payload, uint64_t *seen) {
  int n = 0;
  size_t off = 0, len = p->sout.len;
  uint8_t *in = malloc(len + 1);
  memcpy(in, p->sout.buf, len);
  p->sout.len = 0;
  for (;;) {
    size_t used = 0;
    ab_msgview_t m;
    int r = ab_codec_h2.client_parse(p->c, in + off, len - off, &used, &m);
    off += used;
    CHECK(r >= 0);
    if (r <= 0) break;
    uint64_t seq = 99;
    const char *why = NULL;
    CHECK(ab_codec_h2.mux_reply(p->c, &seq, &why) == 0);
    CHECK_EQ_U64(m.len, payload);
    uint8_t ph;
    uint32_t cid;
    uint64_t got;
    CHECK(ab_msg_check(m.data, m.len, &ph, &cid, &got) == 0);
    CHECK_EQ_U64(got, seq);
    CHECK(seq < 64 && !(*seen & ((uint64_t)1 << seq)));
    *seen |= (uint64_t)1 << seq;
    n++;
  }
  free(in);
  return n;
}

static uint32_t open_streams(pair_t *p, uint64_t *next, uint64_t payload, uint32_t most) {
  uint32_t room = ab_codec_h2.mux_room(p->c), n = room < most ? room : most;
  for (uint32_t i = 0; i < n; i++) {
    uint8_t *b = ab_codec_h2.mux_body(p->c, i, payload);
    CHECK(b != NULL);
    ab_msg_fill(b, payload, 2, 0, *next + i);
  }
  if (n) CHECK(ab_codec_h2.mux_submit(p->c, *next, n) == 0);
  *next += n;
  return n;
}

static void test_echo(uint64_t payload) {
  pair_t p;
  pair_new(&p, payload, 0);
  /* no stream before the server's SETTINGS */
  CHECK_EQ_U64(ab_codec_h2.mux_room(p.c), 0);
  CHECK_EQ_U64(serve(&p), 0); /* the preface and SETTINGS */
  uint64_t seen = 0, next = 0;
  CHECK_EQ_U64(take(&p, payload, &seen), 0);
  CHECK_EQ_U64(ab_codec_h2.mux_room(p.c), AB_H2_SERVER_STREAMS);
  int got = 0;
  for (int round = 0; round < 8 && next < 40; round++) {
    open_streams(&p, &next, payload, 8);
    serve(&p);
    got += take(&p, payload, &seen);
  }
  CHECK_EQ_U64(got, 40);
  CHECK_EQ_U64(seen, ((uint64_t)1 << 40) - 1);
  ab_codec_stats_t st;
  memset(&st, 0, sizeof(st));
  ab_codec_stats(p.c, &st);
  CHECK_EQ_U64(st.mux.responses[2], 40);
  CHECK_EQ_U64(st.mux.data_bytes_out, 40 * payload);
  CHECK_EQ_U64(st.mux.data_bytes_in, 40 * payload);
  CHECK(st.mux.peer_seen && st.mux.peer[0] == AB_H2_SERVER_STREAMS);
  CHECK_EQ_U64(st.mux.ours[1], AB_H2_WINDOW);
  CHECK_EQ_U64(ab_codec_client_eof(p.c), 0);
  pair_free(&p);
}

static void test_peer_cap(void) {
  pair_t p;
  pair_new(&p, 64, 2);
  serve(&p);
  uint64_t seen = 0, next = 0;
  take(&p, 64, &seen);
  CHECK_EQ_U64(ab_codec_h2.mux_room(p.c), 2);
  CHECK_EQ_U64(open_streams(&p, &next, 64, 8), 2);
  CHECK_EQ_U64(ab_codec_h2.mux_room(p.c), 0);
  serve(&p);
  CHECK_EQ_U64(take(&p, 64, &seen), 2);
  CHECK_EQ_U64(ab_codec_h2.mux_room(p.c), 2);
  ab_codec_stats_t st;
  memset(&st, 0, sizeof(st));
  ab_codec_stats(p.c, &st);
  CHECK_EQ_U64(st.peer_max_streams, 2);
  pair_free(&p);
}

static void test_requests(void) {
  static const uint16_t only404[] = {404};
  static const ab_http_request_opts_t reqs[] = {
      {.method = "POST", .path = "/echo", .body = "abcd", .body_len = 4},
      {.method = "GET", .path = "/missing", .headers = "Connection: keep-alive\r\nX-A: b\r\n"},
      {.method = "GET", .path = "/missing", .status = only404, .nstatus = 1},
  };
  ab_h2_plan_t *plan = NULL;
  char err[200];
  CHECK(ab_h2_plan_new(reqs, 3, "127.0.0.1", 0, &plan, err, sizeof(err)) == 0);
  pair_t p;
  pair_new(&p, 64, 0);
  CHECK(ab_codec_set_requests(p.c, plan, 0) == 0);
  serve(&p);
  ab_msgview_t m;
  size_t used;
  CHECK(ab_codec_h2.client_parse(p.c, p.sout.buf, p.sout.len, &used, &m) == 0);
  p.sout.len = 0;
  CHECK(ab_codec_h2.mux_submit(p.c, 0, 3) == 0);
  CHECK_EQ_U64(serve(&p), 1); /* POST /echo; the two GETs are answered 404 */
  int verdicts[3] = {1, 1, 1}, statuses[3] = {0, 0, 0};
  size_t off = 0;
  for (;;) {
    int r = ab_codec_h2.client_parse(p.c, p.sout.buf + off, p.sout.len - off, &used, &m);
    off += used;
    if (r <= 0) break;
    uint64_t seq = 9;
    const char *why;
    CHECK(ab_codec_h2.mux_reply(p.c, &seq, &why) == 0 && seq < 3);
    int st = 0;
    verdicts[seq] = ab_codec_h2.reply_verdict(p.c, &st);
    statuses[seq] = st;
  }
  CHECK(statuses[0] == 200 && verdicts[0] == 0);
  CHECK(statuses[1] == 404 && verdicts[1] == AB_ERR_HTTP(404));
  CHECK(statuses[2] == 404 && verdicts[2] == 0);
  pair_free(&p);
  ab_h2_plan_free(plan);
}

static void test_garbage(void) {
  pair_t p;
  pair_new(&p, 64, 0);
  serve(&p);
  /* a frame header announcing 6.7 MB: FRAME_SIZE_ERROR */
  static const uint8_t junk[] = "garbage!garbage!garbage!";
  ab_msgview_t m;
  size_t used;
  p.sout.len = 0;
  p.cout.len = 0;
  int r = ab_codec_h2.client_parse(p.c, junk, sizeof(junk) - 1, &used, &m);
  if (r == 0) r = ab_codec_h2.client_parse(p.c, junk, 0, &used, &m);
  CHECK(r == AB_EPROTO);
  CHECK(strstr(ab_codec_why(p.c), "HTTP/2: ") == ab_codec_why(p.c));
  CHECK(strstr(ab_codec_why(p.c), "GOAWAY") != NULL);
  if (strstr(ab_codec_why(p.c), "GOAWAY") == NULL) fprintf(stderr, "why: %s\n", ab_codec_why(p.c));
  CHECK(p.cout.len > 0); /* nghttp2's GOAWAY */
  CHECK(ab_codec_h2.client_parse(p.c, junk, sizeof(junk) - 1, &used, &m) == AB_EPROTO && used == 0);
  CHECK_EQ_U64(p.c->protocol_errors, 1);
  pair_free(&p);
}

/* The client's parse of raw frames `in` (a server misbehaving by hand):
 * each stream handed out records mux_reply's return, seq and why; returns
 * the parse's last return (0 or an error). */
typedef struct {
  int n, rc[8];
  uint64_t seq[8];
  char why[8][120];
} outs_t;

static int feed(pair_t *p, const uint8_t *in, size_t len, outs_t *o) {
  size_t off = 0;
  for (;;) {
    size_t used = 0;
    ab_msgview_t m;
    int r = ab_codec_h2.client_parse(p->c, in + off, len - off, &used, &m);
    off += used;
    if (r <= 0) return r;
    const char *why = NULL;
    CHECK(o->n < 8);
    o->rc[o->n] = ab_codec_h2.mux_reply(p->c, &o->seq[o->n], &why);
    snprintf(o->why[o->n], sizeof(o->why[0]), "%s", why ? why : "");
    o->n++;
  }
}

static void frame(uint8_t *f, uint8_t type, uint32_t sid, uint32_t a, uint32_t b, int two) {
  uint32_t len = two ? 8 : 4;
  f[0] = 0, f[1] = 0, f[2] = (uint8_t)len, f[3] = type, f[4] = 0;
  f[5] = (uint8_t)(sid >> 24), f[6] = (uint8_t)(sid >> 16), f[7] = (uint8_t)(sid >> 8), f[8] = (uint8_t)sid;
  uint32_t v[2] = {a, b};
  for (int i = 0; i < (two ? 2 : 1); i++)
    for (int k = 0; k < 4; k++) f[9 + 4 * i + k] = (uint8_t)(v[i] >> (24 - 8 * k));
}

/* A GOAWAY: NO_ERROR is the peer's orderly end -- the streams above its
 * last stream id come back as never processed (mux_reply 1, no error),
 * then the parse says AB_EPEERCLOSE; with an error code they fail
 * (EPROTO, a reason naming the GOAWAY, not an RST_STREAM) and the
 * connection is lost (AB_ECLOSED).  A real RST_STREAM says so and is
 * counted by its code. */
static void test_goaway(uint32_t code) {
  pair_t p;
  pair_new(&p, 64, 0);
  serve(&p);
  uint64_t seen = 0, next = 0;
  take(&p, 64, &seen);
  CHECK_EQ_U64(open_streams(&p, &next, 64, 1), 1); /* stream 1 */
  serve(&p);
  CHECK_EQ_U64(take(&p, 64, &seen), 1);
  CHECK_EQ_U64(open_streams(&p, &next, 64, 3), 3); /* streams 3, 5, 7: unanswered */
  p.cout.len = 0;
  uint8_t f[17 + 13];
  frame(f, 0x3, 7, 7 /* REFUSED_STREAM */, 0, 0); /* RST_STREAM on stream 7 */
  frame(f + 13, 0x7, 0, 1, code, 1);                /* GOAWAY, last stream 1 */
  outs_t o;
  memset(&o, 0, sizeof(o));
  int r = feed(&p, f, 13, &o);
  CHECK(r == 0 && o.n == 1);
  CHECK(o.rc[0] == AB_EPROTO && o.seq[0] == 3);
  CHECK(strcmp(o.why[0], "a stream reset by the peer: REFUSED_STREAM") == 0);
  r = feed(&p, f + 13, 17, &o);
  CHECK(o.n == 3);
  CHECK(r == (code == 0 ? AB_EPEERCLOSE : AB_ECLOSED));
  for (int i = 1; i < 3; i++) {
    CHECK(o.seq[i] == 1 || o.seq[i] == 2);
    if (code == 0) {
      CHECK(o.rc[i] == 1);
    } else {
      CHECK(o.rc[i] == AB_EPROTO);
      CHECK(strcmp(o.why[i], "a stream above the peer's GOAWAY last stream id (GOAWAY PROTOCOL_ERROR)") == 0);
      if (strcmp(o.why[i], "a stream above the peer's GOAWAY last stream id (GOAWAY PROTOCOL_ERROR)"))
        fprintf(stderr, "why: %s\n", o.why[i]);
    }
  }
  CHECK(o.seq[1] != o.seq[2]);
  CHECK_EQ_U64(ab_codec_h2.mux_room(p.c), 0);
  ab_codec_stats_t st;
  memset(&st, 0, sizeof(st));
  ab_codec_stats(p.c, &st);
  CHECK_EQ_U64(st.mux.resets[AB_RST_REFUSED], 1); /* the RST_STREAM only */
  CHECK_EQ_U64(st.mux.goaways, 1);
  CHECK_EQ_U64(st.mux.goaway_last_stream, 1);
  CHECK_EQ_U64(st.mux.goaway_code, code);
  CHECK_EQ_U64(st.mux.goaway_unprocessed, code == 0 ? 2 : 0);
  pair_free(&p);
}

int main(void) {
  test_echo(64);
  test_echo(16384);
  test_echo(70000); /* bodies over several DATA frames */
  test_peer_cap();
  test_requests();
  test_garbage();
  test_goaway(0);
  test_goaway(1); /* PROTOCOL_ERROR */
  TEST_DONE();
}
