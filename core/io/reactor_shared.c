/* reactor_shared.c -- the reactor (reactor.h) as one epoll set served by
 * several threads: shared:N's reactor (docs/topologies.md).
 *
 * Every watch of every loop of the case is one descriptor in one epoll set,
 * registered EPOLLONESHOT: an event is given to exactly one of the threads
 * that call ab_reactor_set_run(), and the descriptor stays disabled until
 * that thread has run the callback and re-armed it with what the owner
 * watches then.  So one thread at a time runs a given watch, and any
 * thread may run its next one.  The owner's lock (w->lock) is held around
 * the callback, because the owner's own loop touches the connection
 * outside callbacks too (timers, phase starts, the end).
 *
 * Level-triggered, as reactor_uv: re-arming a descriptor whose condition
 * still holds reports it again.  EPOLLERR is reported as status UV_EBADF
 * with the watch stopped (as libuv does); EPOLLHUP as the watched events.
 * A watch that watches nothing is taken out of the set (EPOLLERR and
 * EPOLLHUP are reported even for an empty mask); one disabled by its
 * one-shot event stays in and is re-enabled by the next start.
 *
 * A watch may be closed while another thread holds an event for it that it
 * took before the close; that thread finds it closed (under the lock) and
 * drops the event.  So a watch's memory must stay valid until every thread
 * has stopped serving the set: the engine keeps connections until the
 * loops have ended.
 */
#include "io/reactor.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

/* Events taken per epoll_wait: small, so that the threads share a burst of
 * ready connections rather than one taking them all. */
#define SET_BATCH 8
/* Batches one call runs at most before it returns to its loop. */
#define SET_ROUNDS 16

struct ab_reactor_set_s {
  int epfd;
};

int ab_reactor_set_open(ab_reactor_set_t **out) {
  ab_reactor_set_t *s = calloc(1, sizeof(*s));
  if (s == NULL) return -ENOMEM;
  s->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (s->epfd < 0) {
    int e = -errno;
    free(s);
    return e;
  }
  *out = s;
  return 0;
}

void ab_reactor_set_close(ab_reactor_set_t *s) {
  if (s == NULL) return;
  close(s->epfd);
  free(s);
}

int ab_reactor_set_fd(const ab_reactor_set_t *s) { return s->epfd; }

static ab_reactor_set_t *set_of(const ab_reactor_watch_t *w) { return w->r->impl; }

/* Puts w's descriptor in the set with `want` (or takes it out when 0). */
static int arm(ab_reactor_watch_t *w, int want) {
  int epfd = set_of(w)->epfd;
  if (want == 0) {
    if (w->impl.sh.in_set && epoll_ctl(epfd, EPOLL_CTL_DEL, w->impl.sh.fd, NULL) < 0) return -errno;
    w->impl.sh.in_set = 0;
    return 0;
  }
  struct epoll_event ev;
  ev.events = EPOLLONESHOT | (want & AB_REACTOR_READABLE ? EPOLLIN : 0u) |
              (want & AB_REACTOR_WRITABLE ? EPOLLOUT : 0u);
  ev.data.ptr = w;
  int op = w->impl.sh.in_set ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
  if (epoll_ctl(epfd, op, w->impl.sh.fd, &ev) < 0) return -errno;
  w->impl.sh.in_set = 1;
  return 0;
}

static int sh_watch_init(ab_reactor_t *r, ab_reactor_watch_t *w, int fd) {
  (void)r;
  w->impl.sh.fd = fd;
  w->impl.sh.want = 0;
  w->impl.sh.in_set = 0;
  w->impl.sh.dispatching = 0;
  w->impl.sh.closed = 0;
  return 0;
}

/* Inside the watch's callback only the wish is recorded: the dispatcher
 * re-arms once the callback has returned. */
static int sh_watch_start(ab_reactor_watch_t *w, int events) {
  w->impl.sh.want = events;
  if (w->impl.sh.dispatching || w->impl.sh.closed) return 0;
  return arm(w, events);
}

static void sh_watch_stop(ab_reactor_watch_t *w) { (void)sh_watch_start(w, 0); }

static void sh_watch_close(ab_reactor_watch_t *w) {
  if (w->impl.sh.closed) return;
  w->impl.sh.want = 0;
  if (w->impl.sh.in_set) (void)epoll_ctl(set_of(w)->epfd, EPOLL_CTL_DEL, w->impl.sh.fd, NULL);
  w->impl.sh.in_set = 0;
  w->impl.sh.closed = 1;
}

static const ab_reactor_ops_t shared_ops = {
    .name = "shared",
    .watch_init = sh_watch_init,
    .watch_start = sh_watch_start,
    .watch_stop = sh_watch_stop,
    .watch_close = sh_watch_close,
};

void ab_reactor_shared_init(ab_reactor_t *r, ab_reactor_set_t *s, void *owner) {
  r->ops = &shared_ops;
  r->impl = s;
  r->owner = owner;
  r->scratch = NULL;
}

static void dispatch(ab_reactor_watch_t *w, uint32_t e, ab_reactor_t *me) {
  if (w->lock) pthread_mutex_lock(w->lock);
  if (!w->impl.sh.closed) {
    int want = w->impl.sh.want, status = 0, events = 0;
    if (e & EPOLLERR) {
      status = UV_EBADF;
      w->impl.sh.want = 0; /* stopped, as libuv stops it */
    } else {
      if (e & EPOLLIN) events |= AB_REACTOR_READABLE;
      if (e & EPOLLOUT) events |= AB_REACTOR_WRITABLE;
      if (e & EPOLLHUP) events |= want;
      events &= want;
    }
    w->running = me->owner;
    w->cur = me;
    w->impl.sh.dispatching = 1;
    if (status < 0 || events != 0) w->cb(w, status, events);
    w->impl.sh.dispatching = 0;
    w->cur = NULL;
    /* the one-shot event disabled it: enable what is watched now */
    if (!w->impl.sh.closed && w->impl.sh.want != 0) (void)arm(w, w->impl.sh.want);
  }
  if (w->lock) pthread_mutex_unlock(w->lock);
}

int ab_reactor_set_run(ab_reactor_set_t *s, ab_reactor_t *me) {
  struct epoll_event ev[SET_BATCH];
  int total = 0;
  for (int round = 0; round < SET_ROUNDS; round++) {
    int n = epoll_wait(s->epfd, ev, SET_BATCH, 0);
    if (n <= 0) break;
    for (int i = 0; i < n; i++) dispatch(ev[i].data.ptr, ev[i].events, me);
    total += n;
    /* not done at a short batch: what these callbacks sent to a peer in
     * this process (the other end of a connection here) is ready now, and
     * taken here it stays on this core instead of waking another thread
     * (tcp 1 KiB 1 x 1, shared:2: 0.57-0.59 -> 0.70 of shared:1) */
  }
  return total;
}
