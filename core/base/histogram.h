/* histogram.h -- log-linear latency histogram (nanoseconds).
 *
 * Shape: values 0..127 ns have one exact bucket each; above that every
 * power-of-two range [2^k, 2^(k+1)) is split into 64 equal buckets, so a
 * bucket is at most 1/64 of its lower bound wide and its midpoint is within
 * 1/128 (0.79 %) of any value in it.  Buckets reach 2^38 - 1 ns (~275 s);
 * larger values are counted in `overflow`, still count in `count` and still
 * set `max`.  The idea is HdrHistogram's (Gil Tene), reduced to one fixed
 * precision.
 *
 * Recording touches one counter and the running min/max/sums: no allocation,
 * no atomics.  Keep one histogram per thread and merge them at the end; the
 * merge is exact (integer counts and 128-bit integer sums), so
 * merge(record(a), record(b)) == record(a ++ b) bit for bit.
 *
 * Percentiles are nearest-rank on the recorded distribution: rank =
 * ceil(p/100 * count); the value reported is the midpoint of the bucket that
 * holds that rank, clamped into [min, max]; rank 1 is `min` and rank `count`
 * is `max` exactly.  Overflowed values rank above every bucket and report
 * `max`.  An empty histogram reports 0 and callers must treat it as "no data".
 *
 * The text encoding (ab_hist_encode/decode) is for result files: ASCII, no
 * quotes or backslashes, one line:
 *   ab1:<count>:<min>:<max>:<overflow>:<sum hex>:<sumsq hex>:<d>=<n>,<d>=<n>...
 * where each <d> is the bucket index minus the previous listed index (the
 * first is the index itself) and <n> its count, all decimal.  Only non-empty
 * buckets are listed.
 */
#ifndef AB_HISTOGRAM_H
#define AB_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#define AB_HIST_SUB_BITS 7            /* 128 exact buckets, 64 per octave */
#define AB_HIST_MAX_MSB 37            /* largest bucketed value < 2^38   */
#define AB_HIST_BUCKETS (128 + (AB_HIST_MAX_MSB - 6) * 64) /* 2112 */
#define AB_HIST_MAX_VALUE ((UINT64_C(1) << (AB_HIST_MAX_MSB + 1)) - 1)

typedef struct ab_hist_s {
  uint64_t count;    /* recordings, overflow included */
  uint64_t overflow; /* recordings above AB_HIST_MAX_VALUE */
  uint64_t min;      /* UINT64_MAX while empty */
  uint64_t max;      /* 0 while empty */
  unsigned __int128 sum;   /* exact sum of recorded values (ns) */
  unsigned __int128 sumsq; /* exact sum of squares (ns^2) */
  uint64_t counts[AB_HIST_BUCKETS];
} ab_hist_t;

/* Empties h.  The struct is plain memory (~17 KiB); the caller owns it. */
void ab_hist_init(ab_hist_t *h);

/* Bucket index of value v (ns), or -1 when v > AB_HIST_MAX_VALUE. */
static inline int ab_hist_index(uint64_t v) {
  if (v < 128) return (int)v;
  int msb = 63 - __builtin_clzll(v);
  if (msb > AB_HIST_MAX_MSB) return -1;
  int shift = msb - 6;
  return 128 + (shift - 1) * 64 + (int)((v >> shift) - 64);
}

/* Records n occurrences of v nanoseconds. */
static inline void ab_hist_record_n(ab_hist_t *h, uint64_t v, uint64_t n) {
  int i = ab_hist_index(v);
  if (i >= 0) h->counts[i] += n;
  else h->overflow += n;
  h->count += n;
  if (v < h->min) h->min = v;
  if (v > h->max) h->max = v;
  h->sum += (unsigned __int128)v * n;
  h->sumsq += (unsigned __int128)v * v * n;
}

/* Records one value of v nanoseconds.  Hot path. */
static inline void ab_hist_record(ab_hist_t *h, uint64_t v) {
  ab_hist_record_n(h, v, 1);
}

/* dst += src, exactly. */
void ab_hist_merge(ab_hist_t *dst, const ab_hist_t *src);

/* Lowest and highest value (ns) that share bucket i. */
uint64_t ab_hist_bucket_low(int i);
uint64_t ab_hist_bucket_high(int i);

/* Nearest-rank percentile, pct in [0, 100], in ns; 0 when empty. */
uint64_t ab_hist_percentile(const ab_hist_t *h, double pct);

/* Mean and population standard deviation in ns; 0 when empty. */
double ab_hist_mean(const ab_hist_t *h);
double ab_hist_stdev(const ab_hist_t *h);

/* Writes the text encoding into buf (NUL-terminated when cap > 0) and
 * returns the length the full encoding needs, excluding the NUL, like
 * snprintf.  Call with cap = 0 to size the buffer. */
size_t ab_hist_encode(const ab_hist_t *h, char *buf, size_t cap);

/* Parses an encoding into h (which it initialises first).
 * Returns 0, or AB_EINVAL for malformed text. */
int ab_hist_decode(ab_hist_t *h, const char *text);

#endif
