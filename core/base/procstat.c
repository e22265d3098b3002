/* procstat.c -- see procstat.h. */
#include "base/procstat.h"

#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

int ab_cpu_sample(ab_cpu_sample_t *out) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return -errno;
  out->user_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
  out->sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
  out->maxrss_bytes = (uint64_t)ru.ru_maxrss * 1024u; /* KiB on Linux */
  return 0;
}

uint64_t ab_rss_now_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (f == NULL) return 0;
  unsigned long size = 0, resident = 0;
  int n = fscanf(f, "%lu %lu", &size, &resident);
  fclose(f);
  if (n != 2) return 0;
  return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

int ab_logical_cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}
