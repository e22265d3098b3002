/* sockio.h -- a connected TCP socket driven straight from the loop.
 *
 * The plain-tcp callback path does its own socket IO: a reactor watch
 * (reactor.h; on libuv a uv_poll_t) watches
 * the descriptor of the connection's uv_tcp_t (which libuv itself no longer
 * watches once connect/accept is done), and bytes move with recv(2) and
 * send(2, MSG_NOSIGNAL).  libuv's stream reads and writes use read(2) and
 * write(2), which on Linux go through the VFS layer (fdget_pos, vfs_read,
 * sock_read_iter) before reaching the socket: measured on loopback echo at
 * 1 KiB that is ~3 % of a round trip's CPU.  The caller also chooses where
 * each recv lands, so a loop can share one hot receive buffer between its
 * connections instead of one cold buffer each.
 *
 * Output: ab_sockio_send() writes what the kernel takes now and keeps the
 * rest in the connection's pending buffer, which is flushed when the socket
 * becomes writable (EPOLLOUT is watched only while something is pending).
 * With `pause_reads` set (echo servers), reading stops while output is
 * pending: the peer's unread replies push back on its sending, as in any
 * echo server that does not buffer without bound.  The owner can also hold
 * reads itself (work it has not finished yet).
 *
 * A send that fails because the connection is gone (reset, closed) is not
 * reported by the send: pending output is dropped, later output discarded,
 * and reading resumes, so the reader first takes what arrived before the
 * failure (replies already received still count) and then meets the
 * failure in its own recv.  on_error reports only what no recv will: a
 * socket error while the owner holds its reads.
 *
 * Level-triggered, like libuv's own epoll backend.  Errors are libuv codes
 * (-errno on Unix); end of stream is UV_EOF.  Close the sockio before the
 * uv_tcp_t that owns the descriptor.
 */
#ifndef AB_SOCKIO_H
#define AB_SOCKIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "io/reactor.h"

typedef struct ab_sockio_s ab_sockio_t;
/* The socket is readable (or has hung up: recv then says so). */
typedef void (*ab_sockio_read_cb)(ab_sockio_t *io);
/* Pending output has all been sent (after a short write). */
typedef void (*ab_sockio_drained_cb)(ab_sockio_t *io);
/* A failure outside a call the owner made: a flush on writable, or
 * EPOLLERR.  Reported once; nothing is read or sent afterwards. */
typedef void (*ab_sockio_error_cb)(ab_sockio_t *io, int err);

struct ab_sockio_s {
  int fd;
  int started;     /* poll handle initialised (close it) */
  int failed;      /* an error was reported: IO stops */
  int pause_reads; /* stop reading while output is pending */
  int held;        /* the owner holds reads (ab_sockio_hold_reads) */
  int wdead;       /* sending failed with this error: output discarded */
  int events;      /* UV_READABLE / UV_WRITABLE now registered */
  int would_block; /* the last recv found nothing */
  int read_ended;  /* a recv met end of stream or an error */
  uint64_t nrecv;  /* recv calls made */
  uint8_t *pend;   /* output the kernel has not taken: pend[poff..plen) */
  size_t pcap, plen, poff;
  ab_sockio_read_cb on_readable;
  ab_sockio_error_cb on_error;
  ab_sockio_drained_cb on_drained; /* optional: set it after start */
  ab_reactor_watch_t watch; /* last: the fields above are the per-message ones */
};

/* Starts watching tcp's descriptor for reading on `reactor` (the loop's).  Returns 0 or a libuv
 * error. */
int ab_sockio_start(ab_sockio_t *io, ab_reactor_t *reactor, uv_tcp_t *tcp,
                    int pause_reads, ab_sockio_read_cb on_readable,
                    ab_sockio_error_cb on_error);

/* One recv(2) into buf[0..n): bytes read (> 0), 0 when nothing is there
 * now, UV_EOF at end of stream (or the error a failed send met, which is
 * why the stream ended), or another negative libuv error. */
ssize_t ab_sockio_recv(ab_sockio_t *io, void *buf, size_t n);

/* A frame-cutting reader's input: bytes kept between reads (a partial
 * frame) in buf[0..len). */
typedef struct {
  uint8_t **buf;
  size_t *cap, *len;
} ab_sockio_kept_t;

/* One recv for a reader that cuts frames.  With nothing kept and `shared`
 * given, the bytes land in shared[0..shared_cap) (a buffer the caller shares
 * between connections, to keep the copies in cache); otherwise after the
 * kept bytes, the buffer grown to have at least `chunk` bytes free.  On
 * success *data / *len are every byte now available, kept ones first, and
 * *room what the recv was offered (a recv that filled it may have left
 * more).  Returns as ab_sockio_recv, or AB_ENOMEM. */
ssize_t ab_sockio_recv_frames(ab_sockio_t *io, uint8_t *shared, size_t shared_cap,
                              ab_sockio_kept_t k, size_t chunk, const uint8_t **data,
                              size_t *len, size_t *room);

/* After the reader used data[0..used) of what ab_sockio_recv_frames gave:
 * the rest is kept for the next read.  0 or AB_ENOMEM. */
int ab_sockio_keep(ab_sockio_kept_t k, const uint8_t *data, size_t len, size_t used);

/* True when no output is pending: a send goes straight to the kernel. */
static inline int ab_sockio_idle(const ab_sockio_t *io) {
  return io->plen == io->poff;
}

/* Sends p[0..n): what the kernel does not take now is copied to the
 * pending buffer and sent when the socket is writable.  Bytes always leave
 * in call order.  Returns 0 (also when the output is dead, see above), or
 * a local error such as AB_ENOMEM (which marks the sockio failed; on_error
 * is not called for it). */
int ab_sockio_send(ab_sockio_t *io, const uint8_t *p, size_t n);

/* Room for n more bytes at the end of the pending buffer (NULL when out of
 * memory), to build output in place when the sockio is not idle; then
 * ab_sockio_commit() them, which tries to send. */
uint8_t *ab_sockio_reserve(ab_sockio_t *io, size_t n);
int ab_sockio_commit(ab_sockio_t *io, size_t n);

/* True while the owner should read: not held, and not paused by pending
 * output. */
static inline int ab_sockio_may_read(const ab_sockio_t *io) {
  return !io->held && !(io->pause_reads && !ab_sockio_idle(io));
}

/* Holds (1) or resumes (0) reading, whatever the pending output.  0 or a
 * libuv error. */
int ab_sockio_hold_reads(ab_sockio_t *io, int hold);

/* Stops watching (closes the poll handle); the descriptor stays open. */
void ab_sockio_close(ab_sockio_t *io);
/* Frees the pending buffer (after close). */
void ab_sockio_free(ab_sockio_t *io);

#endif
