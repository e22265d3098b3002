/* child.c -- see child.h. */
#include "io/child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "base/ab_error.h"

#define CHUNK 65536

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static void reset(ab_child_t *c) {
  memset(c, 0, sizeof(*c));
  c->in_fd = -1;
  c->out_fd[0] = c->out_fd[1] = c->out_fd[2] = -1;
}

/* In the child, between fork and exec: only async-signal-safe calls. */
static void exec_child(const char *const *argv, char **envp, int in_rd, const int wr[3],
                       int parent) {
  int devnull = in_rd < 0 ? open("/dev/null", O_RDONLY) : in_rd;
  if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(wr[0], 1) < 0 || dup2(wr[1], 2) < 0 ||
      dup2(wr[2], AB_PROC_CHANNEL_FD) < 0)
    _exit(127);
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127); /* the caller died before the prctl */
#else
  (void)parent;
#endif
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  execvpe(argv[0], (char *const *)argv, envp);
  _exit(127);
}

int ab_child_start(ab_child_t *c, const char *const *argv, const char *const *env,
                   int with_stdin) {
  static const char *const none[] = {NULL};
  reset(c);
  int in[2] = {-1, -1}, p[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
  int r = 0;
  char **envp = ab_proc_merged_env(env ? env : none);
  if (envp == NULL) return AB_ENOMEM;
  if (with_stdin && pipe2(in, O_CLOEXEC) != 0) r = -errno;
  for (int i = 0; i < 3 && r == 0; i++)
    if (pipe2(p[i], O_CLOEXEC) != 0) r = -errno;
  int parent = (int)getpid();
  pid_t pid = r == 0 ? fork() : -1;
  if (r == 0 && pid < 0) r = -errno;
  if (pid == 0) {
    int wr[3] = {p[0][1], p[1][1], p[2][1]};
    exec_child(argv, envp, in[0], wr, parent);
  }
  free(envp);
  close_fd(&in[0]);
  for (int i = 0; i < 3; i++) close_fd(&p[i][1]);
  if (r < 0) {
    close_fd(&in[1]);
    for (int i = 0; i < 3; i++) close_fd(&p[i][0]);
    return r;
  }
  c->pid = (int)pid;
  c->in_fd = in[1];
  for (int i = 0; i < 3; i++) {
    c->out_fd[i] = p[i][0];
    fcntl(c->out_fd[i], F_SETFL, O_NONBLOCK);
  }
  return 0;
}

static int append(ab_proc_buf_t *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n + 1) cap *= 2;
    char *d = realloc(b->data, cap);
    if (d == NULL) return AB_ENOMEM;
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

/* Reads one pipe until it would block; counts events. */
static int drain(ab_child_t *c, int i, int *events) {
  char chunk[CHUNK];
  for (;;) {
    ssize_t n = read(c->out_fd[i], chunk, sizeof(chunk));
    if (n > 0) {
      (*events)++;
      if (c->buf[i].len < AB_PROC_OUTPUT_MAX && append(&c->buf[i], chunk, (size_t)n) < 0)
        return AB_ENOMEM;
      continue;
    }
    if (n == 0) {
      (*events)++;
      close_fd(&c->out_fd[i]);
    } else if (errno == EINTR) {
      continue;
    }
    return 0;
  }
}

static void reap(ab_child_t *c, int *events) {
  int st;
  if (c->pid <= 0 || c->exited) return;
  if (waitpid(c->pid, &st, WNOHANG) != c->pid) return;
  c->exited = 1;
  c->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  c->term_signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  (*events)++;
}

int ab_child_poll(ab_child_t *const *kids, int n, int timeout_ms) {
  struct pollfd *pf = calloc((size_t)n * 3 + 1, sizeof(*pf));
  if (pf == NULL) return AB_ENOMEM;
  int np = 0, events = 0, alive = 0;
  for (int k = 0; k < n; k++) {
    for (int i = 0; i < 3; i++)
      if (kids[k]->out_fd[i] >= 0) pf[np++] = (struct pollfd){kids[k]->out_fd[i], POLLIN, 0};
    alive += kids[k]->pid > 0 && !kids[k]->exited;
  }
  /* an exit is not a descriptor event: poll in slices while any runs */
  int slice = alive && (timeout_ms < 0 || timeout_ms > 20) ? 20 : timeout_ms;
  int waited = 0;
  for (;;) {
    int r = poll(pf, (nfds_t)np, slice);
    if (r < 0 && errno != EINTR) {
      free(pf);
      return -errno;
    }
    for (int k = 0; k < n; k++) {
      for (int i = 0; i < 3; i++)
        if (kids[k]->out_fd[i] >= 0 && drain(kids[k], i, &events) < 0) {
          free(pf);
          return AB_ENOMEM;
        }
      reap(kids[k], &events);
    }
    waited += slice;
    if (events > 0 || r < 0 || (timeout_ms >= 0 && waited >= timeout_ms)) break;
    if (np == 0 && alive == 0) break;
  }
  free(pf);
  return events;
}

int ab_child_write(ab_child_t *c, const char *s, size_t len) {
  if (c->in_fd < 0) return AB_EINVAL;
  while (len > 0) {
    ssize_t w = write(c->in_fd, s, len);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    s += w;
    len -= (size_t)w;
  }
  return 0;
}

void ab_child_close_stdin(ab_child_t *c) { close_fd(&c->in_fd); }

void ab_child_signal(ab_child_t *c, int sig) {
  if (c->pid > 0 && !c->exited) kill(c->pid, sig);
}

void ab_child_close(ab_child_t *c) {
  if (c->pid > 0 && !c->exited) {
    kill(c->pid, SIGKILL);
    int st;
    while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR) {
    }
  }
  close_fd(&c->in_fd);
  for (int i = 0; i < 3; i++) {
    close_fd(&c->out_fd[i]);
    free(c->buf[i].data);
  }
  reset(c);
}
