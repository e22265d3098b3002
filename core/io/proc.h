/* proc.h -- run one child process to completion, with a hard timeout, and
 * let SIGINT/SIGTERM of the orchestrator cut it short.
 *
 * ab_proc_spawn_wait() is what the orchestrator uses for every worker run:
 * the child gets stdin from /dev/null, its stdout and stderr (and, when
 * asked, a result channel on fd 3) are captured completely (growable buffers, up to AB_PROC_OUTPUT_MAX bytes each), and
 * the call returns only when the child has been reaped and every libuv handle
 * it used is closed.  Each call creates and closes its own private uv_loop_t,
 * so it never touches uv_default_loop().  One thread at a time may call it
 * (the interrupt self-pipe is shared); the orchestrator is single-threaded.
 *
 * Timeout: at opts->timeout_s the child gets SIGTERM, and SIGKILL 500 ms
 * later if it is still alive; res->timed_out is set.
 *
 * Interrupts: ab_proc_signals_install() installs SIGINT and SIGTERM handlers
 * that only record the first signal (a sig_atomic_t) and write one byte to a
 * close-on-exec self-pipe.  The flag is sticky until ab_proc_interrupt_clear():
 *   - a signal that arrives while a child runs wakes the call at once (the
 *     loop polls the pipe): the child gets SIGTERM, SIGKILL 2 s later (a
 *     worker uses that time to end its measurement and write its run
 *     object, well within 1 s; a second signal kills it at once), and the
 *     call returns with res->interrupted set when the child is reaped;
 *   - a signal that arrives between two calls is kept in the flag, and the
 *     next call returns at once with res->interrupted set without spawning;
 *   - a signal that arrives after the child exited leaves the finished result
 *     alone (interrupted = 0); the caller sees the flag via
 *     ab_proc_interrupted() and stops scheduling -- unless the child died
 *     of that same signal (a Ctrl-C reaches the whole process group, and
 *     the child's exit may be seen first): then interrupted = 1.
 * The handlers use SA_RESTART, so ordinary blocking I/O in the orchestrator
 * is not disturbed.  Children start with default signal dispositions (libuv
 * resets them in the child).
 *
 * Children never outlive the orchestrator on any path it controls: a normal
 * return reaps the child; a timeout or an interrupt kills and reaps it; there
 * is no Lua code (hence no Lua error) running while a child is alive.  The one
 * path not covered is the orchestrator being SIGKILLed (or crashing) while a
 * child runs: uv_spawn offers no hook to call prctl(PR_SET_PDEATHSIG) between
 * fork and exec, so the child must ask for it itself --
 * ab_proc_die_with_parent() does that (the worker calls it at start with the
 * pid the orchestrator passes in ARKBENCH_ORCHESTRATOR_PID).  Children stay in
 * the orchestrator's process group, so a terminal's Ctrl-C reaches them too.
 *
 * Errors follow ab_error.h: 0 or a negative code (negated errno as libuv
 * reports it, e.g. UV_ENOENT when the executable does not exist).
 */
#ifndef AB_PROC_H
#define AB_PROC_H

#include <stddef.h>

/* Bytes kept per stream; a child writing more is still drained, the excess
 * is dropped and the stream's `truncated` flag set. */
#define AB_PROC_OUTPUT_MAX ((size_t)256 << 20)

#define AB_PROC_TERM_GRACE_MS 500      /* timeout: SIGTERM .. SIGKILL */
#define AB_PROC_INTR_GRACE_MS 1000     /* interrupt: SIGTERM .. SIGKILL; a
                                          worker ends its measurement and
                                          writes its run object meanwhile */
#define AB_PROC_EOF_GRACE_MS 250       /* after exit: wait this long for EOF
                                          on pipes a grandchild may hold */

typedef struct ab_proc_opts_s {
  double timeout_s;            /* hard limit in seconds; <= 0: none */
  const char *const *env;      /* NULL, or NULL-terminated "K=V" strings added
                                  to (and overriding) the inherited environ */
  int channel;                 /* nonzero: the child's fd 3 is the write end
                                  of a pipe captured into res->chan, a result
                                  channel apart from the stdout a worker's
                                  user code shares (AB_PROC_CHANNEL_FD) */
  /* non-NULL (implies channel): the child's fd 4 is the write end of a
   * progress pipe; each line written on it is handed here, without its
   * '\n', as soon as it is read (on the calling thread, from inside the
   * call; lines longer than AB_PROC_PROGRESS_LINE bytes are dropped) */
  void (*on_progress)(void *arg, const char *line, size_t len);
  void *on_progress_arg;
} ab_proc_opts_t;

/* The child's descriptor of the result channel (opts.channel). */
#define AB_PROC_CHANNEL_FD 3
/* The child's descriptor of the progress pipe (opts.on_progress). */
#define AB_PROC_PROGRESS_FD 4
#define AB_PROC_PROGRESS_LINE 1024

typedef struct ab_proc_buf_s {
  char *data; /* malloc'ed, NUL-terminated (data[len] == 0); NULL if empty */
  size_t len;
  size_t cap;
  int truncated; /* more than AB_PROC_OUTPUT_MAX bytes were written */
} ab_proc_buf_t;

typedef struct ab_proc_result_s {
  ab_proc_buf_t out;   /* the child's stdout */
  ab_proc_buf_t err;   /* the child's stderr */
  ab_proc_buf_t chan;  /* the child's fd 3 (opts.channel), else empty */
  int pid;             /* 0 when nothing was spawned */
  int exited;          /* 1: exit_code is valid (the child called exit) */
  int exit_code;
  int term_signal;     /* signal that ended the child, 0 if none */
  int timed_out;       /* the timeout fired while the child was alive */
  int interrupted;     /* an interrupt arrived while the child was alive, or
                          before the call (then nothing was spawned) */
  double elapsed_s;    /* spawn .. reap, monotonic clock */
} ab_proc_result_t;

/* Runs argv[0] (searched in PATH when it has no slash) with arguments argv,
 * a NULL-terminated array, and waits as described above.  On 0, *res holds
 * the outcome and must be released with ab_proc_result_free().  On failure
 * (the child could not be started, out of memory) nothing is left running or
 * allocated and *res is zeroed.  opts may be NULL (no timeout, inherited
 * environment). */
int ab_proc_spawn_wait(const char *const *argv, const ab_proc_opts_t *opts,
                       ab_proc_result_t *res);

/* Frees the buffers of *res and zeroes it.  Safe on a zeroed result. */
void ab_proc_result_free(ab_proc_result_t *res);

/* Installs the SIGINT/SIGTERM handlers (idempotent; later calls do nothing).
 * Returns 0 or a negated errno. */
int ab_proc_signals_install(void);

/* The first recorded signal number (SIGINT or SIGTERM), or 0. */
int ab_proc_interrupted(void);

/* Forgets a recorded signal (tests, interactive use). */
void ab_proc_interrupt_clear(void);

/* "SIGKILL" for SIGKILL, "SIG42" for a signal without a name here. The
 * returned string is static or lives in buf (at least 16 bytes). */
const char *ab_proc_signame(int sig, char *buf, size_t len);

/* Asks the kernel to SIGKILL this process when its parent dies
 * (PR_SET_PDEATHSIG, Linux only).  When expected_ppid > 0 and getppid() is
 * no longer that process (the orchestrator died before the call), returns
 * UV_ESRCH so the caller can exit at once.  Returns 0, UV_ESRCH, or
 * UV_ENOTSUP off Linux. */
int ab_proc_die_with_parent(int expected_ppid);

/* environ minus the keys `extra` ("K=V" strings, NULL-terminated) sets,
 * then `extra`: a malloc'd pointer array (free it; the strings are
 * borrowed), or NULL when out of memory. */
char **ab_proc_merged_env(const char *const *extra);

/* Absolute path of the running executable (/proc/self/exe) into buf,
 * NUL-terminated.  Returns 0 or a negative code (UV_ENOBUFS if too small). */
int ab_proc_exe_path(char *buf, size_t len);

#endif
