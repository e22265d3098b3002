/* http.c -- see http.h.
 *
 * llhttp drives both sides.  on_message_complete pauses the parser
 * (HPE_PAUSED) for every message we hand out, so llhttp_execute() returns
 * after exactly one and llhttp_get_error_pos() says where it ended; the
 * parser is resumed at once and the next call goes on from there.  Interim
 * 1xx responses and requests answered 404 do not pause.
 *
 * Bodies: when llhttp hands over a whole Content-Length body in one
 * on_body call, the message points at it in the caller's buffer (the
 * message completes in the same execute call); otherwise the pieces (a
 * body split across reads, chunked bodies) are gathered in buf.
 */
#include "proto/http.h"

#include <string.h>

#include <llhttp.h>

#include "base/ab_error.h"
#include "proto/codecs.h"

#define REQ_LINE "POST /echo HTTP/1.1\r\nHost: "
#define REQ_LEN "\r\nContent-Length: "
#define REQ_PREFIX_MAX (sizeof(REQ_LINE) - 1 + AB_HTTP_HOST_MAX + sizeof(REQ_LEN) - 1)
#define DEC_MAX 20 /* digits of a uint64_t */

#define RESP_200 "HTTP/1.1 200 OK\r\nContent-Length: "
#define RESP_TYPE "\r\nContent-Type: application/octet-stream\r\n"
#define RESP_CLOSE "Connection: close\r\n"
#define RESP_404 "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
#define RESP_MAX (sizeof(RESP_200) + DEC_MAX + sizeof(RESP_TYPE) + sizeof(RESP_CLOSE) + 2)

typedef struct {
  llhttp_t p;
  int is_client;
  int err;               /* sticky error, 0 while healthy */
  int in_msg;            /* client: a response has begun, not completed */
  int done;              /* a message to hand out has completed */
  int echo;              /* server: this request is POST /echo */
  int has_cl;
  uint64_t declared;     /* its Content-Length */
  const uint8_t *body_in; /* whole body in the caller's buffer */
  uint8_t *buf;
  size_t cap, len;
  /* client */
  uint64_t non2xx;
  ab_codec_stats_t statuses; /* non2xx by status (the echo) */
  const ab_http_plan_t *plan;   /* request mode, else NULL (the echo) */
  const ab_http_req_t *reqs;    /* this connection's list: nreq entries */
  uint32_t nreq;
  int seq_known;                /* request mode: reply_seq is set */
  uint64_t reply_seq;           /* the sequence the next final response answers */
  int last_status, last_ok;     /* the last final response */
  int last_close;               /* ... said the server closes after it */
  size_t req_len;
  char req[REQ_PREFIX_MAX];
  /* server */
  char url[8];
  size_t url_len;
  uint64_t returned, replied, close_at; /* close_at: the reply that closes */
} hstate_t;

static inline hstate_t *S(ab_codec_t *c) { return (hstate_t *)(c + 1); }

static const uint8_t empty_msg[1];

static int fail(ab_codec_t *c, int err) {
  S(c)->err = err;
  if (err == AB_EFRAME || err == AB_EPROTO) c->protocol_errors++;
  return err;
}

static size_t put_dec(uint8_t *d, uint64_t v) {
  char t[DEC_MAX];
  size_t n = 0;
  do {
    t[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  for (size_t i = 0; i < n; i++) d[i] = (uint8_t)t[n - 1 - i];
  return n;
}

/* Room for need bytes in buf, doubling but never past limit (max_msg). */
static int grow(hstate_t *s, size_t need, uint64_t limit) {
  if (need <= s->cap) return 0;
  size_t want = s->cap ? s->cap * 2 : 4096;
  if (want > limit) want = (size_t)limit;
  if (want < need) want = need;
  uint8_t *p = realloc(s->buf, want);
  if (p == NULL) return AB_ENOMEM;
  s->buf = p;
  s->cap = want;
  return 0;
}

/* Moves an in-place body into buf (the caller's bytes are about to go). */
static int keep_body(hstate_t *s, uint64_t limit) {
  if (s->body_in == NULL) return 0;
  if (grow(s, s->len, limit) < 0) return AB_ENOMEM;
  memcpy(s->buf, s->body_in, s->len);
  s->body_in = NULL;
  return 0;
}

/* ---- llhttp callbacks ---------------------------------------------------- */

/* The request the next final response answers (request mode). */
static const ab_http_req_t *answered_req(const hstate_t *s) {
  return &s->reqs[s->reply_seq % s->nreq];
}

/* Request mode, a final response's headers: no body for HEAD (1: llhttp
 * skips it), an error for a body only the end of the stream would end. */
static int plan_headers(ab_codec_t *c, llhttp_t *p) {
  hstate_t *s = S(c);
  if (answered_req(s)->head) return 1;
  if (!(p->flags & (F_CHUNKED | F_CONTENT_LENGTH)) && p->status_code != 101) {
    ab_codec_set_why(c, "status %d response without Content-Length or chunked body: it would"
                     " end only with the connection (no keep-alive)", p->status_code);
    s->err = AB_EPROTO;
    return -1;
  }
  return 0;
}

static int on_message_begin(llhttp_t *p) {
  ab_codec_t *c = p->data;
  hstate_t *s = S(c);
  s->in_msg = 1;
  s->len = 0;
  s->body_in = NULL;
  s->url_len = 0;
  s->echo = 0;
  return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n) {
  hstate_t *s = S(p->data);
  if (s->url_len < sizeof(s->url)) {
    size_t k = sizeof(s->url) - s->url_len < n ? sizeof(s->url) - s->url_len : n;
    memcpy(s->url + s->url_len, at, k);
  }
  s->url_len += n;
  return 0;
}

static int on_headers_complete(llhttp_t *p) {
  ab_codec_t *c = p->data;
  hstate_t *s = S(c);
  s->has_cl = (p->flags & F_CONTENT_LENGTH) != 0;
  s->declared = p->content_length;
  if (s->is_client) {
    /* 1xx, 204 and 304 never have a body, whatever their headers say
     * (RFC 9112 6.3); llhttp 8 would read a Content-Length or chunked one.
     * 1: no body, the next message follows.  (101 is refused later.) */
    int st = p->status_code;
    if (st < 100) {
      ab_codec_set_why(c, "status code %d is not an HTTP status", st);
      s->err = AB_EPROTO;
      return -1;
    }
    if ((st < 200 && st != 101) || st == 204 || st == 304) {
      s->has_cl = 0;
      return 1;
    }
    if (s->plan) return plan_headers(c, p);
  } else {
    int path_ok = (s->url_len == 5 && memcmp(s->url, "/echo", 5) == 0) ||
                  (s->url_len > 5 && memcmp(s->url, "/echo?", 6) == 0);
    s->echo = p->method == HTTP_POST && path_ok;
    if (!s->echo) return 0;
  }
  if (s->has_cl && s->declared > c->max_msg) {
    ab_codec_set_why(c, "%s body of %llu bytes is larger than the payload (%llu)",
                     s->is_client ? "response" : "request", (unsigned long long)s->declared,
                     (unsigned long long)c->max_msg);
    s->err = AB_EFRAME;
    return -1;
  }
  return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n) {
  ab_codec_t *c = p->data;
  hstate_t *s = S(c);
  if (n == 0 || (!s->is_client && !s->echo) || s->plan) return 0; /* request mode: read past */
  if (n > c->max_msg - s->len) {
    ab_codec_set_why(c, "%s body of more than %llu bytes is larger than the payload (%llu)",
                     s->is_client ? "response" : "request", (unsigned long long)s->len,
                     (unsigned long long)c->max_msg);
    s->err = AB_EFRAME;
    return HPE_USER;
  }
  if (s->len == 0 && s->has_cl && !(p->flags & F_CHUNKED) && n == s->declared) {
    s->body_in = (const uint8_t *)at;
    s->len = n;
    return 0;
  }
  if (keep_body(s, c->max_msg) < 0 || grow(s, s->len + n, c->max_msg) < 0) {
    s->err = AB_ENOMEM;
    return HPE_USER;
  }
  memcpy(s->buf + s->len, at, n);
  s->len += n;
  return 0;
}

static int client_on_message_complete(llhttp_t *p) {
  hstate_t *s = S(p->data);
  int status = p->status_code;
  s->in_msg = 0;
  if (status < 200) return 0; /* interim: the final response follows */
  s->last_close = !llhttp_should_keep_alive(p);
  if (s->plan) {
    /* request mode: judged per message (reply_verdict), counted by the
     * window, not here */
    s->last_status = status;
    s->last_ok = ab_http_req_ok(answered_req(s), status);
    s->reply_seq++;
  } else if (status >= 300) {
    s->non2xx++;
    ab_codec_stats_t *st = &s->statuses;
    int i = 0;
    while (i < st->nstatus && st->by_status[i].status != status) i++;
    if (i < AB_CODEC_STATUSES) {
      if (i == st->nstatus) {
        st->by_status[i].status = status;
        st->by_status[i].n = 0;
        st->nstatus++;
      }
      st->by_status[i].n++;
    }
  }
  s->done = 1;
  return HPE_PAUSED;
}

static int server_on_message_complete(llhttp_t *p) {
  ab_codec_t *c = p->data;
  hstate_t *s = S(c);
  int keep = llhttp_should_keep_alive(p);
  if (s->echo) {
    s->done = 1;
    s->returned++;
    if (!keep) s->close_at = s->returned;
    return HPE_PAUSED;
  }
  /* not an echo request: answered here, in order, not handed out */
  if (ab_outbuf_append(c->out, RESP_404, sizeof(RESP_404) - 1) < 0 ||
      (!keep && ab_outbuf_append(c->out, RESP_CLOSE, sizeof(RESP_CLOSE) - 1) < 0) ||
      ab_outbuf_append(c->out, "\r\n", 2) < 0) {
    s->err = AB_ENOMEM;
    return HPE_USER;
  }
  if (keep) return 0;
  s->err = AB_ECLOSED;
  return HPE_PAUSED;
}

static const llhttp_settings_t client_settings = {
    .on_message_begin = on_message_begin,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = client_on_message_complete,
};

static const llhttp_settings_t server_settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = server_on_message_complete,
};

/* ---- codec ---------------------------------------------------------------- */

int ab_http_set_host(ab_codec_t *c, const char *host) {
  hstate_t *s = S(c);
  size_t n = strlen(host);
  if (n == 0 || n > AB_HTTP_HOST_MAX) return AB_EINVAL;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)host[i] <= ' ' || (unsigned char)host[i] >= 0x7f) return AB_EINVAL;
  size_t k = sizeof(REQ_LINE) - 1;
  memcpy(s->req, REQ_LINE, k);
  memcpy(s->req + k, host, n);
  memcpy(s->req + k + n, REQ_LEN, sizeof(REQ_LEN) - 1);
  s->req_len = k + n + sizeof(REQ_LEN) - 1;
  return 0;
}

static int http_init(ab_codec_t *c, int is_client) {
  hstate_t *s = S(c);
  memset(s, 0, sizeof(*s));
  s->is_client = is_client != 0;
  if (!is_client && c->out == NULL) return AB_EINVAL;
  llhttp_init(&s->p, is_client ? HTTP_RESPONSE : HTTP_REQUEST,
              is_client ? &client_settings : &server_settings);
  s->p.data = c;
  if (is_client) ab_http_set_host(c, "127.0.0.1");
  return 0;
}

static void http_free(ab_codec_t *c) {
  hstate_t *s = S(c);
  free(s->buf);
  s->buf = NULL;
  s->cap = s->len = 0;
}

static size_t http_client_begin(ab_codec_t *c, uint8_t *dst, size_t len) {
  hstate_t *s = S(c);
  memcpy(dst, s->req, s->req_len);
  size_t n = s->req_len + put_dec(dst + s->req_len, len);
  memcpy(dst + n, "\r\n\r\n", 4);
  return n + 4;
}

static size_t http_client_end(ab_codec_t *c, uint8_t *payload, size_t len, uint8_t *after) {
  (void)c;
  (void)payload;
  (void)len;
  (void)after;
  return 0;
}

static int http_parse(ab_codec_t *c, const uint8_t *in, size_t avail, size_t *used,
                      ab_msgview_t *msg) {
  hstate_t *s = S(c);
  *used = 0;
  if (s->err) return s->err;
  if (avail == 0) return 0;
  s->done = 0;
  llhttp_errno_t e = llhttp_execute(&s->p, (const char *)in, avail);
  if (e == HPE_OK) {
    *used = avail;
    if (keep_body(s, c->max_msg) < 0) return fail(c, AB_ENOMEM);
    return 0;
  }
  if (e != HPE_PAUSED) {
    if (c->why[0] == '\0') {
      const char *why = llhttp_get_error_reason(&s->p);
      ab_codec_set_why(c, "not valid HTTP/1.1: %s", why && why[0] ? why : llhttp_errno_name(e));
    }
    return fail(c, s->err ? s->err : AB_EPROTO);
  }
  *used = (size_t)((const uint8_t *)llhttp_get_error_pos(&s->p) - in);
  llhttp_resume(&s->p);
  if (!s->done) {
    if (s->err) return s->err;
    ab_codec_set_why(c, "the HTTP parser stopped before a whole message");
    return fail(c, AB_EPROTO);
  }
  s->done = 0;
  msg->data = s->body_in ? s->body_in : s->len ? s->buf : empty_msg;
  msg->len = s->len;
  s->body_in = NULL;
  s->len = 0;
  if (!s->is_client && s->close_at == s->returned) s->err = AB_ECLOSED;
  return 1;
}

static int http_server_reply(ab_codec_t *c, const uint8_t *payload, size_t len) {
  hstate_t *s = S(c);
  s->replied++;
  int close = s->close_at != 0 && s->replied == s->close_at;
  uint8_t *d = ab_outbuf_reserve(c->out, RESP_MAX + len);
  if (d == NULL) return AB_ENOMEM;
  size_t n = sizeof(RESP_200) - 1;
  memcpy(d, RESP_200, n);
  n += put_dec(d + n, len);
  memcpy(d + n, RESP_TYPE, sizeof(RESP_TYPE) - 1);
  n += sizeof(RESP_TYPE) - 1;
  if (close) {
    memcpy(d + n, RESP_CLOSE, sizeof(RESP_CLOSE) - 1);
    n += sizeof(RESP_CLOSE) - 1;
  }
  d[n++] = '\r';
  d[n++] = '\n';
  if (len) memcpy(d + n, payload, len);
  ab_outbuf_commit(c->out, n + len);
  return close ? AB_ECLOSED : 0;
}

static int http_set_requests(ab_codec_t *c, const void *plan, uint32_t conn_id) {
  hstate_t *s = S(c);
  if (!s->is_client || plan == NULL) return AB_EINVAL;
  const ab_http_plan_t *p = plan;
  s->plan = p;
  s->reqs = p->reqs;
  s->nreq = p->n;
  if (p->nconns > 0) {
    s->reqs = p->reqs + p->conns[conn_id % p->nconns].first;
    s->nreq = p->conns[conn_id % p->nconns].n;
  }
  return 0;
}

static size_t http_client_request(ab_codec_t *c, uint8_t *dst, uint64_t seq) {
  hstate_t *s = S(c);
  if (!s->seq_known) {
    s->reply_seq = seq;
    s->seq_known = 1;
  }
  const ab_http_req_t *r = &s->reqs[seq % s->nreq];
  memcpy(dst, r->bytes, r->len);
  return r->len;
}

static int http_reply_verdict(const ab_codec_t *c, int *status) {
  const hstate_t *s = (const hstate_t *)(c + 1);
  *status = s->last_status;
  return s->last_ok ? 0 : AB_ERR_HTTP(s->last_status);
}

static int http_closes_after(const ab_codec_t *c) {
  return ((const hstate_t *)(c + 1))->last_close;
}

int ab_http_client_eof(ab_codec_t *c) {
  hstate_t *s = S(c);
  if (s->err) return s->err;
  if (!s->in_msg) return 0;
  ab_codec_set_why(c, "the connection closed in the middle of a response");
  return fail(c, AB_EPROTO);
}

void ab_http_stats(const ab_codec_t *c, uint64_t *non2xx) {
  const hstate_t *s = (const hstate_t *)(c + 1);
  if (non2xx) *non2xx = s->non2xx;
}

static void http_codec_stats(const ab_codec_t *c, ab_codec_stats_t *st) {
  const hstate_t *s = (const hstate_t *)(c + 1);
  *st = s->statuses;
  st->status_errors = s->non2xx;
}

const ab_codec_vt_t ab_codec_http = {
    .name = "http",
    .state_size = sizeof(hstate_t),
    .max_overhead = REQ_PREFIX_MAX + DEC_MAX + 4,
    .init = http_init,
    .free = http_free,
    .client_begin = http_client_begin,
    .client_end = http_client_end,
    .client_parse = http_parse,
    .server_parse = http_parse,
    .server_reply = http_server_reply,
    .set_peer_host = ab_http_set_host,
    .client_eof = ab_http_client_eof,
    .stats = http_codec_stats,
    .set_requests = http_set_requests,
    .client_request = http_client_request,
    .reply_verdict = http_reply_verdict,
    .closes_after = http_closes_after,
};
