/* lua_engine_result.c -- an ab_result_t into the result table of
 * core.run_case (docs/run-object.md; lua_engine.c lists the fields): the
 * counters by the counters table, the histograms' stats and encodings,
 * TLS session, datagram, host, load model, time series and per-tag
 * fields, and a Lua-driven case's script outcome.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "base/ab_error.h"
#include "engine/engine.h"
#include "lua/lua_core.h"
#include "lua/lua_request.h"
#include "base/procstat.h"
#include "proto/caps.h"
#include "lua/lua_engine_int.h"

/* cjson's null (a NULL light userdata): a field present in the JSON, as
 * null (docs/run-object.md: nulls when count = 0). */
static void push_null(lua_State *L) { lua_pushlightuserdata(L, NULL); }

static void push_stats(lua_State *L, const ab_hist_t *h) {
  static const char *const fields[] = {"min", "p50", "p90", "p95", "p99", "p999", "max", "mean", "stdev"};
  lua_newtable(L);
  lua_pushnumber(L, (double)h->count);
  lua_setfield(L, -2, "count");
  if (h->count == 0) {
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
      push_null(L);
      lua_setfield(L, -2, fields[i]);
    }
    return;
  }
  struct { const char *k; double p; } ps[] = {
      {"p50", 50}, {"p90", 90}, {"p95", 95}, {"p99", 99}, {"p999", 99.9}};
  lua_pushnumber(L, (double)h->min / 1000.0);
  lua_setfield(L, -2, "min");
  for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
    lua_pushnumber(L, (double)ab_hist_percentile(h, ps[i].p) / 1000.0);
    lua_setfield(L, -2, ps[i].k);
  }
  lua_pushnumber(L, (double)h->max / 1000.0);
  lua_setfield(L, -2, "max");
  lua_pushnumber(L, ab_hist_mean(h) / 1000.0);
  lua_setfield(L, -2, "mean");
  lua_pushnumber(L, ab_hist_stdev(h) / 1000.0);
  lua_setfield(L, -2, "stdev");
}

static void push_encoded(lua_State *L, const ab_hist_t *h) {
  size_t need = ab_hist_encode(h, NULL, 0);
  char *buf = malloc(need + 1);
  if (buf == NULL) {
    lua_pushnil(L);
    return;
  }
  ab_hist_encode(h, buf, need + 1);
  lua_pushlstring(L, buf, need);
  free(buf);
}

/* Sets the counters of one group (engine/counters.h) in the table on top
 * of the stack: AB_GROUP_RUN into the result, AB_GROUP_DATAGRAM into its
 * `udp` table. */
static void push_counters(lua_State *L, const ab_result_t *r, int group) {
#define PUSH_COUNTER(name, merge, grp, doc) \
  if ((grp) == group) SETNUM(#name, r->name);
  AB_COUNTERS(PUSH_COUNTER)
#undef PUSH_COUNTER
}

static void push_hists(lua_State *L, const ab_result_t *r) {
  push_stats(L, &r->rtt);
  lua_setfield(L, -2, "rtt_us");
  push_encoded(L, &r->rtt);
  lua_setfield(L, -2, "rtt_histogram");
  push_stats(L, &r->connect);
  lua_setfield(L, -2, "connect_us");
  if (r->handshake.count > 0) {
    push_stats(L, &r->handshake);
    lua_setfield(L, -2, "handshake_us");
    push_encoded(L, &r->handshake);
    lua_setfield(L, -2, "handshake_histogram");
  }
  push_encoded(L, &r->connect);
  lua_setfield(L, -2, "connect_histogram");
}

static void push_tls(lua_State *L, const ab_result_t *r) {
  lua_newtable(L);
  lua_pushstring(L, r->session.tls_version);
  lua_setfield(L, -2, "version");
  lua_pushstring(L, r->session.tls_cipher);
  lua_setfield(L, -2, "cipher");
  lua_pushstring(L, r->session.tls_alpn);
  lua_setfield(L, -2, "alpn");
  lua_pushstring(L, r->session.tls_sni);
  lua_setfield(L, -2, "sni_received");
  lua_pushboolean(L, r->session.tls_resumed);
  lua_setfield(L, -2, "resumed");
  lua_setfield(L, -2, "tls");
}

/* h2, h2c: the h2 table (docs/run-object.md): the AB_GROUP_H2 counters
 * without their h2_ prefix, the SETTINGS sent and the peer's, and the
 * stream cap that applied. */
static void push_settings(lua_State *L, const uint32_t v[4], const char *name) {
  lua_newtable(L);
  SETNUM("max_concurrent_streams", v[0]);
  SETNUM("initial_window_size", v[1]);
  SETNUM("max_frame_size", v[2]);
  SETNUM("header_table_size", v[3]);
  lua_setfield(L, -2, name);
}

static void push_h2(lua_State *L, const ab_case_cfg_t *cfg, const ab_result_t *r) {
  lua_newtable(L);
#define PUSH_H2(name, merge, grp, doc) \
  if ((grp) == AB_GROUP_H2) SETNUM(#name + 3, r->name);
  AB_COUNTERS(PUSH_H2)
#undef PUSH_H2
  if (r->session.h2_ours[0]) push_settings(L, r->session.h2_ours, "settings");
  if (r->session.h2_peer_seen) push_settings(L, r->session.h2_peer, "peer_settings");
  /* streams in flight per connection: the window, capped by the peer */
  uint32_t cap = r->session.h2_cap;
  SETNUM("streams_per_connection", cap && cap < cfg->window ? cap : cfg->window);
  if (cap) SETNUM("peer_max_concurrent_streams", cap);
  lua_setfield(L, -2, "h2");
}

static void push_udp(lua_State *L, const ab_result_t *r) {
  lua_newtable(L);
  SETNUM("lost", r->timed_out);
  SETNUM("late", r->late); /* a run counter, kept here too */
  push_counters(L, r, AB_GROUP_DATAGRAM);
  SETNUM("loss_percent", r->sent ? (double)r->timed_out / (double)r->sent * 100.0 : 0.0);
  lua_newtable(L);
  const ab_udp_buffers_t *bs[2] = {&r->session.udp_client_buffers, &r->session.udp_server_buffers};
  const char *names[2] = {"client", "server"};
  for (int i = 0; i < 2; i++) {
    lua_newtable(L);
    SETNUM("send_requested", bs[i]->send_requested);
    SETNUM("send_granted", bs[i]->send_granted);
    SETNUM("recv_requested", bs[i]->recv_requested);
    SETNUM("recv_granted", bs[i]->recv_granted);
    lua_setfield(L, -2, names[i]);
  }
  lua_setfield(L, -2, "buffers");
  lua_setfield(L, -2, "udp");
}

/* Adds n to field key of the table on top. */
static void add_count(lua_State *L, const char *key, uint64_t n) {
  lua_getfield(L, -1, key);
  double had = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : 0;
  lua_pop(L, 1);
  lua_pushnumber(L, had + (double)n);
  lua_setfield(L, -2, key);
}

/* errors {class -> count}: what the peer did (ab_error.h
 * AB_ERROR_CLASSES); local_errors {name -> count}: our own failures;
 * error_reasons {key -> the first such failure, worded}: for both. */
static void push_errors(lua_State *L, const ab_result_t *r) {
  for (int side = 1; side >= 0; side--) {
    lua_newtable(L);
    for (int i = 0; i < r->nerrors; i++) {
      char key[32];
      if (ab_err_is_peer(r->errors[i].code) != side) continue;
      add_count(L, ab_err_class_key(r->errors[i].code, key, sizeof(key)), r->errors[i].count);
    }
    lua_setfield(L, -2, side ? "errors" : "local_errors");
  }
  lua_newtable(L);
  for (int i = 0; i < r->nerrors; i++) {
    char key[32];
    ab_err_class_key(r->errors[i].code, key, sizeof(key));
    lua_getfield(L, -1, key);
    int have = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (have || r->errors[i].why[0] == '\0') continue;
    lua_pushstring(L, r->errors[i].why);
    lua_setfield(L, -2, key);
  }
  lua_setfield(L, -2, "error_reasons");
}

/* CPU, memory, errors, topology and notes. */
static void push_host(lua_State *L, const ab_case_cfg_t *cfg, const ab_result_t *r) {
  int ncpu = ab_logical_cpus();
  double cpu = r->cpu_wall_s > 0 ? (r->cpu_user_s + r->cpu_sys_s) / r->cpu_wall_s * 100.0 : 0;
  SETNUM("cpu_percent", cpu);
  SETNUM("cpu_user_s", r->cpu_user_s);
  SETNUM("cpu_sys_s", r->cpu_sys_s);
  SETNUM("cpu_machine_percent", cpu / ncpu);
  SETNUM("rss_peak_bytes", r->rss_peak_bytes);
  SETNUM("rss_end_bytes", r->rss_end_bytes);
  SETNUM("rss_base_bytes", r->rss_base_bytes);
  push_errors(L, r);
  SETNUM("loops", r->loops);
  SETNUM("workers", r->workers);
  size_t nmodel;
  const ab_cap_name_t *models = ab_caps_models(&nmodel);
  lua_pushstring(L, ab_caps_name(models, nmodel, cfg->model));
  lua_setfield(L, -2, "model");
  lua_createtable(L, (int)r->loops, 0);
  for (uint32_t i = 0; i < r->loops; i++) {
    lua_pushnumber(L, r->conns_per_loop[i]);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_setfield(L, -2, "connections_per_loop");
  lua_createtable(L, r->nnotes, 0);
  for (int i = 0; i < r->nnotes; i++) {
    lua_pushstring(L, r->notes[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "notes");
  SETNUM("logical_cpus", ncpu);
}

/* What the generator itself cost and how late it was (docs/load-models.md,
 * "Generator-bound runs"): the client loops' busy share (every client run)
 * and, open loop, the generator's part of the send lag, the schedule's
 * precision and the machine's timer floor measured before the run. */
static void push_generator(lua_State *L, const ab_case_cfg_t *cfg, const ab_result_t *r) {
  if (r->busy_loops > 0) {
    SETNUM("client_loop_busy_max", r->loop_busy_max);
    SETNUM("client_loop_busy_mean", r->loop_busy_mean);
  }
  if (!(cfg->rate > 0)) return;
  push_stats(L, &r->gen_lag);
  lua_setfield(L, -2, "generator_lag_us");
  push_encoded(L, &r->gen_lag);
  lua_setfield(L, -2, "generator_lag_histogram");
  lua_pushstring(L, cfg->rate_precision == AB_RATE_SPIN ? "spin" : "sleep");
  lua_setfield(L, -2, "rate_precision");
  if (r->timer_floor_wakes > 0) {
    lua_createtable(L, 0, 5);
    SETNUM("p50", r->timer_floor_p50_us);
    SETNUM("p99", r->timer_floor_p99_us);
    SETNUM("cpu_per_wake", r->timer_floor_cpu_us);
    SETNUM("wakes", r->timer_floor_wakes);
    lua_setfield(L, -2, "timer_floor_us");
  }
}

/* load_model and, open loop, the rate accounting and the raw RTT and send
 * lag views (docs/run-object.md, docs/scenarios.md: rate). */
static void push_load(lua_State *L, const ab_case_cfg_t *cfg, const ab_result_t *r) {
  if (!(cfg->rate > 0)) {
    lua_pushliteral(L, "closed");
    lua_setfield(L, -2, "load_model");
    push_generator(L, cfg, r);
    return;
  }
  lua_pushliteral(L, "open");
  lua_setfield(L, -2, "load_model");
  /* rate_achieved and rate_met come from sent, unsent and rate_asked by
   * one rule, in Lua (arkbench.run.rate_rule), for a single process, each
   * part and the merge of parts alike (issue 27) */
  SETNUM("rate_asked", cfg->rate);
  push_stats(L, &r->rtt_raw);
  lua_setfield(L, -2, "rtt_raw_us");
  push_encoded(L, &r->rtt_raw);
  lua_setfield(L, -2, "rtt_raw_histogram");
  push_stats(L, &r->send_lag);
  lua_setfield(L, -2, "send_lag_us");
  push_encoded(L, &r->send_lag);
  lua_setfield(L, -2, "send_lag_histogram");
  push_generator(L, cfg, r);
}

/* A histogram's percentile p in us, null when empty. */
static void set_pct(lua_State *L, const char *key, const ab_hist_t *h, double p) {
  if (h->count == 0) push_null(L);
  else lua_pushnumber(L, (double)(p >= 100 ? h->max : ab_hist_percentile(h, p)) / 1000.0);
  lua_setfield(L, -2, key);
}

/* intervals = { {t_s, duration_s, sent, completed, errors, timed_out,
 * connections, round_trips_per_s, p50_us, p90_us, p99_us, max_us, [send_lag_p99_us,
 * send_lag_histogram],
 * rtt_histogram}, ... } (docs/run-object.md). */
static void push_intervals(lua_State *L, const ab_result_t *r) {
  lua_createtable(L, (int)r->niv, 0);
  for (uint32_t i = 0; i < r->niv; i++) {
    const ab__iv_t *v = &r->iv[i];
    double t = (double)i * r->interval_s;
    double len = t + r->interval_s <= r->measured_s ? r->interval_s : r->measured_s - t;
    lua_createtable(L, 0, 15);
    SETNUM("t_s", t);
    SETNUM("duration_s", len > 0 ? len : 0);
    SETNUM("sent", v->sent);
    SETNUM("completed", v->completed);
    SETNUM("errors", v->errors);
    SETNUM("timed_out", v->timed_out);
    SETNUM("connections", v->connections);
    SETNUM("round_trips_per_s", len > 0 ? (double)v->completed / len : 0);
    set_pct(L, "p50_us", &v->rtt, 50);
    set_pct(L, "p90_us", &v->rtt, 90);
    set_pct(L, "p99_us", &v->rtt, 99);
    set_pct(L, "max_us", &v->rtt, 100);
    if (r->iv_lag) {
      set_pct(L, "send_lag_p99_us", &r->iv_lag[i], 99);
      push_encoded(L, &r->iv_lag[i]); /* for an exact merge across processes */
      lua_setfield(L, -2, "send_lag_histogram");
    }
    push_encoded(L, &v->rtt);
    lua_setfield(L, -2, "rtt_histogram");
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_setfield(L, -2, "intervals");
}

/* tags = { NAME = {sent, warmup_sent, completed, drained, errors,
 * round_trips_per_s, rtt_us, rtt_histogram}, ... } (engine/tags.h;
 * docs/run-object.md "Tags"), when the case has any tag. */
static void push_tags(lua_State *L, const ab_result_t *r) {
  if (r->tags == NULL || r->ntags == 0) return;
  double per_s = r->measured_s > 0 ? 1.0 / r->measured_s : 0;
  lua_createtable(L, 0, (int)r->ntags);
  for (uint32_t i = 0; i < r->ntags; i++) {
    const ab_tag_stats_t *t = &r->tags[i];
    lua_createtable(L, 0, 8);
    SETNUM("sent", t->sent);
    SETNUM("warmup_sent", t->warmup_sent);
    SETNUM("completed", t->completed);
    SETNUM("drained", t->drained);
    /* every measure message ends in one bucket (the identity) */
    SETNUM("errors", t->sent - t->completed - t->drained);
    SETNUM("non_success", t->non_success);
    SETNUM("round_trips_per_s", (double)t->completed * per_s);
    push_stats(L, &t->rtt);
    lua_setfield(L, -2, "rtt_us");
    push_encoded(L, &t->rtt);
    lua_setfield(L, -2, "rtt_histogram");
    lua_setfield(L, -2, r->tag_names[i]);
  }
  lua_setfield(L, -2, "tags");
}

/* The result table of a run that happened (docs/run-object.md). */
void ab_lua_push_result(lua_State *L, const ab_case_cfg_t *cfg, const ab_result_t *r) {
  lua_newtable(L);
  lua_pushboolean(L, r->ok);
  lua_setfield(L, -2, "ok");
  static const char *const statuses[] = {"ok", "degraded", "failed"};
  lua_pushstring(L, statuses[r->status >= 0 && r->status <= AB_RUN_FAILED ? r->status : AB_RUN_FAILED]);
  lua_setfield(L, -2, "status");
  if (r->error[0]) {
    lua_pushstring(L, r->error);
    lua_setfield(L, -2, "error");
  }
  push_counters(L, r, AB_GROUP_RUN);
  SETNUM("measured_s", r->measured_s);
  /* an interrupt before the measure phase leaves nothing measured */
  double per_s = r->measured_s > 0 ? 1.0 / r->measured_s : 0;
  SETNUM("round_trips_per_s", (double)r->completed * per_s);
  SETNUM("payload_mib_per_s", (double)r->completed * cfg->payload * per_s / 1048576.0);
  SETNUM("connections_per_s", (double)r->connections_opened * per_s);
  SETNUM("connect_phase_s", r->connect_phase_s);
  if (r->measure_start_unix_ns > 0) SETNUM("measure_start_unix_us", (double)r->measure_start_unix_ns / 1e3);
  if (r->conn_id_count > 0) {
    lua_createtable(L, 0, 4);
    SETNUM("count", (double)r->conn_id_count);
    SETNUM("min", r->conn_id_min);
    SETNUM("max", r->conn_id_max);
    SETNUM("sum", (double)r->conn_id_sum);
    lua_setfield(L, -2, "connection_ids");
  }
  SETNUM("tls_handshakes", r->session.tls_handshakes);
  SETNUM("tls_resumed", r->session.tls_resumed_count);
  if (r->interrupted) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "interrupted");
  }
  push_hists(L, r);
  /* the stack each coroutine had (the key's value or the default) */
  if (cfg->execution == AB_EXEC_COROUTINE)
    SETNUM("coroutine_stack", cfg->task_stack ? cfg->task_stack : ab_caps_limits()->coroutine_stack_default);
  const ab_proto_cap_t *pcap = ab_caps_protocol(cfg->protocol);
  if (pcap && pcap->tls) push_tls(L, r); /* every TLS row (h2 too) */
  if (pcap && pcap->streams) push_h2(L, cfg, r);
  push_host(L, cfg, r);
  push_load(L, cfg, r);
  push_intervals(L, r);
  if (cfg->protocol == AB_PROTO_UDP) push_udp(L, r);
  ab_lua_push_http(L, cfg, r);
  {
    /* request mode: the successful replies alone (every run, so that the
     * processes of one case merge it whole) */
    lua_getfield(L, -1, "http");
    if (lua_istable(L, -1)) {
      push_stats(L, &r->rtt_ok);
      lua_setfield(L, -2, "rtt_ok_us");
      push_encoded(L, &r->rtt_ok);
      lua_setfield(L, -2, "rtt_ok_histogram");
    }
    lua_pop(L, 1);
  }
  push_tags(L, r);
  /* bytes both ways over the measured interval (counters.h) */
  SETNUM("transfer_mib_per_s", (double)(r->bytes_received) * per_s / 1048576.0);
  SETNUM("transfer_sent_mib_per_s", (double)(r->bytes_sent) * per_s / 1048576.0);
}

/* execution = "lua": a script error makes status script_error with the
 * whole message (file:line, traceback); payload MiB/s counts the reply
 * bytes actually read. */
void ab_lua_push_script_outcome(lua_State *L, const ab_lua_exec_t *lx, const ab_result_t *r) {
  const char *script_msg = NULL;
  int script_errors = ab_lua_exec_script_errors(lx, &script_msg);
  if (script_errors > 0) {
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "ok");
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "script_error");
    lua_pushstring(L, script_msg ? script_msg : "script error");
    lua_setfield(L, -2, "error");
    /* the script's failure is ours, not the peer's */
    lua_getfield(L, -1, "local_errors");
    SETNUM("ESCRIPT", script_errors);
    lua_pop(L, 1);
  }
  SETNUM("payload_mib_per_s", r->measured_s > 0 ? (double)ab_lua_exec_reply_bytes(lx) / r->measured_s / 1048576.0 : 0);
}
