/* test_window.c -- the window (engine/window.h) on its own: no sockets, no
 * loop threads.  A loop and its clients are plain structs here; phases,
 * deadlines and clock readings are set by hand, so each rule is checked
 * at its exact boundary: stamping, the phase gate, ordered and datagram
 * completion, release, the timeout sweep and the forced finish. */
#include <stdio.h>

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

static void test_datagram(void) {
  ab__loop_t *l = loop_new(1, 4, AB__WIN_DATAGRAM);
  ab__client_t *c = ab__loop_client(l, 0);
  ab__win_grant_t g;
  CHECK_EQ_U64(issue(c, 1000), 4); /* seq 0..3 */
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 2, 1100) == AB__WIN_MEASURED);
  CHECK_EQ_U64(l->reordered, 0);
  /* below the highest answered: reordered, and still a completion */
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 1, 1200) == AB__WIN_MEASURED);
  CHECK_EQ_U64(l->reordered, 1);
  CHECK_EQ_U64(l->completed, 2);
  CHECK_EQ_U64(l->iv[0].rtt.count, 2);
  /* a second reply: duplicated, nothing freed, no sample */
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 2, 1300) == AB__WIN_NONE);
  CHECK_EQ_U64(l->duplicated, 1);
  CHECK_EQ_U64(l->completed, 2);
  CHECK_EQ_U64(l->iv[0].rtt.count, 2);
  /* never sent, or another connection's: AB_ESEQ */
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 9, 1300) == AB_ESEQ);
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 5, 0, 1300) == AB_ESEQ);
  /* any free slot takes a new message: seq 4 does not wait for seq 0's */
  CHECK_EQ_U64(c->win.inflight, 2);
  CHECK_EQ_U64(ab__win_grant(c, 1300, &g), 2);
  CHECK_EQ_U64(g.seq, 4);
  /* the sweep frees only what is older than the timeout */
  CHECK_EQ_U64(ab__win_sweep(c, 1000 + TIMEOUT), 0);
  CHECK_EQ_U64(ab__win_next_expiry(c), 1001 + TIMEOUT);
  CHECK_EQ_U64(ab__win_sweep(c, 1001 + TIMEOUT), 2);
  CHECK_EQ_U64(l->timed_out, 2);
  CHECK_EQ_U64(c->win.inflight, 0);
  CHECK_EQ_U64(ab__win_next_expiry(c), UINT64_MAX);
  /* its reply after that: late, never a completion */
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 0, 1002 + TIMEOUT) == AB__WIN_NONE);
  CHECK_EQ_U64(l->late, 1);
  CHECK_EQ_U64(l->completed, 2);
  check_identity(l);

  /* the window moves on: seq 4..7, sent at different times */
  uint64_t t0 = 2 * TIMEOUT;
  CHECK_EQ_U64(ab__win_grant(c, t0, &g), 4);
  CHECK_EQ_U64(g.seq, 4);
  CHECK_EQ_U64(ab__win_stamp(c, &g, 1, t0), 1);
  CHECK_EQ_U64(ab__win_stamp(c, &g, 3, t0 + 500), 3);
  /* a reply later than the timeout that the sweep has not seen yet: timed
   * out at once (and late), its slot freed */
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 4, t0 + TIMEOUT + 1) == AB__WIN_FREED);
  CHECK_EQ_U64(l->timed_out, 3);
  CHECK_EQ_U64(l->late, 2);
  CHECK_EQ_U64(l->completed, 2);
  /* one message older than the timeout, three not: one freed */
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 5, t0 + 600) == AB__WIN_MEASURED);
  CHECK_EQ_U64(ab__win_next_expiry(c), t0 + 500 + TIMEOUT + 1);
  CHECK_EQ_U64(ab__win_sweep(c, t0 + 500 + TIMEOUT), 0);
  CHECK_EQ_U64(ab__win_sweep(c, t0 + 501 + TIMEOUT), 2);
  CHECK_EQ_U64(l->timed_out, 5);
  check_identity(l);
  /* warm-up datagrams time out without counting as timed_out */
  l->phase = AB__PH_WARMUP;
  l->warm_deadline_ns = UINT64_MAX;
  CHECK_EQ_U64(issue(c, 10 * TIMEOUT), 4);
  CHECK_EQ_U64(ab__win_sweep(c, 12 * TIMEOUT), 4);
  CHECK_EQ_U64(l->timed_out, 5);
  CHECK_EQ_U64(l->warm_inflight, 0);
  loop_free(l);
}

/* The slot that holds datagram message seq (the window matches replies by
 * sequence; any slot may hold any message). */
static uint32_t slot_of(const ab__client_t *c, uint64_t seq) {
  uint32_t s = ab__dg_find(&c->win, seq);
  CHECK(s != AB__DG_NIL);
  return s;
}

/* A datagram window is a set of in-flight sequences: a message that gets
 * no reply holds one slot, and the others keep turning over (issue 10:
 * with slot = seq mod window the window stalled behind it until its
 * timeout). */
static void test_datagram_any_slot(void) {
  ab__loop_t *l = loop_new(1, 4, AB__WIN_DATAGRAM);
  ab__client_t *c = ab__loop_client(l, 0);
  ab__win_grant_t g;
  CHECK_EQ_U64(issue(c, 1000), 4); /* seq 0..3 */
  uint32_t s1 = slot_of(c, 1), s2 = slot_of(c, 2);
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 1, 1100) == AB__WIN_MEASURED);
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 2, 1100) == AB__WIN_MEASURED);
  /* seq 4 and 5 take the two freed slots, whatever their sequences */
  CHECK_EQ_U64(ab__win_grant(c, 1200, &g), 2);
  CHECK_EQ_U64(g.seq, 4);
  CHECK_EQ_U64(ab__win_stamp(c, &g, 2, 1200), 2);
  uint32_t s4 = slot_of(c, 4), s5 = slot_of(c, 5);
  CHECK(s4 != s5);
  CHECK((s4 == s1 || s4 == s2) && (s5 == s1 || s5 == s2));
  CHECK_EQ_U64(c->win.ns[s4], 1200);
  CHECK_EQ_U64(ab__win_grant(c, 1200, &g), 0); /* full */
  /* seq 0 gets no reply: 100 rounds of three go round it, none waits */
  uint64_t t = 1300, next = 6;
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 3, t) == AB__WIN_MEASURED);
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 4, t) == AB__WIN_MEASURED);
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 5, t) == AB__WIN_MEASURED);
  for (int round = 0; round < 100; round++) {
    t += 10;
    CHECK_EQ_U64(issue(c, t), 3);
    CHECK_EQ_U64(c->win.inflight, 4);
    for (uint64_t k = next; k < next + 3; k++)
      CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, k, t + 5) == AB__WIN_MEASURED);
    next += 3;
  }
  CHECK_EQ_U64(l->completed, 5 + 300);
  CHECK_EQ_U64(l->timed_out, 0);
  CHECK_EQ_U64(slot_of(c, 0), slot_of(c, 0)); /* still in flight */
  CHECK_EQ_U64(c->win.inflight, 1);
  check_identity(l);
  loop_free(l);
}

/* A timeout frees its slot at once, to the nanosecond the sweep runs, and
 * only the oldest stamps are read; replies to a sequence whose slot went to
 * another message are told apart by sequence: late (timed out) or
 * duplicated (completed), never a completion of the slot's new message. */
static void test_datagram_timeout_reuse(void) {
  ab__loop_t *l = loop_new(1, 4, AB__WIN_DATAGRAM);
  ab__client_t *c = ab__loop_client(l, 0);
  ab__win_grant_t g;
  CHECK_EQ_U64(ab__win_grant(c, 1000, &g), 4);
  CHECK_EQ_U64(ab__win_stamp(c, &g, 1, 1000), 1); /* seq 0 at 1000 */
  CHECK_EQ_U64(ab__win_stamp(c, &g, 3, 2000), 3); /* seq 1..3 at 2000 */
  uint32_t s0 = slot_of(c, 0), s1 = slot_of(c, 1);
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 1, 2100) == AB__WIN_MEASURED);
  /* seq 4 takes seq 1's slot */
  CHECK_EQ_U64(issue(c, 2200), 1);
  CHECK_EQ_U64(slot_of(c, 4), s1);
  /* a second reply to seq 1: duplicated; seq 4 stays in flight */
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 1, 2300) == AB__WIN_NONE);
  CHECK_EQ_U64(l->duplicated, 1);
  CHECK_EQ_U64(l->completed, 1);
  CHECK_EQ_U64(c->win.inflight, 4);
  CHECK_EQ_U64(c->win.seq[s1], 4);
  /* seq 0 becomes overdue first: the sweep frees it alone */
  CHECK_EQ_U64(ab__win_next_expiry(c), 1001 + TIMEOUT);
  CHECK_EQ_U64(ab__win_sweep(c, 1000 + TIMEOUT), 0);
  CHECK_EQ_U64(ab__win_sweep(c, 1001 + TIMEOUT), 1);
  CHECK_EQ_U64(l->timed_out, 1);
  CHECK_EQ_U64(c->win.inflight, 3);
  CHECK(ab__dg_find(&c->win, 0) == AB__DG_NIL);
  CHECK_EQ_U64(ab__win_next_expiry(c), 2001 + TIMEOUT);
  /* its slot is free at once: seq 5 takes it */
  CHECK_EQ_U64(issue(c, 1002 + TIMEOUT), 1);
  CHECK_EQ_U64(slot_of(c, 5), s0);
  /* seq 0's reply now: late, not seq 5's completion */
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 0, 1003 + TIMEOUT) == AB__WIN_NONE);
  CHECK_EQ_U64(l->late, 1);
  CHECK_EQ_U64(l->duplicated, 1);
  CHECK_EQ_U64(c->win.seq[s0], 5);
  CHECK_EQ_U64(c->win.inflight, 4);
  /* seq 5's and seq 4's own replies complete them, with their own RTTs */
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 5, 1010 + TIMEOUT) == AB__WIN_MEASURED);
  CHECK_EQ_U64(l->iv[0].rtt.min, 8);
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 4, 1010 + TIMEOUT) == AB__WIN_MEASURED);
  CHECK_EQ_U64(l->completed, 3);
  CHECK_EQ_U64(l->late, 1);
  /* a reply to seq 4 came before seq 5's: seq 4 is below the highest */
  CHECK_EQ_U64(l->reordered, 1);
  check_identity(l);
  /* a message that times out long after the outcome ring wrapped does not
   * erase a younger completion's entry: that one's duplicate stays a
   * duplicate */
  uint32_t ring = c->win.out_n;
  uint64_t t = 2 * TIMEOUT, old = c->win.next_seq;
  CHECK_EQ_U64(c->win.inflight, 2); /* seq 2, 3 */
  CHECK_EQ_U64(ab__win_sweep(c, 2001 + TIMEOUT), 2);
  CHECK_EQ_U64(issue(c, t), 4);     /* old .. old + 3 */
  uint64_t k = old + 1;
  for (; k < old + 1 + ring; k++) {
    CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, k, t + 1) == AB__WIN_MEASURED);
    CHECK_EQ_U64(issue(c, t + 1), 1);
  }
  uint64_t young = old + ring; /* shares seq old's ring entry, completed */
  CHECK_EQ_U64(ab__win_sweep(c, t + TIMEOUT + 1), 1); /* seq old */
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, young, t + TIMEOUT + 2) ==
        AB__WIN_NONE);
  CHECK_EQ_U64(l->duplicated, 2);
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, old, t + TIMEOUT + 2) == AB__WIN_NONE);
  CHECK_EQ_U64(l->late, 2);
  check_identity(l);
  loop_free(l);
}

/* late, duplicated and reordered count the measure phase only, as sent and
 * timed_out do (issue 10: they counted warm-up datagrams too). */
static void test_datagram_phases(void) {
  ab__loop_t *l = loop_new(1, 4, AB__WIN_DATAGRAM);
  ab__client_t *c = ab__loop_client(l, 0);
  l->phase = AB__PH_WARMUP;
  l->warm_deadline_ns = UINT64_MAX;
  CHECK_EQ_U64(issue(c, 1000), 4); /* warm-up seq 0..3 */
  CHECK(ab__win_complete_datagram(c, AB_PHASE_WARMUP, 0, 1, 1100) == AB__WIN_FREED);
  /* reordered, then a duplicate; two time out, then one's late reply */
  CHECK(ab__win_complete_datagram(c, AB_PHASE_WARMUP, 0, 0, 1100) == AB__WIN_FREED);
  CHECK(ab__win_complete_datagram(c, AB_PHASE_WARMUP, 0, 1, 1200) == AB__WIN_NONE);
  CHECK_EQ_U64(ab__win_sweep(c, 1001 + TIMEOUT), 2);
  CHECK(ab__win_complete_datagram(c, AB_PHASE_WARMUP, 0, 2, 1002 + TIMEOUT) == AB__WIN_NONE);
  CHECK_EQ_U64(l->reordered + l->duplicated + l->late + l->timed_out, 0);
  CHECK_EQ_U64(l->warmup_completed, 2);
  CHECK_EQ_U64(c->win.inflight, 0);
  /* a warm-up reply later than the timeout, before any sweep: freed, not late */
  CHECK_EQ_U64(issue(c, 2 * TIMEOUT), 4); /* seq 4..7 */
  CHECK(ab__win_complete_datagram(c, AB_PHASE_WARMUP, 0, 4, 3 * TIMEOUT + 1) == AB__WIN_FREED);
  CHECK_EQ_U64(l->late, 0);
  CHECK_EQ_U64(ab__win_sweep(c, 4 * TIMEOUT), 3);
  /* the same events in the measure phase are counted */
  l->phase = AB__PH_MEASURE;
  l->deadline_ns = UINT64_MAX;
  CHECK_EQ_U64(issue(c, 5 * TIMEOUT), 4); /* seq 8..11 */
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 9, 5 * TIMEOUT + 1) == AB__WIN_MEASURED);
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 8, 5 * TIMEOUT + 1) == AB__WIN_MEASURED);
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 9, 5 * TIMEOUT + 2) == AB__WIN_NONE);
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 10, 6 * TIMEOUT + 1) == AB__WIN_FREED);
  CHECK_EQ_U64(ab__win_sweep(c, 6 * TIMEOUT + 1), 1);
  CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, 11, 6 * TIMEOUT + 2) == AB__WIN_NONE);
  CHECK_EQ_U64(l->reordered, 1);
  CHECK_EQ_U64(l->duplicated, 1);
  CHECK_EQ_U64(l->late, 2); /* seq 10 at completion, seq 11 after the sweep */
  CHECK_EQ_U64(l->timed_out, 2);
  check_identity(l);
  loop_free(l);
}

/* The longest run of taken buckets in c's seq -> slot map: what a lookup
 * or a deletion may have to scan. */
static uint32_t longest_run(const ab__client_t *c) {
  uint32_t n = c->win.map_mask + 1, best = 0, cur = 0;
  for (uint32_t i = 0; i < 2 * n; i++) {
    cur = c->win.map[i & c->win.map_mask] ? cur + 1 : 0;
    if (cur > best) best = cur;
  }
  return best < n ? best : n;
}

/* The map keeps its runs short for the consecutive sequences a window
 * holds (seq & mask would lay a full window out as one run, scanned by
 * every deletion), also with stragglers of a lost sequence in it. */
static void test_datagram_map_runs(void) {
  static const uint32_t windows[] = {1, 3, 64, 1000, 4096};
  for (size_t k = 0; k < sizeof(windows) / sizeof(windows[0]); k++) {
    uint32_t w = windows[k];
    ab__loop_t *l = loop_new(1, w, AB__WIN_DATAGRAM);
    ab__client_t *c = ab__loop_client(l, 0);
    CHECK(c->win.map_mask + 1 >= 2 * w);
    CHECK_EQ_U64(issue(c, 10), w);
    CHECK(longest_run(c) <= 8);
    /* turn the window over 20 times, every 50th message left in flight
     * until the end (a straggler) while the window has room for it */
    uint64_t t = 20, kept = 0;
    for (uint64_t seq = 0; seq < 20 * (uint64_t)w; seq++, t++) {
      if (seq % 50 == 49 && kept < w / 2) {
        kept++;
        continue;
      }
      CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, seq, t) == AB__WIN_MEASURED);
      CHECK_EQ_U64(issue(c, t), 1);
    }
    CHECK_EQ_U64(c->win.inflight, w);
    CHECK(longest_run(c) <= 12);
    check_identity(l);
    loop_free(l);
  }
}

/* The in-flight set against a plain model: window 64, replies in a
 * scrambled order, every 50th message never answered, the sweep freeing
 * those; every reply finds its own message, every slot holds one message,
 * the map holds exactly the messages in flight. */
static void test_datagram_model(void) {
  enum { W = 64, ROUNDS = 4000 };
  ab__loop_t *l = loop_new(1, W, AB__WIN_DATAGRAM);
  ab__client_t *c = ab__loop_client(l, 0);
  l->deadline_ns = UINT64_MAX;
  uint64_t pending[W]; /* answerable messages in flight, unordered */
  uint32_t npending = 0, lcg = 12345;
  uint64_t t = 1000, lost = 0, done = 0;
  for (int r = 0; r < ROUNDS; r++) {
    t += TIMEOUT / 10; /* a lost message holds its slot 10 rounds */
    /* the sweep frees what is older than the timeout: the unanswered
     * ones, and answerable ones left pending that long */
    uint64_t before = l->timed_out;
    CHECK_EQ_U64((uint64_t)ab__win_sweep(c, t), l->timed_out - before);
    for (uint32_t i = 0; i < npending;)
      if (ab__dg_find(&c->win, pending[i]) == AB__DG_NIL) pending[i] = pending[--npending];
      else i++;
    ab__win_grant_t g;
    uint32_t n = ab__win_grant(c, t, &g);
    CHECK_EQ_U64(n, W - c->win.inflight);
    for (uint32_t i = 0; i < n; i++) {
      uint64_t seq = g.seq;
      CHECK_EQ_U64(ab__win_stamp(c, &g, 1, t), 1);
      if (seq % 50 == 49) lost++;
      else pending[npending++] = seq;
    }
    /* answer a scrambled half of what is pending */
    uint32_t answer = npending / 2 + 1;
    for (uint32_t i = 0; i < answer && npending > 0; i++) {
      lcg = lcg * 1103515245u + 12345u;
      uint32_t j = (lcg >> 8) % npending;
      uint64_t seq = pending[j];
      pending[j] = pending[--npending];
      CHECK_EQ_U64(c->win.seq[slot_of(c, seq)], seq);
      CHECK(ab__win_complete_datagram(c, AB_PHASE_MEASURE, 0, seq, t) == AB__WIN_MEASURED);
      CHECK(ab__dg_find(&c->win, seq) == AB__DG_NIL);
      done++;
    }
    /* every slot in flight is in the map under its sequence, and the free
     * stack holds the rest */
    uint32_t held = 0;
    for (uint32_t s = 0; s < W; s++)
      if (c->win.ns[s] != 0) {
        held++;
        CHECK_EQ_U64(ab__dg_find(&c->win, c->win.seq[s]), s);
      }
    CHECK_EQ_U64(held, c->win.inflight);
    CHECK_EQ_U64(c->win.nfree, W - held);
  }
  CHECK_EQ_U64(l->completed, done);
  CHECK(l->timed_out + W >= lost);
  CHECK(l->sent > (uint64_t)ROUNDS * 20); /* ~30 a round, not ~3 */
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

/* The open-loop policy (docs/scenarios.md, rate): a grant holds only the messages whose
 * intended time has come, stamping records the intended time as the RTT
 * origin (the raw view and the send lag from the actual hand-off), and what
 * the schedule meant to send before the deadline and did not is unsent.
 * The grant reads the clock itself, so the schedule is set around the real
 * clock with margins of half a second. */
static void test_rate(void) {
  const uint64_t S = 1000000000u;
  ab__loop_t *l = loop_new_open(2, 4, AB__WIN_ORDERED, 1);
  ab__client_t *c0 = ab__loop_client(l, 0), *c1 = ab__loop_client(l, 1);
  /* 1 message/s over 2 connections: each every 2 s, the second 1 s later */
  ab__win_sched_init(&c0->win, 1.0, 0, 2);
  ab__win_sched_init(&c1->win, 1.0, 1, 2);
  uint64_t now = ab_now_ns();
  /* a schedule not begun yet grants nothing, even with free slots */
  ab__win_sched_start(&c0->win, now + 10 * S);
  ab__win_grant_t g;
  l->deadline_ns = now + 100 * S;
  CHECK_EQ_U64(ab__win_grant(c0, now, &g), 0);
  /* begun 4.5 s ago: c0's messages at 0, 2, 4 s are due, c1's at 1, 3 s */
  uint64_t t0 = now - 45 * S / 10;
  ab__win_sched_start(&c0->win, t0);
  ab__win_sched_start(&c1->win, t0);
  l->start_ns = t0;
  l->deadline_ns = t0 + 9 * S;
  CHECK_EQ_U64(ab__win_intended(&c1->win, 1), t0 + 3 * S);
  CHECK_EQ_U64(ab__win_grant(c0, now, &g), 3);
  CHECK_EQ_U64(ab__win_grant(c1, now, &g), 2);
  /* c0 sends two of its three now: their origins are the intended times */
  uint64_t t = ab_now_ns();
  CHECK_EQ_U64(ab__win_grant(c0, t, &g), 3);
  CHECK_EQ_U64(ab__win_stamp(c0, &g, 2, t), 2);
  CHECK_EQ_U64(c0->win.origin[ab__win_slot(l, 0)], t0);
  CHECK_EQ_U64(c0->win.origin[ab__win_slot(l, 1)], t0 + 2 * S);
  CHECK_EQ_U64(c0->win.ns[ab__win_slot(l, 1)], t);
  CHECK_EQ_U64(l->send_lag.count, 2);
  CHECK_EQ_U64(l->send_lag.max, t - t0);
  CHECK_EQ_U64(l->send_lag.min, t - t0 - 2 * S);
  CHECK_EQ_U64(l->iv_lag[0].count, 2);
  CHECK_EQ_U64(l->iv[0].sent, 2);
  /* the third is still due; none after it yet */
  CHECK_EQ_U64(ab__win_grant(c0, t, &g), 1);
  CHECK_EQ_U64(g.seq, 2);
  /* the first reply: corrected RTT from t0, raw from t */
  uint64_t done = t + 1000;
  CHECK(ab__win_complete(c0, AB_PHASE_MEASURE, 0, 0, done) == AB__WIN_MEASURED);
  CHECK_EQ_U64(l->iv[0].rtt.count, 1);
  CHECK_EQ_U64(l->iv[0].rtt.min, done - t0);
  CHECK_EQ_U64(l->rtt_raw.count, 1);
  CHECK_EQ_U64(l->rtt_raw.min, 1000);
  CHECK_EQ_U64(l->iv[0].completed, 1);
  /* unsent at the deadline (9 s): c0 meant 0, 2, 4, 6, 8 and sent 2; c1
   * meant 1, 3, 5, 7 and sent none */
  CHECK_EQ_U64(ab__win_unsent(&c0->win, l->deadline_ns), 3);
  CHECK_EQ_U64(ab__win_unsent(&c1->win, l->deadline_ns), 4);
  /* exactly at an intended time: that message is not before the deadline */
  CHECK_EQ_U64(ab__win_unsent(&c0->win, t0 + 8 * S), 2);
  CHECK_EQ_U64(ab__win_unsent(&c0->win, t0 + 8 * S + 1), 3);
  /* a closed-loop window has no schedule */
  ab__loop_t *cl = loop_new(1, 4, AB__WIN_ORDERED);
  CHECK(ab__loop_client(cl, 0)->win.origin == NULL);
  CHECK_EQ_U64(ab__win_unsent(&ab__loop_client(cl, 0)->win, DEADLINE), 0);
  CHECK_EQ_U64(issue(ab__loop_client(cl, 0), 10), 4);
  loop_free(cl);
  l->phase = AB__PH_DRAIN;
  ab__win_finish(l);
  check_identity(l);
  loop_free(l);
}

/* The time series: sends count in the interval of their stamp, replies in
 * that of their completion; the last interval also takes what comes after
 * the deadline (the drain); the intervals' histograms hold every RTT. */
static void test_intervals(void) {
  ab__loop_t *l = loop_new(1, 8, AB__WIN_ORDERED);
  ab__client_t *c = ab__loop_client(l, 0);
  free(l->iv);
  /* 3 intervals of 400 ns from start 1000, deadline 2000: [1000, 1400),
   * [1400, 1800), [1800, 2000] and the drain */
  l->iv_n = 3;
  l->iv = calloc(3, sizeof(ab__iv_t));
  for (int i = 0; i < 3; i++) ab_hist_init(&l->iv[i].rtt);
  l->start_ns = 1000;
  l->deadline_ns = 2000;
  l->iv_ns = 400;
  l->iv_i = 0;
  l->iv_end_ns = 1400;
  CHECK_EQ_U64(issue(c, 1100), 8);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 0, 1300) == AB__WIN_MEASURED);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 1, 1500) == AB__WIN_MEASURED);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 2, 1900) == AB__WIN_MEASURED);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 3, 2500) == AB__WIN_FREED); /* drained */
  CHECK_EQ_U64(l->iv_i, 2);
  CHECK_EQ_U64(l->iv_end_ns, UINT64_MAX);
  CHECK_EQ_U64(l->iv[0].sent, 8);
  CHECK_EQ_U64(l->iv[0].completed, 1);
  CHECK_EQ_U64(l->iv[1].completed, 1);
  CHECK_EQ_U64(l->iv[2].completed, 1);
  CHECK_EQ_U64(l->iv[0].rtt.count + l->iv[1].rtt.count + l->iv[2].rtt.count, 4);
  CHECK_EQ_U64(l->iv[2].rtt.max, 1400);
  /* errors and timeouts in the interval they are counted in */
  ab__win_release(c, &l->message_errors);
  CHECK_EQ_U64(l->iv[2].errors, 4);
  CHECK_EQ_U64(l->message_errors, 4);
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

/* The time series counts the connections that completed a measure reply
 * in each interval, each once. */
static void test_interval_connections(void) {
  ab__loop_t *l = loop_new(3, 4, AB__WIN_ORDERED);
  free(l->iv);
  l->iv_n = 2;
  l->iv = calloc(2, sizeof(ab__iv_t));
  for (int i = 0; i < 2; i++) ab_hist_init(&l->iv[i].rtt);
  l->start_ns = 1000;
  l->deadline_ns = 3000;
  l->iv_ns = 1000;
  l->iv_i = 0;
  l->iv_end_ns = 2000;
  ab__client_t *a = ab__loop_client(l, 0), *b = ab__loop_client(l, 1);
  CHECK_EQ_U64(issue(a, 1100), 4);
  CHECK_EQ_U64(issue(b, 1100), 4);
  CHECK(ab__win_complete(a, AB_PHASE_MEASURE, 0, 0, 1200) == AB__WIN_MEASURED);
  CHECK(ab__win_complete(a, AB_PHASE_MEASURE, 0, 1, 1300) == AB__WIN_MEASURED);
  CHECK(ab__win_complete(b, AB_PHASE_MEASURE, 1, 0, 1300) == AB__WIN_MEASURED);
  CHECK_EQ_U64(l->iv[0].connections, 2);
  CHECK(ab__win_complete(a, AB_PHASE_MEASURE, 0, 2, 2100) == AB__WIN_MEASURED);
  CHECK(ab__win_complete(a, AB_PHASE_MEASURE, 0, 3, 2200) == AB__WIN_MEASURED);
  CHECK_EQ_U64(l->iv[0].connections, 2);
  CHECK_EQ_U64(l->iv[1].connections, 1);
  ab__win_finish(l);
  check_identity(l);
  loop_free(l);
}

/* A reply with a status and a verdict (ab__win_complete_coded): counted by
 * code in the measure phase; a refused one frees its slot as a message
 * error of its class, the connection's order goes on. */
static void test_coded(void) {
  ab__loop_t *l = loop_new(1, 4, AB__WIN_ORDERED);
  ab__client_t *c = ab__loop_client(l, 0);
  CHECK(ab__win_complete_coded(c, 5, 200, 0) == AB_ESEQ); /* nothing in flight */
  CHECK_EQ_U64(l->reply_codes[200], 0);
  CHECK_EQ_U64(issue(c, 1000), 4);
  CHECK(ab__win_complete_coded(c, 1100, 200, 0) == AB__WIN_MEASURED);
  CHECK(ab__win_complete_coded(c, 1200, 404, AB_ERR_HTTP(404)) == AB__WIN_FREED);
  CHECK_EQ_U64(c->win.oldest_seq, 2);
  CHECK_EQ_U64(c->win.inflight, 2);
  CHECK_EQ_U64(l->completed, 1);
  CHECK_EQ_U64(l->message_errors, 1);
  CHECK_EQ_U64(l->iv[0].errors, 1);
  CHECK_EQ_U64(l->iv[0].rtt.count, 1); /* a refused reply is no RTT sample */
  CHECK_EQ_U64(l->status_failures, 1);
  CHECK(l->nerrors == 1 && l->errors[0].code == AB_ERR_HTTP(404) && l->errors[0].count == 1);
  CHECK_EQ_U64(l->reply_codes[200], 1);
  CHECK_EQ_U64(l->reply_codes[404], 1);
  /* later than the timeout: nothing counted, it stays for the release */
  CHECK(ab__win_complete_coded(c, 1000 + TIMEOUT + 1, 404, AB_ERR_HTTP(404)) == AB_ETIMEDOUT);
  CHECK_EQ_U64(l->reply_codes[404], 1);
  CHECK_EQ_U64(l->late, 1);
  CHECK_EQ_U64(l->message_errors, 1);
  /* the slots freed are issued again, in order */
  CHECK_EQ_U64(issue(c, 2000), 2);
  CHECK(ab__win_complete(c, AB_PHASE_MEASURE, 0, 2, 2100) == AB__WIN_MEASURED);
  /* after the deadline a refusal is still a message error */
  l->deadline_ns = 2200;
  CHECK(ab__win_complete_coded(c, 2300, 500, AB_ERR_HTTP(500)) == AB__WIN_FREED);
  CHECK_EQ_U64(l->message_errors, 2);
  CHECK_EQ_U64(l->reply_codes[500], 1);
  CHECK(l->nerrors == 2 && l->errors[1].code == AB_ERR_HTTP(500));
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
  CHECK_EQ_U64(l->reply_codes[200], 1);
  CHECK_EQ_U64(l->message_errors, 2);
  CHECK_EQ_U64(l->warmup_completed, 1);
  CHECK_EQ_U64(l->warm_inflight, 2);
  check_identity(l);
  loop_free(l);
}

/* A tagged case (engine/tags.h): each message's tag comes from the grant
 * (one for all, or one per message), or from the rotation by sequence;
 * stamping counts it sent in its phase, completion records its RTT and
 * whether it was in time; untagged messages touch no tag. */
static void test_tags(void) {
  ab__loop_t *l = loop_new(1, 4, AB__WIN_ORDERED);
  ab__client_t *c = ab__loop_client(l, 0);
  ab_tag_stats_t tags[AB_TAGS_MAX];
  ab_tags_init(tags);
  l->tags = tags;
  c->win.tag = calloc(4, 1);
  ab__win_grant_t g;
  /* warm-up: counted apart, no RTT */
  l->phase = AB__PH_WARMUP;
  CHECK_EQ_U64(ab__win_grant(c, 10, &g), 4);
  CHECK_EQ_U64(g.tag, 0);
  CHECK(g.tags == NULL);
  g.tag = 2;
  CHECK_EQ_U64(ab__win_stamp(c, &g, 1, 10), 1);
  CHECK(ab__win_complete_oldest(c, 20) == AB__WIN_FREED);
  CHECK_EQ_U64(tags[1].warmup_sent, 1);
  CHECK_EQ_U64(tags[1].sent, 0);
  CHECK_EQ_U64(tags[1].rtt.count, 0);
  /* measure: per-message tags, stamped in two parts */
  l->phase = AB__PH_MEASURE;
  static const uint8_t per[4] = {1, 2, 0, 1};
  CHECK_EQ_U64(ab__win_grant(c, 100, &g), 4);
  g.tags = per;
  CHECK_EQ_U64(ab__win_stamp(c, &g, 2, 100), 2);
  CHECK_EQ_U64(ab__win_stamp(c, &g, 2, 110), 2);
  CHECK_EQ_U64(tags[0].sent, 2);
  CHECK_EQ_U64(tags[1].sent, 1);
  CHECK(ab__win_complete_oldest(c, 150) == AB__WIN_MEASURED); /* tag 1, 50 ns */
  CHECK(ab__win_complete_oldest(c, 170) == AB__WIN_MEASURED); /* tag 2, 70 ns */
  CHECK(ab__win_complete_oldest(c, 180) == AB__WIN_MEASURED); /* none */
  l->deadline_ns = 190;
  CHECK(ab__win_complete_oldest(c, 200) == AB__WIN_FREED);    /* tag 1, drained */
  CHECK_EQ_U64(tags[0].completed, 1);
  CHECK_EQ_U64(tags[0].drained, 1);
  CHECK_EQ_U64(tags[0].rtt.count, 2);
  CHECK_EQ_U64(tags[0].rtt.min, 50);
  CHECK_EQ_U64(tags[0].rtt.max, 90);
  CHECK_EQ_U64(tags[1].completed, 1);
  CHECK_EQ_U64(tags[1].rtt.max, 70);
  CHECK_EQ_U64(l->completed, 3);
  loop_free(l);

  /* request mode's rotation: message seq has tag rot[seq % 3], whatever
   * the grant says */
  l = loop_new(1, 8, AB__WIN_ORDERED);
  c = ab__loop_client(l, 0);
  ab_tags_init(tags);
  l->tags = tags;
  static const uint8_t rot[3] = {1, 1, 3};
  l->tag_rot = rot;
  l->ntag_rot = 3;
  c->win.tag = calloc(8, 1);
  CHECK_EQ_U64(ab__win_grant(c, 10, &g), 8);
  g.tag = 2;
  CHECK_EQ_U64(ab__win_stamp(c, &g, 8, 10), 8);
  CHECK_EQ_U64(tags[0].sent, 6); /* seqs 0 1 3 4 6 7 */
  CHECK_EQ_U64(tags[1].sent, 0);
  CHECK_EQ_U64(tags[2].sent, 2); /* seqs 2 5 */
  for (int i = 0; i < 8; i++) CHECK(ab__win_complete_oldest(c, 20) == AB__WIN_MEASURED);
  CHECK_EQ_U64(tags[0].completed + tags[2].completed, l->completed);
  /* merged exactly */
  ab_tag_stats_t sum[AB_TAGS_MAX];
  ab_tags_init(sum);
  ab_tags_merge(sum, tags);
  ab_tags_merge(sum, tags);
  CHECK_EQ_U64(sum[0].sent, 12);
  CHECK_EQ_U64(sum[2].rtt.count, 4);
  loop_free(l);
}

/* Tag names: ids in order of registration, the same name the same id, at
 * most AB_TAGS_MAX of them, names checked. */
static void test_tag_names(void) {
  ab_tag_names_t t;
  memset(&t, 0, sizeof(t));
  pthread_mutex_init(&t.mu, NULL);
  CHECK(ab_tag_names_id(&t, "get", 3) == 1);
  CHECK(ab_tag_names_id(&t, "set", 3) == 2);
  CHECK(ab_tag_names_id(&t, "getx", 3) == 1);
  CHECK(ab_tag_names_id(&t, "", 0) == AB_EINVAL);
  CHECK(ab_tag_names_id(&t, "a\nb", 3) == AB_EINVAL);
  char name[8];
  for (int i = 2; i < AB_TAGS_MAX; i++) {
    int n = snprintf(name, sizeof(name), "t%d", i);
    CHECK(ab_tag_names_id(&t, name, (size_t)n) == i + 1);
  }
  CHECK(ab_tag_names_id(&t, "one-more", 8) == AB_ECONFIG);
  CHECK(ab_tag_names_id(&t, "set", 3) == 2);
  CHECK_EQ_U64(t.n, AB_TAGS_MAX);
  pthread_mutex_destroy(&t.mu);
}

int main(void) {
  test_tags();
  test_tag_names();
  test_late_stream();
  test_interval_connections();
  test_coded();
  test_rate();
  test_intervals();
  test_stamping();
  test_phase_gate();
  test_ordered();
  test_datagram();
  test_datagram_any_slot();
  test_datagram_timeout_reuse();
  test_datagram_phases();
  test_datagram_model();
  test_datagram_map_runs();
  test_release();
  test_quota();
  test_sweep_ordered();
  test_finish();
  test_finish_shared();
  TEST_DONE();
}
