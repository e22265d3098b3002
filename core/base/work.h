/* work.h -- the deterministic CPU work a server does per echo (`work` key).
 *
 * ab_work(n) runs n iterations of xorshift64 (Marsaglia 2003) and returns the
 * final state; callers fold the result into a sink they keep, so the
 * compiler cannot drop the loop.  One iteration is a few cycles (3 shifts,
 * 3 xors, a dependency chain), so 10,000 iterations are a few µs. */
#ifndef AB_WORK_H
#define AB_WORK_H

#include <stdint.h>

uint64_t ab_work(uint64_t iterations, uint64_t seed);

#endif
