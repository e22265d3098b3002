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
 *
 * Backpressure, the one rule for every server and client, protocol and
 * execution mode: the connection's backlog is its pending output plus what
 * its owner has declared it owes (ab_sockio_owe: requests read whose
 * replies wait for the pool:N pool).  Past AB_SOCKIO_HIGH bytes of
 * backlog reading stops -- the watch drops EPOLLIN and ab_sockio_recv()
 * returns 0 as if nothing had arrived, so a reader that loops on recv stops
 * too -- and it resumes once the backlog is back to AB_SOCKIO_LOW.  A peer
 * that does not read its replies (or pongs) is pushed back by its own
 * socket instead of being buffered without bound; what is over the bound
 * is at most what the reads before the stop produced.  Output of the
 * owner's own making that it bounds itself -- a client's requests, which
 * its window bounds -- is allowed on top (ab_sockio_allow): a client reads
 * its replies to free its window, so its own requests must never stop its
 * reads (with an echo server that stops too, neither would move), while
 * what it writes in answer to what it reads (pongs) still counts.  The
 * owner can also hold reads itself (ab_sockio_hold_reads).
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

/* The backpressure bounds (bytes of backlog, see above): reading stops
 * above HIGH and resumes at LOW. */
#define AB_SOCKIO_HIGH ((size_t)4 << 20)
#define AB_SOCKIO_LOW ((size_t)1 << 20)

struct ab_sockio_s {
  int fd;
  int started;     /* poll handle initialised (close it) */
  int failed;      /* an error was reported: IO stops */
  int pushed;      /* backlog went past AB_SOCKIO_HIGH: reads stop until
                      it is back to AB_SOCKIO_LOW */
  int held;        /* the owner holds reads (ab_sockio_hold_reads) */
  int wdead;       /* sending failed with this error: output discarded */
  int events;      /* UV_READABLE / UV_WRITABLE now registered */
  int would_block; /* the last recv found nothing */
  int read_ended;  /* a recv met end of stream or an error */
  uint64_t nrecv;  /* recv calls made */
  uint8_t *pend;   /* output the kernel has not taken: pend[poff..plen) */
  size_t pcap, plen, poff;
  size_t owed;     /* the owner's output in waiting (ab_sockio_owe) */
  size_t own;      /* backlog allowed above the bound (ab_sockio_allow) */
  ab_sockio_read_cb on_readable;
  ab_sockio_error_cb on_error;
  ab_sockio_drained_cb on_drained; /* optional: set it after start */
  ab_reactor_watch_t watch; /* last: the fields above are the per-message ones */
};

/* Starts watching tcp's descriptor for reading on `reactor` (the loop's).  Returns 0 or a libuv
 * error. */
int ab_sockio_start(ab_sockio_t *io, ab_reactor_t *reactor, uv_tcp_t *tcp,
                    ab_sockio_read_cb on_readable, ab_sockio_error_cb on_error);

/* One recv(2) into buf[0..n): bytes read (> 0), 0 when nothing is there
 * now or reading is stopped (ab_sockio_may_read), UV_EOF at end of stream
 * (or the error a failed send met, which is why the stream ended), or
 * another negative libuv error. */
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

/* True while the owner may read: not held, and not pushed back by its
 * backlog. */
static inline int ab_sockio_may_read(const ab_sockio_t *io) {
  return !io->held && !io->pushed;
}

/* Pending output plus what the owner owes: what the bound is applied to. */
static inline size_t ab_sockio_backlog(const ab_sockio_t *io) {
  return io->plen - io->poff + io->owed;
}

/* The owner's output in waiting is now `bytes` (replaces the last value):
 * counted in the backlog, so reading stops while it is large (requests
 * whose replies wait for the work pool).  0 or a libuv error. */
int ab_sockio_owe(ab_sockio_t *io, size_t bytes);

/* Allows `bytes` of backlog above both bounds: the most output of the
 * owner's own making it can have unsent (a client: window x its largest
 * request; SIZE_MAX when all its output is its own, as a Lua client's).
 * 0 or a libuv error. */
int ab_sockio_allow(ab_sockio_t *io, size_t bytes);

/* Holds (1) or resumes (0) reading, whatever the backlog.  0 or a libuv
 * error. */
int ab_sockio_hold_reads(ab_sockio_t *io, int hold);

/* Stops watching (closes the poll handle); the descriptor stays open. */
void ab_sockio_close(ab_sockio_t *io);
/* Frees the pending buffer (after close). */
void ab_sockio_free(ab_sockio_t *io);

#endif
