/* ws.c -- see ws.h.
 *
 * The frame parser reads one frame header at a time (gathered in a 14-byte
 * buffer when it straddles reads), then streams the payload into the
 * control buffer or the message buffer, unmasking on the way.  A whole
 * unmasked single-frame message already in the caller's buffer (the
 * client's usual case) is handed out in place without a copy.
 */
#include "proto/ws.h"

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "base/ab_error.h"
#include "proto/codecs.h"

enum { OP_CONT = 0, OP_TEXT = 1, OP_BINARY = 2, OP_CLOSE = 8, OP_PING = 9, OP_PONG = 10 };

typedef struct {
  int is_client;
  int err;          /* sticky error, 0 while healthy */
  int close_sent;
  uint64_t rng;     /* splitmix64 state for mask keys (client) */
  uint8_t tx_key[4]; /* key of the request between client_begin and _end */
  /* the frame being read */
  uint8_t hdr[14];
  size_t hdr_len;   /* header bytes gathered (header straddling reads) */
  int in_payload;
  uint8_t op, fin, masked;
  uint8_t key[4];
  size_t remaining; /* payload bytes of this frame still to read */
  size_t moff;      /* payload bytes of this frame read (mask phase) */
  /* the message being assembled */
  uint8_t msg_op;   /* opcode of its first frame; 0 when none is open */
  uint8_t *buf;
  size_t cap, len;
  uint8_t ctl[125];
  size_t ctl_len;
  uint64_t pings, pongs_sent;
} ws_t;

static inline ws_t *S(ab_codec_t *c) { return (ws_t *)(c + 1); }

static const uint8_t empty_msg[1];

/* ---- masking and frame writing ------------------------------------------ */

static inline uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static inline void new_key(ws_t *s, uint8_t key[4]) {
  uint32_t k = (uint32_t)(splitmix64(&s->rng) >> 32);
  memcpy(key, &k, 4);
}

/* dst[i] = src[i] ^ key[(phase + i) % 4]; dst may equal src. */
static void mask_copy(uint8_t *dst, const uint8_t *src, size_t n,
                      const uint8_t key[4], size_t phase) {
  uint8_t k[8];
  for (int i = 0; i < 8; i++) k[i] = key[(phase + (size_t)i) & 3];
  uint64_t kw;
  memcpy(&kw, k, 8);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, src + i, 8);
    w ^= kw;
    memcpy(dst + i, &w, 8);
  }
  for (; i < n; i++) dst[i] = src[i] ^ k[i & 7];
}

/* Writes a frame header (minimal length; mask key when key != NULL). */
static size_t put_header(uint8_t *d, uint8_t b0, uint64_t len, const uint8_t *key) {
  uint8_t m = key ? 0x80 : 0;
  size_t n;
  d[0] = b0;
  if (len < 126) {
    d[1] = (uint8_t)(m | len);
    n = 2;
  } else if (len <= 65535) {
    d[1] = m | 126;
    d[2] = (uint8_t)(len >> 8);
    d[3] = (uint8_t)len;
    n = 4;
  } else {
    d[1] = m | 127;
    for (int i = 0; i < 8; i++) d[2 + i] = (uint8_t)(len >> (56 - 8 * i));
    n = 10;
  }
  if (key) {
    memcpy(d + n, key, 4);
    n += 4;
  }
  return n;
}

/* Appends one final frame to c->out (masked with a fresh key by a client). */
static int write_frame(ab_codec_t *c, ws_t *s, uint8_t op, const uint8_t *p, size_t len) {
  uint8_t *d = ab_outbuf_reserve(c->out, 14 + len);
  if (d == NULL) return AB_ENOMEM;
  uint8_t key[4];
  if (s->is_client) new_key(s, key);
  size_t h = put_header(d, 0x80 | op, len, s->is_client ? key : NULL);
  if (len) {
    if (s->is_client) mask_copy(d + h, p, len, key, 0);
    else memcpy(d + h, p, len);
  }
  ab_outbuf_commit(c->out, h + len);
  return 0;
}

/* A protocol error: close with `code` (once), count it, stick. */
static int proto(ab_codec_t *c, ws_t *s, uint16_t code, int err, const char *why) {
  if (c->why[0] == '\0') ab_codec_set_why(c, "%s", why);
  if (!s->close_sent) {
    uint8_t b[2] = {(uint8_t)(code >> 8), (uint8_t)code};
    write_frame(c, s, OP_CLOSE, b, 2); /* out of memory: the close is lost, the error stands */
    s->close_sent = 1;
  }
  s->err = err;
  c->protocol_errors++;
  return err;
}

/* ---- codec ------------------------------------------------------------- */

static int ws_init(ab_codec_t *c, int is_client) {
  ws_t *s = S(c);
  memset(s, 0, sizeof(*s));
  if (c->out == NULL) return AB_EINVAL;
  s->is_client = is_client != 0;
  if (is_client && RAND_bytes((unsigned char *)&s->rng, sizeof(s->rng)) != 1) {
    /* masking keys only have to vary; never fail a connection over it */
    static uint64_t fallback;
    s->rng = (uint64_t)(uintptr_t)c ^ (fallback += UINT64_C(0x9E3779B97F4A7C15));
  }
  return 0;
}

static void ws_free(ab_codec_t *c) {
  ws_t *s = S(c);
  free(s->buf);
  s->buf = NULL;
  s->cap = s->len = 0;
}

static size_t ws_client_begin(ab_codec_t *c, uint8_t *dst, size_t len) {
  ws_t *s = S(c);
  new_key(s, s->tx_key);
  return put_header(dst, 0x80 | OP_BINARY, len, s->tx_key);
}

static size_t ws_client_end(ab_codec_t *c, uint8_t *payload, size_t len, uint8_t *after) {
  (void)after;
  mask_copy(payload, payload, len, S(c)->tx_key, 0);
  return 0;
}

static int ws_server_reply(ab_codec_t *c, const uint8_t *payload, size_t len) {
  ws_t *s = S(c);
  if (s->close_sent) return AB_ECLOSED;
  return write_frame(c, s, OP_BINARY, payload, len);
}

/* Header bytes a frame needs, judged from the first `have` of them. */
static inline size_t hdr_need(const uint8_t *h, size_t have) {
  if (have < 2) return 2;
  size_t n = 2 + ((h[1] & 0x80) ? 4 : 0);
  uint8_t l7 = h[1] & 0x7f;
  return n + (l7 == 126 ? 2 : l7 == 127 ? 8 : 0);
}

static int valid_close_code(unsigned code) {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
         (code >= 3000 && code <= 4999);
}

/* Checks a complete frame header and sets up the frame. */
static int start_frame(ab_codec_t *c, ws_t *s, const uint8_t *h) {
  uint8_t b0 = h[0], b1 = h[1];
  s->fin = b0 >> 7;
  s->op = b0 & 0x0f;
  s->masked = b1 >> 7;
  uint64_t len = b1 & 0x7f;
  size_t p = 2;
  if (b0 & 0x70)
    return proto(c, s, AB_WS_CLOSE_PROTOCOL, AB_EPROTO, "WebSocket frame with reserved bits set");
  if (len == 126) {
    len = (uint64_t)h[2] << 8 | h[3];
    p = 4;
    if (len < 126)
      return proto(c, s, AB_WS_CLOSE_PROTOCOL, AB_EFRAME, "WebSocket frame length not minimally encoded");
  } else if (len == 127) {
    len = 0;
    for (int i = 0; i < 8; i++) len = len << 8 | h[2 + i];
    p = 10;
    if (len >> 63)
      return proto(c, s, AB_WS_CLOSE_PROTOCOL, AB_EPROTO, "WebSocket frame length has its top bit set");
    if (len <= 65535)
      return proto(c, s, AB_WS_CLOSE_PROTOCOL, AB_EFRAME, "WebSocket frame length not minimally encoded");
  }
  /* servers only take masked frames, clients only unmasked ones */
  if (s->masked == s->is_client)
    return proto(c, s, AB_WS_CLOSE_PROTOCOL, AB_EPROTO,
                 s->is_client ? "masked WebSocket frame from the server" : "unmasked WebSocket frame from the client");
  if (s->masked) memcpy(s->key, h + p, 4);
  if (s->op & 8) {
    if (s->op > OP_PONG || !s->fin || len > 125)
      return proto(c, s, AB_WS_CLOSE_PROTOCOL, AB_EPROTO,
                   "WebSocket control frame unknown, fragmented or longer than 125 bytes");
    s->ctl_len = 0;
  } else {
    if (s->op > OP_BINARY || (s->op == OP_CONT) != (s->msg_op != 0))
      return proto(c, s, AB_WS_CLOSE_PROTOCOL, AB_EPROTO,
                   "WebSocket data frame with an unknown opcode or out of sequence");
    if (len > c->max_msg - s->len) {
      ab_codec_set_why(c, "WebSocket message of %llu bytes or more is larger than the payload (%llu)",
                       (unsigned long long)(s->len + len), (unsigned long long)c->max_msg);
      return proto(c, s, AB_WS_CLOSE_TOO_BIG, AB_EFRAME, "");
    }
    if (s->op != OP_CONT) s->msg_op = s->op;
  }
  s->remaining = (size_t)len;
  s->moff = 0;
  return 0;
}

/* Room in the message buffer for n more payload bytes.  It doubles with
 * the bytes that arrive (not with what a frame header claims), up to
 * max_msg. */
static int reserve_msg(ab_codec_t *c, ws_t *s, size_t n) {
  size_t need = s->len + n;
  if (need <= s->cap) return 0;
  size_t want = s->cap ? s->cap * 2 : 4096;
  if (want > c->max_msg) want = (size_t)c->max_msg;
  if (want < need) want = need;
  uint8_t *p = realloc(s->buf, want);
  if (p == NULL) {
    s->err = AB_ENOMEM;
    return AB_ENOMEM;
  }
  s->buf = p;
  s->cap = want;
  return 0;
}

/* A frame's payload is all read: 1 with *msg when a message completed,
 * 0 to go on, or a negative code. */
static int end_frame(ab_codec_t *c, ws_t *s, ab_msgview_t *msg) {
  switch (s->op) {
  case OP_PING:
    s->pings++;
    if (!s->close_sent) {
      if (write_frame(c, s, OP_PONG, s->ctl, s->ctl_len) < 0) return s->err = AB_ENOMEM;
      s->pongs_sent++;
    }
    return 0;
  case OP_PONG:
    return 0;
  case OP_CLOSE: {
    unsigned code = 0;
    if (s->ctl_len == 1)
      return proto(c, s, AB_WS_CLOSE_PROTOCOL, AB_EPROTO, "WebSocket close frame with a 1-byte body");
    if (s->ctl_len >= 2) {
      code = (unsigned)s->ctl[0] << 8 | s->ctl[1];
      if (!valid_close_code(code))
        return proto(c, s, AB_WS_CLOSE_PROTOCOL, AB_EPROTO, "WebSocket close frame with an invalid code");
    }
    if (!s->close_sent) {
      write_frame(c, s, OP_CLOSE, s->ctl, code ? 2 : 0); /* echo the code */
      s->close_sent = 1;
    }
    return s->err = AB_ECLOSED;
  }
  default:
    if (!s->fin) return 0;
    msg->data = s->len ? s->buf : empty_msg;
    msg->len = s->len;
    s->len = 0;
    s->msg_op = 0;
    return 1;
  }
}

static int ws_parse(ab_codec_t *c, const uint8_t *in, size_t avail, size_t *used,
                    ab_msgview_t *msg) {
  ws_t *s = S(c);
  size_t off = 0;
  *used = 0;
  if (s->err) return s->err;
  for (;;) {
    if (!s->in_payload) {
      if (off == avail) break;
      const uint8_t *h;
      size_t rest = avail - off;
      if (s->hdr_len == 0 && rest >= 2 && rest >= hdr_need(in + off, rest)) {
        h = in + off;
        off += hdr_need(h, rest);
      } else {
        for (;;) {
          size_t want = hdr_need(s->hdr, s->hdr_len);
          if (s->hdr_len >= want) break;
          if (off == avail) {
            *used = off;
            return 0;
          }
          size_t n = want - s->hdr_len;
          if (n > avail - off) n = avail - off;
          memcpy(s->hdr + s->hdr_len, in + off, n);
          s->hdr_len += n;
          off += n;
        }
        h = s->hdr;
        s->hdr_len = 0;
      }
      int r = start_frame(c, s, h);
      if (r < 0) {
        *used = off;
        return r;
      }
      if (s->fin && (s->op == OP_BINARY || s->op == OP_TEXT) && !s->masked &&
          avail - off >= s->remaining) {
        /* a whole single-frame message in the caller's buffer */
        msg->data = s->remaining ? in + off : empty_msg;
        msg->len = s->remaining;
        s->msg_op = 0;
        *used = off + s->remaining;
        return 1;
      }
      s->in_payload = 1;
    }
    size_t n = s->remaining;
    if (n > avail - off) n = avail - off;
    if (n) {
      if (!(s->op & 8) && reserve_msg(c, s, n) < 0) {
        *used = off;
        return AB_ENOMEM;
      }
      uint8_t *dst = (s->op & 8) ? s->ctl + s->ctl_len : s->buf + s->len;
      if (s->masked) mask_copy(dst, in + off, n, s->key, s->moff);
      else memcpy(dst, in + off, n);
      if (s->op & 8) s->ctl_len += n;
      else s->len += n;
      s->moff += n;
      s->remaining -= n;
      off += n;
    }
    if (s->remaining) break;
    s->in_payload = 0;
    int r = end_frame(c, s, msg);
    if (r != 0) {
      *used = off;
      return r;
    }
  }
  *used = off;
  return 0;
}

void ab_ws_stats(const ab_codec_t *c, uint64_t *pings, uint64_t *pongs_sent) {
  const ws_t *s = (const ws_t *)(c + 1);
  if (pings) *pings = s->pings;
  if (pongs_sent) *pongs_sent = s->pongs_sent;
}

int ab_ws_send_close(ab_codec_t *c, unsigned code) {
  ws_t *s = S(c);
  if (s->close_sent) return AB_ECLOSED;
  if (!valid_close_code(code)) return AB_EINVAL;
  uint8_t b[2] = {(uint8_t)(code >> 8), (uint8_t)code};
  int r = write_frame(c, s, OP_CLOSE, b, 2);
  if (r == 0) s->close_sent = 1;
  return r;
}

const ab_codec_vt_t ab_codec_ws = {
    .name = "ws",
    .state_size = sizeof(ws_t),
    .max_overhead = 14,
    .init = ws_init,
    .free = ws_free,
    .client_begin = ws_client_begin,
    .client_end = ws_client_end,
    .client_parse = ws_parse,
    .server_parse = ws_parse,
    .server_reply = ws_server_reply,
};

/* ---- handshake ---------------------------------------------------------- */

int ab_ws_accept_key(const char *client_key, char out[AB_WS_ACCEPT_LEN + 1]) {
  size_t kl = strlen(client_key);
  char buf[64 + sizeof(AB_WS_GUID)];
  if (kl > 64) return AB_EINVAL;
  memcpy(buf, client_key, kl);
  memcpy(buf + kl, AB_WS_GUID, sizeof(AB_WS_GUID) - 1);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (EVP_Digest(buf, kl + sizeof(AB_WS_GUID) - 1, md, &mdlen, EVP_sha1(), NULL) != 1 ||
      mdlen != 20)
    return AB_EINVAL;
  EVP_EncodeBlock((unsigned char *)out, md, 20); /* writes 28 chars + NUL */
  return 0;
}

int ab_ws_new_key(char out[AB_WS_KEY_LEN + 1]) {
  unsigned char raw[16];
  if (RAND_bytes(raw, sizeof(raw)) != 1) return AB_EPROTO;
  EVP_EncodeBlock((unsigned char *)out, raw, sizeof(raw));
  return 0;
}

static int has_crlf(const char *s) { return strpbrk(s, "\r\n") != NULL; }

/* snprintf's result as a length, or AB_EINVAL when it did not fit. */
static int fitted(int n, size_t cap) { return n < 0 || (size_t)n >= cap ? AB_EINVAL : n; }

int ab_ws_request(char *buf, size_t cap, const char *host, const char *path,
                  const char *key) {
  if (has_crlf(host) || has_crlf(path) || has_crlf(key)) return AB_EINVAL;
  return fitted(snprintf(buf, cap,
                         "GET %s HTTP/1.1\r\n"
                         "Host: %s\r\n"
                         "Upgrade: websocket\r\n"
                         "Connection: Upgrade\r\n"
                         "Sec-WebSocket-Key: %s\r\n"
                         "Sec-WebSocket-Version: 13\r\n"
                         "\r\n",
                         path, host, key),
                cap);
}

int ab_ws_response(char *buf, size_t cap, const char *accept) {
  if (has_crlf(accept)) return AB_EINVAL;
  return fitted(snprintf(buf, cap,
                         "HTTP/1.1 101 Switching Protocols\r\n"
                         "Upgrade: websocket\r\n"
                         "Connection: Upgrade\r\n"
                         "Sec-WebSocket-Accept: %s\r\n"
                         "\r\n",
                         accept),
                cap);
}

enum { H_OTHER, H_UPGRADE, H_CONNECTION, H_KEY, H_VERSION, H_ACCEPT };
enum {
  G_UPGRADE = 1, G_CONNECTION = 2, G_KEY = 4, G_VERSION = 8, G_ACCEPT = 16,
  G_BAD = 32, G_BAD_VERSION = 64
};

static int lower(int ch) { return ch >= 'A' && ch <= 'Z' ? ch + 32 : ch; }

static int ieq(const char *a, size_t n, const char *b) {
  if (strlen(b) != n) return 0;
  for (size_t i = 0; i < n; i++)
    if (lower((unsigned char)a[i]) != b[i]) return 0;
  return 1;
}

/* Whether the comma-separated list v[0..n) holds `token` (lowercase). */
static int has_token(const char *v, size_t n, const char *token) {
  size_t i = 0;
  while (i < n) {
    while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
    size_t b = i;
    while (i < n && v[i] != ',') i++;
    size_t e = i;
    while (e > b && (v[e - 1] == ' ' || v[e - 1] == '\t')) e--;
    if (e > b && ieq(v + b, e - b, token)) return 1;
  }
  return 0;
}

static int valid_key(const char *v, size_t n) {
  if (n != AB_WS_KEY_LEN || v[22] != '=' || v[23] != '=') return 0;
  for (size_t i = 0; i < 22; i++) {
    char ch = v[i];
    if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
          (ch >= '0' && ch <= '9') || ch == '+' || ch == '/'))
      return 0;
  }
  return 1;
}

static void append(char *dst, size_t cap, size_t *len, const char *at, size_t n) {
  if (*len < cap) {
    size_t k = cap - *len < n ? cap - *len : n;
    memcpy(dst + *len, at, k);
  }
  *len += n; /* keeps counting past cap: a length above cap means cut */
}

static int hs_on_url(llhttp_t *p, const char *at, size_t n) {
  ab_ws_hs_t *h = p->data;
  append(h->path, sizeof(h->path), &h->path_len, at, n);
  return 0;
}

static int hs_on_field(llhttp_t *p, const char *at, size_t n) {
  ab_ws_hs_t *h = p->data;
  append(h->name, sizeof(h->name), &h->name_len, at, n);
  return 0;
}

static int hs_on_field_done(llhttp_t *p) {
  ab_ws_hs_t *h = p->data;
  size_t n = h->name_len;
  h->field = H_OTHER;
  if (n <= sizeof(h->name)) {
    if (ieq(h->name, n, "upgrade")) h->field = H_UPGRADE;
    else if (ieq(h->name, n, "connection")) h->field = H_CONNECTION;
    else if (ieq(h->name, n, "sec-websocket-key")) h->field = H_KEY;
    else if (ieq(h->name, n, "sec-websocket-version")) h->field = H_VERSION;
    else if (ieq(h->name, n, "sec-websocket-accept")) h->field = H_ACCEPT;
  }
  h->name_len = 0;
  h->value_len = 0;
  return 0;
}

static int hs_on_value(llhttp_t *p, const char *at, size_t n) {
  ab_ws_hs_t *h = p->data;
  if (h->field != H_OTHER) append(h->value, sizeof(h->value), &h->value_len, at, n);
  return 0;
}

static int hs_on_value_done(llhttp_t *p) {
  ab_ws_hs_t *h = p->data;
  const char *v = h->value;
  size_t n = h->value_len;
  int field = h->field;
  h->field = H_OTHER;
  if (field == H_OTHER) return 0;
  if (n > sizeof(h->value)) {
    h->got |= G_BAD;
    return 0;
  }
  while (n > 0 && (v[0] == ' ' || v[0] == '\t')) v++, n--;
  while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
  switch (field) {
  case H_UPGRADE:
    if (has_token(v, n, "websocket")) h->got |= G_UPGRADE;
    break;
  case H_CONNECTION:
    if (has_token(v, n, "upgrade")) h->got |= G_CONNECTION;
    break;
  case H_KEY:
    if (h->is_client || (h->got & G_KEY) || !valid_key(v, n)) {
      h->got |= G_BAD;
    } else {
      memcpy(h->key, v, n);
      h->key[n] = 0;
      h->got |= G_KEY;
    }
    break;
  case H_VERSION:
    if (n == 2 && v[0] == '1' && v[1] == '3') h->got |= G_VERSION;
    else h->got |= G_BAD_VERSION;
    break;
  case H_ACCEPT:
    if (h->is_client && !(h->got & G_ACCEPT) && n == AB_WS_ACCEPT_LEN &&
        memcmp(v, h->accept, n) == 0)
      h->got |= G_ACCEPT;
    else
      h->got |= G_BAD;
    break;
  }
  return 0;
}

/* Stop at the end of the headers whatever they say: the rest is frames. */
static int hs_on_headers_complete(llhttp_t *p) {
  (void)p;
  return 2;
}

static const llhttp_settings_t hs_settings = {
    .on_url = hs_on_url,
    .on_header_field = hs_on_field,
    .on_header_value = hs_on_value,
    .on_header_field_complete = hs_on_field_done,
    .on_header_value_complete = hs_on_value_done,
    .on_headers_complete = hs_on_headers_complete,
};

int ab_ws_hs_init(ab_ws_hs_t *h, int is_client, const char *sent_key) {
  memset(h, 0, sizeof(*h));
  h->is_client = is_client;
  if (is_client) {
    if (sent_key == NULL || ab_ws_accept_key(sent_key, h->accept) < 0) return AB_EINVAL;
  }
  llhttp_init(&h->parser, is_client ? HTTP_RESPONSE : HTTP_REQUEST, &hs_settings);
  h->parser.data = h;
  return 0;
}

static int hs_fail(ab_ws_hs_t *h, int status) {
  h->state = -1;
  h->status = status;
  return AB_EPROTO;
}

/* The request or response is complete: is it an acceptable upgrade? */
static int hs_check(ab_ws_hs_t *h) {
  llhttp_t *p = &h->parser;
  int v11 = p->http_major > 1 || (p->http_major == 1 && p->http_minor >= 1);
  if (h->is_client) {
    unsigned need = G_UPGRADE | G_CONNECTION | G_ACCEPT;
    if (p->status_code != 101 || (h->got & need) != need || (h->got & G_BAD) || !v11)
      return hs_fail(h, 400);
  } else {
    unsigned need = G_UPGRADE | G_CONNECTION | G_KEY | G_VERSION;
    if (h->got & G_BAD_VERSION) return hs_fail(h, 426);
    if (p->method != HTTP_GET || (h->got & need) != need || (h->got & G_BAD) || !v11)
      return hs_fail(h, 400);
    int path_ok = (h->path_len == 5 && memcmp(h->path, "/echo", 5) == 0) ||
                  (h->path_len > 5 && memcmp(h->path, "/echo?", 6) == 0);
    if (!path_ok) return hs_fail(h, 404);
  }
  h->state = 1;
  return 1;
}

int ab_ws_hs_feed(ab_ws_hs_t *h, const uint8_t *in, size_t avail, size_t *used) {
  *used = 0;
  if (h->state < 0) return AB_EPROTO;
  if (h->state > 0) return 1;
  if (avail == 0) return 0;
  llhttp_errno_t e = llhttp_execute(&h->parser, (const char *)in, avail);
  if (e == HPE_OK) {
    h->seen += avail;
    *used = avail;
    return h->seen > AB_WS_HS_MAX ? hs_fail(h, 431) : 0;
  }
  if (e != HPE_PAUSED_UPGRADE) return hs_fail(h, 400);
  size_t n = (size_t)((const uint8_t *)llhttp_get_error_pos(&h->parser) - in);
  h->seen += n;
  *used = n;
  if (h->seen > AB_WS_HS_MAX) return hs_fail(h, 431);
  return hs_check(h);
}

int ab_ws_hs_reply(const ab_ws_hs_t *h, char *buf, size_t cap) {
  if (h->is_client || h->state == 0) return AB_EINVAL;
  if (h->state > 0) {
    char accept[AB_WS_ACCEPT_LEN + 1];
    if (ab_ws_accept_key(h->key, accept) < 0) return AB_EINVAL;
    return ab_ws_response(buf, cap, accept);
  }
  const char *text = h->status == 404   ? "Not Found"
                     : h->status == 426 ? "Upgrade Required"
                     : h->status == 431 ? "Request Header Fields Too Large"
                                        : "Bad Request";
  return fitted(snprintf(buf, cap,
                         "HTTP/1.1 %d %s\r\n"
                         "%s"
                         "Content-Length: 0\r\n"
                         "Connection: close\r\n"
                         "\r\n",
                         h->status, text,
                         h->status == 426 ? "Sec-WebSocket-Version: 13\r\n" : ""),
                cap);
}
