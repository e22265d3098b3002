/* bench/crr_loop.c -- the raw baseline of connection churn (bench/churn.sh,
 * bench/README.md): netperf TCP_CRR's shape in plain C, nothing but
 * sockets and epoll.
 *
 *   crr_loop --connect HOST:PORT [--connections N] [--threads T]
 *            [--payload B] [--warmup S] [--duration S]
 *
 * N connection slots (default 64) on T threads (default 1), each thread one
 * epoll loop with its share of the slots.  A slot repeats, as fast as the
 * server lets it: a non-blocking connect (TCP_NODELAY), one write of a
 * B-byte message (default 64; raw framing: no prefix), a read of B bytes
 * of echo (compared with what was sent), close(), and again -- so every
 * message has a connection of its own, as arkbench's
 * requests_per_connection = 1.  The client closes first (its side keeps
 * the TIME_WAIT; on loopback Linux reuses those ports with the default
 * net.ipv4.tcp_tw_reuse = 2).
 *
 * The server is any raw-framing echo: `arkbench serve --protocol tcp
 * --framing raw --payload B`, `asio_echo --mode server --framing raw`.
 *
 * Prints one JSON line: {"tool":"crr_loop",...,"connections_per_s":X,...}
 * where X = cycles (connect + echo + close) finished in the measured
 * interval (after the warm-up) / its length; connect_errors and
 * echo_errors count failed cycles (a failed slot starts again).  Exit 0
 * when no cycle failed, 1 when one did, 2 on a wrong command line.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_PAYLOAD (1u << 20)

typedef struct {
  int fd;
  size_t sent, got;
  uint8_t *out, *in;
} slot_t;

typedef struct {
  pthread_t th;
  int ep;
  size_t nslots;
  slot_t *slots;
  _Atomic uint64_t cycles, connect_errors, echo_errors;
} worker_t;

static struct sockaddr_storage g_addr;
static socklen_t g_addrlen;
static size_t g_payload = 64;
static atomic_int g_stop;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void bump(_Atomic uint64_t *c) { /* one writer: no locked add */
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                        memory_order_relaxed);
}

/* a new connection for s; 0 or -1 (counted by the caller) */
static int slot_open(worker_t *w, slot_t *s) {
  s->sent = s->got = 0;
  s->fd = socket(g_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->fd < 0) return -1;
  int one = 1;
  setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(s->fd, (struct sockaddr *)&g_addr, g_addrlen) != 0 && errno != EINPROGRESS) {
    close(s->fd);
    s->fd = -1;
    return -1;
  }
  struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = s};
  if (epoll_ctl(w->ep, EPOLL_CTL_ADD, s->fd, &ev) != 0) {
    close(s->fd);
    s->fd = -1;
    return -1;
  }
  return 0;
}

/* closes s and opens the next connection; failed opens are retried on the
 * next turn of the loop (s->fd stays -1) */
static void slot_again(worker_t *w, slot_t *s, _Atomic uint64_t *count) {
  if (s->fd >= 0) close(s->fd); /* close() drops it from the epoll set */
  s->fd = -1;
  bump(count);
  if (!atomic_load_explicit(&g_stop, memory_order_relaxed) && slot_open(w, s) != 0)
    bump(&w->connect_errors);
}

static void slot_event(worker_t *w, slot_t *s, uint32_t events) {
  if (s->sent < g_payload) { /* connecting, or writing */
    if (events & (EPOLLERR | EPOLLHUP)) return slot_again(w, s, &w->connect_errors);
    ssize_t n = send(s->fd, s->out + s->sent, g_payload - s->sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINPROGRESS)) return;
    if (n <= 0) return slot_again(w, s, s->sent ? &w->echo_errors : &w->connect_errors);
    s->sent += (size_t)n;
    if (s->sent == g_payload) {
      struct epoll_event ev = {.events = EPOLLIN, .data.ptr = s};
      if (epoll_ctl(w->ep, EPOLL_CTL_MOD, s->fd, &ev) != 0) return slot_again(w, s, &w->echo_errors);
    }
    return;
  }
  ssize_t n = recv(s->fd, s->in + s->got, g_payload - s->got, 0);
  if (n < 0 && errno == EAGAIN) return;
  if (n <= 0) return slot_again(w, s, &w->echo_errors);
  s->got += (size_t)n;
  if (s->got < g_payload) return;
  if (memcmp(s->in, s->out, g_payload) != 0) return slot_again(w, s, &w->echo_errors);
  slot_again(w, s, &w->cycles);
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  struct epoll_event evs[256];
  for (size_t i = 0; i < w->nslots; i++)
    if (slot_open(w, &w->slots[i]) != 0) bump(&w->connect_errors);
  while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
    int n = epoll_wait(w->ep, evs, 256, 10);
    for (int i = 0; i < n; i++) slot_event(w, evs[i].data.ptr, evs[i].events);
    for (size_t i = 0; i < w->nslots; i++) /* slots whose open failed */
      if (w->slots[i].fd < 0 && slot_open(w, &w->slots[i]) != 0) bump(&w->connect_errors);
  }
  for (size_t i = 0; i < w->nslots; i++)
    if (w->slots[i].fd >= 0) close(w->slots[i].fd);
  return NULL;
}

static void usage(const char *why) {
  fprintf(stderr, "crr_loop: %s\nusage: crr_loop --connect HOST:PORT [--connections N] "
          "[--threads T] [--payload B] [--warmup S] [--duration S]\n", why);
  exit(2);
}

static double num(const char *key, const char *v, double lo, double hi) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (!*v || *end || errno || !(x >= lo && x <= hi)) {
    char m[160];
    snprintf(m, sizeof m, "%s: got '%s'; expected a number from %g to %g", key, v, lo, hi);
    usage(m);
  }
  return x;
}

static void parse_addr(const char *hp) {
  char host[128];
  const char *colon = strrchr(hp, ':');
  if (!colon || (size_t)(colon - hp) >= sizeof host) usage("--connect: expected HOST:PORT");
  memcpy(host, hp, (size_t)(colon - hp));
  host[colon - hp] = 0;
  int port = (int)num("--connect port", colon + 1, 1, 65535);
  memset(&g_addr, 0, sizeof g_addr);
  struct sockaddr_in *a4 = (struct sockaddr_in *)&g_addr;
  struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&g_addr;
  size_t hl = strlen(host);
  if (hl > 2 && host[0] == '[' && host[hl - 1] == ']') {
    host[hl - 1] = 0;
    if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1) usage("--connect: bad IPv6 address");
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)port);
    g_addrlen = sizeof *a6;
  } else {
    if (inet_pton(AF_INET, host, &a4->sin_addr) != 1) usage("--connect: expected a numeric address");
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)port);
    g_addrlen = sizeof *a4;
  }
}

static uint64_t total(worker_t *ws, int nt, size_t off) {
  uint64_t n = 0;
  for (int i = 0; i < nt; i++) n += atomic_load((_Atomic uint64_t *)((char *)&ws[i] + off));
  return n;
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

int main(int argc, char **argv) {
  const char *connect_to = NULL;
  size_t conns = 64;
  int threads = 1;
  double warmup = 0.5, duration = 2;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) usage("the raw connect/echo/close loop");
    if (i + 1 >= argc) usage("an option without its value");
    const char *v = argv[++i];
    if (!strcmp(a, "--connect")) connect_to = v;
    else if (!strcmp(a, "--connections")) conns = (size_t)num(a, v, 1, 100000);
    else if (!strcmp(a, "--threads")) threads = (int)num(a, v, 1, 64);
    else if (!strcmp(a, "--payload")) g_payload = (size_t)num(a, v, 1, MAX_PAYLOAD);
    else if (!strcmp(a, "--warmup")) warmup = num(a, v, 0, 3600);
    else if (!strcmp(a, "--duration")) duration = num(a, v, 0.01, 3600);
    else usage("unknown option");
  }
  if (!connect_to) usage("--connect HOST:PORT is required");
  parse_addr(connect_to);
  if ((size_t)threads > conns) threads = (int)conns;
  signal(SIGPIPE, SIG_IGN);

  worker_t *ws = calloc((size_t)threads, sizeof *ws);
  slot_t *slots = calloc(conns, sizeof *slots);
  uint8_t *bufs = malloc(conns * g_payload * 2);
  if (!ws || !slots || !bufs) return fprintf(stderr, "crr_loop: out of memory\n"), 1;
  for (size_t i = 0; i < conns; i++) {
    slots[i].fd = -1;
    slots[i].out = bufs + i * g_payload * 2;
    slots[i].in = slots[i].out + g_payload;
    for (size_t k = 0; k < g_payload; k++) slots[i].out[k] = (uint8_t)(i * 131 + k * 7 + 1);
  }
  size_t at = 0;
  for (int t = 0; t < threads; t++) {
    ws[t].nslots = conns / (size_t)threads + ((size_t)t < conns % (size_t)threads);
    ws[t].slots = slots + at;
    at += ws[t].nslots;
    ws[t].ep = epoll_create1(EPOLL_CLOEXEC);
    if (ws[t].ep < 0 || pthread_create(&ws[t].th, NULL, worker_main, &ws[t]) != 0)
      return fprintf(stderr, "crr_loop: epoll/thread: %s\n", strerror(errno)), 1;
  }
  sleep_s(warmup);
  uint64_t c0 = total(ws, threads, offsetof(worker_t, cycles));
  double t0 = now_s();
  sleep_s(duration);
  uint64_t c1 = total(ws, threads, offsetof(worker_t, cycles));
  double t1 = now_s();
  atomic_store(&g_stop, 1);
  for (int t = 0; t < threads; t++) pthread_join(ws[t].th, NULL);
  uint64_t ce = total(ws, threads, offsetof(worker_t, connect_errors));
  uint64_t ee = total(ws, threads, offsetof(worker_t, echo_errors));
  printf("{\"tool\":\"crr_loop\",\"connect\":\"%s\",\"connections\":%zu,\"threads\":%d,"
         "\"payload\":%zu,\"warmup_s\":%g,\"measured_s\":%.6f,\"cycles\":%llu,"
         "\"connections_per_s\":%.1f,\"connect_errors\":%llu,\"echo_errors\":%llu}\n",
         connect_to, conns, threads, g_payload, warmup, t1 - t0,
         (unsigned long long)(c1 - c0), (double)(c1 - c0) / (t1 - t0),
         (unsigned long long)ce, (unsigned long long)ee);
  return ce || ee ? 1 : 0;
}
