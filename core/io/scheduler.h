/* scheduler.h -- per-loop task scheduler: blocking-style code on libuv.
 *
 * One scheduler per libuv loop (so per loop thread).  It runs tasks: a task
 * is a unit of execution that suspends while one libuv operation is pending
 * and is resumed, directly, from the libuv callback that completes it (no
 * run queue, no extra loop iteration) -- the shape of lua-nginx-module's
 * ngx_http_lua_sleep: a yielding primitive records a cleanup on the task,
 * starts the operation and suspends; the callback clears the cleanup and
 * resumes the task; cancelling a task runs the cleanup instead.
 *
 * Kinds.  What "suspend" and "resume" mean is the task's kind
 * (ab_task_kind_t: a kind number and resume/release functions):
 *   AB_TASK_C    a stackful C coroutine (coro.h), made by ab_task_c_new; it
 *                suspends with ab_task_suspend() inside the blocking-style
 *                primitives below (ab_task_sleep, _read, _write, _connect).
 *   AB_TASK_LUA  (the Lua glue) a Lua coroutine: its glue starts the same
 *                operations with ab_task_set_cleanup + a libuv request,
 *                yields with lua_yield, and its kind's resume function hands
 *                ab_task_result() to lua_resume.
 * The scheduler itself only calls kind->resume and kind->release, so a new
 * kind needs no change here.
 *
 * Task states: new (made, not started) -> running <-> suspended -> ended.
 *
 * Cancellation.  ab_sched_cancel(t) marks t cancelled and, if t is
 * suspended, runs its cleanup (which stops the pending operation: a
 * uv_read_stop, a uv_timer_stop, or orphaning a write/connect request so its
 * callback no longer wakes the task) and resumes it once with AB_EINTR: the
 * blocking call returns AB_EINTR.  From then on every blocking call of that
 * task returns AB_EINTR at once without starting anything, so the task
 * function must clean up (close its handles) and return.  A new task that is
 * cancelled ends without ever running; a running task (one cancelling itself
 * or an ancestor in a nested resume) is only marked.
 *
 * Ownership.
 *   - The scheduler owns every task.  A task ends when its function returns
 *     (or when it is cancelled before it started); then its on_exit callback
 *     runs, its execution context is released (coroutine stack freed), and
 *     its memory is freed as soon as libuv holds nothing of it (its sleep
 *     timer is closed, an orphaned write/connect request has called back).
 *     A task pointer is valid from ab_task_*_new until its on_exit callback
 *     returns: whoever keeps one must drop it there.
 *   - The caller owns every libuv handle it passes in (streams, tcp) and the
 *     buffers.  A handle must stay open while a task is blocked on it:
 *     cancel the task before closing the handle (uv_close while a task reads
 *     would leave it suspended forever).  Close it with uv_close and free it
 *     in the close callback, as libuv requires.
 *   - ab_task_read lends the stream's `data` field to the scheduler while
 *     the read is pending and restores it before the task resumes (also on
 *     cancel); don't read or write s->data from other code meanwhile.
 *   - ab_task_write: after AB_EINTR the stream may still reference the
 *     bytes not yet written.  Close the stream (uv_close cancels the write)
 *     before freeing or reusing that buffer.
 *   - The scheduler struct must outlive every task's memory:
 *     ab_sched_free refuses (UV_EBUSY) while any remains.
 *
 * Units: seconds (double) for ab_task_sleep, bytes for sizes.
 * Return codes: 0 or a negative code (ab_error.h): AB_* codes or negated
 * errno values as libuv reports them (UV_ECONNREFUSED, UV_ECONNRESET, ...);
 * AB_EINTR after cancellation; AB_ECLOSED at end of stream; AB_EINVAL for a
 * bad argument or a blocking call made outside a C task.
 *
 * Threads: a scheduler and the libuv handles its tasks use belong to the
 * thread running its loop: make tasks there, and call the blocking-style
 * primitives (sleep, read, write, connect: they start libuv operations)
 * only while the task runs on that thread.  A suspended task may be woken
 * or cancelled from another thread (it migrates: coro.h) -- shared:N
 * resumes a connection's task on whichever thread runs the connection --
 * provided its owner makes sure one thread at a time touches it, with a
 * happens-before between them (shared:N: the connection's lock); the task
 * may then end there too.  The scheduler's own list of live tasks is
 * guarded by a mutex taken when a task is made, ends or is freed, never
 * per resume.  ab_sched_cancel_all walks that list: call it only when no
 * other thread can run the scheduler's tasks.  Misuse that would corrupt a
 * task (waking a task that is not suspended, freeing a running coroutine)
 * prints a message and aborts.
 *
 * (Named scheduler.h, not sched.h: core/ is on the include path and a
 * core/sched.h would shadow the system <sched.h> that <pthread.h> includes.)
 *
 * Reentrancy: ab_task_wake and ab_sched_cancel run the task at once, nested
 * in the caller (a libuv callback, or another task: coroutine resumes nest).
 */
#ifndef AB_SCHEDULER_H
#define AB_SCHEDULER_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

typedef struct ab_sched_s ab_sched_t;
typedef struct ab_task_s ab_task_t;

enum { AB_TASK_C = 1, AB_TASK_LUA = 2 };

typedef struct ab_task_kind_s {
  int kind;         /* AB_TASK_C, AB_TASK_LUA, ... */
  const char *name; /* "c", "lua": for messages */
  /* Runs t from where it stopped (or from its start) until it suspends
   * (return 0) or ends (return 1).  Called by the scheduler only. */
  int (*resume)(ab_task_t *t);
  /* Frees the execution context (ab_task_ctx) of an ended or never-started
   * task.  Called exactly once per task, after on_exit. */
  void (*release)(ab_task_t *t);
} ab_task_kind_t;

/* ---- scheduler -------------------------------------------------------- */

/* Makes a scheduler for loop (not owned: it must outlive the scheduler).
 * It opens no handle of its own.  0, AB_EINVAL or AB_ENOMEM. */
int ab_sched_new(ab_sched_t **out, uv_loop_t *loop);

/* Frees s: 0, or UV_EBUSY (and nothing freed) while a task or a task's
 * memory remains -- cancel them and run the loop until their handles have
 * closed first.  NULL is a no-op (0). */
int ab_sched_free(ab_sched_t *s);

uv_loop_t *ab_sched_loop(const ab_sched_t *s);

/* Tasks that have not ended (new, running or suspended). */
size_t ab_sched_live(const ab_sched_t *s);

/* Cancels t (see above).  A no-op for a task already cancelled.  t must be
 * a valid task pointer (not ended). */
void ab_sched_cancel(ab_task_t *t);

/* Cancels every task that has not ended when it is called (tasks started
 * by their exit paths are not).  For the deadline or a fatal error; only
 * while no other thread can run s's tasks (see Threads). */
void ab_sched_cancel_all(ab_sched_t *s);

/* ---- tasks ------------------------------------------------------------ */

/* A C task: fn(arg) in a stackful coroutine with a stack of stack_size
 * bytes (0 = AB_CORO_DEFAULT_STACK, 64 KiB).  It does not run until
 * ab_task_start.  0, AB_EINVAL or AB_ENOMEM. */
int ab_task_c_new(ab_sched_t *s, ab_task_t **out, size_t stack_size,
                  void (*fn)(void *), void *arg);

/* A task of any kind over an execution context ctx (kind->release frees
 * it).  kind must stay valid (static).  0, AB_EINVAL or AB_ENOMEM. */
int ab_task_new(ab_sched_t *s, ab_task_t **out, const ab_task_kind_t *kind, void *ctx);

/* Runs a new task now, nested in the caller, until it first suspends or
 * ends (it may end: then t is gone when this returns).  0, or AB_EINVAL if
 * t is not new. */
int ab_task_start(ab_task_t *t);

/* fn(t, arg) runs once when t ends, before its context is released. */
void ab_task_on_exit(ab_task_t *t, void (*fn)(ab_task_t *t, void *arg), void *arg);

/* The task running on this thread (innermost when nested), or NULL. */
ab_task_t *ab_task_current(void);

ab_sched_t *ab_task_sched(const ab_task_t *t);
void *ab_task_ctx(const ab_task_t *t);
const ab_task_kind_t *ab_task_kind(const ab_task_t *t);
int ab_task_cancelled(const ab_task_t *t);

/* ---- building blocks of yielding operations --------------------------- */

/* Records fn(arg) as the way to abandon t's pending operation; it runs at
 * most once, if t is cancelled while suspended, and is cleared when the
 * operation completes (ab_task_wake).  fn NULL clears it.  fn must leave
 * nothing that would call ab_task_wake for this operation later. */
void ab_task_set_cleanup(ab_task_t *t, void (*fn)(void *arg), void *arg);

/* C tasks: suspends the current task until ab_task_wake(t, r) and returns
 * r; AB_EINTR when cancelled (at once, running the recorded cleanup, if the
 * task is already cancelled).  AB_EINVAL outside a C task's coroutine. */
int ab_task_suspend(void);

/* From the callback that completes t's pending operation: clears the
 * cleanup, stores result (ab_task_result) and resumes t at once.  t must be
 * suspended; else this aborts. */
void ab_task_wake(ab_task_t *t, int result);

/* The value of the last ab_task_wake (for a kind's resume function). */
int ab_task_result(const ab_task_t *t);

/* ---- blocking-style primitives (inside a C task) ----------------------- */

/* Suspends for at least s seconds of CLOCK_MONOTONIC (s >= 0; 0 lets the
 * loop run one iteration).  0, AB_EINVAL (s negative, NaN, or > 1e9),
 * AB_EINTR.  The task's timer handle is made on first use and closed when
 * the task ends. */
int ab_task_sleep(double s);

/* Stream helpers for any uv_stream_t (pipes, tests).  The benchmark's
 * connections do not use them: their bytes go through io/conn.h.
 *
 * One read: starts reading s into buf (cap > 0 bytes), takes the first
 * chunk libuv delivers, stops reading and returns 0 with *got = its size
 * (1..cap).  AB_ECLOSED at end of stream, AB_EINTR, or a libuv error
 * (UV_ECONNRESET, UV_EALREADY if something else is reading s, ...). */
int ab_task_read(uv_stream_t *s, uint8_t *buf, size_t cap, size_t *got);

/* Writes all n bytes: uv_try_write first, uv_write for the rest (the task
 * suspends until it completes).  p must stay valid until this returns (and
 * after AB_EINTR until s is closed).  0, AB_EINTR or a libuv error. */
int ab_task_write(uv_stream_t *s, const uint8_t *p, size_t n);

/* Connects t (already uv_tcp_init'ed) to addr.  0, AB_EINTR (the connect
 * is still pending inside libuv: close t) or a libuv error
 * (UV_ECONNREFUSED, ...). */
int ab_task_connect(uv_tcp_t *t, const struct sockaddr *addr);

#endif
