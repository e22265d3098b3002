/* tcp_server.c -- the built-in echo server over TCP, callback style.
 *
 * The socket's IO is our own (sockio.h: recv/send on a uv_poll_t).  A recv
 * with no partial frame kept lands in the loop's shared buffer; whole
 * frames (length prefix or fixed-size raw) are cut, the configured `work`
 * is done per frame, and the frames are sent back unchanged straight from
 * that buffer; only a trailing partial frame, or what the kernel did not
 * take, is copied to the connection.  In pool:N with a work pool,
 * frames wait in `held` until the pool returns their work, and are
 * released in arrival order, so the echo order on a connection is the send
 * order whichever worker finishes first.  Held frames count as owed output
 * (ab__sconn_owe_held): with the replies the kernel has not taken they
 * make the backlog that stops reading past the bound of io/sockio.h, so a
 * client that does not read its replies, or sends faster than the pool
 * works, is pushed back rather than buffered without bound.  A client's
 * EOF closes the connection only once every reply it is owed has been
 * sent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/ab_error.h"
#include "drivers/drivers_int.h"
#include "proto/framing.h"
#include "base/work.h"

#define READ_CHUNK 65536

/* Off the loop's list, to be freed (its handle closed, nothing points at
 * it).  Not at once: the handles inside it (its conn's reactor watch) may
 * still have close callbacks due in this pass of the loop; the next accept
 * frees it (ab__server_reap), or the loop's end. */
static void sconn_free(ab__loop_t *l, ab__sconn_t *s) {
  if (s->prev) s->prev->next = s->next;
  else l->d->sconns = s->next;
  if (s->next) s->next->prev = s->prev;
  s->next = l->d->reaped;
  l->d->reaped = s;
}

void ab__server_reap(ab__loop_t *l) {
  ab__sconn_t *s = l->d->reaped;
  l->d->reaped = NULL;
  while (s) {
    ab__sconn_t *n = s->next;
    free(s);
    s = n;
  }
}

static void on_sclosed(uv_handle_t *h) {
  ab__sconn_t *s = h->data;
  ab__loop_t *l = s->home;
  ab__layers_free(&s->ly);
  ab_conn_free(&s->conn);
  free(s->rbuf);
  free(s->held);
  s->rbuf = s->held = NULL;
  /* Freed now, so that connection churn (a new connection per request)
   * keeps the server's memory flat; with pool jobs out (pool:N), when the
   * last one comes back (job_done).  Another thread (shared:N), a
   * coroutine not yet ended, or the Lua driver's conn object (keep) may
   * still point at it: those stay on the loop's list until the loop is
   * freed. */
  if (l->eng->shared || s->task || s->keep) return;
  if (s->in_pool > 0) {
    s->reap = 1;
    return;
  }
  sconn_free(l, s);
}

/* As ab__client_close: off its home's thread (shared:N) only its IO stops
 * now; the home closes the handle soon (home_close.c), or at its stop
 * (ab__server_close_all). */
void ab__sconn_close(ab__sconn_t *s) {
  if (!s->closing) {
    s->closing = 1;
    ab_conn_close(&s->conn); /* before the handle that owns the descriptor */
    if (s->loop != s->home) {
      s->close_later = 1;
      ab__home_close_sconn(s);
      return;
    }
  } else if (!s->close_later || s->loop != s->home) {
    return;
  }
  s->close_later = 0;
  uv_close((uv_handle_t *)&s->tcp, on_sclosed);
}

/* Every failure of a server connection, from every path (a read, a write,
 * the socket's error, TLS, a coroutine's end) goes through here, so one
 * rule holds for all: what the client did is not the server's error.  An
 * orderly close by the client (EOF, TLS close_notify: ECLOSED, after
 * ab_err_stream_end) just closes; a client's reset (ECONNRESET, or EPIPE:
 * its RST after its FIN, met by our write) is counted in server_resets
 * when serving external clients (their doing; with our own clients a reset
 * is a failure, counted while the run is live); anything else is a server
 * error. */
void ab__sconn_error(ab__sconn_t *s, int code, const char *what) {
  ab__loop_t *l = s->loop;
  if (s->closing) return;
  code = ab_err_stream_end(code, AB_SIDE_SERVER);
  if (code == AB_ECLOSED) {
    ab__sconn_close(s);
    return;
  }
  if (code == UV_ECONNRESET && l->eng->cfg->role == AB_ROLE_SERVER) {
    l->server_resets++;
    ab__sconn_close(s);
    return;
  }
  if (l->phase != AB__PH_STOPPING) {
    char msg[200];
    snprintf(msg, sizeof(msg), "server: %s: %s (%s)", what, ab_strerror(code),
             ab_err_name(code));
    ab__loop_error(l, code, msg);
  }
  ab__sconn_close(s);
}

void ab__sconn_read_failed(ab__sconn_t *s, ssize_t nread) {
  ab__sconn_error(s, (int)nread, "read");
}

/* a socket error no read met (reads were held) */
static void on_sio_error(ab_sockio_t *io, int err) {
  ab__sconn_t *s = (ab__sconn_t *)((char *)io - offsetof(ab__sconn_t, conn.io));
  s->loop = io->watch.running; /* shared:N: the loop of the thread running it */
  ab__sconn_error(s, err, "socket");
}

/* Length of the frame at p (prefix included), 0 if incomplete, <0 error;
 * *payload gets the message's own length. */
static int64_t frame_len(const ab__loop_t *l, const uint8_t *p, size_t avail,
                         uint64_t *payload) {
  size_t hdr;
  int raw = l->pfx == 0;
  return ab_frame_cut(p, avail, raw, raw ? l->payload : l->eng->max_frame, &hdr, payload);
}

static void echo(ab__sconn_t *s, const uint8_t *p, size_t n) {
  int r = ab_sockio_send(&s->conn.io, p, n);
  if (r < 0) ab__sconn_error(s, r, r == AB_ENOMEM ? "send buffer" : "write");
}

/* The whole frames in p[0..len): counted, worked on and echoed (or handed
 * to the pool).  Returns the bytes they take, or -1 after closing s. */
static ssize_t serve_frames(ab__sconn_t *s, const uint8_t *p, size_t len) {
  ab__loop_t *l = s->loop;
  ab__engine_t *eng = l->eng;
  size_t off = 0;
  uint64_t frames = 0, payload_bytes = 0;
  for (;;) {
    uint64_t pl = 0;
    int64_t n = frame_len(l, p + off, len - off, &pl);
    if (n == 0) break;
    if (n < 0) {
      ab__sconn_error(s, (int)n, "request framing");
      return -1;
    }
    off += (size_t)n;
    frames++;
    payload_bytes += pl;
  }
  if (frames == 0) return 0;
  l->server_messages += frames;
  l->server_bytes += payload_bytes;
  if (eng->pool) {
    if (s->hcap - s->hlen < off) {
      size_t want = s->hcap ? s->hcap * 2 : 65536;
      while (want - s->hlen < off) want *= 2;
      uint8_t *h = realloc(s->held, want);
      if (h == NULL) {
        ab__sconn_error(s, AB_ENOMEM, "held frames");
        return -1;
      }
      s->held = h;
      s->hcap = want;
    }
    memcpy(s->held + s->hlen, p, off);
    s->hlen += off;
    s->jobs_out += frames;
    s->jobs_held += frames;
    for (uint64_t i = 0; i < frames; i++) ab__sconn_submit(s);
    ab__sconn_owe_held(s, s->hlen - s->hoff);
  } else {
    uint64_t work = eng->cfg->work;
    if (work) {
      for (uint64_t i = 0; i < frames; i++)
        l->work_sink ^= ab_work(work, l->work_sink + i);
    }
    echo(s, p, off);
    if (s->closing) return -1;
  }
  return (ssize_t)off;
}

void ab__sconn_finish_if_done(ab__sconn_t *s) {
  if (s->eof && !s->closing && s->hoff == s->hlen && ab_sockio_idle(&s->conn.io))
    ab__sconn_close(s);
}

void ab__sconn_half_closed(ab__sconn_t *s) {
  s->eof = 1;
  ab_sockio_hold_reads(&s->conn.io, 1);
  ab__sconn_finish_if_done(s);
}

static void on_sdrained(ab_sockio_t *io) {
  ab__sconn_t *s = (ab__sconn_t *)((char *)io - offsetof(ab__sconn_t, conn.io));
  s->loop = io->watch.running;
  ab__sconn_finish_if_done(s);
}

/* Reads until the socket has nothing more or reading stops (backpressure,
 * ab_sockio_may_read).  With no partial frame kept, a recv lands in the
 * loop's shared buffer and only a trailing partial frame is copied to the
 * connection. */
static void on_sreadable(ab_sockio_t *io) {
  ab__sconn_t *s = (ab__sconn_t *)((char *)io - offsetof(ab__sconn_t, conn.io));
  s->loop = io->watch.running; /* shared:N: this thread's loop and buffers */
  ab_sockio_kept_t kept = {&s->rbuf, &s->rcap, &s->rlen};
  while (!s->closing && ab_sockio_may_read(io)) {
    const uint8_t *data;
    size_t len, room;
    ssize_t n = ab_sockio_recv_frames(io, s->loop->d->io_rx, AB__IO_RX, kept, READ_CHUNK, &data,
                                      &len, &room);
    if (n == 0) return;
    if (n == AB_ENOMEM) {
      ab__sconn_error(s, AB_ENOMEM, "read buffer");
      return;
    }
    if (n == UV_EOF && !s->eof) {
      ab__sconn_half_closed(s);
      return;
    }
    if (n < 0) {
      /* a reset, or a read error; from our own clients at the end it is
       * normal and counted only while the run is live */
      ab__sconn_read_failed(s, n);
      return;
    }
    ssize_t used = serve_frames(s, data, len);
    if (used < 0) return;
    if (ab_sockio_keep(kept, data, len, (size_t)used) != 0) {
      ab__sconn_error(s, AB_ENOMEM, "read buffer");
      return;
    }
    if ((size_t)n < room) return;
  }
}

void ab__server_work_returned(ab__sconn_t *s, uint64_t n) {
  s->jobs_back += n;
  if (s->closing) return;
  size_t start = s->hoff, end = s->hoff;
  while (s->jobs_back > 0) {
    uint64_t pl;
    int64_t len = frame_len(s->loop, s->held + end, s->hlen - end, &pl);
    if (len <= 0) break; /* cannot happen: held frames are whole */
    end += (size_t)len;
    s->jobs_back--;
    s->jobs_held--;
  }
  if (end > start) echo(s, s->held + start, end - start);
  s->hoff = end;
  if (s->hoff == s->hlen) {
    s->hoff = s->hlen = 0;
  } else if (s->hoff > s->hcap / 2) {
    memmove(s->held, s->held + s->hoff, s->hlen - s->hoff);
    s->hlen -= s->hoff;
    s->hoff = 0;
  }
  ab__sconn_owe_held(s, s->hlen - s->hoff);
  ab__sconn_finish_if_done(s);
}

static void job_done(ab__job_t *job) {
  ab__sconn_t *s = (ab__sconn_t *)((char *)job - offsetof(ab__sconn_t, job));
  s->in_pool--;
  if (s->reap) { /* closed: nothing to answer; the last one frees it */
    if (s->in_pool == 0) sconn_free(s->home, s);
    return;
  }
  s->loop->eng->drv->work_done(s);
}

void ab__sconn_submit(ab__sconn_t *s) {
  s->in_pool++;
  ab__pool_submit(s->loop->eng->pool, &s->job);
}

static void on_connection(uv_stream_t *server, int status) {
  ab__loop_t *l = server->data;
  if (status < 0) {
    ab__loop_error(l, status, "server: accept");
    return;
  }
  ab__server_reap(l); /* connections closed in earlier passes */
  ab__sconn_t *s = calloc(1, sizeof(*s));
  if (s == NULL) {
    ab__loop_error(l, AB_ENOMEM, "server: accept");
    return;
  }
  s->loop = s->home = l;
  s->job.done = job_done;
  l->server_connections++;
  uv_tcp_init(&l->loop, &s->tcp);
  s->tcp.data = s;
  s->next = l->d->sconns;
  if (l->d->sconns) l->d->sconns->prev = s;
  l->d->sconns = s;
  if (uv_accept(server, (uv_stream_t *)&s->tcp) != 0) {
    ab__sconn_close(s);
    return;
  }
  uv_tcp_nodelay(&s->tcp, 1);
  if (!l->eng->shared) {
    l->eng->drv->accept(s);
    return;
  }
  /* shared:N: other threads may run it as soon as it is watched */
  pthread_mutex_init(&s->mu, NULL);
  s->conn.io.watch.lock = &s->mu;
  pthread_mutex_lock(&s->mu);
  l->eng->drv->accept(s);
  pthread_mutex_unlock(&s->mu);
}

void ab__server_accept_plain(ab__sconn_t *s) {
  int r = ab_sockio_start(&s->conn.io, &s->loop->d->reactor, &s->tcp, on_sreadable, on_sio_error);
  if (r < 0) ab__sconn_error(s, r, "read start");
  else s->conn.io.on_drained = on_sdrained;
}

int ab__server_listen(ab__loop_t *l) {
  int r = uv_tcp_init(&l->loop, &l->d->listener);
  if (r < 0) return r;
  l->d->listener.data = l;
  l->d->listening = 1;
  int fd = ab__server_socket(l, SOCK_STREAM);
  if (fd < 0) return fd;
  r = uv_tcp_open(&l->d->listener, fd);
  if (r < 0) {
    close(fd);
    return r;
  }
  r = uv_listen((uv_stream_t *)&l->d->listener, 4096, on_connection);
  if (r < 0) return r;
  struct sockaddr_storage ss;
  int len = sizeof(ss);
  r = uv_tcp_getsockname(&l->d->listener, (struct sockaddr *)&ss, &len);
  if (r < 0) return r;
  l->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
  return 0;
}

void ab__server_close_all(ab__loop_t *l) {
  for (ab__sconn_t *s = l->d->sconns; s; s = s->next) {
    if (l->eng->shared) pthread_mutex_lock(&s->mu);
    s->loop = l;
    ab__sconn_close(s);
    if (l->eng->shared) pthread_mutex_unlock(&s->mu);
  }
}
