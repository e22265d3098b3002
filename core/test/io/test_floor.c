/* test_floor.c -- floor.h: the raw epoll echo runs, counts and refuses bad
 * configurations. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/ab_error.h"
#include "io/floor.h"
#include "test/ab_test.h"

static ab_floor_cfg_t cfg_of(size_t payload, int clients, int window) {
  ab_floor_cfg_t c;
  memset(&c, 0, sizeof(c));
  c.payload = payload;
  c.clients = clients;
  c.window = window;
  c.warmup_s = 0.05;
  c.duration_s = 0.2;
  return c;
}

static void check_run(size_t payload, int clients, int window) {
  ab_floor_cfg_t cfg = cfg_of(payload, clients, window);
  ab_floor_result_t r;
  int err = ab_floor_run(&cfg, &r);
  printf("payload %6zu clients %d window %d: err %d, %8llu round trips in "
         "%.3f s, %.0f/s, mean RTT %.2f us, cpu user %.3f sys %.3f\n",
         payload, clients, window, err, (unsigned long long)r.round_trips,
         r.elapsed_s, r.round_trips_per_s, r.mean_rtt_us, r.cpu_user_s,
         r.cpu_sys_s);
  CHECK(err == 0);
  CHECK(r.round_trips > 0);
  CHECK(r.elapsed_s >= 0.15 && r.elapsed_s <= 1.0);
  CHECK(r.mean_rtt_us > 0);
  CHECK(r.cpu_user_s >= 0 && r.cpu_sys_s >= 0);
  if (r.elapsed_s > 0) {
    double rate = (double)r.round_trips / r.elapsed_s;
    CHECK(fabs(rate - r.round_trips_per_s) <= 1e-6 * rate);
  }
  if (r.round_trips_per_s > 0) {
    double little = (double)clients * window / r.round_trips_per_s * 1e6;
    CHECK(fabs(little - r.mean_rtt_us) <= 1e-6 * little);
  }
}

static void test_matrix(void) {
  static const size_t payloads[] = {64, 16384};
  static const int clients[] = {1, 4};
  static const int windows[] = {1, 8};
  for (int p = 0; p < 2; p++)
    for (int c = 0; c < 2; c++)
      for (int w = 0; w < 2; w++)
        check_run(payloads[p], clients[c], windows[w]);
}

static void test_one_byte(void) {
  check_run(1, 1, 1);
  check_run(1, 2, 3);
}

static void test_no_warmup(void) {
  ab_floor_cfg_t cfg = cfg_of(64, 1, 1);
  cfg.warmup_s = 0;
  ab_floor_result_t r;
  CHECK(ab_floor_run(&cfg, &r) == 0);
  CHECK(r.round_trips > 0);
}

static void test_bad_config(void) {
  ab_floor_result_t r;
  const char *why = NULL;
  ab_floor_cfg_t cfg = cfg_of(64, 0, 1);
  r.round_trips = 123;
  CHECK(ab_floor_run(&cfg, &r) == AB_ECONFIG);
  CHECK_EQ_U64(r.round_trips, 0);
  CHECK(ab_floor_check(&cfg, &why) == AB_ECONFIG);
  CHECK(why != NULL && strstr(why, "clients") != NULL);

  cfg = cfg_of(0, 1, 1);
  CHECK(ab_floor_run(&cfg, &r) == AB_ECONFIG);
  cfg = cfg_of(64, 1, 0);
  CHECK(ab_floor_run(&cfg, &r) == AB_ECONFIG);
  cfg = cfg_of(64, 1, 1);
  cfg.duration_s = 0;
  CHECK(ab_floor_run(&cfg, &r) == AB_ECONFIG);
  cfg.duration_s = NAN;
  CHECK(ab_floor_run(&cfg, &r) == AB_ECONFIG);
  cfg = cfg_of(64, 1, 1);
  cfg.warmup_s = -1;
  CHECK(ab_floor_run(&cfg, &r) == AB_ECONFIG);
  cfg = cfg_of((size_t)16 << 20, 100, 4096); /* > 1 GiB in flight */
  CHECK(ab_floor_check(&cfg, &why) == AB_ECONFIG);
  CHECK(why != NULL && strstr(why, "GiB") != NULL);
  CHECK(ab_floor_run(&cfg, NULL) == AB_ECONFIG);

  cfg = cfg_of(64, 1, 1);
  CHECK(ab_floor_check(&cfg, &why) == 0);
  CHECK(why == NULL);
}

int main(void) {
  test_bad_config();
  test_matrix();
  test_one_byte();
  test_no_warmup();
  TEST_DONE();
}
