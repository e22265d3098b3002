/* conn.h -- one connection: socket IO + an optional TLS transform + an
 * optional codec.  Every stream protocol (tcp, tls, ws, wss, http, https)
 * in every execution mode (callback, coroutine, lua) moves its bytes
 * through one of these.
 *
 *   socket <-> sockio.h (recv/send on the loop's reactor)
 *          <-> [tls.h, memory BIOs]          optional
 *          <-> plaintext: `in` (the owner's buffer) and `plain` (output)
 *          <-> [codec.h]                     optional (the Lua driver
 *                                            reads and writes raw bytes)
 *
 * Plain tcp in callback mode uses the sockio inside (conn.io) directly, with
 * the loop's shared receive buffer: nothing is added to its per-message
 * path.  Everything else calls the functions below, which cost one branch
 * on `tls` over sockio's own.
 *
 * The TLS handshake is the connection's own business: ab_conn_start()
 * begins it (a client writes its ClientHello), readiness events drive it,
 * and on_ready runs once it is done (at once, inside ab_conn_start, when
 * there is no TLS).  Owners never look at TLS: plaintext they send before
 * then waits in `plain`; ab_conn_recv() only ever hands out plaintext.  A
 * failed handshake is reported through on_error (AB_EPROTO; the reason in
 * ab_conn_error_text()), after its alert has been sent.  A close_notify
 * read is answered with ours at once (recv then returns AB_ECLOSED).
 *
 * Input: plaintext is appended to the owner's buffer `in` (its pointers are
 * given to ab_conn_start; the owner consumes from the front as it likes).
 * Output: the owner (or its codec, created with ab_conn_out() as its `out`)
 * appends plaintext to `plain` and calls ab_conn_flush(), or hands bytes to
 * ab_conn_send(), which skips the copy when nothing is queued and there is
 * no TLS.  A flush moves everything (ciphertext, once TLS is ready) to the
 * sockio's pending output, where the backpressure bound of sockio.h
 * applies: past AB_SOCKIO_HIGH bytes unsent (replies, pongs and close
 * frames a codec wrote, TLS records, plus what the owner owes) the
 * connection stops reading -- ab_conn_recv() returns 0 -- until it is back
 * to AB_SOCKIO_LOW.  Owners flush after each read's parse, so output never
 * piles up in `plain` past that one read.
 *
 * Threads: one loop thread.  Errors are libuv codes / ab_error.h codes.
 * Ownership: the conn owns its TLS connection, its codec and its buffers
 * (ab_conn_free); the uv_tcp_t that owns the descriptor is the caller's.
 * Close the conn (ab_conn_close) before that handle.
 */
#ifndef AB_CONN_H
#define AB_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "base/outbuf.h"
#include "io/sockio.h"
#include "proto/codec.h"
#include "proto/tls.h"

typedef struct ab_conn_s ab_conn_t;

typedef struct {
  /* The handshakes below the owner are done: plaintext may flow. */
  void (*on_ready)(ab_conn_t *c);
  /* Readable (ready connections only): call ab_conn_recv until it
   * returns 0 or an error. */
  void (*on_readable)(ab_conn_t *c);
  /* A failure no ab_conn_recv/ab_conn_send call reported (see sockio.h),
   * or a failed handshake.  Once. */
  void (*on_error)(ab_conn_t *c, int err);
  /* Optional: pending output has all gone out. */
  void (*on_drained)(ab_conn_t *c);
} ab_conn_cbs_t;

struct ab_conn_s {
  ab_sockio_t io;            /* first: plain tcp's fast path uses it alone */
  ab_tls_conn_t *tls;        /* NULL: plaintext */
  ab_codec_t *codec;         /* NULL: raw bytes */
  ab_sockio_kept_t in;       /* the owner's plaintext input buffer */
  ab_outbuf_t plain;         /* plaintext output not yet sent */
  uint8_t *cipher_rx;        /* TLS: ciphertext scratch, 64 KiB, shared by
                                the loop's connections, not owned; read
                                into by conn.c only (shared:N: each thread
                                into its own) */
  int ready;                 /* handshakes done: on_ready has run */
  int peer_closed;           /* TLS close_notify read */
  const ab_conn_cbs_t *cbs;
  void *data;                /* the owner's */
  /* Whoever sets the connection up (the drivers, ab__conn_setup) watches
   * its session here rather than in each owner's on_ready, so that no
   * owner can forget it: on_tls_done (optional) runs once, when the TLS
   * handshake has completed, before on_ready; t_setup is that party's
   * stamp (ns, base/clock.h) of when setting up began. */
  void (*on_tls_done)(ab_conn_t *c, void *arg);
  void *tls_done_arg;
  uint64_t t_setup;
};

#define AB_CONN_CIPHER_RX ((size_t)64 << 10)

/* Sets up c (zeroed first) with tls (taken over: freed by ab_conn_free;
 * NULL for plaintext) and the loop's ciphertext scratch.  Nothing runs
 * yet.  Create the codec after this, with ab_conn_out(c) as its out. */
void ab_conn_init(ab_conn_t *c, ab_tls_conn_t *tls, uint8_t *cipher_rx);

/* Where a codec or the owner appends plaintext output. */
static inline ab_outbuf_t *ab_conn_out(ab_conn_t *c) { return &c->plain; }

/* Starts IO on tcp's descriptor: `in` receives plaintext.  A TLS client
 * writes its ClientHello now.  on_ready runs before this returns when there
 * is no TLS.  0 or an error (nothing was called back then). */
int ab_conn_start(ab_conn_t *c, ab_reactor_t *reactor, uv_tcp_t *tcp, ab_sockio_kept_t in,
                  const ab_conn_cbs_t *cbs);

/* One socket read; the plaintext it yields is appended to `in` (its buffer
 * grown as needed).  Returns the socket bytes read (> 0; *room what was
 * offered: a read that filled it may have left more), 0 when nothing is
 * there now or reading is stopped (backpressure, held reads: sockio.h),
 * or an error: UV_EOF, AB_ECLOSED (TLS close_notify: the
 * plaintext before it has been appended), AB_EPROTO (TLS), AB_ENOMEM, or a
 * socket error. */
ssize_t ab_conn_recv(ab_conn_t *c, size_t *room);

/* One socket read whose bytes are dropped (what a peer still sends after
 * its close_notify), into the ciphertext scratch of the thread reading
 * now -- never c->cipher_rx directly: in shared:N another thread may be
 * decrypting in place from that one.  As ab_sockio_recv. */
ssize_t ab_conn_recv_discard(ab_conn_t *c);

/* Sends the queued plaintext: encrypts it (TLS, once ready) and hands the
 * bytes to the socket; what the kernel does not take waits in the sockio.
 * 0 or an error (as ab_sockio_send; AB_EPROTO from TLS). */
int ab_conn_flush(ab_conn_t *c);

/* Sends p[0..n) after what is queued.  0 or an error as ab_conn_flush. */
int ab_conn_send(ab_conn_t *c, const uint8_t *p, size_t n);

/* Nothing queued anywhere: every byte given has reached the kernel. */
static inline int ab_conn_idle(const ab_conn_t *c) {
  return c->plain.len == 0 && ab_sockio_idle(&c->io) &&
         (c->tls == NULL || ab_tls_pending_out(c->tls) == 0);
}

/* One line of reason for a TLS failure, "" when none. */
const char *ab_conn_error_text(const ab_conn_t *c);

/* The one wording of a failure of c with code err, for every driver and
 * mode: "TLS: <OpenSSL's reason> (EPROTO)" when TLS failed, the codec's
 * own reason for a codec's EPROTO/EFRAME ("<why> (EFRAME)"), else
 * "<error text> (ENAME)".  Written into buf[0..cap); returns buf. */
const char *ab_conn_reason(const ab_conn_t *c, int err, char *buf, size_t cap);

/* Negotiated TLS parameters; AB_EINVAL without TLS or before it is ready. */
int ab_conn_tls_info(ab_conn_t *c, ab_tls_info_t *info);

/* Stops IO (before the handle that owns the descriptor is closed). */
void ab_conn_close(ab_conn_t *c);
/* Frees the TLS connection, the codec and the buffers (after close; on a
 * zeroed, never started conn too). */
void ab_conn_free(ab_conn_t *c);

#endif
