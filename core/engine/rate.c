/* rate.c -- the rate timer of the open loop (load model `rate`).
 * One timerfd per loop, absolute CLOCK_MONOTONIC expirations (libuv's
 * timers are milliseconds), watched by the loop: it fires at the loop's
 * next intended send, the pumps of the clients whose message is due are
 * woken, and it is re-armed to the next one.  The loop's messages are in
 * time order along rate_cursor (the clients' phases are increasing and
 * under one period), so finding the next is O(1) per message; a client
 * whose window is full is refilled by its own replies.  The schedules
 * themselves are the window's (window.h, ab__win_sched_*).
 */
#include <errno.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "base/clock.h"
#include "engine/engine_int.h"
#include "engine/window.h"

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

/* The schedule's precision (rate_precision, docs/load-models.md):
 * - "sleep" (AB_RATE_SLEEP, the default): the timer is armed at the next
 *   intended send and the loop sleeps until it; each wake serves every
 *   message due by then, across the loop's clients.  The lag is the
 *   machine's wake-up lateness (its timer floor); the CPU is at most one
 *   wake per message and less when several are due at once.
 * - "spin" (AB_RATE_SPIN): the timer is armed rate_margin_ns (calibrated
 *   from the timer floor before the run, engine/calib.c) before the
 *   instant and the loop reads the clock until it: microseconds of lag for
 *   a core per client loop.  One spin per wake: a wake that served a
 *   message and finds the next within the margin re-arms the timer in the
 *   past (it fires at once), so the loop's replies are read in between. */
static uint64_t rate_early(const ab__loop_t *l) {
  return l->eng->cfg->rate_precision == AB_RATE_SPIN ? l->rate_margin_ns : 0;
}

/* Waits on the clock for t (spin mode), counting the time spun. */
static uint64_t rate_spin_until(ab__loop_t *l, uint64_t now, uint64_t t) {
  uint64_t t0 = now;
  while ((now = ab_now_ns()) < t) {
  }
  l->rate_spin_ns += now - t0;
  return now;
}

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
      if (steps > 0 || t - now > l->rate_early_ns || t >= dl) break;
      now = rate_spin_until(l, now, t);
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
    ab__loop_wake(l, ab__loop_client(l, (uint32_t)(l->rate_cursor % n)));
    l->rate_cursor++;
  }
  if (t >= dl) rate_arm(l, 0);
  else rate_arm(l, t > l->rate_early_ns ? t - l->rate_early_ns : 1);
}

static void rate_cb(uv_poll_t *p, int status, int events) {
  ab__loop_t *l = p->data;
  uint64_t expirations;
  (void)status;
  (void)events;
  if (read(l->rate_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN) return;
  rate_run(l);
}

/* The loop's timerfd and its watch (setup, coordinator thread): 0 or a
 * negative error. */
int ab__rate_open(ab__loop_t *l) {
  int r;
  l->rate_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (l->rate_fd < 0) return -errno;
  if ((r = uv_poll_init(&l->loop, &l->rate_poll, l->rate_fd)) < 0) return r;
  l->rate_poll.data = l;
  uv_poll_start(&l->rate_poll, UV_READABLE, rate_cb);
  return 0;
}

/* A sending phase begins at t0: every schedule restarts at t0. */
void ab__rate_begin(ab__loop_t *l, uint64_t t0) {
  for (uint32_t i = 0; i < l->nclients; i++) {
    ab__client_t *c = ab__loop_client(l, i);
    ab__client_take(l, c);
    ab__win_sched_start(&c->win, t0);
    ab__client_give(l, c);
  }
  l->rate_cursor = 0;
  l->rate_early_ns = rate_early(l);
  rate_run(l);
}

/* The deadline's edge (issue 25/27, docs/load-models.md "Rate accounting,
 * never silent"): a message intended within the wake-up lag before the
 * measure deadline -- the last AB_RATE_EDGE_NS, or, if longer, as late as
 * the loop's wakes came: its own at the deadline, or its sends' lag at p99
 * over the measure phase (a timer wake is tens of microseconds late at
 * best, milliseconds on a busy host, tens of them when the thread waits
 * for a core) -- whose wake came after the deadline is sent
 * now, as the measure phase ends, and counted sent and sent_late rather
 * than unsent.  Only a connection none of whose unsent messages is older than
 * the edge: one behind by more (a generator or window that fell behind)
 * keeps all of them unsent, so rate_met tolerates the edge and no other
 * shortfall.  Per connection at the end of the phase, not per message. */
#define AB_RATE_EDGE_NS 5000000u

static void rate_send_edge(ab__loop_t *l) {
  uint64_t dl = l->deadline_ns, sent0 = l->sent, now = ab_now_ns();
  uint64_t lag = now > dl ? now - dl : 0, span = lag > AB_RATE_EDGE_NS ? lag : AB_RATE_EDGE_NS;
  uint64_t p99 = l->send_lag.count > 0 ? ab_hist_percentile(&l->send_lag, 99.0) : 0;
  if (p99 > span) span = p99;
  uint64_t edge = dl > l->start_ns + span ? dl - span : l->start_ns;
  l->rate_edge = 1;
  for (uint32_t i = 0; i < l->nclients; i++) {
    ab__client_t *c = ab__loop_client(l, i);
    ab__client_take(l, c);
    const ab__win_t *w = &c->win;
    uint64_t first = w->origin != NULL ? ab__win_intended(w, w->sched_k) : UINT64_MAX;
    int due = first < dl && first >= edge && w->inflight < l->window;
    ab__client_give(l, c);
    if (due) ab__loop_wake(l, c);
  }
  l->rate_edge = 0;
  l->sent_late += l->sent - sent0;
}

/* The measure deadline passed: the deadline's edge is sent, and what the
 * schedules meant to send before the deadline and did not is unsent. */
void ab__rate_end(ab__loop_t *l) {
  rate_arm(l, 0);
  if (l->phase == AB__PH_MEASURE) rate_send_edge(l);
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
