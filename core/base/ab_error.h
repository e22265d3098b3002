/* ab_error.h -- the one error convention of the C core.
 *
 * Every function that can fail returns 0 on success or a negative code.
 * Codes below -4000 are arkbench's own; anything else is a negated errno
 * value as libuv reports it (uv_err_name() names those, e.g. "ECONNRESET").
 * ab_err_name() / ab_strerror() cover both.  errno becomes text exactly once,
 * where the failure is recorded (the error counters of a run).
 */
#ifndef AB_ERROR_H
#define AB_ERROR_H

#include <stddef.h>

#define AB_ERRNO_MAP(X)                                                       \
  X(EINVAL, -4001, "invalid argument")                                        \
  X(ENOMEM, -4002, "out of memory")                                           \
  X(EAGAIN, -4003, "need more input")                                         \
  X(EPROTO, -4004, "protocol error")                                          \
  X(EFRAME, -4005, "non-minimal or oversized length prefix")                  \
  X(EMAGIC, -4006, "message header has a wrong magic")                        \
  X(EPAYLOAD, -4007, "echoed payload differs from what was sent")             \
  X(ESEQ, -4008, "reply for a message that is not in flight")                 \
  X(ESIZE, -4009, "reply has the wrong size")                                 \
  X(ETIMEDOUT, -4010, "timed out")                                            \
  X(ECLOSED, -4011, "peer closed the connection")                                \
  X(ECONFIG, -4012, "bad run configuration")                                  \
  X(EINTR, -4013, "interrupted")                                              \
  X(EHTTPSTATUS, -4014, "HTTP response status outside 2xx")                   \
  X(EPEERCLOSE, -4015, "the peer closes the connection after this reply")                \
  X(ECONNTIMEDOUT, -4016, "connect got no answer within the connect timeout")

typedef enum {
  AB_OK = 0,
#define AB_ERR_ENUM(name, value, text) AB_##name = value,
  AB_ERRNO_MAP(AB_ERR_ENUM)
#undef AB_ERR_ENUM
} ab_err_t;

/* An HTTP response status outside 2xx as an error code: one code per
 * status (100..999), so that each status is counted as its own class. */
#define AB_ERR_HTTP_BASE (-5000)
#define AB_ERR_HTTP(status) (AB_ERR_HTTP_BASE - (int)(status))
/* The status of an AB_ERR_HTTP code; 0 for any other code. */
static inline int ab_err_http_status(int err) {
  int st = AB_ERR_HTTP_BASE - err;
  return st >= 100 && st <= 999 ? st : 0;
}

/* Short symbolic name ("EPAYLOAD", "ECONNRESET"; "EHTTPSTATUS" for every
 * AB_ERR_HTTP code); never NULL. */
const char *ab_err_name(int err);
/* Human text; never NULL. */
const char *ab_strerror(int err);

/* ---- error classes -------------------------------------------------------
 *
 * What the run object counts (docs/run-object.md, `errors`): every failure
 * the PEER caused is one of these classes, declared once here.
 * AB_ERROR_CLASSES(X) calls X(key, kind, doc) once per class:
 *   key   the run object's key in `errors` (an errno-style name; HTTP
 *         statuses are "HTTP <status>", one key per status: the row's key
 *         is the pattern "HTTP <status>");
 *   kind  what the peer did, one word per group of keys: closed, reset,
 *         refused, unreachable, timed_out, bad_reply, http_status;
 *   doc   the one-line meaning docs/run-object.md shows (a spec compares the
 *         doc's class rows with this table through core.error_classes()).
 * A failure of our own (out of memory, a bad configuration, a script error,
 * any errno not in this table) is no class of the peer's: it is counted
 * apart, in `local_errors`, under its errno-style name (ab_err_name).
 */
#define AB_ERROR_CLASSES(X)                                                                     \
  X("ECLOSED", "closed",                                                                        \
    "closed by peer: the peer ended the connection in order (TCP FIN, TLS close_notify, "       \
    "WebSocket close, HTTP `Connection: close`) while replies were owed; a reset that follows " \
    "the peer's FIN (EPIPE on our write) is still this class")                                  \
  X("ECONNRESET", "reset",                                                                      \
    "reset: the peer aborted the connection (a RST before any orderly close; on a server, "     \
    "also a client's RST met by a write after its FIN, EPIPE)")                                 \
  X("ECONNREFUSED", "refused", "refused: nothing listens at the target (connect answered RST)")  \
  X("EHOSTUNREACH", "unreachable", "unreachable: no route to the target host")                  \
  X("ENETUNREACH", "unreachable", "unreachable: no route to the target network")                \
  X("ETIMEDOUT", "timed_out",                                                                   \
    "timed out: a handshake or reply did not come within `timeout`")                            \
  X("ECONNTIMEDOUT", "timed_out",                                                               \
    "connect timed out: a TCP connect got no answer within `connect_timeout` (a blackholed "    \
    "address, a listener whose backlog is full)")                                               \
  X("EPROTO", "bad_reply",                                                                      \
    "bad reply: the protocol's rules were broken (TLS alert or bad record, HTTP or WebSocket "  \
    "syntax, premature EOF); the codec's or OpenSSL's reason is in `error_reasons`")            \
  X("EFRAME", "bad_reply", "bad reply: a length prefix that is not minimal or is oversized")   \
  X("EMAGIC", "bad_reply", "bad reply: a message header with a wrong magic")                    \
  X("EPAYLOAD", "bad_reply", "bad reply: the echoed payload differs from what was sent")        \
  X("ESEQ", "bad_reply", "bad reply: a reply for a message that is not in flight")              \
  X("ESIZE", "bad_reply", "bad reply: a reply of the wrong size")                               \
  X("HTTP <status>", "http_status",                                                             \
    "HTTP status: final responses with that status outside 2xx (e.g. `HTTP 404`), one key per " \
    "status (`HTTP other`: statuses past the 8th distinct one of a connection)")

/* Which side of a connection saw a failure (ab_err_stream_end). */
enum { AB_SIDE_CLIENT = 1, AB_SIDE_SERVER = 2 };

/* The code a stream connection's end is counted as, from the code the
 * socket, TLS or the codec reported (pure; the same peer behaviour always
 * gives the same code):
 *   UV_EOF, AB_ECLOSED          -> AB_ECLOSED (closed by peer);
 *   UV_EPIPE on the client side -> AB_ECLOSED: Linux resets a socket in
 *     CLOSE_WAIT (the peer's FIN already received) with EPIPE, never
 *     ECONNRESET, and a socket's first error is the one kept (sockio.h):
 *     the server closed first, and the RST is only its kernel's answer to
 *     requests that reached a closed socket;
 *   UV_EPIPE on the server side -> UV_ECONNRESET: the client half-closed
 *     (still owed its replies) and then reset; our write met the reset;
 *   anything else unchanged. */
int ab_err_stream_end(int err, int side);

/* 1 when err is a class of the peer's (AB_ERROR_CLASSES), 0 when it is a
 * failure of our own (counted in `local_errors`). */
int ab_err_is_peer(int err);

/* The `errors` key of err ("ECONNRESET", "HTTP 404", "HTTP other" for
 * AB_EHTTPSTATUS; UV_EPIPE counts as "ECONNRESET": a write that met a
 * reset) when it is the peer's, else its
 * `local_errors` key (ab_err_name).  Written into buf[0..cap); returns buf. */
const char *ab_err_class_key(int err, char *buf, size_t cap);

#endif
