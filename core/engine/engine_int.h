/* engine_int.h -- shared internals of the engine and its drivers (engine.c,
 * pool.c, and every core/drivers file through drivers/drivers_int.h).  Not a
 * public header.  The engine calls drivers only through cfg->driver
 * (engine/driver.h).
 *
 * Threads: each ab__loop_t runs one uv_loop_t on its own thread; the thread
 * that called ab_run_case() is the coordinator.  The coordinator talks to a
 * loop only through loop->ctl (uv_async) plus the command fields guarded by
 * eng->mu; a loop reports progress by bumping eng->reached[stage] under
 * eng->mu and signalling eng->cv.  Everything else a loop touches is its own:
 * connections, buffers, histograms and counters, so the per-message path
 * takes no lock (pool:N's hand-off to the work pool is the one exception,
 * and it is the model being measured).
 *
 * shared:N (N > 1, eng->shared): the loops are N threads serving one
 * reactor set (io/reactor_shared.c; shared.c).  A client is allocated on
 * loop i mod N (its `home`, which connects it, wakes it at phase starts,
 * sweeps its timeouts, closes its handle -- queued there by the thread it
 * ended on, drivers/home_close.c -- and reopens it), but any loop thread
 * may run its next socket event (and whatever the driver resumes in it).  Whoever runs a connection holds its lock and
 * points its `loop` at its own loop first (ab__client_take, or the reactor
 * for an event): so a loop's fields -- counters, histograms, time series,
 * buffers, phase -- are still touched by its own thread only, and a
 * connection's by one thread at a time.  The phase fields of every loop are
 * set by the coordinator before a command is sent (engine.c), so a
 * connection sees the same phase on whichever loop it runs.
 */
#ifndef AB_ENGINE_INT_H
#define AB_ENGINE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <uv.h>

#include "base/buf.h"
#include "io/reactor.h"
#include "engine/driver.h"
#include "engine/engine.h"
#include "base/histogram.h"
#include "proto/framing.h"
#include "engine/window_state.h"

typedef struct ab__engine_s ab__engine_t;
typedef struct ab__loop_s ab__loop_t;
typedef struct ab__pool_s ab__pool_t;
/* A server connection: the drivers' own (drivers/drivers_int.h); the
 * engine only hands it to the driver's accept and work_done entries. */
typedef struct ab__sconn_s ab__sconn_t;
/* The drivers' per-loop and per-case parts (drivers/drivers_int.h), made
 * by the driver's loop_open / case_open and freed by loop_close /
 * case_close; opaque to the engine. */
typedef struct ab__dloop_s ab__dloop_t;
typedef struct ab__dcase_s ab__dcase_t;

/* Loop stages, in order; the coordinator waits for every loop to reach one. */
enum {
  AB__ST_LISTENING = 0, /* listener bound, port known */
  AB__ST_CONNECTED,     /* every client's connect finished (ok or not) */
  AB__ST_WARM_DONE,     /* warm-up over and its messages drained */
  AB__ST_MEASURE_DONE,  /* measure over and drained (or drain timed out) */
  AB__ST_COUNT
};

/* Commands, coordinator -> loop. */
/* AB__CMD_END: an interrupt; the measure phase ends at t0 (no more sends),
 * replies are drained until t1. */
enum { AB__CMD_NONE = 0, AB__CMD_CONNECT, AB__CMD_WARMUP, AB__CMD_MEASURE,
       AB__CMD_END, AB__CMD_STOP };

/* What a loop is doing with its clients. */
enum {
  AB__PH_IDLE = 0,
  AB__PH_WARMUP,   /* sending warm-up messages until warm_deadline */
  AB__PH_WARM_DRAIN,
  AB__PH_MEASURE,  /* sending measure messages until deadline */
  AB__PH_DRAIN,    /* deadline passed; waiting for replies */
  AB__PH_DONE,
  AB__PH_STOPPING
};

/* A unit of server work handed to the pool:N pool; `done` runs on the
 * loop thread when the work has been done. */
typedef struct ab__job_s {
  void (*done)(struct ab__job_s *job);
} ab__job_t;

/* The part of a client connection the engine and the window own: its
 * identity and its in-flight slots.  A driver's client embeds it as its
 * first member (so a cast converts between the two) and gives the size of
 * the whole in ab_driver_t.client_size; the engine allocates each loop's
 * clients as one array of that stride (ab__loop_client) and touches only
 * this header.  The socket, buffers and protocol state are the driver's
 * (drivers/drivers_int.h). */
typedef struct ab__client_s {
  /* what every message touches first, kept together */
  ab__loop_t *loop;
  uint32_t id;                  /* global connection id */
  int alive;                    /* connected and not failed */
  int closing;
  ab__win_t win;                /* in-flight slots and issuing (window.h) */
  /* reopening a lost stream connection (sweep.c; docs/execution.md) */
  uint8_t reopen;               /* lost: to be reopened (1: its handle
                                   still closing, 2: closed) at reopen_at
                                   (0: at once) */
  uint8_t reopening;            /* its reopen's connect is under way */
  uint8_t planned;              /* churn, or the server's announced close
                                   (server_closes): the reopen replaces a
                                   connection closed on purpose (not a
                                   reconnect) */
  uint32_t fails;               /* losses in a row with no reply between */
  /* a first connect that failed is retried within the connect phase
   * (connect.c, ab__client_setup_error) */
  uint8_t setup_retry;          /* the failure just reported is retried */
  uint8_t first_pending;        /* its first connect is still being tried */
  uint8_t setup_fails;          /* its first connect's failures so far */
  uint64_t reopen_at;           /* ns */
  uint64_t mark_seq;            /* win.oldest_seq when it last came up */
  /* shared:N: the loop it is allocated on, and the lock held by whichever
   * thread runs it (engine_int.h's header comment) */
  ab__loop_t *home;
  int close_later;              /* closed off its home thread: the home
                                   closes the handle (home_close.c) */
  pthread_mutex_t mu;
} ab__client_t;

struct ab__loop_s {
  ab__engine_t *eng;
  uint32_t index;
  uv_thread_t thread;
  uv_loop_t loop;
  uv_async_t ctl;
  uv_async_t pool_done;         /* pool:N: work pool returns */
  uv_poll_t rset_poll;          /* shared:N: the reactor set is ready */
  ab_reactor_t *reactor;        /* shared:N: the drivers' reactor of this
                                   loop on the set (dloop_new sets it) */
  uv_async_t reports;           /* shared:N: connects finished elsewhere */
  atomic_uint reports_pending;
  uv_timer_t phase_timer;       /* fires at the phase deadline */
  int sweep_fd;                 /* timerfd of the timeout sweep (sweep.c),
                                   -1 when the loop has no clients */
  uv_poll_t sweep_poll;
  uint64_t sweep_at;            /* when it is armed for, ns (0: not) */
  int port;                     /* the loop's server port (role both/server) */
  ab__dloop_t *d;               /* the driver's part of this loop */
  /* the case's shape, copied here for the per-message path */
  uint64_t payload;             /* cfg->payload */
  uint32_t window;              /* cfg->window */
  uint32_t pfx;                 /* length prefix bytes (0 for raw framing) */
  size_t fsz;                   /* pfx + payload: one frame */
  int window_pow2;              /* window is a power of two */
  uint64_t timeout_ns;          /* cfg->timeout_s: a reply later is late */
  void *drv_state;              /* a scripted driver's per-loop state */
  int in_connect_more;          /* ab__loop_connect_more is on the stack */

  unsigned char *clients;       /* this loop's clients, client_size apart
                                   (ab__loop_client) */
  size_t client_size;           /* the driver's client_size (at least
                                   sizeof(ab__client_t)) */
  uint32_t nclients;
  uint32_t connects_pending;    /* connects not finished yet */
  uint32_t ready_clients;       /* connected (and handshaken) clients */
  uint32_t connects_started;    /* clients[0..started) have been started */
  uint32_t connects_cap;        /* connects in flight at most (connect.c) */
  /* connect_rate: this loop's share, spaced from connect_t0 (connect.c) */
  double connect_gap_ns;        /* ns between two starts; 0: no pacing */
  uint64_t connect_t0;
  uv_timer_t connect_pace;      /* wakes the loop for its next start */
  struct sockaddr_storage connect_addr; /* v4 or v6 */

  /* atomic (plain moves on x86-64 when read): shared:N's coordinator
   * sets it, after the phase's times, while other loop threads may read it
   * (ab__loop_phase_set in loop.c) */
  _Atomic int phase;
  uint64_t warm_deadline_ns;
  uint64_t start_ns, deadline_ns, drain_end_ns;
  uint64_t warm_inflight;       /* warm-up messages in flight */
  uint64_t meas_inflight;       /* measure messages in flight */

  /* open loop (rate.c's rate timer): a timerfd armed at the loop's
   * next intended send; its messages, across the loop's clients, in
   * time order: cursor c is client c mod nclients' message c / nclients */
  int open_loop;                /* cfg->rate > 0 */
  int rate_fd;                  /* timerfd, -1 when closed loop */
  uv_poll_t rate_poll;
  uint64_t rate_cursor;
  uint64_t rate_early_ns;       /* the timer fires this early; the rest is
                                   waited out on the clock (rate.c) */
  uint64_t rate_margin_ns;      /* rate_precision "spin": how long before
                                   an instant the timer fires (from the
                                   timer floor, engine/calib.c) */
  uint64_t rate_spin_ns;        /* time spent spinning (rate_precision
                                   "spin"), not counted as busy */
  /* the loop's busy share of the measure phase (loop.c): the wall time
   * not blocked waiting for events over the wall time, from the measure
   * command to the deadline */
  uint64_t busy_idle0_ns, busy_wall0_ns, busy_spin0_ns;
  double busy_share;            /* -1: not measured */
  int rate_edge;                /* 1 while rate.c sends the deadline's edge:
                                   grants then take messages intended
                                   before the deadline, after it (window.h) */
  /* the time series of the measure phase: iv_n intervals of iv_ns from
   * start_ns, the current one iv_i (ends at iv_end_ns); window.h */
  ab__iv_t *iv;
  ab_hist_t *iv_lag;            /* open loop: per interval send lag, ns */
  uint32_t iv_n, iv_i;
  uint64_t iv_ns, iv_end_ns;
  /* with cfg->on_interval (live.c): a timer at each interval's end moves
   * iv_i on, and iv_done (release) says intervals [0, iv_done) are closed:
   * nothing writes them again, so the coordinator may read them */
  uv_timer_t live_timer;
  atomic_uint iv_done;

  /* per-loop results, merged by the coordinator; rtt is filled from the
   * intervals' histograms when the loop stops */
  ab_hist_t rtt, connect, handshake;
  ab_hist_t rtt_ok;             /* request mode: successful replies' RTT */
  ab_hist_t rtt_raw, send_lag;  /* open loop: RTT from the actual send,
                                   actual - intended send time; ns */
  ab_hist_t gen_lag;            /* open loop: the generator's part of the
                                   send lag (window.h ab__win_stamp), ns */
  AB_COUNTER_FIELDS             /* sent, completed, ... (engine/counters.h) */
  /* client: whole replies whose status says the request failed (a driver
   * counts them, and adds their error classes to errors[]) */
  uint64_t status_failures;
  uint64_t reply_codes[AB_REPLY_CODES]; /* counters.h */
  ab_error_count_t errors[AB_MAX_ERROR_CLASSES];
  int nerrors;
  /* tags (engine/tags.h; cfg->tagged, else NULL): AB_TAGS_MAX stats, tag
   * id i + 1 at [i]; request mode's rotation of tags by sequence */
  ab_tag_stats_t *tags;
  const uint8_t *tag_rot;
  uint32_t ntag_rot;
  char first_error[256];
  uint64_t work_sink;

  /* command mailbox (guarded by eng->mu) */
  int cmd;
  uint64_t cmd_t0, cmd_t1;
};

struct ab__engine_s {
  const ab_case_cfg_t *cfg;
  ab__loop_t *loops;
  uint32_t nloops;
  ab__pool_t *pool;             /* pool:N with N > 1, else NULL */
  int shared;                   /* shared:N with N > 1 */
  ab_reactor_set_t *rset;       /* shared:N: the one reactor set */
  uint64_t max_frame;           /* largest frame a server accepts */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint32_t reached[AB__ST_COUNT];
  atomic_uint connects_done;    /* first connects finished, every loop (the
                                   coordinator's progress check) */
  int aborted;                  /* ab__engine_abort: stop waiting now */
  int interrupted;              /* cfg->interrupted() said so (coordinator) */
  const ab_driver_t *drv;       /* cfg->driver */
  ab_tag_names_t tags;          /* the case's tag names (engine/tags.h) */
  ab__dcase_t *dc;              /* the driver's part of this case */
  /* the live time series (live.c; coordinator only): the measure phase's
   * start, the intervals given to cfg->on_interval so far, a scratch
   * histogram for merging one */
  uint64_t live_t0;
  uint32_t live_done;
  ab_hist_t *live_rtt;
};

/* Client i of loop l (i < l->nclients). */
static inline ab__client_t *ab__loop_client(const ab__loop_t *l, uint32_t i) {
  return (ab__client_t *)(void *)(l->clients + (size_t)i * l->client_size);
}

/* shared:N: loop l's thread takes client c (its lock; c now runs on l)
 * and gives it back.  No-ops in the other models. */
static inline void ab__client_take(ab__loop_t *l, ab__client_t *c);
static inline void ab__client_give(ab__loop_t *l, ab__client_t *c);

/* live.c: the live time series (cfg->on_interval).  Loop side, on the
 * loop's thread: open at setup, start at the measure command (after its
 * phase fields are set), close at stop.  Coordinator side: collect gives
 * cfg->on_interval every interval all loops closed since the last call;
 * next_ns says when to call it again (deadline when there is nothing to
 * give). */
void ab__live_open(ab__loop_t *l);
void ab__live_start(ab__loop_t *l);
void ab__live_close(ab__loop_t *l);
void ab__live_collect(ab__engine_t *eng);
uint64_t ab__live_next_ns(const ab__engine_t *eng, uint64_t deadline);
void ab__live_free(ab__engine_t *eng);

/* calib.c: open loop, before the loop threads start (coordinator): the
 * timer floor into out->timer_floor_*, and each loop's rate_margin_ns. */
void ab__rate_calibrate(ab__engine_t *eng, ab_result_t *out);

/* shared.c: shared:N's reactor set and the loops' part in it */
int ab__shared_open(ab__engine_t *eng);
/* Each loop thread serves the set (after uv_loop_init; before loop_open). */
int ab__shared_loop_open(ab__loop_t *l);
void ab__shared_loop_stop(ab__loop_t *l);
void ab__shared_close(ab__engine_t *eng);
/* Whether a client of l still has a message in flight (each one taken in
 * turn; the caller holds no client). */
int ab__shared_busy(ab__loop_t *l);
/* shared:N: a drain phase of l ends when none of its clients has a message
 * in flight (busy 0); from l's thread, holding no client (loop.c). */
void ab__loop_drained(ab__loop_t *l, int busy);

/* series.c: the time series' bookkeeping.  The number of intervals of a
 * case's series; a loop's series allocated at setup; an interrupt at t0
 * cutting it to the intervals begun before t0; the result's allocated for
 * the merge; a loop's intervals added into the result's. */
uint32_t ab__interval_count(const ab_case_cfg_t *cfg);
int ab__series_alloc(ab__loop_t *l, const ab_case_cfg_t *cfg);
void ab__series_cut(ab__loop_t *l, uint64_t t0);
int ab__series_result_alloc(const ab__engine_t *eng, ab_result_t *out);
void ab__series_merge(ab_result_t *out, const ab__loop_t *l);

/* setup.c: the loops before and after they run (coordinator thread).
 * alloc: the loops, their clients and windows; open: each loop's libuv
 * loop, engine handles and driver part (*started counts the uv_loops
 * initialised); abandon: setup failed part way, close and free it all.
 * setup_error writes r's sentence into out->error and returns r. */
int ab__loops_alloc(ab__engine_t *eng, ab_result_t *out);
int ab__loops_open(ab__engine_t *eng, uint32_t workers, uint32_t *started, ab_result_t *out);
void ab__loops_abandon(ab__engine_t *eng, uint32_t started);
int ab__setup_error(ab_result_t *out, int r);
void ab__loop_free_clients(ab__loop_t *l);

/* loop.c: a loop's side of the phases.  open_handles / open_pool_done at
 * setup; close_now closes a loop's handles without its thread (setup
 * failed); phase_set sets the phase fields of a command (from the loop's
 * thread, or shared:N the coordinator's before sending it); wake is the
 * driver's wake of c from its home loop l; ms_until rounds a clock value
 * up to a libuv timer's milliseconds. */
void ab__loop_open_handles(ab__loop_t *l);
void ab__loop_open_pool_done(ab__loop_t *l);
void ab__loop_close_now(ab__loop_t *l);
void ab__loop_phase_set(ab__loop_t *l, int cmd, uint64_t t0, uint64_t t1);
void ab__loop_wake(ab__loop_t *l, ab__client_t *c);
uint64_t ab__ms_until(uint64_t t_ns);

/* rate.c: the open loop's rate timer.  open at setup (0 or an error);
 * begin at a sending phase's start t0 (every schedule restarts there);
 * end at the measure deadline (counts what was not sent). */
int ab__rate_open(ab__loop_t *l);
void ab__rate_begin(ab__loop_t *l, uint64_t t0);
void ab__rate_end(ab__loop_t *l);

/* merge.c: after STOP, every loop merged into out and closed, then the
 * driver's case (0, or < 0 when out of memory); judge sets out->status,
 * out->ok and the reason (fatal: the run itself broke). */
int ab__merge_loops(ab__engine_t *eng, ab_result_t *out);
void ab__judge(const ab__engine_t *eng, ab_result_t *out, int fatal);

/* engine.c (tag ids, abort, stages), merge.c (loop_error), loop.c
 * (check_progress), connect.c (the connects) */
/* The id (1 .. AB_TAGS_MAX) of tag name[0..len) for this case, registered
 * when new (from any loop thread; once per new name, never per message).
 * AB_EINVAL for a name that is empty, longer than AB_TAG_NAME_MAX or holds
 * a control byte; AB_ECONFIG when the case already has AB_TAGS_MAX tags;
 * AB_EINVAL too when the case is not tagged. */
int ab__tag_id(ab__engine_t *eng, const char *name, size_t len);
/* From any loop thread: the run cannot go on (a script error): the
 * coordinator stops waiting for phases and deadlines and ends the run. */
void ab__engine_abort(ab__loop_t *l);
void ab__loop_reached(ab__loop_t *l, int stage);
void ab__loop_error(ab__loop_t *l, int code, const char *what);
void ab__loop_check_progress_drain(ab__loop_t *l);
/* After replies were completed: ends a drain phase whose last message came
 * back.  Every read calls it, so outside a drain it is one load. */
static inline void ab__loop_check_progress(ab__loop_t *l) {
  int ph = atomic_load_explicit(&l->phase, memory_order_relaxed);
  if (ph == AB__PH_WARM_DRAIN || ph == AB__PH_DRAIN) ab__loop_check_progress_drain(l);
}
/* A client's connect (and handshakes) finished, well or not: drivers call
 * this once per client started.  Reaches the CONNECTED stage after the
 * last one, else starts the next paced connect (never recursively: a
 * driver may call it from inside client_start). */
void ab__loop_connect_done(ab__loop_t *l);
/* As ab__loop_connect_done for a client whose home is `home`, from loop
 * `running`'s thread (shared:N: a handshake finishes on any thread; the
 * home is told through its async handle). */
void ab__loop_connect_done_on(ab__loop_t *home, ab__loop_t *running);
/* Starts client connects up to the per-loop limit in flight. */
void ab__loop_connect_more(ab__loop_t *l);
/* CONNECT at t0: the loop starts connecting its clients (connect.c). */
void ab__loop_connect_start(ab__loop_t *l, uint64_t t0);

/* sweep.c: the exact timeout sweep and the reopening of lost connections
 * (docs/execution.md, "Timeouts and reconnects").
 *
 * The sweep is one timerfd per loop (absolute CLOCK_MONOTONIC, not libuv's
 * millisecond timers), armed at the earliest moment a message in flight
 * becomes overdue, or a reopen is due.  Drivers report through the three
 * calls below; the engine decides whether a connection is reopened. */
int ab__sweep_open(ab__loop_t *l);          /* setup: 0 or an error */
void ab__sweep_start(ab__loop_t *l);        /* a phase with messages began */
void ab__sweep_stop(ab__loop_t *l);         /* disarms */
void ab__sweep_drain_poll(ab__loop_t *l);   /* shared:N: sweep soon, to
                                               see a drain end */
void ab__sweep_close(ab__loop_t *l);        /* STOP: closes its handle */
/* An established connection of c failed (code): call before its window is
 * released.  Marks c to be reopened when its handle has closed, if the
 * driver can reopen and the loop is not past its measure phase; after
 * REOPEN_TRIES losses in a row with no reply between it is given up. */
void ab__client_lost(ab__client_t *c, int code);
/* c's handle has closed and the driver's part is back to zero (as
 * allocated): a connection marked by ab__client_lost is reopened now
 * (drv->client_start) or when its backoff ends. */
void ab__client_closed(ab__client_t *c);
/* c's connect (and handshakes) finished, well (c->alive) or not: drivers
 * call this instead of ab__loop_connect_done, once per client_start.  A
 * reopen that came up is counted in `reconnects` and woken; one that
 * failed is retried with backoff (sweep.c). */
void ab__client_connect_done(ab__client_t *c);
/* A connect or handshake of c failed (code, the message naming it):
 * drivers call this instead of ab__loop_error for setup failures.  A first
 * connect in the connect phase with tries left is retried with backoff,
 * counted in connect_retries and not an error; anything else is the
 * loop's error (connect.c). */
void ab__client_setup_error(ab__client_t *c, int code, const char *what);
/* The retry of a first connect whose connect (or handshake) finished, well
 * or not (ab__client_connect_done, sweep.c); connect.c. */
void ab__client_first_retry_done(ab__client_t *c);
/* A retry of a first connect starts (sweep.c's reopen_start): connect.c. */
void ab__client_first_retry_started(ab__client_t *c);
/* Churn: c's connection sent its requests_per_connection round trips and
 * every reply is in (ab__win_spent, window.h).  Returns 1 when the driver
 * is to close it cleanly now: it is marked to be replaced (a new
 * connection in its place once its handle has closed, as a reopen, but
 * counted in connections_retired and never in reconnects); 0 when the
 * loop is past sending (the connection stays as it is). */
int ab__client_retire(ab__client_t *c);
/* A bound socket for a loop's server (the scenario's listen address in
 * server role, else 127.0.0.1:0; SO_REUSEPORT when shared by several
 * loops).  Returns an fd or a negative errno. */
int ab__server_socket(ab__loop_t *l, int type);

/* pool.c: pool:N hand-off of per-message server work */
/* What the pool keeps per job it has not handed back yet (its queue slot,
 * its return-list slot and that list's spare): a connection that counts
 * the work it has in the pool against its backpressure bound
 * (io/sockio.h) counts this per job with the bytes the job holds. */
#define AB__POOL_JOB_BYTES (3 * sizeof(ab__job_t *))
int ab__pool_start(ab__engine_t *eng, uint32_t workers);
void ab__pool_submit(ab__pool_t *p, ab__job_t *job);
void ab__pool_stop(ab__pool_t *p);
/* loop side: drain returned jobs (called from pool_done async) */
void ab__pool_collect(ab__pool_t *p, ab__loop_t *l);
/* after stop: frees the pool, returns the folded work result */
uint64_t ab__pool_free(ab__pool_t *p);

static inline void ab__client_take(ab__loop_t *l, ab__client_t *c) {
  if (l->eng->shared) {
    pthread_mutex_lock(&c->mu);
    c->loop = l;
  }
}

static inline void ab__client_give(ab__loop_t *l, ab__client_t *c) {
  if (l->eng->shared) pthread_mutex_unlock(&c->mu);
}

/* The case's connect timeout: connect_timeout_s, else timeout_s. */
/* connect_timeout, or by default the timeout but at least
 * AB_CONNECT_TIMEOUT_MIN_S: above Linux's SYN retransmits at 1 s and 3 s
 * after the first, so a SYN dropped once (a listen backlog that
 * overflowed) is not a failed connect (issue 27; docs/scenarios.md) */
#define AB_CONNECT_TIMEOUT_MIN_S 3.0
static inline double ab__connect_timeout_s(const ab_case_cfg_t *cfg) {
  if (cfg->connect_timeout_s > 0) return cfg->connect_timeout_s;
  return cfg->timeout_s > AB_CONNECT_TIMEOUT_MIN_S ? cfg->timeout_s : AB_CONNECT_TIMEOUT_MIN_S;
}

#endif
