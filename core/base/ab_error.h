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
  X(EHTTPSTATUS, -4014, "HTTP response status outside 2xx")

typedef enum {
  AB_OK = 0,
#define AB_ERR_ENUM(name, value, text) AB_##name = value,
  AB_ERRNO_MAP(AB_ERR_ENUM)
#undef AB_ERR_ENUM
} ab_err_t;

/* Short symbolic name ("EPAYLOAD", "ECONNRESET"); never NULL. */
const char *ab_err_name(int err);
/* Human text; never NULL. */
const char *ab_strerror(int err);

#endif
