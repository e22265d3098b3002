/* case_check.c -- ab_case_check (engine.h): a case's configuration
 * against the capability table and the driver row, before anything is
 * set up.
 */
#include <stdio.h>
#include <string.h>

#include "base/ab_error.h"
#include "engine/engine_int.h"
#include "proto/caps.h"

/* Against the capability table (proto/caps.h): the scenario checks
 * (the arkbench.scenario.check module) refuse the same cases first, in the
 * words users read; this is the safety net for any other caller. */
int ab_case_check(const ab_case_cfg_t *cfg, char *err, size_t errlen) {
#define BAD(...) do { snprintf(err, errlen, __VA_ARGS__); return AB_ECONFIG; } while (0)
  const ab_caps_limits_t *lim = ab_caps_limits();
  size_t nexec, nframing, nmodel;
  const ab_cap_name_t *execs = ab_caps_executions(&nexec);
  const ab_cap_name_t *framings = ab_caps_framings(&nframing);
  const ab_cap_name_t *models = ab_caps_models(&nmodel);
  const ab_proto_cap_t *p = ab_caps_protocol(cfg->protocol);
  const char *exec = ab_caps_name(execs, nexec, cfg->execution);
  if (p == NULL) BAD("unknown protocol %d", cfg->protocol);
  if (exec == NULL) BAD("unknown execution %d", cfg->execution);
  if (!ab_caps_runs(p, cfg->execution)) BAD("execution %s does not run protocol %s", exec, p->name);
  if (ab_caps_name(framings, nframing, cfg->framing) == NULL) BAD("unknown framing %d", cfg->framing);
  if (cfg->payload < lim->payload_min || cfg->payload > p->payload_max) BAD("%s payload %u out of range %u .. %u", p->name, cfg->payload, lim->payload_min, p->payload_max);
  if (cfg->clients < lim->clients_min || cfg->clients > lim->clients_max) BAD("clients %u out of range %u .. %u", cfg->clients, lim->clients_min, lim->clients_max);
  if (cfg->window < lim->window_min || cfg->window > lim->window_max) BAD("window %u out of range %u .. %u", cfg->window, lim->window_min, lim->window_max);
  if (ab_caps_name(models, nmodel, cfg->model) == NULL) BAD("unknown topology model %d", cfg->model);
  if (cfg->model == AB_MODEL_SHARED && cfg->threads > 1 && !ab_caps_runs_shared(p, cfg->execution)) BAD("shared:%u does not run execution %s over protocol %s yet", cfg->threads, exec, p->name);
  if (cfg->threads < lim->threads_min || cfg->threads > lim->threads_max) BAD("topology N %u out of range %u .. %u", cfg->threads, lim->threads_min, lim->threads_max);
  if (cfg->work > lim->work_max) BAD("work %llu over %llu", (unsigned long long)cfg->work, (unsigned long long)lim->work_max);
  if (!(cfg->warmup_s >= 0) || !(cfg->duration_s > 0) || !(cfg->timeout_s > 0)) BAD("warmup >= 0, duration > 0 and timeout > 0 are required");
  if (!(cfg->rate >= 0) || cfg->rate > lim->rate_max) BAD("rate must be >= 0 (0: closed loop) and at most %g messages/s", lim->rate_max);
  if (cfg->rate > 0 && !ab_caps_rate_ok(cfg->rate, cfg->clients, cfg->duration_s)) BAD("rate %g over %u connections for %g s sends less than one message per connection; expected rate >= clients / duration = %g messages/s", cfg->rate, cfg->clients, cfg->duration_s, cfg->clients / cfg->duration_s);
  if (!(cfg->connect_rate >= 0)) BAD("connect_rate must be >= 0 (0: unpaced)");
  if (!(cfg->connect_rate <= lim->connect_rate_max)) BAD("connect_rate over %g connections/s", lim->connect_rate_max);
  if (cfg->requests_per_connection > lim->requests_per_connection_max) BAD("requests_per_connection over %u", lim->requests_per_connection_max);
  if (cfg->requests_per_connection && !ab_caps_runs_churn(p, cfg->execution)) BAD("requests_per_connection does not run execution %s over protocol %s", exec, p->name);
  if (cfg->requests_per_connection && cfg->driver && !cfg->driver->can_reopen) BAD("requests_per_connection needs connections that can be reopened; driver '%s' cannot", cfg->driver->name ? cfg->driver->name : "?");
  if (cfg->requests_per_connection && !lim->churn_shared && cfg->model == AB_MODEL_SHARED && cfg->threads > 1) BAD("requests_per_connection does not run on shared:%u (it does not reopen connections)", cfg->threads);
  if (cfg->interval_s != 0 && !((cfg->interval_s >= 0.01 || cfg->interval_s == cfg->duration_s) && cfg->interval_s <= cfg->duration_s)) BAD("interval must be from 0.01 s to the duration");
  if (ab__interval_count(cfg) > AB_MAX_INTERVALS) BAD("duration / interval is over %d intervals", AB_MAX_INTERVALS);
  if ((double)cfg->clients * cfg->window * cfg->payload > (double)lim->inflight_max) BAD("clients x window x payload exceeds %llu bytes", (unsigned long long)lim->inflight_max);
  if (cfg->ntag_names > AB_TAGS_MAX) BAD("%u tags; a case has at most %d", cfg->ntag_names, AB_TAGS_MAX);
  for (uint32_t i = 0; i < cfg->ntag_names; i++)
    if (cfg->tag_names == NULL || cfg->tag_names[i] == NULL || cfg->tag_names[i][0] == '\0' ||
        strlen(cfg->tag_names[i]) > AB_TAG_NAME_MAX)
      BAD("tag %u: expected a name of 1 to %d bytes", i + 1, AB_TAG_NAME_MAX);
  for (uint32_t i = 0; cfg->tag_rot && i < cfg->ntag_rot; i++)
    if (cfg->tag_rot[i] > cfg->ntag_names) BAD("tag rotation entry %u names no tag", i + 1);
  if ((cfg->ntag_names || cfg->ntag_rot) && !cfg->tagged) BAD("tags given for a case that is not tagged");
  for (uint32_t k = 0; k < cfg->ntag_rot_conns; k++)
    if (cfg->tag_rot_n[k] == 0 || cfg->tag_rot_first[k] + cfg->tag_rot_n[k] > cfg->ntag_rot)
      BAD("connection %u's part of the tag rotation is not inside it", k);
  const ab_driver_t *d = cfg->driver;
  if (d == NULL) BAD("no driver runs this protocol with this execution");
  if (!d->case_open || !d->case_close || !d->loop_open || !d->loop_close || !d->client_start ||
      !d->wake || !d->client_fail || !d->stop) BAD("driver '%s' is incomplete", d->name ? d->name : "?");
  return 0;
#undef BAD
}
