/* series.c -- the time series' bookkeeping: how many intervals a case
 * has, each loop's intervals and the result's (preallocated before the
 * run), an interrupt's cut of a loop's series, and a loop's intervals
 * folded into the result's.  Counting into the current interval is the
 * window's (window.h, ab__iv_at); handing finished intervals out while the
 * run goes is live.c's.
 */
#include <stdlib.h>

#include "base/ab_error.h"
#include "engine/engine_int.h"

/* The number of intervals of the time series: the last may be shorter. */
uint32_t ab__interval_count(const ab_case_cfg_t *cfg) {
  double iv = cfg->interval_s > 0 ? cfg->interval_s : 1.0;
  double n = cfg->duration_s / iv;
  uint32_t k = (uint32_t)n;
  if ((double)k < n - 1e-9) k++;
  return k < 1 ? 1 : k;
}

/* The loop's time series and open-loop histograms, preallocated. */
int ab__series_alloc(ab__loop_t *l, const ab_case_cfg_t *cfg) {
  l->iv_ns = (uint64_t)((cfg->interval_s > 0 ? cfg->interval_s : 1.0) * 1e9);
  l->iv_n = ab__interval_count(cfg);
  l->iv_end_ns = UINT64_MAX;
  l->iv = calloc(l->iv_n, sizeof(ab__iv_t));
  if (l->iv == NULL) return AB_ENOMEM;
  for (uint32_t i = 0; i < l->iv_n; i++) ab_hist_init(&l->iv[i].rtt);
  ab_hist_init(&l->rtt_raw);
  ab_hist_init(&l->rtt_ok);
  ab_hist_init(&l->send_lag);
  ab_hist_init(&l->gen_lag);
  if (!l->open_loop) return 0;
  l->iv_lag = calloc(l->iv_n, sizeof(ab_hist_t));
  if (l->iv_lag == NULL) return AB_ENOMEM;
  for (uint32_t i = 0; i < l->iv_n; i++) ab_hist_init(&l->iv_lag[i]);
  return 0;
}

/* An interrupt at t0 ends l's measure phase early: the series keeps the
 * intervals begun before t0, the last one taking the drain. */
void ab__series_cut(ab__loop_t *l, uint64_t t0) {
  uint64_t k = t0 > l->start_ns ? (t0 - l->start_ns) / l->iv_ns : 0;
  if (k < l->iv_i) k = l->iv_i; /* counted already past t0: kept */
  if (k + 1 < l->iv_n) l->iv_n = (uint32_t)k + 1;
  if (l->iv_i + 1 >= l->iv_n) l->iv_end_ns = UINT64_MAX;
}

/* The result's time series, empty, for the loops to be merged into. */
int ab__series_result_alloc(const ab__engine_t *eng, ab_result_t *out) {
  const ab_case_cfg_t *cfg = eng->cfg;
  uint32_t n = ab__interval_count(cfg);
  if (eng->interrupted) {
    /* only the intervals begun before the interrupt (ab__series_cut) */
    n = 0;
    if (out->measured_s > 0) /* else: interrupted before measuring */
      for (uint32_t li = 0; li < eng->nloops; li++)
        if (eng->loops[li].iv_n > n) n = eng->loops[li].iv_n;
  }
  out->interval_s = cfg->interval_s > 0 ? cfg->interval_s : 1.0;
  out->iv = calloc(n ? n : 1, sizeof(ab__iv_t));
  if (out->iv == NULL) return AB_ENOMEM;
  out->niv = n;
  for (uint32_t i = 0; i < n; i++) ab_hist_init(&out->iv[i].rtt);
  if (cfg->rate > 0) {
    out->iv_lag = calloc(n ? n : 1, sizeof(ab_hist_t));
    if (out->iv_lag == NULL) return AB_ENOMEM;
    for (uint32_t i = 0; i < n; i++) ab_hist_init(&out->iv_lag[i]);
  }
  return 0;
}

/* Loop l's intervals added into the result's (each connection is one
 * loop's, so connections add up too). */
void ab__series_merge(ab_result_t *out, const ab__loop_t *l) {
  for (uint32_t i = 0; i < l->iv_n && i < out->niv; i++) {
    ab__iv_t *o = &out->iv[i];
    const ab__iv_t *v = &l->iv[i];
    o->sent += v->sent;
    o->completed += v->completed;
    o->errors += v->errors;
    o->timed_out += v->timed_out;
    o->connections += v->connections; /* each connection is one loop's */
    ab_hist_merge(&o->rtt, &v->rtt);
    if (out->iv_lag && l->iv_lag) ab_hist_merge(&out->iv_lag[i], &l->iv_lag[i]);
  }
}
