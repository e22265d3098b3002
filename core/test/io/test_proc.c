/* test_proc.c -- proc.h: capture, exit codes, signals, timeout escalation,
 * interrupts, environment, spawn failures. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "base/ab_error.h"
#include "io/proc.h"
#include "test/ab_test.h"

static ab_proc_result_t res;

static int run_sh(const char *script, double timeout_s, const char *const *env) {
  const char *argv[] = {"/bin/sh", "-c", script, NULL};
  ab_proc_opts_t opts = {.timeout_s = timeout_s, .env = env};
  return ab_proc_spawn_wait(argv, &opts, &res);
}

static int streq(const char *got, const char *want) {
  return got != NULL && strcmp(got, want) == 0;
}

static void test_capture_and_exit_code(void) {
  CHECK(run_sh("echo hi; echo err >&2; exit 3", 10, NULL) == 0);
  CHECK(streq(res.out.data, "hi\n"));
  CHECK(streq(res.err.data, "err\n"));
  CHECK(res.exited == 1);
  CHECK(res.exit_code == 3);
  CHECK(res.term_signal == 0);
  CHECK(res.timed_out == 0 && res.interrupted == 0);
  CHECK(res.pid > 0);
  CHECK(res.elapsed_s > 0 && res.elapsed_s < 5);
  ab_proc_result_free(&res);
  CHECK(res.out.data == NULL && res.pid == 0);
}

static void test_stdin_is_dev_null(void) {
  CHECK(run_sh("cat; echo end", 5, NULL) == 0); /* must not block */
  CHECK(streq(res.out.data, "end\n"));
  CHECK(res.exit_code == 0 && res.timed_out == 0);
  ab_proc_result_free(&res);
}

static void test_timeout_sigterm(void) {
  const char *argv[] = {"sleep", "5", NULL}; /* PATH search */
  ab_proc_opts_t opts = {.timeout_s = 0.3};
  uint64_t t0 = uv_hrtime();
  CHECK(ab_proc_spawn_wait(argv, &opts, &res) == 0);
  double took = (double)(uv_hrtime() - t0) / 1e9;
  CHECK(res.timed_out == 1);
  CHECK(res.exited == 0);
  CHECK(res.term_signal == SIGTERM || res.term_signal == SIGKILL);
  CHECK(took >= 0.29 && took < 1.5);
  CHECK(res.elapsed_s >= 0.29 && res.elapsed_s < 1.5);
  ab_proc_result_free(&res);
}

static void test_timeout_escalates_to_sigkill(void) {
  uint64_t t0 = uv_hrtime();
  CHECK(run_sh("trap '' TERM; exec sleep 5", 0.2, NULL) == 0);
  double took = (double)(uv_hrtime() - t0) / 1e9;
  CHECK(res.timed_out == 1);
  CHECK(res.term_signal == SIGKILL);
  CHECK(took >= 0.65 && took < 1.5); /* 0.2 s + 500 ms grace */
  ab_proc_result_free(&res);
}

static void test_killed_by_signal(void) {
  CHECK(run_sh("kill -9 $$", 5, NULL) == 0);
  CHECK(res.term_signal == SIGKILL);
  CHECK(res.exited == 0);
  CHECK(res.timed_out == 0);
  char buf[16];
  CHECK(streq(ab_proc_signame(res.term_signal, buf, sizeof(buf)), "SIGKILL"));
  CHECK(streq(ab_proc_signame(SIGTERM, buf, sizeof(buf)), "SIGTERM"));
  CHECK(streq(ab_proc_signame(99, buf, sizeof(buf)), "SIG99"));
  ab_proc_result_free(&res);
}

static void test_large_output(void) {
  CHECK(run_sh("head -c 1048576 /dev/zero; head -c 300000 /dev/zero >&2", 10,
               NULL) == 0);
  CHECK_EQ_U64(res.out.len, 1048576);
  CHECK_EQ_U64(res.err.len, 300000);
  int all_zero = res.out.data != NULL;
  for (size_t i = 0; all_zero && i < res.out.len; i++)
    all_zero = res.out.data[i] == 0;
  CHECK(all_zero);
  CHECK(res.out.truncated == 0);
  CHECK(res.exit_code == 0);
  ab_proc_result_free(&res);
}

static void test_grandchild_holding_pipe(void) {
  /* The child exits at once but a background grandchild keeps stdout open:
   * the call must not wait for it. */
  uint64_t t0 = uv_hrtime();
  CHECK(run_sh("sleep 3 & echo done", 10, NULL) == 0);
  double took = (double)(uv_hrtime() - t0) / 1e9;
  CHECK(streq(res.out.data, "done\n"));
  CHECK(res.exit_code == 0);
  CHECK(took < 1.0);
  ab_proc_result_free(&res);
}

static void test_env(void) {
  setenv("AB_TEST_OLD", "old", 1);
  const char *env[] = {"AB_TEST_NEW=42", "AB_TEST_OLD=new", NULL};
  CHECK(run_sh("echo \"$AB_TEST_NEW $AB_TEST_OLD $(env | grep -c '^AB_TEST_OLD=')\"",
               5, env) == 0);
  CHECK(streq(res.out.data, "42 new 1\n"));
  ab_proc_result_free(&res);
  /* without opts->env the environment is inherited unchanged */
  CHECK(run_sh("echo $AB_TEST_OLD", 5, NULL) == 0);
  CHECK(streq(res.out.data, "old\n"));
  ab_proc_result_free(&res);
}

static void test_spawn_failure(void) {
  const char *argv[] = {"/nonexistent/arkbench-worker", NULL};
  int err = ab_proc_spawn_wait(argv, NULL, &res);
  CHECK(err == UV_ENOENT);
  CHECK(res.out.data == NULL && res.pid == 0);
  const char *empty[] = {NULL};
  CHECK(ab_proc_spawn_wait(empty, NULL, &res) == AB_EINVAL);
}

static void test_interrupt(void) {
  CHECK(ab_proc_signals_install() == 0);
  CHECK(ab_proc_signals_install() == 0); /* idempotent */
  CHECK(ab_proc_interrupted() == 0);

  /* The child interrupts us (its parent), then sleeps. */
  uint64_t t0 = uv_hrtime();
  CHECK(run_sh("kill -INT $PPID; exec sleep 5", 10, NULL) == 0);
  double took = (double)(uv_hrtime() - t0) / 1e9;
  CHECK(res.interrupted == 1);
  CHECK(res.timed_out == 0);
  CHECK(res.term_signal == SIGTERM);
  CHECK(took < 1.0);
  CHECK(ab_proc_interrupted() == SIGINT);
  ab_proc_result_free(&res);

  /* A child that ignores SIGTERM is SIGKILLed AB_PROC_INTR_GRACE_MS (1 s)
   * later: the grace a worker has to write what it measured. */
  ab_proc_interrupt_clear();
  t0 = uv_hrtime();
  CHECK(run_sh("trap '' TERM; kill -TERM $PPID; exec sleep 5", 10, NULL) == 0);
  took = (double)(uv_hrtime() - t0) / 1e9;
  CHECK(res.interrupted == 1);
  CHECK(res.term_signal == SIGKILL);
  CHECK(took >= AB_PROC_INTR_GRACE_MS / 1e3 && took < AB_PROC_INTR_GRACE_MS / 1e3 + 0.7);
  CHECK(ab_proc_interrupted() == SIGTERM);
  ab_proc_result_free(&res);

  /* Sticky: a signal recorded between calls stops the next one at once. */
  raise(SIGINT); /* recorded, not fatal */
  CHECK(ab_proc_interrupted() == SIGTERM); /* the first one is kept */
  CHECK(run_sh("echo never", 10, NULL) == 0);
  CHECK(res.interrupted == 1 && res.pid == 0 && res.out.data == NULL);
  ab_proc_result_free(&res);

  /* The same Ctrl-C kills the child first (a terminal signals the whole
   * process group): its exit is seen before the wake-up byte, since a
   * grandchild that holds the pipes signals us 0.1 s after the child died.
   * That child was interrupted, not crashed. */
  ab_proc_interrupt_clear();
  CHECK(run_sh("(sleep 0.1; kill -INT $PPID; sleep 0.05) & kill -INT $$", 10, NULL) == 0);
  CHECK(res.term_signal == SIGINT);
  CHECK(res.interrupted == 1);
  CHECK(ab_proc_interrupted() == SIGINT);
  ab_proc_result_free(&res);

  /* A child killed by SIGINT on its own, with no signal to us: crashed,
   * not interrupted. */
  ab_proc_interrupt_clear();
  CHECK(run_sh("kill -INT $$", 10, NULL) == 0);
  CHECK(res.term_signal == SIGINT);
  CHECK(res.interrupted == 0);
  ab_proc_result_free(&res);

  /* Cleared: calls run normally again, and the old wake-up byte is gone. */
  ab_proc_interrupt_clear();
  CHECK(ab_proc_interrupted() == 0);
  CHECK(run_sh("sleep 0.2; echo fine", 10, NULL) == 0);
  CHECK(streq(res.out.data, "fine\n"));
  CHECK(res.interrupted == 0 && res.exit_code == 0);
  ab_proc_result_free(&res);
}

/* the result channel: fd 3 is captured apart from stdout, and a child
 * that never writes to it leaves it empty */
static void test_channel(void) {
  const char *argv[] = {"/bin/sh", "-c", "echo user; echo result >&3; echo more", NULL};
  ab_proc_opts_t opts = {.timeout_s = 10, .channel = 1};
  CHECK(ab_proc_spawn_wait(argv, &opts, &res) == 0);
  CHECK(streq(res.out.data, "user\nmore\n"));
  CHECK(streq(res.chan.data, "result\n"));
  CHECK(res.exit_code == 0);
  ab_proc_result_free(&res);
  const char *quiet[] = {"/bin/sh", "-c", "echo only-stdout", NULL};
  CHECK(ab_proc_spawn_wait(quiet, &opts, &res) == 0);
  CHECK(res.chan.len == 0 && streq(res.out.data, "only-stdout\n"));
  ab_proc_result_free(&res);
  /* without the option nothing is captured from fd 3 */
  opts.channel = 0;
  const char *none[] = {"/bin/sh", "-c", "echo x >&3 2>/dev/null; echo done", NULL};
  CHECK(ab_proc_spawn_wait(none, &opts, &res) == 0);
  CHECK(res.chan.data == NULL && streq(res.out.data, "done\n"));
  ab_proc_result_free(&res);
}

/* the progress pipe: each line on fd 4 is handed over as it comes, while
 * the child still runs (the second line is written after a pause), apart
 * from fd 3; a line past AB_PROC_PROGRESS_LINE bytes is dropped */
static char got_lines[256];
static int got_n;
static void collect(void *arg, const char *line, size_t len) {
  (void)arg;
  size_t have = strlen(got_lines);
  if (have + len + 2 < sizeof(got_lines)) {
    memcpy(got_lines + have, line, len);
    got_lines[have + len] = '|';
    got_lines[have + len + 1] = '\0';
  }
  got_n++;
}

static void test_progress(void) {
  const char *argv[] = {"/bin/sh", "-c",
                        "echo a >&4; echo r >&3; printf 'b' >&4; sleep 0.05; echo c >&4;"
                        " head -c 2000 /dev/zero | tr '\\0' x >&4; echo >&4; echo d >&4",
                        NULL};
  ab_proc_opts_t opts = {.timeout_s = 10, .on_progress = collect};
  got_lines[0] = '\0';
  got_n = 0;
  CHECK(ab_proc_spawn_wait(argv, &opts, &res) == 0);
  CHECK(streq(got_lines, "a|bc|d|"));
  CHECK(got_n == 3);
  CHECK(streq(res.chan.data, "r\n")); /* implies the channel */
  CHECK(res.exit_code == 0);
  ab_proc_result_free(&res);
}

static void test_exe_path(void) {
  char buf[4096];
  CHECK(ab_proc_exe_path(buf, sizeof(buf)) == 0);
  CHECK(buf[0] == '/');
  CHECK(strstr(buf, "test_proc") != NULL);
  CHECK(ab_proc_exe_path(buf, 4) == UV_ENOBUFS);
}

int main(void) {
  test_capture_and_exit_code();
  test_stdin_is_dev_null();
  test_timeout_sigterm();
  test_timeout_escalates_to_sigkill();
  test_killed_by_signal();
  test_large_output();
  test_grandchild_holding_pipe();
  test_env();
  test_spawn_failure();
  test_interrupt();
  test_channel();
  test_progress();
  test_exe_path();
  TEST_DONE();
}
