/* procstat.h -- process CPU time and memory, sampled around the measured
 * interval.  CPU is the whole process (all threads: client and server
 * sides alike), from getrusage(RUSAGE_SELF). */
#ifndef AB_PROCSTAT_H
#define AB_PROCSTAT_H

#include <stdint.h>

typedef struct {
  double user_s;     /* user CPU seconds since process start */
  double sys_s;      /* system CPU seconds since process start */
  uint64_t maxrss_bytes; /* ru_maxrss, peak resident set */
} ab_cpu_sample_t;

/* Returns 0 or a negative errno. */
int ab_cpu_sample(ab_cpu_sample_t *out);

/* Current resident set size in bytes (/proc/self/statm), 0 if unknown. */
uint64_t ab_rss_now_bytes(void);

/* Logical CPUs online. */
int ab_logical_cpus(void);

#endif
