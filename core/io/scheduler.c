/* scheduler.c -- see scheduler.h.
 *
 * Lifetime of a task's memory: `holds` counts the reasons it must stay --
 * one while the task has not ended, one while its sleep timer is open, one
 * while a write/connect request of it is inside libuv.  Each operation's
 * state (the timer, the request, the read target) lives in the task struct
 * itself, so a cancelled task's late libuv callback always finds valid
 * memory, and the per-message path allocates nothing.
 *
 * Threads: a task may end on another thread than its scheduler's loop
 * (shared:N resumes a connection's task on whichever thread runs the
 * connection), so the list of live tasks and the counts are guarded by the
 * scheduler's mutex, taken when a task is made, ends or is freed -- never
 * per resume.  Everything else of a task is its owner's to serialise.
 */
#include "io/scheduler.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "base/coro.h"

enum { T_NEW, T_RUNNING, T_SUSPENDED, T_ENDED };

typedef struct link_s {
  struct link_s *prev, *next;
} link_t;

struct ab_sched_s {
  uv_loop_t *loop;
  pthread_mutex_t mu; /* guards the three below (see the top) */
  link_t live;  /* tasks not ended (circular, sentinel) */
  size_t nlive;
  size_t nmem;  /* task structs not yet freed */
};

struct ab_task_s {
  link_t link; /* first member: link_t* <-> ab_task_t* */
  ab_sched_t *sched;
  const ab_task_kind_t *kind;
  void *ctx;
  int state;
  int cancelled;
  int result;
  int holds;
  void (*cleanup)(void *);
  void *cleanup_arg;
  void (*on_exit)(ab_task_t *, void *);
  void *exit_arg;
  /* C kind */
  void (*fn)(void *);
  void *arg;
  /* ab_task_sleep */
  uv_timer_t timer;
  int timer_open;
  uint64_t sleep_until; /* uv_hrtime() ns */
  /* ab_task_write / ab_task_connect: one request at a time */
  union {
    uv_write_t write;
    uv_connect_t connect;
  } req;
  int req_waiting; /* the task waits for req (0: done, or orphaned by cancel) */
  /* ab_task_read */
  uv_stream_t *rd_stream;
  void *rd_saved_data;
  uint8_t *rd_buf;
  size_t rd_cap;
  size_t *rd_got;
};

static _Thread_local ab_task_t *cur_task;

static void die(const char *msg) {
  fprintf(stderr, "arkbench: scheduler misuse: %s\n", msg);
  abort();
}

/* ---- lists -------------------------------------------------------------- */

static void list_init(link_t *h) { h->prev = h->next = h; }
static int list_empty(const link_t *h) { return h->next == h; }
static void list_remove(link_t *l) {
  l->prev->next = l->next;
  l->next->prev = l->prev;
  l->prev = l->next = l;
}
static void list_push(link_t *h, link_t *l) {
  l->prev = h->prev;
  l->next = h;
  h->prev->next = l;
  h->prev = l;
}

/* ---- scheduler ---------------------------------------------------------- */

int ab_sched_new(ab_sched_t **out, uv_loop_t *loop) {
  if (out == NULL) return AB_EINVAL;
  *out = NULL;
  if (loop == NULL) return AB_EINVAL;
  ab_sched_t *s = calloc(1, sizeof(*s));
  if (s == NULL) return AB_ENOMEM;
  s->loop = loop;
  pthread_mutex_init(&s->mu, NULL);
  list_init(&s->live);
  *out = s;
  return 0;
}

int ab_sched_free(ab_sched_t *s) {
  if (s == NULL) return 0;
  pthread_mutex_lock(&s->mu);
  size_t left = s->nmem;
  pthread_mutex_unlock(&s->mu);
  if (left != 0) return UV_EBUSY;
  pthread_mutex_destroy(&s->mu);
  free(s);
  return 0;
}

uv_loop_t *ab_sched_loop(const ab_sched_t *s) { return s->loop; }

size_t ab_sched_live(const ab_sched_t *s) {
  ab_sched_t *m = (ab_sched_t *)s; /* the lock only */
  pthread_mutex_lock(&m->mu);
  size_t n = s->nlive;
  pthread_mutex_unlock(&m->mu);
  return n;
}

/* ---- task life ---------------------------------------------------------- */

static void drop(ab_task_t *t) {
  if (--t->holds > 0) return;
  ab_sched_t *s = t->sched;
  pthread_mutex_lock(&s->mu);
  s->nmem--;
  pthread_mutex_unlock(&s->mu);
  free(t);
}

static void timer_closed(uv_handle_t *h) { drop((ab_task_t *)h->data); }

static void end(ab_task_t *t) {
  ab_sched_t *s = t->sched;
  t->state = T_ENDED;
  pthread_mutex_lock(&s->mu);
  list_remove(&t->link);
  s->nlive--;
  pthread_mutex_unlock(&s->mu);
  if (t->on_exit != NULL) t->on_exit(t, t->exit_arg);
  t->kind->release(t);
  t->ctx = NULL;
  if (t->timer_open) {
    t->timer_open = 0;
    uv_close((uv_handle_t *)&t->timer, timer_closed); /* its own hold */
  }
  drop(t); /* the "not ended" hold */
}

/* Runs t until it suspends or ends, nested in whoever calls. */
static void run(ab_task_t *t) {
  ab_task_t *prev = cur_task;
  cur_task = t;
  t->state = T_RUNNING;
  int ended = t->kind->resume(t);
  cur_task = prev;
  if (ended)
    end(t);
  else
    t->state = T_SUSPENDED;
}

int ab_task_new(ab_sched_t *s, ab_task_t **out, const ab_task_kind_t *kind, void *ctx) {
  if (out == NULL) return AB_EINVAL;
  *out = NULL;
  if (s == NULL || kind == NULL || kind->resume == NULL || kind->release == NULL)
    return AB_EINVAL;
  ab_task_t *t = calloc(1, sizeof(*t));
  if (t == NULL) return AB_ENOMEM;
  t->sched = s;
  t->kind = kind;
  t->ctx = ctx;
  t->state = T_NEW;
  t->holds = 1;
  pthread_mutex_lock(&s->mu);
  list_push(&s->live, &t->link);
  s->nlive++;
  s->nmem++;
  pthread_mutex_unlock(&s->mu);
  *out = t;
  return 0;
}

/* The C kind: ctx is an ab_coro_t running c_main(task). */
static void c_main(void *p) {
  ab_task_t *t = p;
  t->fn(t->arg);
}
static int c_resume(ab_task_t *t) {
  ab_coro_resume(t->ctx);
  return ab_coro_done(t->ctx);
}
static void c_release(ab_task_t *t) { ab_coro_free(t->ctx); }
static const ab_task_kind_t c_kind = {AB_TASK_C, "c", c_resume, c_release};

int ab_task_c_new(ab_sched_t *s, ab_task_t **out, size_t stack_size,
                  void (*fn)(void *), void *arg) {
  if (out == NULL) return AB_EINVAL;
  *out = NULL;
  if (s == NULL || fn == NULL) return AB_EINVAL;
  ab_task_t *t;
  int rc = ab_task_new(s, &t, &c_kind, NULL);
  if (rc != 0) return rc;
  t->fn = fn;
  t->arg = arg;
  ab_coro_t *co;
  rc = ab_coro_new(&co, stack_size, c_main, t);
  if (rc != 0) {
    pthread_mutex_lock(&s->mu);
    list_remove(&t->link);
    s->nlive--;
    s->nmem--;
    pthread_mutex_unlock(&s->mu);
    free(t);
    return rc;
  }
  t->ctx = co;
  *out = t;
  return 0;
}

int ab_task_start(ab_task_t *t) {
  if (t == NULL || t->state != T_NEW) return AB_EINVAL;
  run(t);
  return 0;
}

void ab_task_on_exit(ab_task_t *t, void (*fn)(ab_task_t *, void *), void *arg) {
  t->on_exit = fn;
  t->exit_arg = arg;
}

ab_task_t *ab_task_current(void) { return cur_task; }
ab_sched_t *ab_task_sched(const ab_task_t *t) { return t->sched; }
void *ab_task_ctx(const ab_task_t *t) { return t->ctx; }
const ab_task_kind_t *ab_task_kind(const ab_task_t *t) { return t->kind; }
int ab_task_cancelled(const ab_task_t *t) { return t->cancelled; }
int ab_task_result(const ab_task_t *t) { return t->result; }

void ab_task_set_cleanup(ab_task_t *t, void (*fn)(void *), void *arg) {
  t->cleanup = fn;
  t->cleanup_arg = fn != NULL ? arg : NULL;
}

static void run_cleanup(ab_task_t *t) {
  void (*fn)(void *) = t->cleanup;
  t->cleanup = NULL;
  if (fn != NULL) fn(t->cleanup_arg);
}

void ab_task_wake(ab_task_t *t, int result) {
  if (t->state != T_SUSPENDED) die("ab_task_wake of a task that is not suspended");
  t->cleanup = NULL;
  t->result = result;
  run(t);
}

void ab_sched_cancel(ab_task_t *t) {
  if (t->cancelled || t->state == T_ENDED) return;
  t->cancelled = 1;
  switch (t->state) {
  case T_NEW:
    end(t); /* never ran: nothing on its stack to unwind */
    break;
  case T_SUSPENDED:
    run_cleanup(t);
    t->result = AB_EINTR;
    run(t);
    break;
  default: /* running: its next blocking call returns AB_EINTR */
    break;
  }
}

void ab_sched_cancel_all(ab_sched_t *s) {
  /* Move the current tasks aside and cancel them one by one from there:
   * cancelling runs task code, which may end any task (each unlinks itself
   * from whichever list holds it) or start new ones (they go to s->live and
   * are left alone).  The lock is not held while task code runs. */
  pthread_mutex_lock(&s->mu);
  if (list_empty(&s->live)) {
    pthread_mutex_unlock(&s->mu);
    return;
  }
  link_t todo;
  todo.next = s->live.next;
  todo.prev = s->live.prev;
  todo.next->prev = &todo;
  todo.prev->next = &todo;
  list_init(&s->live);
  for (;;) {
    if (list_empty(&todo)) break;
    ab_task_t *t = (ab_task_t *)todo.next;
    list_remove(&t->link);
    list_push(&s->live, &t->link);
    pthread_mutex_unlock(&s->mu);
    ab_sched_cancel(t);
    pthread_mutex_lock(&s->mu);
  }
  pthread_mutex_unlock(&s->mu);
}

/* ---- suspension (C kind) ------------------------------------------------ */

/* The current C task, if the running coroutine is its own. */
static ab_task_t *c_task(void) {
  ab_task_t *t = cur_task;
  if (t == NULL || t->kind != &c_kind || t->ctx != ab_coro_current()) return NULL;
  return t;
}

int ab_task_suspend(void) {
  ab_task_t *t = c_task();
  if (t == NULL) return AB_EINVAL;
  if (t->cancelled) {
    run_cleanup(t);
    return AB_EINTR;
  }
  ab_coro_yield(); /* run() marks it suspended; wake or cancel resume it */
  return t->result;
}

/* Entry check of the blocking primitives. */
static int enter(ab_task_t **out) {
  ab_task_t *t = c_task();
  if (t == NULL) return AB_EINVAL;
  if (t->cancelled) return AB_EINTR;
  *out = t;
  return 0;
}

/* ---- sleep -------------------------------------------------------------- */

static uint64_t ms_until(uint64_t until_ns, uint64_t now_ns) {
  return until_ns > now_ns ? (until_ns - now_ns + 999999) / 1000000 : 0;
}

static void sleep_cb(uv_timer_t *tm) {
  ab_task_t *t = tm->data;
  uint64_t now = uv_hrtime();
  if (now < t->sleep_until) {
    /* the loop's millisecond clock (possibly CLOCK_MONOTONIC_COARSE) runs
     * behind: never wake early */
    uv_timer_start(tm, sleep_cb, ms_until(t->sleep_until, now), 0);
    return;
  }
  ab_task_wake(t, 0);
}

static void sleep_cleanup(void *arg) {
  ab_task_t *t = arg;
  uv_timer_stop(&t->timer);
}

int ab_task_sleep(double s) {
  if (!(s >= 0) || s > 1e9) return AB_EINVAL;
  ab_task_t *t;
  int rc = enter(&t);
  if (rc != 0) return rc;
  if (!t->timer_open) {
    rc = uv_timer_init(t->sched->loop, &t->timer);
    if (rc != 0) return rc;
    t->timer.data = t;
    t->timer_open = 1;
    t->holds++;
  }
  uint64_t now = uv_hrtime();
  t->sleep_until = now + (uint64_t)ceil(s * 1e9);
  uv_update_time(t->sched->loop);
  rc = uv_timer_start(&t->timer, sleep_cb, ms_until(t->sleep_until, now), 0);
  if (rc != 0) return rc;
  ab_task_set_cleanup(t, sleep_cleanup, t);
  return ab_task_suspend();
}

/* ---- read --------------------------------------------------------------- */

static void read_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  (void)hint;
  ab_task_t *t = h->data;
  buf->base = (char *)t->rd_buf;
  buf->len = t->rd_cap;
}

static void read_stop(ab_task_t *t) {
  uv_stream_t *s = t->rd_stream;
  uv_read_stop(s);
  s->data = t->rd_saved_data;
  t->rd_stream = NULL;
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  (void)buf;
  ab_task_t *t = s->data;
  if (n == 0) return; /* EAGAIN: keep waiting */
  read_stop(t);
  if (n > 0) {
    *t->rd_got = (size_t)n;
    ab_task_wake(t, 0);
  } else {
    ab_task_wake(t, n == UV_EOF ? AB_ECLOSED : (int)n);
  }
}

static void read_cleanup(void *arg) { read_stop(arg); }

int ab_task_read(uv_stream_t *s, uint8_t *buf, size_t cap, size_t *got) {
  if (got != NULL) *got = 0;
  if (s == NULL || buf == NULL || cap == 0 || got == NULL) return AB_EINVAL;
  ab_task_t *t;
  int rc = enter(&t);
  if (rc != 0) return rc;
  t->rd_stream = s;
  t->rd_saved_data = s->data;
  t->rd_buf = buf;
  t->rd_cap = cap;
  t->rd_got = got;
  s->data = t;
  /* a generic stream read (pipes, tests): benchmark connections read
   * through io/conn.h, never here */
  rc = uv_read_start(s, read_alloc, read_cb);
  if (rc != 0) {
    s->data = t->rd_saved_data;
    t->rd_stream = NULL;
    return rc;
  }
  ab_task_set_cleanup(t, read_cleanup, t);
  return ab_task_suspend();
}

/* ---- write and connect: requests that cannot be withdrawn ---------------- */

/* A write or connect cannot be taken back from libuv: cancelling the task
 * orphans the request (req_waiting = 0) and its callback, which always
 * comes (with UV_ECANCELED once the handle is closed), only releases the
 * request's hold. */
static void req_done(ab_task_t *t, int status) {
  if (t->req_waiting) {
    t->req_waiting = 0;
    t->holds--; /* the task has not ended: holds stays > 0 */
    ab_task_wake(t, status);
  } else {
    drop(t);
  }
}

static void req_cleanup(void *arg) {
  ab_task_t *t = arg;
  t->req_waiting = 0;
}

static void write_cb(uv_write_t *req, int status) { req_done(req->data, status); }

int ab_task_write(uv_stream_t *s, const uint8_t *p, size_t n) {
  if (s == NULL || (p == NULL && n > 0)) return AB_EINVAL;
  ab_task_t *t;
  int rc = enter(&t);
  if (rc != 0) return rc;
  if (n == 0) return 0;
  uv_buf_t b = uv_buf_init((char *)p, n > UINT32_MAX ? UINT32_MAX : (unsigned)n);
  int w = uv_try_write(s, &b, 1);
  if (w < 0 && w != UV_EAGAIN) return w;
  size_t done = w > 0 ? (size_t)w : 0;
  while (done < n) {
    size_t left = n - done;
    b = uv_buf_init((char *)p + done, left > UINT32_MAX ? UINT32_MAX : (unsigned)left);
    t->req.write.data = t;
    rc = uv_write(&t->req.write, s, &b, 1, write_cb);
    if (rc != 0) return rc;
    t->req_waiting = 1;
    t->holds++;
    ab_task_set_cleanup(t, req_cleanup, t);
    rc = ab_task_suspend();
    if (rc != 0) return rc;
    done += b.len;
  }
  return 0;
}

static void connect_cb(uv_connect_t *req, int status) { req_done(req->data, status); }

int ab_task_connect(uv_tcp_t *tcp, const struct sockaddr *addr) {
  if (tcp == NULL || addr == NULL) return AB_EINVAL;
  ab_task_t *t;
  int rc = enter(&t);
  if (rc != 0) return rc;
  t->req.connect.data = t;
  rc = uv_tcp_connect(&t->req.connect, tcp, addr, connect_cb);
  if (rc != 0) return rc;
  t->req_waiting = 1;
  t->holds++;
  ab_task_set_cleanup(t, req_cleanup, t);
  return ab_task_suspend();
}
