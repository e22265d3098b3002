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
 * Both sides follow the codecs.h conventions (whole bodies handed out in
 * place, split ones gathered, one message per parse return, sticky errors
 * counted in c->protocol_errors).
 */
#ifndef AB_HTTP_H
#define AB_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "proto/codec.h"

#define AB_HTTP_HOST_MAX 255

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
