/* floor.c -- raw epoll loopback echo: the floor arkbench is compared with.
 *
 * Everything runs in the calling thread.  Both ends of every connection sit
 * in one level-triggered epoll set; the epoll data pointer is the conn_t.
 * The client end owes the socket a byte count (`unsent`) rather than bytes:
 * the floor never looks at content, so every client writes from one shared
 * zero-filled buffer.  The server end echoes real bytes and parks a short
 * write in its own pending buffer, which it allocates on first need.
 */
#include "io/floor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/ab_error.h"

#define READ_BUF_BYTES ((size_t)256 << 10) /* one recv at most */
#define SEND_BUF_MAX ((size_t)4 << 20)     /* one client send at most */
#define MAX_EVENTS 512
#define ACCEPT_TIMEOUT_MS 5000

typedef struct conn_s {
  int fd;
  int is_client;
  uint32_t interest; /* events currently registered */
  /* client end */
  size_t partial;  /* bytes received of the message now arriving */
  uint64_t unsent; /* bytes owed to the socket after short writes */
  /* server end */
  char *pend; /* READ_BUF_BYTES, allocated on the first short write */
  size_t pend_off, pend_len;
} conn_t;

typedef struct floor_s {
  const ab_floor_cfg_t *cfg;
  int ep;
  int lfd;
  conn_t *conns; /* 2*clients: client end at 2i, server end at 2i+1 */
  int nconns;
  char *rbuf; /* shared receive buffer (content discarded or echoed) */
  char *sbuf; /* shared zero-filled send buffer for clients */
  size_t sbuf_len;
  int counting; /* inside the measure interval */
  uint64_t round_trips;
} floor_t;

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU of this thread only: the floor is single-threaded by construction and
 * loopback TCP processing is charged to the sending thread as sys time. */
static void thread_cpu(double *user_s, double *sys_s) {
  struct rusage ru;
  if (getrusage(RUSAGE_THREAD, &ru) != 0) memset(&ru, 0, sizeof(ru));
  *user_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
  *sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

int ab_floor_check(const ab_floor_cfg_t *cfg, const char **why) {
  const char *w = NULL;
  if (cfg == NULL)
    w = "no configuration";
  else if (cfg->payload < 1 || cfg->payload > AB_FLOOR_MAX_PAYLOAD)
    w = "payload must be 1 .. 16777216 bytes";
  else if (cfg->clients < 1 || cfg->clients > AB_FLOOR_MAX_CLIENTS)
    w = "clients must be 1 .. 100000";
  else if (cfg->window < 1 || cfg->window > AB_FLOOR_MAX_WINDOW)
    w = "window must be 1 .. 4096";
  else if (!isfinite(cfg->warmup_s) || cfg->warmup_s < 0 ||
           cfg->warmup_s > 86400)
    w = "warmup must be 0 .. 86400 seconds";
  else if (!isfinite(cfg->duration_s) || cfg->duration_s <= 0 ||
           cfg->duration_s > 86400)
    w = "duration must be > 0 and <= 86400 seconds";
  else if ((uint64_t)cfg->clients * (uint64_t)cfg->window * cfg->payload >
           AB_FLOOR_MAX_INFLIGHT)
    w = "clients x window x payload must be <= 1 GiB";
  if (why != NULL) *why = w;
  return w == NULL ? 0 : AB_ECONFIG;
}

static int set_interest(floor_t *f, conn_t *c, uint32_t events) {
  if (c->interest == events) return 0;
  struct epoll_event ev = {.events = events, .data.ptr = c};
  if (epoll_ctl(f->ep, EPOLL_CTL_MOD, c->fd, &ev) != 0) return -errno;
  c->interest = events;
  return 0;
}

/* Hands as much of c->unsent to the socket as it takes; one send call per
 * batch unless the batch exceeds the shared buffer. */
static int client_flush(floor_t *f, conn_t *c) {
  while (c->unsent > 0) {
    size_t n = c->unsent < f->sbuf_len ? (size_t)c->unsent : f->sbuf_len;
    ssize_t w = send(c->fd, f->sbuf, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return -errno;
    }
    c->unsent -= (uint64_t)w;
    if ((size_t)w < n) break; /* socket buffer full: wait for EPOLLOUT */
  }
  return set_interest(f, c, EPOLLIN | (c->unsent > 0 ? EPOLLOUT : 0));
}

/* Reads everything available, counts whole echoed messages and sends as
 * many new ones in one batch.  Nothing is sent after the deadline because
 * the loop stops handling events there. */
static int client_readable(floor_t *f, conn_t *c) {
  uint64_t got = 0;
  for (;;) {
    ssize_t n = recv(c->fd, f->rbuf, READ_BUF_BYTES, 0);
    if (n > 0) {
      got += (uint64_t)n;
      if ((size_t)n < READ_BUF_BYTES) break; /* drained */
      continue;
    }
    if (n == 0) return AB_ECLOSED;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    return -errno;
  }
  uint64_t payload = f->cfg->payload;
  uint64_t total = c->partial + got;
  uint64_t done = total / payload;
  c->partial = (size_t)(total % payload);
  if (f->counting) f->round_trips += done;
  if (done == 0) return 0;
  c->unsent += done * payload;
  return client_flush(f, c);
}

/* Echoes what is available.  After a short write it keeps the rest and
 * stops reading (EPOLLOUT only) until the rest is gone, so the pending
 * buffer never holds more than one read. */
static int server_readable(floor_t *f, conn_t *c) {
  for (;;) {
    ssize_t n = recv(c->fd, f->rbuf, READ_BUF_BYTES, 0);
    if (n == 0) return AB_ECLOSED;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      return -errno;
    }
    size_t off = 0;
    while (off < (size_t)n) {
      ssize_t w = send(c->fd, f->rbuf + off, (size_t)n - off, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return -errno;
      }
      off += (size_t)w;
    }
    if (off < (size_t)n) {
      if (c->pend == NULL && (c->pend = malloc(READ_BUF_BYTES)) == NULL)
        return AB_ENOMEM;
      c->pend_len = (size_t)n - off;
      c->pend_off = 0;
      memcpy(c->pend, f->rbuf + off, c->pend_len);
      return set_interest(f, c, EPOLLOUT);
    }
    if ((size_t)n < READ_BUF_BYTES) return 0;
  }
}

static int server_writable(floor_t *f, conn_t *c) {
  while (c->pend_len > 0) {
    ssize_t w = send(c->fd, c->pend + c->pend_off, c->pend_len, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      return -errno;
    }
    c->pend_off += (size_t)w;
    c->pend_len -= (size_t)w;
  }
  return set_interest(f, c, EPOLLIN);
}

static int handle(floor_t *f, conn_t *c, uint32_t ev) {
  int err = 0;
  if (ev & EPOLLERR) {
    int so = 0;
    socklen_t len = sizeof(so);
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &so, &len) != 0) return -errno;
    return so != 0 ? -so : AB_ECLOSED;
  }
  if (c->is_client) {
    if (ev & (EPOLLIN | EPOLLHUP)) err = client_readable(f, c);
    if (err == 0 && (ev & EPOLLOUT)) err = client_flush(f, c);
  } else {
    if (ev & EPOLLOUT)
      err = server_writable(f, c);
    else if (ev & (EPOLLIN | EPOLLHUP))
      err = server_readable(f, c);
  }
  return err;
}

static int tune_socket(int fd) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
    return -errno;
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) return -errno;
  return 0;
}

static int add_conn(floor_t *f, conn_t *c, int fd, int is_client) {
  c->fd = fd;
  c->is_client = is_client;
  int err = tune_socket(fd);
  if (err != 0) return err;
  c->interest = EPOLLIN;
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
  if (epoll_ctl(f->ep, EPOLL_CTL_ADD, fd, &ev) != 0) return -errno;
  return 0;
}

/* Connects the clients one by one, accepting each before the next connect,
 * so the accept queue never holds more than one connection. */
static int setup(floor_t *f) {
  struct sockaddr_in addr;
  socklen_t alen = sizeof(addr);
  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;

  if ((f->ep = epoll_create1(EPOLL_CLOEXEC)) < 0) return -errno;
  if ((f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
    return -errno;
  if (bind(f->lfd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
      listen(f->lfd, SOMAXCONN) != 0 ||
      getsockname(f->lfd, (struct sockaddr *)&addr, &alen) != 0)
    return -errno;

  for (int i = 0; i < f->cfg->clients; i++) {
    conn_t *cc = &f->conns[2 * i], *sc = &f->conns[2 * i + 1];
    int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (cfd < 0) return -errno;
    cc->fd = cfd; /* owned from here on: cleanup closes it */
    /* Blocking connect; after a signal it goes on in the background, so a
     * retry sees EALREADY until it completes and then EISCONN. */
    while (connect(cfd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
      if (errno == EISCONN) break;
      if (errno != EINTR && errno != EALREADY) return -errno;
    }
    struct pollfd p = {.fd = f->lfd, .events = POLLIN};
    int r;
    while ((r = poll(&p, 1, ACCEPT_TIMEOUT_MS)) < 0 && errno == EINTR) {
    }
    if (r < 0) return -errno;
    if (r == 0) return AB_ETIMEDOUT;
    int sfd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (sfd < 0) return -errno;
    sc->fd = sfd;
    int err = add_conn(f, cc, cfd, 1);
    if (err == 0) err = add_conn(f, sc, sfd, 0);
    if (err != 0) return err;
  }
  return 0;
}

static void cleanup(floor_t *f) {
  for (int i = 0; i < f->nconns; i++) {
    if (f->conns[i].fd >= 0) close(f->conns[i].fd);
    free(f->conns[i].pend);
  }
  free(f->conns);
  if (f->lfd >= 0) close(f->lfd);
  if (f->ep >= 0) close(f->ep);
  free(f->rbuf);
  free(f->sbuf);
}

/* Milliseconds epoll_wait may sleep before `deadline`, rounded up. */
static int wait_ms(uint64_t now, uint64_t deadline) {
  if (now >= deadline) return 0;
  uint64_t ms = (deadline - now + 999999u) / 1000000u;
  return ms > 1000 ? 1000 : (int)ms;
}

static int run_loop(floor_t *f, ab_floor_result_t *out) {
  const ab_floor_cfg_t *cfg = f->cfg;
  struct epoll_event events[MAX_EVENTS];
  double u0 = 0, s0 = 0, u1, s1;

  /* Full windows out first. */
  for (int i = 0; i < cfg->clients; i++) {
    conn_t *c = &f->conns[2 * i];
    c->unsent = (uint64_t)cfg->window * cfg->payload;
    int err = client_flush(f, c);
    if (err != 0) return err;
  }

  uint64_t t0 = mono_ns();
  uint64_t t_measure = t0 + (uint64_t)llround(cfg->warmup_s * 1e9);
  uint64_t duration_ns = (uint64_t)llround(cfg->duration_s * 1e9);
  uint64_t t_start = 0, t_end = 0;

  for (;;) {
    /* The phase is decided once per wake-up: the events handled below were
     * read after `now`, so they belong to the phase in force at `now`. */
    uint64_t now = mono_ns();
    if (!f->counting && now >= t_measure) {
      f->counting = 1;
      f->round_trips = 0;
      t_start = now; /* the measure runs `duration` from when it began */
      t_end = now + duration_ns;
      thread_cpu(&u0, &s0);
    }
    if (f->counting && now >= t_end) {
      thread_cpu(&u1, &s1);
      out->round_trips = f->round_trips;
      out->elapsed_s = (double)(now - t_start) / 1e9;
      out->cpu_user_s = u1 - u0;
      out->cpu_sys_s = s1 - s0;
      break;
    }
    int n = epoll_wait(f->ep, events, MAX_EVENTS,
                       wait_ms(now, f->counting ? t_end : t_measure));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    for (int i = 0; i < n; i++) {
      int err = handle(f, events[i].data.ptr, events[i].events);
      if (err != 0) return err;
    }
  }

  if (out->elapsed_s > 0)
    out->round_trips_per_s = (double)out->round_trips / out->elapsed_s;
  if (out->round_trips_per_s > 0)
    out->mean_rtt_us =
        (double)cfg->clients * cfg->window / out->round_trips_per_s * 1e6;
  return 0;
}

int ab_floor_run(const ab_floor_cfg_t *cfg, ab_floor_result_t *out) {
  if (out == NULL) return AB_ECONFIG;
  memset(out, 0, sizeof(*out));
  int err = ab_floor_check(cfg, NULL);
  if (err != 0) return err;

  floor_t f;
  memset(&f, 0, sizeof(f));
  f.cfg = cfg;
  f.ep = -1;
  f.lfd = -1;
  f.nconns = 2 * cfg->clients;
  f.conns = calloc((size_t)f.nconns, sizeof(conn_t));
  f.rbuf = malloc(READ_BUF_BYTES);
  uint64_t batch = (uint64_t)cfg->window * cfg->payload;
  f.sbuf_len = batch < SEND_BUF_MAX ? (size_t)batch : SEND_BUF_MAX;
  f.sbuf = calloc(1, f.sbuf_len);
  if (f.conns == NULL || f.rbuf == NULL || f.sbuf == NULL) {
    f.nconns = f.conns == NULL ? 0 : f.nconns;
    for (int i = 0; i < f.nconns; i++) f.conns[i].fd = -1;
    cleanup(&f);
    return AB_ENOMEM;
  }
  for (int i = 0; i < f.nconns; i++) f.conns[i].fd = -1;

  err = setup(&f);
  if (err == 0) err = run_loop(&f, out);
  cleanup(&f);
  if (err != 0) memset(out, 0, sizeof(*out));
  return err;
}
