/* connect.c -- a loop connecting its clients: at most CONNECTS_IN_FLIGHT
 * at once, paced by connect_rate, and the connect limit (a loop whose
 * connects make no progress for the scenario's timeout fails the ones
 * still going).  The driver connects (client_start) and reports back
 * (ab__loop_connect_done); the coordinator waits for the CONNECTED stage.
 */
#include <netinet/in.h>
#include <stdio.h>

#include "base/ab_error.h"
#include "base/clock.h"
#include "engine/engine_int.h"

/* At most this many connects in flight per loop: a burst larger than the
 * listen backlog (net.core.somaxconn, 4096; SYN backlog 2048) overflows it,
 * and the dropped handshakes come back only after retransmission timeouts,
 * which would then sit inside the first measured RTTs.  Fewer when the
 * host's somaxconn divided over every loop of every process of the group
 * is smaller (issue 27: in_flight_cap), never fewer than CONNECTS_MIN. */
#define CONNECTS_IN_FLIGHT 256
#define CONNECTS_MIN 16

/* net.core.somaxconn (the listen backlog a listener on this host gets at
 * most; a loopback target's), 4096 when it cannot be read */
static uint32_t somaxconn(void) {
  uint32_t v = 4096;
  FILE *f = fopen("/proc/sys/net/core/somaxconn", "r");
  if (f != NULL) {
    unsigned long x;
    if (fscanf(f, "%lu", &x) == 1 && x > 0 && x < 1u << 30) v = (uint32_t)x;
    fclose(f);
  }
  return v;
}

/* The connects a loop keeps in flight: somaxconn over the loops of every
 * process of the group (processes = clients_total / clients), so the
 * outstanding connects of all of them together stay within one listener's
 * backlog; at most CONNECTS_IN_FLIGHT, at least CONNECTS_MIN. */
static uint32_t in_flight_cap(const ab__engine_t *eng) {
  const ab_case_cfg_t *cfg = eng->cfg;
  uint32_t parts = cfg->clients_total > cfg->clients && cfg->clients > 0
                       ? (cfg->clients_total + cfg->clients - 1) / cfg->clients : 1;
  uint64_t share = somaxconn() / ((uint64_t)(eng->nloops ? eng->nloops : 1) * parts);
  if (share > CONNECTS_IN_FLIGHT) share = CONNECTS_IN_FLIGHT;
  if (share < CONNECTS_MIN) share = CONNECTS_MIN;
  return (uint32_t)share;
}

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
         l->connects_started - (l->nclients - l->connects_pending) < l->connects_cap) {
    uint64_t due = connect_due_at(l, l->connects_started);
    if (due > now) {
      /* paced: the next one when its time comes (a millisecond timer:
       * starts are spaced to within a millisecond, never early) */
      uv_timer_start(&l->connect_pace, connect_pace_cb, ab__ms_until(due), 0);
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
    if (c->reopen) continue; /* a retry waiting for its backoff: no connect going */
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

/* CONNECT (the command, at t0): the loop's clients are connected, paced
 * by connect_rate, within the connect limit. */
void ab__loop_connect_start(ab__loop_t *l, uint64_t t0) {
  ab__engine_t *eng = l->eng;
  struct sockaddr_storage addr;
  ab__loop_t *srv = eng->cfg->model == AB_MODEL_POOL ? &eng->loops[0] : l;
  if (eng->cfg->role == AB_ROLE_CLIENT) addr = eng->cfg->addr;
  else uv_ip4_addr("127.0.0.1", srv->port, (struct sockaddr_in *)&addr);
  l->connects_pending = l->nclients;
  l->connects_cap = in_flight_cap(eng);
  l->connect_addr = addr;
  l->connect_t0 = t0;
  l->connect_gap_ns = eng->cfg->connect_rate > 0 ? 1e9 / eng->cfg->connect_rate : 0;
  if (l->nclients == 0) ab__loop_reached(l, AB__ST_CONNECTED);
  else arm_connect_timer(l);
  ab__loop_connect_more(l);
}

/* ---- retrying a first connect (issue 27) ----------------------------------
 * A first connect (or its handshake) that fails in the connect phase -- no
 * answer within connect_timeout, refused, reset, a handshake that timed out
 * -- is tried again the way a lost connection is reopened (sweep.c: its
 * handle closes, the sweep starts it again at reopen_at): after
 * CONNECT_BACKOFF_NS << (failures - 1), up to CONNECT_TRIES tries.  Each
 * retried failure counts in connect_retries and is no error of the run; the
 * last one, when every try failed, is (the run starts with fewer
 * connections and says so).  A backlog that overflowed under a connect
 * burst, a SYN dropped once, a server still coming up: the connection comes
 * up on a later try. */
#define CONNECT_TRIES 6
#define CONNECT_BACKOFF_NS 50000000u /* 50 ms, doubled per failure */

/* The failures a later try can get past: no answer, refused, reset, closed
 * or a handshake that timed out (a listener not ready or overrun).  A
 * protocol error (an alert, an application protocol the server refuses,
 * a certificate not trusted) fails the same way every time: not retried. */
static int transient(int code) {
  return code == AB_ECONNTIMEDOUT || code == AB_ETIMEDOUT || code == AB_ECLOSED || code == UV_ECONNREFUSED ||
         code == UV_ECONNRESET || code == UV_ECONNABORTED || code == UV_EPIPE || code == UV_ETIMEDOUT;
}

static int first_retry_left(const ab__client_t *c) {
  const ab__loop_t *l = c->loop;
  /* shared:N reports first connects to their home loop directly
   * (ab__loop_connect_done_on): not retried there yet */
  return l->eng->drv->can_reopen && !l->eng->shared && l->phase == AB__PH_IDLE &&
         (!c->reopening || c->first_pending) && c->setup_fails + 1 < CONNECT_TRIES;
}

void ab__client_setup_error(ab__client_t *c, int code, const char *what) {
  ab__loop_t *l = c->loop;
  if (transient(code) && first_retry_left(c)) {
    c->setup_retry = 1;
    l->connect_retries++;
    return;
  }
  c->setup_retry = 0;
  ab__loop_error(l, code, what);
}

void ab__client_first_retry_started(ab__client_t *c) {
  /* its connect is under the connect limit like the first (the timer
   * judges only connects made no progress for connect_timeout) */
  arm_connect_timer(c->loop);
}

void ab__client_first_retry_done(ab__client_t *c) {
  ab__loop_t *l = c->loop;
  if (c->alive || !c->setup_retry || l->phase != AB__PH_IDLE) {
    /* up, or out of tries (its error counted), or the phase moved on:
     * its first connect is over */
    c->first_pending = 0;
    c->setup_retry = 0;
    ab__loop_connect_done(l);
    return;
  }
  /* again after the backoff, once its handle has closed (sweep.c); the
   * coordinator's backstop counts a retry as progress */
  atomic_fetch_add_explicit(&l->eng->connects_done, 1, memory_order_relaxed);
  c->setup_retry = 0;
  c->first_pending = 1;
  c->setup_fails++;
  c->reopen = 1;
  c->reopen_at = ab_now_ns() + ((uint64_t)CONNECT_BACKOFF_NS << (c->setup_fails - 1));
}
