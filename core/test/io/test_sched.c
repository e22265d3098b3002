/* test_sched.c -- scheduler.h on a real libuv loop: sleep, a 1 MiB echo
 * through blocking-style read/write, and cancellation (2000 tasks blocked in
 * ab_task_read on idle sockets, plus tasks blocked in sleep and in a write
 * nobody reads, a never-started one and a self-cancelled one).  Under ASan
 * (spec/asan_check.sh) the cancellation tests also prove that nothing leaks
 * and no freed memory is touched. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/ab_error.h"
#include "base/coro.h"
#include "io/scheduler.h"
#include "test/ab_test.h"

static uv_loop_t loop;
static ab_sched_t *sched;

static void setup(void) {
  CHECK(uv_loop_init(&loop) == 0);
  CHECK(ab_sched_new(&sched, &loop) == 0);
}

static void count_handle(uv_handle_t *h, void *arg) {
  (void)h;
  (*(int *)arg)++;
}

/* The loop has ended with nothing left: no handles at all, every task gone. */
static void teardown(void) {
  int handles = 0;
  uv_walk(&loop, count_handle, &handles);
  CHECK_EQ_U64(handles, 0);
  CHECK(!uv_loop_alive(&loop));
  CHECK_EQ_U64(ab_sched_live(sched), 0);
  CHECK(ab_sched_free(sched) == 0);
  CHECK(uv_loop_close(&loop) == 0);
}

static void free_on_close(uv_handle_t *h) { free(h); }

static int listen_any(uv_tcp_t *srv, uv_connection_cb cb, struct sockaddr_in *bound) {
  struct sockaddr_in a;
  uv_ip4_addr("127.0.0.1", 0, &a);
  int rc = uv_tcp_init(&loop, srv);
  if (rc == 0) rc = uv_tcp_bind(srv, (const struct sockaddr *)&a, 0);
  if (rc == 0) rc = uv_listen((uv_stream_t *)srv, 4096, cb);
  int len = sizeof(*bound);
  if (rc == 0) rc = uv_tcp_getsockname(srv, (struct sockaddr *)bound, &len);
  return rc;
}

/* ---- sleep ------------------------------------------------------------ */

typedef struct {
  double secs;
  int rc;
  uint64_t elapsed_ns;
  int exited;
} sleeper_t;

static void sleeper(void *p) {
  sleeper_t *s = p;
  uint64_t t0 = uv_hrtime();
  s->rc = ab_task_sleep(s->secs);
  s->elapsed_ns = uv_hrtime() - t0;
}

static void on_exit_count(ab_task_t *t, void *arg) {
  (void)t;
  (*(int *)arg)++;
}

static void test_sleep(void) {
  setup();
  sleeper_t s10 = {0.010, 1, 0, 0}, s0 = {0, 1, 0, 0}, s3 = {0.0031, 1, 0, 0};
  sleeper_t *all[] = {&s10, &s0, &s3};
  for (int i = 0; i < 3; i++) {
    ab_task_t *t;
    CHECK(ab_task_c_new(sched, &t, 0, sleeper, all[i]) == 0);
    ab_task_on_exit(t, on_exit_count, &all[i]->exited);
    CHECK(ab_task_start(t) == 0);
  }
  CHECK_EQ_U64(ab_sched_live(sched), 3);
  CHECK(ab_sched_free(sched) == UV_EBUSY);
  CHECK(uv_run(&loop, UV_RUN_DEFAULT) == 0);
  for (int i = 0; i < 3; i++) {
    CHECK(all[i]->rc == 0);
    CHECK(all[i]->exited == 1);
  }
  CHECK(s10.elapsed_ns >= 10000000);
  CHECK(s10.elapsed_ns < 1000000000);
  CHECK(s3.elapsed_ns >= 3100000);
  teardown();

  /* misuse: blocking calls outside a task */
  CHECK(ab_task_sleep(0.001) == AB_EINVAL);
  CHECK(ab_task_suspend() == AB_EINVAL);
  CHECK(ab_task_current() == NULL);
}

static void bad_sleeps(void *p) {
  int *ok = p;
  *ok = ab_task_sleep(-1) == AB_EINVAL && ab_task_sleep(NAN) == AB_EINVAL &&
        ab_task_sleep(1e10) == AB_EINVAL;
}

static void test_sleep_args(void) {
  setup();
  int ok = 0;
  ab_task_t *t;
  CHECK(ab_task_c_new(sched, &t, 0, bad_sleeps, &ok) == 0);
  CHECK(ab_task_start(t) == 0);
  CHECK(ok == 1);
  CHECK(uv_run(&loop, UV_RUN_DEFAULT) == 0);
  teardown();
}

/* ---- 1 MiB echo --------------------------------------------------------- */

#define ECHO_BYTES (1024 * 1024)

static uint8_t echo_src[ECHO_BYTES];
static uint8_t echo_dst[ECHO_BYTES];

typedef struct {
  uv_tcp_t listener;
  struct sockaddr_in addr;
  uv_tcp_t *client;
  int server_rc, client_rc, writer_rc;
  size_t server_bytes, received;
  int writer_done;
  int server_tasks;
} echo_t;

static echo_t echo;

static void echo_server_task(void *p) {
  uv_tcp_t *c = p;
  uint8_t buf[65536];
  for (;;) {
    size_t got;
    int rc = ab_task_read((uv_stream_t *)c, buf, sizeof(buf), &got);
    if (rc != 0) {
      echo.server_rc = rc;
      break;
    }
    echo.server_bytes += got;
    rc = ab_task_write((uv_stream_t *)c, buf, got);
    if (rc != 0) {
      echo.server_rc = rc;
      break;
    }
  }
  uv_close((uv_handle_t *)c, free_on_close);
}

static void echo_on_connection(uv_stream_t *srv, int status) {
  CHECK(status == 0);
  uv_tcp_t *c = malloc(sizeof(*c));
  uv_tcp_init(&loop, c);
  CHECK(uv_accept(srv, (uv_stream_t *)c) == 0);
  ab_task_t *t;
  CHECK(ab_task_c_new(sched, &t, 128 * 1024, echo_server_task, c) == 0);
  echo.server_tasks++;
  ab_task_start(t);
}

static void echo_writer_task(void *p) {
  uv_stream_t *s = p;
  /* small writes (uv_try_write takes them whole), then one large write
   * that the socket cannot take at once (uv_write + suspension) */
  size_t parts[] = {1, 15, 1000, 65536, 3};
  size_t off = 0;
  int rc = 0;
  for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]) && rc == 0; i++) {
    rc = ab_task_write(s, echo_src + off, parts[i]);
    off += parts[i];
  }
  if (rc == 0) rc = ab_task_write(s, echo_src + off, ECHO_BYTES - off);
  echo.writer_rc = rc;
  echo.writer_done = 1;
}

static void echo_client_task(void *p) {
  (void)p;
  uv_tcp_t *c = malloc(sizeof(*c));
  uv_tcp_init(&loop, c);
  echo.client = c;
  int rc = ab_task_connect(c, (const struct sockaddr *)&echo.addr);
  if (rc == 0) {
    ab_task_t *w;
    rc = ab_task_c_new(sched, &w, 0, echo_writer_task, c);
    if (rc == 0) rc = ab_task_start(w); /* runs until its first suspension */
  }
  while (rc == 0 && echo.received < ECHO_BYTES) {
    size_t got;
    /* odd-sized reads, never past the end */
    size_t cap = ECHO_BYTES - echo.received < 7777 ? ECHO_BYTES - echo.received : 7777;
    rc = ab_task_read((uv_stream_t *)c, echo_dst + echo.received, cap, &got);
    if (rc == 0) echo.received += got;
  }
  while (rc == 0 && !echo.writer_done) rc = ab_task_sleep(0);
  echo.client_rc = rc;
  uv_close((uv_handle_t *)c, free_on_close); /* the server reads EOF */
  uv_close((uv_handle_t *)&echo.listener, NULL);
}

static void test_echo(void) {
  setup();
  memset(&echo, 0, sizeof(echo));
  for (size_t i = 0; i < ECHO_BYTES; i++) echo_src[i] = (uint8_t)(i * 131 + (i >> 9));
  memset(echo_dst, 0, sizeof(echo_dst));
  CHECK(listen_any(&echo.listener, echo_on_connection, &echo.addr) == 0);
  ab_task_t *t;
  CHECK(ab_task_c_new(sched, &t, 0, echo_client_task, NULL) == 0);
  CHECK(ab_task_start(t) == 0);
  CHECK(uv_run(&loop, UV_RUN_DEFAULT) == 0);
  CHECK(echo.client_rc == 0);
  CHECK(echo.writer_rc == 0);
  CHECK(echo.server_rc == AB_ECLOSED);
  CHECK_EQ_U64(echo.server_tasks, 1);
  CHECK_EQ_U64(echo.server_bytes, ECHO_BYTES);
  CHECK_EQ_U64(echo.received, ECHO_BYTES);
  CHECK(memcmp(echo_src, echo_dst, ECHO_BYTES) == 0);
  teardown();
}

/* ---- cancellation of 2000 tasks blocked in ab_task_read ------------------ */

#define IDLE_CLIENTS 1000

typedef struct {
  uv_tcp_t listener;
  struct sockaddr_in addr;
  uv_timer_t deadline;
  int blocked;       /* tasks inside ab_task_read */
  int eintr;         /* reads that returned AB_EINTR */
  int other;         /* any other outcome */
  int returned;      /* task functions that returned */
  int exited;        /* on_exit callbacks */
  int closed;        /* handles closed by the tasks */
  uint64_t started;
  int timed_out;
} idle_t;

static idle_t idle;

static void idle_closed(uv_handle_t *h) {
  idle.closed++;
  free(h);
}

/* Client and server side alike: block in a read that never completes. */
static void idle_reader(uv_tcp_t *c) {
  uint8_t buf[256];
  size_t got = 99;
  idle.blocked++;
  int rc = ab_task_read((uv_stream_t *)c, buf, sizeof(buf), &got);
  idle.blocked--;
  if (rc == AB_EINTR && got == 0 && c->data == (void *)c)
    idle.eintr++; /* and s->data was given back */
  else
    idle.other++;
  /* cancelled: every further blocking call fails at once */
  if (ab_task_sleep(1) != AB_EINTR || ab_task_read((uv_stream_t *)c, buf, 1, &got) != AB_EINTR)
    idle.other++;
  uv_close((uv_handle_t *)c, idle_closed);
  idle.returned++;
}

static void idle_server_task(void *p) { idle_reader(p); }

static void idle_client_task(void *p) {
  (void)p;
  uv_tcp_t *c = malloc(sizeof(*c));
  uv_tcp_init(&loop, c);
  c->data = c; /* the caller's own use of data must survive the read */
  int rc = ab_task_connect(c, (const struct sockaddr *)&idle.addr);
  if (rc != 0) {
    idle.other++;
    uv_close((uv_handle_t *)c, idle_closed);
    return;
  }
  idle_reader(c);
}

static void idle_on_connection(uv_stream_t *srv, int status) {
  if (status != 0) {
    idle.other++;
    return;
  }
  uv_tcp_t *c = malloc(sizeof(*c));
  uv_tcp_init(&loop, c);
  c->data = c;
  if (uv_accept(srv, (uv_stream_t *)c) != 0) {
    idle.other++;
    uv_close((uv_handle_t *)c, idle_closed);
    return;
  }
  ab_task_t *t;
  if (ab_task_c_new(sched, &t, 0, idle_server_task, c) != 0) {
    idle.other++;
    uv_close((uv_handle_t *)c, idle_closed);
    return;
  }
  ab_task_on_exit(t, on_exit_count, &idle.exited);
  ab_task_start(t);
}

/* The deadline: once every task is blocked (or after 20 s), cancel them all
 * from a plain libuv callback, as a run's deadline timer does. */
static void idle_deadline(uv_timer_t *tm) {
  if (idle.blocked < 2 * IDLE_CLIENTS && uv_hrtime() - idle.started < 20000000000ull) return;
  if (idle.blocked < 2 * IDLE_CLIENTS) idle.timed_out = 1;
  uv_close((uv_handle_t *)tm, NULL);
  uv_close((uv_handle_t *)&idle.listener, NULL);
  ab_sched_cancel_all(sched);
}

static void test_cancel_idle_reads(void) {
  setup();
  memset(&idle, 0, sizeof(idle));
  CHECK(listen_any(&idle.listener, idle_on_connection, &idle.addr) == 0);
  for (int i = 0; i < IDLE_CLIENTS; i++) {
    ab_task_t *t;
    CHECK(ab_task_c_new(sched, &t, 0, idle_client_task, NULL) == 0);
    ab_task_on_exit(t, on_exit_count, &idle.exited);
    CHECK(ab_task_start(t) == 0);
  }
  idle.started = uv_hrtime();
  uv_timer_init(&loop, &idle.deadline);
  uv_timer_start(&idle.deadline, idle_deadline, 5, 5);
  CHECK(uv_run(&loop, UV_RUN_DEFAULT) == 0);
  CHECK(idle.timed_out == 0);
  CHECK_EQ_U64(idle.eintr, 2 * IDLE_CLIENTS);
  CHECK_EQ_U64(idle.other, 0);
  CHECK_EQ_U64(idle.returned, 2 * IDLE_CLIENTS);
  CHECK_EQ_U64(idle.exited, 2 * IDLE_CLIENTS);
  CHECK_EQ_U64(idle.closed, 2 * IDLE_CLIENTS);
  CHECK_EQ_U64(idle.blocked, 0);
  teardown();
}

/* ---- cancellation in other states --------------------------------------- */

typedef struct {
  uv_tcp_t listener;
  struct sockaddr_in addr;
  uv_tcp_t *accepted;   /* the writer's peer: never reads */
  ab_task_t *sleeper, *writer, *never, *self;
  int sleep_rc, write_rc, self_rc, never_ran;
  int exited;
  uint64_t sleep_ns;
  int writer_blocked;
} misc_t;

static misc_t misc;

static void forget_task(ab_task_t *t, void *arg) {
  ab_task_t **slot = arg;
  if (*slot == t) *slot = NULL; /* the pointer dies with the task */
  misc.exited++;
}

static void misc_sleeper(void *p) {
  (void)p;
  uint64_t t0 = uv_hrtime();
  misc.sleep_rc = ab_task_sleep(30);
  misc.sleep_ns = uv_hrtime() - t0;
}

#define BIG_WRITE (64 * 1024 * 1024)

static void misc_writer(void *p) {
  (void)p;
  uv_tcp_t *c = malloc(sizeof(*c));
  uv_tcp_init(&loop, c);
  uint8_t *big = calloc(1, BIG_WRITE);
  int rc = ab_task_connect(c, (const struct sockaddr *)&misc.addr);
  if (rc == 0) {
    misc.writer_blocked = 1;
    rc = ab_task_write((uv_stream_t *)c, big, BIG_WRITE); /* the peer never reads */
  }
  misc.write_rc = rc;
  /* libuv may still point into big: close the stream, then free it */
  uv_close((uv_handle_t *)c, free_on_close);
  free(big);
}

static void misc_never(void *p) {
  (void)p;
  misc.never_ran = 1;
}

static void misc_self(void *p) {
  (void)p;
  ab_sched_cancel(ab_task_current());
  ab_sched_cancel(ab_task_current()); /* twice: a no-op */
  misc.self_rc = ab_task_sleep(10);    /* returns at once */
}

static void misc_on_connection(uv_stream_t *srv, int status) {
  CHECK(status == 0);
  misc.accepted = malloc(sizeof(uv_tcp_t));
  uv_tcp_init(&loop, misc.accepted);
  CHECK(uv_accept(srv, (uv_stream_t *)misc.accepted) == 0);
}

static void misc_check(uv_timer_t *tm) {
  if (!misc.writer_blocked || misc.accepted == NULL) return;
  uv_close((uv_handle_t *)tm, NULL);
  CHECK(misc.sleeper != NULL && misc.writer != NULL && misc.never != NULL);
  CHECK(misc.self == NULL); /* ended already */
  ab_sched_cancel(misc.never);  /* never started: ends without running */
  ab_sched_cancel(misc.sleeper);
  ab_sched_cancel(misc.writer); /* its request stays inside libuv until closed */
  CHECK(misc.never == NULL && misc.sleeper == NULL && misc.writer == NULL);
  uv_close((uv_handle_t *)misc.accepted, free_on_close);
  uv_close((uv_handle_t *)&misc.listener, NULL);
}

static void test_cancel_states(void) {
  setup();
  memset(&misc, 0, sizeof(misc));
  CHECK(listen_any(&misc.listener, misc_on_connection, &misc.addr) == 0);
  struct {
    void (*fn)(void *);
    ab_task_t **slot;
    int start;
  } mk[] = {{misc_sleeper, &misc.sleeper, 1},
            {misc_writer, &misc.writer, 1},
            {misc_never, &misc.never, 0},
            {misc_self, &misc.self, 1}};
  for (size_t i = 0; i < sizeof(mk) / sizeof(mk[0]); i++) {
    CHECK(ab_task_c_new(sched, mk[i].slot, 0, mk[i].fn, NULL) == 0);
    ab_task_on_exit(*mk[i].slot, forget_task, mk[i].slot);
    if (mk[i].start) CHECK(ab_task_start(*mk[i].slot) == 0);
  }
  uv_timer_t tm;
  uv_timer_init(&loop, &tm);
  uv_timer_start(&tm, misc_check, 10, 10);
  uint64_t t0 = uv_hrtime();
  CHECK(uv_run(&loop, UV_RUN_DEFAULT) == 0);
  CHECK(uv_hrtime() - t0 < 5000000000ull); /* nobody waited for the sleep */
  CHECK(misc.sleep_rc == AB_EINTR);
  CHECK(misc.sleep_ns < 5000000000ull);
  CHECK(misc.write_rc == AB_EINTR);
  CHECK(misc.self_rc == AB_EINTR);
  CHECK(misc.never_ran == 0);
  CHECK(misc.exited == 4);
  teardown();
}

/* ---- a custom kind: the core runs it through kind->resume only ------------ */

typedef struct {
  int resumes;
  int released;
  int last_result;
} fake_ctx_t;

static int fake_resume(ab_task_t *t) {
  fake_ctx_t *c = ab_task_ctx(t);
  c->resumes++;
  c->last_result = ab_task_result(t);
  return c->resumes >= 3; /* suspends twice, then ends */
}
static void fake_release(ab_task_t *t) { ((fake_ctx_t *)ab_task_ctx(t))->released++; }
static const ab_task_kind_t fake_kind = {AB_TASK_LUA, "fake", fake_resume, fake_release};

static void test_custom_kind(void) {
  setup();
  fake_ctx_t ctx = {0, 0, 0};
  ab_task_t *t;
  CHECK(ab_task_new(sched, &t, &fake_kind, &ctx) == 0);
  CHECK(ab_task_kind(t) == &fake_kind);
  CHECK(ab_task_start(t) == 0);
  CHECK(ctx.resumes == 1);
  ab_task_wake(t, 42);
  CHECK(ctx.resumes == 2 && ctx.last_result == 42);
  ab_sched_cancel(t); /* suspended: resumed once with AB_EINTR, and it ends */
  CHECK(ctx.resumes == 3 && ctx.last_result == AB_EINTR);
  CHECK(ctx.released == 1);
  CHECK(uv_run(&loop, UV_RUN_DEFAULT) == 0);
  teardown();
}

int main(void) {
  test_sleep();
  test_sleep_args();
  test_echo();
  test_cancel_idle_reads();
  test_cancel_states();
  test_custom_kind();
  TEST_DONE();
}
