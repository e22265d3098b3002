/* engine.c -- the coordinator: a case's run, phase by phase (engine.h).
 *
 * Order of a run (docs/run-object.md has the counts it yields):
 *   1. loops created, listeners bound (coordinator thread), loop threads up;
 *   2. CONNECT: each loop connects its clients; wait for all;
 *   3. WARMUP (if warmup > 0): full windows until the warm-up deadline, then
 *      drained completely; its samples are dropped;
 *   4. CPU sampled, start = now, deadline = start + duration; MEASURE: every
 *      loop starts with a full window burst; no message is sent after the
 *      deadline; the coordinator sleeps to the deadline and samples CPU;
 *   5. drain: replies to measure messages are awaited up to `timeout`;
 *      (throughout, the timeout sweep and reopening of lost connections
 *      are sweep.c's);
 *   6. STOP: the pool is joined, loops close every handle and exit.
 *
 * This file is the coordinator's side: the commands it sends, its waits
 * for the loops' stages, and each step of the run above.  The loops' side
 * of the phases is loop.c (connecting connect.c, the open loop's rate
 * timer rate.c); setting the loops up setup.c; the case check
 * case_check.c; the time series' bookkeeping series.c; the merge of the
 * loops into the result and its verdict merge.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/ab_error.h"
#include "base/clock.h"
#include "engine/engine_int.h"
#include "proto/framing.h"
#include "base/procstat.h"

void ab__engine_abort(ab__loop_t *l) {
  ab__engine_t *eng = l->eng;
  pthread_mutex_lock(&eng->mu);
  eng->aborted = 1;
  pthread_cond_broadcast(&eng->cv);
  pthread_mutex_unlock(&eng->mu);
}

void ab__loop_reached(ab__loop_t *l, int stage) {
  ab__engine_t *eng = l->eng;
  pthread_mutex_lock(&eng->mu);
  eng->reached[stage]++;
  pthread_cond_broadcast(&eng->cv);
  pthread_mutex_unlock(&eng->mu);
}

static void loop_main(void *arg) {
  ab__loop_t *l = arg;
  uv_run(&l->loop, UV_RUN_DEFAULT);
}

static void send_cmd(ab__engine_t *eng, int cmd, uint64_t t0, uint64_t t1) {
  pthread_mutex_lock(&eng->mu);
  for (uint32_t i = 0; i < eng->nloops; i++) {
    eng->loops[i].cmd = cmd;
    eng->loops[i].cmd_t0 = t0;
    eng->loops[i].cmd_t1 = t1;
    if (eng->shared) ab__loop_phase_set(&eng->loops[i], cmd, t0, t1);
  }
  pthread_mutex_unlock(&eng->mu);
  for (uint32_t i = 0; i < eng->nloops; i++) uv_async_send(&eng->loops[i].ctl);
}

/* Whether cfg->interrupted() asked for the end (remembered once seen). */
static int interrupted_now(ab__engine_t *eng) {
  if (!eng->interrupted && eng->cfg->interrupted && eng->cfg->interrupted()) eng->interrupted = 1;
  return eng->interrupted;
}

/* One wait on eng->cv (eng->mu held) until `until`, at most 10 ms when an
 * interrupt is to be polled: a signal handler cannot signal a condition
 * variable, so the coordinator looks at its flag this often. */
static void wait_cv(ab__engine_t *eng, uint64_t until) {
  if (eng->cfg->interrupted) {
    uint64_t slice = ab_now_ns() + 10000000u;
    if (slice < until) until = slice;
  }
  struct timespec ts = {(time_t)(until / 1000000000u), (long)(until % 1000000000u)};
  pthread_cond_timedwait(&eng->cv, &eng->mu, &ts);
}

/* Waits until every loop reached stage or the timeout passed (or, with
 * stop_on_interrupt, an interrupt came); returns 1 if all did. */
static int wait_stage(ab__engine_t *eng, int stage, double timeout_s, int stop_on_interrupt) {
  uint64_t until = ab_now_ns() + (uint64_t)(timeout_s * 1e9);
  pthread_mutex_lock(&eng->mu);
  while (eng->reached[stage] < eng->nloops && !eng->aborted &&
         !(stop_on_interrupt && interrupted_now(eng)) && ab_now_ns() < until)
    wait_cv(eng, until);
  int all = eng->reached[stage] >= eng->nloops && !eng->aborted;
  pthread_mutex_unlock(&eng->mu);
  return all;
}

/* wait_stage, telling cfg->on_phase where the phase is every 250 ms on
 * the way (phase AB_LIVE_*: connects finished, or the time since t0). */
static int wait_stage_live(ab__engine_t *eng, int stage, double timeout_s, int stop_on_interrupt,
                           int phase, uint64_t t0) {
  const ab_case_cfg_t *cfg = eng->cfg;
  if (cfg->on_phase == NULL) return wait_stage(eng, stage, timeout_s, stop_on_interrupt);
  uint64_t until = ab_now_ns() + (uint64_t)(timeout_s * 1e9);
  for (;;) {
    uint64_t now = ab_now_ns();
    ab_live_phase_t p = {.phase = phase, .clients = cfg->clients, .duration_s = cfg->warmup_s,
                         .t_s = now > t0 ? (double)(now - t0) / 1e9 : 0};
    p.done = atomic_load_explicit(&eng->connects_done, memory_order_relaxed);
    cfg->on_phase(&p, cfg->on_interval_arg);
    double left = now < until ? (double)(until - now) / 1e9 : 0;
    int all = wait_stage(eng, stage, left < 0.25 ? left : 0.25, stop_on_interrupt);
    if (all || eng->aborted || (stop_on_interrupt && eng->interrupted) || ab_now_ns() >= until)
      return all;
  }
}

/* Sleeps until t_ns, an abort or an interrupt; returns 1 when cut short. */
static int sleep_or_abort(ab__engine_t *eng, uint64_t t_ns) {
  pthread_mutex_lock(&eng->mu);
  while (!eng->aborted && !interrupted_now(eng) && ab_now_ns() < t_ns) wait_cv(eng, t_ns);
  int cut = eng->aborted || eng->interrupted;
  pthread_mutex_unlock(&eng->mu);
  return cut;
}

/* The measure phase until its deadline (1: cut short, as sleep_or_abort),
 * giving the live time series each finished interval on the way (live.c). */
static int measure_wait(ab__engine_t *eng, uint64_t deadline) {
  for (;;) {
    uint64_t until = ab__live_next_ns(eng, deadline);
    if (sleep_or_abort(eng, until)) return 1;
    if (until >= deadline) return 0;
    ab__live_collect(eng);
  }
}

static void note(ab_result_t *out, const char *fmt, uint32_t a, uint32_t b) {
  if (out->nnotes < AB_MAX_NOTES) snprintf(out->notes[out->nnotes++], sizeof(out->notes[0]), fmt, a, b);
}

/* Server role: serve until *cfg->stop; no clients, no phases. */
static void serve_until_stopped(ab__engine_t *eng, ab_result_t *out) {
  const ab_case_cfg_t *cfg = eng->cfg;
  if (cfg->on_listening) cfg->on_listening(eng->loops[0].port, cfg->on_listening_arg);
  ab_cpu_sample_t s0, s1;
  ab_cpu_sample(&s0);
  uint64_t t0 = ab_now_ns();
  while (!(cfg->stop && *cfg->stop)) ab_sleep_until_ns(ab_now_ns() + 20000000u);
  ab_cpu_sample(&s1);
  out->cpu_wall_s = (double)(ab_now_ns() - t0) / 1e9;
  out->measured_s = out->cpu_wall_s;
  out->cpu_user_s = s1.user_s - s0.user_s;
  out->cpu_sys_s = s1.sys_s - s0.sys_s;
}

/* Threads that have work: a loop with a connection (shared:N: every loop
 * thread, up to the messages in flight at once), and pool workers where
 * this process serves. */
static uint32_t busy_threads(const ab__engine_t *eng, uint32_t workers, const ab_result_t *out) {
  const ab_case_cfg_t *cfg = eng->cfg;
  uint32_t busy = 0;
  if (eng->shared) {
    double inflight = (double)cfg->clients * cfg->window;
    busy = inflight < eng->nloops ? (uint32_t)inflight : eng->nloops;
  } else {
    for (uint32_t li = 0; li < eng->nloops; li++) busy += out->conns_per_loop[li] > 0;
  }
  return busy + (cfg->role == AB_ROLE_CLIENT ? 0 : workers);
}

/* Facts about the topology the reader should know. */
static void topology_notes(const ab__engine_t *eng, uint32_t workers, ab_result_t *out) {
  int ncpu = ab_logical_cpus();
  uint32_t idle = 0;
  if (!eng->shared)
    for (uint32_t li = 0; li < eng->nloops; li++) idle += out->conns_per_loop[li] == 0;
  if (idle) note(out, "%u of %u loops have no connection (fewer clients than loops)", idle, eng->nloops);
  uint32_t busy = busy_threads(eng, workers, out);
  if (busy > (uint32_t)ncpu)
    note(out, "%u busy threads on %u logical CPUs: oversubscribed", busy, (uint32_t)ncpu);
}

static void connect_clients(ab__engine_t *eng, ab_result_t *out) {
  const ab_case_cfg_t *cfg = eng->cfg;
  uint64_t t0 = ab_now_ns();
  /* the loops expire their connects (connect_timeout): this is the
   * backstop; paced connects take clients / connect_rate on top (a part
   * of processes = N: its last id is near clients_total) */
  double paced = cfg->clients_total > cfg->clients ? cfg->clients_total : cfg->clients;
  double pace_s = cfg->connect_rate > 0 ? paced / cfg->connect_rate : 0;
  send_cmd(eng, AB__CMD_CONNECT, t0, 0);
  /* the loops fail connects that make no progress for connect_timeout; this
   * backstop waits as long as connects keep finishing (100,000 of them on
   * a busy host take minutes), connect_timeout + timeout + 10 s at a time */
  int all = 0;
  unsigned seen = 0;
  for (int first = 1;; first = 0) {
    all = wait_stage_live(eng, AB__ST_CONNECTED,
                          ab__connect_timeout_s(cfg) + cfg->timeout_s + 10 + (first ? pace_s : 0), 1,
                          AB_LIVE_CONNECT, t0);
    unsigned now = atomic_load_explicit(&eng->connects_done, memory_order_relaxed);
    if (all || now == seen || eng->aborted || eng->interrupted) break;
    seen = now;
  }
  out->connect_phase_s = (double)(ab_now_ns() - t0) / 1e9;
  if (!all) {
    if (!eng->aborted && !eng->interrupted)
      snprintf(out->error, sizeof(out->error), "connecting did not finish in time");
    return;
  }
  /* nobody to measure with: end now, with the first error as the cause
   * (a refused ALPN fails fast, it does not sit out the duration) */
  uint32_t ready = 0;
  pthread_mutex_lock(&eng->mu);
  for (uint32_t li = 0; li < eng->nloops; li++) ready += eng->loops[li].ready_clients;
  const char *why = "";
  for (uint32_t li = 0; li < eng->nloops && !why[0]; li++) why = eng->loops[li].first_error;
  if (ready == 0)
    snprintf(out->error, sizeof(out->error), "no connection could be set up: %s", why);
  pthread_mutex_unlock(&eng->mu);
  /* fewer than asked (every try of the others failed: their errors make
   * the run degraded): said in the notes, the measure phase runs short */
  if (ready > 0 && ready < cfg->clients)
    note(out, "%u of %u connections came up: the measure phase ran with fewer than asked (errors: why)",
         ready, cfg->clients);
}

/* processes = N: waits for the group at `stage` (engine.h, cfg->sync) and
 * then for the common start time it gives; returns it (0: now, or no
 * group).  A broken group or an interrupt is the run's error. */
static uint64_t group_sync(ab__engine_t *eng, ab_result_t *out, int stage) {
  const ab_case_cfg_t *cfg = eng->cfg;
  if (cfg->sync == NULL || out->error[0] != '\0' || eng->aborted || eng->interrupted) return 0;
  int64_t t = cfg->sync(stage, cfg->sync_arg);
  if (t < 0) {
    if (cfg->interrupted && cfg->interrupted()) eng->interrupted = 1;
    else snprintf(out->error, sizeof(out->error), "the process group broke before the %s: %s",
                  stage == 1 ? "warm-up" : "measure phase", ab_err_name((int)t));
    return 0;
  }
  if (t > 0 && sleep_or_abort(eng, (uint64_t)t)) return 0;
  return (uint64_t)t;
}

static void warm_up(ab__engine_t *eng, ab_result_t *out) {
  const ab_case_cfg_t *cfg = eng->cfg;
  uint64_t t0 = group_sync(eng, out, 1);
  if (!(cfg->warmup_s > 0) || out->error[0] != '\0' || eng->aborted || eng->interrupted) return;
  uint64_t t = t0 ? t0 : ab_now_ns();
  send_cmd(eng, AB__CMD_WARMUP, t + (uint64_t)(cfg->warmup_s * 1e9), 0);
  if (!wait_stage_live(eng, AB__ST_WARM_DONE, cfg->warmup_s + cfg->timeout_s + 5, 1, AB_LIVE_WARMUP, t) &&
      !eng->aborted &&
      !eng->interrupted)
    snprintf(out->error, sizeof(out->error), "warm-up did not drain in time");
}

/* An interrupt: the loops end their measure phase at `now` if it is still
 * going (no more sends) and drain replies for at most min(timeout, 0.5 s). */
static double end_now(ab__engine_t *eng, uint64_t *at) {
  double drain_s = eng->cfg->timeout_s < 0.5 ? eng->cfg->timeout_s : 0.5;
  uint64_t now = ab_now_ns();
  send_cmd(eng, AB__CMD_END, now, now + (uint64_t)(drain_s * 1e9));
  if (at) *at = now;
  return drain_s;
}

/* The measured interval [start, deadline] (or to an abort or an
 * interrupt), CPU sampled at both ends, then the drain. */
static void measure(ab__engine_t *eng, ab_result_t *out) {
  const ab_case_cfg_t *cfg = eng->cfg;
  ab_cpu_sample_t c0, c1;
  uint64_t t_group = group_sync(eng, out, 2);
  ab_cpu_sample(&c0);
  uint64_t t_start = t_group ? t_group : ab_now_ns();
  uint64_t dur_ns = (uint64_t)(cfg->duration_s * 1e9);
  uint64_t deadline = t_start + dur_ns;
  int ran = 0, ended = 0;
  double drain_s = cfg->timeout_s;
  if (out->error[0] == '\0' && !eng->aborted && !eng->interrupted) {
    ran = 1;
    /* CLOCK_REALTIME as the measure phase is started (at t_start, or
     * as late as this thread woke), for shards started on a plan
     * (--start-at) and joined by that clock (docs/distributed.md) */
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    out->measure_start_unix_ns = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
    eng->live_t0 = t_start;
    send_cmd(eng, AB__CMD_MEASURE, t_start, deadline);
    if (measure_wait(eng, deadline)) {
      uint64_t t_end = ab_now_ns();
      if (!eng->aborted) drain_s = end_now(eng, &t_end), ended = 1;
      dur_ns = t_end - t_start; /* the loops' new deadline */
    }
  } else {
    dur_ns = 0; /* failed, aborted or interrupted before anything was measured */
  }
  ab_cpu_sample(&c1);
  uint64_t t_cpu1 = ab_now_ns();
  if (ran && out->error[0] == '\0' && !eng->aborted) {
    int done = wait_stage(eng, AB__ST_MEASURE_DONE, drain_s + (ended ? 1 : 5), !ended);
    if (!done && !ended && eng->interrupted && !eng->aborted) {
      /* interrupted in the drain after the deadline: shorten it */
      done = wait_stage(eng, AB__ST_MEASURE_DONE, end_now(eng, NULL) + 1, 0);
    }
    if (!done && !eng->aborted)
      snprintf(out->error, sizeof(out->error), "the drain did not finish in time");
  }
  out->measured_s = (double)dur_ns / 1e9;
  out->cpu_wall_s = (double)(t_cpu1 - t_start) / 1e9;
  out->cpu_user_s = c1.user_s - c0.user_s;
  out->cpu_sys_s = c1.sys_s - c0.sys_s;
  out->interrupted = eng->interrupted;
}

/* STOP: the pool is joined, every loop closes its handles and its thread
 * ends; then the loops are merged and freed (merge.c).  Returns 0, or < 0
 * when the merge itself failed (out of memory). */
static int stop_and_merge(ab__engine_t *eng, ab_result_t *out) {
  ab__pool_stop(eng->pool);
  send_cmd(eng, AB__CMD_STOP, 0, 0);
  for (uint32_t li = 0; li < eng->nloops; li++) uv_thread_join(&eng->loops[li].thread);
  ab__shared_close(eng);
  out->work_sink = ab__pool_free(eng->pool);
  eng->pool = NULL;
  return ab__merge_loops(eng, out);
}

static void engine_init(ab__engine_t *eng, const ab_case_cfg_t *cfg) {
  memset(eng, 0, sizeof(*eng));
  eng->cfg = cfg;
  eng->drv = cfg->driver;
  eng->max_frame = AB_MSG_MAX_PAYLOAD;
  eng->nloops = cfg->model == AB_MODEL_POOL ? 1 : cfg->threads;
  /* shared:1 is one loop thread with its own reactor: sharded:1 exactly */
  eng->shared = cfg->model == AB_MODEL_SHARED && cfg->threads > 1;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&eng->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&eng->mu, NULL);
  pthread_mutex_init(&eng->tags.mu, NULL);
  /* the case's own tag names first: ids 1 .. in their order */
  for (uint32_t i = 0; i < cfg->ntag_names && cfg->tag_names; i++)
    ab_tag_names_id(&eng->tags, cfg->tag_names[i], strlen(cfg->tag_names[i]));
}

int ab__tag_id(ab__engine_t *eng, const char *name, size_t len) {
  if (!eng->cfg->tagged) return AB_EINVAL;
  return ab_tag_names_id(&eng->tags, name, len);
}

static void engine_destroy(ab__engine_t *eng) {
  ab__live_free(eng);
  free(eng->loops);
  eng->loops = NULL;
  pthread_mutex_destroy(&eng->mu);
  pthread_mutex_destroy(&eng->tags.mu);
  pthread_cond_destroy(&eng->cv);
}

int ab_run_case(const ab_case_cfg_t *cfg, ab_result_t *out) {
  memset(out, 0, sizeof(*out));
  ab_hist_init(&out->rtt);
  ab_hist_init(&out->connect);
  ab_hist_init(&out->handshake);
  ab_hist_init(&out->rtt_raw);
  ab_hist_init(&out->rtt_ok);
  ab_hist_init(&out->send_lag);
  ab_hist_init(&out->gen_lag);
  int r = ab_case_check(cfg, out->error, sizeof(out->error));
  if (r < 0) return r;
  /* before the loops, the clients and their windows exist: what the run
   * adds to the process is measured from here (rss_per_connection_bytes) */
  out->rss_base_bytes = ab_rss_now_bytes();

  ab__engine_t eng;
  engine_init(&eng, cfg);
  uint32_t workers = cfg->model == AB_MODEL_POOL && cfg->threads > 1 ? cfg->threads : 0;
  uint32_t started = 0; /* loops whose uv_loop is initialised */
  if ((r = eng.drv->case_open(&eng, out->error, sizeof(out->error))) < 0) {
    engine_destroy(&eng);
    return r;
  }
  out->workers = workers;
  if ((r = ab__loops_alloc(&eng, out)) < 0 || (r = ab__shared_open(&eng)) < 0 ||
      (r = ab__loops_open(&eng, workers, &started, out)) < 0 ||
      (workers && (r = ab__pool_start(&eng, workers)) < 0)) {
    if (out->error[0] == '\0') ab__setup_error(out, r);
    ab__loops_abandon(&eng, started);
    eng.drv->case_close(&eng, out);
    engine_destroy(&eng);
    return r;
  }
  ab__rate_calibrate(&eng, out); /* open loop: the timer floor (calib.c) */
  for (uint32_t li = 0; li < eng.nloops; li++)
    uv_thread_create(&eng.loops[li].thread, loop_main, &eng.loops[li]);

  if (cfg->role == AB_ROLE_SERVER) {
    serve_until_stopped(&eng, out);
  } else {
    topology_notes(&eng, workers, out);
    connect_clients(&eng, out);
    warm_up(&eng, out);
    measure(&eng, out);
  }
  /* an error set by now is the run's own (setup, connect, warm-up, drain),
   * not one of the loops' (merged next) */
  int fatal = out->error[0] != '\0';
  if (stop_and_merge(&eng, out) < 0) fatal = 1;
  ab__judge(&eng, out, fatal);
  engine_destroy(&eng);
  return 0;
}
