/* test_sockio.c -- sockio.h on a real libuv loop over loopback TCP: output
 * the kernel does not take is kept and sent in order when the socket is
 * writable; reads go on while the backlog is under the bound, stop above
 * AB_SOCKIO_HIGH (recv returns 0 with data waiting) and resume at
 * AB_SOCKIO_LOW, for pending output and for owed output
 * (ab_sockio_owe); end of stream; a peer that resets after sending (its
 * data is still read, then the reset is seen by recv); a reset while output
 * is pending drops it and reaches the reader (or on_error, once, when the
 * owner holds its reads); a send that meets a reset returns 0 and the
 * reader still gets what had arrived; a reset after the peer's FIN is
 * EPIPE, one without is ECONNRESET (the class ab_err_stream_end gives each
 * side); held reads; a start on a used ab_sockio_t (a reopen) keeps the
 * owner's lock and the watch's start count (io/reactor.h). */
#include <arpa/inet.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "base/ab_error.h"
#include "io/sockio.h"
#include "test/ab_test.h"
#include "test/io/tcp_pair.h"

static uv_loop_t loop;
static ab_reactor_t reactor;


/* ---- state shared with the callbacks --------------------------------- */
typedef struct {
  ab_sockio_t io;
  uv_tcp_t tcp;
  int readable_calls;
  int readable_while_pending; /* on_readable ran with output pending */
  size_t readable_backlog_max; /* the largest backlog on_readable ran with */
  size_t got;                 /* bytes our recv returned */
  ssize_t last;               /* last recv result <= 0 */
  int errors;
  int error;
  int stop_at_end;            /* stop the loop on EOF/error */
} side_t;

static void on_readable(ab_sockio_t *io) {
  side_t *s = (side_t *)((char *)io - offsetof(side_t, io));
  uint8_t buf[4096];
  s->readable_calls++;
  if (!ab_sockio_idle(io)) s->readable_while_pending++;
  if (ab_sockio_backlog(io) > s->readable_backlog_max) s->readable_backlog_max = ab_sockio_backlog(io);
  for (;;) {
    ssize_t n = ab_sockio_recv(io, buf, sizeof(buf));
    if (n > 0) {
      s->got += (size_t)n;
      continue;
    }
    s->last = n;
    if (n < 0 && s->stop_at_end) {
      ab_sockio_close(io);
      uv_stop(&loop);
    }
    return;
  }
}

static void on_error(ab_sockio_t *io, int err) {
  side_t *s = (side_t *)((char *)io - offsetof(side_t, io));
  s->errors++;
  s->error = err;
  if (s->stop_at_end) uv_stop(&loop);
}

static void start_side(side_t *s, int fd) {
  memset(s, 0, sizeof(*s));
  CHECK(uv_tcp_init(&loop, &s->tcp) == 0);
  CHECK(uv_tcp_open(&s->tcp, fd) == 0);
  CHECK(ab_sockio_start(&s->io, &reactor, &s->tcp, on_readable, on_error) == 0);
}

static void close_side(side_t *s) {
  ab_sockio_close(&s->io);
  uv_close((uv_handle_t *)&s->tcp, NULL);
  uv_run(&loop, UV_RUN_NOWAIT);
  ab_sockio_free(&s->io);
}

/* A loopback pair with our end in s; small socket buffers force short
 * writes.  Returns the peer's descriptor. */
static int open_pair(side_t *s, int small, int stop_at_end) {
  int a, b;
  tcp_pair(&a, &b);
  if (small) {
    int sz = 16384;
    setsockopt(a, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    setsockopt(b, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
  }
  start_side(s, a);
  s->stop_at_end = stop_at_end;
  return b;
}

/* ---- the peer, driven from a uv_poll of its own ---------------------- */
typedef struct {
  uv_poll_t poll;
  int fd;
  size_t want, got;
  int bad;            /* a byte out of order */
  side_t *watch;      /* whose pending state to sample */
  int saw_pending_at_end;
} peer_t;

static void on_peer(uv_poll_t *h, int status, int events) {
  peer_t *p = h->data;
  uint8_t buf[65536];
  (void)events;
  if (status < 0) return;
  for (;;) {
    ssize_t n = recv(p->fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; i++)
      if (buf[i] != pattern(p->got + (size_t)i)) p->bad++;
    p->got += (size_t)n;
  }
  if (p->got >= p->want) {
    uv_poll_stop(h);
    uv_stop(&loop);
  }
}

/* `total` bytes into small socket buffers: most of it is pending after the
 * call; the peer then receives every byte, in order, and the pending
 * buffer empties.  The peer has sent us 5 bytes meanwhile.  Under the
 * bound (1 MiB) they are read while output is still pending; over it
 * (8 MiB > AB_SOCKIO_HIGH) reading stops -- no EPOLLIN, and a recv returns
 * 0 although the bytes are there -- and resumes only once the backlog is
 * back to AB_SOCKIO_LOW. */
static void test_pending(size_t total) {
  side_t s;
  int b = open_pair(&s, 1, 0);
  int over = total > AB_SOCKIO_HIGH;

  uint8_t *data = malloc(total);
  for (size_t i = 0; i < total; i++) data[i] = pattern(i);
  CHECK(ab_sockio_send(&s.io, data, total / 2) == 0);
  /* a second send while output is pending queues behind it */
  CHECK(!ab_sockio_idle(&s.io));
  CHECK(ab_sockio_send(&s.io, data + total / 2, total - total / 2) == 0);
  CHECK(s.io.plen - s.io.poff > total / 2);
  CHECK(s.io.events & UV_WRITABLE);
  CHECK(over ? !(s.io.events & UV_READABLE) : (s.io.events & UV_READABLE) != 0);
  CHECK(over ? !ab_sockio_may_read(&s.io) : ab_sockio_may_read(&s.io));
  /* the peer has something for us too */
  CHECK(send(b, "hello", 5, 0) == 5);
  if (over) {
    uint8_t buf[16];
    usleep(20000);
    CHECK(ab_sockio_recv(&s.io, buf, sizeof(buf)) == 0); /* pushed back */
  }

  peer_t p;
  memset(&p, 0, sizeof(p));
  p.fd = b;
  p.want = total;
  CHECK(uv_poll_init(&loop, &p.poll, b) == 0);
  p.poll.data = &p;
  CHECK(uv_poll_start(&p.poll, UV_READABLE, on_peer) == 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK_EQ_U64(p.got, total);
  CHECK_EQ_U64(p.bad, 0);
  CHECK(ab_sockio_idle(&s.io));
  uv_run(&loop, UV_RUN_NOWAIT); /* let the re-armed read see "hello" */
  CHECK_EQ_U64(s.got, 5);
  CHECK(s.readable_calls >= 1);
  CHECK(s.readable_while_pending > 0);
  if (over) CHECK(s.readable_backlog_max <= AB_SOCKIO_LOW);
  CHECK(s.io.events == UV_READABLE);
  CHECK_EQ_U64(s.errors, 0);

  uv_close((uv_handle_t *)&p.poll, NULL);
  close_side(&s);
  close(b);
  free(data);
}

/* Owed output counts like pending output: reading stops above
 * AB_SOCKIO_HIGH, stays stopped down to AB_SOCKIO_LOW (hysteresis), and
 * resumes there; the bytes that waited are read then.  What the owner is
 * allowed of its own (ab_sockio_allow) raises both bounds. */
static void test_owe(void) {
  side_t s;
  int b = open_pair(&s, 0, 0);
  CHECK(ab_sockio_owe(&s.io, AB_SOCKIO_HIGH) == 0);
  CHECK(ab_sockio_may_read(&s.io)); /* at the bound, not over it */
  CHECK(ab_sockio_owe(&s.io, AB_SOCKIO_HIGH + 1) == 0);
  CHECK(!ab_sockio_may_read(&s.io));
  CHECK(!(s.io.events & UV_READABLE));
  CHECK(send(b, "abcd", 4, 0) == 4);
  usleep(20000);
  uv_run(&loop, UV_RUN_NOWAIT);
  CHECK_EQ_U64(s.readable_calls, 0);
  uint8_t buf[16];
  CHECK(ab_sockio_recv(&s.io, buf, sizeof(buf)) == 0);
  CHECK(ab_sockio_owe(&s.io, AB_SOCKIO_LOW + 1) == 0);
  CHECK(!ab_sockio_may_read(&s.io));
  uv_run(&loop, UV_RUN_NOWAIT);
  CHECK_EQ_U64(s.readable_calls, 0);
  CHECK(ab_sockio_owe(&s.io, AB_SOCKIO_LOW) == 0);
  CHECK(ab_sockio_may_read(&s.io));
  CHECK(s.io.events & UV_READABLE);
  uv_run(&loop, UV_RUN_NOWAIT);
  CHECK_EQ_U64(s.readable_calls, 1);
  CHECK_EQ_U64(s.got, 4);
  /* what the owner is allowed of its own raises both bounds */
  CHECK(ab_sockio_allow(&s.io, AB_SOCKIO_HIGH) == 0);
  CHECK(ab_sockio_owe(&s.io, 2 * AB_SOCKIO_HIGH) == 0);
  CHECK(ab_sockio_may_read(&s.io));
  CHECK(ab_sockio_owe(&s.io, 2 * AB_SOCKIO_HIGH + 1) == 0);
  CHECK(!ab_sockio_may_read(&s.io));
  CHECK(ab_sockio_owe(&s.io, AB_SOCKIO_HIGH + AB_SOCKIO_LOW + 1) == 0);
  CHECK(!ab_sockio_may_read(&s.io));
  CHECK(ab_sockio_owe(&s.io, AB_SOCKIO_HIGH + AB_SOCKIO_LOW) == 0);
  CHECK(ab_sockio_may_read(&s.io));
  CHECK(ab_sockio_allow(&s.io, SIZE_MAX) == 0);
  CHECK(ab_sockio_owe(&s.io, SIZE_MAX / 2) == 0);
  CHECK(ab_sockio_may_read(&s.io)); /* all of it the owner's own */
  CHECK(ab_sockio_owe(&s.io, 0) == 0);
  close_side(&s);
  close(b);
}

/* The peer closes: recv says UV_EOF. */
static void test_eof(void) {
  side_t s;
  int b = open_pair(&s, 0, 1);
  CHECK(send(b, "abc", 3, 0) == 3);
  close(b);
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK_EQ_U64(s.got, 3);
  CHECK(s.last == UV_EOF);
  CHECK_EQ_U64(s.errors, 0);
  close_side(&s);
}

static void reset(int fd) {
  struct linger lg = {1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  close(fd);
}

/* The peer sends 100000 bytes and resets: they are all read, then recv
 * reports the reset; on_error is not called (the reader saw it).  First a
 * read that ends on EAGAIN, so that the error path cannot rely on the last
 * read's state. */
static void test_reset_after_data(void) {
  side_t s;
  int b = open_pair(&s, 0, 1);
  CHECK(send(b, "warm", 4, 0) == 4);
  for (int i = 0; i < 100 && s.got < 4; i++) {
    usleep(1000);
    uv_run(&loop, UV_RUN_NOWAIT);
  }
  CHECK_EQ_U64(s.got, 4);
  CHECK(s.io.would_block); /* the test reader reads until EAGAIN */
  s.got = 0;
  size_t total = 100000, off = 0;
  uint8_t *data = calloc(1, total);
  while (off < total) {
    ssize_t n = send(b, data + off, total - off, 0);
    CHECK(n > 0);
    if (n <= 0) break;
    off += (size_t)n;
  }
  reset(b);
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK_EQ_U64(s.got, total);
  CHECK(s.last == UV_ECONNRESET);
  CHECK_EQ_U64(s.errors, 0);
  close_side(&s);
  free(data);
}

/* Output pending over the bound (reads stopped) when the peer resets: the
 * pending output is dropped, which lets reading go on, and the reader
 * meets the reset in recv; on_error stays silent.  With reads held by the
 * owner instead, on_error reports it. */
static void test_reset_while_pending(int hold) {
  side_t s;
  int b = open_pair(&s, 1, 1);
  size_t total = (size_t)8 << 20;
  uint8_t *data = calloc(1, total);
  CHECK(ab_sockio_send(&s.io, data, total) == 0);
  CHECK(!ab_sockio_idle(&s.io));
  CHECK(!ab_sockio_may_read(&s.io));
  if (hold) CHECK(ab_sockio_hold_reads(&s.io, 1) == 0);
  reset(b);
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(ab_sockio_idle(&s.io)); /* dropped */
  if (hold) {
    CHECK_EQ_U64(s.errors, 1);
    CHECK(s.error == UV_ECONNRESET || s.error == UV_EPIPE);
    CHECK_EQ_U64(s.readable_calls, 0);
    CHECK(s.io.failed);
  } else {
    CHECK_EQ_U64(s.errors, 0);
    CHECK(s.readable_calls >= 1);
    CHECK(s.last == UV_ECONNRESET || s.last == UV_EPIPE);
  }
  close_side(&s);
  free(data);
}

/* The peer sends 1000 bytes and resets before we send: our send fails
 * (and takes the socket's error), yet returns 0; the reader still gets the
 * 1000 bytes, then the reset that the send met, not a plain EOF. */
static void test_send_after_reset(void) {
  side_t s;
  int b = open_pair(&s, 0, 1);
  uint8_t data[1000];
  memset(data, 'x', sizeof(data));
  CHECK(send(b, data, sizeof(data), 0) == (ssize_t)sizeof(data));
  reset(b);
  usleep(50000); /* the RST is in */
  CHECK(ab_sockio_send(&s.io, data, 10) == 0);
  CHECK(s.io.wdead == UV_ECONNRESET || s.io.wdead == UV_EPIPE);
  CHECK(ab_sockio_send(&s.io, data, 10) == 0); /* discarded */
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK_EQ_U64(s.got, sizeof(data));
  CHECK(s.last == UV_ECONNRESET || s.last == UV_EPIPE);
  CHECK_EQ_U64(s.errors, 0);
  close_side(&s);
}

/* How the peer left decides the class, not the timing of our reads and
 * writes (ab_error.h ab_err_stream_end).  The peer sends 1000 bytes and
 * ends in order (FIN), then its kernel resets the connection (it closes
 * with SO_LINGER 0; a server closing with requests unread does the same
 * after its FIN).  Our send meets the reset after the FIN: Linux reports
 * it as EPIPE (the socket is in CLOSE_WAIT), never ECONNRESET, and that
 * first error is the one kept; the reader gets the 1000 bytes, then that
 * error -- counted on the client side as the peer's orderly close
 * (ECLOSED), on the server side as a reset.  A reset with no FIN before
 * it is ECONNRESET on both sides. */
static void test_fin_then_reset(int fin_first) {
  side_t s;
  int b = open_pair(&s, 0, 1);
  uint8_t data[1000];
  memset(data, 'x', sizeof(data));
  CHECK(send(b, data, sizeof(data), 0) == (ssize_t)sizeof(data));
  if (fin_first) CHECK(shutdown(b, SHUT_WR) == 0);
  usleep(20000); /* the FIN is in */
  reset(b);
  usleep(50000); /* the RST is in */
  CHECK(ab_sockio_send(&s.io, data, 10) == 0);
  int want = fin_first ? UV_EPIPE : UV_ECONNRESET;
  CHECK(s.io.wdead == want);
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK_EQ_U64(s.got, sizeof(data));
  CHECK(s.last == want);
  CHECK(ab_err_stream_end((int)s.last, AB_SIDE_CLIENT) == (fin_first ? AB_ECLOSED : UV_ECONNRESET));
  CHECK(ab_err_stream_end((int)s.last, AB_SIDE_SERVER) == UV_ECONNRESET);
  close_side(&s);
}

/* Held reads: data waiting is not read until the owner lets go. */
static void test_hold_reads(void) {
  side_t s;
  int b = open_pair(&s, 0, 0);
  CHECK(ab_sockio_hold_reads(&s.io, 1) == 0);
  CHECK(!ab_sockio_may_read(&s.io));
  CHECK(send(b, "abcd", 4, 0) == 4);
  usleep(20000);
  uv_run(&loop, UV_RUN_NOWAIT);
  uv_run(&loop, UV_RUN_NOWAIT);
  CHECK_EQ_U64(s.readable_calls, 0);
  CHECK(ab_sockio_hold_reads(&s.io, 0) == 0);
  CHECK(ab_sockio_may_read(&s.io));
  uv_run(&loop, UV_RUN_NOWAIT);
  CHECK_EQ_U64(s.readable_calls, 1);
  CHECK_EQ_U64(s.got, 4);
  close_side(&s);
  close(b);
}

/* Building in place: reserve + commit sends, and commits queue in order
 * behind pending output. */
static void test_reserve_commit(void) {
  side_t s;
  int b = open_pair(&s, 0, 0);
  uint8_t *d = ab_sockio_reserve(&s.io, 1000);
  CHECK(d != NULL);
  for (size_t i = 0; i < 1000; i++) d[i] = pattern(i);
  CHECK(ab_sockio_commit(&s.io, 1000) == 0);
  CHECK(ab_sockio_idle(&s.io)); /* the kernel took it all */
  uint8_t buf[1000];
  size_t got = 0;
  while (got < sizeof(buf)) {
    ssize_t n = recv(b, buf + got, sizeof(buf) - got, 0);
    CHECK(n > 0);
    if (n <= 0) break;
    got += (size_t)n;
  }
  int bad = 0;
  for (size_t i = 0; i < got; i++)
    if (buf[i] != pattern(i)) bad++;
  CHECK_EQ_U64(got, 1000);
  CHECK_EQ_U64(bad, 0);
  close_side(&s);
  close(b);
}

/* A reopened connection starts its sockio again on the same memory: the
 * owner's lock and the watch's start count (by which shared:N tells an
 * event for the old descriptor apart) survive it. */
static void test_restart_keeps(void) {
  side_t s;
  int b = open_pair(&s, 0, 0);
  ab_sockio_close(&s.io);
  uv_run(&loop, UV_RUN_NOWAIT); /* the watch's uv_poll closes */
  pthread_mutex_t mu;
  s.io.watch.lock = &mu;
  s.io.watch.gen = 7;
  CHECK(ab_sockio_start(&s.io, &reactor, &s.tcp, on_readable, on_error) == 0);
  CHECK(s.io.watch.lock == &mu);
  CHECK_EQ_U64(s.io.watch.gen, 7);
  close_side(&s);
  close(b);
}

int main(void) {
  CHECK(uv_loop_init(&loop) == 0);
  ab_reactor_uv_init(&reactor, &loop, NULL);
  test_pending((size_t)1 << 20);
  test_pending((size_t)8 << 20);
  test_owe();
  test_eof();
  test_reset_after_data();
  test_reset_while_pending(0);
  test_reset_while_pending(1);
  test_send_after_reset();
  test_fin_then_reset(1);
  test_fin_then_reset(0);
  test_hold_reads();
  test_reserve_commit();
  test_restart_keeps();
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0);
  TEST_DONE();
}
