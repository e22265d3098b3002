/* clock.h -- the one clock that times messages: CLOCK_MONOTONIC in ns.
 * (vDSO: ~20 ns a read, no syscall.)  libuv's uv_now() is millisecond loop
 * time and is never used to time a message. */
#ifndef AB_CLOCK_H
#define AB_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t ab_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sleeps until CLOCK_MONOTONIC reaches t_ns (restarts on EINTR). */
void ab_sleep_until_ns(uint64_t t_ns);

#endif
