/* timer_floor.c -- the least a precise schedule costs on this machine: one
 * thread sleeps until each of a run of evenly spaced instants (a timerfd
 * with absolute CLOCK_MONOTONIC expirations, waited for in epoll, as
 * arkbench's open loop does, core/engine/rate.c) and measures how late it
 * woke, and what each wake costs in CPU.  No socket, no message: what is
 * left of arkbench's send_lag_us and of its CPU per open-loop send once
 * the wake itself is taken away.  bench/open_loop.sh runs it beside
 * arkbench; not a ctest test, not installed.
 *
 *   timer_floor [--rate R] [--duration S] [--warmup S]
 *
 * Prints one JSON line: rate, wakes, lag_us {p50, p90, p99, p999, max}
 * (woken - intended), cpu_us_per_wake ((user + sys) CPU / wakes, from
 * getrusage over the measured part).  Exit 0, 2 on a wrong command line,
 * 1 when a system call fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double pct(const uint64_t *v, size_t n, double p) {
  size_t i = (size_t)(p * (double)(n - 1) + 0.5);
  return (double)v[i] / 1000.0;
}

static void usage(const char *why) {
  fprintf(stderr, "timer_floor: %s\nusage: timer_floor [--rate R] [--duration S] [--warmup S]\n", why);
  exit(2);
}

int main(int argc, char **argv) {
  double rate = 1000, duration = 2, warmup = 0.25;
  for (int i = 1; i < argc; i++) {
    double *dst = NULL;
    if (strcmp(argv[i], "--rate") == 0) dst = &rate;
    else if (strcmp(argv[i], "--duration") == 0) dst = &duration;
    else if (strcmp(argv[i], "--warmup") == 0) dst = &warmup;
    else usage("unknown argument");
    if (i + 1 >= argc) usage("a flag needs a number");
    char *end;
    *dst = strtod(argv[++i], &end);
    if (*end != '\0' || *dst < 0) usage("expected a number >= 0");
  }
  if (rate < 1 || rate > 1e6 || duration <= 0) usage("--rate 1..1000000, --duration > 0");
  uint64_t period = (uint64_t)(1e9 / rate);
  size_t nwarm = (size_t)(warmup * rate), n = (size_t)(duration * rate);
  uint64_t *lag = malloc(n * sizeof(*lag));
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN};
  if (lag == NULL || tfd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) < 0) {
    perror("timer_floor");
    return 1;
  }
  uint64_t t0 = now_ns() + 1000000;
  double cpu0 = 0;
  for (size_t k = 0; k < nwarm + n; k++) {
    if (k == nwarm) cpu0 = cpu_s();
    uint64_t due = t0 + k * period;
    struct itimerspec its = {{0, 0}, {(time_t)(due / 1000000000u), (long)(due % 1000000000u)}};
    if (now_ns() < due) {
      if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
        perror("timerfd_settime");
        return 1;
      }
      struct epoll_event out;
      uint64_t exp;
      while (epoll_wait(ep, &out, 1, -1) != 1) {
      }
      (void)!read(tfd, &exp, sizeof(exp));
    }
    uint64_t woke = now_ns();
    if (k >= nwarm) lag[k - nwarm] = woke > due ? woke - due : 0;
  }
  double cpu = cpu_s() - cpu0;
  qsort(lag, n, sizeof(*lag), cmp_u64);
  printf("{\"tool\":\"timer_floor\",\"rate\":%.0f,\"wakes\":%zu,\"lag_us\":{\"p50\":%.1f,\"p90\":%.1f,"
         "\"p99\":%.1f,\"p999\":%.1f,\"max\":%.1f},\"cpu_us_per_wake\":%.3f}\n",
         rate, n, pct(lag, n, 0.5), pct(lag, n, 0.9), pct(lag, n, 0.99), pct(lag, n, 0.999),
         (double)lag[n - 1] / 1000.0, cpu / (double)n * 1e6);
  return 0;
}
