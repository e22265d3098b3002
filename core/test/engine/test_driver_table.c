/* test_driver_table.c -- the engine reaches connections only through
 * cfg->driver: a driver with no sockets at all (each wake stamps one
 * message and completes it at once) runs a whole case, and every entry is
 * called as engine/driver.h promises: case and loop halves once each,
 * client_start once per client (paced, reentrant: this driver reports its
 * connects from inside client_start), wake once per client per sending
 * phase, stop once per loop.  A loop_open that fails part way closes every
 * loop opened so far and the case, and its sentence reaches the result.
 * A driver that can reopen and whose peer never answers has each message
 * swept no sooner than its timeout, its connection failed, reopened with
 * backoff (no reply between) and given up at the 5th failure in a row. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "base/clock.h"
#include "engine/engine_int.h"
#include "engine/window.h"
#include "test/ab_test.h"

static atomic_int n_case_open, n_case_close, n_loop_open, n_loop_close, n_start, n_wake,
    n_wake_warm, n_fail, n_stop, n_bad_state;
static int fail_loop = -1; /* loop_open of this loop index fails */
static char marker;

static void reset(void) {
  atomic_int *all[] = {&n_case_open, &n_case_close, &n_loop_open, &n_loop_close, &n_start,
                       &n_wake, &n_wake_warm, &n_fail, &n_stop, &n_bad_state};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) atomic_store(all[i], 0);
}

static int fake_case_open(ab__engine_t *eng, char *err, size_t errlen) {
  (void)eng, (void)err, (void)errlen;
  atomic_fetch_add(&n_case_open, 1);
  return 0;
}

static void fake_case_close(ab__engine_t *eng, ab_result_t *out) {
  (void)eng, (void)out;
  atomic_fetch_add(&n_case_close, 1);
}

static int fake_loop_open(ab__loop_t *l, char *err, size_t errlen) {
  atomic_fetch_add(&n_loop_open, 1);
  if ((int)l->index == fail_loop) {
    snprintf(err, errlen, "fake driver: loop %u refuses", l->index);
    return AB_ECONFIG;
  }
  l->drv_state = &marker;
  return 0;
}

static void fake_loop_close(ab__loop_t *l) {
  atomic_fetch_add(&n_loop_close, 1);
  if (l->drv_state != &marker && (int)l->index != fail_loop) atomic_fetch_add(&n_bad_state, 1);
  l->drv_state = NULL;
}

static void fake_start(ab__client_t *c) {
  atomic_fetch_add(&n_start, 1);
  if (c->loop->drv_state != &marker) atomic_fetch_add(&n_bad_state, 1);
  c->alive = 1;
  c->loop->ready_clients++;
  ab__client_connect_done(c); /* from inside client_start */
}

/* One message through the window, its reply "arriving" 1 us later. */
static void fake_wake(ab__client_t *c) {
  ab__win_grant_t g;
  uint64_t now = ab_now_ns();
  atomic_fetch_add(&n_wake, 1);
  if (ab__win_grant(c, now, &g) == 0) return;
  if (g.phase == AB_PHASE_WARMUP) atomic_fetch_add(&n_wake_warm, 1);
  uint64_t seq = g.seq;
  uint8_t phase = g.phase;
  if (ab__win_stamp(c, &g, 1, now) != 1) atomic_fetch_add(&n_bad_state, 1);
  if (ab__win_complete(c, phase, c->id, seq, now + 1000) < 0) atomic_fetch_add(&n_bad_state, 1);
}

static void fake_fail(ab__client_t *c, int code, const char *what) {
  (void)c, (void)code, (void)what;
  atomic_fetch_add(&n_fail, 1);
}

static void fake_stop(ab__loop_t *l) {
  (void)l;
  atomic_fetch_add(&n_stop, 1);
}

static const ab_driver_t fake = {
    .name = "fake",
    .case_open = fake_case_open,
    .case_close = fake_case_close,
    .loop_open = fake_loop_open,
    .loop_close = fake_loop_close,
    .client_start = fake_start,
    .wake = fake_wake,
    .client_fail = fake_fail,
    .stop = fake_stop,
};

/* ---- a driver whose replies never come, that can reopen -------------- */

static atomic_int n_early, n_reopen_start;

static void silent_start(ab__client_t *c) {
  atomic_fetch_add(&n_reopen_start, 1);
  c->alive = 1;
  if (!c->reopening) c->loop->ready_clients++;
  ab__client_connect_done(c);
}

/* One message in flight, never answered. */
static void silent_wake(ab__client_t *c) {
  ab__win_grant_t g;
  uint64_t now = ab_now_ns();
  if (!c->alive || ab__win_grant(c, now, &g) == 0) return;
  ab__win_stamp(c, &g, 1, now);
}

/* The engine's sweep found the oldest overdue: as a driver does, report
 * the loss, release, close (no handle here: closed at once). */
static void silent_fail(ab__client_t *c, int code, const char *what) {
  ab__loop_t *l = c->loop;
  (void)what;
  atomic_fetch_add(&n_fail, 1);
  uint64_t t = c->win.ns[ab__win_slot(l, c->win.oldest_seq)];
  if (code != AB_ETIMEDOUT || t == 0 || ab_now_ns() - t <= l->timeout_ns)
    atomic_fetch_add(&n_early, 1);
  c->alive = 0;
  ab__client_lost(c, code);
  ab__win_release(c, &l->timed_out);
  c->closing = 1;
  ab__client_closed(c);
}

static const ab_driver_t silent = {
    .name = "silent",
    .can_reopen = 1,
    .case_open = fake_case_open,
    .case_close = fake_case_close,
    .loop_open = fake_loop_open,
    .loop_close = fake_loop_close,
    .client_start = silent_start,
    .wake = silent_wake,
    .client_fail = silent_fail,
    .stop = fake_stop,
};

static ab_case_cfg_t base(void) {
  ab_case_cfg_t c;
  memset(&c, 0, sizeof(c));
  c.protocol = AB_PROTO_TCP;
  c.framing = AB_FRAMING_LENGTH;
  c.execution = AB_EXEC_CALLBACK;
  c.payload = 64;
  c.clients = 600; /* more than the connects a loop keeps in flight */
  c.window = 4;
  c.model = AB_MODEL_SHARDED;
  c.threads = 2;
  c.warmup_s = 0.02;
  c.duration_s = 0.05;
  c.timeout_s = 0.02; /* the engine's sweep: at each message's expiry */
  c.role = AB_ROLE_CLIENT; /* the driver opens no server; addr unused */
  c.addr.ss_family = AF_INET;
  c.driver = &fake;
  return c;
}

int main(void) {
  ab_result_t r;
  ab_case_cfg_t c = base();

  reset();
  CHECK(ab_run_case(&c, &r) == 0);
  if (!r.ok) fprintf(stderr, "  error: %s\n", r.error);
  CHECK(r.ok);
  CHECK_EQ_U64(atomic_load(&n_case_open), 1);
  CHECK_EQ_U64(atomic_load(&n_case_close), 1);
  CHECK_EQ_U64(atomic_load(&n_loop_open), 2);
  CHECK_EQ_U64(atomic_load(&n_loop_close), 2);
  CHECK_EQ_U64(atomic_load(&n_start), 600);
  CHECK_EQ_U64(atomic_load(&n_wake), 1200); /* warm-up and measure */
  CHECK_EQ_U64(atomic_load(&n_wake_warm), 600);
  CHECK_EQ_U64(atomic_load(&n_stop), 2);
  CHECK_EQ_U64(atomic_load(&n_fail), 0);
  CHECK_EQ_U64(atomic_load(&n_bad_state), 0);
  /* the engine's accounting of what the driver reported */
  CHECK_EQ_U64(r.sent, 600);
  CHECK_EQ_U64(r.completed, 600);
  CHECK_EQ_U64(r.warmup_completed, 600);
  CHECK_EQ_U64(r.unfinished + r.drained + r.timed_out + r.message_errors, 0);
  CHECK_EQ_U64(r.rtt.count, 600);
  CHECK_EQ_U64(r.conns_per_loop[0] + r.conns_per_loop[1], 600);
  ab_result_free(&r);

  /* loop 1 of 3 refuses: loops 0 and 1 are closed, loop 2 never opened */
  reset();
  c = base();
  c.threads = 3;
  fail_loop = 1;
  CHECK(ab_run_case(&c, &r) == AB_ECONFIG);
  CHECK(strcmp(r.error, "fake driver: loop 1 refuses") == 0);
  CHECK_EQ_U64(atomic_load(&n_loop_open), 2);
  CHECK_EQ_U64(atomic_load(&n_loop_close), 2);
  CHECK_EQ_U64(atomic_load(&n_case_close), 1);
  CHECK_EQ_U64(atomic_load(&n_start), 0);
  CHECK_EQ_U64(atomic_load(&n_bad_state), 0);
  ab_result_free(&r);
  fail_loop = -1;

  /* timed out at 20 ms, reopened after 50, 100, 200, 400 ms, given up at
   * the 5th failure in a row: 850 ms of the 1.2 s measure phase */
  reset();
  atomic_store(&n_early, 0);
  atomic_store(&n_reopen_start, 0);
  c = base();
  c.driver = &silent;
  c.clients = 4;
  c.threads = 1;
  c.window = 1;
  c.warmup_s = 0;
  c.duration_s = 1.2;
  CHECK(ab_run_case(&c, &r) == 0);
  CHECK_EQ_U64(atomic_load(&n_early), 0);
  CHECK_EQ_U64(atomic_load(&n_fail), 20);
  CHECK_EQ_U64(atomic_load(&n_reopen_start), 20);
  CHECK_EQ_U64(r.reconnects, 16);
  CHECK_EQ_U64(r.reconnects_given_up, 4);
  CHECK_EQ_U64(r.timed_out, 20);
  CHECK_EQ_U64(r.sent, 20);
  CHECK_EQ_U64(r.completed + r.drained + r.unfinished + r.message_errors, 0);
  ab_result_free(&r);

  /* shared:N reopens by the same rules (docs/topologies.md): each home
   * loop's sweep fails its connections, reopens them with backoff and
   * gives them up after 5 losses in a row */
  reset();
  atomic_store(&n_early, 0);
  atomic_store(&n_reopen_start, 0);
  c = base();
  c.driver = &silent;
  c.model = AB_MODEL_SHARED;
  c.clients = 4;
  c.threads = 2;
  c.window = 1;
  c.warmup_s = 0;
  c.duration_s = 1.2;
  CHECK(ab_run_case(&c, &r) == 0);
  CHECK_EQ_U64(atomic_load(&n_early), 0);
  CHECK_EQ_U64(atomic_load(&n_fail), 20);
  CHECK_EQ_U64(atomic_load(&n_reopen_start), 20);
  CHECK_EQ_U64(r.reconnects, 16);
  CHECK_EQ_U64(r.reconnects_given_up, 4);
  CHECK_EQ_U64(r.timed_out, 20);
  CHECK_EQ_U64(r.sent, 20);
  ab_result_free(&r);

  /* an incomplete table is refused before anything runs */
  ab_driver_t partial = fake;
  partial.wake = NULL;
  c = base();
  c.driver = &partial;
  char err[200];
  CHECK(ab_case_check(&c, err, sizeof(err)) == AB_ECONFIG);
  CHECK(strstr(err, "fake") != NULL);
  TEST_DONE();
}
