/* timer_floor.c -- the machine's timer floor (timer_floor.h). */
#include "base/timer_floor.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "base/ab_error.h"
#include "base/clock.h"

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* nearest rank of p (0 .. 100) in the sorted v[0 .. n), us */
static double rank_us(const uint64_t *v, uint32_t n, double p) {
  uint32_t k = (uint32_t)(p / 100.0 * n + 0.999999);
  if (k < 1) k = 1;
  if (k > n) k = n;
  return (double)v[k - 1] / 1000.0;
}

/* One wake per instant; the lateness of each into lag[]. */
static int sleep_run(int tfd, int ep, uint32_t wakes, uint64_t gap_ns, uint64_t *lag) {
  uint64_t t0 = ab_now_ns();
  for (uint32_t k = 0; k < wakes; k++) {
    uint64_t due = t0 + (uint64_t)(k + 1) * gap_ns;
    struct itimerspec its;
    memset(&its, 0, sizeof(its));
    its.it_value.tv_sec = (time_t)(due / 1000000000u);
    its.it_value.tv_nsec = (long)(due % 1000000000u);
    if (ab_now_ns() < due) {
      if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0) return -errno;
      struct epoll_event ev;
      uint64_t exp;
      int r;
      while ((r = epoll_wait(ep, &ev, 1, -1)) != 1)
        if (r < 0 && errno != EINTR) return -errno;
      if (read(tfd, &exp, sizeof(exp)) < 0 && errno != EAGAIN) return -errno;
    }
    uint64_t woke = ab_now_ns();
    lag[k] = woke > due ? woke - due : 0;
  }
  return 0;
}

int ab_timer_floor_measure(uint32_t wakes, uint64_t gap_ns, ab_timer_floor_t *out) {
  memset(out, 0, sizeof(*out));
  if (wakes < 1 || wakes > 100000 || gap_ns < 1000 || gap_ns > 1000000000u) return AB_EINVAL;
  uint64_t *lag = malloc(wakes * sizeof(*lag));
  if (lag == NULL) return AB_ENOMEM;
  int r = 0, tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev;
  memset(&ev, 0, sizeof(ev));
  ev.events = EPOLLIN;
  if (tfd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) < 0) r = -errno;
  uint64_t cpu0 = thread_cpu_ns();
  if (r == 0) r = sleep_run(tfd, ep, wakes, gap_ns, lag);
  uint64_t cpu = thread_cpu_ns() - cpu0;
  if (tfd >= 0) close(tfd);
  if (ep >= 0) close(ep);
  if (r == 0) {
    qsort(lag, wakes, sizeof(*lag), cmp_u64);
    out->wakes = wakes;
    out->gap_us = (double)gap_ns / 1000.0;
    out->p50_us = rank_us(lag, wakes, 50);
    out->p99_us = rank_us(lag, wakes, 99);
    out->max_us = (double)lag[wakes - 1] / 1000.0;
    out->cpu_us = (double)cpu / wakes / 1000.0;
  }
  free(lag);
  return r;
}
