/* reactor.h -- what socket IO (sockio.h) needs from the event loop: watch
 * one descriptor for read and/or write readiness, change or stop that, and
 * close the watch.  Nothing else in sockio or conn touches the loop, so
 * another reactor (a shared epoll served by several threads) is one more
 * implementation of ab_reactor_ops_t in one file, plus its per-watch state
 * in the union below; today's is reactor_uv.c, a uv_poll_t on the loop's
 * thread.  Each engine loop has one reactor (ab__loop_t.reactor).
 *
 * Level-triggered: the callback runs on every loop iteration while a
 * watched condition holds.  status < 0 is a socket error (EPOLLERR; the
 * watch is stopped then).  Cost: one call through the watch per readiness
 * event and one through the ops when the watched events change (a short
 * write), none per byte or message.
 * Threads: a watch belongs to the thread that serves its reactor.
 * Errors: libuv codes (-errno on Unix).
 */
#ifndef AB_REACTOR_H
#define AB_REACTOR_H

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
  void *impl;                 /* reactor_uv: the uv_loop_t */
};

struct ab_reactor_watch_s {
  ab_reactor_t *r;
  ab_reactor_cb cb;
  void *data;                 /* the owner's */
  union {
    uv_poll_t uv;             /* reactor_uv.c */
  } impl;
};

/* The libuv reactor of `loop` (reactor_uv.c). */
void ab_reactor_uv_init(ab_reactor_t *r, uv_loop_t *loop);

static inline int ab_reactor_watch_init(ab_reactor_t *r, ab_reactor_watch_t *w, int fd,
                                        ab_reactor_cb cb) {
  w->r = r;
  w->cb = cb;
  return r->ops->watch_init(r, w, fd);
}

static inline int ab_reactor_watch_start(ab_reactor_watch_t *w, int events) {
  return w->r->ops->watch_start(w, events);
}

static inline void ab_reactor_watch_stop(ab_reactor_watch_t *w) { w->r->ops->watch_stop(w); }

static inline void ab_reactor_watch_close(ab_reactor_watch_t *w) { w->r->ops->watch_close(w); }

#endif
