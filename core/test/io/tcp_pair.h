/* tcp_pair.h -- for the io tests: a connected loopback TCP pair, *a (the
 * side under test) and *b (its peer), and the byte pattern they send.
 * Fails the test (CHECK) when the kernel refuses any step. */
#ifndef AB_TEST_TCP_PAIR_H
#define AB_TEST_TCP_PAIR_H

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test/ab_test.h"

static void tcp_pair(int *a, int *b) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr;
  socklen_t len = sizeof(addr);
  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK(bind(l, (struct sockaddr *)&addr, sizeof(addr)) == 0);
  CHECK(listen(l, 1) == 0);
  CHECK(getsockname(l, (struct sockaddr *)&addr, &len) == 0);
  *a = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(connect(*a, (struct sockaddr *)&addr, sizeof(addr)) == 0);
  *b = accept(l, NULL, NULL);
  CHECK(*b >= 0);
  close(l);
}

static uint8_t pattern(size_t i) { return (uint8_t)((i * 7 + 3) % 251); }

#endif
