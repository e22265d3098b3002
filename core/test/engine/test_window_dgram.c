/* test_window_dgram.c -- the window over a datagram transport
 * (engine/window.h, the in-flight set of engine/window_dgram.h): completion
 * by sequence with late, duplicate and reordered counts, any free slot
 * for a new message, a timed-out slot reused, the phases, the seq -> slot
 * map's runs, and a model of the set checked against it.  The fixture is
 * window_fixture.h. */
#include "test/engine/window_fixture.h"

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

int main(void) {
  test_datagram();
  test_datagram_any_slot();
  test_datagram_timeout_reuse();
  test_datagram_phases();
  test_datagram_model();
  test_datagram_map_runs();
  TEST_DONE();
}
