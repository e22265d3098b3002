/* http.h -- the HTTP/1.1 echo codec (ab_codec_http), parsed with llhttp.
 *
 * Client.  A request is
 *   POST /echo HTTP/1.1\r\nHost: HOST\r\nContent-Length: N\r\n\r\n + body
 * on a keep-alive connection; several may be written back to back
 * (pipelining).  Responses are read with llhttp: Content-Length or chunked
 * bodies (chunk extensions and trailers are skipped), 1xx interim responses
 * (100 Continue, 103 Early Hints, ...) are not completions, 204 and 304
 * complete at the end of their headers with an empty payload.  Any other
 * final status completes too and is counted (ab_http_stats).  A 101 or a
 * body delimited by EOF is AB_EPROTO; a body above max_msg is AB_EFRAME.
 *
 * Server.  Requests are read with llhttp: POST /echo (or /echo?...) with a
 * Content-Length or chunked body is handed out as a message, and
 * server_reply answers
 *   HTTP/1.1 200 OK\r\nContent-Length: N\r\n
 *   Content-Type: application/octet-stream\r\n\r\n + body.
 * Any other method or path is answered 404 with an empty body by
 * server_parse itself (the connection stays open) and is not a message;
 * an engine that defers replies must therefore not let server_parse run
 * ahead of server_reply by more than the requests it has answered.
 * A request that does not keep the connection alive (Connection: close,
 * HTTP/1.0 without keep-alive) is answered with Connection: close, and the
 * reply to it returns AB_ECLOSED (as does server_parse afterwards): the
 * engine flushes and closes.
 *
 * Client, request mode (ab_http_plan_new, set through the codec's
 * set_requests): the requests are a case's prepared rotation instead of
 * POST /echo -- message seq of a connection is entry seq mod n of its
 * list (the plan's, or the connection's own: ab_http_plan_split), written
 * whole by client_request (no payload).  A response is any final HTTP/1.1
 * response (Content-Length or chunked; no body for HEAD, 1xx, 204, 304),
 * its body read past, never kept; one without a length that would end at
 * EOF is AB_EPROTO.  reply_verdict says whether its status is in the
 * entry's success set (else AB_ERR_HTTP(status): the message failed, the
 * connection goes on).
 *
 * Both sides follow the codecs.h conventions (whole bodies handed out in
 * place, split ones gathered, one message per parse return, sticky errors
 * counted in c->protocol_errors).
 */
#ifndef AB_HTTP_H
#define AB_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "proto/codec.h"
#include "proto/transport.h"

#define AB_HTTP_HOST_MAX 255
/* statuses a success set may name: 100 .. AB_HTTP_STATUS_END - 1 */
#define AB_HTTP_STATUS_END 600

/* One prepared request of a plan. */
typedef struct {
  uint8_t *bytes;     /* the whole request, as sent */
  size_t len;
  int head;           /* HEAD: its responses carry no body */
  uint64_t ok[(AB_HTTP_STATUS_END + 63) / 64]; /* success statuses, a bit each */
} ab_http_req_t;

/* A case's request rotation, built once, shared read-only by every
 * connection of every loop. */
typedef struct {
  ab_http_req_t *reqs;
  uint32_t n;
  size_t max_len;     /* the longest request */
  /* per-connection lists (ab_http_plan_split), else nconns 0 */
  uint32_t nconns;
  struct {
    uint32_t first, n;
  } *conns;
} ab_http_plan_t;

/* Builds the plan of n (>= 1) entries: each request is
 *   METHOD SP PATH SP HTTP/1.1 CRLF
 *   Host: host CRLF            (unless the entry's headers have a Host)
 *   headers
 *   Content-Length: len CRLF   (when there is a body, or the method is
 *                               POST, PUT or PATCH: then 0)
 *   CRLF body
 * Returns 0 and *out, AB_ENOMEM, or AB_EINVAL with a sentence in err
 * (a bad host, method, path, header or status; the scenario check refuses
 * those first). */
int ab_http_plan_new(const ab_http_request_opts_t *reqs, uint32_t n, const char *host,
                     ab_http_plan_t **out, char *err, size_t errlen);
void ab_http_plan_free(ab_http_plan_t *p);

/* Gives each connection its own list: connection k (mod nconns) rotates
 * through the counts[k] entries that follow the lists of connections
 * 0..k-1 (each count >= 1, their sum p->n).  0, AB_ENOMEM, or AB_EINVAL
 * with a sentence in err. */
int ab_http_plan_split(ab_http_plan_t *p, const uint32_t *counts, uint32_t nconns, char *err,
                       size_t errlen);

static inline int ab_http_req_ok(const ab_http_req_t *r, int status) {
  return status >= 0 && status < AB_HTTP_STATUS_END &&
         ((r->ok[status >> 6] >> (status & 63)) & 1) != 0;
}

extern const ab_codec_vt_t ab_codec_http;

/* The Host header the client sends (default "127.0.0.1"; "host:port" is
 * fine).  Returns 0, or AB_EINVAL when empty, longer than AB_HTTP_HOST_MAX
 * or holding spaces or control characters. */
int ab_http_set_host(ab_codec_t *c, const char *host);

/* Client: the peer closed the connection.  Returns AB_EPROTO (and counts a
 * protocol error) when a response was partly read, else 0: whether replies
 * were still owed is the engine's to judge. */
int ab_http_client_eof(ab_codec_t *c);

/* Client: final responses with a status outside 2xx. */
void ab_http_stats(const ab_codec_t *c, uint64_t *non2xx);

#endif
