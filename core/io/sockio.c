/* sockio.c -- see sockio.h. */
#include "io/sockio.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/ab_error.h"
#include "base/buf.h"

static int want_events(const ab_sockio_t *io) {
  int pending = !ab_sockio_idle(io);
  int ev = pending ? UV_WRITABLE : 0;
  if (ab_sockio_may_read(io)) ev |= UV_READABLE;
  return ev;
}

static void on_poll(ab_reactor_watch_t *w, int status, int events);

/* The backpressure rule (sockio.h): pushed back above HIGH, released at
 * LOW, both raised by what the owner is allowed of its own. */
static void apply_bound(ab_sockio_t *io) {
  size_t b = ab_sockio_backlog(io);
  if (b <= io->own) {
    io->pushed = 0;
    return;
  }
  b -= io->own;
  if (io->pushed) io->pushed = b > AB_SOCKIO_LOW;
  else io->pushed = b > AB_SOCKIO_HIGH;
}

/* Registers the events the state calls for; starting a watch re-arms the
 * descriptor, so it runs only when they change (short writes).  Every
 * change of the backlog comes through here. */
static int rearm(ab_sockio_t *io) {
  apply_bound(io);
  int ev = want_events(io);
  if (ev == io->events || io->failed) return 0;
  int r = ab_reactor_watch_start(&io->watch, ev);
  if (r < 0) return r;
  io->events = ev;
  return 0;
}

static void fail(ab_sockio_t *io, int err) {
  if (io->failed) return;
  io->failed = 1;
  ab_reactor_watch_stop(&io->watch);
  io->events = 0;
  if (io->on_error) io->on_error(io, err);
}

/* The connection can no longer send (the peer reset or closed it): what is
 * pending is dropped, later output is discarded, and reading resumes so
 * that the reader takes what arrived before the failure and then meets it
 * in recv -- replies already received are not lost to a failed send. */
static void output_dead(ab_sockio_t *io, int err) {
  if (io->wdead == 0) io->wdead = err;
  io->poff = io->plen = 0;
}

/* One send(2) of p[0..n): bytes taken, 0 when the kernel takes nothing
 * now or the output is dead, or a local error (out of memory). */
static ssize_t send_some(ab_sockio_t *io, const uint8_t *p, size_t n) {
  for (;;) {
    ssize_t w = send(io->fd, p, n, MSG_NOSIGNAL);
    if (w >= 0) return w;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    if (errno == ENOMEM || errno == ENOBUFS) return -errno;
    output_dead(io, -errno);
    return 0;
  }
}

/* Sends pending output until it is gone or the kernel stops taking it. */
static int flush(ab_sockio_t *io) {
  while (io->poff < io->plen) {
    ssize_t w = send_some(io, io->pend + io->poff, io->plen - io->poff);
    if (w < 0) return (int)w;
    if (w == 0) break;
    io->poff += (size_t)w;
  }
  if (io->poff == io->plen) io->poff = io->plen = 0;
  return rearm(io);
}

/* EPOLLERR (libuv reports it as UV_EBADF and stops the watcher): nothing
 * can be sent any more.  Data that arrived before the error is still
 * there: the reader takes it and meets the error in its own recv, as it
 * would without the error (a reset peer's last requests are still served,
 * its last replies still counted).  What the reader does not meet (it
 * holds its reads) is reported here. */
static void on_socket_error(ab_sockio_t *io, int status) {
  int so = 0;
  socklen_t len = sizeof(so);
  if (getsockopt(io->fd, SOL_SOCKET, SO_ERROR, &so, &len) == 0 && so != 0) status = -so;
  io->events = 0; /* libuv stopped the watcher */
  output_dead(io, status);
  apply_bound(io); /* the dropped output no longer holds reads back */
  io->would_block = 0; /* from an earlier read: data may have come since */
  while (!io->failed && ab_sockio_may_read(io) && !io->would_block && !io->read_ended) {
    uint64_t before = io->nrecv;
    io->on_readable(io);
    if (io->nrecv == before) break; /* the reader did not read */
  }
  if (io->failed) return;
  fail(io, io->wdead);
}

static void on_poll(ab_reactor_watch_t *w, int status, int events) {
  ab_sockio_t *io = w->data;
  if (io->failed) return;
  if (status < 0) {
    on_socket_error(io, status);
    return;
  }
  if (events & AB_REACTOR_WRITABLE) {
    int r = flush(io);
    if (r < 0) {
      fail(io, r);
      return;
    }
    if (ab_sockio_idle(io) && io->on_drained) {
      io->on_drained(io);
      if (io->failed) return;
    }
  }
  if ((events & AB_REACTOR_READABLE) && (io->events & AB_REACTOR_READABLE)) io->on_readable(io);
}

int ab_sockio_start(ab_sockio_t *io, ab_reactor_t *reactor, uv_tcp_t *tcp,
                    ab_sockio_read_cb on_readable, ab_sockio_error_cb on_error) {
  uv_os_fd_t fd;
  int r = uv_fileno((const uv_handle_t *)tcp, &fd);
  if (r < 0) return r;
  /* all but the watch: watch_init sets it up, keeping the owner's lock
   * and the start count (reactor.h: a thread holding an event for the
   * closed watch may read them now) */
  memset(io, 0, offsetof(ab_sockio_t, watch));
  io->fd = fd;
  io->on_readable = on_readable;
  io->on_error = on_error;
  r = ab_reactor_watch_init(reactor, &io->watch, fd, on_poll);
  if (r < 0) return r;
  io->watch.data = io;
  io->started = 1;
  return rearm(io);
}

ssize_t ab_sockio_recv(ab_sockio_t *io, void *buf, size_t n) {
  if (io->failed) return AB_ECLOSED;
  if (!ab_sockio_may_read(io)) return 0; /* pushed back or held */
  io->nrecv++;
  io->would_block = 0;
  for (;;) {
    ssize_t r = recv(io->fd, buf, n, 0);
    if (r > 0) return r;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      io->would_block = 1;
      return 0;
    }
    io->read_ended = 1;
    /* a failed send may have taken the socket's error: it is the cause */
    if (r == 0) return io->wdead ? io->wdead : UV_EOF;
    return -errno;
  }
}

ssize_t ab_sockio_recv_frames(ab_sockio_t *io, uint8_t *shared, size_t shared_cap,
                              ab_sockio_kept_t k, size_t chunk, const uint8_t **data,
                              size_t *len, size_t *room) {
  if (*k.len == 0 && shared != NULL) {
    ssize_t n = ab_sockio_recv(io, shared, shared_cap);
    *data = shared;
    *len = n > 0 ? (size_t)n : 0;
    *room = shared_cap;
    return n;
  }
  if (ab_buf_grow(k.buf, k.cap, *k.len, chunk) != 0) return AB_ENOMEM;
  *room = *k.cap - *k.len;
  ssize_t n = ab_sockio_recv(io, *k.buf + *k.len, *room);
  *data = *k.buf;
  *len = *k.len + (n > 0 ? (size_t)n : 0);
  return n;
}

int ab_sockio_keep(ab_sockio_kept_t k, const uint8_t *data, size_t len, size_t used) {
  size_t rest = len - used;
  if (data == *k.buf) {
    if (rest > 0 && used > 0) memmove(*k.buf, *k.buf + used, rest);
  } else if (rest > 0) {
    if (ab_buf_grow(k.buf, k.cap, 0, rest) != 0) return AB_ENOMEM;
    memcpy(*k.buf, data + used, rest);
  }
  *k.len = rest;
  return 0;
}

uint8_t *ab_sockio_reserve(ab_sockio_t *io, size_t n) {
  if (io->pcap - io->plen < n) {
    /* slide the unsent rest to the front first: the buffer stays at its
     * high-water mark */
    if (io->poff > 0) {
      memmove(io->pend, io->pend + io->poff, io->plen - io->poff);
      io->plen -= io->poff;
      io->poff = 0;
    }
    if (io->pcap - io->plen < n) {
      size_t want = io->pcap ? io->pcap * 2 : 16384;
      while (want - io->plen < n) want *= 2;
      uint8_t *p = realloc(io->pend, want);
      if (p == NULL) return NULL;
      io->pend = p;
      io->pcap = want;
    }
  }
  return io->pend + io->plen;
}

int ab_sockio_commit(ab_sockio_t *io, size_t n) {
  if (io->failed) return AB_ECLOSED;
  if (io->wdead) return 0; /* discarded: the reader meets the cause */
  io->plen += n;
  int r = flush(io);
  if (r < 0) io->failed = 1;
  return r;
}

int ab_sockio_send(ab_sockio_t *io, const uint8_t *p, size_t n) {
  if (io->failed) return AB_ECLOSED;
  size_t off = 0;
  if (ab_sockio_idle(io)) {
    while (off < n && !io->wdead) {
      ssize_t w = send_some(io, p + off, n - off);
      if (w < 0) {
        io->failed = 1;
        return (int)w;
      }
      if (w == 0) break;
      off += (size_t)w;
    }
    if (io->wdead) return rearm(io); /* discarded: the reader meets the cause */
    if (off == n) return 0;
  }
  uint8_t *dst = ab_sockio_reserve(io, n - off);
  if (dst == NULL) {
    io->failed = 1;
    return AB_ENOMEM;
  }
  memcpy(dst, p + off, n - off);
  io->plen += n - off;
  int r = rearm(io);
  if (r < 0) io->failed = 1;
  return r;
}

int ab_sockio_owe(ab_sockio_t *io, size_t bytes) {
  if (io->owed == bytes) return 0;
  io->owed = bytes;
  if (io->failed) return 0;
  int r = rearm(io);
  if (r < 0) io->failed = 1;
  return r;
}

int ab_sockio_allow(ab_sockio_t *io, size_t bytes) {
  io->own = bytes;
  if (io->failed) return 0;
  int r = rearm(io);
  if (r < 0) io->failed = 1;
  return r;
}

int ab_sockio_hold_reads(ab_sockio_t *io, int hold) {
  if (io->held == !!hold) return 0;
  io->held = !!hold;
  if (io->failed) return 0;
  int r = rearm(io);
  if (r < 0) io->failed = 1;
  return r;
}

void ab_sockio_close(ab_sockio_t *io) {
  if (!io->started) return;
  io->started = 0;
  io->failed = 1;
  ab_reactor_watch_close(&io->watch);
}

void ab_sockio_free(ab_sockio_t *io) {
  free(io->pend);
  io->pend = NULL;
  io->pcap = io->plen = io->poff = 0;
}
