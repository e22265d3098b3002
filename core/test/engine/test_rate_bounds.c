/* test_rate_bounds.c -- the open loop's rate bounds (proto/caps.h,
 * ab_caps_rate_ok: rate_max at most, rate x duration >= clients) against
 * the schedule's arithmetic (engine/window.h): a sweep over the extremes
 * (1e-300, 1e-10, ..., 1e9, 2e9, 1e300, inf, NaN) x clients x durations.
 * Every rate the bound lets through gives instants that do not overflow:
 * the first of each connection inside the measure phase, every connection
 * with at least one message before the deadline, the count before the
 * deadline what rate x duration / clients says, the instant after the
 * deadline within two phases of the start and after the one before it.
 * Every rate it refuses is one of the cases issue 27 found: below one
 * message per connection (1e-10 spun a worker, 1e-300 sent nothing) or
 * above rate_max (2e9 failed every run). */
#include <math.h>

#include "test/engine/window_fixture.h"
#include "proto/caps.h"

/* connection `index` of `clients` at `rate` for `dur_s` from t0: the
 * instants' checks; returns the messages intended before the deadline */
static uint64_t check_schedule(double rate, uint32_t clients, uint32_t index, double dur_s, uint64_t t0) {
  ab__win_t w;
  memset(&w, 0, sizeof(w));
  uint8_t origin = 0;
  w.origin = (void *)&origin; /* an open-loop window */
  ab__win_sched_init(&w, rate, index, clients);
  ab__win_sched_start(&w, t0);
  uint64_t dur_ns = (uint64_t)(dur_s * 1e9 + 0.5), dl = t0 + dur_ns;
  uint64_t first = ab__win_intended(&w, 0);
  CHECK(first >= t0);
  CHECK(first < dl); /* this connection sends in the measure phase */
  uint64_t n = ab__win_unsent(&w, dl); /* intended before the deadline, none sent */
  CHECK(n >= 1);
  /* rate x duration / clients, give or take the phase offset and rounding */
  double expect = rate * dur_s / clients;
  CHECK((double)n <= expect + 1.0);
  CHECK((double)n >= expect - 1.0);
  uint64_t last = ab__win_intended(&w, n - 1), next = ab__win_intended(&w, n);
  CHECK(last < dl);
  CHECK(next >= dl);
  CHECK(next > last);
  CHECK(next - t0 <= 2 * dur_ns + 1); /* no wrap, nothing far past the run */
  w.origin = NULL;
  return n;
}

static void test_sweep(void) {
  const double rates[] = {1e-300, 1e-10, 1e-3, 0.25, 0.5, 1, 166, 1000, 20000, 1e6, 1e9, 1e9 + 1, 2e9, 1e300,
                          INFINITY, -1, NAN};
  const uint32_t clients[] = {1, 4, 16, 1000, 100000};
  const double durs[] = {0.05, 0.2, 1, 10, 3600};
  /* a monotonic clock after a year of uptime */
  const uint64_t t0 = 365ull * 86400 * 1000000000ull;
  const ab_caps_limits_t *lim = ab_caps_limits();
  CHECK(lim->rate_max == 1e9);
  uint32_t taken = 0, refused = 0;
  for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
    for (size_t j = 0; j < sizeof(clients) / sizeof(clients[0]); j++)
      for (size_t k = 0; k < sizeof(durs) / sizeof(durs[0]); k++) {
        double r = rates[i], d = durs[k];
        uint32_t c = clients[j];
        int ok = ab_caps_rate_ok(r, c, d);
        /* the bound itself, stated independently */
        int want = r > 0 && r <= 1e9 && r * d >= (double)c;
        CHECK_EQ_U64((uint64_t)ok, (uint64_t)want);
        if (!ok) {
          refused++;
          continue;
        }
        taken++;
        /* the first and the last connection (the largest phase offset) */
        check_schedule(r, c, 0, d, t0);
        if (c > 1) check_schedule(r, c, c - 1, d, t0);
      }
  /* issue 27's cases are refused whatever the connections and duration */
  CHECK(!ab_caps_rate_ok(1e-10, 1, 3600));
  CHECK(!ab_caps_rate_ok(1e-300, 1, 3600));
  CHECK(!ab_caps_rate_ok(2e9, 1, 1));
  CHECK(!ab_caps_rate_ok(NAN, 1, 1));
  CHECK(!ab_caps_rate_ok(1, 1, NAN));
  /* the edges run: exactly clients / duration, and rate_max */
  CHECK(ab_caps_rate_ok(4, 4, 1));
  CHECK(ab_caps_rate_ok(1e9, 100000, 0.05));
  CHECK_EQ_U64(check_schedule(4, 4, 3, 1, t0), 1);
  CHECK(taken > 50 && refused > 50);
}

int main(void) {
  test_sweep();
  TEST_DONE();
}
