/* child.h -- several child processes at once, each with pipes the caller
 * reads and writes while they run (the process group of a case with
 * processes = N: lua/arkbench/run/group.lua; `arkbench serve --processes
 * N`).  ab_proc_spawn_wait (proc.h) runs one child to its end; this runs
 * many side by side and hands their output over as it comes.
 *
 * A child gets: stdin from a pipe the caller may write (with_stdin) or
 * /dev/null; stdout, stderr and fd 3 (its result channel, as
 * proc.h's AB_PROC_CHANNEL_FD) on pipes the caller reads; the default
 * dispositions of SIGINT, SIGTERM and SIGPIPE and an empty signal mask;
 * PR_SET_PDEATHSIG(SIGKILL), so it never outlives the caller; the caller's
 * process group, so a terminal's Ctrl-C reaches it too.
 *
 * Nothing here uses a thread or libuv: ab_child_poll is poll(2) over every
 * pipe and waitpid(WNOHANG) for every child.  Errors follow ab_error.h.
 */
#ifndef AB_CHILD_H
#define AB_CHILD_H

#include <stddef.h>

#include "io/proc.h" /* ab_proc_buf_t */

enum { AB_CHILD_STDOUT = 0, AB_CHILD_STDERR = 1, AB_CHILD_CHANNEL = 2 };

typedef struct ab_child_s {
  int pid;              /* 0 when nothing was started */
  int in_fd;            /* the write end of its stdin, -1 when none */
  int out_fd[3];        /* read ends of its stdout, stderr, fd 3; -1 at EOF */
  ab_proc_buf_t buf[3]; /* everything each has written so far */
  int exited;           /* reaped: exit_code or term_signal is valid */
  int exit_code;        /* -1 when a signal ended it */
  int term_signal;      /* 0 when it exited */
} ab_child_t;

/* Starts argv[0] (PATH-searched without a slash) with argv and the
 * environment plus env ("K=V", NULL-terminated, may be NULL).  0, or a
 * negative code with nothing left running (*c zeroed). */
int ab_child_start(ab_child_t *c, const char *const *argv, const char *const *env,
                   int with_stdin);

/* Reads what the n children's pipes hold and reaps those that ended,
 * waiting up to timeout_ms (< 0: until something happens) for the first
 * event; returns how many events there were (bytes read, EOFs, exits), 0
 * on a timeout or a signal, or a negative code. */
int ab_child_poll(ab_child_t *const *kids, int n, int timeout_ms);

/* Writes all of s to the child's stdin (blocking); 0 or a negative code
 * (UV_EPIPE once it is gone, EINVAL without a stdin pipe). */
int ab_child_write(ab_child_t *c, const char *s, size_t len);

/* Closes the child's stdin (EOF for it). */
void ab_child_close_stdin(ab_child_t *c);

/* Sends sig when the child is not reaped yet. */
void ab_child_signal(ab_child_t *c, int sig);

/* SIGKILLs a child still running, reaps it, closes every pipe and frees
 * the buffers; *c is zeroed.  Safe on a zeroed or already closed child. */
void ab_child_close(ab_child_t *c);

#endif
