/* shared.c -- shared:N's part of the engine: the one reactor set
 * (io/reactor_shared.c) that every loop thread serves, and the drain check
 * that replaces the per-loop in-flight counts (engine_int.h's header
 * comment says who may touch what).
 *
 * Each loop watches its own queue of the set with a uv_poll_t and, when it
 * is readable, runs the ready events on its own thread (stealing from the
 * other queues when its own has none: io/reactor_shared.c).
 *
 * Drain: a loop's counts of messages in flight do not add up per loop any
 * more (a message stamped on one thread completes on another), so a loop's
 * phase ends when none of its own clients has one in flight, checked with
 * each client taken in turn (an exact answer: a stamp happens under the
 * client's lock, before the deadline).
 */
#include "engine/engine_int.h"

static void on_set_ready(uv_poll_t *p, int status, int events) {
  ab__loop_t *l = p->data;
  (void)status;
  (void)events;
  ab_reactor_set_run(l->eng->rset, l->reactor);
}

static void on_reports(uv_async_t *a) {
  ab__loop_t *l = a->data;
  unsigned n = atomic_exchange(&l->reports_pending, 0);
  while (n-- > 0 && l->phase != AB__PH_STOPPING) ab__loop_connect_done(l);
}

void ab__loop_connect_done_on(ab__loop_t *home, ab__loop_t *running) {
  if (home == running) {
    ab__loop_connect_done(home);
    return;
  }
  atomic_fetch_add(&home->reports_pending, 1);
  uv_async_send(&home->reports);
}

int ab__shared_open(ab__engine_t *eng) {
  if (!eng->shared) return 0;
  return ab_reactor_set_open(&eng->rset, (int)eng->nloops);
}

int ab__shared_loop_open(ab__loop_t *l) {
  ab__engine_t *eng = l->eng;
  if (!eng->shared) return 0;
  for (uint32_t i = 0; i < l->nclients; i++) {
    pthread_mutex_init(&ab__loop_client(l, i)->mu, NULL);
  }
  int r = uv_async_init(&l->loop, &l->reports, on_reports);
  if (r < 0) return r;
  l->reports.data = l;
  r = uv_poll_init(&l->loop, &l->rset_poll, ab_reactor_set_fd(eng->rset, (int)l->index));
  if (r < 0) return r;
  l->rset_poll.data = l;
  return uv_poll_start(&l->rset_poll, UV_READABLE, on_set_ready);
}

static void close_noop(uv_handle_t *h) { (void)h; }

void ab__shared_loop_stop(ab__loop_t *l) {
  if (!l->eng->shared) return;
  uv_close((uv_handle_t *)&l->rset_poll, close_noop);
  uv_close((uv_handle_t *)&l->reports, close_noop);
}

void ab__shared_close(ab__engine_t *eng) {
  if (!eng->shared) return;
  for (uint32_t li = 0; li < eng->nloops; li++) {
    ab__loop_t *l = &eng->loops[li];
    for (uint32_t i = 0; l->clients && i < l->nclients; i++)
      pthread_mutex_destroy(&ab__loop_client(l, i)->mu);
  }
  ab_reactor_set_close(eng->rset);
  eng->rset = NULL;
}

int ab__shared_busy(ab__loop_t *l) {
  int busy = 0;
  for (uint32_t i = 0; i < l->nclients && !busy; i++) {
    ab__client_t *c = ab__loop_client(l, i);
    ab__client_take(l, c);
    busy = c->win.inflight > 0;
    ab__client_give(l, c);
  }
  return busy;
}
