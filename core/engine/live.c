/* live.c -- the live time series: each finished interval of the measure
 * phase, merged across the loops while the run goes on, handed to
 * cfg->on_interval on the coordinator thread (the worker writes it on its
 * progress pipe: docs/load-models.md, "The live line").
 *
 * No lock on the per-message path.  A loop's interval index only moves
 * forward (window.h, ab__iv_at) and every count goes to the current
 * interval, so an interval is immutable once the index has passed it.
 * Each loop (when cfg->on_interval is set) runs a timer at the end of each
 * of its intervals that moves the index on even when no message comes
 * (ab__iv_at at the current time) and then publishes how many intervals
 * are closed with a release store (l->iv_done).  The coordinator wakes
 * shortly after each interval's end, reads every loop's iv_done with an
 * acquire load, and merges the intervals that every loop has closed: it
 * reads them, never writes them.  A loop that is late (a busy thread)
 * only delays the line.  Every topology: sharded:N and pool:N have one
 * loop per thread; shared:N's loop threads each count into their own
 * loop (engine_int.h), so the same holds there.
 */
#include <stdlib.h>

#include "engine/engine_int.h"
#include "engine/window.h"

/* Timer slack past an interval's end, ms (libuv timers are whole ms). */
#define LIVE_LATE_MS 1
/* The coordinator looks this long after an interval's end, ns, and again
 * this often while a loop has not closed it yet. */
#define LIVE_LOOK_NS 5000000u
#define LIVE_RETRY_NS 20000000u

static void live_timer_cb(uv_timer_t *t);

/* Arms l's timer just past the end of its current interval, unless that
 * is the last one (it closes with the run). */
static void live_arm(ab__loop_t *l) {
  if (l->iv_i + 1 >= l->iv_n) return;
  uint64_t end = l->start_ns + (uint64_t)(l->iv_i + 1) * l->iv_ns;
  uint64_t now = ab_now_ns();
  uint64_t ms = end > now ? (end - now + 999999u) / 1000000u : 0;
  uv_timer_start(&l->live_timer, live_timer_cb, ms + LIVE_LATE_MS, 0);
}

static void live_timer_cb(uv_timer_t *t) {
  ab__loop_t *l = t->data;
  if (l->phase != AB__PH_MEASURE) return; /* the rest closes with the run */
  (void)ab__iv_at(l, ab_now_ns());
  atomic_store_explicit(&l->iv_done, l->iv_i, memory_order_release);
  live_arm(l);
}

void ab__live_open(ab__loop_t *l) {
  uv_timer_init(&l->loop, &l->live_timer);
  l->live_timer.data = l;
  atomic_init(&l->iv_done, 0);
}

void ab__live_start(ab__loop_t *l) {
  if (l->eng->cfg->on_interval == NULL) return;
  atomic_store_explicit(&l->iv_done, 0, memory_order_release);
  live_arm(l);
}

void ab__live_close(ab__loop_t *l) {
  uv_close((uv_handle_t *)&l->live_timer, NULL);
}

/* The number of intervals every loop has closed. */
static uint32_t closed_by_all(const ab__engine_t *eng) {
  uint32_t n = UINT32_MAX;
  for (uint32_t li = 0; li < eng->nloops; li++) {
    uint32_t d = atomic_load_explicit(&eng->loops[li].iv_done, memory_order_acquire);
    if (d < n) n = d;
  }
  return n == UINT32_MAX ? 0 : n;
}

static double interval_ns(const ab_case_cfg_t *cfg) {
  return (cfg->interval_s > 0 ? cfg->interval_s : 1.0) * 1e9;
}

uint64_t ab__live_next_ns(const ab__engine_t *eng, uint64_t deadline) {
  const ab_case_cfg_t *cfg = eng->cfg;
  if (cfg->on_interval == NULL || eng->live_done + 1 >= ab__interval_count(cfg)) return deadline;
  uint64_t at = eng->live_t0 + (uint64_t)((double)(eng->live_done + 1) * interval_ns(cfg)) +
                LIVE_LOOK_NS;
  uint64_t now = ab_now_ns();
  if (at <= now) at = now + LIVE_RETRY_NS; /* a loop has not closed it yet */
  return at < deadline ? at : deadline;
}

void ab__live_collect(ab__engine_t *eng) {
  const ab_case_cfg_t *cfg = eng->cfg;
  if (cfg->on_interval == NULL) return;
  if (eng->live_rtt == NULL && (eng->live_rtt = malloc(sizeof(*eng->live_rtt))) == NULL) return;
  uint32_t total = ab__interval_count(cfg);
  uint32_t n = closed_by_all(eng);
  if (n > total - 1) n = total - 1;
  for (; eng->live_done < n; eng->live_done++) {
    uint32_t j = eng->live_done;
    ab_live_interval_t v = {0};
    ab_hist_init(eng->live_rtt);
    for (uint32_t li = 0; li < eng->nloops; li++) {
      const ab__iv_t *x = &eng->loops[li].iv[j];
      v.sent += x->sent;
      v.completed += x->completed;
      v.errors += x->errors;
      v.timed_out += x->timed_out;
      ab_hist_merge(eng->live_rtt, &x->rtt);
    }
    v.index = j;
    v.count = total;
    v.duration_s = interval_ns(cfg) / 1e9;
    v.t_s = (double)j * v.duration_s;
    v.round_trips_per_s = (double)v.completed / v.duration_s;
    v.p50_us = (double)ab_hist_percentile(eng->live_rtt, 50) / 1e3;
    v.p99_us = (double)ab_hist_percentile(eng->live_rtt, 99) / 1e3;
    v.max_us = (double)ab_hist_percentile(eng->live_rtt, 100) / 1e3;
    cfg->on_interval(&v, cfg->on_interval_arg);
  }
}

void ab__live_free(ab__engine_t *eng) {
  free(eng->live_rtt);
  eng->live_rtt = NULL;
}
