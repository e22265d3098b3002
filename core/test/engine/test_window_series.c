/* test_window_series.c -- the time series as the window counts it
 * (engine/window.h, ab__iv_at): sends and replies in their intervals, the
 * drain in the last one, and each interval's connections.  The fixture is
 * window_fixture.h. */
#include "test/engine/window_fixture.h"

/* The time series: sends count in the interval of their stamp, replies in
 * that of their completion; the last interval also takes what comes after
 * the deadline (the drain); the intervals' histograms hold every RTT. */
static void test_intervals(void) {
  ab__loop_t *l = loop_new(1, 8, AB__WIN_ORDERED);
  ab__client_t *c = ab__loop_client(l, 0);
  free(l->iv);
  /* 3 intervals of 400 ns from start 1000, deadline 2000: [1000, 1400),
   * [1400, 1800), [1800, 2000] and the drain */
  l->iv_n = 3;
  l->iv = calloc(3, sizeof(ab__iv_t));
  for (int i = 0; i < 3; i++) ab_hist_init(&l->iv[i].rtt);
  l->start_ns = 1000;
  l->deadline_ns = 2000;
  l->iv_ns = 400;
  l->iv_i = 0;
  l->iv_end_ns = 1400;
  CHECK_EQ_U64(issue(c, 1100), 8);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 0, 1300) == AB__WIN_MEASURED);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 1, 1500) == AB__WIN_MEASURED);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 2, 1900) == AB__WIN_MEASURED);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 3, 2500) == AB__WIN_FREED); /* drained */
  CHECK_EQ_U64(l->iv_i, 2);
  CHECK_EQ_U64(l->iv_end_ns, UINT64_MAX);
  CHECK_EQ_U64(l->iv[0].sent, 8);
  CHECK_EQ_U64(l->iv[0].completed, 1);
  CHECK_EQ_U64(l->iv[1].completed, 1);
  CHECK_EQ_U64(l->iv[2].completed, 1);
  CHECK_EQ_U64(l->iv[0].rtt.count + l->iv[1].rtt.count + l->iv[2].rtt.count, 4);
  CHECK_EQ_U64(l->iv[2].rtt.max, 1400);
  /* errors and timeouts in the interval they are counted in */
  ab__win_release(c, &l->message_errors);
  CHECK_EQ_U64(l->iv[2].errors, 4);
  CHECK_EQ_U64(l->message_errors, 4);
  check_identity(l);
  loop_free(l);
}

/* The time series counts the connections that completed a measure reply
 * in each interval, each once. */
static void test_interval_connections(void) {
  ab__loop_t *l = loop_new(3, 4, AB__WIN_ORDERED);
  free(l->iv);
  l->iv_n = 2;
  l->iv = calloc(2, sizeof(ab__iv_t));
  for (int i = 0; i < 2; i++) ab_hist_init(&l->iv[i].rtt);
  l->start_ns = 1000;
  l->deadline_ns = 3000;
  l->iv_ns = 1000;
  l->iv_i = 0;
  l->iv_end_ns = 2000;
  ab__client_t *a = ab__loop_client(l, 0), *b = ab__loop_client(l, 1);
  CHECK_EQ_U64(issue(a, 1100), 4);
  CHECK_EQ_U64(issue(b, 1100), 4);
  CHECK(ab__win_complete(a, AB_PHASE_MEASURE, 0, 0, 1200) == AB__WIN_MEASURED);
  CHECK(ab__win_complete(a, AB_PHASE_MEASURE, 0, 1, 1300) == AB__WIN_MEASURED);
  CHECK(ab__win_complete(b, AB_PHASE_MEASURE, 1, 0, 1300) == AB__WIN_MEASURED);
  CHECK_EQ_U64(l->iv[0].connections, 2);
  CHECK(ab__win_complete(a, AB_PHASE_MEASURE, 0, 2, 2100) == AB__WIN_MEASURED);
  CHECK(ab__win_complete(a, AB_PHASE_MEASURE, 0, 3, 2200) == AB__WIN_MEASURED);
  CHECK_EQ_U64(l->iv[0].connections, 2);
  CHECK_EQ_U64(l->iv[1].connections, 1);
  ab__win_finish(l);
  check_identity(l);
  loop_free(l);
}

int main(void) {
  test_intervals();
  test_interval_connections();
  TEST_DONE();
}
