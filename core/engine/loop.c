/* loop.c -- a loop's side of the phases, on the loop's thread: the
 * coordinator's commands (ctl_cb), the phase timer and its deadlines
 * (warm-up, its drain, measure, drain), the end of a drain, waking the
 * clients when a sending phase begins, an interrupt's early end, and
 * closing the loop's handles at STOP.  Connecting is connect.c's, the
 * open loop's rate timer rate.c's, the timeout sweep sweep.c's.  Phase
 * deadlines are nanosecond clock values; libuv timers only wake a loop
 * near them (they are millisecond timers) and the clock decides.
 */
#include "base/ab_error.h"
#include "base/clock.h"
#include "engine/engine_int.h"
#include "engine/window.h"

/* Milliseconds until t_ns for a libuv timer, rounded up. */
uint64_t ab__ms_until(uint64_t t_ns) {
  uint64_t now = ab_now_ns();
  if (t_ns <= now) return 0;
  return (t_ns - now + 999999) / 1000000; /* round up: never early */
}

static void phase_timer_cb(uv_timer_t *t);

static void arm_phase_timer(ab__loop_t *l, uint64_t at_ns) {
  uv_timer_start(&l->phase_timer, phase_timer_cb, ab__ms_until(at_ns), 0);
}

/* Counts what is still in flight as unfinished and ends the measurement. */
static void finish_measure(ab__loop_t *l, int forced) {
  if (forced) ab__win_finish(l);
  l->phase = AB__PH_DONE;
  uv_timer_stop(&l->phase_timer);
  ab__sweep_stop(l);
  ab__loop_reached(l, AB__ST_MEASURE_DONE);
}

/* shared:N's loops count in-flight messages that other loops complete, so
 * there the phase ends when none of the loop's own clients has one
 * (progress(), from the loop's timers); drivers' calls do nothing. */
void ab__loop_drained(ab__loop_t *l, int busy) {
  if (l->phase == AB__PH_WARM_DRAIN && !busy) {
    l->phase = AB__PH_IDLE;
    uv_timer_stop(&l->phase_timer);
    ab__loop_reached(l, AB__ST_WARM_DONE);
  } else if (l->phase == AB__PH_DRAIN && !busy) {
    finish_measure(l, 0);
  }
}

static void progress(ab__loop_t *l) {
  if (!l->eng->shared) {
    ab__loop_check_progress(l);
  } else if (l->phase == AB__PH_WARM_DRAIN || l->phase == AB__PH_DRAIN) {
    ab__loop_drained(l, ab__shared_busy(l));
    if (l->phase == AB__PH_WARM_DRAIN || l->phase == AB__PH_DRAIN) ab__sweep_drain_poll(l);
  }
}

void ab__loop_check_progress_drain(ab__loop_t *l) {
  if (l->eng->shared) return;
  if (l->phase == AB__PH_WARM_DRAIN && l->warm_inflight == 0) {
    l->phase = AB__PH_IDLE;
    uv_timer_stop(&l->phase_timer);
    ab__loop_reached(l, AB__ST_WARM_DONE);
  } else if (l->phase == AB__PH_DRAIN && l->meas_inflight == 0) {
    finish_measure(l, 0);
  }
}

static void measure_end(ab__loop_t *l);

/* The loop's busy share of the measure phase: the wall time it did not
 * spend blocked waiting for events (libuv's UV_METRICS_IDLE_TIME, set at
 * setup for loops with clients: two clock reads per loop iteration, none
 * per message) over the wall time, from the measure command to the
 * deadline.  Time spun by rate_precision "spin" is left out: it is the
 * mode's price, not load.  A loop near 1 never waited for anything: it
 * cannot keep a schedule, whatever else the machine runs (a thread
 * preempted while it waits for events counts as waiting). */
static void busy_begin(ab__loop_t *l) {
  l->busy_wall0_ns = ab_now_ns();
  l->busy_idle0_ns = uv_metrics_idle_time(&l->loop);
  l->busy_spin0_ns = l->rate_spin_ns;
  l->busy_share = -1;
}

static void busy_end(ab__loop_t *l) {
  uint64_t wall = ab_now_ns() - l->busy_wall0_ns;
  uint64_t idle = uv_metrics_idle_time(&l->loop) - l->busy_idle0_ns;
  uint64_t spin = l->rate_spin_ns - l->busy_spin0_ns;
  if (l->busy_wall0_ns == 0 || l->busy_share >= 0 || wall == 0) return;
  uint64_t busy = wall > idle + spin ? wall - idle - spin : 0;
  l->busy_share = (double)busy / (double)wall;
  if (l->busy_share > 1) l->busy_share = 1;
}

static void phase_timer_cb(uv_timer_t *t) {
  ab__loop_t *l = t->data;
  uint64_t now = ab_now_ns();
  switch (l->phase) {
  case AB__PH_WARMUP:
    if (now < l->warm_deadline_ns) { arm_phase_timer(l, l->warm_deadline_ns); return; }
    l->phase = AB__PH_WARM_DRAIN;
    arm_phase_timer(l, l->warm_deadline_ns +
                           (uint64_t)(l->eng->cfg->timeout_s * 1e9) + 500000000u);
    progress(l);
    break;
  case AB__PH_WARM_DRAIN:
    /* warm-up replies overdue (the sweep fails them first; this is its
     * backstop): their connections are failed and, as in measure,
     * reopened for the measure phase (sweep.c) */
    for (uint32_t i = 0; i < l->nclients; i++) {
      ab__client_t *c = ab__loop_client(l, i);
      ab__client_take(l, c);
      if (c->win.inflight > 0) l->eng->drv->client_fail(c, AB_ETIMEDOUT, "warm-up reply overdue");
      ab__client_give(l, c);
    }
    progress(l);
    break;
  case AB__PH_MEASURE:
    if (now < l->deadline_ns) { arm_phase_timer(l, l->deadline_ns); return; }
    measure_end(l);
    l->phase = AB__PH_DRAIN;
    arm_phase_timer(l, l->drain_end_ns);
    progress(l);
    break;
  case AB__PH_DRAIN:
    if (now < l->drain_end_ns) { arm_phase_timer(l, l->drain_end_ns); return; }
    finish_measure(l, 1);
    break;
  default:
    break;
  }
}

/* The driver's wake of c, from c's home loop l. */
void ab__loop_wake(ab__loop_t *l, ab__client_t *c) {
  ab__client_take(l, c);
  l->eng->drv->wake(c);
  ab__client_give(l, c);
}

/* A sending phase began: every client may fill its window. */
static void wake_all(ab__loop_t *l) {
  for (uint32_t i = 0; i < l->nclients; i++) ab__loop_wake(l, ab__loop_client(l, i));
}

/* A sending phase begins at t0: closed loop, every client fills its
 * window; open loop, every schedule restarts at t0. */
static void phase_begin(ab__loop_t *l, uint64_t t0) {
  if (!l->open_loop) wake_all(l);
  else ab__rate_begin(l, t0); /* rate.c */
}

/* The measure deadline passed: open loop, what the schedules meant to
 * send before it and did not is unsent. */
static void measure_end(ab__loop_t *l) {
  busy_end(l);
  if (l->open_loop) ab__rate_end(l); /* rate.c */
}

static void close_cb_noop(uv_handle_t *h) { (void)h; }

static void close_walk_cb(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h)) uv_close(h, close_cb_noop);
}

static void pool_done_cb(uv_async_t *a) {
  ab__loop_t *l = a->data;
  if (l->eng->pool && l->phase != AB__PH_STOPPING) ab__pool_collect(l->eng->pool, l);
}

/* An interrupt at t0: a measure phase still going ends there (its
 * deadline becomes t0, so nothing more is sent and later replies are
 * drained); the time series keeps the intervals begun before t0, the
 * last one taking the drain; the drain ends by t1 at the latest. */
static void end_measure_early(ab__loop_t *l, uint64_t t0, uint64_t t1) {
  if (l->phase == AB__PH_MEASURE) {
    if (t0 < l->deadline_ns) {
      l->deadline_ns = t0;
      ab__series_cut(l, t0);
    }
    measure_end(l);
    l->phase = AB__PH_DRAIN;
  }
  if (l->phase == AB__PH_DRAIN) {
    if (t1 < l->drain_end_ns) l->drain_end_ns = t1;
    arm_phase_timer(l, l->drain_end_ns);
    progress(l);
  }
}

/* The phase fields a sending phase's command sets.  shared:N: the
 * coordinator sets every loop's before it sends the command (send_cmd), so
 * a connection that runs on another loop than the one that woke it finds
 * the same phase there. */
void ab__loop_phase_set(ab__loop_t *l, int cmd, uint64_t t0, uint64_t t1) {
  /* the times first, the phase last: a thread that reads the new phase
   * (an atomic) sees its times */
  if (cmd == AB__CMD_WARMUP) {
    l->warm_deadline_ns = t0;
    l->phase = AB__PH_WARMUP;
  } else if (cmd == AB__CMD_MEASURE) {
    l->start_ns = t0;
    l->deadline_ns = t1;
    l->drain_end_ns = t1 + (uint64_t)(l->eng->cfg->timeout_s * 1e9);
    l->iv_i = 0;
    l->iv_end_ns = l->iv_n == 1 ? UINT64_MAX : t0 + l->iv_ns < t1 ? t0 + l->iv_ns : t1;
    l->phase = AB__PH_MEASURE;
  }
}

static void ctl_cb(uv_async_t *a) {
  ab__loop_t *l = a->data;
  ab__engine_t *eng = l->eng;
  pthread_mutex_lock(&eng->mu);
  int cmd = l->cmd;
  uint64_t t0 = l->cmd_t0, t1 = l->cmd_t1;
  l->cmd = AB__CMD_NONE;
  pthread_mutex_unlock(&eng->mu);

  switch (cmd) {
  case AB__CMD_CONNECT:
    ab__loop_connect_start(l, t0); /* connect.c */
    break;
  case AB__CMD_WARMUP:
    if (!eng->shared) ab__loop_phase_set(l, cmd, t0, t1);
    arm_phase_timer(l, t0);
    ab__sweep_start(l);
    phase_begin(l, ab_now_ns());
    break;
  case AB__CMD_MEASURE:
    if (!eng->shared) ab__loop_phase_set(l, cmd, t0, t1);
    arm_phase_timer(l, t1);
    busy_begin(l);
    ab__sweep_start(l);
    ab__live_start(l);
    phase_begin(l, t0);
    break;
  case AB__CMD_END:
    end_measure_early(l, t0, t1);
    break;
  case AB__CMD_STOP:
    l->phase = AB__PH_STOPPING;
    eng->drv->stop(l);
    uv_close((uv_handle_t *)&l->phase_timer, close_cb_noop);
    uv_close((uv_handle_t *)&l->connect_pace, close_cb_noop);
    ab__live_close(l);
    ab__sweep_close(l);
    uv_close((uv_handle_t *)&l->ctl, close_cb_noop);
    if (l->rate_fd >= 0) uv_close((uv_handle_t *)&l->rate_poll, close_cb_noop);
    if (eng->pool) uv_close((uv_handle_t *)&l->pool_done, close_cb_noop);
    ab__shared_loop_stop(l);
    break;
  default:
    break;
  }
}

/* The loop's own handles: the command wake-up and the phase and connect
 * pacing timers (setup, coordinator thread, after uv_loop_init). */
void ab__loop_open_handles(ab__loop_t *l) {
  uv_async_init(&l->loop, &l->ctl, ctl_cb);
  l->ctl.data = l;
  uv_timer_init(&l->loop, &l->phase_timer);
  l->phase_timer.data = l;
  uv_timer_init(&l->loop, &l->connect_pace);
  l->connect_pace.data = l;
}

/* pool:N: the wake-up that hands finished jobs back to the loop. */
void ab__loop_open_pool_done(ab__loop_t *l) {
  uv_async_init(&l->loop, &l->pool_done, pool_done_cb);
  l->pool_done.data = l;
}

/* Setup failed: closes every handle of l at once, without its thread. */
void ab__loop_close_now(ab__loop_t *l) {
  l->phase = AB__PH_STOPPING;
  uv_walk(&l->loop, close_walk_cb, NULL);
  uv_run(&l->loop, UV_RUN_DEFAULT);
}
