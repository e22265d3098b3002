/* engine.h -- runs one benchmark case in this process (README.md "Topologies"; docs/run-object.md).
 *
 * ab_run_case() builds the topology (loops on their own threads, a worker
 * pool for pool:N), connects every client to this process's own echo
 * server over loopback, runs warm-up, the measured interval and the drain,
 * and fills an ab_result_t.  It blocks the calling thread for about
 * warmup + duration (+ drain) seconds.  The calling thread only coordinates
 * and samples CPU; all socket IO happens on the loop threads.
 *
 * Timing: RTT per message, CLOCK_MONOTONIC, from just before the message's
 * first byte is handed to the socket (open loop, cfg->rate > 0: from its
 * intended send time; the raw view and the send lag beside) to the read
 * that completes its echo; one histogram per loop and interval of the
 * time series, merged at the end.  See docs/run-object.md for
 * the accounting identity.
 */
#ifndef AB_ENGINE_H
#define AB_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/histogram.h"
#include "proto/caps.h" /* AB_PROTO_*, AB_EXEC_*, AB_FRAMING_*, AB_MODEL_* */
#include "engine/counters.h"
#include "engine/driver.h"
#include "engine/tags.h"
#include "engine/window_state.h"
#include "proto/transport.h"

/* One finished interval of the measure phase while the run goes on
 * (cfg->on_interval; live.c): the loops' counts and RTTs of interval
 * `index` (of `count`), merged.  The last interval is not given: it closes
 * with the run (its run object has every interval). */
typedef struct {
  uint32_t index, count;
  double t_s, duration_s;       /* from the start of the measure phase */
  uint64_t sent, completed, errors, timed_out;
  double round_trips_per_s;     /* completed / duration_s */
  double p50_us, p99_us, max_us; /* RTT (open loop: corrected); 0 if none */
} ab_live_interval_t;

/* Where a run is before its measure phase (cfg->on_phase): connecting
 * (`done` of `clients` connects finished) or warming up (`t_s` of
 * `duration_s` gone). */
enum { AB_LIVE_CONNECT = 1, AB_LIVE_WARMUP = 2 };
typedef struct {
  int phase;                    /* AB_LIVE_CONNECT or AB_LIVE_WARMUP */
  uint32_t done, clients;       /* connect: first connects finished, of */
  double t_s, duration_s;       /* since the phase began; warm-up's length */
} ab_live_phase_t;

typedef struct {
  int protocol;      /* AB_PROTO_* */
  int framing;       /* AB_FRAMING_* */
  int execution;     /* AB_EXEC_* */
  uint32_t payload;  /* bytes per message, 1 .. 16 MiB (below 16: the
                        small form, proto/framing.h) */
  uint32_t clients;  /* connections, >= 1 */
  uint32_t window;   /* messages in flight per connection, >= 1 */
  int model;         /* AB_MODEL_* */
  uint32_t threads;  /* N of sharded:N / shared:N / pool:N */
  uint64_t work;     /* xorshift iterations per echo, server side */
  double warmup_s;   /* >= 0 */
  double duration_s; /* > 0 */
  double timeout_s;  /* per-message reply timeout, > 0 */
  double connect_timeout_s; /* a connect with no answer fails after this
                               (ECONNTIMEDOUT); 0 = timeout_s */
  double rate;       /* open loop: messages/s for the whole case, spread
                        evenly over the clients; 0 = closed loop */
  double interval_s; /* time series interval, 0.01 .. duration (0: 1 s) */
  /* open loop: how the schedule is kept (rate.c): AB_RATE_SLEEP sleeps to
   * each instant (one wake serves what is due by then); AB_RATE_SPIN
   * sleeps to a calibrated margin before it and spins (a core per loop) */
  int rate_precision;
  /* churn: after this many round trips a connection closes cleanly and a
   * new one opens in its place (same id, same share of the load); 0 =
   * connections stay open.  Needs a driver that can reopen (can_reopen),
   * not shared:N with N > 1 (docs/execution.md, "Connection churn"). */
  uint32_t requests_per_connection;
  /* connections opened per second for the whole case (each loop paces its
   * share), spaced evenly; 0 = as fast as the listen backlog allows (at
   * most CONNECTS_IN_FLIGHT per loop at once, connect.c) */
  double connect_rate;
  uint32_t task_stack; /* bytes per stack of the driver's stackful tasks
                          (its execution's stack key, docs/scenarios.md;
                          checked by the host layer), 0 = its default */
  /* role: AB_ROLE_BOTH runs both ends here over loopback; AB_ROLE_CLIENT
   * connects to `addr` (scenario key target); AB_ROLE_SERVER listens on
   * `addr` (port 0 = any; several loops share it with SO_REUSEPORT), calls
   * on_listening(port, arg) once every loop listens, and serves until
   * *stop becomes non-zero (checked every 20 ms; set it from a signal). */
  int role;
  struct sockaddr_storage addr;
  const char *host;        /* Host / verify name for the client (default
                              "127.0.0.1"; the target's host) */
  ab_transport_opts_t transport; /* the drivers' (proto/transport.h) */
  void (*on_listening)(int port, void *arg);
  void *on_listening_arg;
  volatile int *stop;
  /* client roles: polled by the coordinator (every 10 ms while it waits);
   * non-zero ends the run at once, keeping what was measured: no more
   * sends, replies drained for at most min(timeout, 0.5 s), the rest in
   * flight unfinished, out->interrupted set.  NULL: never.  Called on the
   * coordinator thread; must be cheap (a signal flag). */
  int (*interrupted)(void);
  /* tags (engine/tags.h): non-zero lets messages carry tags (each loop
   * keeps AB_TAGS_MAX tag stats); tag_names[0 .. ntag_names) get the ids
   * 1 .. first, the driver may register more at run time; with ntag_rot >
   * 0, message seq's tag is tag_rot[seq % ntag_rot] (0: none; request
   * mode), else the one the driver's grant carries */
  int tagged;
  const char *const *tag_names;
  uint32_t ntag_names;
  const uint8_t *tag_rot;
  uint32_t ntag_rot;
  /* with ntag_rot_conns > 0 each connection rotates through its own part
   * of tag_rot: connection k (mod ntag_rot_conns) through the
   * tag_rot_n[k] entries from tag_rot_first[k] (request = function(i,
   * conn)) */
  const uint32_t *tag_rot_first, *tag_rot_n;
  uint32_t ntag_rot_conns;
  /* client roles: called on the coordinator thread with each finished
   * interval but the last, shortly after it ends (live.c); NULL: none.
   * Must not block (a write to a non-blocking pipe). */
  void (*on_interval)(const ab_live_interval_t *iv, void *arg);
  void *on_interval_arg;
  /* client roles: called on the coordinator thread about every 250 ms
   * while the clients connect and while the warm-up goes (arg is
   * on_interval_arg); NULL: none.  Must not block. */
  void (*on_phase)(const ab_live_phase_t *p, void *arg);
  /* who drives the connections: a row of the driver registry
   * (ab_driver_for) or one the host layer builds; required */
  const ab_driver_t *driver;
  /* processes = N (docs/scenarios.md): this process runs a part of the
   * case's connections.  Its connection i (0 .. clients-1) is the case's
   * connection id_base + i * id_stride of clients_total (0, 1, clients when
   * the case runs in one process): message headers carry that id, the
   * open-loop schedule spreads the phases over all clients_total, and the
   * source address is picked by it.  rate is this process's share. */
  uint32_t id_base, id_stride, clients_total;
  /* client source addresses (scenario key bind, or chosen past the
   * ephemeral port range): connection id uses bind[id % nbind]; nbind 0:
   * the kernel's choice */
  const struct sockaddr_storage *bind;
  uint32_t nbind;
  /* server role: set SO_REUSEPORT even with one loop, and join a port
   * another process holds (serve --processes N) */
  int reuse_port;
  /* processes = N: called on the coordinator thread once every client
   * connected (stage 1) and once the warm-up drained (stage 2); blocks
   * until the whole group got there and returns the CLOCK_MONOTONIC time
   * (ns) the next phase starts at, common to every process (0: now), or
   * a negative code when the group broke (the run ends with that error).
   * NULL: no group. */
  int64_t (*sync)(int stage, void *arg);
  void *sync_arg;
} ab_case_cfg_t;

enum { AB_ROLE_BOTH = 0, AB_ROLE_CLIENT = 1, AB_ROLE_SERVER = 2 };
enum { AB_RATE_SLEEP = 0, AB_RATE_SPIN = 1 };

#define AB_MAX_ERROR_CLASSES 32
#define AB_MAX_NOTES 8
/* the longest time series: duration / interval (each interval holds a
 * histogram per loop, ~17 KiB) */
#define AB_MAX_INTERVALS 2000

typedef struct {
  int code;        /* ab_error.h code or negated errno */
  uint64_t count;
  char why[200];   /* the first failure of this code, with context ("" if
                      none was given): the run object's error_reasons */
} ab_error_count_t;

/* What a run came to (docs/run-object.md, "Status"): measured without a
 * fault; measured with faults (errors, timeouts, unfinished messages,
 * reconnects: every number is kept); or failed (nothing completed, or
 * every reply was a codec status failure, or the run itself
 * broke: setup, connect, a drain or merge that did not finish). */
enum { AB_RUN_OK = 0, AB_RUN_DEGRADED = 1, AB_RUN_FAILED = 2 };

struct ab_result_s {
  int ok;                 /* 1: status AB_RUN_OK and not interrupted */
  int status;             /* AB_RUN_OK, AB_RUN_DEGRADED or AB_RUN_FAILED */
  char error[512];        /* first error, with context; "" when none */
  AB_COUNTER_FIELDS      /* sent, completed, ... (engine/counters.h) */
  uint64_t reply_codes[AB_REPLY_CODES]; /* replies per status code (counters.h) */
  double measured_s;      /* the measured interval (deadline - start; an
                             interrupted run: interrupt - start) */
  int interrupted;        /* cfg->interrupted() ended the run early */
  double cpu_wall_s;      /* wall time between the two CPU samples */
  double cpu_user_s, cpu_sys_s;
  uint64_t rss_peak_bytes, rss_end_bytes;
  uint64_t rss_base_bytes;  /* resident when the run began, before its
                               loops, clients and buffers were made */
  ab_hist_t rtt;          /* measure-phase RTTs (completed + drained), ns */
  ab_hist_t connect;      /* per-connection connect time, ns */
  ab_error_count_t errors[AB_MAX_ERROR_CLASSES];
  int nerrors;
  uint32_t loops, workers;
  uint32_t *conns_per_loop;  /* loops entries, malloc'd; ab_result_free() */
  char notes[AB_MAX_NOTES][160];
  int nnotes;
  uint64_t work_sink;     /* folded result of the server work */
  ab_hist_t handshake;     /* per-connection session setup after the
                              connect (the driver's handshakes), ns */
  ab_session_info_t session; /* the drivers' (proto/transport.h) */
  /* open loop: rtt above is from the intended send time (corrected);
   * these are the RTT from the actual send and actual - intended, ns */
  ab_hist_t rtt_raw, send_lag;
  /* open loop: the generator's part of send_lag (a send's lag counted from
   * the reply that freed its slot when the window was full), ns */
  ab_hist_t gen_lag;
  /* the loop threads that run clients: their busy share of the measure
   * phase (the wall time not blocked waiting for events / wall, spinning
   * of rate_precision "spin" left out),
   * the highest and the mean over busy_loops loops; busy_loops 0: none */
  double loop_busy_max, loop_busy_mean;
  uint32_t busy_loops;
  /* open loop: the machine's timer floor, measured before the run
   * (engine/calib.c): a bare timerfd wake's lateness p50/p99 and its CPU,
   * us; timer_floor_wakes 0: not measured */
  double timer_floor_p50_us, timer_floor_p99_us, timer_floor_cpu_us;
  uint32_t timer_floor_wakes;
  /* request mode: the RTTs of the completed replies (inside the measure
   * phase) whose status is in the success set, ns */
  ab_hist_t rtt_ok;
  /* the time series: niv intervals of interval_s from the start (the last
   * also holds what was counted after the deadline; an interrupted run
   * has only the intervals begun before the interrupt), merged across
   * loops; malloc'd, ab_result_free().  iv_lag: open loop only, else NULL */
  ab__iv_t *iv;
  ab_hist_t *iv_lag;
  uint32_t niv;
  double interval_s;
  /* tags (cfg->tagged): ntags names and their stats, merged across loops;
   * tags is malloc'd (AB_TAGS_MAX entries) or NULL, ab_result_free() */
  uint32_t ntags;
  char tag_names[AB_TAGS_MAX][AB_TAG_NAME_MAX + 1];
  ab_tag_stats_t *tags;
  double connect_phase_s; /* from the connect command until every client's
                             first connect (and handshakes) finished */
  int64_t measure_start_unix_ns; /* CLOCK_REALTIME at the measure phase's
                                    start (0: it did not start) */
  /* the case's connection ids this process's clients had (a part or a
   * shard has a range of them): how many, the least, the largest and
   * their sum; count 0 without clients */
  uint64_t conn_id_count, conn_id_sum;
  uint32_t conn_id_min, conn_id_max;
};

/* Checks cfg; returns 0 or AB_ECONFIG with a sentence in err[0..errlen). */
int ab_case_check(const ab_case_cfg_t *cfg, char *err, size_t errlen);

/* Runs the case.  Returns 0 when the run happened (even with counted
 * errors: see out->ok), or a negative code when it could not start
 * (out->error says why).  out must be freed with ab_result_free(). */
int ab_run_case(const ab_case_cfg_t *cfg, ab_result_t *out);

void ab_result_free(ab_result_t *r);

/* Adds n to the count of error code `code` (shared by loops and merge);
 * why (may be NULL) is kept when it is the code's first. */
void ab__errors_add(ab_error_count_t *tab, int *n, int code, uint64_t count, const char *why);

#endif
