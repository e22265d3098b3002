/* engine.c -- topology, phases and the coordinator (see engine.h).
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
 * Phase deadlines are nanosecond clock values; libuv timers only wake a loop
 * near them (they are millisecond timers) and the clock decides.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "base/clock.h"
#include "engine/engine_int.h"
#include "engine/window.h"
#include "proto/framing.h"
#include "base/procstat.h"

void ab__errors_add(ab_error_count_t *tab, int *n, int code, uint64_t count, const char *why) {
  int i = 0;
  while (i < *n && tab[i].code != code) i++;
  if (i == *n) {
    if (*n == AB_MAX_ERROR_CLASSES) return;
    tab[i].code = code;
    tab[i].count = 0;
    tab[i].why[0] = '\0';
    (*n)++;
  }
  tab[i].count += count;
  if (tab[i].why[0] == '\0' && why && why[0]) snprintf(tab[i].why, sizeof(tab[i].why), "%s", why);
}

void ab__loop_error(ab__loop_t *l, int code, const char *what) {
  ab__errors_add(l->errors, &l->nerrors, code, 1, what);
  if (l->first_error[0] == '\0')
    snprintf(l->first_error, sizeof(l->first_error), "%s", what);
}

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

int ab__server_socket(ab__loop_t *l, int type) {
  const ab_case_cfg_t *cfg = l->eng->cfg;
  struct sockaddr_storage ss;
  socklen_t len;
  memset(&ss, 0, sizeof(ss));
  if (cfg->role == AB_ROLE_SERVER && cfg->addr.ss_family != 0) {
    ss = cfg->addr;
  } else {
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
  /* the loops of a server-role sharded:N share the port the first one got */
  if (cfg->role == AB_ROLE_SERVER && l->index > 0) {
    int port = l->eng->loops[0].port;
    if (ss.ss_family == AF_INET6) ((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
    else ((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
  }
  len = ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
  int one = 1;
  /* several loops share the port through SO_REUSEPORT; first make sure no
   * other process already holds it (it would silently share it too) */
  int explicit_port = ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port != 0
                                               : ((struct sockaddr_in *)&ss)->sin_port != 0;
  int reuse = cfg->role == AB_ROLE_SERVER && (l->eng->nloops > 1 || cfg->reuse_port);
  if (reuse && l->index == 0 && explicit_port && !cfg->reuse_port) {
    int probe = socket(ss.ss_family, type | SOCK_CLOEXEC, 0);
    if (probe < 0) return -errno;
    setsockopt(probe, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(probe, (struct sockaddr *)&ss, len) != 0) {
      int e = -errno;
      close(probe);
      return e;
    }
    close(probe);
  }
  int fd = socket(ss.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (reuse) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  if (bind(fd, (struct sockaddr *)&ss, len) != 0) {
    int e = -errno;
    close(fd);
    return e;
  }
  return fd;
}

static uint64_t ms_until(uint64_t t_ns) {
  uint64_t now = ab_now_ns();
  if (t_ns <= now) return 0;
  return (t_ns - now + 999999) / 1000000; /* round up: never early */
}

static void phase_timer_cb(uv_timer_t *t);

static void arm_phase_timer(ab__loop_t *l, uint64_t at_ns) {
  uv_timer_start(&l->phase_timer, phase_timer_cb, ms_until(at_ns), 0);
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

void ab__loop_check_progress(ab__loop_t *l) {
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
static void wake(ab__loop_t *l, ab__client_t *c) {
  ab__client_take(l, c);
  l->eng->drv->wake(c);
  ab__client_give(l, c);
}

/* A sending phase began: every client may fill its window. */
static void wake_all(ab__loop_t *l) {
  for (uint32_t i = 0; i < l->nclients; i++) wake(l, ab__loop_client(l, i));
}

/* ---- the rate timer (open loop) ------------------------------------------
 * One timerfd per loop, absolute CLOCK_MONOTONIC expirations (libuv's
 * timers are milliseconds), watched by the loop: it fires at the loop's
 * next intended send, the pumps of the clients whose message is due are
 * woken, and it is re-armed to the next one.  The loop's messages are in
 * time order along rate_cursor (the clients' phases are increasing and
 * under one period), so finding the next is O(1) per message; a client
 * whose window is full is refilled by its own replies. */

static void rate_arm(ab__loop_t *l, uint64_t at_ns) {
  struct itimerspec its;
  memset(&its, 0, sizeof(its));
  if (at_ns != 0) { /* 0 disarms */
    its.it_value.tv_sec = (time_t)(at_ns / 1000000000u);
    its.it_value.tv_nsec = (long)(at_ns % 1000000000u);
  }
  timerfd_settime(l->rate_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

static uint64_t rate_time(const ab__loop_t *l, uint64_t cursor) {
  return ab__win_intended(&ab__loop_client(l, (uint32_t)(cursor % l->nclients))->win, cursor / l->nclients);
}

/* When a loop's sends are far apart (its thread sleeps between them), the
 * timer fires this long before an intended send and the loop waits out
 * the rest reading the clock: waking a sleeping thread takes tens of
 * microseconds (more on a busy machine), which would otherwise all be send
 * lag.  At most RATE_EARLY_NS is spent spinning per wake, so at most
 * RATE_EARLY_NS / RATE_SPIN_GAP_NS of the thread (16 %); a loop whose
 * sends are closer than RATE_SPIN_GAP_NS is busy anyway and never spins
 * (it would delay its replies). */
#define RATE_EARLY_NS 40000u
#define RATE_SPIN_GAP_NS 250000u

/* Wakes the clients whose messages are due and arms the timer just before
 * the next intended send of the phase (or disarms it). */
static void rate_run(ab__loop_t *l) {
  uint32_t n = l->nclients;
  uint64_t dl, now = ab_now_ns(), t = 0;
  if (!l->open_loop || n == 0) return;
  if (ab__win_phase(l, now, &dl) == 0) {
    rate_arm(l, 0);
    return;
  }
  for (uint32_t steps = 0;; steps++) {
    t = rate_time(l, l->rate_cursor);
    if (t > now) {
      if (t - now > l->rate_early_ns || t >= dl) break;
      while ((now = ab_now_ns()) < t) {
      }
    }
    if (steps == n) {
      /* more than a round behind (a stall): every client was woken and
       * grants all it has due; jump the cursor to the present */
      const ab__win_t *w0 = &ab__loop_client(l, 0)->win;
      double r = ((double)(now - w0->sched_t0) - w0->sched_off) / w0->sched_period;
      uint64_t c = r > 1 ? ((uint64_t)r - 1) * n : 0;
      if (c > l->rate_cursor) l->rate_cursor = c;
      while ((t = rate_time(l, l->rate_cursor)) <= now) l->rate_cursor++;
      break;
    }
    wake(l, ab__loop_client(l, (uint32_t)(l->rate_cursor % n)));
    l->rate_cursor++;
  }
  rate_arm(l, t < dl ? t - l->rate_early_ns : 0);
}

static void rate_cb(uv_poll_t *p, int status, int events) {
  ab__loop_t *l = p->data;
  uint64_t expirations;
  (void)status;
  (void)events;
  if (read(l->rate_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN) return;
  rate_run(l);
}

/* A sending phase begins at t0: closed loop, every client fills its
 * window; open loop, every schedule restarts at t0. */
static void phase_begin(ab__loop_t *l, uint64_t t0) {
  if (!l->open_loop) {
    wake_all(l);
    return;
  }
  for (uint32_t i = 0; i < l->nclients; i++) {
    ab__client_t *c = ab__loop_client(l, i);
    ab__client_take(l, c);
    ab__win_sched_start(&c->win, t0);
    ab__client_give(l, c);
  }
  l->rate_cursor = 0;
  /* the loop's sends are sched_period / nclients apart */
  double gap = l->nclients ? ab__loop_client(l, 0)->win.sched_period / l->nclients : 0;
  l->rate_early_ns = gap >= RATE_SPIN_GAP_NS ? RATE_EARLY_NS : 0;
  rate_run(l);
}

/* The measure deadline passed: open loop, what the schedules meant to
 * send before it and did not is unsent. */
static void measure_end(ab__loop_t *l) {
  if (!l->open_loop) return;
  rate_arm(l, 0);
  for (uint32_t i = 0; i < l->nclients; i++) {
    ab__client_t *c = ab__loop_client(l, i);
    ab__client_take(l, c);
    uint64_t u = ab__win_unsent(&c->win, l->deadline_ns);
    l->unsent += u;
    /* why: the window was full (its slots in flight, and more waiting
     * than the replies since the deadline can have freed), or a slot was
     * free and the sender was late (docs/load-models.md) */
    if (u > 0 && (uint64_t)c->win.inflight + u >= l->window) l->unsent_window_full += u;
    ab__client_give(l, c);
  }
}

/* At most this many connects in flight per loop: a burst larger than the
 * listen backlog (net.core.somaxconn, 4096; SYN backlog 2048) overflows it,
 * and the dropped handshakes come back only after retransmission timeouts,
 * which would then sit inside the first measured RTTs. */
#define CONNECTS_IN_FLIGHT 256

/* connect_rate: client k of l may start at connect_t0 + id / rate, so the
 * case's connects are spaced evenly across its loops (client i is on loop
 * i mod N).  0: at once. */
static uint64_t connect_due_at(const ab__loop_t *l, uint32_t k) {
  if (!(l->connect_gap_ns > 0)) return 0;
  return l->connect_t0 + (uint64_t)((double)ab__loop_client(l, k)->id * l->connect_gap_ns);
}

static void connect_pace_cb(uv_timer_t *t) {
  ab__loop_t *l = t->data;
  if (l->phase != AB__PH_STOPPING) ab__loop_connect_more(l);
}

void ab__loop_connect_more(ab__loop_t *l) {
  /* a driver that finishes a connect inside client_start calls back into
   * ab__loop_connect_done: the loop below goes on, no recursion; a loop
   * that stops (connecting took too long) starts none */
  if (l->in_connect_more || l->phase == AB__PH_STOPPING) return;
  l->in_connect_more = 1;
  uint64_t now = l->connect_gap_ns > 0 ? ab_now_ns() : 0;
  while (l->connects_started < l->nclients &&
         l->connects_started - (l->nclients - l->connects_pending) < CONNECTS_IN_FLIGHT) {
    uint64_t due = connect_due_at(l, l->connects_started);
    if (due > now) {
      /* paced: the next one when its time comes (a millisecond timer:
       * starts are spaced to within a millisecond, never early) */
      uv_timer_start(&l->connect_pace, connect_pace_cb, ms_until(due), 0);
      break;
    }
    l->eng->drv->client_start(ab__loop_client(l, l->connects_started++));
  }
  l->in_connect_more = 0;
}

/* The connect limit: a loop whose connects have made no progress for the
 * scenario's connect_timeout (default: timeout) fails the ones still going
 * (docs/scenarios.md, connect_timeout): a bare connect with ECONNTIMEDOUT,
 * a handshake with ETIMEDOUT.  The phase timer is idle until warm-up, so
 * it serves. */
static void connect_timer_cb(uv_timer_t *t);

static void arm_connect_timer(ab__loop_t *l) {
  double s = ab__connect_timeout_s(l->eng->cfg);
  if (l->eng->drv->connect_expired && s > 0)
    uv_timer_start(&l->phase_timer, connect_timer_cb, (uint64_t)(s * 1000.0 + 0.5), 0);
}

static void connect_timer_cb(uv_timer_t *t) {
  ab__loop_t *l = t->data;
  if (l->phase == AB__PH_STOPPING) return;
  /* expiring one starts the next (ab__loop_connect_more): only those
   * started before now are judged; the later ones get a new timer */
  uint32_t n = l->connects_started;
  for (uint32_t i = 0; i < n && l->connects_pending > 0; i++) {
    ab__client_t *c = ab__loop_client(l, i);
    ab__client_take(l, c);
    l->eng->drv->connect_expired(c);
    ab__client_give(l, c);
  }
}

void ab__loop_connect_done(ab__loop_t *l) {
  /* stopping: the connects cut short report here as their handles close;
   * the phase timer is closed and nothing more may start */
  if (l->phase == AB__PH_STOPPING) {
    l->connects_pending--;
    return;
  }
  atomic_fetch_add_explicit(&l->eng->connects_done, 1, memory_order_relaxed);
  if (--l->connects_pending == 0) {
    uv_timer_stop(&l->phase_timer);
    ab__loop_reached(l, AB__ST_CONNECTED);
  } else {
    arm_connect_timer(l);
    ab__loop_connect_more(l);
  }
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
      uint64_t k = t0 > l->start_ns ? (t0 - l->start_ns) / l->iv_ns : 0;
      if (k < l->iv_i) k = l->iv_i; /* counted already past t0: kept */
      if (k + 1 < l->iv_n) l->iv_n = (uint32_t)k + 1;
      if (l->iv_i + 1 >= l->iv_n) l->iv_end_ns = UINT64_MAX;
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
static void phase_set(ab__loop_t *l, int cmd, uint64_t t0, uint64_t t1) {
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
  case AB__CMD_CONNECT: {
    struct sockaddr_storage addr;
    ab__loop_t *srv = eng->cfg->model == AB_MODEL_POOL ? &eng->loops[0] : l;
    if (eng->cfg->role == AB_ROLE_CLIENT) addr = eng->cfg->addr;
    else uv_ip4_addr("127.0.0.1", srv->port, (struct sockaddr_in *)&addr);
    l->connects_pending = l->nclients;
    l->connect_addr = addr;
    l->connect_t0 = t0;
    l->connect_gap_ns = eng->cfg->connect_rate > 0 ? 1e9 / eng->cfg->connect_rate : 0;
    if (l->nclients == 0) ab__loop_reached(l, AB__ST_CONNECTED);
    else arm_connect_timer(l);
    ab__loop_connect_more(l);
    break;
  }
  case AB__CMD_WARMUP:
    if (!eng->shared) phase_set(l, cmd, t0, t1);
    arm_phase_timer(l, t0);
    ab__sweep_start(l);
    phase_begin(l, ab_now_ns());
    break;
  case AB__CMD_MEASURE:
    if (!eng->shared) phase_set(l, cmd, t0, t1);
    arm_phase_timer(l, t1);
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

static void loop_main(void *arg) {
  ab__loop_t *l = arg;
  /* open loop: the rate timerfd's expirations exact to the nanosecond
   * (the default timer slack lets the kernel fire a normal thread's timer
   * up to 50 us late, all of it send lag) */
  if (l->open_loop) prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  uv_run(&l->loop, UV_RUN_DEFAULT);
}

static void send_cmd(ab__engine_t *eng, int cmd, uint64_t t0, uint64_t t1) {
  pthread_mutex_lock(&eng->mu);
  for (uint32_t i = 0; i < eng->nloops; i++) {
    eng->loops[i].cmd = cmd;
    eng->loops[i].cmd_t0 = t0;
    eng->loops[i].cmd_t1 = t1;
    if (eng->shared) phase_set(&eng->loops[i], cmd, t0, t1);
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

/* The number of intervals of the time series: the last may be shorter. */
uint32_t ab__interval_count(const ab_case_cfg_t *cfg) {
  double iv = cfg->interval_s > 0 ? cfg->interval_s : 1.0;
  double n = cfg->duration_s / iv;
  uint32_t k = (uint32_t)n;
  if ((double)k < n - 1e-9) k++;
  return k < 1 ? 1 : k;
}

/* Against the capability table (proto/caps.h): the scenario checks
 * (the arkbench.scenario.check module) refuse the same cases first, in the
 * words users read; this is the safety net for any other caller. */
int ab_case_check(const ab_case_cfg_t *cfg, char *err, size_t errlen) {
#define BAD(...) do { snprintf(err, errlen, __VA_ARGS__); return AB_ECONFIG; } while (0)
  const ab_caps_limits_t *lim = ab_caps_limits();
  size_t nexec, nframing, nmodel;
  const ab_cap_name_t *execs = ab_caps_executions(&nexec);
  const ab_cap_name_t *framings = ab_caps_framings(&nframing);
  const ab_cap_name_t *models = ab_caps_models(&nmodel);
  const ab_proto_cap_t *p = ab_caps_protocol(cfg->protocol);
  const char *exec = ab_caps_name(execs, nexec, cfg->execution);
  if (p == NULL) BAD("unknown protocol %d", cfg->protocol);
  if (exec == NULL) BAD("unknown execution %d", cfg->execution);
  if (!ab_caps_runs(p, cfg->execution)) BAD("execution %s does not run protocol %s", exec, p->name);
  if (ab_caps_name(framings, nframing, cfg->framing) == NULL) BAD("unknown framing %d", cfg->framing);
  if (cfg->payload < lim->payload_min || cfg->payload > p->payload_max) BAD("%s payload %u out of range %u .. %u", p->name, cfg->payload, lim->payload_min, p->payload_max);
  if (cfg->clients < lim->clients_min || cfg->clients > lim->clients_max) BAD("clients %u out of range %u .. %u", cfg->clients, lim->clients_min, lim->clients_max);
  if (cfg->window < lim->window_min || cfg->window > lim->window_max) BAD("window %u out of range %u .. %u", cfg->window, lim->window_min, lim->window_max);
  if (ab_caps_name(models, nmodel, cfg->model) == NULL) BAD("unknown topology model %d", cfg->model);
  if (cfg->model == AB_MODEL_SHARED && cfg->threads > 1 && !ab_caps_runs_shared(p, cfg->execution)) BAD("shared:%u does not run execution %s over protocol %s yet", cfg->threads, exec, p->name);
  if (cfg->threads < lim->threads_min || cfg->threads > lim->threads_max) BAD("topology N %u out of range %u .. %u", cfg->threads, lim->threads_min, lim->threads_max);
  if (cfg->work > lim->work_max) BAD("work %llu over %llu", (unsigned long long)cfg->work, (unsigned long long)lim->work_max);
  if (!(cfg->warmup_s >= 0) || !(cfg->duration_s > 0) || !(cfg->timeout_s > 0)) BAD("warmup >= 0, duration > 0 and timeout > 0 are required");
  if (!(cfg->rate >= 0) || cfg->rate > 1e9) BAD("rate must be >= 0 (0: closed loop) and at most 1e9 messages/s");
  if (!(cfg->connect_rate >= 0)) BAD("connect_rate must be >= 0 (0: unpaced)");
  if (!(cfg->connect_rate <= lim->connect_rate_max)) BAD("connect_rate over %g connections/s", lim->connect_rate_max);
  if (cfg->requests_per_connection > lim->requests_per_connection_max) BAD("requests_per_connection over %u", lim->requests_per_connection_max);
  if (cfg->requests_per_connection && !ab_caps_runs_churn(p, cfg->execution)) BAD("requests_per_connection does not run execution %s over protocol %s", exec, p->name);
  if (cfg->requests_per_connection && cfg->driver && !cfg->driver->can_reopen) BAD("requests_per_connection needs connections that can be reopened; driver '%s' cannot", cfg->driver->name ? cfg->driver->name : "?");
  if (cfg->requests_per_connection && !lim->churn_shared && cfg->model == AB_MODEL_SHARED && cfg->threads > 1) BAD("requests_per_connection does not run on shared:%u (it does not reopen connections)", cfg->threads);
  if (cfg->interval_s != 0 && !((cfg->interval_s >= 0.01 || cfg->interval_s == cfg->duration_s) && cfg->interval_s <= cfg->duration_s)) BAD("interval must be from 0.01 s to the duration");
  if (ab__interval_count(cfg) > AB_MAX_INTERVALS) BAD("duration / interval is over %d intervals", AB_MAX_INTERVALS);
  if ((double)cfg->clients * cfg->window * cfg->payload > (double)lim->inflight_max) BAD("clients x window x payload exceeds %llu bytes", (unsigned long long)lim->inflight_max);
  if (cfg->ntag_names > AB_TAGS_MAX) BAD("%u tags; a case has at most %d", cfg->ntag_names, AB_TAGS_MAX);
  for (uint32_t i = 0; i < cfg->ntag_names; i++)
    if (cfg->tag_names == NULL || cfg->tag_names[i] == NULL || cfg->tag_names[i][0] == '\0' ||
        strlen(cfg->tag_names[i]) > AB_TAG_NAME_MAX)
      BAD("tag %u: expected a name of 1 to %d bytes", i + 1, AB_TAG_NAME_MAX);
  for (uint32_t i = 0; cfg->tag_rot && i < cfg->ntag_rot; i++)
    if (cfg->tag_rot[i] > cfg->ntag_names) BAD("tag rotation entry %u names no tag", i + 1);
  if ((cfg->ntag_names || cfg->ntag_rot) && !cfg->tagged) BAD("tags given for a case that is not tagged");
  for (uint32_t k = 0; k < cfg->ntag_rot_conns; k++)
    if (cfg->tag_rot_n[k] == 0 || cfg->tag_rot_first[k] + cfg->tag_rot_n[k] > cfg->ntag_rot)
      BAD("connection %u's part of the tag rotation is not inside it", k);
  const ab_driver_t *d = cfg->driver;
  if (d == NULL) BAD("no driver runs this protocol with this execution");
  if (!d->case_open || !d->case_close || !d->loop_open || !d->loop_close || !d->client_start ||
      !d->wake || !d->client_fail || !d->stop) BAD("driver '%s' is incomplete", d->name ? d->name : "?");
  return 0;
#undef BAD
}

static void note(ab_result_t *out, const char *fmt, uint32_t a, uint32_t b) {
  if (out->nnotes < AB_MAX_NOTES) snprintf(out->notes[out->nnotes++], sizeof(out->notes[0]), fmt, a, b);
}

static void free_clients(ab__loop_t *l) {
  for (uint32_t i = 0; i < l->nclients; i++) {
    ab__win_free(&ab__loop_client(l, i)->win);
  }
  free(l->clients);
  l->clients = NULL;
  free(l->iv);
  free(l->iv_lag);
  free(l->tags);
  l->iv = NULL;
  l->iv_lag = NULL;
  l->tags = NULL;
  if (l->rate_fd >= 0) close(l->rate_fd);
  l->rate_fd = -1;
  if (l->sweep_fd >= 0) close(l->sweep_fd);
  l->sweep_fd = -1;
}

/* The loop's time series and open-loop histograms, preallocated. */
static int alloc_series(ab__loop_t *l, const ab_case_cfg_t *cfg) {
  l->iv_ns = (uint64_t)((cfg->interval_s > 0 ? cfg->interval_s : 1.0) * 1e9);
  l->iv_n = ab__interval_count(cfg);
  l->iv_end_ns = UINT64_MAX;
  l->iv = calloc(l->iv_n, sizeof(ab__iv_t));
  if (l->iv == NULL) return AB_ENOMEM;
  for (uint32_t i = 0; i < l->iv_n; i++) ab_hist_init(&l->iv[i].rtt);
  ab_hist_init(&l->rtt_raw);
  ab_hist_init(&l->send_lag);
  if (!l->open_loop) return 0;
  l->iv_lag = calloc(l->iv_n, sizeof(ab_hist_t));
  if (l->iv_lag == NULL) return AB_ENOMEM;
  for (uint32_t i = 0; i < l->iv_n; i++) ab_hist_init(&l->iv_lag[i]);
  return 0;
}

/* A setup step failed with r: the sentence for out->error. */
static int setup_error(ab_result_t *out, int r) {
  if (r == AB_ENOMEM)
    snprintf(out->error, sizeof(out->error), "out of memory setting up the case");
  else
    snprintf(out->error, sizeof(out->error), "setting up loop: %s (%s)", ab_strerror(r),
             ab_err_name(r));
  return r;
}

/* The loops and their clients; connection i lives on loop i mod N (client
 * and server ends). */
static int alloc_loops(ab__engine_t *eng, ab_result_t *out) {
  const ab_case_cfg_t *cfg = eng->cfg;
  eng->loops = calloc(eng->nloops, sizeof(ab__loop_t));
  out->conns_per_loop = calloc(eng->nloops, sizeof(uint32_t));
  if (eng->loops == NULL || out->conns_per_loop == NULL) return AB_ENOMEM;
  out->loops = eng->nloops;
  for (uint32_t i = 0; i < cfg->clients; i++) out->conns_per_loop[i % eng->nloops]++;
  uint32_t total = cfg->clients_total > cfg->clients ? cfg->clients_total : cfg->clients;
  for (uint32_t li = 0; li < eng->nloops; li++) {
    ab__loop_t *l = &eng->loops[li];
    l->eng = eng;
    l->index = li;
    l->rate_fd = -1;
    l->sweep_fd = -1;
    l->open_loop = cfg->rate > 0;
    ab_hist_init(&l->rtt);
    ab_hist_init(&l->connect);
    ab_hist_init(&l->handshake);
    l->payload = cfg->payload;
    l->window = cfg->window;
    l->window_pow2 = (cfg->window & (cfg->window - 1)) == 0;
    l->timeout_ns = (uint64_t)(cfg->timeout_s * 1e9);
    l->pfx = cfg->framing == AB_FRAMING_LENGTH ? (uint32_t)ab_prefix_size(cfg->payload) : 0;
    l->fsz = l->pfx + (size_t)cfg->payload;
    l->nclients = out->conns_per_loop[li];
    /* replies of a datagram transport may be lost, duplicated or reordered */
    int win_kind = ab_caps_protocol(cfg->protocol)->transport == AB_TRANSPORT_DATAGRAM
                       ? AB__WIN_DATAGRAM : AB__WIN_ORDERED;
    /* a 1-byte datagram reply names its sequence mod 256: an outcome ring
     * of 256 tells every such reply's fate (window.h, ab__win_reply_datagram) */
    uint32_t history = cfg->payload < 2 ? 256u : 0u;
    l->client_size = eng->drv->client_size;
    if (l->client_size < sizeof(ab__client_t)) l->client_size = sizeof(ab__client_t);
    l->clients = calloc(l->nclients ? l->nclients : 1, l->client_size);
    if (l->clients == NULL || alloc_series(l, cfg) < 0) return AB_ENOMEM;
    if (cfg->tagged) {
      /* each tag's counts and histogram (engine/tags.h) */
      if ((l->tags = malloc(AB_TAGS_MAX * sizeof(ab_tag_stats_t))) == NULL) return AB_ENOMEM;
      ab_tags_init(l->tags);
      l->tag_rot = cfg->tag_rot;
      l->ntag_rot = cfg->tag_rot ? cfg->ntag_rot : 0;
    }
    for (uint32_t k = 0; k < l->nclients; k++) {
      ab__client_t *c = ab__loop_client(l, k);
      c->loop = l;
      c->home = l;
      /* this process's connection li + k * nloops is the case's id */
      c->id = cfg->id_base + (li + k * eng->nloops) * (cfg->id_stride ? cfg->id_stride : 1);
      if (ab__win_init(&c->win, cfg->window, win_kind, l->open_loop, history) < 0) return AB_ENOMEM;
      if (cfg->tagged && (c->win.tag = calloc(cfg->window, 1)) == NULL) return AB_ENOMEM;
      c->win.tag_first = 0;
      c->win.tag_n = l->ntag_rot;
      if (l->ntag_rot && cfg->ntag_rot_conns > 0) {
        c->win.tag_first = cfg->tag_rot_first[c->id % cfg->ntag_rot_conns];
        c->win.tag_n = cfg->tag_rot_n[c->id % cfg->ntag_rot_conns];
      }
      /* the phases are spread over every connection of the case: the
       * case's rate over its clients_total, of which this process has
       * cfg->clients at cfg->rate */
      if (l->open_loop)
        ab__win_sched_init(&c->win, total == cfg->clients ? cfg->rate : cfg->rate * total / cfg->clients,
                           c->id, total);
    }
  }
  return 0;
}

/* Each loop's libuv loop and engine handles, then the driver's side of it
 * (coordinator thread, before the loop threads start).  *started counts
 * the loops whose uv_loop is initialised (they need closing on failure). */
static int open_loops(ab__engine_t *eng, uint32_t workers, uint32_t *started, ab_result_t *out) {
  for (uint32_t li = 0; li < eng->nloops; li++) {
    ab__loop_t *l = &eng->loops[li];
    int r = uv_loop_init(&l->loop);
    if (r < 0) return setup_error(out, r);
    (*started)++;
    uv_async_init(&l->loop, &l->ctl, ctl_cb);
    l->ctl.data = l;
    uv_timer_init(&l->loop, &l->phase_timer);
    l->phase_timer.data = l;
    uv_timer_init(&l->loop, &l->connect_pace);
    l->connect_pace.data = l;
    ab__live_open(l);
    if ((r = ab__sweep_open(l)) < 0) return setup_error(out, r);
    if ((r = ab__shared_loop_open(l)) < 0) return setup_error(out, r);
    if (workers) {
      uv_async_init(&l->loop, &l->pool_done, pool_done_cb);
      l->pool_done.data = l;
    }
    if (l->open_loop && l->nclients > 0) {
      l->rate_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
      if (l->rate_fd < 0) return setup_error(out, -errno);
      if ((r = uv_poll_init(&l->loop, &l->rate_poll, l->rate_fd)) < 0) return setup_error(out, r);
      l->rate_poll.data = l;
      uv_poll_start(&l->rate_poll, UV_READABLE, rate_cb);
    }
    if ((r = eng->drv->loop_open(l, out->error, sizeof(out->error))) < 0)
      return out->error[0] ? r : setup_error(out, r);
  }
  return 0;
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
    all = wait_stage(eng, AB__ST_CONNECTED,
                     ab__connect_timeout_s(cfg) + cfg->timeout_s + 10 + (first ? pace_s : 0), 1);
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
  if (!wait_stage(eng, AB__ST_WARM_DONE, cfg->warmup_s + cfg->timeout_s + 5, 1) && !eng->aborted &&
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

/* Folds one loop's measurements into the result (engine/counters.h). */
static void merge_loop(ab_result_t *out, ab__loop_t *l) {
#define MERGE_COUNTER(name, merge, group, doc)                                              \
  out->name = (merge) == AB_MERGE_MAX ? (out->name > l->name ? out->name : l->name)         \
                                      : out->name + l->name;
  AB_COUNTERS(MERGE_COUNTER)
#undef MERGE_COUNTER
  out->unfinished += l->meas_inflight; /* stuck at stop */
  for (int k = 0; k < AB_REPLY_CODES; k++) out->reply_codes[k] += l->reply_codes[k];
  /* the loop's RTT histogram is its intervals' together */
  for (uint32_t i = 0; i < l->iv_n; i++) ab_hist_merge(&l->rtt, &l->iv[i].rtt);
  ab_hist_merge(&out->rtt, &l->rtt);
  ab_hist_merge(&out->rtt_raw, &l->rtt_raw);
  ab_hist_merge(&out->send_lag, &l->send_lag);
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
  ab_hist_merge(&out->connect, &l->connect);
  ab_hist_merge(&out->handshake, &l->handshake);
  if (out->tags && l->tags) ab_tags_merge(out->tags, l->tags);
  if (l->status_failures) {
    /* an echo that answers 500 is not a round trip that worked (the
     * classes, by status, are in the loop's errors) */
    if (out->error[0] == '\0')
      snprintf(out->error, sizeof(out->error),
               "%llu responses had a status outside the success set (2xx unless the case says"
               " otherwise)",
               (unsigned long long)l->status_failures);
  }
  out->work_sink ^= l->work_sink;
  for (int k = 0; k < l->nerrors; k++)
    ab__errors_add(out->errors, &out->nerrors, l->errors[k].code, l->errors[k].count,
                   l->errors[k].why);
  if (out->error[0] == '\0' && l->first_error[0] != '\0')
    snprintf(out->error, sizeof(out->error), "%s", l->first_error);
}

/* The result's time series, empty, for the loops to be merged into. */
static int alloc_result_series(const ab__engine_t *eng, ab_result_t *out) {
  const ab_case_cfg_t *cfg = eng->cfg;
  uint32_t n = ab__interval_count(cfg);
  if (eng->interrupted) {
    /* only the intervals begun before the interrupt (end_measure_early) */
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

/* STOP: the pool is joined, every loop closes its handles and its thread
 * ends; then the loops are merged and freed.  Returns 0, or < 0 when the
 * merge itself failed (out of memory). */
static int stop_and_merge(ab__engine_t *eng, ab_result_t *out) {
  ab__pool_stop(eng->pool);
  send_cmd(eng, AB__CMD_STOP, 0, 0);
  for (uint32_t li = 0; li < eng->nloops; li++) uv_thread_join(&eng->loops[li].thread);
  ab__shared_close(eng);
  out->work_sink = ab__pool_free(eng->pool);
  eng->pool = NULL;

  ab_cpu_sample_t cend;
  ab_cpu_sample(&cend);
  out->rss_end_bytes = ab_rss_now_bytes();
  /* ru_maxrss is the kernel's high-water mark, updated lazily: never report
   * a peak below what is resident now */
  out->rss_peak_bytes = cend.maxrss_bytes > out->rss_end_bytes ? cend.maxrss_bytes
                                                               : out->rss_end_bytes;
  int merged = alloc_result_series(eng, out);
  if (merged < 0 && out->error[0] == '\0')
    snprintf(out->error, sizeof(out->error), "out of memory merging the time series");
  if (eng->cfg->tagged) {
    /* the tags' names, and their stats merged below */
    out->ntags = eng->tags.n;
    memcpy(out->tag_names, eng->tags.names, sizeof(out->tag_names));
    out->tags = malloc(AB_TAGS_MAX * sizeof(ab_tag_stats_t));
    if (out->tags != NULL) {
      ab_tags_init(out->tags);
    } else {
      merged = AB_ENOMEM;
      if (out->error[0] == '\0') snprintf(out->error, sizeof(out->error), "out of memory merging the tags");
    }
  }
  for (uint32_t li = 0; li < eng->nloops; li++) {
    ab__loop_t *l = &eng->loops[li];
    merge_loop(out, l);
    eng->drv->loop_close(l);
    uv_loop_close(&l->loop);
    free_clients(l);
  }
  eng->drv->case_close(eng, out);
  return merged;
}

/* out->status, out->ok and, when not ok and nothing said why, the reason.
 * fatal: the run itself broke (out->error was set before the loops'
 * errors were merged in, or the merge failed). */
static void judge(const ab__engine_t *eng, ab_result_t *out, int fatal) {
  int faults;
  if (eng->cfg->role == AB_ROLE_SERVER) {
    out->status = out->error[0] == '\0' ? AB_RUN_OK : AB_RUN_FAILED;
    out->ok = out->status == AB_RUN_OK;
    return;
  } else if (eng->drv->loss_is_measured) {
    /* loss is what a datagram transport measures, not a fault; errors
     * still are */
    faults = out->error[0] != '\0' || out->message_errors != 0;
  } else {
    faults = out->error[0] != '\0' || out->nerrors != 0 || out->timed_out != 0 ||
             out->message_errors != 0 || out->unfinished != 0 || out->reconnects != 0 ||
             out->reconnects_given_up != 0;
  }
  /* nothing worked: no reply completed, or every reply was a status
   * failure of its codec (counted over every phase, so against every
   * reply) */
  uint64_t bad_status = 0;
  for (uint32_t li = 0; li < eng->nloops; li++) bad_status += eng->loops[li].status_failures;
  uint64_t replies = out->completed + out->drained + out->warmup_completed;
  int none_worked = out->completed == 0 || (bad_status > 0 && bad_status >= replies);
  if (fatal || none_worked) out->status = AB_RUN_FAILED;
  else out->status = faults ? AB_RUN_DEGRADED : AB_RUN_OK;
  out->ok = out->status == AB_RUN_OK;
  if (out->interrupted) {
    /* the numbers are kept, but this is not the run that was asked for */
    out->ok = 0;
    if (out->error[0] == '\0' && out->measured_s > 0)
      snprintf(out->error, sizeof(out->error), "interrupted after %.3f s of the %g s measure phase",
               out->measured_s, eng->cfg->duration_s);
    else if (out->error[0] == '\0')
      snprintf(out->error, sizeof(out->error), "interrupted during connect/warm-up, before the"
               " %g s measure phase began (nothing measured)", eng->cfg->duration_s);
  }
  if (out->status == AB_RUN_DEGRADED && out->error[0] == '\0')
    snprintf(out->error, sizeof(out->error),
             "%llu of %llu messages timed out, %llu lost to errors, %llu unfinished; %llu reconnects",
             (unsigned long long)out->timed_out, (unsigned long long)out->sent,
             (unsigned long long)out->message_errors, (unsigned long long)out->unfinished,
             (unsigned long long)out->reconnects);
  if (!out->ok && out->error[0] == '\0')
    snprintf(out->error, sizeof(out->error), "no round trip completed in the measured interval");
}

/* Setup failed part way: loops [0, started) have live handles; close them
 * without threads, then free everything. */
static void abandon(ab__engine_t *eng, uint32_t started) {
  for (uint32_t li = 0; li < started; li++) {
    ab__loop_t *l = &eng->loops[li];
    l->phase = AB__PH_STOPPING;
    uv_walk(&l->loop, close_walk_cb, NULL);
    uv_run(&l->loop, UV_RUN_DEFAULT);
    eng->drv->loop_close(l);
    uv_loop_close(&l->loop);
  }
  if (eng->loops) {
    ab__shared_close(eng);
    for (uint32_t li = 0; li < eng->nloops; li++)
      if (eng->loops[li].clients) free_clients(&eng->loops[li]);
  }
  free(eng->loops);
  eng->loops = NULL;
  if (eng->pool) {
    ab__pool_stop(eng->pool);
    ab__pool_free(eng->pool);
    eng->pool = NULL;
  }
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
  ab_hist_init(&out->send_lag);
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
  if ((r = alloc_loops(&eng, out)) < 0 || (r = ab__shared_open(&eng)) < 0 ||
      (r = open_loops(&eng, workers, &started, out)) < 0 ||
      (workers && (r = ab__pool_start(&eng, workers)) < 0)) {
    if (out->error[0] == '\0') setup_error(out, r);
    abandon(&eng, started);
    eng.drv->case_close(&eng, out);
    engine_destroy(&eng);
    return r;
  }
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
  judge(&eng, out, fatal);
  engine_destroy(&eng);
  return 0;
}

void ab_result_free(ab_result_t *r) {
  free(r->conns_per_loop);
  r->conns_per_loop = NULL;
  free(r->iv);
  free(r->iv_lag);
  free(r->tags);
  r->iv = NULL;
  r->iv_lag = NULL;
  r->tags = NULL;
}
