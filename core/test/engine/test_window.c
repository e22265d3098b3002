/* test_window.c -- the window (engine/window.h) on its own, over a
 * stream (ordered completion): no sockets, no loop threads.  A loop and
 * its clients are plain structs here (window_fixture.h); phases,
 * deadlines and clock readings are set by hand, so each rule is checked
 * at its exact boundary: stamping, the phase gate, ordered completion, a
 * late reply, a coded reply, release, the quota, the timeout sweep and the
 * forced finish.  Datagrams are test_window_dgram.c's, the rate schedule
 * test_window_rate.c's, the time series test_window_series.c's, tags
 * test_window_tags.c's. */
#include "test/engine/window_fixture.h"

static void test_stamping(void) {
  ab__loop_t *l = loop_new(1, 4, AB__WIN_ORDERED);
  ab__client_t *c = ab__loop_client(l, 0);
  ab__win_grant_t g;
  CHECK_EQ_U64(ab__win_grant(c, 100, &g), 4);
  CHECK_EQ_U64(g.seq, 0);
  CHECK_EQ_U64(g.phase, AB_PHASE_MEASURE);
  CHECK_EQ_U64(g.deadline, DEADLINE);
  /* a batch may go out in parts: the grant moves past what was stamped */
  CHECK_EQ_U64(ab__win_stamp(c, &g, 3, 100), 3);
  CHECK_EQ_U64(g.seq, 3);
  CHECK_EQ_U64(g.n, 1);
  CHECK_EQ_U64(c->win.inflight, 3);
  CHECK_EQ_U64(c->win.next_seq, 3);
  CHECK_EQ_U64(c->win.oldest_seq, 0);
  CHECK_EQ_U64(l->sent, 3);
  CHECK_EQ_U64(l->meas_inflight, 3);
  CHECK_EQ_U64(ab__win_grant(c, 100, &g), 1);
  CHECK_EQ_U64(g.seq, 3);
  CHECK_EQ_U64(ab__win_stamp(c, &g, 1, 200), 1);
  CHECK_EQ_U64(c->win.ns[ab__win_slot(l, 3)], 200);
  CHECK_EQ_U64(c->win.seq[ab__win_slot(l, 3)], 3);
  /* full: nothing more */
  CHECK_EQ_U64(ab__win_grant(c, 200, &g), 0);
  loop_free(l);

  /* warm-up messages take slots but are not `sent` (measure only) */
  l = loop_new(1, 2, AB__WIN_ORDERED);
  c = ab__loop_client(l, 0);
  l->phase = AB__PH_WARMUP;
  CHECK_EQ_U64(ab__win_grant(c, 10, &g), 2);
  CHECK_EQ_U64(g.phase, AB_PHASE_WARMUP);
  CHECK_EQ_U64(g.deadline, DEADLINE / 2);
  CHECK_EQ_U64(ab__win_stamp(c, &g, 2, 10), 2);
  CHECK_EQ_U64(l->sent, 0);
  CHECK_EQ_U64(l->warm_inflight, 2);
  CHECK_EQ_U64(l->meas_inflight, 0);
  CHECK_EQ_U64(c->win.phase[0], AB_PHASE_WARMUP);
  loop_free(l);

  /* a window that is not a power of two wraps its slots */
  l = loop_new(1, 3, AB__WIN_ORDERED);
  c = ab__loop_client(l, 0);
  CHECK_EQ_U64(issue(c, 10), 3);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 0, 20) == AB__WIN_MEASURED);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 1, 20) == AB__WIN_MEASURED);
  CHECK_EQ_U64(issue(c, 30), 2); /* seq 3, 4 in slots 0, 1 */
  CHECK_EQ_U64(c->win.seq[0], 3);
  CHECK_EQ_U64(c->win.seq[1], 4);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 2, 40) == AB__WIN_MEASURED);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 3, 40) == AB__WIN_MEASURED);
  CHECK_EQ_U64(c->win.inflight, 1);
  check_identity(l);
  loop_free(l);
}

static void test_phase_gate(void) {
  static const int closed[] = {AB__PH_IDLE, AB__PH_WARM_DRAIN, AB__PH_DRAIN, AB__PH_DONE,
                               AB__PH_STOPPING};
  ab__loop_t *l = loop_new(1, 4, AB__WIN_ORDERED);
  ab__client_t *c = ab__loop_client(l, 0);
  ab__win_grant_t g;
  uint64_t dl = 0;
  for (size_t i = 0; i < sizeof(closed) / sizeof(closed[0]); i++) {
    l->phase = closed[i];
    CHECK_EQ_U64(ab__win_grant(c, 10, &g), 0);
    CHECK_EQ_U64(g.n, 0);
    CHECK_EQ_U64(ab__win_phase(l, 10, &dl), 0);
  }
  l->phase = AB__PH_WARMUP;
  CHECK_EQ_U64(ab__win_phase(l, DEADLINE / 2 - 1, &dl), AB_PHASE_WARMUP);
  CHECK_EQ_U64(ab__win_phase(l, DEADLINE / 2, &dl), 0);
  l->phase = AB__PH_MEASURE;
  CHECK_EQ_U64(ab__win_phase(l, DEADLINE - 1, &dl), AB_PHASE_MEASURE);
  CHECK_EQ_U64(dl, DEADLINE);
  /* at or past the deadline: nothing granted */
  CHECK_EQ_U64(ab__win_grant(c, DEADLINE, &g), 0);
  /* granted just before, stamped at the deadline: not sent, not counted */
  CHECK_EQ_U64(ab__win_grant(c, DEADLINE - 1, &g), 4);
  CHECK_EQ_U64(ab__win_stamp(c, &g, 4, DEADLINE), 0);
  CHECK_EQ_U64(c->win.inflight, 0);
  CHECK_EQ_U64(c->win.next_seq, 0);
  CHECK_EQ_U64(l->sent, 0);
  CHECK_EQ_U64(l->meas_inflight, 0);
  CHECK_EQ_U64(ab__win_stamp(c, &g, 4, DEADLINE - 1), 4);
  CHECK_EQ_U64(l->sent, 4);
  loop_free(l);
}

static void test_ordered(void) {
  ab__loop_t *l = loop_new(2, 4, AB__WIN_ORDERED);
  ab__client_t *c = ab__loop_client(l, 1);
  CHECK_EQ_U64(issue(c, 1000), 4);
  /* only the oldest in flight, of this connection, in its phase */
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 1, 1, 1500) == AB_ESEQ);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 0, 1500) == AB_ESEQ);
  CHECK(ab__win_complete(c, AB_PHASE_WARMUP, 1, 0, 1500) == AB_ESEQ);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 1, 7, 1500) == AB_ESEQ);
  CHECK_EQ_U64(c->win.inflight, 4);
  CHECK_EQ_U64(l->iv[0].rtt.count, 0);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 1, 0, 1500) == AB__WIN_MEASURED);
  CHECK_EQ_U64(l->iv[0].rtt.count, 1);
  CHECK_EQ_U64(l->iv[0].rtt.min, 500);
  CHECK_EQ_U64(l->completed, 1);
  CHECK_EQ_U64(c->win.oldest_seq, 1);
  CHECK_EQ_U64(c->win.inflight, 3);
  /* a reply with no header (phase 0) takes the phase it was sent in */
  CHECK(ab__win_complete_oldest(c, 1700) == AB__WIN_MEASURED);
  CHECK_EQ_U64(c->win.oldest_seq, 2);
  /* the deadline itself is inside the measured interval; after it: drained
   * (its RTT still recorded) */
  l->deadline_ns = 1800;
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 1, 2, 1800) == AB__WIN_MEASURED);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 1, 3, 1801) == AB__WIN_FREED);
  CHECK_EQ_U64(l->completed, 3);
  CHECK_EQ_U64(l->drained, 1);
  CHECK_EQ_U64(l->iv[0].rtt.count, 4);
  CHECK_EQ_U64(l->iv[0].rtt.max, 801);
  CHECK_EQ_U64(l->meas_inflight, 0);
  CHECK(ab__win_complete_oldest(c, 1900) == AB_ESEQ); /* nothing in flight */
  check_identity(l);

  /* warm-up round trips count apart, with no RTT sample */
  l->phase = AB__PH_WARMUP;
  l->warm_deadline_ns = 5000;
  CHECK_EQ_U64(issue(c, 2000), 4);
  CHECK(ab__win_complete(c, AB_PHASE_WARMUP, 1, 4, 2100) == AB__WIN_FREED);
  CHECK_EQ_U64(l->warmup_completed, 1);
  CHECK_EQ_U64(l->warm_inflight, 3);
  CHECK_EQ_U64(l->iv[0].rtt.count, 4);

  /* exact timeouts: a reply is late when it comes more than `timeout` after
   * its send, whatever the sweep did; it stays in flight for the release */
  CHECK(ab__win_complete(c, AB_PHASE_WARMUP, 1, 5, 2000 + TIMEOUT) == AB__WIN_FREED);
  CHECK(ab__win_complete(c, AB_PHASE_WARMUP, 1, 6, 2001 + TIMEOUT) == AB_ETIMEDOUT);
  CHECK_EQ_U64(c->win.inflight, 2);
  CHECK_EQ_U64(l->warmup_completed, 2);
  loop_free(l);

  /* a measure reply after the timeout is never a completion */
  l = loop_new(1, 1, AB__WIN_ORDERED);
  c = ab__loop_client(l, 0);
  CHECK_EQ_U64(issue(c, 10), 1);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 0, 11 + TIMEOUT) == AB_ETIMEDOUT);
  CHECK_EQ_U64(l->completed, 0);
  CHECK_EQ_U64(l->iv[0].rtt.count, 0);
  ab__win_release(c, &l->timed_out);
  CHECK_EQ_U64(l->timed_out, 1);
  check_identity(l);
  loop_free(l);
}

/* Late replies on a stream (issue 10): a measure reply later than the
 * timeout is counted late, never completed and never an RTT sample, and
 * stays in flight until its connection is released, where it and the
 * messages behind it count as timed out; at exactly the timeout it still
 * completes.  Warm-up replies are never late.  The identity holds. */
static void test_late_stream(void) {
  ab__loop_t *l = loop_new(1, 4, AB__WIN_ORDERED);
  ab__client_t *c = ab__loop_client(l, 0);
  CHECK_EQ_U64(issue(c, 100), 4); /* seq 0..3 sent at 100 */
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 0, 100 + TIMEOUT) == AB__WIN_MEASURED);
  CHECK_EQ_U64(l->late, 0);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 1, 101 + TIMEOUT) == AB_ETIMEDOUT);
  CHECK_EQ_U64(l->late, 1);
  CHECK_EQ_U64(l->completed, 1);
  CHECK_EQ_U64(l->iv[0].rtt.count, 1);
  CHECK_EQ_U64(l->iv[0].completed, 1);
  CHECK_EQ_U64(c->win.inflight, 3);
  /* the connection is dropped: the late one and the two behind it */
  ab__win_release(c, &l->timed_out);
  CHECK_EQ_U64(l->timed_out, 3);
  CHECK_EQ_U64(l->iv[0].timed_out, 3);
  CHECK_EQ_U64(l->late, 1);
  check_identity(l);
  /* the reopened connection goes on from the next sequence */
  CHECK_EQ_U64(issue(c, 2 * TIMEOUT), 4);
  CHECK_EQ_U64(c->win.oldest_seq, 4);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 4, 2 * TIMEOUT + 10) == AB__WIN_MEASURED);
  /* the sweep finds the oldest overdue strictly after its timeout */
  CHECK_EQ_U64(ab__win_next_expiry(c), 3 * TIMEOUT + 1);
  CHECK_EQ_U64(ab__win_sweep(c, 3 * TIMEOUT), 0);
  CHECK(ab__win_sweep(c, 3 * TIMEOUT + 1) == AB_ETIMEDOUT);
  ab__win_release(c, &l->timed_out);
  CHECK_EQ_U64(l->timed_out, 6);
  CHECK_EQ_U64(l->late, 1); /* swept, not late: no reply came */
  check_identity(l);
  /* a late warm-up reply is not counted late */
  l->phase = AB__PH_WARMUP;
  l->warm_deadline_ns = UINT64_MAX;
  CHECK_EQ_U64(issue(c, 10 * TIMEOUT), 4);
  CHECK(ab__win_complete(c, AB_PHASE_WARMUP, 0, 8, 12 * TIMEOUT) == AB_ETIMEDOUT);
  CHECK_EQ_U64(l->late, 1);
  ab__win_release(c, &l->timed_out);
  CHECK_EQ_U64(l->timed_out, 6);
  CHECK_EQ_U64(l->warm_inflight, 0);
  check_identity(l);
  loop_free(l);
}

/* A reply with a status and a verdict (ab__win_complete_coded): counted by
 * code in the measure phase; one outside the success set is a completion
 * all the same (with its RTT), counted in non_success, the interval's
 * errors and the errors of its class; the successful ones completed in
 * time also go to rtt_ok.  The connection's order goes on. */
static void test_coded(void) {
  ab__loop_t *l = loop_new(1, 4, AB__WIN_ORDERED);
  ab__client_t *c = ab__loop_client(l, 0);
  CHECK(ab__win_complete_coded(c, 5, 200, 0) == AB_ESEQ); /* nothing in flight */
  CHECK_EQ_U64(l->reply_codes[200], 0);
  CHECK_EQ_U64(issue(c, 1000), 4);
  CHECK(ab__win_complete_coded(c, 1100, 200, 0) == AB__WIN_MEASURED);
  CHECK(ab__win_complete_coded(c, 1200, 404, AB_ERR_HTTP(404)) == AB__WIN_MEASURED);
  CHECK_EQ_U64(c->win.oldest_seq, 2);
  CHECK_EQ_U64(c->win.inflight, 2);
  CHECK_EQ_U64(l->completed, 2);
  CHECK_EQ_U64(l->message_errors, 0);
  CHECK_EQ_U64(l->non_success, 1);
  CHECK_EQ_U64(l->iv[0].errors, 1);
  CHECK_EQ_U64(l->iv[0].rtt.count, 2); /* a refused reply is an RTT sample too */
  CHECK_EQ_U64(l->rtt_ok.count, 1);    /* ... but not a successful one */
  CHECK_EQ_U64(l->rtt_ok.max, 100);
  CHECK_EQ_U64(l->status_failures, 1);
  CHECK(l->nerrors == 1 && l->errors[0].code == AB_ERR_HTTP(404) && l->errors[0].count == 1);
  CHECK_EQ_U64(l->reply_codes[200], 1);
  CHECK_EQ_U64(l->reply_codes[404], 1);
  /* later than the timeout: nothing counted, it stays for the release */
  CHECK(ab__win_complete_coded(c, 1000 + TIMEOUT + 1, 404, AB_ERR_HTTP(404)) == AB_ETIMEDOUT);
  CHECK_EQ_U64(l->reply_codes[404], 1);
  CHECK_EQ_U64(l->late, 1);
  CHECK_EQ_U64(l->non_success, 1);
  /* the slots freed are issued again, in order */
  CHECK_EQ_U64(issue(c, 2000), 2);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 2, 2100) == AB__WIN_MEASURED);
  /* after the deadline a refused reply is drained, still non_success; a
   * successful one is drained and not in rtt_ok (its count is the
   * successful completions) */
  l->deadline_ns = 2200;
  CHECK(ab__win_complete_coded(c, 2300, 500, AB_ERR_HTTP(500)) == AB__WIN_FREED);
  CHECK_EQ_U64(l->non_success, 2);
  CHECK_EQ_U64(l->drained, 1);
  CHECK_EQ_U64(l->reply_codes[500], 1);
  CHECK(l->nerrors == 2 && l->errors[1].code == AB_ERR_HTTP(500));
  CHECK(ab__win_complete_coded(c, 2400, 200, 0) == AB__WIN_FREED);
  CHECK_EQ_U64(l->drained, 2);
  CHECK_EQ_U64(l->rtt_ok.count, 1);
  CHECK_EQ_U64(l->message_errors, 0);
  check_identity(l);
  /* warm-up replies free their slots and are counted nowhere */
  l->phase = AB__PH_WARMUP;
  l->warm_deadline_ns = 9000;
  ab__win_release(c, &l->unfinished);
  CHECK_EQ_U64(issue(c, 3000), 4);
  CHECK(ab__win_complete_coded(c, 3100, 503, AB_ERR_HTTP(503)) == AB__WIN_FREED);
  CHECK(ab__win_complete_coded(c, 3100, 200, 0) == AB__WIN_FREED);
  CHECK_EQ_U64(l->reply_codes[503], 0);
  CHECK(l->nerrors == 2); /* a warm-up refusal is no error of the run */
  CHECK_EQ_U64(l->reply_codes[200], 2);
  CHECK_EQ_U64(l->non_success, 2);
  CHECK_EQ_U64(l->warmup_completed, 2);
  CHECK_EQ_U64(l->warm_inflight, 2);
  check_identity(l);
  loop_free(l);
}

static void test_release(void) {
  ab__loop_t *l = loop_new(1, 4, AB__WIN_ORDERED);
  ab__client_t *c = ab__loop_client(l, 0);
  l->phase = AB__PH_WARMUP;
  ab__win_grant_t g;
  CHECK_EQ_U64(ab__win_grant(c, 10, &g), 4);
  CHECK_EQ_U64(ab__win_stamp(c, &g, 2, 10), 2);
  l->phase = AB__PH_MEASURE;
  CHECK_EQ_U64(issue(c, 20), 2);
  CHECK(ab__win_complete(c, AB_PHASE_WARMUP, 0, 0, 30) == AB__WIN_FREED);
  CHECK_EQ_U64(c->win.inflight, 3);
  /* one warm-up and two measure messages given up: two counted */
  ab__win_release(c, &l->message_errors);
  CHECK_EQ_U64(l->message_errors, 2);
  CHECK_EQ_U64(l->timed_out, 0);
  CHECK_EQ_U64(c->win.inflight, 0);
  CHECK_EQ_U64(l->meas_inflight, 0);
  CHECK_EQ_U64(l->warm_inflight, 0);
  CHECK_EQ_U64(c->win.oldest_seq, c->win.next_seq);
  for (uint32_t i = 0; i < 4; i++) CHECK_EQ_U64(c->win.ns[i], 0);
  check_identity(l);
  /* the window is usable again, in order from the next sequence */
  CHECK_EQ_U64(issue(c, 40), 4);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 4, 50) == AB__WIN_MEASURED);
  ab__win_release(c, &l->timed_out);
  CHECK_EQ_U64(l->timed_out, 3);
  check_identity(l);
  loop_free(l);
}

/* requests_per_connection: a connection's quota (win.conn_end) bounds what
 * the window grants, and the connection is spent once all of it is
 * answered; a new connection (the quota moved on) issues again from the
 * next sequence. */
static void test_quota(void) {
  ab__loop_t *l = loop_new(1, 4, AB__WIN_ORDERED);
  ab__client_t *c = ab__loop_client(l, 0);
  ab__win_grant_t g;
  /* no quota: never spent, the whole window */
  CHECK_EQ_U64(c->win.conn_end, UINT64_MAX);
  CHECK(!ab__win_spent(c));
  CHECK_EQ_U64(issue(c, 10), 4);
  for (uint64_t s = 0; s < 4; s++)
    CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, s, 20) == AB__WIN_MEASURED);
  CHECK(!ab__win_spent(c));
  /* a connection up with K = 3 left: 3 of the window of 4 */
  c->win.conn_end = c->win.next_seq + 3;
  CHECK_EQ_U64(ab__win_grant(c, 30, &g), 3);
  CHECK_EQ_U64(ab__win_stamp(c, &g, 2, 30), 2);
  CHECK_EQ_U64(ab__win_grant(c, 30, &g), 1);
  CHECK_EQ_U64(ab__win_stamp(c, &g, 1, 30), 1);
  CHECK_EQ_U64(ab__win_grant(c, 30, &g), 0); /* quota used, slot free */
  CHECK(!ab__win_spent(c)); /* replies still due */
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 4, 40) == AB__WIN_MEASURED);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 5, 40) == AB__WIN_MEASURED);
  CHECK(!ab__win_spent(c));
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 6, 40) == AB__WIN_MEASURED);
  CHECK(ab__win_spent(c));
  CHECK_EQ_U64(ab__win_grant(c, 50, &g), 0);
  /* its replacement: K = 1, one message, from the next sequence */
  c->win.conn_end = c->win.next_seq + 1;
  CHECK(!ab__win_spent(c));
  CHECK_EQ_U64(ab__win_grant(c, 60, &g), 1);
  CHECK_EQ_U64(g.seq, 7);
  CHECK_EQ_U64(ab__win_stamp(c, &g, 1, 60), 1);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 7, 70) == AB__WIN_MEASURED);
  CHECK(ab__win_spent(c));
  CHECK_EQ_U64(l->sent, 8);
  CHECK_EQ_U64(l->completed, 8);
  check_identity(l);
  loop_free(l);
}

static void test_sweep_ordered(void) {
  ab__loop_t *l = loop_new(1, 4, AB__WIN_ORDERED);
  ab__client_t *c = ab__loop_client(l, 0);
  CHECK_EQ_U64(ab__win_sweep(c, 5 * TIMEOUT), 0); /* nothing in flight */
  CHECK_EQ_U64(issue(c, 1000), 4);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 0, 1100) == AB__WIN_MEASURED);
  /* the oldest in flight (seq 1, sent at 1000) decides */
  CHECK_EQ_U64(ab__win_next_expiry(c), 1001 + TIMEOUT);
  CHECK_EQ_U64(ab__win_sweep(c, 1000 + TIMEOUT), 0);
  CHECK(ab__win_sweep(c, 1001 + TIMEOUT) == AB_ETIMEDOUT);
  /* the sweep only reports; the caller fails the connection */
  CHECK_EQ_U64(c->win.inflight, 3);
  ab__win_release(c, &l->timed_out);
  CHECK_EQ_U64(l->timed_out, 3);
  CHECK_EQ_U64(ab__win_sweep(c, 10 * TIMEOUT), 0);
  check_identity(l);
  loop_free(l);
}

static void test_finish(void) {
  ab__loop_t *l = loop_new(3, 4, AB__WIN_ORDERED);
  CHECK_EQ_U64(issue(ab__loop_client(l, 0), 10), 4);
  CHECK_EQ_U64(issue(ab__loop_client(l, 2), 10), 4);
  CHECK(ab__win_complete(ab__loop_client(l, 2), AB_PHASE_MEASURE, 2, 0, 20) == AB__WIN_MEASURED);
  l->phase = AB__PH_DRAIN;
  ab__win_finish(l);
  CHECK_EQ_U64(l->unfinished, 7);
  CHECK_EQ_U64(l->meas_inflight, 0);
  for (uint32_t i = 0; i < 3; i++) CHECK_EQ_U64(ab__loop_client(l, i)->win.inflight, 0);
  check_identity(l);
  CHECK_EQ_U64(l->sent, 8);
  loop_free(l);
}

/* shared:N: a message stamped on one loop and completed on another leaves
 * each loop's in-flight count off (they add up only together); the forced
 * end counts what a home loop's clients still have in flight into that
 * loop, wherever they last ran, so the merged identity holds. */
static void test_finish_shared(void) {
  test_eng.shared = 1;
  ab__loop_t *a = loop_new(2, 4, AB__WIN_ORDERED);
  ab__loop_t *b = loop_new(1, 4, AB__WIN_ORDERED);
  ab__client_t *c0 = ab__loop_client(a, 0), *c1 = ab__loop_client(a, 1);
  CHECK_EQ_U64(issue(c0, 10), 4); /* stamped on a */
  c0->loop = b;                   /* its replies run on b */
  CHECK(ab__win_complete(c0, AB_PHASE_MEASURE, 0, 0, 20) == AB__WIN_MEASURED);
  c1->loop = b;                   /* c1 stamps on b */
  CHECK_EQ_U64(issue(c1, 10), 4);
  a->phase = b->phase = AB__PH_DRAIN;
  ab__win_finish(a);
  CHECK(c0->loop == a && c1->loop == a); /* taken by a to be finished */
  CHECK_EQ_U64(a->unfinished + b->unfinished, 7);
  CHECK_EQ_U64(a->sent + b->sent, 8);
  CHECK_EQ_U64(a->completed + b->completed, 1);
  CHECK_EQ_U64(a->meas_inflight + b->meas_inflight, 0);
  test_eng.shared = 0;
  loop_free(a);
  loop_free(b);
}

int main(void) {
  test_late_stream();
  test_coded();
  test_stamping();
  test_phase_gate();
  test_ordered();
  test_release();
  test_quota();
  test_sweep_ordered();
  test_finish();
  test_finish_shared();
  TEST_DONE();
}
