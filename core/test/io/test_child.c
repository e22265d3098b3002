/* test_child.c -- io/child.h: several children at once, their pipes read
 * as they write, stdin written, exits and signals reaped. */
#include <signal.h>
#include <string.h>

#include "test/ab_test.h"
#include "io/child.h"

/* polls until the child is reaped (at most ~5 s) */
static void wait_exit(ab_child_t *c) {
  ab_child_t *k[1] = {c};
  for (int i = 0; i < 250 && !c->exited; i++) ab_child_poll(k, 1, 20);
}

int main(void) {
  /* stdout, stderr, fd 3 and stdin, two children side by side */
  const char *a_argv[] = {"sh", "-c", "echo out; echo err >&2; echo chan >&3; read x; echo got $x; exit 4",
                          NULL};
  const char *b_argv[] = {"sh", "-c", "echo $AB_CHILD_TEST; exec sleep 30", NULL};
  const char *b_env[] = {"AB_CHILD_TEST=from-env", NULL};
  ab_child_t a, b;
  CHECK(ab_child_start(&a, a_argv, NULL, 1) == 0);
  CHECK(ab_child_start(&b, b_argv, b_env, 0) == 0);
  ab_child_t *both[2] = {&a, &b};
  for (int i = 0; i < 250 && (a.buf[AB_CHILD_CHANNEL].len < 5 || b.buf[AB_CHILD_STDOUT].len < 9); i++)
    ab_child_poll(both, 2, 20);
  CHECK(a.buf[AB_CHILD_STDOUT].data && strcmp(a.buf[AB_CHILD_STDOUT].data, "out\n") == 0);
  CHECK(a.buf[AB_CHILD_STDERR].data && strcmp(a.buf[AB_CHILD_STDERR].data, "err\n") == 0);
  CHECK(a.buf[AB_CHILD_CHANNEL].data && strcmp(a.buf[AB_CHILD_CHANNEL].data, "chan\n") == 0);
  CHECK(b.buf[AB_CHILD_STDOUT].data && strcmp(b.buf[AB_CHILD_STDOUT].data, "from-env\n") == 0);
  CHECK(!a.exited && !b.exited);
  CHECK(ab_child_write(&a, "hello\n", 6) == 0);
  wait_exit(&a);
  CHECK(a.exited);
  CHECK_EQ_U64(a.exit_code, 4);
  CHECK_EQ_U64(a.term_signal, 0);
  CHECK(strcmp(a.buf[AB_CHILD_STDOUT].data, "out\ngot hello\n") == 0);
  /* a signal ends the other; its exit is reaped by the poll */
  ab_child_signal(&b, SIGTERM);
  wait_exit(&b);
  CHECK(b.exited);
  CHECK_EQ_U64(b.term_signal, SIGTERM);
  CHECK(b.exit_code == -1);
  /* stdin of a child started without one */
  CHECK(ab_child_write(&b, "x", 1) < 0);
  ab_child_close(&a);
  ab_child_close(&b);
  CHECK(a.pid == 0 && a.out_fd[0] == -1 && a.in_fd == -1);
  /* close kills and reaps one that still runs */
  const char *c_argv[] = {"sleep", "30", NULL};
  ab_child_t c;
  CHECK(ab_child_start(&c, c_argv, NULL, 0) == 0);
  int pid = c.pid;
  ab_child_close(&c);
  CHECK(kill(pid, 0) != 0);
  /* a program that does not exist: exit 127 from the child */
  const char *d_argv[] = {"/nonexistent/arkbench-test", NULL};
  ab_child_t d;
  CHECK(ab_child_start(&d, d_argv, NULL, 0) == 0);
  wait_exit(&d);
  CHECK_EQ_U64(d.exit_code, 127);
  ab_child_close(&d);
  TEST_DONE();
}
