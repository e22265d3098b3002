/* window_dgram.h -- the datagram window's in-flight set (window.h): which
 * slot holds which sequence, when replies may be lost, duplicated or
 * reordered.
 *
 * A stream window puts message seq in slot seq mod window: replies come
 * back in order, so the oldest slot is always the next one freed.  A
 * datagram's reply may never come: under that rule one lost message would
 * hold its slot, and every sequence behind it that maps there, until its
 * timeout, and the window would stall.  So a datagram message takes any
 * free slot:
 *
 *   free_slot[0..nfree)   a stack of the free slots (the most recently
 *                         freed on top, still warm in the cache);
 *   map                   seq -> slot + 1 (0 = empty), open addressing with
 *                         linear probing, map_mask + 1 (a power of two)
 *                         >= 2 * window buckets, so at most half are taken
 *                         and a probe always ends; deletion shifts the
 *                         entries behind back (no tombstones).  Keys are
 *                         not stored: a bucket's key is seq[its slot].  The
 *                         home bucket is a Fibonacci hash of seq: the
 *                         sequences in flight are mostly consecutive, and
 *                         seq & mask would lay them out as one long run of
 *                         taken buckets that every deletion scans to its
 *                         end; hashed, runs stay a few buckets long;
 *   age_prev/age_next     the slots in flight in the order they were
 *                         stamped (age_head the oldest): stamps come in
 *                         clock order, so this is also the order in which
 *                         they become overdue, and the sweep and the next
 *                         expiry read only the head.
 *
 * Every operation is O(1) (the map: expected), allocation-free, on the
 * connection's loop thread.  The wire format is unchanged: replies are
 * matched by the sequence they carry, never by a slot index.
 */
#ifndef AB_WINDOW_DGRAM_H
#define AB_WINDOW_DGRAM_H

#include <stdint.h>

#include "engine/window_state.h"

#define AB__DG_NIL UINT32_MAX

/* The home bucket of seq: the top bits of seq times 2^64 / phi. */
static inline uint32_t ab__dg_home(const ab__win_t *w, uint64_t seq) {
  return (uint32_t)((seq * 0x9E3779B97F4A7C15u) >> w->map_shift);
}

/* The slot holding sequence seq in flight, or AB__DG_NIL. */
static inline uint32_t ab__dg_find(const ab__win_t *w, uint64_t seq) {
  for (uint32_t b = ab__dg_home(w, seq);; b = (b + 1) & w->map_mask) {
    uint32_t e = w->map[b];
    if (e == 0) return AB__DG_NIL;
    if (w->seq[e - 1] == seq) return e - 1;
  }
}

/* Takes a free slot for message seq (not in flight; the caller keeps
 * inflight < window, so one is free), enters it in the map and at the
 * young end of the age list, and sets seq[slot].  Returns the slot. */
static inline uint32_t ab__dg_take(ab__win_t *w, uint64_t seq) {
  uint32_t slot = w->free_slot[--w->nfree];
  w->seq[slot] = seq;
  uint32_t b = ab__dg_home(w, seq);
  while (w->map[b] != 0) b = (b + 1) & w->map_mask;
  w->map[b] = slot + 1;
  w->age_prev[slot] = w->age_tail;
  w->age_next[slot] = AB__DG_NIL;
  if (w->age_tail == AB__DG_NIL) w->age_head = slot;
  else w->age_next[w->age_tail] = slot;
  w->age_tail = slot;
  return slot;
}

/* Slot (in flight) leaves the set: out of the map and the age list, back
 * on the free stack.  Its seq/ns/phase are the caller's to clear. */
static inline void ab__dg_drop(ab__win_t *w, uint32_t slot) {
  uint32_t m = w->map_mask;
  uint32_t hole = ab__dg_home(w, w->seq[slot]);
  while (w->map[hole] != slot + 1) hole = (hole + 1) & m;
  /* backward shift: an entry after the hole moves into it unless its home
   * bucket lies cyclically in (hole, its bucket] */
  for (uint32_t b = (hole + 1) & m; w->map[b] != 0; b = (b + 1) & m) {
    uint32_t home = ab__dg_home(w, w->seq[w->map[b] - 1]);
    if (((b - home) & m) >= ((b - hole) & m)) {
      w->map[hole] = w->map[b];
      hole = b;
    }
  }
  w->map[hole] = 0;
  uint32_t p = w->age_prev[slot], n = w->age_next[slot];
  if (p == AB__DG_NIL) w->age_head = n;
  else w->age_next[p] = n;
  if (n == AB__DG_NIL) w->age_tail = p;
  else w->age_prev[n] = p;
  w->free_slot[w->nfree++] = slot;
}

#endif
