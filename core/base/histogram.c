/* histogram.c -- see histogram.h for the bucket layout and the encoding. */
#include "base/histogram.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"

void ab_hist_init(ab_hist_t *h) {
  memset(h, 0, sizeof(*h));
  h->min = UINT64_MAX;
}

void ab_hist_merge(ab_hist_t *dst, const ab_hist_t *src) {
  if (src->count == 0) return;
  for (int i = 0; i < AB_HIST_BUCKETS; i++) dst->counts[i] += src->counts[i];
  dst->count += src->count;
  dst->overflow += src->overflow;
  if (src->min < dst->min) dst->min = src->min;
  if (src->max > dst->max) dst->max = src->max;
  dst->sum += src->sum;
  dst->sumsq += src->sumsq;
}

uint64_t ab_hist_bucket_low(int i) {
  if (i < 128) return (uint64_t)i;
  int shift = (i - 128) / 64 + 1;
  uint64_t sub = (uint64_t)((i - 128) % 64) + 64;
  return sub << shift;
}

uint64_t ab_hist_bucket_high(int i) {
  if (i < 128) return (uint64_t)i;
  int shift = (i - 128) / 64 + 1;
  return ab_hist_bucket_low(i) + ((UINT64_C(1) << shift) - 1);
}

uint64_t ab_hist_percentile(const ab_hist_t *h, double pct) {
  if (h->count == 0) return 0;
  if (!(pct > 0)) return h->min; /* also catches NaN */
  if (pct >= 100) return h->max;
  double r = ceil(pct / 100.0 * (double)h->count);
  uint64_t rank = r < 1 ? 1 : (uint64_t)r;
  if (rank > h->count) rank = h->count;
  if (rank == 1) return h->min;
  if (rank == h->count) return h->max;
  uint64_t seen = 0;
  for (int i = 0; i < AB_HIST_BUCKETS; i++) {
    seen += h->counts[i];
    if (seen >= rank) {
      uint64_t lo = ab_hist_bucket_low(i), hi = ab_hist_bucket_high(i);
      uint64_t v = lo + (hi - lo) / 2;
      if (v < h->min) v = h->min;
      if (v > h->max) v = h->max;
      return v;
    }
  }
  return h->max; /* the rank lies among the overflowed values */
}

double ab_hist_mean(const ab_hist_t *h) {
  if (h->count == 0) return 0;
  return (double)h->sum / (double)h->count;
}

double ab_hist_stdev(const ab_hist_t *h) {
  if (h->count == 0) return 0;
  double n = (double)h->count;
  double mean = (double)h->sum / n;
  double var = (double)h->sumsq / n - mean * mean;
  return var > 0 ? sqrt(var) : 0;
}

static int u128_hex(char *out, size_t cap, unsigned __int128 v) {
  uint64_t hi = (uint64_t)(v >> 64), lo = (uint64_t)v;
  if (hi == 0) return snprintf(out, cap, "%" PRIx64, lo);
  return snprintf(out, cap, "%" PRIx64 "%016" PRIx64, hi, lo);
}

size_t ab_hist_encode(const ab_hist_t *h, char *buf, size_t cap) {
  size_t len = 0;
  char tmp[96];
  char sum[40], sumsq[40];
#define EMIT(...)                                                             \
  do {                                                                        \
    int n_ = snprintf(tmp, sizeof(tmp), __VA_ARGS__);                         \
    if (len + 1 < cap) {                                                      \
      size_t room_ = cap - 1 - len;                                           \
      memcpy(buf + len, tmp, (size_t)n_ < room_ ? (size_t)n_ : room_);        \
    }                                                                         \
    len += (size_t)n_;                                                        \
  } while (0)
  u128_hex(sum, sizeof(sum), h->sum);
  u128_hex(sumsq, sizeof(sumsq), h->sumsq);
  EMIT("ab1:%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%s:%s:", h->count,
       h->count ? h->min : 0, h->max, h->overflow, sum, sumsq);
  int prev = 0, first = 1;
  for (int i = 0; i < AB_HIST_BUCKETS; i++) {
    if (h->counts[i] == 0) continue;
    EMIT("%s%d=%" PRIu64, first ? "" : ",", i - prev, h->counts[i]);
    prev = i;
    first = 0;
  }
#undef EMIT
  if (cap > 0) buf[len < cap ? len : cap - 1] = '\0';
  return len;
}

static int parse_u64(const char **p, uint64_t *out, int base) {
  char *end;
  if (**p == '\0' || **p == '-' || **p == '+' || **p == ' ') return AB_EINVAL;
  unsigned long long v = strtoull(*p, &end, base);
  if (end == *p) return AB_EINVAL;
  *out = v;
  *p = end;
  return 0;
}

static int parse_u128(const char **p, unsigned __int128 *out) {
  unsigned __int128 v = 0;
  const char *s = *p;
  int digits = 0;
  for (;; s++, digits++) {
    int d;
    if (*s >= '0' && *s <= '9') d = *s - '0';
    else if (*s >= 'a' && *s <= 'f') d = *s - 'a' + 10;
    else break;
    if (digits >= 32) return AB_EINVAL;
    v = (v << 4) | (unsigned)d;
  }
  if (digits == 0) return AB_EINVAL;
  *out = v;
  *p = s;
  return 0;
}

static int expect(const char **p, char c) {
  if (**p != c) return AB_EINVAL;
  (*p)++;
  return 0;
}

int ab_hist_decode(ab_hist_t *h, const char *text) {
  ab_hist_init(h);
  const char *p = text;
  uint64_t count, min, max, ovf;
  if (strncmp(p, "ab1:", 4) != 0) return AB_EINVAL;
  p += 4;
  if (parse_u64(&p, &count, 10) || expect(&p, ':') ||
      parse_u64(&p, &min, 10) || expect(&p, ':') ||
      parse_u64(&p, &max, 10) || expect(&p, ':') ||
      parse_u64(&p, &ovf, 10) || expect(&p, ':') ||
      parse_u128(&p, &h->sum) || expect(&p, ':') ||
      parse_u128(&p, &h->sumsq) || expect(&p, ':'))
    goto bad;
  uint64_t total = ovf;
  long idx = 0;
  int first = 1;
  while (*p != '\0') {
    uint64_t d, n;
    if (!first && expect(&p, ',')) goto bad;
    if (parse_u64(&p, &d, 10) || expect(&p, '=') || parse_u64(&p, &n, 10))
      goto bad;
    if ((!first && d == 0) || d >= AB_HIST_BUCKETS) goto bad;
    idx += (long)d;
    if (idx >= AB_HIST_BUCKETS || n == 0) goto bad;
    h->counts[idx] = n;
    total += n;
    first = 0;
  }
  if (total != count || ovf > count) goto bad;
  h->count = count;
  h->overflow = ovf;
  h->min = count ? min : UINT64_MAX;
  h->max = max;
  if (count && min > max) goto bad;
  return 0;
bad:
  ab_hist_init(h);
  return AB_EINVAL;
}
