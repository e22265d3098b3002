/* test_reactor_shared.c -- shared:N's reactor (io/reactor_shared.c): a
 * watch runs on the thread whose queue it is in, moves to a thread that
 * stole it, is not stolen from a queue while the thief has events of its
 * own, a thread left with more than it can run asks an idle one to steal,
 * and a thief leaves another thread's kick in place; an event taken before
 * a watch was closed and started again on a new descriptor is dropped
 * (once, and under load: four threads while the home reopens); a failed
 * re-arm is reported; two threads serving the set never run one watch at
 * once (with TSan: spec/tsan_check.sh runs this test too). */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/reactor.h"
#include "test/ab_test.h"

enum { SLOTS = 2, MANY = 200 };

typedef struct {
  ab_reactor_watch_t w;
  int fd, peer;
  int runs;                /* callbacks run */
  void *last;              /* owner of the thread that ran the last one */
  int consume;             /* read what is there (else it stays ready) */
  int drop_fd;             /* close the descriptor in the next callback */
  int status;              /* the last callback's status */
  atomic_int inside;       /* callbacks running now */
  atomic_int overlap;      /* times a callback found another running */
  atomic_long echoed;
  pthread_mutex_t mu;      /* w.lock, as the engine's connections have */
} item_t;

static void on_ready(ab_reactor_watch_t *w, int status, int events) {
  item_t *it = w->data;
  (void)status;
  if (atomic_fetch_add(&it->inside, 1) != 0) atomic_fetch_add(&it->overlap, 1);
  it->runs++;
  it->last = w->running;
  it->status = status;
  if (it->drop_fd) { /* its re-arm after this callback fails */
    it->drop_fd = 0;
    close(it->fd);
    it->fd = -1;
  }
  if ((events & AB_REACTOR_READABLE) && it->consume) {
    char buf[64];
    ssize_t n = read(it->fd, buf, sizeof(buf));
    if (n > 0) {
      /* an echo: the peer end gets it back, so it is ready again */
      (void)!write(it->fd, buf, (size_t)n);
      atomic_fetch_add(&it->echoed, 1);
    }
  }
  atomic_fetch_sub(&it->inside, 1);
}

static void item_open(item_t *it, ab_reactor_t *r, int consume) {
  memset(it, 0, sizeof(*it));
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
  it->fd = sv[0];
  it->peer = sv[1];
  it->consume = consume;
  CHECK(ab_reactor_watch_init(r, &it->w, it->fd, on_ready) == 0);
  it->w.data = it;
  pthread_mutex_init(&it->mu, NULL);
  it->w.lock = &it->mu;
  CHECK(ab_reactor_watch_start(&it->w, AB_REACTOR_READABLE) == 0);
}

static void item_close(item_t *it) {
  ab_reactor_watch_close(&it->w);
  pthread_mutex_destroy(&it->mu);
  if (it->fd >= 0) close(it->fd);
  close(it->peer);
}

static int readable(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static int owner0, owner1;

/* A watch made through thread 0's reactor is in thread 0's queue; thread 1
 * steals it when it has nothing, and it stays with thread 1 after. */
static void test_home_and_steal(void) {
  ab_reactor_set_t *s;
  CHECK(ab_reactor_set_open(&s, SLOTS) == 0);
  ab_reactor_t r0, r1;
  ab_reactor_shared_init(&r0, s, &owner0, 0);
  ab_reactor_shared_init(&r1, s, &owner1, 1);
  item_t a;
  item_open(&a, &r0, 1);
  CHECK(ab_reactor_set_run(s, &r0) == 0); /* nothing ready yet */
  CHECK(write(a.peer, "x", 1) == 1);
  CHECK(readable(ab_reactor_set_fd(s, 0)));
  CHECK(!readable(ab_reactor_set_fd(s, 1)));
  CHECK(ab_reactor_set_run(s, &r1) == 1); /* stolen */
  CHECK(a.runs == 1 && a.last == &owner1);
  char c;
  CHECK(read(a.peer, &c, 1) == 1); /* the echo */
  CHECK(write(a.peer, "y", 1) == 1);
  /* now in thread 1's queue */
  CHECK(readable(ab_reactor_set_fd(s, 1)));
  CHECK(!readable(ab_reactor_set_fd(s, 0)));
  CHECK(ab_reactor_set_run(s, &r1) == 1);
  CHECK(a.runs == 2 && a.last == &owner1);
  item_close(&a);
  ab_reactor_set_close(s);
}

/* A thread with events of its own runs only those. */
static void test_no_steal_when_busy(void) {
  ab_reactor_set_t *s;
  CHECK(ab_reactor_set_open(&s, SLOTS) == 0);
  ab_reactor_t r0, r1;
  ab_reactor_shared_init(&r0, s, &owner0, 0);
  ab_reactor_shared_init(&r1, s, &owner1, 1);
  item_t a, b;
  item_open(&a, &r0, 1);
  item_open(&b, &r1, 1);
  CHECK(write(a.peer, "x", 1) == 1);
  CHECK(write(b.peer, "x", 1) == 1);
  CHECK(ab_reactor_set_run(s, &r1) == 1);
  CHECK(b.runs == 1 && a.runs == 0);
  CHECK(ab_reactor_set_run(s, &r0) == 1);
  CHECK(a.runs == 1 && a.last == &owner0);
  item_close(&a);
  item_close(&b);
  ab_reactor_set_close(s);
}

/* More ready than one turn runs: the idle thread is asked to steal. */
static void test_kick_idle(void) {
  static item_t many[MANY];
  ab_reactor_set_t *s;
  CHECK(ab_reactor_set_open(&s, SLOTS) == 0);
  ab_reactor_t r0, r1;
  ab_reactor_shared_init(&r0, s, &owner0, 0);
  ab_reactor_shared_init(&r1, s, &owner1, 1);
  CHECK(ab_reactor_set_run(s, &r1) == 0); /* thread 1 found nothing: idle */
  for (int i = 0; i < MANY; i++) {
    item_open(&many[i], &r0, 0); /* never consumed: stays ready */
    CHECK(write(many[i].peer, "x", 1) == 1);
  }
  CHECK(!readable(ab_reactor_set_fd(s, 1)));
  int ran = ab_reactor_set_run(s, &r0);
  CHECK(ran > 0 && ran < MANY);
  CHECK(readable(ab_reactor_set_fd(s, 1))); /* kicked */
  int stolen = ab_reactor_set_run(s, &r1);
  CHECK(stolen > 0);
  int on1 = 0;
  for (int i = 0; i < MANY; i++) on1 += many[i].last == &owner1;
  CHECK(on1 == stolen);
  for (int i = 0; i < MANY; i++) item_close(&many[i]);
  ab_reactor_set_close(s);
}

/* A thief that finds another thread's kick in that thread's queue (it
 * looks there before the busy queue) leaves it there: the kicked thread
 * still wakes to steal.  With three threads: 0 is busy and kicks 1, then
 * 2; 1 wakes, looks in 2's queue first, and steals from 0. */
static void test_kick_not_eaten(void) {
  static item_t many[MANY];
  static int owner2;
  ab_reactor_set_t *s;
  CHECK(ab_reactor_set_open(&s, 3) == 0);
  ab_reactor_t r0, r1, r2;
  ab_reactor_shared_init(&r0, s, &owner0, 0);
  ab_reactor_shared_init(&r1, s, &owner1, 1);
  ab_reactor_shared_init(&r2, s, &owner2, 2);
  CHECK(ab_reactor_set_run(s, &r1) == 0); /* idle */
  CHECK(ab_reactor_set_run(s, &r2) == 0); /* idle */
  for (int i = 0; i < MANY; i++) {
    item_open(&many[i], &r0, 0);
    CHECK(write(many[i].peer, "x", 1) == 1);
  }
  CHECK(ab_reactor_set_run(s, &r0) > 0); /* kicks 1 */
  CHECK(readable(ab_reactor_set_fd(s, 1)));
  CHECK(ab_reactor_set_run(s, &r0) > 0); /* kicks 2 */
  CHECK(readable(ab_reactor_set_fd(s, 2)));
  CHECK(ab_reactor_set_run(s, &r1) > 0); /* steals from 0, passing 2's queue */
  CHECK(readable(ab_reactor_set_fd(s, 2))); /* 2 is still asked to steal */
  CHECK(ab_reactor_set_run(s, &r2) > 0);
  for (int i = 0; i < MANY; i++) item_close(&many[i]);
  ab_reactor_set_close(s);
}

/* A thread that took a watch's event before the watch was closed, and
 * waits for its lock while the owner closes it and starts it again on a
 * new descriptor (a reopened connection reuses its watch), does not run
 * that old event on the new watch: it had nothing ready. */
typedef struct {
  ab_reactor_set_t *s;
  ab_reactor_t *r;
} runner_t;

static void *run_once(void *arg) {
  runner_t *ru = arg;
  (void)ab_reactor_set_run(ru->s, ru->r);
  return NULL;
}

static void test_stale_event_after_reopen(void) {
  ab_reactor_set_t *s;
  CHECK(ab_reactor_set_open(&s, SLOTS) == 0);
  ab_reactor_t r0, r1;
  ab_reactor_shared_init(&r0, s, &owner0, 0);
  ab_reactor_shared_init(&r1, s, &owner1, 1);
  item_t a;
  item_open(&a, &r0, 1);
  CHECK(write(a.peer, "x", 1) == 1);
  pthread_mutex_lock(&a.mu); /* the owner, outside a callback */
  runner_t ru = {s, &r1};
  pthread_t th;
  CHECK(pthread_create(&th, NULL, run_once, &ru) == 0);
  /* thread 1 has taken the event when the set no longer shows it */
  for (int i = 0; i < 5000 && readable(ab_reactor_set_fd(s, 0)); i++) usleep(1000);
  CHECK(!readable(ab_reactor_set_fd(s, 0)));
  usleep(20000); /* and waits for the lock */
  ab_reactor_watch_close(&a.w);
  close(a.fd);
  close(a.peer);
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
  a.fd = sv[0];
  a.peer = sv[1];
  /* as ab_sockio_start: the lock and the start count are kept */
  CHECK(ab_reactor_watch_init(&r0, &a.w, a.fd, on_ready) == 0);
  a.w.data = &a;
  CHECK(ab_reactor_watch_start(&a.w, AB_REACTOR_READABLE) == 0);
  pthread_mutex_unlock(&a.mu);
  pthread_join(th, NULL);
  CHECK_EQ_U64(a.runs, 0); /* nothing ran for the old descriptor's event */
  CHECK(write(a.peer, "y", 1) == 1);
  CHECK(ab_reactor_set_run(s, &r0) == 1); /* the new one works */
  CHECK_EQ_U64(a.runs, 1);
  item_close(&a);
  ab_reactor_set_close(s);
}

/* A re-arm after the callback that fails (here: its descriptor is gone;
 * in a real run an epoll set out of room, after the move to a thief's
 * queue) is reported to the watch as that error, the watch stopped, as
 * EPOLLERR is -- not left unwatched without a word (a server connection
 * has no timeout to end it). */
static void test_rearm_failure_reported(void) {
  ab_reactor_set_t *s;
  CHECK(ab_reactor_set_open(&s, SLOTS) == 0);
  ab_reactor_t r0, r1;
  ab_reactor_shared_init(&r0, s, &owner0, 0);
  ab_reactor_shared_init(&r1, s, &owner1, 1);
  item_t a;
  item_open(&a, &r0, 0);
  a.drop_fd = 1;
  CHECK(write(a.peer, "x", 1) == 1);
  CHECK(ab_reactor_set_run(s, &r1) == 1); /* stolen; moving it fails */
  CHECK_EQ_U64(a.runs, 2);
  CHECK(a.status == UV_EBADF);
  CHECK(a.last == &owner1);
  CHECK(ab_reactor_set_run(s, &r0) == 0);
  CHECK(ab_reactor_set_run(s, &r1) == 0);
  CHECK_EQ_U64(a.runs, 2); /* stopped */
  item_close(&a);
  ab_reactor_set_close(s);
}

/* Two threads serving the set, echoes in flight on every pair: no watch's
 * callback runs on both at once, and every echo comes back. */
typedef struct {
  ab_reactor_set_t *s;
  ab_reactor_t *r;
  atomic_int *stop;
} server_t;

static void *serve(void *arg) {
  server_t *sv = arg;
  while (!atomic_load(sv->stop)) {
    if (ab_reactor_set_run(sv->s, sv->r) == 0) {
      struct pollfd p = {.fd = ab_reactor_set_fd(sv->s, sv->r->slot), .events = POLLIN};
      (void)poll(&p, 1, 1);
    }
  }
  return NULL;
}

static void test_two_threads(void) {
  enum { PAIRS = 32, ROUNDS = 2000 };
  static item_t it[PAIRS];
  ab_reactor_set_t *s;
  CHECK(ab_reactor_set_open(&s, SLOTS) == 0);
  ab_reactor_t r[SLOTS];
  ab_reactor_shared_init(&r[0], s, &owner0, 0);
  ab_reactor_shared_init(&r[1], s, &owner1, 1);
  for (int i = 0; i < PAIRS; i++) item_open(&it[i], &r[i % SLOTS], 1);
  atomic_int stop = 0;
  server_t sv[SLOTS];
  pthread_t th[SLOTS];
  for (int k = 0; k < SLOTS; k++) {
    sv[k] = (server_t){s, &r[k], &stop};
    CHECK(pthread_create(&th[k], NULL, serve, &sv[k]) == 0);
  }
  /* this thread is every pair's peer: one byte out, one back, ROUNDS times */
  long back = 0;
  for (int round = 0; round < ROUNDS; round++) {
    for (int i = 0; i < PAIRS; i++) CHECK(write(it[i].peer, "e", 1) == 1);
    for (int i = 0; i < PAIRS; i++) {
      struct pollfd p = {.fd = it[i].peer, .events = POLLIN};
      char c;
      if (poll(&p, 1, 5000) == 1 && read(it[i].peer, &c, 1) == 1) back++;
    }
  }
  atomic_store(&stop, 1);
  for (int k = 0; k < SLOTS; k++) pthread_join(th[k], NULL);
  CHECK_EQ_U64(back, (uint64_t)PAIRS * ROUNDS);
  int overlap = 0;
  long echoed = 0;
  for (int i = 0; i < PAIRS; i++) {
    overlap += atomic_load(&it[i].overlap);
    echoed += atomic_load(&it[i].echoed);
  }
  CHECK_EQ_U64(overlap, 0);
  CHECK(echoed > 0 && echoed <= (long)PAIRS * ROUNDS);
  for (int i = 0; i < PAIRS; i++) item_close(&it[i]);
  ab_reactor_set_close(s);
}

/* Four threads serving the set while this one, as the connections' home,
 * keeps closing watches and starting them again on new descriptors with
 * data waiting (reopens under load): every callback finds data on its
 * descriptor (none runs for an event of an old one), and none runs on two
 * threads at once. */
typedef struct {
  item_t it;
  atomic_long spurious;     /* a readable callback that found nothing */
} reopen_t;

static void on_reopen_ready(ab_reactor_watch_t *w, int status, int events) {
  reopen_t *ro = w->data;
  item_t *it = &ro->it;
  if (atomic_fetch_add(&it->inside, 1) != 0) atomic_fetch_add(&it->overlap, 1);
  if (status == 0 && (events & AB_REACTOR_READABLE)) {
    char buf[256];
    ssize_t n = read(it->fd, buf, sizeof(buf));
    if (n <= 0) atomic_fetch_add(&ro->spurious, 1);
    else atomic_fetch_add(&it->echoed, n);
  }
  atomic_fetch_sub(&it->inside, 1);
}

static void reopen_start(reopen_t *ro, ab_reactor_t *r) {
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
  ro->it.fd = sv[0];
  ro->it.peer = sv[1];
  CHECK(write(ro->it.peer, "r", 1) == 1); /* ready at once */
  CHECK(ab_reactor_watch_init(r, &ro->it.w, ro->it.fd, on_reopen_ready) == 0);
  ro->it.w.data = ro;
  CHECK(ab_reactor_watch_start(&ro->it.w, AB_REACTOR_READABLE) == 0);
}

static void test_reopen_under_load(void) {
  enum { N = 4, ITEMS = 16, REOPENS = 3000 };
  static reopen_t ro[ITEMS];
  static int owners[N];
  ab_reactor_set_t *s;
  CHECK(ab_reactor_set_open(&s, N) == 0);
  ab_reactor_t r[N];
  for (int k = 0; k < N; k++) ab_reactor_shared_init(&r[k], s, &owners[k], k);
  for (int i = 0; i < ITEMS; i++) {
    memset(&ro[i], 0, sizeof(ro[i]));
    pthread_mutex_init(&ro[i].it.mu, NULL);
    ab_reactor_watch_set_lock(&ro[i].it.w, &ro[i].it.mu);
    reopen_start(&ro[i], &r[i % N]);
  }
  atomic_int stop = 0;
  server_t sv[N];
  pthread_t th[N];
  for (int k = 0; k < N; k++) {
    sv[k] = (server_t){s, &r[k], &stop};
    CHECK(pthread_create(&th[k], NULL, serve, &sv[k]) == 0);
  }
  for (int n = 0; n < REOPENS; n++) {
    reopen_t *o = &ro[n % ITEMS];
    pthread_mutex_lock(&o->it.mu);
    ab_reactor_watch_close(&o->it.w);
    close(o->it.fd);
    close(o->it.peer);
    reopen_start(o, &r[n % N]);
    pthread_mutex_unlock(&o->it.mu);
    (void)!write(ro[(n + 7) % ITEMS].it.peer, "d", 1); /* load on another */
  }
  atomic_store(&stop, 1);
  for (int k = 0; k < N; k++) pthread_join(th[k], NULL);
  long spurious = 0, overlap = 0, got = 0;
  for (int i = 0; i < ITEMS; i++) {
    spurious += atomic_load(&ro[i].spurious);
    overlap += atomic_load(&ro[i].it.overlap);
    got += atomic_load(&ro[i].it.echoed);
    ab_reactor_watch_close(&ro[i].it.w);
    close(ro[i].it.fd);
    close(ro[i].it.peer);
    pthread_mutex_destroy(&ro[i].it.mu);
  }
  CHECK_EQ_U64(spurious, 0);
  CHECK_EQ_U64(overlap, 0);
  CHECK(got > 0);
  ab_reactor_set_close(s);
}

int main(void) {
  test_home_and_steal();
  test_no_steal_when_busy();
  test_kick_idle();
  test_kick_not_eaten();
  test_stale_event_after_reopen();
  test_rearm_failure_reported();
  test_two_threads();
  test_reopen_under_load();
  TEST_DONE();
}
