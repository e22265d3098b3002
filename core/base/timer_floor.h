/* timer_floor.h -- the machine's timer floor: how late a thread that sleeps
 * in epoll on a timerfd (absolute CLOCK_MONOTONIC expirations, as the open
 * loop's rate timer does, engine/rate.c) wakes after each of a run of
 * evenly spaced instants, and what each wake costs in CPU.  The open loop
 * measures it briefly before a run (timer_floor_* in the run object,
 * docs/load-models.md) to size rate_precision "spin"'s margin and to set
 * its send lag beside it; `arkbench calibrate --timer` prints it.
 * bench/timer_floor.c is the stand-alone form of the same loop.
 *
 * Pure C (epoll, timerfd); no allocation but its own sample array.
 */
#ifndef AB_TIMER_FLOOR_H
#define AB_TIMER_FLOOR_H

#include <stdint.h>

typedef struct {
  uint32_t wakes;     /* wakes measured */
  double gap_us;      /* between two instants */
  double p50_us, p99_us, max_us; /* lateness (woken - instant), nearest rank */
  double cpu_us;      /* the thread's user + sys CPU per wake */
} ab_timer_floor_t;

/* Sleeps until each of `wakes` instants gap_ns apart (the first one gap_ns
 * from now) on the calling thread, then fills *out.  wakes 1 .. 100000,
 * gap_ns 1000 .. 1e9.  Returns 0, or a negative errno (AB_EINVAL for
 * arguments out of range, AB_ENOMEM). */
int ab_timer_floor_measure(uint32_t wakes, uint64_t gap_ns, ab_timer_floor_t *out);

#endif
