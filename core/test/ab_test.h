/* ab_test.h -- minimal assertion macros for the C unit tests.  Each test
 * executable is one ctest test; a failed check prints file:line and the
 * values, and the executable exits 1 at the end. */
#ifndef AB_TEST_H
#define AB_TEST_H

#include <inttypes.h>
#include <stdio.h>

static int ab_test_failures = 0;
static int ab_test_checks = 0;

#define CHECK(cond)                                                           \
  do {                                                                        \
    ab_test_checks++;                                                         \
    if (!(cond)) {                                                            \
      ab_test_failures++;                                                     \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                         \
  } while (0)

#define CHECK_EQ_U64(a, b)                                                    \
  do {                                                                        \
    uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                          \
    ab_test_checks++;                                                         \
    if (a_ != b_) {                                                           \
      ab_test_failures++;                                                     \
      fprintf(stderr, "%s:%d: %s == %s failed: %" PRIu64 " != %" PRIu64 "\n", \
              __FILE__, __LINE__, #a, #b, a_, b_);                            \
    }                                                                         \
  } while (0)

#define TEST_DONE()                                                           \
  do {                                                                        \
    printf("%d checks, %d failed\n", ab_test_checks, ab_test_failures);       \
    return ab_test_failures ? 1 : 0;                                          \
  } while (0)

#endif
