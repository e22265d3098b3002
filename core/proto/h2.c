/* h2.c -- see h2.h.
 *
 * Stream objects (strm_t) carry one message each: the request body the
 * driver wrote (client) or the request received (server), the reply
 * gathered, and where the object is in its life:
 *
 *   FREE -> PREP (mux_body: in the batch being built)
 *        -> OPEN (mux_submit: a stream id)  -> READY (its reply whole, or
 *           the stream failed: queued for parse) -> OUT (handed out by the
 *           last parse) -> DONE (the next parse) -> FREE once nghttp2 has
 *           closed the stream too (on_stream_close).
 *   server: FREE -> OPEN (HEADERS) -> READY (END_STREAM) -> OUT (handed
 *           out, awaiting server_reply, FIFO) -> DONE (reply submitted)
 *           -> FREE at the stream's close.
 * nghttp2 holds a stream's object as its stream user data; nothing is
 * looked up by id here.
 */
#include "proto/h2.h"

#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "base/ab_error.h"
#include "base/clock.h"
#include "proto/h2_mem.h"

enum { ST_FREE = 0, ST_PREP, ST_OPEN, ST_READY, ST_OUT, ST_DONE };

typedef struct strm_s {
  struct strm_s *next;   /* free list, ready queue, reply FIFO */
  int32_t id;
  uint8_t state, closed, echo, too_big, not_post;
  uint8_t rst;           /* client: the peer sent RST_STREAM for it */
  uint8_t unprocessed;   /* client: above an orderly GOAWAY's last stream id */
  uint32_t err_code;     /* RST_STREAM's code (client: the peer's) */
  char why[96];          /* client: why it ended without a whole reply */
  int status;            /* client: :status of the final response */
  uint64_t seq;
  uint32_t req;          /* request mode: the plan's entry */
  uint8_t *tx;           /* the request body (client) / reply (server) */
  size_t txlen, txoff;
  uint8_t *rx;           /* the reply (client) / request (server) body */
  size_t rxlen, rxcap;
  uint8_t *own;          /* the buffer tx and rx share: tx first half */
  size_t owncap;
} strm_t;


typedef struct {
  nghttp2_session *s;
  int is_client, err;
  uint64_t max_msg;      /* c->max_msg */
  uint64_t too_big;      /* server: requests above max_msg, reset */
  int goaway;            /* the peer's GOAWAY arrived */
  uint32_t goaway_code;
  int32_t goaway_last;
  const char *scheme;
  char host[256];
  char clen[24];         /* content-length of the client's payload */
  size_t clen_for;
  strm_t **all;          /* every stream object made, to free */
  uint32_t nall, capall;
  strm_t *free;
  strm_t *rq_head, *rq_tail; /* READY */
  strm_t *out_head, *out_tail; /* server: OUT, awaiting server_reply */
  strm_t *last;          /* client: OUT */
  strm_t *batch[64];     /* client: PREP, the batch being built */
  strm_t **batchv;       /* batches above 64 */
  uint32_t nbatch, batchcap;
  uint32_t open;         /* client: streams open */
  uint32_t peer_max;     /* the smallest MAX_CONCURRENT_STREAMS seen; 0 */
  const ab_h2_plan_t *plan; /* client, request mode; else NULL */
  int started;           /* our SETTINGS submitted */
  ab_h2_settings_t want; /* what they say */
  ab_codec_stats_t st;   /* st.mux: the counters; peer_max_streams */
  uint32_t tx_pending;   /* streams whose body is not all handed to nghttp2 */
  uint64_t stall_t0;     /* ns: since when tx_pending waits for a window; 0 */
  uint32_t first, nreq;  /* this connection's entries of the plan */
  ab__h2_mem_t mem;      /* nghttp2's allocator (h2_mem.h) */
  char nghttp2_why[100]; /* nghttp2's last error text */
} h2_t;

static inline h2_t *S(ab_codec_t *c) { return (h2_t *)(c + 1); }
static inline const h2_t *CS(const ab_codec_t *c) { return (const h2_t *)(c + 1); }

/* ---- stream objects ----------------------------------------------------- */

static strm_t *strm_take(h2_t *h) {
  strm_t *s = h->free;
  if (s) {
    h->free = s->next;
  } else {
    if (h->nall == h->capall) {
      uint32_t nc = h->capall ? h->capall * 2 : 16;
      strm_t **na = realloc(h->all, nc * sizeof(*na));
      if (na == NULL) return NULL;
      h->all = na;
      h->capall = nc;
    }
    if ((s = calloc(1, sizeof(*s))) == NULL) return NULL;
    h->all[h->nall++] = s;
  }
  uint8_t *own = s->own;
  size_t owncap = s->owncap;
  memset(s, 0, sizeof(*s));
  s->own = own;
  s->owncap = owncap;
  return s;
}

/* Room for a body of tx bytes and a received one of rx bytes. */
static int strm_room(strm_t *s, size_t tx, size_t rx) {
  size_t need = tx + rx;
  if (need > s->owncap) {
    uint8_t *nb = realloc(s->own, need ? need : 1);
    if (nb == NULL) return AB_ENOMEM;
    s->own = nb;
    s->owncap = need;
  }
  s->tx = s->own;
  s->rx = s->own + tx;
  s->rxcap = rx;
  return 0;
}

static void strm_release(h2_t *h, strm_t *s) {
  s->state = ST_FREE;
  s->next = h->free;
  h->free = s;
}

/* Done with by us: back to the free list once nghttp2 is done too. */
static void strm_done(h2_t *h, strm_t *s) {
  if (s->closed) strm_release(h, s);
  else s->state = ST_DONE;
}

static void ready_push(h2_t *h, strm_t *s) {
  s->state = ST_READY;
  s->next = NULL;
  if (h->rq_tail) h->rq_tail->next = s;
  else h->rq_head = s;
  h->rq_tail = s;
}

static strm_t *ready_pop(h2_t *h) {
  strm_t *s = h->rq_head;
  if (s == NULL) return NULL;
  h->rq_head = s->next;
  if (h->rq_head == NULL) h->rq_tail = NULL;
  s->next = NULL;
  return s;
}

/* ---- nghttp2 callbacks -------------------------------------------------- */

static ssize_t read_body(nghttp2_session *session, int32_t id, uint8_t *buf, size_t length,
                         uint32_t *flags, nghttp2_data_source *src, void *ud) {
  (void)session, (void)id;
  strm_t *s = src->ptr;
  size_t n = s->txlen - s->txoff;
  if (n > length) n = length;
  if (n) memcpy(buf, s->tx + s->txoff, n);
  s->txoff += n;
  if (s->txoff == s->txlen) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    h2_t *h = ud;
    if (h->tx_pending) h->tx_pending--;
  }
  return (ssize_t)n;
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *f, void *ud) {
  h2_t *h = ud;
  if (h->is_client || f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
    return 0;
  strm_t *s = strm_take(h);
  if (s == NULL) return NGHTTP2_ERR_CALLBACK_FAILURE;
  s->state = ST_OPEN;
  s->id = f->hd.stream_id;
  nghttp2_session_set_stream_user_data(session, s->id, s);
  return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *ud) {
  (void)flags;
  h2_t *h = ud;
  if (f->hd.type != NGHTTP2_HEADERS) return 0;
  strm_t *s = nghttp2_session_get_stream_user_data(session, f->hd.stream_id);
  if (s == NULL) return 0;
  if (h->is_client) {
    if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
      int st = 0;
      for (size_t i = 0; i < valuelen && i < 3; i++) st = st * 10 + (value[i] - '0');
      s->status = st;
    }
    return 0;
  }
  if (namelen == 5 && memcmp(name, ":path", 5) == 0) {
    s->echo = valuelen >= 5 && memcmp(value, "/echo", 5) == 0 &&
              (valuelen == 5 || value[5] == '?');
  } else if (namelen == 7 && memcmp(name, ":method", 7) == 0) {
    s->not_post = !(valuelen == 4 && memcmp(value, "POST", 4) == 0);
  }
  return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t id, const uint8_t *data,
                         size_t len, void *ud) {
  (void)flags;
  h2_t *h = ud;
  strm_t *s = nghttp2_session_get_stream_user_data(session, id);
  if (s == NULL) return 0;
  size_t need = s->rxlen + len;
  if (need > s->rxcap && !s->too_big) {
    /* a server's request buffer grows to the largest request (the object
     * is reused); a client's has room for max_msg from its start */
    if (h->is_client || need > h->max_msg) {
      s->too_big = 1;
    } else {
      size_t cap = s->rxcap * 2 > need ? s->rxcap * 2 : need;
      if (cap > h->max_msg) cap = h->max_msg;
      if (strm_room(s, 0, cap) < 0) return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
  }
  if (!s->too_big) memcpy(s->rx + s->rxlen, data, len);
  s->rxlen += len;
  return 0;
}

static int submit_404(h2_t *h, strm_t *s) {
  static const nghttp2_nv nv[] = {
      {(uint8_t *)":status", (uint8_t *)"404", 7, 3, NGHTTP2_NV_FLAG_NONE},
      {(uint8_t *)"content-length", (uint8_t *)"0", 14, 1, NGHTTP2_NV_FLAG_NONE},
  };
  s->state = ST_DONE;
  return nghttp2_submit_response(h->s, s->id, nv, 2, NULL);
}

static const nghttp2_settings_id SETTING_IDS[4] = {
    NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE,
    NGHTTP2_SETTINGS_MAX_FRAME_SIZE, NGHTTP2_SETTINGS_HEADER_TABLE_SIZE};

static int rst_kind(uint32_t code) {
  switch (code) {
  case NGHTTP2_NO_ERROR: return AB_RST_NO_ERROR;
  case NGHTTP2_PROTOCOL_ERROR: return AB_RST_PROTOCOL;
  case NGHTTP2_INTERNAL_ERROR: return AB_RST_INTERNAL;
  case NGHTTP2_FLOW_CONTROL_ERROR: return AB_RST_FLOW_CONTROL;
  case NGHTTP2_REFUSED_STREAM: return AB_RST_REFUSED;
  case NGHTTP2_CANCEL: return AB_RST_CANCEL;
  default: return AB_RST_OTHER;
  }
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *f, void *ud) {
  h2_t *h = ud;
  switch (f->hd.type) {
  case NGHTTP2_DATA: h->st.mux.data_bytes_in += f->hd.length; break;
  case NGHTTP2_HEADERS:
  case NGHTTP2_CONTINUATION: h->st.mux.header_bytes_in += f->hd.length; break;
  case NGHTTP2_RST_STREAM: {
    h->st.mux.resets[rst_kind(f->rst_stream.error_code)]++;
    strm_t *r = nghttp2_session_get_stream_user_data(session, f->hd.stream_id);
    if (r != NULL) r->rst = 1;
    break;
  }
  default: break;
  }
  if (f->hd.type == NGHTTP2_SETTINGS && !(f->hd.flags & NGHTTP2_FLAG_ACK)) {
    uint32_t m = nghttp2_session_get_remote_settings(session,
                                                     NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
    if (h->peer_max == 0 || m < h->peer_max) h->peer_max = m;
    for (int i = 0; i < 4; i++)
      h->st.mux.peer[i] = nghttp2_session_get_remote_settings(session, SETTING_IDS[i]);
    h->st.mux.peer_seen = 1;
    return 0;
  }
  if (f->hd.type == NGHTTP2_GOAWAY) {
    h->goaway = 1;
    h->goaway_code = f->goaway.error_code;
    h->goaway_last = f->goaway.last_stream_id;
    h->st.mux.goaways++;
    h->st.mux.goaway_last_stream = (uint64_t)f->goaway.last_stream_id;
    h->st.mux.goaway_code = f->goaway.error_code;
    return 0;
  }
  if ((f->hd.type != NGHTTP2_DATA && f->hd.type != NGHTTP2_HEADERS) ||
      !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
    return 0;
  strm_t *s = nghttp2_session_get_stream_user_data(session, f->hd.stream_id);
  if (s == NULL || s->state != ST_OPEN) return 0;
  if (h->is_client) {
    if (s->status >= 100 && s->status < 600) h->st.mux.responses[s->status / 100]++;
    ready_push(h, s);
    return 0;
  }
  if (!s->echo || s->not_post) return submit_404(h, s) == 0 ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE;
  if (s->too_big) {
    s->state = ST_DONE;
    h->too_big++;
    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
    return 0;
  }
  ready_push(h, s);
  return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t id, uint32_t code, void *ud) {
  h2_t *h = ud;
  strm_t *s = nghttp2_session_get_stream_user_data(session, id);
  if (s == NULL) return 0;
  nghttp2_session_set_stream_user_data(session, id, NULL);
  s->closed = 1;
  if (s->txoff < s->txlen && h->tx_pending) h->tx_pending--; /* never all sent */
  if (h->is_client && h->open > 0) h->open--;
  if (s->state == ST_OPEN && h->is_client) {
    /* no whole reply: reset by the peer (or its stream ended early), or
     * closed by the peer's GOAWAY: a stream above its last stream id was
     * never processed (RFC 9113 6.8) -- after an orderly GOAWAY (NO_ERROR)
     * not a failure, the message was just never served */
    s->err_code = code ? code : NGHTTP2_INTERNAL_ERROR;
    if (s->rst) {
      snprintf(s->why, sizeof(s->why), "a stream reset by the peer: %s",
               nghttp2_http2_strerror(s->err_code));
    } else if (h->goaway && id > h->goaway_last) {
      if (h->goaway_code == NGHTTP2_NO_ERROR) {
        s->unprocessed = 1;
        h->st.mux.goaway_unprocessed++;
      }
      snprintf(s->why, sizeof(s->why), "a stream above the peer's GOAWAY last stream id (GOAWAY %s)",
               nghttp2_http2_strerror(h->goaway_code));
    } else {
      snprintf(s->why, sizeof(s->why), "a stream that ended without a whole reply: %s",
               nghttp2_http2_strerror(s->err_code));
    }
    ready_push(h, s);
    return 0;
  }
  if (s->state == ST_OPEN || s->state == ST_DONE) strm_release(h, s);
  return 0;
}

static int on_error(nghttp2_session *session, int lib_code, const char *msg, size_t len, void *ud) {
  (void)session, (void)lib_code;
  h2_t *h = ud;
  if (len >= sizeof(h->nghttp2_why)) len = sizeof(h->nghttp2_why) - 1;
  memcpy(h->nghttp2_why, msg, len);
  h->nghttp2_why[len] = '\0';
  return 0;
}

static int on_frame_send(nghttp2_session *session, const nghttp2_frame *f, void *ud) {
  (void)session;
  h2_t *h = ud;
  if (f->hd.type == NGHTTP2_GOAWAY && f->goaway.error_code != NGHTTP2_NO_ERROR) {
    /* nghttp2 ends the session for a frame it refused: its code and the
     * debug text it put in the GOAWAY name what was wrong */
    int dl = f->goaway.opaque_data_len > 60 ? 60 : (int)f->goaway.opaque_data_len;
    snprintf(h->nghttp2_why, sizeof(h->nghttp2_why), "our GOAWAY %s%s%.*s%s",
             nghttp2_http2_strerror(f->goaway.error_code), dl ? " (" : "", dl,
             dl ? (const char *)f->goaway.opaque_data : "", dl ? ")" : "");
  }
  if (f->hd.type == NGHTTP2_DATA) h->st.mux.data_bytes_out += f->hd.length;
  else if (f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_CONTINUATION)
    h->st.mux.header_bytes_out += f->hd.length;
  return 0;
}

static nghttp2_session_callbacks *cbs;
static pthread_once_t cbs_once = PTHREAD_ONCE_INIT;

static void make_cbs(void) {
  if (nghttp2_session_callbacks_new(&cbs) != 0) return;
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
  nghttp2_session_callbacks_set_error_callback2(cbs, on_error);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
}

/* ---- the codec ---------------------------------------------------------- */

static int fail(ab_codec_t *c, int err) {
  h2_t *h = S(c);
  h->err = err;
  if (err == AB_EPROTO) c->protocol_errors++;
  return err;
}

/* Everything nghttp2 wants to send, into c->out. */
static int pump_out(ab_codec_t *c) {
  h2_t *h = S(c);
  for (;;) {
    const uint8_t *d;
    ssize_t n = nghttp2_session_mem_send(h->s, &d);
    if (n < 0) {
      ab_codec_set_why(c, "HTTP/2: %s", nghttp2_strerror((int)n));
      return fail(c, AB_EPROTO);
    }
    if (n == 0) {
      /* body bytes left that nghttp2 did not take: no window for them */
      if (h->tx_pending && h->stall_t0 == 0) h->stall_t0 = ab_now_ns();
      else if (!h->tx_pending && h->stall_t0) {
        h->st.mux.stall_ns += ab_now_ns() - h->stall_t0;
        h->stall_t0 = 0;
      }
      return 0;
    }
    if (ab_outbuf_append(c->out, d, (size_t)n) < 0) return fail(c, AB_ENOMEM);
  }
}

static int h2_init(ab_codec_t *c, int is_client) {
  h2_t *h = S(c);
  pthread_once(&cbs_once, make_cbs);
  if (cbs == NULL) return AB_ENOMEM;
  h->is_client = is_client;
  h->max_msg = c->max_msg;
  h->scheme = "http";
  snprintf(h->host, sizeof(h->host), "127.0.0.1");
  h->batchv = h->batch;
  h->batchcap = 64;
  ab__h2_mem_init(&h->mem);
  nghttp2_option *opt = NULL;
  if (nghttp2_option_new(&opt) != 0) return AB_ENOMEM;
  int r = is_client ? nghttp2_session_client_new3(&h->s, cbs, h, opt, &h->mem.mem)
                    : nghttp2_session_server_new3(&h->s, cbs, h, opt, &h->mem.mem);
  nghttp2_option_del(opt);
  if (r != 0) {
    ab__h2_mem_drop(&h->mem);
    return AB_ENOMEM;
  }
  return 0;
}

static int start(ab_codec_t *c);

int ab_h2_set_settings(ab_codec_t *c, const ab_h2_settings_t *s) {
  h2_t *h = S(c);
  if (h->started) return AB_EINVAL;
  h->want = *s;
  /* the connection's first bytes: a client's preface and SETTINGS (its
   * first streams wait for the peer's, mux_room), a server's SETTINGS */
  int r = start(c);
  return r < 0 ? r : c->out ? pump_out(c) : 0;
}

/* Our SETTINGS (and the connection window), once, before anything else. */
static int start(ab_codec_t *c) {
  h2_t *h = S(c);
  h->started = 1;
  const ab_h2_settings_t *w = &h->want;
  uint32_t v[4] = {
      w->max_concurrent_streams ? w->max_concurrent_streams : AB_H2_SERVER_STREAMS,
      w->initial_window_size || w->initial_window_size_set ? w->initial_window_size : AB_H2_WINDOW,
      w->max_frame_size ? w->max_frame_size : 16384,
      w->header_table_size || w->header_table_size_set ? w->header_table_size : 4096,
  };
  nghttp2_settings_entry iv[4];
  for (int i = 0; i < 4; i++) {
    iv[i].settings_id = (int32_t)SETTING_IDS[i];
    iv[i].value = v[i];
    h->st.mux.ours[i] = v[i];
  }
  int r = nghttp2_submit_settings(h->s, NGHTTP2_FLAG_NONE, iv, 4);
  if (r == 0)
    r = nghttp2_session_set_local_window_size(h->s, NGHTTP2_FLAG_NONE, 0, AB_H2_CONN_WINDOW);
  if (r != 0) {
    ab_codec_set_why(c, "HTTP/2: cannot send SETTINGS: %s", nghttp2_strerror(r));
    return fail(c, AB_EPROTO);
  }
  return 0;
}

static void h2_free(ab_codec_t *c) {
  h2_t *h = S(c);
  nghttp2_session_del(h->s);
  h->s = NULL;
  ab__h2_mem_drop(&h->mem);
  for (uint32_t i = 0; i < h->nall; i++) {
    free(h->all[i]->own);
    free(h->all[i]);
  }
  free(h->all);
  if (h->batchv != h->batch) free(h->batchv);
}

static int h2_set_host(ab_codec_t *c, const char *host) {
  if (host == NULL || host[0] == '\0' || strlen(host) >= sizeof(S(c)->host)) return AB_EINVAL;
  snprintf(S(c)->host, sizeof(S(c)->host), "%s", host);
  return 0;
}

int ab_h2_set_scheme(ab_codec_t *c, int tls) {
  S(c)->scheme = tls ? "https" : "http";
  return 0;
}

static uint8_t *h2_mux_body(ab_codec_t *c, uint32_t i, size_t len) {
  h2_t *h = S(c);
  if (i >= h->batchcap) {
    uint32_t nc = h->batchcap * 2;
    while (nc <= i) nc *= 2;
    strm_t **nb = malloc(nc * sizeof(*nb));
    if (nb == NULL) return NULL;
    memcpy(nb, h->batchv, h->nbatch * sizeof(*nb));
    if (h->batchv != h->batch) free(h->batchv);
    h->batchv = nb;
    h->batchcap = nc;
  }
  strm_t *s = strm_take(h);
  if (s == NULL || strm_room(s, len, c->max_msg) < 0) {
    if (s) strm_release(h, s);
    return NULL;
  }
  s->state = ST_PREP;
  s->txlen = len;
  h->batchv[i] = s;
  if (i + 1 > h->nbatch) h->nbatch = i + 1;
  return s->tx;
}

/* Request mode: messages seq .. seq+n-1 are the plan's entries in turn. */
static int submit_planned(ab_codec_t *c, uint64_t seq, uint32_t n) {
  h2_t *h = S(c);
  if (h->err) return h->err;
  if (!h->started && start(c) < 0) return h->err;
  for (uint32_t i = 0; i < n; i++) {
    strm_t *s = strm_take(h);
    if (s == NULL) return fail(c, AB_ENOMEM);
    s->req = h->first + (uint32_t)((seq + i) % h->nreq);
    const ab_h2_req_t *rq = &h->plan->reqs[s->req];
    s->seq = seq + i;
    s->state = ST_OPEN;
    s->tx = (uint8_t *)(uintptr_t)rq->body; /* read only */
    s->txlen = rq->body_len;
    nghttp2_data_provider prd = {.source.ptr = s, .read_callback = read_body};
    int32_t id = nghttp2_submit_request(h->s, NULL, rq->nv, rq->nnv, rq->body ? &prd : NULL, s);
    if (id < 0) {
      ab_codec_set_why(c, "HTTP/2: cannot open a stream: %s", nghttp2_strerror(id));
      strm_release(h, s);
      return fail(c, AB_EPROTO);
    }
    s->id = id;
    h->open++;
    if (s->txlen) h->tx_pending++;
  }
  return pump_out(c);
}

static int h2_set_requests(ab_codec_t *c, const void *plan, uint32_t conn_id) {
  h2_t *h = S(c);
  if (!h->is_client || plan == NULL) return AB_EINVAL;
  const ab_h2_plan_t *p = plan;
  h->plan = p;
  h->first = 0;
  h->nreq = p->http->n;
  if (p->http->nconns > 0) {
    h->first = p->http->conns[conn_id % p->http->nconns].first;
    h->nreq = p->http->conns[conn_id % p->http->nconns].n;
  }
  return 0;
}

static int h2_reply_verdict(const ab_codec_t *c, int *status) {
  const h2_t *h = CS(c);
  const strm_t *s = h->last;
  *status = s ? s->status : 0;
  if (s == NULL || h->plan == NULL) return AB_EINVAL;
  return ab_http_req_ok(&h->plan->http->reqs[s->req], s->status) ? 0 : AB_ERR_HTTP(s->status);
}

static int h2_mux_submit(ab_codec_t *c, uint64_t seq, uint32_t n) {
  h2_t *h = S(c);
  int r = 0;
  if (h->err) r = h->err;
  if (r == 0 && !h->started && start(c) < 0) r = h->err;
  if (h->plan) return submit_planned(c, seq, n);
  for (uint32_t i = 0; i < n && r == 0; i++) {
    strm_t *s = h->batchv[i];
    if (s->txlen != h->clen_for || h->clen[0] == '\0') {
      snprintf(h->clen, sizeof(h->clen), "%zu", s->txlen);
      h->clen_for = s->txlen;
    }
    nghttp2_nv nv[5] = {
        {(uint8_t *)":method", (uint8_t *)"POST", 7, 4, NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE},
        {(uint8_t *)":scheme", (uint8_t *)h->scheme, 7, strlen(h->scheme),
         NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE},
        {(uint8_t *)":authority", (uint8_t *)h->host, 10, strlen(h->host),
         NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE},
        {(uint8_t *)":path", (uint8_t *)"/echo", 5, 5, NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE},
        {(uint8_t *)"content-length", (uint8_t *)h->clen, 14, strlen(h->clen),
         NGHTTP2_NV_FLAG_NO_COPY_NAME},
    };
    nghttp2_data_provider prd = {.source.ptr = s, .read_callback = read_body};
    s->seq = seq + i;
    s->state = ST_OPEN;
    int32_t id = nghttp2_submit_request(h->s, NULL, nv, 5, &prd, s);
    if (id < 0) {
      ab_codec_set_why(c, "HTTP/2: cannot open a stream: %s", nghttp2_strerror(id));
      strm_release(h, s);
      for (uint32_t k = i + 1; k < n; k++) strm_release(h, h->batchv[k]);
      r = fail(c, AB_EPROTO);
      n = 0;
      break;
    }
    s->id = id;
    h->open++;
    if (s->txlen) h->tx_pending++;
  }
  /* what was built and not sent */
  for (uint32_t i = n; i < h->nbatch; i++) strm_release(h, h->batchv[i]);
  h->nbatch = 0;
  if (r < 0) return r;
  return pump_out(c);
}

static uint32_t h2_mux_room(const ab_codec_t *c) {
  const h2_t *h = CS(c);
  /* none before the peer's SETTINGS: its stream cap is not known yet (a
   * stream past it would be refused) */
  if (h->err || h->goaway || !h->st.mux.peer_seen) return 0;
  uint32_t m = nghttp2_session_get_remote_settings(h->s, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
  return m > h->open ? m - h->open : 0;
}

static int h2_mux_reply(const ab_codec_t *c, uint64_t *seq, const char **why) {
  const h2_t *h = CS(c);
  const strm_t *s = h->last;
  if (s == NULL) return AB_ESEQ;
  *seq = s->seq;
  if (s->unprocessed) return 1;
  if (s->err_code) {
    *why = s->why;
    return AB_EPROTO;
  }
  return 0;
}

/* The next whole message for parse to hand out, or 0. */
static int hand_out(ab_codec_t *c, ab_msgview_t *msg) {
  h2_t *h = S(c);
  strm_t *s = ready_pop(h);
  if (s == NULL) return 0;
  s->state = ST_OUT;
  msg->data = s->rx ? s->rx : (const uint8_t *)"";
  msg->len = s->rxlen; /* above rxcap: the wrong size, its bytes not kept */
  if (h->is_client) {
    h->last = s;
  } else {
    if (h->out_tail) h->out_tail->next = s;
    else h->out_head = s;
    h->out_tail = s;
  }
  return 1;
}

static int h2_parse(ab_codec_t *c, const uint8_t *in, size_t avail, size_t *used,
                    ab_msgview_t *msg) {
  h2_t *h = S(c);
  *used = 0;
  if (h->last) { /* the reply the last call handed out is done with */
    strm_t *s = h->last;
    h->last = NULL;
    strm_done(h, s);
  }
  if (hand_out(c, msg)) return 1;
  if (h->err) return h->err;
  if (!h->started && start(c) < 0) return h->err;
  if (avail > 0) {
    ssize_t n = nghttp2_session_mem_recv(h->s, in, avail);
    *used = avail;
    if (n < 0) {
      ab_codec_set_why(c, "HTTP/2: %s", h->nghttp2_why[0] ? h->nghttp2_why : nghttp2_strerror((int)n));
      fail(c, AB_EPROTO);
      pump_out(c);
      return hand_out(c, msg) ? 1 : h->err;
    }
    c->protocol_errors += h->too_big; /* requests reset for their size */
    h->too_big = 0;
    int r = pump_out(c);
    if (r < 0) return r;
    if (!nghttp2_session_want_read(h->s) && !h->goaway) {
      /* nghttp2 ended the session: a frame it refused, its GOAWAY sent */
      ab_codec_set_why(c, "HTTP/2: %s",
                       h->nghttp2_why[0] ? h->nghttp2_why : "the session was terminated");
      fail(c, AB_EPROTO);
    }
  }
  if (hand_out(c, msg)) return 1;
  if (h->goaway && (h->is_client ? h->open == 0 || !nghttp2_session_want_read(h->s) : 0)) {
    ab_codec_set_why(c, "HTTP/2: GOAWAY from the peer (last stream %d, %s)", (int)h->goaway_last,
                     nghttp2_http2_strerror(h->goaway_code));
    /* NO_ERROR: the peer's orderly end (nginx after keepalive_requests),
     * as HTTP/1.1's Connection: close */
    h->err = h->goaway_code == NGHTTP2_NO_ERROR ? AB_EPEERCLOSE : AB_ECLOSED;
  }
  return h->err;
}

static int h2_server_reply(ab_codec_t *c, const uint8_t *payload, size_t len) {
  h2_t *h = S(c);
  strm_t *s = h->out_head;
  if (s == NULL) return AB_ESEQ;
  h->out_head = s->next;
  if (h->out_head == NULL) h->out_tail = NULL;
  s->next = NULL;
  if (s->closed) { /* the client reset it meanwhile */
    strm_release(h, s);
    return 0;
  }
  s->state = ST_DONE;
  if (h->err) return h->err;
  if (len && payload != s->rx) {
    if (len > s->rxcap && strm_room(s, 0, len) < 0) return fail(c, AB_ENOMEM);
    memcpy(s->rx, payload, len);
  }
  s->tx = s->rx;
  s->txlen = len;
  s->txoff = 0;
  char cl[24];
  int cln = snprintf(cl, sizeof(cl), "%zu", len);
  nghttp2_nv nv[2] = {
      {(uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE},
      {(uint8_t *)"content-length", (uint8_t *)cl, 14, (size_t)cln, NGHTTP2_NV_FLAG_NO_COPY_NAME},
  };
  nghttp2_data_provider prd = {.source.ptr = s, .read_callback = read_body};
  int r = nghttp2_submit_response(h->s, s->id, nv, 2, &prd);
  if (r == 0 && len) h->tx_pending++;
  if (r != 0) {
    ab_codec_set_why(c, "HTTP/2: cannot answer a stream: %s", nghttp2_strerror(r));
    return fail(c, AB_EPROTO);
  }
  return pump_out(c);
}

static void h2_stats(const ab_codec_t *c, ab_codec_stats_t *st) {
  const h2_t *h = CS(c);
  st->mux = h->st.mux;
  if (h->stall_t0) st->mux.stall_ns += ab_now_ns() - h->stall_t0;
  if (h->peer_max && (st->peer_max_streams == 0 || h->peer_max < st->peer_max_streams))
    st->peer_max_streams = h->peer_max;
}

static int h2_client_eof(ab_codec_t *c) {
  const h2_t *h = S(c);
  return h->open > 0 ? AB_EPROTO : 0;
}

const ab_codec_vt_t ab_codec_h2 = {
    .name = "h2",
    .state_size = sizeof(h2_t),
    .max_overhead = 0,
    .init = h2_init,
    .free = h2_free,
    .client_parse = h2_parse,
    .server_parse = h2_parse,
    .server_reply = h2_server_reply,
    .set_peer_host = h2_set_host,
    .client_eof = h2_client_eof,
    .stats = h2_stats,
    .mux_body = h2_mux_body,
    .mux_submit = h2_mux_submit,
    .mux_room = h2_mux_room,
    .mux_reply = h2_mux_reply,
    .set_requests = h2_set_requests,
    .reply_verdict = h2_reply_verdict,
};
