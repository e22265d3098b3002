/* proc.c -- see proc.h.  One child per call, on a private libuv loop.
 *
 * Ordering inside ab_proc_spawn_wait():
 *   1. a recorded interrupt returns at once (nothing spawned);
 *   2. the child is spawned with its stdout/stderr on two pipes we read;
 *   3. the loop runs until the child is reaped AND both pipes are closed
 *      (EOF, or AB_PROC_EOF_GRACE_MS after the exit when a grandchild still
 *      holds them open), with the timeout timer and the self-pipe watcher
 *      able to start the SIGTERM -> SIGKILL escalation meanwhile;
 *   4. every handle is closed and the loop run until the close callbacks are
 *      done, so uv_loop_close() succeeds and nothing outlives the call.
 */
#include "io/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <uv.h>

#include "base/ab_error.h"

/* ---- interrupts --------------------------------------------------------- */

static volatile sig_atomic_t intr_signal = 0;
static int intr_pipe[2] = {-1, -1}; /* [0] read end polled by the loop */
static int intr_installed = 0;

/* Async-signal-safe: record the first signal, poke the pipe. */
static void on_signal(int sig) {
  int saved = errno;
  if (intr_signal == 0) intr_signal = sig;
  if (intr_pipe[1] >= 0) {
    ssize_t n = write(intr_pipe[1], "!", 1); /* a full pipe is fine */
    (void)n;
  }
  errno = saved;
}

static void drain_intr_pipe(void) {
  char buf[64];
  if (intr_pipe[0] < 0) return;
  while (read(intr_pipe[0], buf, sizeof(buf)) > 0) {
  }
}

int ab_proc_signals_install(void) {
  if (intr_installed) return 0;
  if (pipe2(intr_pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
    intr_pipe[0] = intr_pipe[1] = -1;
    return -errno;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0)
    return -errno;
  intr_installed = 1;
  return 0;
}

int ab_proc_interrupted(void) { return (int)intr_signal; }

void ab_proc_interrupt_clear(void) {
  drain_intr_pipe();
  intr_signal = 0;
}

/* ---- small helpers ------------------------------------------------------ */

const char *ab_proc_signame(int sig, char *buf, size_t len) {
  switch (sig) {
#define SIGNAME(s) case s: return #s;
    SIGNAME(SIGHUP) SIGNAME(SIGINT) SIGNAME(SIGQUIT) SIGNAME(SIGILL)
    SIGNAME(SIGTRAP) SIGNAME(SIGABRT) SIGNAME(SIGBUS) SIGNAME(SIGFPE)
    SIGNAME(SIGKILL) SIGNAME(SIGUSR1) SIGNAME(SIGSEGV) SIGNAME(SIGUSR2)
    SIGNAME(SIGPIPE) SIGNAME(SIGALRM) SIGNAME(SIGTERM) SIGNAME(SIGCHLD)
    SIGNAME(SIGCONT) SIGNAME(SIGSTOP) SIGNAME(SIGTSTP) SIGNAME(SIGTTIN)
    SIGNAME(SIGTTOU) SIGNAME(SIGURG) SIGNAME(SIGXCPU) SIGNAME(SIGXFSZ)
    SIGNAME(SIGVTALRM) SIGNAME(SIGPROF) SIGNAME(SIGWINCH) SIGNAME(SIGIO)
    SIGNAME(SIGSYS)
#ifdef SIGPWR
    SIGNAME(SIGPWR)
#endif
#ifdef SIGSTKFLT
    SIGNAME(SIGSTKFLT)
#endif
#undef SIGNAME
  default:
    snprintf(buf, len, "SIG%d", sig);
    return buf;
  }
}

int ab_proc_die_with_parent(int expected_ppid) {
#ifdef __linux__
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return -errno;
  /* The parent may have died before prctl: then we were re-parented. */
  if (expected_ppid > 0 && getppid() != (pid_t)expected_ppid) return UV_ESRCH;
  return 0;
#else
  (void)expected_ppid;
  return UV_ENOTSUP;
#endif
}

int ab_proc_exe_path(char *buf, size_t len) {
  if (len < 2) return UV_ENOBUFS;
  ssize_t n = readlink("/proc/self/exe", buf, len - 1);
  if (n < 0) {
    size_t size = len;
    return uv_exepath(buf, &size); /* no /proc: let libuv try */
  }
  if ((size_t)n >= len - 1) return UV_ENOBUFS; /* possibly truncated */
  buf[n] = '\0';
  return 0;
}

void ab_proc_result_free(ab_proc_result_t *res) {
  free(res->out.data);
  free(res->err.data);
  free(res->chan.data);
  memset(res, 0, sizeof(*res));
}

/* ---- environment -------------------------------------------------------- */

extern char **environ;

static size_t key_len(const char *kv) {
  const char *eq = strchr(kv, '=');
  return eq ? (size_t)(eq - kv) : strlen(kv);
}

/* environ minus the keys `extra` sets, then `extra`.  The strings are
 * borrowed; only the pointer array is allocated (uv_spawn copies nothing it
 * needs after returning, since the exec happens inside it). */
char **ab_proc_merged_env(const char *const *extra) {
  size_t n_env = 0, n_extra = 0;
  while (environ[n_env]) n_env++;
  while (extra[n_extra]) n_extra++;
  char **env = malloc((n_env + n_extra + 1) * sizeof(*env));
  if (env == NULL) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n_env; i++) {
    size_t kl = key_len(environ[i]);
    int overridden = 0;
    for (size_t j = 0; j < n_extra && !overridden; j++)
      overridden = key_len(extra[j]) == kl &&
                   strncmp(extra[j], environ[i], kl) == 0;
    if (!overridden) env[k++] = environ[i];
  }
  for (size_t j = 0; j < n_extra; j++) env[k++] = (char *)extra[j];
  env[k] = NULL;
  return env;
}

/* ---- one run ------------------------------------------------------------ */

#define READ_CHUNK 65536

typedef struct run_s {
  uv_loop_t loop;
  uv_process_t proc;
  uv_pipe_t pipe[4];    /* child's stdout, stderr, fd 3 (channel), fd 4
                           (progress) */
  uv_timer_t deadline;  /* the hard timeout */
  uv_timer_t kill;      /* SIGTERM sent: SIGKILL when this fires */
  uv_timer_t eof;       /* child reaped: stop waiting for EOF */
  uv_poll_t intr;       /* readable when a SIGINT/SIGTERM was recorded */
  int have_intr;
  int pipe_open[4];
  int npipes;           /* 2, 3 with the channel, 4 with progress */
  int alive;            /* spawned, exit callback not yet run */
  int terminating;      /* SIGTERM sent */
  uint64_t start_ns;
  ab_proc_result_t *res;
  char scratch[READ_CHUNK]; /* sink for output past AB_PROC_OUTPUT_MAX */
  const ab_proc_opts_t *opts;
  char pline[AB_PROC_PROGRESS_LINE]; /* the progress line being read */
  size_t plen;
  int pdrop;            /* the current progress line is too long */
  char pread[4096];     /* the progress pipe's read buffer */
} run_t;

#define ANY_OPEN(r) ((r)->pipe_open[0] || (r)->pipe_open[1] || (r)->pipe_open[2] || (r)->pipe_open[3])

static ab_proc_buf_t *buf_of(run_t *r, uv_handle_t *h) {
  if (h == (uv_handle_t *)&r->pipe[0]) return &r->res->out;
  return h == (uv_handle_t *)&r->pipe[1] ? &r->res->err : &r->res->chan;
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  run_t *r = h->data;
  (void)suggested;
  if (h == (uv_handle_t *)&r->pipe[3]) {
    *buf = uv_buf_init(r->pread, sizeof(r->pread));
    return;
  }
  ab_proc_buf_t *b = buf_of(r, h);
  if (b->len >= AB_PROC_OUTPUT_MAX) {
    *buf = uv_buf_init(r->scratch, sizeof(r->scratch));
    return;
  }
  if (b->cap - b->len < READ_CHUNK + 1 || b->data == NULL) {
    size_t want = b->cap ? b->cap * 2 : 2 * READ_CHUNK;
    if (want < b->len + READ_CHUNK + 1) want = b->len + READ_CHUNK + 1;
    char *p = realloc(b->data, want);
    if (p == NULL) { /* keep draining so the child does not block */
      *buf = uv_buf_init(r->scratch, sizeof(r->scratch));
      return;
    }
    b->data = p;
    b->cap = want;
  }
  *buf = uv_buf_init(b->data + b->len, (unsigned)(b->cap - b->len - 1));
}

static void close_pipe(run_t *r, int i) {
  if (!r->pipe_open[i]) return;
  r->pipe_open[i] = 0;
  uv_read_stop((uv_stream_t *)&r->pipe[i]);
  uv_close((uv_handle_t *)&r->pipe[i], NULL);
}

/* Bytes from the progress pipe: whole lines go to opts->on_progress. */
static void progress_bytes(run_t *r, const char *p, size_t n) {
  for (size_t k = 0; k < n; k++) {
    if (p[k] == '\n') {
      if (!r->pdrop && r->plen > 0)
        r->opts->on_progress(r->opts->on_progress_arg, r->pline, r->plen);
      r->plen = 0;
      r->pdrop = 0;
    } else if (r->plen + 1 < sizeof(r->pline)) {
      r->pline[r->plen++] = p[k];
    } else {
      r->pdrop = 1;
    }
  }
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  run_t *r = s->data;
  int i = 0;
  while (i < 3 && s != (uv_stream_t *)&r->pipe[i]) i++;
  if (i == 3) {
    if (nread > 0) progress_bytes(r, buf->base, (size_t)nread);
    else if (nread < 0) close_pipe(r, 3);
    return;
  }
  ab_proc_buf_t *b = buf_of(r, (uv_handle_t *)s);
  if (nread > 0) {
    if (buf->base == r->scratch) {
      b->truncated = 1;
    } else {
      size_t keep = (size_t)nread;
      if (b->len + keep > AB_PROC_OUTPUT_MAX) {
        keep = AB_PROC_OUTPUT_MAX - b->len;
        b->truncated = 1;
      }
      b->len += keep;
      b->data[b->len] = '\0';
    }
  } else if (nread < 0) { /* UV_EOF or a read error: this stream is done */
    close_pipe(r, i);
  }
}

static void send_signal(run_t *r, int sig) {
  if (r->alive) uv_process_kill(&r->proc, sig);
}

static void kill_cb(uv_timer_t *t) { send_signal(t->data, SIGKILL); }

static void start_termination(run_t *r, uint64_t grace_ms) {
  if (!r->alive) return;
  if (r->terminating) { /* asked twice: no more grace */
    uv_timer_stop(&r->kill);
    send_signal(r, SIGKILL);
    return;
  }
  r->terminating = 1;
  send_signal(r, SIGTERM);
  uv_timer_start(&r->kill, kill_cb, grace_ms, 0);
}

static void deadline_cb(uv_timer_t *t) {
  run_t *r = t->data;
  if (!r->alive || r->terminating) return;
  r->res->timed_out = 1;
  start_termination(r, AB_PROC_TERM_GRACE_MS);
}

static void intr_cb(uv_poll_t *p, int status, int events) {
  run_t *r = p->data;
  (void)status;
  (void)events;
  drain_intr_pipe();
  if (intr_signal == 0) return; /* cleared meanwhile */
  uv_poll_stop(p);
  /* the check after spawning already handled this signal: its byte in the
   * pipe must not count as a second Ctrl-C (which skips the grace) */
  if (r->res->interrupted) return;
  if (!r->alive) return; /* the child finished first: its result stands */
  r->res->interrupted = 1;
  start_termination(r, AB_PROC_INTR_GRACE_MS);
}

static void eof_cb(uv_timer_t *t) {
  run_t *r = t->data;
  close_pipe(r, 0);
  close_pipe(r, 1);
  close_pipe(r, 2);
  close_pipe(r, 3);
}

static void exit_cb(uv_process_t *p, int64_t status, int term_signal) {
  run_t *r = p->data;
  r->alive = 0;
  r->res->elapsed_s = (double)(uv_hrtime() - r->start_ns) / 1e9;
  if (term_signal != 0) {
    r->res->term_signal = term_signal;
  } else {
    r->res->exited = 1;
    r->res->exit_code = (int)status;
  }
  uv_timer_stop(&r->deadline);
  uv_timer_stop(&r->kill);
  uv_close((uv_handle_t *)p, NULL);
  if (ANY_OPEN(r))
    uv_timer_start(&r->eof, eof_cb, AB_PROC_EOF_GRACE_MS, 0);
}

static void close_if_open(uv_handle_t *h) {
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

/* The child is running: reads its pipes, keeps its deadline, forwards an
 * interrupt, and returns when it has exited and its pipes are closed. */
static void wait_child(run_t *r, const ab_proc_opts_t *opts, ab_proc_result_t *res) {
  r->alive = 1;
  res->pid = r->proc.pid;
  for (int i = 0; i < r->npipes; i++) {
    r->pipe_open[i] = 1;
    /* a child's stdout/stderr pipe, not a connection socket (those go
     * through io/conn.h) */
    uv_read_start((uv_stream_t *)&r->pipe[i], alloc_cb, read_cb);
  }
  if (opts != NULL && opts->timeout_s > 0) {
    double ms = opts->timeout_s * 1e3;
    uv_timer_start(&r->deadline, deadline_cb, ms < 1 ? 1 : (uint64_t)ms, 0);
  }
  /* A signal recorded from here on leaves a byte in the pipe, so the poll
   * fires even if the signal came before uv_poll_start. */
  if (intr_pipe[0] >= 0 && uv_poll_init(&r->loop, &r->intr, intr_pipe[0]) == 0) {
    r->have_intr = 1;
    r->intr.data = r;
    uv_poll_start(&r->intr, UV_READABLE, intr_cb);
  }
  if (intr_signal != 0) { /* belt and braces: no pipe, or poll failed */
    res->interrupted = 1;
    start_termination(r, AB_PROC_INTR_GRACE_MS);
  }
  while (r->alive || ANY_OPEN(r)) {
    if (uv_run(&r->loop, UV_RUN_ONCE) == 0) break; /* cannot happen */
  }
  if (r->alive) { /* only if the loop broke down: never leave it running */
    uv_process_kill(&r->proc, SIGKILL);
    waitpid(r->proc.pid, NULL, 0);
    r->alive = 0;
  }
  /* A Ctrl-C reaches the whole process group: the child may die of its
   * copy before the watcher sees ours (intr_cb then leaves the result
   * alone). Killed by the signal we recorded while it ran: interrupted,
   * not crashed -- or a caller would report a crash, or go on. */
  if (!res->interrupted && intr_signal != 0 && res->term_signal == (int)intr_signal)
    res->interrupted = 1;
}

/* Close everything still open (all of it on a failed spawn: the process
 * handle is initialised by uv_spawn even when it fails). */
static void close_run(run_t *r) {
  close_if_open((uv_handle_t *)&r->proc);
  close_if_open((uv_handle_t *)&r->pipe[0]);
  close_if_open((uv_handle_t *)&r->pipe[1]);
  if (r->npipes > 2) close_if_open((uv_handle_t *)&r->pipe[2]);
  if (r->npipes > 3) close_if_open((uv_handle_t *)&r->pipe[3]);
  close_if_open((uv_handle_t *)&r->deadline);
  close_if_open((uv_handle_t *)&r->kill);
  close_if_open((uv_handle_t *)&r->eof);
  if (r->have_intr) close_if_open((uv_handle_t *)&r->intr);
  uv_run(&r->loop, UV_RUN_DEFAULT);
  uv_loop_close(&r->loop); /* 0: every handle it had is closed above */
}

int ab_proc_spawn_wait(const char *const *argv, const ab_proc_opts_t *opts,
                       ab_proc_result_t *res) {
  memset(res, 0, sizeof(*res));
  if (argv == NULL || argv[0] == NULL) return AB_EINVAL;
  if (intr_signal != 0) {
    res->interrupted = 1;
    return 0;
  }

  run_t *r = calloc(1, sizeof(*r));
  if (r == NULL) return AB_ENOMEM;
  char **env = NULL;
  if (opts != NULL && opts->env != NULL) {
    env = ab_proc_merged_env(opts->env);
    if (env == NULL) {
      free(r);
      return AB_ENOMEM;
    }
  }
  int err = uv_loop_init(&r->loop);
  if (err != 0) {
    free(env);
    free(r);
    return err;
  }
  r->res = res;
  r->opts = opts;
  r->npipes = opts != NULL && opts->on_progress ? 4 : opts != NULL && opts->channel ? 3 : 2;
  for (int i = 0; i < r->npipes; i++) {
    uv_pipe_init(&r->loop, &r->pipe[i], 0);
    r->pipe[i].data = r;
  }
  uv_timer_init(&r->loop, &r->deadline);
  uv_timer_init(&r->loop, &r->kill);
  uv_timer_init(&r->loop, &r->eof);
  r->deadline.data = r->kill.data = r->eof.data = r->proc.data = r;

  uv_stdio_container_t stdio[5];
  stdio[0].flags = UV_IGNORE; /* libuv opens /dev/null for fds 0..2 */
  for (int i = 0; i < r->npipes; i++) {
    stdio[i + 1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[i + 1].data.stream = (uv_stream_t *)&r->pipe[i];
  }
  uv_process_options_t po;
  memset(&po, 0, sizeof(po));
  po.file = argv[0];
  po.args = (char **)argv;
  po.env = env;
  po.stdio_count = r->npipes + 1;
  po.stdio = stdio;
  po.exit_cb = exit_cb;

  r->start_ns = uv_hrtime();
  err = uv_spawn(&r->loop, &r->proc, &po);
  free(env);
  if (err == 0) wait_child(r, opts, res);
  close_run(r);
  free(r);
  if (err != 0) ab_proc_result_free(res);
  return err;
}
