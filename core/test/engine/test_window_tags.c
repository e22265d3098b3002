/* test_window_tags.c -- per-tag counts and RTTs of tagged messages
 * (engine/window.h, engine/tags.h) and the case's tag names.  The fixture
 * is window_fixture.h. */
#include <stdio.h>

#include "test/engine/window_fixture.h"

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
  TEST_DONE();
}
