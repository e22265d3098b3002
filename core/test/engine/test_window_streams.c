/* test_window_streams.c -- the window over multiplexed streams
 * (AB__WIN_STREAMS, engine/window.h: HTTP/2): replies complete once each in
 * any order, matched by the message their stream carried; a failed stream
 * is a message error of its class; a response is a completion whatever
 * its status, counted per code (non_success outside the success set); a reply
 * later than the timeout is late and fails the connection (the sweep
 * says so too); a release gives up every stream in flight; a stream the
 * peer never processed is taken back as never sent.  The fixture
 * is window_fixture.h. */
#include "proto/framing.h"
#include "test/engine/window_fixture.h"

static void test_out_of_order(void) {
  ab__loop_t *l = loop_new(1, 4, AB__WIN_STREAMS);
  ab__client_t *c = ab__loop_client(l, 0);
  ab__win_grant_t g;
  CHECK_EQ_U64(issue(c, 1000), 4); /* seq 0..3 */
  /* the youngest first, then the others in any order */
  CHECK(ab__win_complete_stream(c, AB_PHASE_MEASURE, 0, 3, 1100, 0, 0, 0, NULL) == AB__WIN_MEASURED);
  CHECK(ab__win_complete_stream(c, AB_PHASE_MEASURE, 0, 1, 1200, 0, 0, 0, NULL) == AB__WIN_MEASURED);
  /* the same one again, never sent, another connection's: AB_ESEQ */
  CHECK(ab__win_complete_stream(c, AB_PHASE_MEASURE, 0, 3, 1300, 0, 0, 0, NULL) == AB_ESEQ);
  CHECK(ab__win_complete_stream(c, AB_PHASE_MEASURE, 0, 9, 1300, 0, 0, 0, NULL) == AB_ESEQ);
  CHECK(ab__win_complete_stream(c, AB_PHASE_MEASURE, 7, 0, 1300, 0, 0, 0, NULL) == AB_ESEQ);
  CHECK_EQ_U64(l->completed, 2);
  CHECK_EQ_U64(l->reordered, 0); /* a stream's order is no fault */
  /* every message timed from its own send */
  CHECK_EQ_U64(l->iv[0].rtt.count, 2);
  CHECK_EQ_U64(l->iv[0].rtt.min, 100);
  CHECK_EQ_U64(l->iv[0].rtt.max, 200);
  /* freed slots take new messages while 0 and 2 are still out */
  CHECK_EQ_U64(ab__win_grant(c, 1300, &g), 2);
  CHECK_EQ_U64(g.seq, 4);
  CHECK_EQ_U64(ab__win_stamp(c, &g, 2, 1300), 2);
  /* a stream reset: a message error of its class, the slot freed */
  CHECK(ab__win_complete_stream(c, AB_PHASE_MEASURE, 0, 2, 1400, 0, AB_EPROTO, 0, "reset") == AB__WIN_FREED);
  CHECK_EQ_U64(l->message_errors, 1);
  CHECK_EQ_U64(l->status_failures, 0);
  /* a status outside the success set: a completion with its latency,
   * counted per code, in non_success and as a status failure, not a
   * message error (docs/run-object.md: non_success) */
  CHECK(ab__win_complete_stream(c, AB_PHASE_MEASURE, 0, 4, 1500, 404, AB_ERR_HTTP(404), 1,
                                "404") == AB__WIN_MEASURED);
  CHECK_EQ_U64(l->reply_codes[404], 1);
  CHECK_EQ_U64(l->status_failures, 1);
  CHECK_EQ_U64(l->non_success, 1);
  CHECK_EQ_U64(l->message_errors, 1);
  CHECK_EQ_U64(l->completed, 3);
  CHECK_EQ_U64(l->rtt_ok.count, 0);
  /* a success in request mode: its RTT in rtt_ok too */
  CHECK_EQ_U64(ab__win_grant(c, 1500, &g), 2);
  CHECK_EQ_U64(ab__win_stamp(c, &g, 2, 1500), 2); /* seq 6, 7 */
  CHECK(ab__win_complete_stream(c, AB_PHASE_MEASURE, 0, 6, 1550, 200, 0, 0, NULL) == AB__WIN_MEASURED);
  CHECK_EQ_U64(l->reply_codes[200], 1);
  CHECK_EQ_U64(l->rtt_ok.count, 1);
  CHECK_EQ_U64(l->non_success, 1);
  CHECK(ab__win_complete_stream(c, AB_PHASE_MEASURE, 0, 7, 1560, 200, 0, 0, NULL) == AB__WIN_MEASURED);
  CHECK_EQ_U64(l->rtt_ok.count, 2);
  /* the echo's bytes name the message: the right one completes, another's is AB_ESEQ */
  uint8_t msg[64];
  ab_msg_fill(msg, sizeof(msg), AB_PHASE_MEASURE, 0, 5);
  CHECK(ab__win_reply_stream(c, msg, sizeof(msg), 0, 1600) == AB_ESEQ);
  CHECK(ab__win_reply_stream(c, msg, sizeof(msg), 5, 1600) == 0 + AB__WIN_MEASURED);
  msg[40] ^= 1;
  CHECK(ab__win_reply_stream(c, msg, sizeof(msg), 0, 1600) == AB_EPAYLOAD);
  /* a reply later than the timeout: late, left in flight, the connection fails */
  CHECK(ab__win_complete_stream(c, AB_PHASE_MEASURE, 0, 0, 1001 + TIMEOUT, 0, 0, 0, NULL) == AB_ETIMEDOUT);
  CHECK_EQ_U64(l->late, 1);
  CHECK_EQ_U64(ab__win_sweep(c, 1001 + TIMEOUT), AB_ETIMEDOUT);
  CHECK_EQ_U64(ab__win_next_expiry(c), 1001 + TIMEOUT);
  /* released: every stream in flight given up */
  CHECK_EQ_U64(c->win.inflight, 1);
  ab__win_release(c, &l->timed_out);
  CHECK_EQ_U64(c->win.inflight, 0);
  CHECK_EQ_U64(l->timed_out, 1);
  check_identity(l);
  loop_free(l);
}

/* A stream the peer never processed (above an orderly GOAWAY's last
 * stream id): taken back as never sent -- sent and the interval's sent
 * less one, no error, the slot free for the next message. */
static void test_unsend(void) {
  ab__loop_t *l = loop_new(1, 4, AB__WIN_STREAMS);
  ab__client_t *c = ab__loop_client(l, 0);
  ab__win_grant_t g;
  CHECK_EQ_U64(issue(c, 1000), 4); /* seq 0..3 */
  CHECK_EQ_U64(l->sent, 4);
  CHECK(ab__win_complete_stream(c, AB_PHASE_MEASURE, 0, 0, 1100, 0, 0, 0, NULL) == AB__WIN_MEASURED);
  CHECK(ab__win_unsend_stream(c, 2, 1200) == AB__WIN_FREED);
  CHECK(ab__win_unsend_stream(c, 3, 1200) == AB__WIN_FREED);
  CHECK(ab__win_unsend_stream(c, 3, 1200) == AB_ESEQ); /* not in flight any more */
  CHECK(ab__win_unsend_stream(c, 9, 1200) == AB_ESEQ);
  CHECK_EQ_U64(l->sent, 2);
  CHECK_EQ_U64(l->iv[0].sent, 2);
  CHECK_EQ_U64(l->message_errors, 0);
  CHECK_EQ_U64(l->nerrors, 0);
  CHECK_EQ_U64(l->meas_inflight, 1);
  CHECK_EQ_U64(c->win.inflight, 1);
  /* their slots take the next messages */
  CHECK_EQ_U64(ab__win_grant(c, 1300, &g), 3);
  CHECK_EQ_U64(ab__win_stamp(c, &g, 3, 1300), 3);
  CHECK_EQ_U64(l->sent, 5);
  ab__win_release(c, &l->unfinished);
  check_identity(l);
  loop_free(l);
}

int main(void) {
  test_out_of_order();
  test_unsend();
  TEST_DONE();
}
