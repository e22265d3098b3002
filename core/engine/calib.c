/* calib.c -- the open loop's look at the machine's timer floor before a
 * run (base/timer_floor.h): a bare timerfd wake's lateness at the loops'
 * own spacing of sends, in the run object beside the send lag
 * (timer_floor_*), and the margin rate_precision "spin" sleeps short of
 * each instant (rate.c).  Runs on the coordinator thread before the loop
 * threads start, so nothing else of the run competes with it.
 */
#include "base/timer_floor.h"
#include "engine/engine_int.h"

/* the calibration lasts about CALIB_NS, CALIB_MIN .. CALIB_MAX wakes */
#define CALIB_NS 50000000u
#define CALIB_MIN 100u
#define CALIB_MAX 1000u
/* the spin margin: SPIN_FACTOR x the floor's p99, within these bounds */
#define SPIN_FACTOR 1.5
#define SPIN_MIN_NS 10000u
#define SPIN_MAX_NS 200000u

void ab__rate_calibrate(ab__engine_t *eng, ab_result_t *out) {
  const ab_case_cfg_t *cfg = eng->cfg;
  if (!(cfg->rate > 0) || cfg->role == AB_ROLE_SERVER || eng->nloops == 0) return;
  /* a loop's sends are nloops / rate apart (this process's share) */
  double gap = (double)eng->nloops * 1e9 / cfg->rate;
  if (gap < 20000) gap = 20000;
  if (gap > 1000000) gap = 1000000;
  uint32_t wakes = (uint32_t)(CALIB_NS / gap);
  if (wakes < CALIB_MIN) wakes = CALIB_MIN;
  if (wakes > CALIB_MAX) wakes = CALIB_MAX;
  ab_timer_floor_t f;
  uint64_t margin = SPIN_MAX_NS / 4;
  if (ab_timer_floor_measure(wakes, (uint64_t)gap, &f) == 0) {
    out->timer_floor_p50_us = f.p50_us;
    out->timer_floor_p99_us = f.p99_us;
    out->timer_floor_cpu_us = f.cpu_us;
    out->timer_floor_wakes = f.wakes;
    margin = (uint64_t)(f.p99_us * 1000.0 * SPIN_FACTOR);
  }
  if (margin < SPIN_MIN_NS) margin = SPIN_MIN_NS;
  if (margin > SPIN_MAX_NS) margin = SPIN_MAX_NS;
  for (uint32_t li = 0; li < eng->nloops; li++) eng->loops[li].rate_margin_ns = margin;
}
