/* test_window_genlag.c -- the generator's part of the open loop's send lag
 * (engine/window.h ab__win_stamp, docs/load-models.md "Generator-bound
 * runs"): a send counts its lag from its intended time, or, when the
 * window was full then, from the reply that freed a slot -- the wait for
 * the peer is the send lag's, never the generator's.  The fixture is
 * window_fixture.h. */
#include "test/engine/window_fixture.h"

static void test_generator_lag(void) {
  const uint64_t S = 1000000000u, US = 1000u;
  /* one connection, window 1, 1 message/s: message k intended at t0 + k s */
  ab__loop_t *l = loop_new_open(1, 1, AB__WIN_ORDERED, 1);
  ab__client_t *c = ab__loop_client(l, 0);
  ab__win_sched_init(&c->win, 1.0, 0, 1);
  uint64_t now = ab_now_ns();
  /* begun 2.5 s ago: messages 0, 1 and 2 are due */
  uint64_t t0 = now - 25 * S / 10;
  ab__win_sched_start(&c->win, t0);
  l->start_ns = t0;
  l->deadline_ns = t0 + 100 * S;
  ab__win_grant_t g;
  /* message 0 goes out at now: 2.5 s late, all of it the generator's (its
   * slot was free at its intended time) */
  CHECK_EQ_U64(ab__win_grant(c, now, &g), 1);
  CHECK_EQ_U64(ab__win_stamp(c, &g, 1, now), 1);
  CHECK_EQ_U64(l->send_lag.max, now - t0);
  CHECK_EQ_U64(l->gen_lag.count, 1);
  CHECK_EQ_U64(l->gen_lag.max, now - t0);
  /* the window (1) is full: message 1 (due at t0 + 1 s) waits for the
   * reply, which comes 500 us later (the fixture's timeout is 1 ms); sent
   * 200 us after that, its send lag is from t0 + 1 s, its generator lag
   * only the 200 us */
  CHECK_EQ_U64(ab__win_grant(c, now, &g), 0);
  uint64_t freed = now + 500 * US;
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 0, freed) == AB__WIN_MEASURED);
  CHECK_EQ_U64(c->win.freed_ns, freed);
  uint64_t t = ab_now_ns();
  if (t < freed + 200 * US) t = freed + 200 * US; /* never before the grant's clock */
  CHECK_EQ_U64(ab__win_grant(c, t, &g), 1);
  CHECK_EQ_U64(ab__win_stamp(c, &g, 1, t), 1);
  CHECK_EQ_U64(l->send_lag.count, 2);
  CHECK_EQ_U64(l->gen_lag.count, 2);
  CHECK_EQ_U64(l->send_lag.max, now - t0); /* message 0's, larger */
  CHECK(l->gen_lag.min <= t - freed);      /* within the histogram's 1 % */
  CHECK(l->gen_lag.min >= (t - freed) - (t - freed) / 50);
  /* a reply that frees a slot of a window that was not full leaves the
   * mark alone: window 2, one in flight */
  ab__loop_t *l2 = loop_new_open(1, 2, AB__WIN_ORDERED, 1);
  ab__client_t *c2 = ab__loop_client(l2, 0);
  ab__win_sched_init(&c2->win, 1.0, 0, 1);
  ab__win_sched_start(&c2->win, t0);
  l2->start_ns = t0;
  l2->deadline_ns = t0 + 100 * S;
  CHECK_EQ_U64(ab__win_grant(c2, now, &g), 2);
  CHECK_EQ_U64(ab__win_stamp(c2, &g, 1, now), 1);
  CHECK(ab__win_complete(c2, AB_PHASE_MEASURE, 0, 0, now + 500 * US) == AB__WIN_MEASURED);
  CHECK_EQ_U64(c2->win.freed_ns, 0);
  l->phase = AB__PH_DRAIN;
  ab__win_finish(l);
  check_identity(l);
  loop_free(l);
  l2->phase = AB__PH_DRAIN;
  ab__win_finish(l2);
  check_identity(l2);
  loop_free(l2);
}

int main(void) {
  test_generator_lag();
  TEST_DONE();
}
