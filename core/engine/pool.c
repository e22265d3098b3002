/* pool.c -- pool:N's work pool: N threads that run the per-message server
 * work for the one IO loop (README.md "Topologies"; libuv's model for handler work).
 *
 * The loop submits one job per received frame (an ab__job_t: a stream
 * connection's embedded job, or one datagram) into a mutex-guarded ring; a
 * worker runs ab_work() and pushes the pointer onto the return list, then
 * wakes the loop with uv_async_send.  The loop's async handler collects
 * returned jobs and releases the held frames in order.  This hand-off is
 * the cost the pool model carries; it is the one lock on the per-message
 * path.
 */
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "engine/engine_int.h"
#include "base/work.h"

struct ab__pool_s {
  ab__engine_t *eng;
  ab__loop_t *loop;
  pthread_t *threads;
  uint32_t nthreads;             /* configured workers (read by workers) */
  uint32_t started;              /* threads actually created */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  ab__job_t **ring;
  size_t cap, head, count;
  int stop;
  uint32_t idle;                /* workers waiting on cv */
  pthread_mutex_t dmu;
  ab__job_t **done, **spare;
  size_t dcap, dcount, spare_cap;
  uint64_t sink;
};

static int grow(ab__job_t ***arr, size_t *cap, size_t need) {
  if (*cap >= need) return 0;
  size_t want = *cap ? *cap : 256;
  while (want < need) want *= 2;
  ab__job_t **p = realloc(*arr, want * sizeof(*p));
  if (p == NULL) return AB_ENOMEM;
  *arr = p;
  *cap = want;
  return 0;
}

/* A worker takes a fair share of the queue at once (at most 64 jobs), so a
 * burst of frames costs one lock round per batch, not per frame, while
 * several workers still split a long queue between them. */
#define BATCH_MAX 64

static void *worker_main(void *arg) {
  ab__pool_t *p = arg;
  uint64_t work = p->eng->cfg->work, sink = 0;
  ab__job_t *batch[BATCH_MAX];
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (!p->stop && p->count == 0) {
      p->idle++;
      pthread_cond_wait(&p->cv, &p->mu);
      p->idle--;
    }
    if (p->stop) {
      pthread_mutex_unlock(&p->mu);
      break;
    }
    size_t n = (p->count + p->nthreads - 1) / p->nthreads;
    if (n > BATCH_MAX) n = BATCH_MAX;
    for (size_t i = 0; i < n; i++) {
      batch[i] = p->ring[p->head];
      p->head = (p->head + 1) % p->cap;
    }
    p->count -= n;
    /* more left and someone asleep: pass the baton */
    if (p->count > 0 && p->idle > 0) pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);

    for (size_t i = 0; i < n; i++)
      if (work) sink ^= ab_work(work, sink + (uintptr_t)batch[i]);

    pthread_mutex_lock(&p->dmu);
    int ok = grow(&p->done, &p->dcap, p->dcount + n) == 0;
    if (ok) {
      memcpy(p->done + p->dcount, batch, n * sizeof(batch[0]));
      p->dcount += n;
    }
    pthread_mutex_unlock(&p->dmu);
    uv_async_send(&p->loop->pool_done);
  }
  pthread_mutex_lock(&p->dmu);
  p->sink ^= sink;
  pthread_mutex_unlock(&p->dmu);
  return NULL;
}

int ab__pool_start(ab__engine_t *eng, uint32_t workers) {
  ab__pool_t *p = calloc(1, sizeof(*p));
  if (p == NULL) return AB_ENOMEM;
  p->eng = eng;
  p->loop = &eng->loops[0];
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  pthread_mutex_init(&p->dmu, NULL);
  if (grow(&p->ring, &p->cap, 1024) != 0) return AB_ENOMEM;
  p->threads = calloc(workers, sizeof(pthread_t));
  if (p->threads == NULL) return AB_ENOMEM;
  p->nthreads = workers;
  for (uint32_t i = 0; i < workers; i++) {
    if (pthread_create(&p->threads[i], NULL, worker_main, p) != 0) {
      eng->pool = p;
      ab__pool_stop(p);
      return AB_ENOMEM;
    }
    p->started++;
  }
  eng->pool = p;
  return 0;
}

void ab__pool_submit(ab__pool_t *p, ab__job_t *s) {
  pthread_mutex_lock(&p->mu);
  if (p->count == p->cap) {
    /* grow the ring, unwrapping it */
    size_t ncap = p->cap * 2;
    ab__job_t **n = malloc(ncap * sizeof(*n));
    if (n == NULL) {
      pthread_mutex_unlock(&p->mu);
      ab__loop_error(p->loop, AB_ENOMEM, "work pool queue");
      return;
    }
    for (size_t i = 0; i < p->count; i++) n[i] = p->ring[(p->head + i) % p->cap];
    free(p->ring);
    p->ring = n;
    p->cap = ncap;
    p->head = 0;
  }
  p->ring[(p->head + p->count) % p->cap] = s;
  p->count++;
  if (p->idle > 0) pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

void ab__pool_collect(ab__pool_t *p, ab__loop_t *l) {
  (void)l;
  pthread_mutex_lock(&p->dmu);
  ab__job_t **got = p->done;
  size_t n = p->dcount;
  size_t gcap = p->dcap;
  p->done = p->spare;
  p->dcap = p->spare_cap;
  p->dcount = 0;
  pthread_mutex_unlock(&p->dmu);
  for (size_t i = 0; i < n; i++) got[i]->done(got[i]);
  p->spare = got;
  p->spare_cap = gcap;
}

void ab__pool_stop(ab__pool_t *p) {
  if (p == NULL) return;
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  for (uint32_t i = 0; i < p->started; i++) pthread_join(p->threads[i], NULL);
  p->started = 0;
}

uint64_t ab__pool_free(ab__pool_t *p) {
  if (p == NULL) return 0;
  uint64_t sink = p->sink;
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->dmu);
  free(p->ring);
  free(p->done);
  free(p->spare);
  free(p->threads);
  free(p);
  return sink;
}
