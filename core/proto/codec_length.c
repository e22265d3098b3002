/* codec_length.c -- the length-prefixed and raw codecs (codecs.h).
 *
 * Both sides of both codecs parse the same way: a prefix (length codec
 * only), then that many payload bytes.  A message whose bytes are all in
 * the caller's buffer is handed out in place; one that straddles reads is
 * gathered in the reassembly buffer, so the caller never has to keep more
 * than one read's worth of bytes.
 */
#include <string.h>

#include "base/ab_error.h"
#include "proto/codecs.h"
#include "proto/framing.h"

typedef struct {
  int raw;          /* fixed-size messages of max_msg bytes, no prefix */
  int err;          /* sticky error, 0 while healthy */
  uint8_t hdr[AB_PREFIX_MAX];
  size_t hdr_len;   /* prefix bytes gathered so far (split prefix) */
  int in_body;      /* gathering payload into buf */
  size_t need;      /* payload bytes of the current message */
  size_t have;
  uint8_t *buf;
  size_t cap;
} lstate_t;

static inline lstate_t *S(ab_codec_t *c) { return (lstate_t *)(c + 1); }

static const uint8_t empty_msg[1];

static int fail(ab_codec_t *c, int err) {
  S(c)->err = err;
  if (err == AB_EFRAME || err == AB_EPROTO) c->protocol_errors++;
  return err;
}

static int init_common(ab_codec_t *c, int raw) {
  lstate_t *s = S(c);
  memset(s, 0, sizeof(*s));
  s->raw = raw;
  if (raw && (c->max_msg == 0 || c->max_msg > SIZE_MAX / 2)) return AB_EINVAL;
  return 0;
}

static int length_init(ab_codec_t *c, int is_client) {
  (void)is_client;
  return init_common(c, 0);
}

static int raw_init(ab_codec_t *c, int is_client) {
  (void)is_client;
  return init_common(c, 1);
}

static void codec_free(ab_codec_t *c) {
  lstate_t *s = S(c);
  free(s->buf);
  s->buf = NULL;
  s->cap = 0;
}

/* Size of the prefix whose first byte is b. */
static inline size_t prefix_len(uint8_t b) { return b < 254 ? 1 : b == 254 ? 3 : 9; }

/* A refused prefix p (complete): says which rule it broke. */
static int prefix_fail(ab_codec_t *c, const uint8_t *p, size_t n, int err) {
  uint64_t v;
  if (err == AB_EFRAME && ab_prefix_decode(p, n, UINT64_MAX, &v) > 0)
    ab_codec_set_why(c, "length prefix of %llu bytes is larger than the payload (%llu)",
                     (unsigned long long)v, (unsigned long long)c->max_msg);
  else if (err == AB_EFRAME)
    ab_codec_set_why(c, "length prefix not minimally encoded");
  return fail(c, err);
}

static int parse(ab_codec_t *c, const uint8_t *in, size_t avail, size_t *used,
                 ab_msgview_t *msg) {
  lstate_t *s = S(c);
  size_t off = 0;
  *used = 0;
  if (s->err) return s->err;
  if (avail == 0) return 0;
  if (!s->in_body) {
    if (s->raw) {
      s->need = (size_t)c->max_msg;
    } else {
      uint64_t len;
      int r;
      if (s->hdr_len == 0 && avail >= prefix_len(in[0])) {
        r = ab_prefix_decode(in, avail, c->max_msg, &len);
        if (r < 0) return prefix_fail(c, in, avail, r);
        off = (size_t)r;
      } else {
        /* the prefix straddles reads: gather exactly its bytes */
        if (s->hdr_len == 0) s->hdr[s->hdr_len++] = in[off++];
        size_t want = prefix_len(s->hdr[0]);
        size_t n = want - s->hdr_len;
        if (n > avail - off) n = avail - off;
        memcpy(s->hdr + s->hdr_len, in + off, n);
        s->hdr_len += n;
        off += n;
        if (s->hdr_len < want) {
          *used = off;
          return 0;
        }
        r = ab_prefix_decode(s->hdr, s->hdr_len, c->max_msg, &len);
        if (r < 0) return prefix_fail(c, s->hdr, s->hdr_len, r);
        s->hdr_len = 0;
      }
      s->need = (size_t)len;
    }
    if (avail - off >= s->need) {
      msg->data = s->need ? in + off : empty_msg;
      msg->len = s->need;
      *used = off + s->need;
      return 1;
    }
    s->have = 0;
    s->in_body = 1;
  }
  size_t n = s->need - s->have;
  if (n > avail - off) n = avail - off;
  if (s->have + n > s->cap) {
    /* grow with the bytes that arrive, not with what the prefix claims */
    size_t want = s->cap ? s->cap * 2 : 4096;
    if (want > s->need) want = s->need;
    if (want < s->have + n) want = s->have + n;
    uint8_t *p = realloc(s->buf, want);
    if (p == NULL) {
      *used = off;
      return fail(c, AB_ENOMEM);
    }
    s->buf = p;
    s->cap = want;
  }
  if (n) memcpy(s->buf + s->have, in + off, n);
  s->have += n;
  off += n;
  *used = off;
  if (s->have < s->need) return 0;
  s->in_body = 0;
  msg->data = s->buf;
  msg->len = s->need;
  return 1;
}

static size_t length_begin(ab_codec_t *c, uint8_t *dst, size_t len) {
  (void)c;
  return ab_prefix_encode(dst, len);
}

static size_t raw_begin(ab_codec_t *c, uint8_t *dst, size_t len) {
  (void)c;
  (void)dst;
  (void)len;
  return 0;
}

static size_t no_trailer(ab_codec_t *c, uint8_t *payload, size_t len, uint8_t *after) {
  (void)c;
  (void)payload;
  (void)len;
  (void)after;
  return 0;
}

static int length_reply(ab_codec_t *c, const uint8_t *payload, size_t len) {
  uint8_t *dst = ab_outbuf_reserve(c->out, AB_PREFIX_MAX + len);
  if (dst == NULL) return AB_ENOMEM;
  size_t h = ab_prefix_encode(dst, len);
  if (len) memcpy(dst + h, payload, len);
  ab_outbuf_commit(c->out, h + len);
  return 0;
}

static int raw_reply(ab_codec_t *c, const uint8_t *payload, size_t len) {
  if (len != c->max_msg) return AB_EINVAL;
  return ab_outbuf_append(c->out, payload, len);
}

const ab_codec_vt_t ab_codec_length = {
    .name = "length",
    .state_size = sizeof(lstate_t),
    .max_overhead = AB_PREFIX_MAX,
    .init = length_init,
    .free = codec_free,
    .client_begin = length_begin,
    .client_end = no_trailer,
    .client_parse = parse,
    .server_parse = parse,
    .server_reply = length_reply,
    .request_is_reply = 1,
    .plain_frames = AB_FRAMES_LENGTH,
};

const ab_codec_vt_t ab_codec_raw = {
    .name = "raw",
    .state_size = sizeof(lstate_t),
    .max_overhead = 0,
    .init = raw_init,
    .free = codec_free,
    .client_begin = raw_begin,
    .client_end = no_trailer,
    .client_parse = parse,
    .server_parse = parse,
    .server_reply = raw_reply,
    .request_is_reply = 1,
    .fixed_size = 1,
    .plain_frames = AB_FRAMES_RAW,
};
