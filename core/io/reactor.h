/* reactor.h -- what socket IO (sockio.h) needs from the event loop: watch
 * one descriptor for read and/or write readiness, change or stop that, and
 * close the watch.  Nothing else in sockio or conn touches the loop, so
 * another reactor is one more implementation of ab_reactor_ops_t in one
 * file, plus its per-watch state in the union below.  Two exist:
 * reactor_uv.c, a uv_poll_t on the loop's thread (sharded:N, pool:N), and
 * reactor_shared.c, one reactor served by several threads (shared:N).
 * Each engine loop's driver part has one reactor (ab__dloop_t.reactor);
 * `owner` is that loop, and a callback finds the loop of the thread running
 * it in w->running (reactor_uv: always the owner; reactor_shared: whichever
 * loop thread took the event).
 *
 * Level-triggered: the callback runs on every loop iteration while a
 * watched condition holds.  status < 0 is a socket error (EPOLLERR; the
 * watch is stopped then).  Cost: one call through the watch per readiness
 * event and one through the ops when the watched events change (a short
 * write), none per byte or message.
 * Threads: reactor_uv: a watch belongs to the thread that serves its
 * reactor.  reactor_shared: any thread serving the set may run a watch's
 * callback, one at a time per watch (EPOLLONESHOT: the descriptor is
 * re-armed after the callback returns), with w->lock (when set) held
 * around it; whoever touches the watch's owner outside a callback takes the
 * same lock.  Errors: libuv codes (-errno on Unix).
 */
#ifndef AB_REACTOR_H
#define AB_REACTOR_H

#include <pthread.h>
#include <stdint.h>

#include <uv.h>

/* the same values as libuv's, so reactor_uv passes them through */
enum { AB_REACTOR_READABLE = 1, AB_REACTOR_WRITABLE = 2 };

typedef struct ab_reactor_s ab_reactor_t;
typedef struct ab_reactor_watch_s ab_reactor_watch_t;
/* events: AB_REACTOR_* that are ready; status 0 or a negative error. */
typedef void (*ab_reactor_cb)(ab_reactor_watch_t *w, int status, int events);

typedef struct {
  const char *name;
  /* Prepares w to watch fd (nothing watched yet).  0 or error. */
  int (*watch_init)(ab_reactor_t *r, ab_reactor_watch_t *w, int fd);
  /* Watches `events` (replacing what was watched; 0 = none).  0 or error. */
  int (*watch_start)(ab_reactor_watch_t *w, int events);
  void (*watch_stop)(ab_reactor_watch_t *w);
  /* Ends the watch; w stays valid until the reactor has let go of it (the
   * next loop iteration); the descriptor stays open. */
  void (*watch_close)(ab_reactor_watch_t *w);
} ab_reactor_ops_t;

struct ab_reactor_s {
  const ab_reactor_ops_t *ops;
  void *impl;                 /* reactor_uv: the uv_loop_t; reactor_shared:
                                 the ab_reactor_set_t */
  void *owner;                /* the engine loop this reactor serves */
  uint8_t *scratch;           /* optional: the owner thread's 64 KiB read
                                 scratch (a TLS connection's ciphertext,
                                 conn.c), used during its callbacks */
  int slot;                   /* reactor_shared: this thread's queue in the
                                 set (0 .. threads - 1) */
};

struct ab_reactor_watch_s {
  ab_reactor_t *r;
  ab_reactor_cb cb;
  void *data;                 /* the owner's */
  void *running;              /* during a callback: the owner (ab_reactor_t
                                 .owner) of the thread running it */
  ab_reactor_t *cur;          /* reactor_shared, during a callback: that
                                 thread's reactor; NULL otherwise */
  pthread_mutex_t *lock;      /* reactor_shared: held around each callback
                                 (NULL: none); ab_reactor_watch_set_lock */
  unsigned gen;               /* reactor_shared: counts watch_init on this
                                 memory (a reopened connection's watch is
                                 the same memory), so that an event taken
                                 for an earlier descriptor is told apart */
  /* lock and gen survive a restart: ab_sockio_start and ab_conn_init never
   * clear the watch (watch_init sets the rest), because a thread that took
   * an event before the watch was closed reads lock without holding it,
   * and gen once it does, while the owner starts the watch again */
  union {
    uv_poll_t uv;             /* reactor_uv.c */
    struct {
      int fd;
      int want;               /* AB_REACTOR_* the owner watches */
      int in_set;             /* registered in the epoll set */
      int dispatching;        /* its callback is running: re-arm after */
      int closed;
      int home;               /* the queue it is registered in: that of the
                                 thread that ran it last */
    } sh;                     /* reactor_shared.c */
  } impl;
};

/* The libuv reactor of `loop` (reactor_uv.c), serving engine loop `owner`. */
void ab_reactor_uv_init(ab_reactor_t *r, uv_loop_t *loop, void *owner);

/* reactor_shared.c: one reactor that several threads serve: a ready queue
 * (an epoll set) per thread, with stealing. */
typedef struct ab_reactor_set_s ab_reactor_set_t;
/* For `threads` threads.  0 or a negative errno. */
int ab_reactor_set_open(ab_reactor_set_t **out, int threads);
/* After every thread stopped serving it and every watch was closed. */
void ab_reactor_set_close(ab_reactor_set_t *s);
/* Thread `slot`'s descriptor: readable while its queue has an event or
 * another thread asks it to steal (its loop watches it and calls
 * ab_reactor_set_run). */
int ab_reactor_set_fd(const ab_reactor_set_t *s, int slot);
/* A reactor on the set for engine loop `owner`, served by thread `slot`
 * (each loop serving the set has one; a watch made through any of them may
 * run on every thread). */
void ab_reactor_shared_init(ab_reactor_t *r, ab_reactor_set_t *s, void *owner, int slot);
/* Runs the ready events of me's queue (without waiting) on the calling
 * thread, whose reactor on the set is `me` (w->running = me->owner,
 * w->cur = me); when that queue is empty, steals another queue's ready
 * events.  Returns how many ran. */
int ab_reactor_set_run(ab_reactor_set_t *s, ab_reactor_t *me);

static inline int ab_reactor_watch_init(ab_reactor_t *r, ab_reactor_watch_t *w, int fd,
                                        ab_reactor_cb cb) {
  w->r = r;
  w->cb = cb;
  w->running = r->owner;
  w->cur = NULL;
  return r->ops->watch_init(r, w, fd);
}

/* The lock held around w's callbacks (reactor_shared), written only when
 * it changes: at a reopen, a thread with an event for the closed watch may
 * be reading it. */
static inline void ab_reactor_watch_set_lock(ab_reactor_watch_t *w, pthread_mutex_t *lock) {
  if (w->lock != lock) w->lock = lock;
}

static inline int ab_reactor_watch_start(ab_reactor_watch_t *w, int events) {
  return w->r->ops->watch_start(w, events);
}

static inline void ab_reactor_watch_stop(ab_reactor_watch_t *w) { w->r->ops->watch_stop(w); }

static inline void ab_reactor_watch_close(ab_reactor_watch_t *w) { w->r->ops->watch_close(w); }

#endif
