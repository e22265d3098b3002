/* test_ws.c -- ws.h: the RFC 6455 codec and the upgrade handshake.
 *
 * Round trips client -> server -> client in memory through outbufs that
 * are never flushed (stream NULL), input delivered whole, in 7-byte and in
 * 1-byte pieces; hand-built frames for every violation the codec must
 * refuse.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "base/ab_error.h"
#include "proto/codecs.h"
#include "proto/framing.h"
#include "test/ab_test.h"
#include "test/proto/codec_feed.h"

#define MIB (1024 * 1024)
#define N(a) (sizeof(a) / sizeof((a)[0]))

static void fill(uint8_t *p, size_t n, uint64_t seq) {
  if (n >= AB_MSG_MIN_PAYLOAD) ab_msg_fill(p, n, AB_PHASE_MEASURE, 5, seq);
  else
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 29 + seq);
}

typedef struct {
  ab_codec_t *reply_to;
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
  if (k->reply_to) CHECK(k->reply_to->vt->server_reply(k->reply_to, p, n) == 0);
}

static const uint8_t *ob_data(ab_outbuf_t *ob) { return ob->buf; }
static size_t ob_len(ab_outbuf_t *ob) { return ob->len; }
static void ob_clear(ab_outbuf_t *ob) { ob->len = 0; }

/* An independent frame encoder: minimal length, masked when key != NULL. */
static size_t frame(uint8_t *d, uint8_t b0, const void *payload, size_t n,
                    const uint8_t *key) {
  const uint8_t *p = payload;
  size_t h = 0;
  d[h++] = b0;
  uint8_t m = key ? 0x80 : 0;
  if (n < 126) {
    d[h++] = (uint8_t)(m | n);
  } else if (n < 65536) {
    d[h++] = m | 126;
    d[h++] = (uint8_t)(n >> 8);
    d[h++] = (uint8_t)n;
  } else {
    d[h++] = m | 127;
    for (int i = 7; i >= 0; i--) d[h++] = (uint8_t)((uint64_t)n >> (8 * i));
  }
  if (key) {
    memcpy(d + h, key, 4);
    h += 4;
  }
  for (size_t i = 0; i < n; i++) d[h + i] = key ? p[i] ^ key[i & 3] : p[i];
  return h + n;
}

static const uint8_t KEY[4] = {0x37, 0xfa, 0x21, 0x3d};

/* ---- handshake helpers ---------------------------------------------------- */

static void test_accept_key(void) {
  char out[AB_WS_ACCEPT_LEN + 1];
  CHECK(ab_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out) == 0);
  CHECK(strcmp(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") == 0);
  char key[AB_WS_KEY_LEN + 1], key2[AB_WS_KEY_LEN + 1];
  CHECK(ab_ws_new_key(key) == 0 && ab_ws_new_key(key2) == 0);
  CHECK(strlen(key) == 24 && key[22] == '=' && key[23] == '=');
  CHECK(strcmp(key, key2) != 0);
  unsigned char raw[20];
  CHECK(EVP_DecodeBlock(raw, (const unsigned char *)key, 24) == 18); /* 16 + 2 pad */
}

static void test_handshake(void) {
  char key[AB_WS_KEY_LEN + 1];
  CHECK(ab_ws_new_key(key) == 0);
  char req[512], resp[512];
  int rl = ab_ws_request(req, sizeof(req), "127.0.0.1:8080", "/echo", key);
  CHECK(rl > 0);
  CHECK(strncmp(req, "GET /echo HTTP/1.1\r\n", 20) == 0);
  CHECK(strstr(req, "\r\nSec-WebSocket-Version: 13\r\n") != NULL);
  CHECK(ab_ws_request(resp, 40, "h", "/echo", key) == AB_EINVAL);
  CHECK(ab_ws_request(resp, sizeof(resp), "h\r\nX: y", "/echo", key) == AB_EINVAL);
  /* a frame right behind the request stays with the caller */
  uint8_t in[600];
  memcpy(in, req, (size_t)rl);
  size_t fl = frame(in + rl, 0x82, "hi", 2, KEY);
  for (size_t split = 0; split <= 1; split++) {
    ab_ws_hs_t hs;
    CHECK(ab_ws_hs_init(&hs, 0, NULL) == 0);
    size_t off = 0, used = 0;
    int r = 0;
    while (off < (size_t)rl + fl) {
      size_t n = split ? 1 : (size_t)rl + fl - off;
      r = ab_ws_hs_feed(&hs, in + off, n, &used);
      off += used;
      if (r != 0) break;
      CHECK_EQ_U64(used, n);
    }
    CHECK(r == 1);
    CHECK_EQ_U64(off, rl);
    CHECK(strcmp(hs.key, key) == 0);
    int n = ab_ws_hs_reply(&hs, resp, sizeof(resp));
    CHECK(n > 0);
    CHECK(strncmp(resp, "HTTP/1.1 101 ", 13) == 0);
    /* the client checks the answer */
    ab_ws_hs_t ch;
    CHECK(ab_ws_hs_init(&ch, 1, key) == 0);
    uint8_t rin[600];
    memcpy(rin, resp, (size_t)n);
    size_t rfl = frame(rin + n, 0x82, "yo", 2, NULL);
    off = 0;
    r = 0;
    while (off < (size_t)n + rfl) {
      size_t k = split ? 1 : (size_t)n + rfl - off;
      r = ab_ws_hs_feed(&ch, rin + off, k, &used);
      off += used;
      if (r != 0) break;
    }
    CHECK(r == 1);
    CHECK_EQ_U64(off, n);
  }
  /* the client refuses a wrong accept, a non-101 and a missing Upgrade */
  const char *bad[] = {
      ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
       "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"),
      "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\r\n",
  };
  for (size_t i = 0; i < N(bad); i++) {
    ab_ws_hs_t ch;
    size_t used;
    CHECK(ab_ws_hs_init(&ch, 1, key) == 0);
    CHECK(ab_ws_hs_feed(&ch, (const uint8_t *)bad[i], strlen(bad[i]), &used) == AB_EPROTO);
  }
  /* the RFC's example key is accepted and answered with its accept value */
  const char *rfc = "GET /echo HTTP/1.1\r\nHost: server.example.com\r\nUpgrade: websocket\r\n"
                    "Connection: keep-alive, Upgrade\r\nSec-WebSocket-Key: "
                    "dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: http://example.com\r\n"
                    "Sec-WebSocket-Version: 13\r\n\r\n";
  ab_ws_hs_t hs;
  size_t used;
  CHECK(ab_ws_hs_init(&hs, 0, NULL) == 0);
  CHECK(ab_ws_hs_feed(&hs, (const uint8_t *)rfc, strlen(rfc), &used) == 1);
  CHECK(ab_ws_hs_reply(&hs, resp, sizeof(resp)) > 0);
  CHECK(strstr(resp, "\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n") != NULL);
  /* the server refuses: wrong version (426), path (404), no key (400) */
  struct {
    const char *req;
    int status;
  } rej[] = {
      {"GET /echo HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n",
       426},
      {"GET /other HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
       404},
      {"GET /echo HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
       "Sec-WebSocket-Version: 13\r\n\r\n",
       400},
      {"POST /echo HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
       400},
      {"GARBAGE\r\n\r\n", 400},
  };
  for (size_t i = 0; i < N(rej); i++) {
    CHECK(ab_ws_hs_init(&hs, 0, NULL) == 0);
    CHECK(ab_ws_hs_feed(&hs, (const uint8_t *)rej[i].req, strlen(rej[i].req), &used) ==
          AB_EPROTO);
    CHECK(hs.status == rej[i].status);
    CHECK(ab_ws_hs_reply(&hs, resp, sizeof(resp)) > 0);
    char want[32];
    snprintf(want, sizeof(want), "HTTP/1.1 %d ", rej[i].status);
    CHECK(strncmp(resp, want, strlen(want)) == 0);
    CHECK(strstr(resp, "Connection: close\r\n") != NULL);
  }
  /* an endless header block is cut off */
  CHECK(ab_ws_hs_init(&hs, 0, NULL) == 0);
  const char *start = "GET /echo HTTP/1.1\r\n";
  CHECK(ab_ws_hs_feed(&hs, (const uint8_t *)start, strlen(start), &used) == 0);
  char line[100];
  memset(line, 'a', sizeof(line));
  memcpy(line, "X-Pad: ", 7);
  line[98] = '\r';
  line[99] = '\n';
  int r = 0;
  for (int i = 0; i < 400 && r == 0; i++) r = ab_ws_hs_feed(&hs, (const uint8_t *)line, 100, &used);
  CHECK(r == AB_EPROTO && hs.status == 431);
}

/* ---- codec ---------------------------------------------------------------- */

typedef struct {
  ab_outbuf_t cob, sob;
  ab_codec_t *cl, *sv;
} pair_t;

static void pair_open(pair_t *p, uint64_t max_msg) {
  ab_outbuf_init(&p->cob);
  ab_outbuf_init(&p->sob);
  CHECK(ab_codec_create(&ab_codec_ws, &p->cob, max_msg, 1, &p->cl) == 0);
  CHECK(ab_codec_create(&ab_codec_ws, &p->sob, max_msg, 0, &p->sv) == 0);
}

static void pair_close(pair_t *p) {
  ab_codec_destroy(p->cl);
  ab_codec_destroy(p->sv);
  ab_outbuf_free(&p->cob);
  ab_outbuf_free(&p->sob);
}

static void roundtrip(const size_t *lens, int count, size_t split) {
  pair_t p;
  pair_open(&p, 2 * MIB);
  size_t cap = 0;
  for (int i = 0; i < count; i++) cap += ab_codec_ws.max_overhead + lens[i];
  uint8_t *req = malloc(cap + 1), *d = req;
  uint8_t *payloads[4];
  for (int i = 0; i < count; i++) {
    size_t h = ab_codec_ws.client_begin(p.cl, d, lens[i]);
    size_t want_h = (lens[i] < 126 ? 2 : lens[i] < 65536 ? 4 : 10) + 4;
    CHECK_EQ_U64(h, want_h);
    CHECK(d[0] == 0x82 && (d[1] & 0x80)); /* FIN, binary, masked */
    fill(d + h, lens[i], (uint64_t)i + 7);
    payloads[i] = malloc(lens[i] + 1);
    memcpy(payloads[i], d + h, lens[i]);
    size_t t = ab_codec_ws.client_end(p.cl, d + h, lens[i], d + h + lens[i]);
    CHECK_EQ_U64(t, 0);
    if (lens[i] >= 4) {
      /* masked on the wire */
      int same = 1;
      for (size_t k = 0; k < 4; k++) same &= (d[h + k] == (payloads[i][k] ^ d[h - 4 + k]));
      CHECK(same);
    }
    d += h + lens[i];
  }
  sink_t k = {.reply_to = p.sv};
  for (int i = 0; i < count; i++) {
    k.expect[i] = payloads[i];
    k.expect_len[i] = lens[i];
  }
  CHECK(feed(p.sv, ab_codec_ws.server_parse, req, (size_t)(d - req), split, on_msg, &k) == count);
  const uint8_t *resp = ob_data(&p.sob);
  CHECK(resp[0] == 0x82 && !(resp[1] & 0x80)); /* server frames unmasked */
  sink_t kc = k;
  kc.reply_to = NULL;
  kc.got = 0;
  CHECK(feed(p.cl, ab_codec_ws.client_parse, resp, ob_len(&p.sob), split, on_msg, &kc) == count);
  CHECK(kc.got == count);
  CHECK_EQ_U64(ob_len(&p.cob), 0); /* nothing for the client to answer */
  CHECK_EQ_U64(p.cl->protocol_errors + p.sv->protocol_errors, 0);
  for (int i = 0; i < count; i++) free(payloads[i]);
  free(req);
  pair_close(&p);
}

static void test_roundtrips(void) {
  static const size_t sizes[] = {0, 1, 16, 125, 126, 127, 65535, 65536, 65537, MIB};
  static const size_t splits[] = {1, 7, 0};
  for (size_t i = 0; i < N(sizes); i++)
    for (size_t j = 0; j < N(splits); j++) roundtrip(&sizes[i], 1, splits[j]);
  size_t mixed[4] = {0, 126, 70000, 16};
  for (size_t j = 0; j < N(splits); j++) roundtrip(mixed, 4, splits[j]);
}

static void test_fresh_keys(void) {
  pair_t p;
  pair_open(&p, 1000);
  uint8_t a[32], b[32];
  int differ = 0;
  size_t ha = ab_codec_ws.client_begin(p.cl, a, 16);
  for (int i = 0; i < 8; i++) {
    size_t hb = ab_codec_ws.client_begin(p.cl, b, 16);
    CHECK(ha == 6 && hb == 6);
    differ += memcmp(a + 2, b + 2, 4) != 0;
  }
  CHECK(differ >= 7);
  pair_close(&p);
}

/* Parses `in` whole, then again byte by byte; returns the first result
 * (and checks the second agrees). */
static int parse_both(int is_client, uint64_t max_msg, const uint8_t *in, size_t n,
                      long *msgs, uint8_t *out_first, size_t *out_len) {
  int first = 0;
  for (size_t split = 0; split <= 1; split++) {
    ab_outbuf_t ob;
    ab_outbuf_init(&ob);
    ab_codec_t *c = NULL;
    CHECK(ab_codec_create(&ab_codec_ws, &ob, max_msg, is_client, &c) == 0);
    parse_fn fn = is_client ? ab_codec_ws.client_parse : ab_codec_ws.server_parse;
    long r = feed(c, fn, in, n, split, NULL, NULL);
    if (split == 0) {
      first = (int)r;
      if (msgs) *msgs = r;
      if (out_first) {
        *out_len = ob_len(&ob);
        if (*out_len) memcpy(out_first, ob_data(&ob), *out_len < 64 ? *out_len : 64);
      }
      if (r < 0 && r != AB_ECLOSED) CHECK_EQ_U64(c->protocol_errors, 1);
      /* a protocol error has a reason in WebSocket's words */
      if (r == AB_EPROTO || r == AB_EFRAME) CHECK(strstr(ab_codec_why(c), "WebSocket ") != NULL);
      if (r == AB_EFRAME && max_msg == 100 && n < 200)
        CHECK(strstr(ab_codec_why(c), "larger than the payload (100)") != NULL);
    } else {
      CHECK(r == first);
    }
    ab_codec_destroy(c);
    ab_outbuf_free(&ob);
  }
  return first;
}

/* The close frame an unmasked server writes for `code`. */
static int is_close(const uint8_t *o, size_t n, unsigned code) {
  return n == 4 && o[0] == 0x88 && o[1] == 2 && o[2] == (code >> 8) && o[3] == (code & 0xff);
}

static void test_violations(void) {
  uint8_t in[300], out[64];
  size_t n, ol;
  uint8_t big[200];
  memset(big, 'x', sizeof(big));

  /* an unmasked frame to the server: close 1002, counted */
  n = frame(in, 0x82, "abc", 3, NULL);
  CHECK(parse_both(0, 1000, in, n, NULL, out, &ol) == AB_EPROTO);
  CHECK(is_close(out, ol, 1002));
  /* a masked frame to the client: AB_EPROTO (and a masked close 1002) */
  n = frame(in, 0x82, "abc", 3, KEY);
  CHECK(parse_both(1, 1000, in, n, NULL, out, &ol) == AB_EPROTO);
  CHECK(ol == 8 && out[0] == 0x88 && out[1] == 0x82);
  CHECK(((out[6] ^ out[2]) << 8 | (out[7] ^ out[3])) == 1002);

  /* non-minimal lengths: 16-bit for 100, 64-bit for 65535 */
  uint8_t nm16[4 + 100] = {0x82, 126, 0, 100};
  CHECK(parse_both(1, 1000, nm16, sizeof(nm16), NULL, out, &ol) == AB_EFRAME);
  uint8_t *nm64 = calloc(1, 10 + 65535);
  nm64[0] = 0x82;
  nm64[1] = 127;
  nm64[8] = 0xff;
  nm64[9] = 0xff;
  CHECK(parse_both(1, 1 << 20, nm64, 10 + 65535, NULL, out, &ol) == AB_EFRAME);
  free(nm64);
  /* 64-bit length with its top bit set */
  uint8_t top[10] = {0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0};
  CHECK(parse_both(1, UINT64_MAX, top, sizeof(top), NULL, out, &ol) == AB_EPROTO);
  CHECK(is_close(out, ol, 1002) == 0); /* client closes are masked */
  /* RSV bits, unknown opcode */
  n = frame(in, 0x80 | 0x40 | 2, "a", 1, NULL);
  CHECK(parse_both(1, 1000, in, n, NULL, NULL, NULL) == AB_EPROTO);
  n = frame(in, 0x83, "a", 1, NULL);
  CHECK(parse_both(1, 1000, in, n, NULL, NULL, NULL) == AB_EPROTO);
  n = frame(in, 0x8b, "a", 1, NULL);
  CHECK(parse_both(1, 1000, in, n, NULL, NULL, NULL) == AB_EPROTO);
  /* control frames: > 125 bytes, fragmented */
  n = frame(in, 0x89, big, 126, KEY);
  CHECK(parse_both(0, 1000, in, n, NULL, out, &ol) == AB_EPROTO);
  CHECK(is_close(out, ol, 1002));
  n = frame(in, 0x09, "p", 1, KEY);
  CHECK(parse_both(0, 1000, in, n, NULL, out, &ol) == AB_EPROTO);
  /* continuation with nothing open; a new message inside a fragmented one */
  n = frame(in, 0x80, "c", 1, KEY);
  CHECK(parse_both(0, 1000, in, n, NULL, NULL, NULL) == AB_EPROTO);
  n = frame(in, 0x02, "a", 1, KEY);
  n += frame(in + n, 0x82, "b", 1, KEY);
  CHECK(parse_both(0, 1000, in, n, NULL, NULL, NULL) == AB_EPROTO);
  /* above max_msg: one frame, and fragments adding up: close 1009 */
  n = frame(in, 0x82, big, 101, KEY);
  CHECK(parse_both(0, 100, in, n, NULL, out, &ol) == AB_EFRAME);
  CHECK(is_close(out, ol, 1009));
  n = frame(in, 0x02, big, 60, KEY);
  n += frame(in + n, 0x80, big, 60, KEY);
  CHECK(parse_both(0, 100, in, n, NULL, out, &ol) == AB_EFRAME);
  CHECK(is_close(out, ol, 1009));
  n = frame(in, 0x02, big, 50, KEY);
  n += frame(in + n, 0x80, big, 50, KEY);
  long msgs = 0;
  CHECK(parse_both(0, 100, in, n, &msgs, NULL, NULL) == 1 && msgs == 1);
  /* a close with a 1-byte body, or an invalid code */
  n = frame(in, 0x88, "\x03", 1, KEY);
  CHECK(parse_both(0, 100, in, n, NULL, out, &ol) == AB_EPROTO);
  n = frame(in, 0x88, "\x03\xed", 2, KEY); /* 1005 is never sent */
  CHECK(parse_both(0, 100, in, n, NULL, out, &ol) == AB_EPROTO);
  CHECK(is_close(out, ol, 1002));
  /* text frames are data */
  n = frame(in, 0x81, "text", 4, KEY);
  CHECK(parse_both(0, 100, in, n, &msgs, NULL, NULL) == 1 && msgs == 1);
}

static void test_close(void) {
  pair_t p;
  pair_open(&p, 1000);
  uint8_t in[64];
  size_t n = frame(in, 0x82, "data", 4, KEY);
  n += frame(in + n, 0x88, "\x03\xe8" "bye", 5, KEY);
  size_t used;
  ab_msgview_t m;
  CHECK(ab_codec_ws.server_parse(p.sv, in, n, &used, &m) == 1);
  CHECK(m.len == 4 && memcmp(m.data, "data", 4) == 0);
  CHECK(ab_codec_ws.server_reply(p.sv, m.data, m.len) == 0);
  ob_clear(&p.sob);
  size_t off = used;
  CHECK(ab_codec_ws.server_parse(p.sv, in + off, n - off, &used, &m) == AB_ECLOSED);
  CHECK(is_close(ob_data(&p.sob), ob_len(&p.sob), 1000)); /* the code echoed */
  CHECK_EQ_U64(p.sv->protocol_errors, 0);
  CHECK(ab_codec_ws.server_parse(p.sv, in, n, &used, &m) == AB_ECLOSED && used == 0);
  CHECK(ab_codec_ws.server_reply(p.sv, (const uint8_t *)"x", 1) == AB_ECLOSED);
  CHECK_EQ_U64(ob_len(&p.sob), 4);
  /* a bare close from the server: the client answers with an empty close */
  n = frame(in, 0x88, NULL, 0, NULL);
  CHECK(ab_codec_ws.client_parse(p.cl, in, n, &used, &m) == AB_ECLOSED);
  CHECK(ob_len(&p.cob) == 6 && ob_data(&p.cob)[0] == 0x88 && ob_data(&p.cob)[1] == 0x80);
  pair_close(&p);

  /* we close first: data may still arrive, the answering close ends it */
  pair_open(&p, 1000);
  CHECK(ab_ws_send_close(p.sv, 1005) == AB_EINVAL);
  CHECK(ab_ws_send_close(p.sv, AB_WS_CLOSE_NORMAL) == 0);
  CHECK(is_close(ob_data(&p.sob), ob_len(&p.sob), 1000));
  CHECK(ab_ws_send_close(p.sv, AB_WS_CLOSE_NORMAL) == AB_ECLOSED);
  ob_clear(&p.sob);
  n = frame(in, 0x82, "late", 4, KEY);
  n += frame(in + n, 0x89, "p", 1, KEY); /* no pong once closing */
  n += frame(in + n, 0x88, "\x03\xe8", 2, KEY);
  sink_t k = {.expect = {(const uint8_t *)"late"}, .expect_len = {4}};
  CHECK(feed(p.sv, ab_codec_ws.server_parse, in, n, 0, on_msg, &k) == AB_ECLOSED);
  CHECK(k.got == 1);
  CHECK_EQ_U64(ob_len(&p.sob), 0);
  CHECK_EQ_U64(p.sv->protocol_errors, 0);
  pair_close(&p);
}

/* The server returns a message as 3 fragments with a ping between the
 * first two: one message, one pong carrying the ping's payload. */
static void test_fragments_and_ping(void) {
  static const size_t splits[] = {1, 7, 0};
  for (size_t j = 0; j < N(splits); j++) {
    pair_t p;
    pair_open(&p, 1 << 20);
    uint8_t msg[3000];
    fill(msg, sizeof(msg), 77);
    uint8_t in[4000];
    size_t n = frame(in, 0x02, msg, 1000, NULL);
    n += frame(in + n, 0x89, "ping-data", 9, NULL);
    n += frame(in + n, 0x00, msg + 1000, 1000, NULL);
    n += frame(in + n, 0x80, msg + 2000, 1000, NULL);
    n += frame(in + n, 0x8a, "unsolicited", 11, NULL); /* pong: ignored */
    sink_t k = {.expect = {msg}, .expect_len = {sizeof(msg)}};
    CHECK(feed(p.cl, ab_codec_ws.client_parse, in, n, splits[j], on_msg, &k) == 1);
    CHECK(k.got == 1);
    uint64_t pings, pongs;
    ab_ws_stats(p.cl, &pings, &pongs);
    CHECK(pings == 1 && pongs == 1);
    /* the pong: FIN + pong, masked, 9 bytes that unmask to the ping's */
    const uint8_t *o = ob_data(&p.cob);
    CHECK_EQ_U64(ob_len(&p.cob), 2 + 4 + 9);
    CHECK(o[0] == 0x8a && o[1] == (0x80 | 9));
    uint8_t un[9];
    for (int i = 0; i < 9; i++) un[i] = o[6 + i] ^ o[2 + (i & 3)];
    CHECK(memcmp(un, "ping-data", 9) == 0);
    /* and the server takes that pong without a word */
    size_t used;
    ab_msgview_t m;
    CHECK(ab_codec_ws.server_parse(p.sv, o, ob_len(&p.cob), &used, &m) == 0);
    CHECK_EQ_U64(used, ob_len(&p.cob));
    CHECK_EQ_U64(ob_len(&p.sob), 0);
    CHECK_EQ_U64(p.cl->protocol_errors + p.sv->protocol_errors, 0);
    pair_close(&p);
  }
  /* the server answers a masked ping unmasked */
  pair_t p;
  pair_open(&p, 100);
  uint8_t in[32];
  size_t n = frame(in, 0x89, "hey", 3, KEY), used;
  ab_msgview_t m;
  CHECK(ab_codec_ws.server_parse(p.sv, in, n, &used, &m) == 0);
  const uint8_t pong[5] = {0x8a, 3, 'h', 'e', 'y'};
  CHECK(ob_len(&p.sob) == 5 && memcmp(ob_data(&p.sob), pong, 5) == 0);
  pair_close(&p);
}

/* A whole unmasked message comes out in place; a masked one is copied. */
static void test_in_place(void) {
  pair_t p;
  pair_open(&p, 100);
  uint8_t in[64];
  size_t n = frame(in, 0x82, "0123456789", 10, NULL), used;
  ab_msgview_t m;
  CHECK(ab_codec_ws.client_parse(p.cl, in, n, &used, &m) == 1);
  CHECK(m.data == in + 2 && m.len == 10 && used == n);
  n = frame(in, 0x82, "0123456789", 10, KEY);
  CHECK(ab_codec_ws.server_parse(p.sv, in, n, &used, &m) == 1);
  CHECK(m.len == 10 && memcmp(m.data, "0123456789", 10) == 0 && used == n);
  pair_close(&p);
}

int main(void) {
  test_accept_key();
  test_handshake();
  test_roundtrips();
  test_fresh_keys();
  test_violations();
  test_close();
  test_fragments_and_ping();
  test_in_place();
  TEST_DONE();
}
