/* metrics_srv.c -- the live-metrics HTTP listener (metrics_srv.h). */
#include "io/metrics_srv.h"

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEAD_MAX 8192
#define IO_TIMEOUT_MS 2000

struct ab_metrics_srv {
  int fd;          /* the listening socket */
  int stop[2];     /* self-pipe: a byte on stop[1] ends the thread */
  pthread_t thread;
  pthread_mutex_t lock; /* guards text, len */
  char *text;
  size_t len;
  uint64_t scrapes; /* under lock */
};

/* Waits until fd is ready for events or the deadline; 0 ready, -1 not. */
static int wait_fd(int fd, short events, int ms) {
  struct pollfd p = {fd, events, 0};
  int r;
  do r = poll(&p, 1, ms);
  while (r < 0 && errno == EINTR);
  return r > 0 ? 0 : -1;
}

static void send_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    if (wait_fd(fd, POLLOUT, IO_TIMEOUT_MS) != 0) return;
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

static void answer(ab_metrics_srv_t *s, int fd) {
  char head[HEAD_MAX + 1];
  size_t got = 0;
  /* the request head, up to its blank line (a body is not read) */
  while (got < HEAD_MAX) {
    if (wait_fd(fd, POLLIN, IO_TIMEOUT_MS) != 0) return;
    ssize_t r = recv(fd, head + got, HEAD_MAX - got, 0);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r <= 0) return;
    got += (size_t)r;
    head[got] = '\0';
    if (strstr(head, "\r\n\r\n") || strstr(head, "\n\n")) break;
  }
  head[got] = '\0';
  char method[16], path[256];
  if (sscanf(head, "%15s %255s", method, path) != 2) return;
  char *q = strchr(path, '?');
  if (q) *q = '\0';
  const char *status = NULL;
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) status = "405 Method Not Allowed";
  else if (strcmp(path, "/metrics") != 0 && strcmp(path, "/") != 0) status = "404 Not Found";
  if (status) {
    char r[256];
    int n = snprintf(r, sizeof(r),
                     "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                     "Content-Length: 23\r\nConnection: close\r\n\r\nonly GET /metrics here\n",
                     status);
    send_all(fd, r, (size_t)n);
    return;
  }
  pthread_mutex_lock(&s->lock);
  size_t len = s->len;
  char *body = len ? malloc(len) : NULL;
  if (body) memcpy(body, s->text, len);
  else len = 0;
  s->scrapes++;
  pthread_mutex_unlock(&s->lock);
  char h[256];
  int n = snprintf(h, sizeof(h),
                   "HTTP/1.1 200 OK\r\nContent-Type: application/openmetrics-text; "
                   "version=1.0.0; charset=utf-8\r\nContent-Length: %zu\r\n"
                   "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
                   len);
  send_all(fd, h, (size_t)n);
  if (strcmp(method, "GET") == 0) send_all(fd, body, len);
  free(body);
}

static void *serve(void *arg) {
  ab_metrics_srv_t *s = arg;
  for (;;) {
    struct pollfd p[2] = {{s->fd, POLLIN, 0}, {s->stop[0], POLLIN, 0}};
    int r = poll(p, 2, -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || p[1].revents) break;
    if (!(p[0].revents & POLLIN)) continue;
    int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) {
      if (errno == EMFILE || errno == ENFILE) wait_fd(s->stop[0], POLLIN, 100);
      continue;
    }
    answer(s, c);
    shutdown(c, SHUT_WR);
    close(c);
  }
  return NULL;
}

int ab_metrics_srv_start(const char *host, int port, ab_metrics_srv_t **out, int *bound_port) {
  struct addrinfo hints, *ai = NULL;
  memset(&hints, 0, sizeof(hints));
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
  char ps[16];
  snprintf(ps, sizeof(ps), "%d", port);
  if (port < 0 || port > 65535) return -EINVAL;
  if (getaddrinfo(host, ps, &hints, &ai) != 0 || ai == NULL) return -EINVAL;
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    int e = errno;
    freeaddrinfo(ai);
    return -e;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 16) != 0) {
    int e = errno;
    freeaddrinfo(ai);
    close(fd);
    return -e;
  }
  freeaddrinfo(ai);
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  int bp = port;
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
    if (ss.ss_family == AF_INET) bp = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    else if (ss.ss_family == AF_INET6) bp = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
  }
  ab_metrics_srv_t *s = calloc(1, sizeof(*s));
  if (!s) {
    close(fd);
    return -ENOMEM;
  }
  s->fd = fd;
  if (pipe2(s->stop, O_CLOEXEC) != 0) {
    int e = errno;
    close(fd);
    free(s);
    return -e;
  }
  pthread_mutex_init(&s->lock, NULL);
  /* the thread starts with every signal blocked: they stay the main thread's */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int e = pthread_create(&s->thread, NULL, serve, s);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (e != 0) {
    close(fd);
    close(s->stop[0]);
    close(s->stop[1]);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return -e;
  }
  *out = s;
  if (bound_port) *bound_port = bp;
  return 0;
}

void ab_metrics_srv_set(ab_metrics_srv_t *s, const char *text, size_t len) {
  char *copy = malloc(len ? len : 1);
  if (!copy) return; /* keep serving the previous text */
  memcpy(copy, text, len);
  pthread_mutex_lock(&s->lock);
  char *old = s->text;
  s->text = copy;
  s->len = len;
  pthread_mutex_unlock(&s->lock);
  free(old);
}

uint64_t ab_metrics_srv_scrapes(ab_metrics_srv_t *s) {
  pthread_mutex_lock(&s->lock);
  uint64_t n = s->scrapes;
  pthread_mutex_unlock(&s->lock);
  return n;
}

void ab_metrics_srv_stop(ab_metrics_srv_t *s) {
  if (!s) return;
  ssize_t w;
  do w = write(s->stop[1], "x", 1);
  while (w < 0 && errno == EINTR);
  pthread_join(s->thread, NULL);
  close(s->fd);
  close(s->stop[0]);
  close(s->stop[1]);
  pthread_mutex_destroy(&s->lock);
  free(s->text);
  free(s);
}
