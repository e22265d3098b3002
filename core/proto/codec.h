/* codec.h -- how the built-in echo's messages become bytes on a stream and
 * back (docs/protocols.md).  One codec per stream protocol: length-prefixed / raw
 * (framing.h), WebSocket (ws.h), HTTP/1.1 (http.h).  TLS sits below a codec
 * (tls.h): the codec only ever sees plaintext.
 *
 * A codec keeps its per-connection state in an ab_codec_t the engine
 * allocates (size from vt->state_size) and zeroes; vt->init sets it up.
 * Every function is allocation-free on the steady path (a codec may grow
 * its own reassembly buffer up to the largest message and keep it).
 *
 * Client side, one request:
 *   hdr = vt->client_begin(c, dst, len)    writes the header for a payload
 *                                          of len bytes at dst (at most
 *                                          vt->max_overhead bytes) and
 *                                          returns its size;
 *   the engine writes the payload at dst + hdr;
 *   tail = vt->client_end(c, dst + hdr, len, dst + hdr + len)
 *                                          finishes it (WebSocket masks the
 *                                          payload in place) and returns the
 *                                          bytes of trailer written after
 *                                          the payload (0 for all today).
 * Client side, replies: vt->client_parse(c, in, avail, &used, &msg) reads
 *   from in[0..avail) and returns 1 when one reply is complete (msg points
 *   at its payload, contiguous, valid until the next call), 0 when it needs
 *   more bytes, or a negative AB_* code for a protocol error.  *used is the
 *   number of bytes consumed either way (a codec may consume a partial
 *   message into its own buffer).  Control traffic the codec must answer
 *   (a WebSocket ping) is appended by the parse call itself to c->out, the
 *   connection's output buffer (set by ab_codec_create(), codecs.h); the
 *   caller sends what is there after each parse.
 * Server side: vt->server_parse (same contract, one request) and
 *   vt->server_reply(c, payload, len) which appends the response to `out`.
 *
 * What differs between protocols beyond bytes is asked through the vtable
 * too (optional members, NULL = the default), so that drivers never name a
 * codec: the peer's host name a client puts in its requests, the rule for
 * an end of stream, the codec's own counters, whether a request is its own
 * reply (echo straight from the read buffer), whether the peer announced
 * it closes after a reply (HTTP Connection: close), whether every message has
 * exactly max_msg bytes, and the request mode (a codec that writes whole
 * prepared requests and judges each reply: set_requests, client_request,
 * reply_verdict).  Call them through the ab_codec_* helpers below.
 */
#ifndef AB_CODEC_H
#define AB_CODEC_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/ab_error.h"
#include "base/outbuf.h"

typedef struct ab_codec_s ab_codec_t;

typedef struct {
  const uint8_t *data;
  size_t len;
} ab_msgview_t;

/* RST_STREAM kinds a multiplexing codec counts: NO_ERROR, PROTOCOL_ERROR,
 * INTERNAL_ERROR, FLOW_CONTROL_ERROR, REFUSED_STREAM, CANCEL, any other. */
enum { AB_RST_NO_ERROR = 0, AB_RST_PROTOCOL, AB_RST_INTERNAL, AB_RST_FLOW_CONTROL, AB_RST_REFUSED,
       AB_RST_CANCEL, AB_RST_OTHER, AB_CODEC_RST_KINDS };

/* A codec's own counters, summed into the run by the engine. */
#define AB_CODEC_STATUSES 8
typedef struct {
  uint64_t status_errors; /* client: final replies whose status says the
                             server refused (HTTP: outside 2xx) */
  /* ... by status: the first AB_CODEC_STATUSES distinct ones, each counted
   * as its own error code (ab_error.h AB_ERR_HTTP(status)); the rest
   * (status_errors - their sum) count as AB_EHTTPSTATUS */
  struct {
    int status;
    uint64_t n;
  } by_status[AB_CODEC_STATUSES];
  int nstatus;
  /* multiplexing codecs (HTTP/2): the smallest
   * SETTINGS_MAX_CONCURRENT_STREAMS a peer announced (0: none did) */
  uint32_t peer_max_streams;
  /* ... and the connection's own counts (h2.h says what each is) */
  struct {
    uint64_t resets[AB_CODEC_RST_KINDS]; /* RST_STREAM received by code */
    uint64_t goaways, goaway_last_stream, goaway_code;
    uint64_t goaway_unprocessed; /* streams above an orderly GOAWAY's last id */
    uint64_t stall_ns;
    uint64_t header_bytes_out, header_bytes_in, data_bytes_out, data_bytes_in;
    uint64_t responses[6];               /* by status class: [st / 100] */
    uint32_t ours[4], peer[4];           /* SETTINGS sent and received */
    int peer_seen;
  } mux;
} ab_codec_stats_t;

typedef struct {
  const char *name;
  size_t state_size;   /* bytes of per-connection state after ab_codec_t */
  size_t max_overhead; /* largest header + trailer of one client request */
  int (*init)(ab_codec_t *c, int is_client);
  void (*free)(ab_codec_t *c);
  size_t (*client_begin)(ab_codec_t *c, uint8_t *dst, size_t len);
  size_t (*client_end)(ab_codec_t *c, uint8_t *payload, size_t len, uint8_t *after);
  int (*client_parse)(ab_codec_t *c, const uint8_t *in, size_t avail,
                      size_t *used, ab_msgview_t *msg);
  int (*server_parse)(ab_codec_t *c, const uint8_t *in, size_t avail,
                      size_t *used, ab_msgview_t *msg);
  int (*server_reply)(ab_codec_t *c, const uint8_t *payload, size_t len);
  /* Optional.  Client: the peer's name its requests carry (HTTP Host).
   * 0 or AB_EINVAL. */
  int (*set_peer_host)(ab_codec_t *c, const char *host);
  /* Optional.  Client: the peer ended the stream here.  AB_EPROTO (a
   * protocol error, counted) when that cuts a reply short, else 0. */
  int (*client_eof)(ab_codec_t *c);
  /* Optional.  Adds the codec's counters to *st. */
  void (*stats)(const ab_codec_t *c, ab_codec_stats_t *st);
  /* Optional: request mode (HTTP's request key).  Client: from now on the
   * requests are the prepared ones of `plan` (the codec's own type, built
   * once per case: http.h) for connection conn_id, not payloads.  0 or
   * AB_EINVAL. */
  int (*set_requests)(ab_codec_t *c, const void *plan, uint32_t conn_id);
  /* Request mode: writes message seq's request whole at dst (room for the
   * plan's longest) and returns its size.  Sequences are the window's:
   * consecutive, the same one again after a batch that was never sent. */
  size_t (*client_request)(ab_codec_t *c, uint8_t *dst, uint64_t seq);
  /* Request mode: the reply the last parse returned counts as a success
   * (0) or as a failed message of error class < 0 (AB_ERR_HTTP(status));
   * *status is its status code (0 when none). */
  int (*reply_verdict)(const ab_codec_t *c, int *status);
  /* Optional.  Client: the reply the last parse returned said the peer
   * closes the connection after it (HTTP Connection: close, HTTP/1.0
   * without keep-alive): 1, else 0. */
  int (*closes_after)(const ab_codec_t *c);
  /* Optional: a multiplexing codec (HTTP/2, h2.h): every request is a
   * stream of its own and replies come back in any order.  The driver
   * builds no request bytes: per batch it writes each echo payload into
   * mux_body(c, i, len) (the i-th request of the batch; NULL: out of
   * memory; request mode: not called), stamps the batch, then
   * mux_submit(c, seq, n) opens streams for messages seq .. seq+n-1 (n 0:
   * the batch is dropped) and appends their frames to c->out (0 or an
   * error).  mux_room: how many streams may be opened now (the peer's
   * SETTINGS_MAX_CONCURRENT_STREAMS less those open).  After a parse
   * returned 1, mux_reply says which message the reply answers (*seq) and
   * returns 0, or the error class of a stream that failed (reset by the
   * peer), its reason (a sentence) in *why; or 1: the peer never processed
   * that message (HTTP/2: a stream above an orderly GOAWAY's last stream
   * id), no reply and no error -- the driver takes it back as never sent. */
  uint8_t *(*mux_body)(ab_codec_t *c, uint32_t i, size_t len);
  int (*mux_submit)(ab_codec_t *c, uint64_t seq, uint32_t n);
  uint32_t (*mux_room)(const ab_codec_t *c);
  int (*mux_reply)(const ab_codec_t *c, uint64_t *seq, const char **why);
  int request_is_reply; /* server_reply(msg) appends exactly the request's
                           bytes: a server may echo them in place */
  int fixed_size;       /* every message is exactly max_msg bytes */
  /* AB_FRAMES_LENGTH or AB_FRAMES_RAW: every message is [prefix] payload
   * as ab_frame_cut() (framing.h) cuts it, client_begin writes just the
   * prefix, client_end nothing, and the codec keeps no state between
   * messages, so a driver that keeps its own input may cut and build the
   * frames itself (it still calls parse for a frame ab_frame_cut refuses,
   * so the error is counted and worded by the codec).  0: use the
   * functions. */
  int plain_frames;
} ab_codec_vt_t;

enum { AB_FRAMES_CODEC = 0, AB_FRAMES_LENGTH = 1, AB_FRAMES_RAW = 2 };

struct ab_codec_s {
  const ab_codec_vt_t *vt;
  ab_outbuf_t *out;    /* where control frames and server replies go */
  uint64_t max_msg;    /* largest payload accepted */
  uint64_t protocol_errors;
  /* Why the last parse failed, in the protocol's own words ("" when no
   * reason was given): a failure's text comes from the codec that saw it,
   * never from a generic error code (ab_codec_why). */
  char why[120];
  /* codec state follows (vt->state_size bytes) */
};

/* Records why c failed (printf-style); failure paths only. */
static inline void ab_codec_set_why(ab_codec_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void ab_codec_set_why(ab_codec_t *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->why, sizeof(c->why), fmt, ap);
  va_end(ap);
}

/* The reason of c's last failure, "" when none (c may be NULL). */
static inline const char *ab_codec_why(const ab_codec_t *c) { return c ? c->why : ""; }

static inline int ab_codec_set_peer_host(ab_codec_t *c, const char *host) {
  return c->vt->set_peer_host ? c->vt->set_peer_host(c, host) : 0;
}

static inline int ab_codec_client_eof(ab_codec_t *c) {
  return c->vt->client_eof ? c->vt->client_eof(c) : 0;
}

static inline int ab_codec_set_requests(ab_codec_t *c, const void *plan, uint32_t conn_id) {
  return c->vt->set_requests ? c->vt->set_requests(c, plan, conn_id) : AB_EINVAL;
}

static inline int ab_codec_closes_after(const ab_codec_t *c) {
  return c->vt->closes_after ? c->vt->closes_after(c) : 0;
}

static inline void ab_codec_stats(const ab_codec_t *c, ab_codec_stats_t *st) {
  if (c->vt->stats) c->vt->stats(c, st);
}

#endif
