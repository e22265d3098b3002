/* window_state.h -- the data of one connection's window: its in-flight slot
 * table and the issuing state.  Only the window module (window.h,
 * window.c) reads or writes these fields; engine_int.h embeds the struct
 * in each client connection, which is why it lives apart from the
 * operations (they need the loop, defined in engine_int.h).
 *
 * Memory: the arrays are allocated once per connection by ab__win_init()
 * and freed by ab__win_free(); nothing is allocated per message.
 */
#ifndef AB_WINDOW_STATE_H
#define AB_WINDOW_STATE_H

#include <stdint.h>

#include "base/histogram.h"

/* How replies come back, which decides how they complete. */
enum {
  AB__WIN_ORDERED = 0,  /* a stream: replies in request order, the oldest
                           in flight is the only one expected */
  AB__WIN_DATAGRAM,     /* unordered: replies may be lost, duplicated or
                           reordered; each is matched by its sequence */
  AB__WIN_STREAMS       /* multiplexed streams: every reply comes,
                           once, in any order; each is matched by the
                           sequence of the stream it came on, in the
                           datagram window's in-flight set */
};

/* Datagram outcome ring: what became of recent sequences, to tell a late
 * reply (its message timed out) from a duplicate (it completed already). */
enum { AB__WIN_OUT_NONE = 0, AB__WIN_OUT_DONE, AB__WIN_OUT_LOST };
/* or'ed into an outcome: the message was a measure-phase one (a reply
 * without a header does not carry its phase) */
#define AB__WIN_OUT_MEASURE 0x80u
#define AB__WIN_OUT_STATE 0x7fu

typedef struct ab__win_s {
  /* what every message touches, kept together */
  uint32_t inflight;            /* messages sent and not yet accounted */
  uint8_t kind;                 /* AB__WIN_ORDERED, _DATAGRAM or _STREAMS */
  uint8_t any_reply;            /* datagram: highest_seq is set */
  uint64_t next_seq;            /* the next message's sequence */
  uint64_t oldest_seq;          /* ordered: the reply expected next */
  uint64_t conn_end;            /* churn: no message at or past this
                                   sequence goes on the current
                                   connection (UINT64_MAX: no limit) */
  /* slot table, `window` entries: an ordered window's message seq lives in
   * slot seq mod window, a datagram one's in any free slot
   * (window_dgram.h) */
  uint64_t *seq;
  uint64_t *ns;                 /* when it was handed to the socket (the
                                   RTT origin), ns; 0 = the slot is free */
  uint8_t *phase;               /* AB_PHASE_* it was sent in */
  uint8_t *tag;                 /* its tag id (engine/tags.h; 0: none);
                                   NULL when the case is not tagged */
  uint32_t tag_first, tag_n;    /* its part of the loop's tag rotation */
  /* open loop only (NULL / 0 in closed loop): the rate schedule */
  uint64_t *origin;             /* per slot: the message's intended send
                                   time, its RTT origin, ns */
  uint64_t sched_t0;            /* the current phase's schedule start, ns */
  uint64_t sched_k;             /* messages of this phase stamped so far:
                                   the next one is message sched_k */
  double sched_off;             /* this connection's phase in the schedule,
                                   ns after sched_t0 (id / rate) */
  double sched_period;          /* ns between two of its messages
                                   (clients / rate) */
  uint64_t freed_ns;            /* open loop: when a reply last freed a
                                   slot of a full window (the generator's
                                   part of a send's lag starts there or
                                   at the intended time, the later) */
  /* datagram only */
  uint64_t highest_seq;         /* highest sequence whose reply arrived */
  uint64_t *out_seq;            /* outcome ring, out_n entries */
  uint8_t *out_state;
  uint32_t out_n;
  /* 1 + the interval of the time series its last measure reply completed
   * in (0: none yet): counts the connections that carry traffic */
  uint32_t iv_mark;
  /* datagram and streams: the in-flight set (window_dgram.h) */
  uint32_t *free_slot;          /* the free slots, a stack, window entries */
  uint32_t nfree;
  uint32_t *map;                /* seq -> slot + 1, map_mask + 1 buckets */
  uint32_t map_mask;
  uint32_t map_shift;           /* 64 - log2(buckets): the hash's top bits */
  uint32_t *age_prev, *age_next; /* per slot in flight: its neighbours in
                                    stamp order (AB__DG_NIL at the ends) */
  uint32_t age_head, age_tail;  /* the oldest and the youngest in flight */
} ab__win_t;

/* One interval of the measure phase's time series (docs/run-object.md, intervals): what
 * happened in [t, t + interval) after the start, by the time it was
 * counted (a send by its stamp, a reply by its completion; the last
 * interval also takes what is counted after the deadline: the drain).
 * Preallocated per loop at setup, written by the loop's thread only. */
typedef struct {
  uint64_t sent, completed, errors, timed_out;
  uint64_t connections;         /* connections that completed a measure
                                   reply in it (any reply: drained too) */
  ab_hist_t rtt;                /* the RTTs the run's histogram gets, ns */
} ab__iv_t;

#endif
