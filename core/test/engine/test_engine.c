/* test_engine.c -- engine.h end to end in one process: every topology and
 * framing completes round trips, the accounting identity holds, clients are
 * spread i mod N, bad configurations are refused.  Also run under ASan +
 * UBSan by spec/asan_check.sh (leaks, use-after-free at teardown). */
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "drivers/registry.h"
#include "engine/engine.h"
#include "test/ab_test.h"

static ab_case_cfg_t base(void) {
  ab_case_cfg_t c;
  memset(&c, 0, sizeof(c));
  c.protocol = AB_PROTO_TCP;
  c.framing = AB_FRAMING_LENGTH;
  c.execution = AB_EXEC_CALLBACK;
  c.payload = 64;
  c.clients = 1;
  c.window = 1;
  c.model = AB_MODEL_SHARDED;
  c.threads = 1;
  c.warmup_s = 0.02;
  c.duration_s = 0.1;
  c.timeout_s = 2;
  c.driver = ab_driver_for(c.protocol, c.execution);
  return c;
}

static ab_result_t r;

static void run_ok(ab_case_cfg_t c) {
  c.driver = ab_driver_for(c.protocol, c.execution);
  CHECK(c.driver != NULL);
  CHECK(ab_run_case(&c, &r) == 0);
  CHECK(r.ok);
  CHECK(r.status == AB_RUN_OK);
  if (!r.ok) fprintf(stderr, "  error: %s\n", r.error);
  CHECK(r.completed > 0);
  CHECK_EQ_U64(r.sent, r.completed + r.drained + r.timed_out + r.message_errors + r.unfinished);
  CHECK_EQ_U64(r.rtt.count, r.completed + r.drained);
  CHECK_EQ_U64(r.connect.count, c.clients);
  CHECK(r.rtt.min > 0);
  CHECK(r.measured_s > c.duration_s - 0.001 && r.measured_s < c.duration_s + 0.001);
  CHECK(r.nerrors == 0);
}

/* sharded:N: the loops, the connections on them and the notes. */
static void test_sharded(void) {
  ab_case_cfg_t c = base();
  run_ok(c);
  ab_result_free(&r);

  /* acceptance 6: 10 clients on sharded:4 split 3/3/2/2 */
  c = base();
  c.clients = 10;
  c.model = AB_MODEL_SHARDED;
  c.threads = 4;
  run_ok(c);
  CHECK_EQ_U64(r.loops, 4);
  CHECK_EQ_U64(r.conns_per_loop[0], 3);
  CHECK_EQ_U64(r.conns_per_loop[1], 3);
  CHECK_EQ_U64(r.conns_per_loop[2], 2);
  CHECK_EQ_U64(r.conns_per_loop[3], 2);
  ab_result_free(&r);

  /* 2 clients on sharded:8: 2 connections, 6 idle loops, said in a note */
  c.clients = 2;
  c.threads = 8;
  run_ok(c);
  uint64_t sum = 0, zeros = 0;
  for (uint32_t i = 0; i < r.loops; i++) {
    sum += r.conns_per_loop[i];
    zeros += r.conns_per_loop[i] == 0;
  }
  CHECK_EQ_U64(sum, 2);
  CHECK_EQ_U64(zeros, 6);
  CHECK(r.nnotes >= 1 && strstr(r.notes[0], "6 of 8 loops have no connection") != NULL);
  ab_result_free(&r);

  /* 1 client on sharded:8: one loop has work, the 7 idle ones are not
   * busy threads, so no oversubscription note (8 threads on fewer CPUs
   * were one before) */
  c.clients = 1;
  c.threads = 8;
  run_ok(c);
  for (int i = 0; i < r.nnotes; i++) {
    CHECK(strstr(r.notes[i], "oversubscribed") == NULL);
    if (strstr(r.notes[i], "oversubscribed")) fprintf(stderr, "  note: %s\n", r.notes[i]);
  }
  ab_result_free(&r);
}

/* shared:N: one reactor set under N loop threads, callback and coroutine
 * execution, and what it refuses. */
static void test_shared(void) {
  ab_case_cfg_t c;
  /* shared:N: N loop threads on one reactor set; every connection's
   * replies counted once whichever thread ran it (the identity and the
   * histogram count in run_ok); no loop is idle for want of a connection,
   * and one message in flight keeps one thread busy (no oversubscription
   * note); TLS state travels with the connection */
  int shared_protos[] = {AB_PROTO_TCP, AB_PROTO_TLS, AB_PROTO_WS};
  for (size_t i = 0; i < sizeof(shared_protos) / sizeof(shared_protos[0]); i++) {
    c = base();
    c.protocol = shared_protos[i];
    c.clients = 8;
    c.window = 8;
    c.model = AB_MODEL_SHARED;
    c.threads = 4;
    run_ok(c);
    CHECK_EQ_U64(r.loops, 4);
    CHECK_EQ_U64(r.workers, 0);
    CHECK_EQ_U64(r.server_messages, r.completed + r.drained + r.warmup_completed);
    ab_result_free(&r);
  }
  c = base();
  c.model = AB_MODEL_SHARED;
  c.threads = 4;
  run_ok(c);
  CHECK_EQ_U64(r.loops, 4);
  CHECK(r.nnotes == 0);
  ab_result_free(&r);
  /* coroutine execution on shared:N: each connection's task resumes on
   * whichever thread takes its event (its stack migrates); every reply
   * counted once, TLS state travelling with the task's connection */
  int co_protos[] = {AB_PROTO_TCP, AB_PROTO_TLS};
  for (size_t i = 0; i < sizeof(co_protos) / sizeof(co_protos[0]); i++) {
    c = base();
    c.protocol = co_protos[i];
    c.execution = AB_EXEC_COROUTINE;
    c.clients = 8;
    c.window = 8;
    c.model = AB_MODEL_SHARED;
    c.threads = 2;
    c.driver = ab_driver_for(c.protocol, c.execution);
    run_ok(c);
    CHECK_EQ_U64(r.loops, 2);
    CHECK_EQ_U64(r.server_messages, r.completed + r.drained + r.warmup_completed);
    ab_result_free(&r);
  }
  /* shared:N refuses what it does not run (the scenario check says so
   * first, in file:line terms) */
  c = base();
  c.protocol = AB_PROTO_UDP;
  c.model = AB_MODEL_SHARED;
  c.threads = 2;
  c.driver = ab_driver_for(c.protocol, c.execution);
  CHECK(ab_run_case(&c, &r) == AB_ECONFIG);
  CHECK(strstr(r.error, "shared:2 does not run execution callback over protocol udp") != NULL);
  ab_result_free(&r);
}

/* pool:N with work, raw framing, and frame sizes around the edges. */
static void test_pool_and_framing(void) {
  ab_case_cfg_t c;
  /* pool:2 with work: the pool returns every frame, in order */
  c = base();
  c.clients = 4;
  c.window = 8;
  c.model = AB_MODEL_POOL;
  c.threads = 2;
  c.work = 1000;
  run_ok(c);
  CHECK_EQ_U64(r.workers, 2);
  CHECK(r.work_sink != 0);
  ab_result_free(&r);

  /* raw framing, odd payload, window > 1 */
  c = base();
  c.framing = AB_FRAMING_RAW;
  c.payload = 1001;
  c.clients = 3;
  c.window = 5;
  run_ok(c);
  ab_result_free(&r);

  /* frame sizes around the prefix and read-chunk edges */
  uint32_t sizes[] = {253, 254, 65535, 65536, 65537, 1 << 20};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    c = base();
    c.payload = sizes[i];
    c.window = 2;
    /* a 1 MiB echo under ASan takes tens of ms: give it room */
    c.duration_s = sizes[i] > 65536 ? 1.0 : 0.1;
    run_ok(c);
    ab_result_free(&r);
  }
}

/* Coroutine execution, the layered protocols, udp, no warm-up. */
static void test_executions(void) {
  ab_case_cfg_t c;
  /* execution = coroutine: plain, layered and with the work pool; every
   * task is cancelled at the end (ASan checks nothing leaks) */
  int protos[] = {AB_PROTO_TCP, AB_PROTO_WS, AB_PROTO_HTTPS};
  for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++) {
    c = base();
    c.protocol = protos[i];
    c.execution = AB_EXEC_COROUTINE;
    c.clients = 6;
    c.window = 4;
    c.model = i == 2 ? AB_MODEL_POOL : AB_MODEL_SHARDED;
    c.threads = 2;
    c.work = i == 2 ? 100 : 0;
    c.duration_s = 0.3;
    run_ok(c);
    ab_result_free(&r);
  }
  /* layered protocols in callback mode */
  int layered[] = {AB_PROTO_TLS, AB_PROTO_WS, AB_PROTO_WSS, AB_PROTO_HTTP, AB_PROTO_HTTPS};
  for (size_t i = 0; i < sizeof(layered) / sizeof(layered[0]); i++) {
    c = base();
    c.protocol = layered[i];
    c.clients = 3;
    c.window = 3;
    c.duration_s = 0.3;
    run_ok(c);
    if (layered[i] == AB_PROTO_TLS || layered[i] == AB_PROTO_WSS) {
      CHECK(strcmp(r.session.tls_version, "TLSv1.3") == 0);
      CHECK_EQ_U64(r.handshake.count, 3);
    }
    ab_result_free(&r);
  }
  /* udp */
  c = base();
  c.protocol = AB_PROTO_UDP;
  c.clients = 3;
  c.timeout_s = 0.2;
  run_ok(c);
  ab_result_free(&r);

  /* no warm-up at all */
  c = base();
  c.warmup_s = 0;
  run_ok(c);
  CHECK_EQ_U64(r.warmup_completed, 0);
  ab_result_free(&r);
}

/* What ab_case_check and the driver table refuse, in their words. */
static void test_refusals(void) {
  ab_case_cfg_t c;
  /* refusals */
  char err[256];
  c = base();
  c.payload = 0;
  CHECK(ab_case_check(&c, err, sizeof(err)) == AB_ECONFIG);
  CHECK(strstr(err, "payload 0 out of range 1 ..") != NULL);
  c.payload = 1; /* below the 16-byte header: the small form (framing.h) */
  CHECK(ab_case_check(&c, err, sizeof(err)) == 0);
  c = base();
  c.clients = 0;
  CHECK(ab_case_check(&c, err, sizeof(err)) == AB_ECONFIG);
  c = base();
  c.duration_s = 0;
  CHECK(ab_case_check(&c, err, sizeof(err)) == AB_ECONFIG);
  /* no driver for the pair: refused before anything runs */
  CHECK(ab_driver_for(AB_PROTO_UDP, AB_EXEC_COROUTINE) == NULL);
  CHECK(ab_driver_for(AB_PROTO_TCP, AB_EXEC_HOOKS) == NULL);
  /* a scripted driver's base row follows the protocol's transport: loss
   * is measured over datagrams, a stream may reopen */
  CHECK(ab_driver_scripted_base(AB_PROTO_UDP) != NULL && ab_driver_scripted_base(AB_PROTO_UDP)->loss_is_measured);
  CHECK(ab_driver_scripted_base(AB_PROTO_UDP)->accept == NULL);
  CHECK(ab_driver_scripted_base(AB_PROTO_TLS) != NULL && ab_driver_scripted_base(AB_PROTO_TLS)->accept != NULL);
  CHECK(!ab_driver_scripted_base(AB_PROTO_TLS)->loss_is_measured);
  CHECK(ab_driver_scripted_base(0) == NULL);
  c = base();
  c.driver = NULL;
  CHECK(ab_case_check(&c, err, sizeof(err)) == AB_ECONFIG);
  CHECK(strstr(err, "no driver") != NULL);
  c = base();
  c.threads = 0;
  CHECK(ab_run_case(&c, &r) == AB_ECONFIG);
  CHECK(strstr(r.error, "topology") != NULL);
  ab_result_free(&r);
  /* the capability table (proto/caps.h) decides, with its numbers */
  c = base();
  c.protocol = AB_PROTO_UDP;
  c.payload = AB_UDP_MAX_PAYLOAD + 1;
  CHECK(ab_case_check(&c, err, sizeof(err)) == AB_ECONFIG);
  CHECK(strcmp(err, "udp payload 65508 out of range 1 .. 65507") == 0);
  c.payload = AB_UDP_MAX_PAYLOAD;
  CHECK(ab_case_check(&c, err, sizeof(err)) == 0);
  c.execution = AB_EXEC_COROUTINE;
  CHECK(ab_case_check(&c, err, sizeof(err)) == AB_ECONFIG);
  CHECK(strcmp(err, "execution coroutine does not run protocol udp") == 0);
  c = base();
  c.protocol = 0;
  CHECK(ab_case_check(&c, err, sizeof(err)) == AB_ECONFIG);
  c = base();
  c.window = 4097;
  CHECK(ab_case_check(&c, err, sizeof(err)) == AB_ECONFIG);
  CHECK(strcmp(err, "window 4097 out of range 1 .. 4096") == 0);
}

int main(void) {
  test_sharded();
  test_shared();
  test_pool_and_framing();
  test_executions();
  test_refusals();
  TEST_DONE();
}
