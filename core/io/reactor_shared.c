/* reactor_shared.c -- the reactor (reactor.h) served by several threads:
 * shared:N's reactor (docs/topologies.md).
 *
 * One ready queue per thread, with stealing.  Each queue is an epoll set;
 * every watch is registered in exactly one of them, EPOLLONESHOT, in the
 * queue of the thread that ran its callback last (at first: of the thread
 * whose reactor made it).  A thread runs the events of its own queue until
 * it is empty; when it finds its queue empty, it takes a batch of ready
 * events from another thread's queue, and the watches it ran that way move
 * to its own.  A thread that ends its turn with its queue still full asks
 * one idle thread to steal (an eventfd in that thread's set).  So any
 * thread may run any watch's next event, one thread at a time runs a given
 * watch (the one-shot event disables the descriptor until the thread that
 * took it re-arms it), and a connection stays on the core that ran it
 * while no thread is short of work.  Why not one epoll set that every
 * thread takes from (Asio's scheme), measured: docs/topologies.md.
 *
 * The owner's lock (w->lock) is held around the callback, because the
 * owner's own loop touches the connection outside callbacks too (timers,
 * phase starts, the end).
 *
 * Level-triggered, as reactor_uv: re-arming a descriptor whose condition
 * still holds reports it again.  EPOLLERR is reported as status UV_EBADF
 * with the watch stopped (as libuv does); EPOLLHUP as the watched events;
 * a re-arm after a callback that fails (the epoll set out of room, say) as
 * its error, the watch stopped too.
 * A watch that watches nothing is taken out of its queue (EPOLLERR and
 * EPOLLHUP are reported even for an empty mask); one disabled by its
 * one-shot event stays in and is re-enabled by the next start.
 *
 * A watch may be closed while another thread holds an event for it that it
 * took before the close; that thread finds it closed (under the lock) and
 * drops the event.  So a watch's memory must stay valid until every thread
 * has stopped serving the set: the engine keeps connections until the
 * loops have ended.  The same memory may be started again on a new
 * descriptor before that thread gets the lock (a connection reopened by
 * its home after a timeout): each event carries the low 16 bits of the
 * watch's start count (w->gen) above the watch's address in its epoll
 * data (user-space addresses take 48 bits on x86-64 and arm64 unless a
 * program asks the kernel for more, which this one does not; a watch
 * above them is refused at its start), and an event from an earlier start
 * is dropped too -- else the new descriptor would get the old one's
 * readiness, an EPOLLERR failing a fresh connection.  (Told apart modulo
 * 65536 starts: a thread would have to hold one event through 65536
 * reopens of that connection.  The 3 alignment bits alone were too few:
 * test_reactor_shared's reopens under load wrapped them.)
 */
#include "io/reactor.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Events taken per epoll_wait. */
#define SET_BATCH 8
/* Batches one call runs at most before it returns to its loop. */
#define SET_ROUNDS 16

typedef struct {
  int epfd;
  int kick;          /* eventfd in epfd (edge-triggered): "steal" */
  atomic_int idle;   /* its last turn found nothing to run */
} queue_t;

struct ab_reactor_set_s {
  int n;
  queue_t q[];
};

/* the epoll data of a queue's kick: not a watch */
static char kick_mark;

/* A watch's event data: its address, with the low 16 bits of its start
 * count above it (bits 48..63; 32..47 where addresses take 32 bits). */
#if UINTPTR_MAX > 0xffffffffu
#define ADDR_BITS 48
#else
#define ADDR_BITS 32
#endif
#define ADDR_MASK ((UINT64_C(1) << ADDR_BITS) - 1u)

static uint64_t event_data(const ab_reactor_watch_t *w) {
  return (uint64_t)(uintptr_t)w | ((uint64_t)(w->gen & 0xffffu) << ADDR_BITS);
}

int ab_reactor_set_open(ab_reactor_set_t **out, int threads) {
  if (threads < 1) threads = 1;
  ab_reactor_set_t *s = calloc(1, sizeof(*s) + (size_t)threads * sizeof(queue_t));
  if (s == NULL) return -ENOMEM;
  for (int i = 0; i < threads; i++) s->q[i].epfd = s->q[i].kick = -1;
  s->n = threads;
  for (int i = 0; i < threads; i++) {
    queue_t *q = &s->q[i];
    q->epfd = epoll_create1(EPOLL_CLOEXEC);
    q->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.ptr = &kick_mark};
    if (q->epfd < 0 || q->kick < 0 || epoll_ctl(q->epfd, EPOLL_CTL_ADD, q->kick, &ev) < 0) {
      int e = -errno;
      ab_reactor_set_close(s);
      return e;
    }
  }
  *out = s;
  return 0;
}

void ab_reactor_set_close(ab_reactor_set_t *s) {
  if (s == NULL) return;
  for (int i = 0; i < s->n; i++) {
    if (s->q[i].epfd >= 0) close(s->q[i].epfd);
    if (s->q[i].kick >= 0) close(s->q[i].kick);
  }
  free(s);
}

int ab_reactor_set_fd(const ab_reactor_set_t *s, int slot) { return s->q[slot].epfd; }

static ab_reactor_set_t *set_of(const ab_reactor_watch_t *w) { return w->r->impl; }

/* Puts w's descriptor in queue `slot` with `want` (or takes it out of its
 * queue when 0); moves it there from another queue.  Its state is written
 * before the descriptor is armed: from then on another thread may take its
 * event. */
static int arm(ab_reactor_watch_t *w, int want, int slot) {
  ab_reactor_set_t *s = set_of(w);
  if (w->impl.sh.in_set && (want == 0 || w->impl.sh.home != slot)) {
    if (epoll_ctl(s->q[w->impl.sh.home].epfd, EPOLL_CTL_DEL, w->impl.sh.fd, NULL) < 0) return -errno;
    w->impl.sh.in_set = 0;
  }
  if (want == 0) return 0;
  struct epoll_event ev;
  ev.events = EPOLLONESHOT | (want & AB_REACTOR_READABLE ? EPOLLIN : 0u) |
              (want & AB_REACTOR_WRITABLE ? EPOLLOUT : 0u);
  ev.data.u64 = event_data(w);
  int op = w->impl.sh.in_set ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
  w->impl.sh.in_set = 1;
  w->impl.sh.home = slot;
  if (epoll_ctl(s->q[slot].epfd, op, w->impl.sh.fd, &ev) < 0) {
    int e = -errno;
    if (op == EPOLL_CTL_ADD) w->impl.sh.in_set = 0;
    return e;
  }
  return 0;
}

static int sh_watch_init(ab_reactor_t *r, ab_reactor_watch_t *w, int fd) {
  if (((uint64_t)(uintptr_t)w & ~ADDR_MASK) != 0) return UV_EINVAL; /* no room for gen */
  w->gen++; /* an event taken for its last descriptor is not for this one */
  w->impl.sh.fd = fd;
  w->impl.sh.want = 0;
  w->impl.sh.in_set = 0;
  w->impl.sh.dispatching = 0;
  w->impl.sh.closed = 0;
  w->impl.sh.home = r->slot;
  return 0;
}

/* Inside the watch's callback only the wish is recorded: the dispatcher
 * re-arms once the callback has returned.  Outside, it stays where it is. */
static int sh_watch_start(ab_reactor_watch_t *w, int events) {
  w->impl.sh.want = events;
  if (w->impl.sh.dispatching || w->impl.sh.closed) return 0;
  return arm(w, events, w->impl.sh.home);
}

static void sh_watch_stop(ab_reactor_watch_t *w) { (void)sh_watch_start(w, 0); }

static void sh_watch_close(ab_reactor_watch_t *w) {
  if (w->impl.sh.closed) return;
  (void)arm(w, 0, w->impl.sh.home);
  w->impl.sh.want = 0;
  w->impl.sh.closed = 1;
}

static const ab_reactor_ops_t shared_ops = {
    .name = "shared",
    .watch_init = sh_watch_init,
    .watch_start = sh_watch_start,
    .watch_stop = sh_watch_stop,
    .watch_close = sh_watch_close,
};

void ab_reactor_shared_init(ab_reactor_t *r, ab_reactor_set_t *s, void *owner, int slot) {
  r->ops = &shared_ops;
  r->impl = s;
  r->owner = owner;
  r->scratch = NULL;
  r->slot = slot;
}

/* w's callback on this thread (w's lock held): what it watches meanwhile
 * is recorded, and armed after. */
static void run_cb(ab_reactor_watch_t *w, ab_reactor_t *me, int status, int events) {
  w->running = me->owner;
  w->cur = me;
  w->impl.sh.dispatching = 1;
  w->cb(w, status, events);
  w->impl.sh.dispatching = 0;
  w->cur = NULL;
}

/* The event `e` with data `data` (event_data), taken from a queue. */
static void dispatch(uint64_t data, uint32_t e, ab_reactor_t *me) {
  ab_reactor_watch_t *w = (ab_reactor_watch_t *)(uintptr_t)(data & ADDR_MASK);
  if (w->lock) pthread_mutex_lock(w->lock);
  if (!w->impl.sh.closed && (data >> ADDR_BITS) == (w->gen & 0xffffu)) {
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
    if (status < 0 || events != 0) run_cb(w, me, status, events);
    /* the one-shot event disabled it: enable what is watched now, in the
     * queue of this thread (it moves here when it was stolen); if that
     * fails, the watch is stopped and told, as for EPOLLERR */
    int r = !w->impl.sh.closed && w->impl.sh.want != 0 ? arm(w, w->impl.sh.want, me->slot) : 0;
    if (r < 0) {
      w->impl.sh.want = 0;
      run_cb(w, me, r, 0);
    }
  }
  if (w->lock) pthread_mutex_unlock(w->lock);
}

/* One batch from queue q: runs its watches' events; returns how many ran
 * (the kick is not counted), or -1 when the queue had nothing.  A thief
 * (q is not its own) that takes q's kick puts it back: it was meant for
 * q's thread, which would otherwise sleep on, no longer marked idle. */
static int run_batch(queue_t *q, int theirs, ab_reactor_t *me, int *full) {
  struct epoll_event ev[SET_BATCH];
  int n = epoll_wait(q->epfd, ev, SET_BATCH, 0);
  if (n <= 0) return -1;
  int ran = 0;
  for (int i = 0; i < n; i++) {
    if (ev[i].data.ptr == &kick_mark) {
      if (theirs) {
        uint64_t one = 1;
        (void)!write(q->kick, &one, sizeof(one));
      }
      continue;
    }
    dispatch(ev[i].data.u64, ev[i].events, me);
    ran++;
  }
  *full = n == SET_BATCH;
  return ran;
}

int ab_reactor_set_run(ab_reactor_set_t *s, ab_reactor_t *me) {
  queue_t *own = &s->q[me->slot];
  int total = 0, full = 0, round = 0;
  /* not done at a short batch: what these callbacks sent to a peer in this
   * process (the other end of a connection here) is ready now, and taken
   * here it stays on this core */
  for (; round < SET_ROUNDS; round++) {
    int ran = run_batch(own, 0, me, &full);
    if (ran < 0) break;
    total += ran;
  }
  if (total == 0) {
    /* nothing of its own: steal one batch from the next queue that has
     * one; what it runs moves here */
    for (int k = 1; k < s->n && total == 0; k++) {
      int ran = run_batch(&s->q[(me->slot + k) % s->n], 1, me, &full);
      if (ran > 0) total = ran;
    }
    atomic_store_explicit(&own->idle, total == 0, memory_order_relaxed);
    return total;
  }
  atomic_store_explicit(&own->idle, 0, memory_order_relaxed);
  if (round == SET_ROUNDS && full && s->n > 1) {
    /* more is ready than this thread ran: one idle thread comes to steal */
    for (int k = 1; k < s->n; k++) {
      queue_t *q = &s->q[(me->slot + k) % s->n];
      if (atomic_load_explicit(&q->idle, memory_order_relaxed) &&
          atomic_exchange_explicit(&q->idle, 0, memory_order_relaxed)) {
        uint64_t one = 1;
        (void)!write(q->kick, &one, sizeof(one));
        break;
      }
    }
  }
  return total;
}
