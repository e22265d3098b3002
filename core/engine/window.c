/* window.c -- the window's per-connection setup, release, timeout sweep
 * and forced end (window.h; the datagram in-flight set: window_dgram.h).
 * These run per connection or per tick, never per message; the
 * per-message parts are inline in window.h and window_dgram.h.
 */
#include "engine/window.h"

#include <stdlib.h>
#include <string.h>

int ab__win_init(ab__win_t *w, uint32_t window, int kind, int open_loop, uint32_t history) {
  memset(w, 0, sizeof(*w));
  w->kind = (uint8_t)kind;
  w->conn_end = UINT64_MAX;
  w->seq = calloc(window, sizeof(uint64_t));
  w->ns = calloc(window, sizeof(uint64_t));
  w->phase = calloc(window, 1);
  if (w->seq == NULL || w->ns == NULL || w->phase == NULL) return AB_ENOMEM;
  if (open_loop && (w->origin = calloc(window, sizeof(uint64_t))) == NULL) return AB_ENOMEM;
  if (kind != AB__WIN_ORDERED) {
    /* four windows of history tell late from duplicated; older replies are
     * late in any case */
    w->out_n = window * 4 < 64 ? 64 : window * 4;
    if (w->out_n < history) w->out_n = history;
    w->out_seq = calloc(w->out_n, sizeof(uint64_t));
    w->out_state = calloc(w->out_n, 1);
    if (w->out_seq == NULL || w->out_state == NULL) return AB_ENOMEM;
    /* the in-flight set: every slot free, a map of >= 2 * window buckets */
    uint32_t buckets = 8, shift = 61;
    while (buckets < 2 * window) {
      buckets *= 2;
      shift--;
    }
    w->map_mask = buckets - 1;
    w->map_shift = shift;
    w->map = calloc(buckets, sizeof(uint32_t));
    w->free_slot = calloc(window, sizeof(uint32_t));
    w->age_prev = calloc(window, sizeof(uint32_t));
    w->age_next = calloc(window, sizeof(uint32_t));
    if (w->map == NULL || w->free_slot == NULL || w->age_prev == NULL || w->age_next == NULL)
      return AB_ENOMEM;
    /* slot 0 on top: a window of 1 uses slot 0, as an ordered one does */
    for (uint32_t i = 0; i < window; i++) w->free_slot[i] = window - 1 - i;
    w->nfree = window;
    w->age_head = w->age_tail = AB__DG_NIL;
  }
  return 0;
}

void ab__win_free(ab__win_t *w) {
  free(w->seq);
  free(w->ns);
  free(w->phase);
  free(w->tag);
  free(w->origin);
  free(w->out_seq);
  free(w->out_state);
  free(w->map);
  free(w->free_slot);
  free(w->age_prev);
  free(w->age_next);
  memset(w, 0, sizeof(*w));
}

void ab__win_sched_init(ab__win_t *w, double rate, uint32_t index, uint32_t clients) {
  w->sched_off = (double)index * 1e9 / rate;
  w->sched_period = (double)clients * 1e9 / rate;
}

void ab__win_sched_start(ab__win_t *w, uint64_t t0) {
  w->sched_t0 = t0;
  w->sched_k = 0;
}

uint64_t ab__win_unsent(const ab__win_t *w, uint64_t deadline) {
  if (w->origin == NULL || deadline <= w->sched_t0) return 0;
  /* the first message intended at or after the deadline; the estimate is
   * corrected against the exact times (rounding) */
  double est = ((double)(deadline - w->sched_t0) - w->sched_off) / w->sched_period;
  uint64_t k = est > 0 ? (uint64_t)est : 0;
  while (k > 0 && ab__win_intended(w, k - 1) >= deadline) k--;
  while (ab__win_intended(w, k) < deadline) k++;
  return k > w->sched_k ? k - w->sched_k : 0;
}

/* Frees slot i (in flight) without a reply: a measure message counts in
 * *as, and a timeout or an error in the current interval too. */
static void give_up(ab__loop_t *l, ab__win_t *w, uint32_t i, uint64_t *as) {
  if (w->phase[i] == AB_PHASE_MEASURE) {
    (*as)++;
    if (as == &l->timed_out) ab__iv_at(l, ab_now_ns())->timed_out++;
    else if (as == &l->message_errors) ab__iv_at(l, ab_now_ns())->errors++;
    l->meas_inflight--;
  } else {
    l->warm_inflight--;
  }
  if (w->kind != AB__WIN_ORDERED) ab__dg_drop(w, i);
  w->ns[i] = 0;
  if (w->inflight == l->window) w->freed_ns = ab_now_ns(); /* generator lag */
  w->inflight--;
}

void ab__win_release(ab__client_t *c, uint64_t *as) {
  ab__loop_t *l = c->loop;
  ab__win_t *w = &c->win;
  if (w->seq == NULL) return; /* never set up */
  for (uint32_t i = 0; i < l->window && w->inflight > 0; i++)
    if (w->ns[i] != 0) give_up(l, w, i, as);
  w->oldest_seq = w->next_seq;
}

int ab__win_sweep(ab__client_t *c, uint64_t now) {
  ab__loop_t *l = c->loop;
  ab__win_t *w = &c->win;
  uint64_t limit = l->timeout_ns;
  if (w->inflight == 0) return 0;
  if (w->kind == AB__WIN_ORDERED) {
    uint64_t t = w->ns[ab__win_slot(l, w->oldest_seq)];
    return t != 0 && now > t && now - t > limit ? AB_ETIMEDOUT : 0;
  }
  if (w->kind == AB__WIN_STREAMS) {
    /* a stream's reply may still come: the connection is failed (its
     * streams released) as an ordered one is, never the one message */
    uint64_t t = w->age_head == AB__DG_NIL ? 0 : w->ns[w->age_head];
    return t != 0 && now > t && now - t > limit ? AB_ETIMEDOUT : 0;
  }
  /* the oldest stamp first: the first one not overdue ends the sweep */
  int freed = 0;
  while (w->age_head != AB__DG_NIL) {
    uint32_t i = w->age_head;
    uint64_t t = w->ns[i];
    if (now <= t || now - t <= limit) break;
    ab__win_outcome(w, w->seq[i], AB__WIN_OUT_LOST, w->phase[i]);
    give_up(l, w, i, &l->timed_out);
    freed++;
  }
  return freed;
}

uint64_t ab__win_next_expiry(const ab__client_t *c) {
  const ab__loop_t *l = c->loop;
  const ab__win_t *w = &c->win;
  uint64_t first = UINT64_MAX;
  if (w->inflight == 0) return first;
  if (w->kind == AB__WIN_ORDERED) {
    first = w->ns[ab__win_slot(l, w->oldest_seq)];
  } else {
    first = w->ns[w->age_head]; /* the oldest stamp */
  }
  /* overdue once older than the timeout: strictly after t + limit */
  return first == UINT64_MAX || first == 0 ? UINT64_MAX : first + l->timeout_ns + 1;
}

void ab__win_finish(ab__loop_t *l) {
  for (uint32_t i = 0; i < l->nclients; i++) {
    ab__client_t *c = ab__loop_client(l, i);
    ab__client_take(l, c); /* shared:N: its counts go to l */
    ab__win_release(c, &l->unfinished);
    ab__client_give(l, c);
  }
}
