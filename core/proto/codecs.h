/* codecs.h -- the stream codecs (codec.h) and how to make one.
 *
 *   ab_codec_length   length-prefixed messages (framing.h: 1/3/9-byte
 *                     minimal prefix; a non-minimal prefix or one above
 *                     max_msg is AB_EFRAME).  max_overhead 9.
 *   ab_codec_raw      fixed-size messages on a bare stream: every message
 *                     is exactly max_msg bytes (max_msg >= 1, else init
 *                     fails with AB_EINVAL).  max_overhead 0.
 *   ab_codec_ws       RFC 6455 binary frames (ws.h).
 *   ab_codec_http     HTTP/1.1 POST /echo, or prepared requests to any
 *                     server (request mode) (http.h).
 *   ab_codec_h2       HTTP/2, a stream per message (h2.h): a multiplexing
 *                     codec (codec.h mux_*), built on nghttp2.
 *
 * What every codec here does the same way:
 *  - parse (client_parse / server_parse) consumes every byte it is given
 *    unless it stops at the end of a message: a return of 0 always has
 *    *used == avail (partial headers and payloads are kept in the codec's
 *    state), a return of 1 has *used = the bytes up to the end of that one
 *    message, and the caller presents the rest again.  So input may arrive
 *    split anywhere, and several messages may arrive in one buffer.
 *  - A message that arrives whole in one buffer (and needs no unmasking) is
 *    handed out in place: msg->data then points into `in`, valid while the
 *    caller keeps those bytes; otherwise it points into the codec's
 *    reassembly buffer, valid until the next parse call.  A 0-byte message
 *    has a non-NULL data pointer.
 *  - Errors are sticky: after a negative return every later parse returns
 *    the same code and consumes nothing.  Each protocol error (AB_EPROTO,
 *    AB_EFRAME) adds one to c->protocol_errors; AB_ECLOSED (an orderly
 *    close by the peer) and AB_ENOMEM do not.
 *  - The reassembly buffer grows to the largest message seen (bounded by
 *    max_msg) and is kept until free.
 */
#ifndef AB_CODECS_H
#define AB_CODECS_H

#include <stdlib.h>

#include "base/ab_error.h"
#include "proto/codec.h"
#include "proto/h2.h"
#include "proto/http.h"
#include "proto/ws.h"

extern const ab_codec_vt_t ab_codec_length, ab_codec_raw;

/* Allocates a zeroed codec with its state, sets vt/out/max_msg and runs
 * vt->init.  Returns 0 and *cp, or AB_ENOMEM / the init error.  `out` may
 * be NULL only for a codec that never writes (length/raw client side). */
static inline int ab_codec_create(const ab_codec_vt_t *vt, ab_outbuf_t *out,
                                  uint64_t max_msg, int is_client,
                                  ab_codec_t **cp) {
  ab_codec_t *c = (ab_codec_t *)calloc(1, sizeof(ab_codec_t) + vt->state_size);
  if (c == NULL) return AB_ENOMEM;
  c->vt = vt;
  c->out = out;
  c->max_msg = max_msg;
  int r = vt->init(c, is_client);
  if (r < 0) {
    free(c);
    return r;
  }
  *cp = c;
  return 0;
}

/* Runs vt->free and releases what ab_codec_create allocated; NULL is fine. */
static inline void ab_codec_destroy(ab_codec_t *c) {
  if (c == NULL) return;
  c->vt->free(c);
  free(c);
}

#endif
