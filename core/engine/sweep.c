/* sweep.c -- the exact timeout sweep and the reopening of lost stream
 * connections (engine_int.h; docs/execution.md, "Timeouts and reconnects").
 *
 * The sweep.  One timerfd per loop (absolute CLOCK_MONOTONIC expirations,
 * nanoseconds: libuv's timers are milliseconds and must not time
 * messages), watched by the loop.  It is armed at the earliest of: the
 * moment the oldest message in flight of any client becomes overdue
 * (ab__win_next_expiry), a reopen's backoff end, and now + timeout (a
 * message sent after now cannot be overdue before that).  So every
 * message is swept at the moment it becomes overdue, whatever the
 * timeout, and a loop with nothing in flight wakes once per timeout.  An
 * ordered (stream) window whose oldest message is overdue has lost its
 * order: the driver fails the connection (its messages count as
 * timed_out) and, where it can, the engine reopens it.  A datagram window
 * frees the overdue slots and issues again.  A reply that arrives after
 * the timeout but before the sweep ran is caught at completion
 * (ab__win_complete: counted late, then the same).
 *
 * Reopening.  A driver whose table says can_reopen reports a lost
 * established connection (ab__client_lost, before releasing its window),
 * its closed handle (ab__client_closed) and every connect's end
 * (ab__client_connect_done).  While the loop may still send (before the
 * measure phase's deadline, warm-up and its drain included) the same
 * client is started again: same id, same share of the load, its connect
 * and handshake times recorded like the first.  A connection lost after a
 * reply completed on it is reopened at once; a loss with no reply since it
 * (re)opened, and a reopen whose connect failed, count as failures in a
 * row: the next try waits REOPEN_BACKOFF_NS << (failures - 1), and after
 * REOPEN_TRIES in a row the connection is given up (reconnects_given_up).
 *
 * Churn (requests_per_connection = K).  Each connection that comes up gets
 * a quota of K messages in its window (win.conn_end); once they are sent
 * and answered the driver closes it cleanly (ab__client_retire) and it is
 * replaced by the same reopening: connections_retired, and, for the new
 * connection, connections_opened (measure phase) instead of reconnects.
 * A connection the server closed after a reply that announced it (the
 * driver sets c->planned: a `Connection: close` reply) is reopened the
 * same way and counted in server_closes instead of reconnects.
 */
#include <errno.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "base/ab_error.h"
#include "base/clock.h"
#include "engine/engine_int.h"
#include "engine/window.h"

#define REOPEN_TRIES 5
#define REOPEN_BACKOFF_NS 50000000u /* 50 ms, doubled per failure in a row */

/* ---- the timer ------------------------------------------------------- */

static void sweep_arm(ab__loop_t *l, uint64_t at_ns) {
  struct itimerspec its;
  if (l->sweep_fd < 0) return;
  memset(&its, 0, sizeof(its));
  if (at_ns != 0) { /* 0 disarms */
    its.it_value.tv_sec = (time_t)(at_ns / 1000000000u);
    its.it_value.tv_nsec = (long)(at_ns % 1000000000u);
  }
  timerfd_settime(l->sweep_fd, TFD_TIMER_ABSTIME, &its, NULL);
  l->sweep_at = at_ns;
}

/* Arms the sweep at t unless it is armed for earlier already. */
static void sweep_arm_by(ab__loop_t *l, uint64_t t) {
  if (l->sweep_at == 0 || t < l->sweep_at) sweep_arm(l, t ? t : 1);
}

/* The phases in which a lost connection is reopened: connecting, warm-up
 * and its drain, between phases, and measure; not once its deadline
 * passed (nothing more will be sent). */
static int reopen_phase(const ab__loop_t *l) {
  return l->phase == AB__PH_IDLE || l->phase == AB__PH_WARMUP || l->phase == AB__PH_WARM_DRAIN ||
         l->phase == AB__PH_MEASURE;
}

/* Whether the sweep keeps running: messages may be in flight, or a reopen
 * waits. */
static int sweep_phase(const ab__loop_t *l) {
  return l->phase != AB__PH_DONE && l->phase != AB__PH_STOPPING;
}

static void reopen_start(ab__client_t *c) {
  c->reopen = 0;
  c->reopening = 1;
  c->reopen_at = 0;
  c->alive = 0;
  c->closing = 0;
  if (c->first_pending) ab__client_first_retry_started(c);
  c->loop->eng->drv->client_start(c);
}

/* One failure in a row more: a retry after the backoff, or given up. */
static void failed_once(ab__client_t *c) {
  ab__loop_t *l = c->loop;
  if (++c->fails >= REOPEN_TRIES) {
    c->reopen = 0;
    l->reconnects_given_up++;
    return;
  }
  c->reopen = 1;
  c->reopen_at = ab_now_ns() + ((uint64_t)REOPEN_BACKOFF_NS << (c->fails - 1));
}

/* One client's share of the sweep: a due reopen, or its overdue messages;
 * *next moves to its next deadline. */
static void sweep_client(ab__loop_t *l, ab__client_t *c, uint64_t now, uint64_t *next) {
  const ab_driver_t *drv = l->eng->drv;
  if (c->reopen) {
    /* until its handle has closed (reopen 2), ab__client_closed is
     * still to come and arms the sweep itself; then its backoff */
    if (c->reopen == 1) return;
    if (!reopen_phase(l)) c->reopen = 0;
    else if (now >= c->reopen_at) reopen_start(c);
    else if (c->reopen_at < *next) *next = c->reopen_at;
    return;
  }
  if (!c->alive) return;
  int r = ab__win_sweep(c, now);
  if (r == AB_ETIMEDOUT) {
    /* an ordered window's oldest is overdue: its order is lost */
    drv->client_fail(c, AB_ETIMEDOUT, "no reply within the timeout");
    return;
  }
  if (r > 0) drv->wake(c); /* slots freed: issue again */
  uint64_t e = ab__win_next_expiry(c);
  if (e < *next) *next = e;
}

/* shared:N decides a drain's end here (engine_int.h: ab__loop_drained), so
 * it sweeps this often while a drain lasts. */
#define SHARED_DRAIN_POLL_NS 5000000u /* 5 ms */

static void sweep_run(ab__loop_t *l) {
  uint64_t now = ab_now_ns();
  uint64_t next = now + (l->timeout_ns ? l->timeout_ns : 1000000u);
  int busy = 0;
  for (uint32_t i = 0; i < l->nclients; i++) {
    ab__client_t *c = ab__loop_client(l, i);
    ab__client_take(l, c); /* shared:N: each client in turn, on l */
    sweep_client(l, c, now, &next);
    busy |= c->win.inflight > 0;
    ab__client_give(l, c);
  }
  if (!l->eng->shared) {
    ab__loop_check_progress(l);
  } else {
    ab__loop_drained(l, busy);
    if ((l->phase == AB__PH_WARM_DRAIN || l->phase == AB__PH_DRAIN) && now + SHARED_DRAIN_POLL_NS < next)
      next = now + SHARED_DRAIN_POLL_NS;
  }
  /* finish_measure stopped the sweep: it stays stopped */
  if (sweep_phase(l)) sweep_arm(l, next);
  else sweep_arm(l, 0);
}

static void sweep_cb(uv_poll_t *p, int status, int events) {
  ab__loop_t *l = p->data;
  uint64_t expirations;
  (void)status;
  (void)events;
  if (read(l->sweep_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN) return;
  l->sweep_at = 0;
  sweep_run(l);
}

int ab__sweep_open(ab__loop_t *l) {
  l->sweep_fd = -1;
  if (l->nclients == 0) return 0;
  l->sweep_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (l->sweep_fd < 0) return -errno;
  int r = uv_poll_init(&l->loop, &l->sweep_poll, l->sweep_fd);
  if (r < 0) {
    close(l->sweep_fd);
    l->sweep_fd = -1;
    return r;
  }
  l->sweep_poll.data = l;
  return uv_poll_start(&l->sweep_poll, UV_READABLE, sweep_cb);
}

void ab__sweep_start(ab__loop_t *l) {
  /* nothing is in flight yet: the first message is overdue no sooner */
  sweep_arm_by(l, ab_now_ns() + l->timeout_ns);
}

void ab__sweep_stop(ab__loop_t *l) { sweep_arm(l, 0); }

void ab__sweep_drain_poll(ab__loop_t *l) { sweep_arm_by(l, ab_now_ns() + SHARED_DRAIN_POLL_NS); }

static void close_noop(uv_handle_t *h) { (void)h; }

void ab__sweep_close(ab__loop_t *l) {
  if (l->sweep_fd < 0) return;
  sweep_arm(l, 0);
  uv_close((uv_handle_t *)&l->sweep_poll, close_noop);
}

/* ---- reopening ------------------------------------------------------- */

void ab__client_lost(ab__client_t *c, int code) {
  ab__loop_t *l = c->loop;
  (void)code;
  /* shared:N: l is the loop of the thread failing it, maybe not its home;
   * the home closes its handle (the drivers' home_close.c), and once it
   * has closed (ab__client_closed, there) the home's sweep reopens it */
  if (!l->eng->drv->can_reopen || !reopen_phase(l)) return;
  if (c->planned || c->win.oldest_seq != c->mark_seq) {
    /* a close the server announced (planned: Connection: close, a
     * GOAWAY with NO_ERROR) is no failure; a reply completed since it
     * came up: a fresh loss.  Either reopens at once */
    c->fails = 0;
    c->reopen = 1;
    c->reopen_at = 0;
    return;
  }
  failed_once(c);
}

void ab__client_closed(ab__client_t *c) {
  ab__loop_t *l = c->loop;
  if (!c->reopen) return;
  c->reopen = 2; /* its handle is closed: free to start again (closing
                    stays set until then: nothing closes it twice) */
  if (!reopen_phase(l)) {
    c->reopen = 0;
    return;
  }
  /* started from the sweep, after every handle closed in this pass of
   * the loop has (a connection's reactor watch closes after its socket) */
  uint64_t now = ab_now_ns();
  sweep_arm_by(l, c->reopen_at > now ? c->reopen_at : now);
}

int ab__client_retire(ab__client_t *c) {
  ab__loop_t *l = c->loop;
  if (l->eng->shared || !reopen_phase(l)) return 0;
  c->planned = 1;
  c->fails = 0;
  c->reopen = 1;
  c->reopen_at = 0;
  l->connections_retired++;
  return 1;
}

/* c's connection is up: its churn quota starts, and it counts as opened
 * while the measure phase sends. */
static void came_up(ab__client_t *c) {
  ab__loop_t *l = c->loop;
  uint32_t k = l->eng->cfg->requests_per_connection;
  if (k) c->win.conn_end = c->win.next_seq + k;
  if (l->phase == AB__PH_MEASURE && ab_now_ns() < l->deadline_ns) l->connections_opened++;
}

void ab__client_connect_done(ab__client_t *c) {
  ab__loop_t *l = c->loop;
  if (c->alive && l->phase != AB__PH_STOPPING) came_up(c);
  if (!c->reopening) {
    /* a first connect that failed with tries left: retried (connect.c) */
    if (!c->alive && c->setup_retry && l->phase != AB__PH_STOPPING) {
      ab__client_first_retry_done(c);
      return;
    }
    c->setup_retry = 0;
    ab__loop_connect_done(l);
    return;
  }
  c->reopening = 0;
  if (c->first_pending) {
    ab__client_first_retry_done(c);
    return;
  }
  if (l->phase == AB__PH_STOPPING) return;
  if (c->alive) {
    if (c->planned) c->planned = 0; /* a replacement or a server's close, not a reconnect */
    else l->reconnects++;
    c->mark_seq = c->win.oldest_seq;
    l->eng->drv->wake(c); /* fill its window (if a phase sends) */
    return;
  }
  /* the reopen's connect failed (its handle closes next) */
  if (reopen_phase(l)) failed_once(c);
}
