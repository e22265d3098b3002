/* test_window_small.c -- the window's checks of the built-in echo's small
 * replies (payload < 16, no header: proto/framing.h), ab__win_reply and
 * ab__win_reply_datagram: in order on a stream (a swapped reply is ESEQ,
 * a damaged one EPAYLOAD), matched by the sequence's low bits for
 * datagrams (reordered, duplicated, late, damaged; two messages in flight
 * with the same low bits). */
#include "test/engine/window_fixture.h"

/* The reply to (conn, seq), n bytes, as an echo would send it back. */
static const uint8_t *msg(size_t n, uint32_t conn, uint64_t seq) {
  static uint8_t p[16];
  ab_msg_fill(p, n, AB_PHASE_MEASURE, conn, seq);
  return p;
}

/* Issues one message at t; returns its sequence. */
static uint64_t issue_one(ab__client_t *c, uint64_t t) {
  ab__win_grant_t g = {0};
  CHECK(ab__win_grant(c, t, &g) >= 1);
  uint64_t s = g.seq;
  CHECK_EQ_U64(ab__win_stamp(c, &g, 1, t), 1);
  return s;
}

static void test_stream(void) {
  const size_t sizes[] = {1, 2, 4, 7, 8, 9, 15};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    size_t n = sizes[i];
    ab__loop_t *l = loop_new(2, 4, AB__WIN_ORDERED);
    ab__client_t *c = ab__loop_client(l, 0);
    CHECK_EQ_U64(issue(c, 100), 4); /* 0 .. 3 in flight */
    /* the second message's reply first: swapped */
    CHECK(ab__win_reply(c, msg(n, 0, 1), n, 200) == AB_ESEQ);
    /* the oldest's, damaged: no message's in flight */
    uint8_t bad[16];
    memcpy(bad, msg(n, 0, 0), n);
    bad[n - 1] ^= 0x10;
    CHECK(ab__win_reply(c, bad, n, 200) == AB_EPAYLOAD);
    /* another connection's message with the oldest's sequence */
    CHECK(ab__win_reply(c, msg(n, 1, 0), n, 200) < 0);
    CHECK_EQ_U64(c->win.inflight, 4);
    for (uint64_t s = 0; s < 4; s++) CHECK(ab__win_reply(c, msg(n, 0, s), n, 300) == AB__WIN_MEASURED);
    CHECK_EQ_U64(l->completed, 4);
    /* nothing in flight */
    CHECK(ab__win_reply(c, msg(n, 0, 4), n, 300) == AB_ESEQ);
    check_identity(l);
    loop_free(l);
  }
  /* one byte, window 1: the sequence wraps at 256 every time, and every
   * reply is still the one expected */
  ab__loop_t *l = loop_new(1, 1, AB__WIN_ORDERED);
  ab__client_t *c = ab__loop_client(l, 0);
  for (uint64_t s = 0; s < 700; s++) {
    CHECK_EQ_U64(issue_one(c, 100 + s), s);
    CHECK(ab__win_reply(c, msg(1, 0, s + 1), 1, 150 + s) == AB_EPAYLOAD);
    CHECK(ab__win_reply(c, msg(1, 0, s), 1, 150 + s) == AB__WIN_MEASURED);
  }
  CHECK_EQ_U64(l->completed, 700);
  check_identity(l);
  loop_free(l);
}

/* A datagram window for n-byte messages, the outcome ring sized as the
 * engine does (256 for 1 byte). */
static ab__loop_t *dgram_loop(uint32_t window, size_t n) {
  ab__loop_t *l = loop_new(1, window, AB__WIN_DATAGRAM);
  ab__client_t *c = ab__loop_client(l, 0);
  ab__win_free(&c->win);
  CHECK(ab__win_init(&c->win, window, AB__WIN_DATAGRAM, 0, n < 2 ? 256 : 0) == 0);
  return l;
}

static void test_datagram(void) {
  const size_t sizes[] = {1, 2, 4, 8, 12};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    size_t n = sizes[i];
    ab__loop_t *l = dgram_loop(4, n);
    ab__client_t *c = ab__loop_client(l, 0);
    /* nothing sent yet: no message has these bytes */
    CHECK(ab__win_reply_datagram(c, msg(n, 0, 0), n, 50) == AB_EPAYLOAD);
    CHECK_EQ_U64(issue(c, 100), 4);
    CHECK(ab__win_reply_datagram(c, msg(n, 0, 1), n, 200) == AB__WIN_MEASURED);
    CHECK(ab__win_reply_datagram(c, msg(n, 0, 0), n, 200) == AB__WIN_MEASURED);
    CHECK_EQ_U64(l->reordered, 1);
    CHECK(ab__win_reply_datagram(c, msg(n, 0, 1), n, 210) == AB__WIN_NONE);
    CHECK_EQ_U64(l->duplicated, 1);
    /* a message not sent yet (100 > 3): a damaged reply */
    CHECK(ab__win_reply_datagram(c, msg(n, 0, 100), n, 210) == AB_EPAYLOAD);
    CHECK(ab__win_reply_datagram(c, msg(n, 0, 3), n, 220) == AB__WIN_MEASURED);
    CHECK(ab__win_reply_datagram(c, msg(n, 0, 2), n, 220) == AB__WIN_MEASURED);
    CHECK_EQ_U64(l->completed, 4);
    CHECK_EQ_U64(l->reordered, 2);
    check_identity(l);
    loop_free(l);
  }
}

/* One byte: message 0 stays in flight (lost, say) while 1 .. 256 go round
 * one slot; 0 and 256 are then in flight with the same byte.  The reply is
 * taken as the youngest's; the next one as 0's (256 is done); a third is
 * a duplicate.  A byte whose sequence completed is a duplicate, one whose
 * sequence has no outcome a payload error. */
static void test_datagram_alias(void) {
  ab__loop_t *l = dgram_loop(2, 1);
  ab__client_t *c = ab__loop_client(l, 0);
  CHECK_EQ_U64(issue_one(c, 100), 0);
  for (uint64_t s = 1; s <= 256; s++) {
    CHECK_EQ_U64(issue_one(c, 100 + s), s);
    if (s < 256) CHECK(ab__win_reply_datagram(c, msg(1, 0, s), 1, 100 + s) == AB__WIN_MEASURED);
  }
  CHECK_EQ_U64(c->win.inflight, 2);
  CHECK(ab__win_reply_datagram(c, msg(1, 0, 256), 1, 400) == AB__WIN_MEASURED);
  CHECK(ab__dg_find(&c->win, 256) == AB__DG_NIL);
  CHECK(ab__dg_find(&c->win, 0) != AB__DG_NIL);
  CHECK(ab__win_reply_datagram(c, msg(1, 0, 0), 1, 400) == AB__WIN_MEASURED);
  CHECK_EQ_U64(c->win.inflight, 0);
  CHECK(ab__win_reply_datagram(c, msg(1, 0, 0), 1, 400) == AB__WIN_NONE);
  CHECK_EQ_U64(l->duplicated, 1);
  CHECK_EQ_U64(l->completed, 257);
  check_identity(l);
  loop_free(l);

  /* the ring covers the 256 codes of one byte: after 0 .. 299 (299 done,
   * 298 in flight, the rest done), a reply naming 298 completes it; then,
   * released without an outcome, the same byte is a damaged reply */
  l = dgram_loop(2, 1);
  c = ab__loop_client(l, 0);
  for (uint64_t s = 0; s < 300; s++) {
    issue_one(c, 100 + s);
    if (s != 298) CHECK(ab__win_reply_datagram(c, msg(1, 0, s), 1, 100 + s) == AB__WIN_MEASURED);
  }
  CHECK(ab__win_reply_datagram(c, msg(1, 0, 298), 1, 500) == AB__WIN_MEASURED);
  CHECK(ab__win_reply_datagram(c, msg(1, 0, 290), 1, 500) == AB__WIN_NONE); /* 290 again */
  CHECK_EQ_U64(l->duplicated, 1);
  issue_one(c, 600);                 /* 300 */
  ab__win_release(c, &l->unfinished); /* no outcome recorded */
  CHECK(ab__win_reply_datagram(c, msg(1, 0, 300), 1, 700) == AB_EPAYLOAD);
  check_identity(l);
  loop_free(l);
}

/* Two bytes across the 65536 boundary, a sequence older than the outcome
 * ring (late: a reply that late cannot be told from a damaged one), and
 * the ring's phase flag: a warm-up message's duplicate is not counted. */
static void test_datagram_wide(void) {
  ab__loop_t *l = dgram_loop(4, 2);
  ab__client_t *c = ab__loop_client(l, 0);
  c->win.next_seq = 65534;
  CHECK_EQ_U64(issue(c, 100), 4); /* 65534 .. 65537 */
  CHECK(ab__win_reply_datagram(c, msg(2, 0, 65536), 2, 200) == AB__WIN_MEASURED);
  CHECK(ab__dg_find(&c->win, 65536) == AB__DG_NIL);
  CHECK(ab__dg_find(&c->win, 65537) != AB__DG_NIL);
  for (uint64_t s = 65534; s < 65538; s++)
    if (s != 65536) CHECK(ab__win_reply_datagram(c, msg(2, 0, s), 2, 200) == AB__WIN_MEASURED);
  CHECK_EQ_U64(l->completed, 4);
  CHECK(ab__win_reply_datagram(c, msg(2, 0, 1000), 2, 300) == AB__WIN_NONE); /* older than the ring */
  CHECK_EQ_U64(l->late, 1);
  check_identity(l);
  loop_free(l);

  l = dgram_loop(4, 4);
  c = ab__loop_client(l, 0);
  l->phase = AB__PH_WARMUP;
  CHECK_EQ_U64(issue_one(c, 100), 0);
  CHECK(ab__win_reply_datagram(c, msg(4, 0, 0), 4, 150) == AB__WIN_FREED);
  CHECK_EQ_U64(l->warmup_completed, 1);
  l->phase = AB__PH_MEASURE;
  CHECK_EQ_U64(issue_one(c, 200), 1);
  CHECK(ab__win_reply_datagram(c, msg(4, 0, 1), 4, 250) == AB__WIN_MEASURED);
  CHECK(ab__win_reply_datagram(c, msg(4, 0, 0), 4, 300) == AB__WIN_NONE);
  CHECK_EQ_U64(l->duplicated, 0); /* a warm-up message's */
  CHECK(ab__win_reply_datagram(c, msg(4, 0, 1), 4, 300) == AB__WIN_NONE);
  CHECK_EQ_U64(l->duplicated, 1);
  check_identity(l);
  loop_free(l);
}

int main(void) {
  test_stream();
  test_datagram();
  test_datagram_alias();
  test_datagram_wide();
  TEST_DONE();
}
