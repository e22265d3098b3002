/* h2.h -- HTTP/2 (h2 over TLS with ALPN "h2", h2c with prior knowledge)
 * as a multiplexing codec (codec.h, the mux_* members) on libnghttp2.
 *
 * nghttp2_session does the framing, HPACK and flow control and never
 * touches a socket: bytes in through nghttp2_session_mem_recv() (the parse
 * calls), bytes out through nghttp2_session_mem_send() appended to the
 * connection's output `out` (conn.h), below which the TLS transform sits.
 * This file is only the glue: which stream carries which message, the
 * bodies, the statuses, the counters.
 *
 * Client.  Every message is a stream of its own:
 *   :method POST, :scheme http|https, :authority HOST, :path /echo,
 *   content-length N; the payload as the body.
 * mux_body hands out the body buffer of a stream object the codec keeps
 * (one per stream in flight, grown to the most ever in flight and reused:
 * nothing allocated per message once warm), mux_submit opens the streams
 * and writes their frames.  A reply is whole at its END_STREAM; parse
 * hands replies out one per call in the order they completed, mux_reply
 * names the message.  A stream the peer resets (RST_STREAM), or that ends
 * without a whole reply, is handed out as a failed reply (mux_reply's
 * error).  Response bodies above max_msg are not kept (the reply then has
 * the wrong size: the echo counts it AB_ESIZE).
 *
 * Server.  A request on a stream is whole at its END_STREAM: POST /echo
 * (or /echo?...) is handed out by server_parse as a message, and
 * server_reply answers the oldest request handed out and not yet answered
 * (:status 200, content-length, the payload), so replies may be deferred
 * (pool:N) as long as they come in the order the requests were handed out.
 * Any other method or path is answered 404 with an empty body by the parse
 * itself and is no message.  A request body above max_msg resets its
 * stream (INTERNAL_ERROR) and counts a protocol error.
 *
 * Settings: each side sends, with its first bytes (the first parse or
 * submit), SETTINGS_MAX_CONCURRENT_STREAMS (AB_H2_SERVER_STREAMS),
 * SETTINGS_INITIAL_WINDOW_SIZE AB_H2_WINDOW, SETTINGS_MAX_FRAME_SIZE and
 * SETTINGS_HEADER_TABLE_SIZE at the RFC defaults, and raises its
 * connection window to AB_H2_CONN_WINDOW, unless ab_h2_set_settings()
 * gave others first.
 *
 * Counters (ab_codec_stats_t.mux): RST_STREAM frames received by code;
 * GOAWAY frames received with the last one's last stream id and code;
 * stall_ns, the time this side had request or response body bytes to
 * send and no flow-control window to send them in (measured between
 * pump calls, so to within one read); HEADERS (with CONTINUATION) and
 * DATA frame payload bytes each way; final responses by status class
 * (client); the SETTINGS values sent and the peer's.
 *
 * Errors: a session error (a frame nghttp2 refuses: garbage, a bad
 * preface, a flow-control violation) is AB_EPROTO with nghttp2's reason
 * (ab_codec_why), after the GOAWAY nghttp2 writes has been put in `out`; a
 * GOAWAY from the peer is AB_ECLOSED once the replies it let through have
 * been handed out.  Errors are sticky.
 *
 * Memory: nghttp2 allocates per stream (its stream object, the header
 * block, the outbound frame items).  The session is given an allocator
 * (nghttp2_mem) that keeps freed blocks on per-session free lists by size
 * class, so in the steady state those allocations are list pops, never
 * malloc; the lists hold at most what the busiest moment needed and are
 * freed with the session.
 *
 * Threads: one connection is used by one thread at a time (its loop's, or
 * under shared:N whichever holds its lock).
 */
#ifndef AB_H2_H
#define AB_H2_H

#include <stddef.h>
#include <stdint.h>

#include "proto/codec.h"
#include "proto/http.h"
#include "proto/transport.h"

#define AB_H2_SERVER_STREAMS 4096u
#define AB_H2_WINDOW (1u << 20)        /* bytes, per stream */
#define AB_H2_CONN_WINDOW (16u << 20)  /* bytes, the connection */

extern const ab_codec_vt_t ab_codec_h2;

/* Request mode (h2_request.c): a case's request rotation as HTTP/2 header
 * lists.  The HTTP/1.1 plan of the same requests (http.h) is built too and
 * kept for what both share: the validation, each entry's success set and
 * the per-connection lists (ab_h2_plan_split).  Each entry is
 *   :method, :scheme, :authority (the Host header's value if the entry has
 *   one, else host), :path, the entry's other headers with lower-case
 *   names (connection-specific ones -- Connection, Keep-Alive,
 *   Proxy-Connection, Transfer-Encoding, Upgrade -- dropped, as RFC 9113
 *   8.2.2 requires), content-length (with a body, or for POST/PUT/PATCH)
 * and the body as DATA.  Built once per case, shared read-only by every
 * connection; set on a client codec with ab_codec_set_requests().
 * A reply is any final response; reply_verdict says whether its status is
 * in the entry's success set (else AB_ERR_HTTP(status)); its body is
 * counted, never kept. */
typedef struct {
  void *nv;            /* nghttp2_nv[nnv], pointing into store */
  size_t nnv;
  const uint8_t *body;
  size_t body_len;
  char *store;
} ab_h2_req_t;

typedef struct {
  ab_http_plan_t *http;
  ab_h2_req_t *reqs;   /* http->n entries */
} ab_h2_plan_t;

/* 0 and *out, AB_ENOMEM, or AB_EINVAL with a sentence in err (as
 * ab_http_plan_new). */
int ab_h2_plan_new(const ab_http_request_opts_t *reqs, uint32_t n, const char *host, int tls,
                   ab_h2_plan_t **out, char *err, size_t errlen);
/* As ab_http_plan_split. */
int ab_h2_plan_split(ab_h2_plan_t *p, const uint32_t *counts, uint32_t nconns, char *err,
                     size_t errlen);
void ab_h2_plan_free(ab_h2_plan_t *p);

/* The SETTINGS a connection sends (scenario key h2); 0 in a field = the
 * default above (max_frame_size: 16384; header_table_size: 4096), unless
 * its _set flag says 0 was asked for. */
typedef struct {
  uint32_t max_concurrent_streams, initial_window_size, max_frame_size, header_table_size;
  int initial_window_size_set, header_table_size_set;
} ab_h2_settings_t;

/* Before the connection's first bytes: the SETTINGS to send, written to
 * `out` now with the client's preface.  0, AB_EINVAL when they have been
 * sent already, or AB_EPROTO. */
int ab_h2_set_settings(ab_codec_t *c, const ab_h2_settings_t *s);

/* The :scheme a client sends ("https" for h2, "http" for h2c; the default
 * "http").  0 or AB_EINVAL. */
int ab_h2_set_scheme(ab_codec_t *c, int tls);

#endif
