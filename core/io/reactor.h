/* reactor.h -- what socket IO (sockio.h) needs from the event loop: watch
 * one descriptor for read and/or write readiness, change or stop that, and
 * close the watch.  Nothing else in sockio touches the loop, so another
 * reactor (a shared epoll served by several threads) is one more
 * implementation file of these four functions; today's is reactor_uv.c, a
 * uv_poll_t on the loop thread.
 *
 * Level-triggered: the callback runs on every loop iteration while a
 * watched condition holds.  status < 0 is a socket error (EPOLLERR; the
 * watch is stopped then).  Cost: one direct call through the watch per
 * readiness event, none per byte or message.
 * Threads: a watch belongs to the thread of its loop.  Errors: libuv codes.
 */
#ifndef AB_REACTOR_H
#define AB_REACTOR_H

#include <uv.h>

enum { AB_REACTOR_READABLE = UV_READABLE, AB_REACTOR_WRITABLE = UV_WRITABLE };

typedef struct ab_reactor_watch_s ab_reactor_watch_t;
/* events: AB_REACTOR_* that are ready; status 0 or a negative error. */
typedef void (*ab_reactor_cb)(ab_reactor_watch_t *w, int status, int events);

struct ab_reactor_watch_s {
  ab_reactor_cb cb;
  void *data;       /* the owner's */
  uv_poll_t poll;   /* implementation (reactor_uv.c) */
};

/* Prepares a watch of fd on loop; nothing is watched yet.  0 or error. */
int ab_reactor_watch_init(ab_reactor_watch_t *w, uv_loop_t *loop, int fd);
/* Watches `events` (replacing what was watched), calling cb.  0 or error. */
int ab_reactor_watch_start(ab_reactor_watch_t *w, int events, ab_reactor_cb cb);
/* Watches nothing for now. */
void ab_reactor_watch_stop(ab_reactor_watch_t *w);
/* Ends the watch (asynchronously: w stays valid until the loop has
 * released it; the descriptor stays open). */
void ab_reactor_watch_close(ab_reactor_watch_t *w);

#endif
