/* test_histogram.c -- histogram.h: counts, range, percentiles, merge, codec */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "base/histogram.h"
#include "test/ab_test.h"

static ab_hist_t a, b, c, d;

static void test_exact_count(void) {
  ab_hist_init(&a);
  /* 5e9 recordings of one value: the count must stay exact (> 2^32). */
  for (int i = 0; i < 5; i++) ab_hist_record_n(&a, 1234, 1000000000ULL);
  CHECK_EQ_U64(a.count, 5000000000ULL);
  CHECK_EQ_U64(a.counts[ab_hist_index(1234)], 5000000000ULL);
  CHECK_EQ_U64(ab_hist_percentile(&a, 50), 1234);
  CHECK_EQ_U64(ab_hist_percentile(&a, 99.9), 1234);
  CHECK(fabs(ab_hist_mean(&a) - 1234.0) < 1e-6);
  CHECK(ab_hist_stdev(&a) < 1e-6);
}

static void test_overflow(void) {
  ab_hist_init(&a);
  ab_hist_record(&a, 500);
  uint64_t big = AB_HIST_MAX_VALUE + 12345;
  ab_hist_record(&a, big);
  CHECK_EQ_U64(a.overflow, 1);
  CHECK_EQ_U64(a.count, 2);
  CHECK_EQ_U64(a.max, big);
  CHECK_EQ_U64(ab_hist_percentile(&a, 100), big);
  CHECK_EQ_U64(ab_hist_percentile(&a, 50), 500);
  CHECK(ab_hist_index(AB_HIST_MAX_VALUE) == AB_HIST_BUCKETS - 1);
  CHECK(ab_hist_index(AB_HIST_MAX_VALUE + 1) == -1);
}

static void test_reference_percentiles(void) {
  ab_hist_init(&a);
  ab_hist_record(&a, 405000);
  ab_hist_record(&a, 862000);
  ab_hist_record(&a, 5300000);
  CHECK_EQ_U64(ab_hist_percentile(&a, 100), 5300000);
  CHECK_EQ_U64(a.max, 5300000);
  uint64_t p50 = ab_hist_percentile(&a, 50);
  CHECK(fabs((double)p50 - 862000.0) <= 8620.0);
  CHECK_EQ_U64(ab_hist_percentile(&a, 0), 405000);
  uint64_t p = ab_hist_percentile(&a, 66.7); /* rank 3 of 3 */
  CHECK_EQ_U64(p, 5300000);
}

static void test_relative_error(void) {
  /* every bucket's midpoint is within 1 % of every value in it */
  for (int i = 0; i < AB_HIST_BUCKETS; i++) {
    uint64_t lo = ab_hist_bucket_low(i), hi = ab_hist_bucket_high(i);
    uint64_t mid = lo + (hi - lo) / 2;
    CHECK(ab_hist_index(lo) == i);
    CHECK(ab_hist_index(hi) == i);
    if (lo >= 100) CHECK((double)(mid - lo) / (double)lo <= 0.01);
    if (i + 1 < AB_HIST_BUCKETS) CHECK(ab_hist_bucket_low(i + 1) == hi + 1);
  }
  /* 100 s is inside the range */
  CHECK(ab_hist_index(100000000000ULL) >= 0);
}

static uint64_t next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void test_merge_equals_single_stream(void) {
  ab_hist_init(&a);
  ab_hist_init(&b);
  ab_hist_init(&c);
  uint64_t s = 88172645463325252ULL;
  for (int i = 0; i < 200000; i++) {
    uint64_t v = next(&s) % (i % 3 == 0 ? 2000000000ULL : 50000ULL);
    if (i % 1000 == 0) v = AB_HIST_MAX_VALUE + (uint64_t)i; /* overflow */
    ab_hist_record(i % 2 ? &a : &b, v);
    ab_hist_record(&c, v);
  }
  ab_hist_merge(&a, &b);
  CHECK(memcmp(&a, &c, sizeof(a)) == 0);
  double pcts[] = {0, 1, 50, 90, 95, 99, 99.9, 100};
  for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++)
    CHECK_EQ_U64(ab_hist_percentile(&a, pcts[i]), ab_hist_percentile(&c, pcts[i]));
  /* percentiles are monotonic and inside [min, max] */
  uint64_t prev = 0;
  for (double p = 0; p <= 100; p += 0.5) {
    uint64_t v = ab_hist_percentile(&c, p);
    CHECK(v >= prev);
    CHECK(v >= c.min && v <= c.max);
    prev = v;
  }
}

static void test_codec(void) {
  size_t need = ab_hist_encode(&c, NULL, 0);
  char *buf = malloc(need + 1);
  CHECK(ab_hist_encode(&c, buf, need + 1) == need);
  CHECK(strlen(buf) == need);
  CHECK(ab_hist_decode(&d, buf) == 0);
  CHECK(memcmp(&c, &d, sizeof(c)) == 0);
  /* truncated buffer: still NUL-terminated, still reports full length */
  char small[10];
  CHECK(ab_hist_encode(&c, small, sizeof(small)) == need);
  CHECK(strlen(small) == 9);
  free(buf);
  /* empty round trip */
  ab_hist_init(&a);
  char e[128];
  ab_hist_encode(&a, e, sizeof(e));
  CHECK(ab_hist_decode(&d, e) == 0);
  CHECK(d.count == 0 && d.min == UINT64_MAX);
  CHECK_EQ_U64(ab_hist_percentile(&d, 50), 0);
  /* malformed inputs are refused */
  const char *bad[] = {"", "ab2:0:0:0:0:0:0:", "ab1:1:5:5:0:5:19:", /* count */
                       "ab1:1:5:5:0:5:19:5=1,0=1", "ab1:1:5:5:0:5:19:9999=1",
                       "ab1:-1:5:5:0:5:19:5=1", "ab1:1:5:5:0:zz:19:5=1"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    CHECK(ab_hist_decode(&d, bad[i]) == AB_EINVAL);
  CHECK(ab_hist_decode(&d, "ab1:1:5:5:0:5:19:5=1") == 0);
  CHECK_EQ_U64(ab_hist_percentile(&d, 50), 5);
}

int main(void) {
  test_exact_count();
  test_overflow();
  test_reference_percentiles();
  test_relative_error();
  test_merge_equals_single_stream();
  test_codec();
  TEST_DONE();
}
