/* tags.h -- per-tag accounting (docs/run-object.md, "tags").
 *
 * A message may carry a tag: a small id (1 .. AB_TAGS_MAX; 0 = none) that
 * names what kind of request it is ("get", "set").  Each tag gets its own
 * measure-phase counts and RTT histogram beside the run's, written by the
 * window (window.h: stamp counts `sent` / `warmup_sent`, the completion
 * records `completed` or `drained` and the RTT), per loop, and merged
 * exactly at the end like the run's own histograms.  A message's errors
 * are not recorded per tag: by the identity every measure-phase message
 * ends completed, drained, timed out, lost to an error or unfinished, so a
 * tag's errors are sent - completed - drained.
 *
 * Where a message's tag comes from is the driver's: request mode's
 * rotation (cfg->tag_rot: message seq's tag is tag_rot[seq % ntag_rot]),
 * or the grant's (ab__win_grant_t.tag / .tags, set by a scripted driver).
 * Names are registered once per case (cfg->tag_names first, then at run
 * time by ab__tag_id), so ids mean the same on every loop.
 *
 * Memory: a loop's AB_TAGS_MAX stats (~17 KiB each) are allocated at setup
 * when cfg->tagged, never per message.
 */
#ifndef AB_TAGS_H
#define AB_TAGS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/histogram.h"

#define AB_TAGS_MAX 16
#define AB_TAG_NAME_MAX 48 /* bytes, without the NUL */

typedef struct {
  uint64_t sent;         /* measure-phase messages handed to the socket */
  uint64_t warmup_sent;  /* warm-up messages handed to the socket */
  uint64_t completed;    /* replies inside [start, deadline] */
  uint64_t drained;      /* replies to measure messages after the deadline */
  uint64_t non_success;  /* of completed + drained: a status outside the
                            success set (window.h, ab__win_complete_coded) */
  ab_hist_t rtt;         /* completed + drained, ns */
} ab_tag_stats_t;

/* The case's tag names (id i + 1 is names[i]). */
typedef struct {
  char names[AB_TAGS_MAX][AB_TAG_NAME_MAX + 1];
  uint32_t n;
  pthread_mutex_t mu;    /* registration at run time (once per new name
                            per loop, never per message) */
} ab_tag_names_t;

/* Empties every stat of tab[0 .. AB_TAGS_MAX). */
void ab_tags_init(ab_tag_stats_t *tab);
/* dst[i] += src[i] for every tag, exactly. */
void ab_tags_merge(ab_tag_stats_t *dst, const ab_tag_stats_t *src);

/* The id (1 .. AB_TAGS_MAX) of name[0..len) in t, registering it when new.
 * AB_EINVAL when len is 0 or above AB_TAG_NAME_MAX or the name holds a
 * control byte; AB_ECONFIG when it is new and t is full. Thread-safe. */
int ab_tag_names_id(ab_tag_names_t *t, const char *name, size_t len);

/* The registered names, ", "-separated, into buf (for a message); returns
 * buf.  Thread-safe. */
char *ab_tag_names_list(ab_tag_names_t *t, char *buf, size_t len);

#endif
