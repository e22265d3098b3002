/* window_fixture.h -- the loop and clients the window tests run on: plain
 * structs, no sockets, no loop threads; phases, deadlines and clock
 * readings are set by hand (test_window.c, test_window_dgram.c,
 * test_window_rate.c, test_window_series.c, test_window_tags.c,
 * test_window_small.c). */
#ifndef AB_TEST_WINDOW_FIXTURE_H
#define AB_TEST_WINDOW_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "base/clock.h"
#include "engine/window.h"
#include "test/ab_test.h"

#define TIMEOUT 1000000u /* 1 ms */
#define DEADLINE 1000000000u

/* the engine the test loops belong to (shared: its clients have locks) */
static ab__engine_t test_eng;

static inline ab__loop_t *loop_new_open(uint32_t nclients, uint32_t window, int kind, int open) {
  ab__loop_t *l = calloc(1, sizeof(*l));
  l->eng = &test_eng;
  l->window = window;
  l->window_pow2 = (window & (window - 1)) == 0;
  l->timeout_ns = TIMEOUT;
  l->phase = AB__PH_MEASURE;
  l->warm_deadline_ns = DEADLINE / 2;
  l->start_ns = 1;
  l->deadline_ns = DEADLINE;
  ab_hist_init(&l->rtt);
  ab_hist_init(&l->rtt_raw);
  ab_hist_init(&l->rtt_ok);
  ab_hist_init(&l->send_lag);
  ab_hist_init(&l->gen_lag);
  /* one interval of the time series: the run's RTTs land in it */
  l->iv = calloc(1, sizeof(ab__iv_t));
  l->iv_lag = calloc(1, sizeof(ab_hist_t));
  ab_hist_init(&l->iv[0].rtt);
  ab_hist_init(&l->iv_lag[0]);
  l->iv_n = 1;
  l->iv_ns = DEADLINE;
  l->iv_end_ns = UINT64_MAX;
  l->nclients = nclients;
  /* a driver's client is larger than the engine's header: the window and
   * the release of every client must step by client_size */
  l->client_size = sizeof(ab__client_t) + 40;
  l->clients = calloc(nclients, l->client_size);
  for (uint32_t i = 0; i < nclients; i++) {
    ab__loop_client(l, i)->loop = l;
    ab__loop_client(l, i)->home = l;
    pthread_mutex_init(&ab__loop_client(l, i)->mu, NULL);
    ab__loop_client(l, i)->id = i;
    ab__loop_client(l, i)->alive = 1;
    CHECK(ab__win_init(&ab__loop_client(l, i)->win, window, kind, open, 0) == 0);
  }
  l->open_loop = open;
  return l;
}

static inline ab__loop_t *loop_new(uint32_t nclients, uint32_t window, int kind) {
  return loop_new_open(nclients, window, kind, 0);
}

static inline void loop_free(ab__loop_t *l) {
  for (uint32_t i = 0; i < l->nclients; i++) ab__win_free(&ab__loop_client(l, i)->win);
  free(l->clients);
  free(l->iv);
  free(l->iv_lag);
  free(l);
}

/* The accounting identity (docs/run-object.md): nothing sent is lost from the books. */
static inline void check_identity(const ab__loop_t *l) {
  CHECK_EQ_U64(l->sent, l->completed + l->drained + l->timed_out + l->message_errors +
                            l->unfinished + l->meas_inflight);
}

/* Grants and stamps what the window allows at t; returns how many. */
static inline uint32_t issue(ab__client_t *c, uint64_t t) {
  ab__win_grant_t g;
  if (ab__win_grant(c, t, &g) == 0) return 0;
  return ab__win_stamp(c, &g, g.n, t);
}

#endif
