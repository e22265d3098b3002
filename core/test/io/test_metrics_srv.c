/* test_metrics_srv.c -- metrics_srv.h: port 0 is bound and reported, GET
 * /metrics answers the text last set (with its Content-Length and type),
 * other paths 404 and other methods 405, a client that never sends its
 * request holds no one up for longer than the 2 s limit, a taken port is
 * -EADDRINUSE, and stop closes the port. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "io/metrics_srv.h"
#include "test/ab_test.h"

static int dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* sends req, reads the whole answer into buf (closed by the server) */
static size_t ask(int port, const char *req, char *buf, size_t cap) {
  int fd = dial(port);
  if (fd < 0) return 0;
  ssize_t w = write(fd, req, strlen(req));
  (void)w;
  size_t got = 0;
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0) break;
    ssize_t r = read(fd, buf + got, cap - 1 - got);
    if (r <= 0) break;
    got += (size_t)r;
  }
  buf[got] = '\0';
  close(fd);
  return got;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(void) {
  ab_metrics_srv_t *s = NULL;
  int port = 0;
  CHECK(ab_metrics_srv_start("127.0.0.1", 0, &s, &port) == 0);
  CHECK(port > 0);
  char buf[8192];

  /* nothing set yet: an empty 200 */
  ask(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof(buf));
  CHECK(strncmp(buf, "HTTP/1.1 200 OK\r\n", 17) == 0);
  CHECK(strstr(buf, "Content-Length: 0\r\n") != NULL);

  const char *text = "# TYPE a gauge\na 1\n# EOF\n";
  ab_metrics_srv_set(s, text, strlen(text));
  ask(port, "GET /metrics?x=1 HTTP/1.0\r\n\r\n", buf, sizeof(buf));
  CHECK(strstr(buf, "Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n") != NULL);
  CHECK(strstr(buf, "Content-Length: 25\r\n") != NULL);
  const char *body = strstr(buf, "\r\n\r\n");
  CHECK(body != NULL && strcmp(body + 4, text) == 0);

  /* the request head split over two writes */
  int fd = dial(port);
  CHECK(fd >= 0);
  CHECK(write(fd, "GET /met", 8) == 8);
  usleep(50000);
  CHECK(write(fd, "rics HTTP/1.1\r\n\r\n", 17) == 17);
  size_t got = 0;
  for (ssize_t r; (r = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0;) got += (size_t)r;
  buf[got] = '\0';
  close(fd);
  CHECK(strstr(buf, "200 OK") != NULL && strstr(buf, "a 1\n") != NULL);
  CHECK_EQ_U64(ab_metrics_srv_scrapes(s), 3);

  ask(port, "GET /other HTTP/1.1\r\n\r\n", buf, sizeof(buf));
  CHECK(strncmp(buf, "HTTP/1.1 404 ", 13) == 0);
  ask(port, "POST /metrics HTTP/1.1\r\n\r\n", buf, sizeof(buf));
  CHECK(strncmp(buf, "HTTP/1.1 405 ", 13) == 0);

  /* a client that says nothing is dropped after the limit; the next is served */
  int idle = dial(port);
  CHECK(idle >= 0);
  double t0 = now_s();
  ask(port, "GET / HTTP/1.1\r\n\r\n", buf, sizeof(buf));
  double waited = now_s() - t0;
  CHECK(strstr(buf, "200 OK") != NULL);
  CHECK(waited < 4.5);
  close(idle);

  /* the port is taken while it serves */
  ab_metrics_srv_t *s2 = NULL;
  CHECK(ab_metrics_srv_start("127.0.0.1", port, &s2, NULL) == -EADDRINUSE);
  CHECK(ab_metrics_srv_start("127.0.0.1", 70000, &s2, NULL) == -EINVAL);

  ab_metrics_srv_stop(s);
  CHECK(dial(port) < 0);
  TEST_DONE();
}
