/* merge.c -- the run's result from its loops: each loop's counters (by
 * the counters table, engine/counters.h), histograms, time series, tags
 * and errors folded into the result after the loops stopped, and the
 * verdict on the run (status, ok and the reason).  The error classes
 * (ab__errors_add) are kept here too: a loop counts into its table while
 * it runs, the merge adds the tables up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "base/procstat.h"
#include "engine/engine_int.h"

void ab__errors_add(ab_error_count_t *tab, int *n, int code, uint64_t count, const char *why) {
  int i = 0;
  while (i < *n && tab[i].code != code) i++;
  if (i == *n) {
    if (*n == AB_MAX_ERROR_CLASSES) return;
    tab[i].code = code;
    tab[i].count = 0;
    tab[i].why[0] = '\0';
    (*n)++;
  }
  tab[i].count += count;
  if (tab[i].why[0] == '\0' && why && why[0]) snprintf(tab[i].why, sizeof(tab[i].why), "%s", why);
}

void ab__loop_error(ab__loop_t *l, int code, const char *what) {
  ab__errors_add(l->errors, &l->nerrors, code, 1, what);
  if (l->first_error[0] == '\0')
    snprintf(l->first_error, sizeof(l->first_error), "%s", what);
}

/* Folds one loop's measurements into the result (engine/counters.h). */
static void merge_loop(ab_result_t *out, ab__loop_t *l) {
#define MERGE_COUNTER(name, merge, group, doc)                                              \
  out->name = (merge) == AB_MERGE_MAX ? (out->name > l->name ? out->name : l->name)         \
                                      : out->name + l->name;
  AB_COUNTERS(MERGE_COUNTER)
#undef MERGE_COUNTER
  out->unfinished += l->meas_inflight; /* stuck at stop */
  for (int k = 0; k < AB_REPLY_CODES; k++) out->reply_codes[k] += l->reply_codes[k];
  /* the loop's RTT histogram is its intervals' together */
  for (uint32_t i = 0; i < l->iv_n; i++) ab_hist_merge(&l->rtt, &l->iv[i].rtt);
  ab_hist_merge(&out->rtt, &l->rtt);
  ab_hist_merge(&out->rtt_raw, &l->rtt_raw);
  ab_hist_merge(&out->rtt_ok, &l->rtt_ok);
  ab_hist_merge(&out->send_lag, &l->send_lag);
  ab_hist_merge(&out->gen_lag, &l->gen_lag);
  if (l->nclients > 0 && l->busy_share >= 0) {
    /* the mean, kept as a running sum until the last loop (ab__merge_loops) */
    if (l->busy_share > out->loop_busy_max) out->loop_busy_max = l->busy_share;
    out->loop_busy_mean += l->busy_share;
    out->busy_loops++;
  }
  ab__series_merge(out, l);
  ab_hist_merge(&out->connect, &l->connect);
  ab_hist_merge(&out->handshake, &l->handshake);
  if (out->tags && l->tags) ab_tags_merge(out->tags, l->tags);
  out->work_sink ^= l->work_sink;
  for (int k = 0; k < l->nerrors; k++)
    ab__errors_add(out->errors, &out->nerrors, l->errors[k].code, l->errors[k].count,
                   l->errors[k].why);
  if (out->error[0] == '\0' && l->first_error[0] != '\0')
    snprintf(out->error, sizeof(out->error), "%s", l->first_error);
}

/* After STOP (the loop threads have ended): the process's memory at the
 * end, then every loop merged into the result and closed, then the
 * driver's case.  Returns 0, or < 0 when the merge itself failed (out of
 * memory). */
int ab__merge_loops(ab__engine_t *eng, ab_result_t *out) {
  ab_cpu_sample_t cend;
  ab_cpu_sample(&cend);
  out->rss_end_bytes = ab_rss_now_bytes();
  /* ru_maxrss is the kernel's high-water mark, updated lazily: never report
   * a peak below what is resident now */
  out->rss_peak_bytes = cend.maxrss_bytes > out->rss_end_bytes ? cend.maxrss_bytes
                                                               : out->rss_end_bytes;
  int merged = ab__series_result_alloc(eng, out);
  if (merged < 0 && out->error[0] == '\0')
    snprintf(out->error, sizeof(out->error), "out of memory merging the time series");
  if (eng->cfg->tagged) {
    /* the tags' names, and their stats merged below */
    out->ntags = eng->tags.n;
    memcpy(out->tag_names, eng->tags.names, sizeof(out->tag_names));
    out->tags = malloc(AB_TAGS_MAX * sizeof(ab_tag_stats_t));
    if (out->tags != NULL) {
      ab_tags_init(out->tags);
    } else {
      merged = AB_ENOMEM;
      if (out->error[0] == '\0') snprintf(out->error, sizeof(out->error), "out of memory merging the tags");
    }
  }
  for (uint32_t li = 0; li < eng->nloops; li++) {
    ab__loop_t *l = &eng->loops[li];
    merge_loop(out, l);
    for (uint32_t k = 0; k < l->nclients; k++) {
      uint32_t id = ab__loop_client(l, k)->id;
      if (out->conn_id_count == 0 || id < out->conn_id_min) out->conn_id_min = id;
      if (out->conn_id_count == 0 || id > out->conn_id_max) out->conn_id_max = id;
      out->conn_id_count++;
      out->conn_id_sum += id;
    }
    eng->drv->loop_close(l);
    uv_loop_close(&l->loop);
    ab__loop_free_clients(l);
  }
  if (out->busy_loops > 0) out->loop_busy_mean /= out->busy_loops;
  eng->drv->case_close(eng, out);
  return merged;
}

/* out->status, out->ok and, when not ok and nothing said why, the reason.
 * fatal: the run itself broke (out->error was set before the loops'
 * errors were merged in, or the merge failed). */
void ab__judge(const ab__engine_t *eng, ab_result_t *out, int fatal) {
  int faults;
  if (eng->cfg->role == AB_ROLE_SERVER) {
    out->status = out->error[0] == '\0' ? AB_RUN_OK : AB_RUN_FAILED;
    out->ok = out->status == AB_RUN_OK;
    return;
  } else if (eng->drv->loss_is_measured) {
    /* loss is what a datagram transport measures, not a fault; errors
     * still are */
    faults = out->error[0] != '\0' || out->message_errors != 0;
  } else {
    faults = out->error[0] != '\0' || out->nerrors != 0 || out->timed_out != 0 ||
             out->message_errors != 0 || out->unfinished != 0 || out->reconnects != 0 ||
             out->reconnects_given_up != 0;
  }
  /* nothing worked: no reply completed, or every reply was a status
   * failure of an echo codec (counted over every phase, so against every
   * reply).  A request-mode reply outside the success set (non_success) is
   * a completion: it makes the run degraded, never failed without numbers */
  uint64_t bad_status = 0;
  for (uint32_t li = 0; li < eng->nloops; li++) bad_status += eng->loops[li].status_failures;
  /* an echo that answers 500 is not a round trip that worked; a request
   * that gets a 404 is one, of the wrong kind (the classes, by status, are
   * in the errors) */
  if (bad_status && out->error[0] == '\0')
    snprintf(out->error, sizeof(out->error),
             "%llu responses had a status outside the success set (2xx unless the case says"
             " otherwise)",
             (unsigned long long)bad_status);
  bad_status = bad_status > out->non_success ? bad_status - out->non_success : 0;
  uint64_t replies = out->completed + out->drained + out->warmup_completed;
  int none_worked = out->completed == 0 || (bad_status > 0 && bad_status >= replies);
  if (out->non_success != 0) faults = 1;
  if (fatal || none_worked) out->status = AB_RUN_FAILED;
  else out->status = faults ? AB_RUN_DEGRADED : AB_RUN_OK;
  out->ok = out->status == AB_RUN_OK;
  if (out->interrupted) {
    /* the numbers are kept, but this is not the run that was asked for */
    out->ok = 0;
    if (out->error[0] == '\0' && out->measured_s > 0)
      snprintf(out->error, sizeof(out->error), "interrupted after %.3f s of the %g s measure phase",
               out->measured_s, eng->cfg->duration_s);
    else if (out->error[0] == '\0')
      snprintf(out->error, sizeof(out->error), "interrupted during connect/warm-up, before the"
               " %g s measure phase began (nothing measured)", eng->cfg->duration_s);
  }
  if (out->status == AB_RUN_DEGRADED && out->error[0] == '\0')
    snprintf(out->error, sizeof(out->error),
             "%llu of %llu messages timed out, %llu lost to errors, %llu unfinished; %llu reconnects",
             (unsigned long long)out->timed_out, (unsigned long long)out->sent,
             (unsigned long long)out->message_errors, (unsigned long long)out->unfinished,
             (unsigned long long)out->reconnects);
  if (!out->ok && out->error[0] == '\0')
    snprintf(out->error, sizeof(out->error), "no round trip completed in the measured interval");
}

void ab_result_free(ab_result_t *r) {
  free(r->conns_per_loop);
  r->conns_per_loop = NULL;
  free(r->iv);
  free(r->iv_lag);
  free(r->tags);
  r->iv = NULL;
  r->iv_lag = NULL;
  r->tags = NULL;
}
