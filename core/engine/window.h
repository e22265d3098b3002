/* window.h -- the window: everything about issuing and accounting one
 * connection's messages (docs/run-object.md).  It owns the in-flight slot
 * table (window_state.h; a datagram window's set of in-flight sequences,
 * any slot for any message: window_dgram.h), the phase gate and its
 * deadline, stamping, completion (in order for a stream, by sequence with
 * late/duplicate/reordered counts for datagrams), release after an error,
 * the timeout sweep and the forced end of a measurement (when to sweep is
 * engine/sweep.c's: a timerfd at the earliest expiry).  It writes the
 * loop's counters (sent, completed, drained, timed_out, message_errors,
 * unfinished, warmup_completed, meas_inflight, warm_inflight, late,
 * reordered, duplicated), its RTT histograms (per interval; open loop also the raw
 * view and the send lag), the time series' counts and, in a tagged case,
 * each tag's counts and histogram (engine/tags.h); nothing else does.
 * (`unsent` is the engine's, from ab__win_unsent at the deadline.)
 *
 * A driver's pump does only this:
 *
 *   ab__win_grant_t g;
 *   if (ab__win_grant(c, now, &g) == 0) return;      how many may go now
 *   build g.n messages, sequences g.seq.., phase g.phase, into the socket
 *   if (ab__win_stamp(c, &g, g.n, ab_now_ns()) == 0) return;   too late:
 *                                                    drop what was built
 *   hand the bytes to the socket
 *
 * and its read path calls ab__win_reply() (or _reply_datagram: the built-in
 * echo's message, checked byte by byte and matched), ab__win_complete() (or
 * _datagram) with what it decoded, or _coded for a reply matched by
 * position that carries a status, per reply.
 *
 * Issuing is a policy of this module.  Closed loop (rate 0): while the
 * phase is open, every free slot may be issued at once.  Open loop (a
 * rate): each connection has an evenly spaced schedule (sched_* in
 * ab__win_t, set by the engine at each phase start); grant() also bounds
 * n by the messages whose intended time has come, stamp() records each
 * one's intended time as its RTT origin (origin[]) beside the actual
 * hand-off time t (ns[], the raw view and the timeout clock) and its send
 * lag; the engine wakes the pumps at the next intended time (rate.c's
 * rate timer).  Drivers do not change.  Measure-phase counts also go to
 * the loop's current interval of the time series (ab__iv_at).
 *
 * Threads: everything runs on the connection's loop thread; no locks.
 * Times are CLOCK_MONOTONIC nanoseconds (ab_now_ns()).  Return codes
 * follow base/ab_error.h.  Completion and stamping run once per message or
 * batch and are inline; the rest is in window.c.
 */
#ifndef AB_WINDOW_H
#define AB_WINDOW_H

#include <stdint.h>

#include "base/ab_error.h"
#include "base/clock.h"
#include "base/histogram.h"
#include "engine/engine_int.h"
#include "engine/window_dgram.h"
#include "engine/window_state.h"
#include "proto/framing.h"

/* What the issuing policy grants a pump: n messages, sequences seq ..
 * seq+n-1, carrying `phase`; none may be handed to the socket at or after
 * `deadline`. */
typedef struct {
  uint64_t seq;
  uint64_t deadline;            /* ns */
  uint32_t n;
  uint8_t phase;                /* AB_PHASE_WARMUP or AB_PHASE_MEASURE */
  /* a tagged case's (engine/tags.h): the tag of every message stamped
   * (0: none), or with tags non-NULL, tags[i] for the i-th message of the
   * next stamp; the driver sets them after the grant (grant clears them).
   * Request mode's rotation (l->tag_rot) overrides both. */
  uint8_t tag;
  const uint8_t *tags;
} ab__win_grant_t;

/* What a completion did (>= 0; errors are < 0). */
enum {
  AB__WIN_NONE = 0,     /* nothing freed: a late or duplicated datagram */
  AB__WIN_FREED = 1,    /* a slot freed: warm-up, drained, or a datagram
                           that came after its timeout */
  AB__WIN_MEASURED = 2  /* a measure round trip completed by the deadline */
};

/* ---- setup (window.c) -------------------------------------------------- */

/* Allocates w's slot table for `window` messages (and, for a datagram
 * window, its outcome ring of max(64, 4 * window, history) entries; with
 * open_loop, the intended times).  0 or AB_ENOMEM; ab__win_free() either
 * way. */
int ab__win_init(ab__win_t *w, uint32_t window, int kind, int open_loop, uint32_t history);

/* Open loop: connection `index` of `clients` follows a schedule at
 * rate/clients messages/s, its phase index/rate s into the period. */
void ab__win_sched_init(ab__win_t *w, double rate, uint32_t index, uint32_t clients);

/* Open loop: a sending phase begins at t0: message 0 of the phase is
 * intended at t0 + the connection's phase. */
void ab__win_sched_start(ab__win_t *w, uint64_t t0);

/* Open loop: how many messages of the current phase are intended before
 * `deadline` and were not stamped (0 in closed loop). */
uint64_t ab__win_unsent(const ab__win_t *w, uint64_t deadline);
void ab__win_free(ab__win_t *w);

/* ---- the phase gate and issuing --------------------------------------- */

/* The in-flight slot of an ordered window's message seq: seq mod window,
 * without a division when the window is a power of two.  (A datagram
 * message takes any free slot: window_dgram.h.) */
static inline uint32_t ab__win_slot(const ab__loop_t *l, uint64_t seq) {
  return l->window_pow2 ? (uint32_t)seq & (l->window - 1) : (uint32_t)(seq % l->window);
}

/* The phase whose messages may be sent at `now`: AB_PHASE_WARMUP or
 * AB_PHASE_MEASURE with its deadline in *dl, or 0 when nothing may be sent
 * (no sending phase, or its deadline has passed). */
static inline uint8_t ab__win_phase(const ab__loop_t *l, uint64_t now, uint64_t *dl) {
  uint64_t d;
  uint8_t ph;
  if (l->phase == AB__PH_MEASURE) {
    d = l->deadline_ns;
    ph = AB_PHASE_MEASURE;
  } else if (l->phase == AB__PH_WARMUP) {
    d = l->warm_deadline_ns;
    ph = AB_PHASE_WARMUP;
  } else {
    return 0;
  }
  if (now >= d) return 0;
  *dl = d;
  return ph;
}

/* Open loop: the intended send time of message k of the current phase
 * (its k-th since the phase began), ns.  Fixed in advance: the schedule
 * never moves when sends are late. */
static inline uint64_t ab__win_intended(const ab__win_t *w, uint64_t k) {
  /* rounded, not truncated: an instant that is exactly a whole ns (the
   * measure deadline, say) must not come out 1 ns before it */
  return w->sched_t0 + (uint64_t)(w->sched_off + (double)k * w->sched_period + 0.5);
}

/* The interval of the time series that time t falls in (the measure
 * phase's; events come in nearly increasing time order on a loop, so this
 * only moves forward: a compare per call). */
static inline ab__iv_t *ab__iv_at(ab__loop_t *l, uint64_t t) {
  while (t >= l->iv_end_ns && l->iv_i + 1 < l->iv_n) {
    l->iv_i++;
    uint64_t e = l->start_ns + (uint64_t)(l->iv_i + 1) * l->iv_ns;
    l->iv_end_ns = l->iv_i + 1 == l->iv_n ? UINT64_MAX : e < l->deadline_ns ? e : l->deadline_ns;
  }
  return &l->iv[l->iv_i];
}

/* How many messages c may issue now (closed loop: every free slot while
 * the phase is open, whichever messages hold the others; open loop: also
 * only those whose intended time has come).  Fills *g and returns g->n
 * (0: issue nothing).  `now` is a recent clock reading, used only for the
 * phase gate. */
static inline uint32_t ab__win_grant(ab__client_t *c, uint64_t now, ab__win_grant_t *g) {
  const ab__loop_t *l = c->loop;
  const ab__win_t *w = &c->win;
  g->n = 0;
  uint8_t ph = ab__win_phase(l, now, &g->deadline);
  /* the deadline's edge (rate.c, ab__rate_end): the measure phase ends
   * now; messages intended before its deadline may still go, late */
  uint64_t upto = UINT64_MAX;
  if (l->rate_edge && w->origin != NULL) {
    ph = AB_PHASE_MEASURE;
    g->deadline = UINT64_MAX;
    upto = l->deadline_ns - 1;
  }
  if (ph == 0 || w->inflight >= l->window) return 0;
  /* the issuing policy, closed loop: every free slot at once */
  uint32_t n = l->window - w->inflight;
  /* churn: at most what the connection has left of its quota */
  if (w->conn_end - w->next_seq < n) n = (uint32_t)(w->conn_end - w->next_seq);
  if (w->origin != NULL) {
    /* open loop: only the messages whose intended time has come (a fresh
     * clock: the caller's may be the last read's) */
    uint64_t t = ab_now_ns();
    uint32_t k = 0;
    if (upto < t) t = upto;
    while (k < n && ab__win_intended(w, w->sched_k + k) <= t) k++;
    n = k;
  }
  g->seq = w->next_seq;
  g->phase = ph;
  g->n = n;
  g->tag = 0;
  g->tags = NULL;
  return n;
}

/* A tagged case: the tag of message seq (the i-th of this stamp of g), kept
 * in its slot s and counted as sent in its phase (engine/tags.h). */
static inline void ab__win_tag(ab__loop_t *l, ab__win_t *w, const ab__win_grant_t *g, uint32_t s,
                               uint64_t seq, uint32_t i) {
  /* a window set up without its part (tag_n 0) rotates through all */
  uint32_t rn = w->tag_n ? w->tag_n : l->ntag_rot;
  uint8_t tg = l->ntag_rot ? l->tag_rot[w->tag_first + seq % rn] : g->tags ? g->tags[i] : g->tag;
  w->tag[s] = tg;
  if (tg == 0) return;
  if (g->phase == AB_PHASE_MEASURE) l->tags[tg - 1].sent++;
  else l->tags[tg - 1].warmup_sent++;
}

/* Churn (requests_per_connection): c's connection has sent its quota and
 * every reply is in: the driver closes it cleanly and the engine opens a
 * new one in its place (ab__client_retire, engine_int.h).  Always 0 without
 * a quota.  Per pump, not per message. */
static inline int ab__win_spent(const ab__client_t *c) {
  return c->win.inflight == 0 && c->win.next_seq >= c->win.conn_end;
}

/* The first n (<= g->n) messages of g, built, are handed to the socket at
 * t (read just before the first byte goes; never earlier than an earlier
 * stamp of c: the clock is monotonic): they take their slots and count as
 * sent (in the measure phase only).  Returns n, and moves g past them; or
 * 0 when t is at or past the deadline: then nothing is counted and the
 * caller must not send what it built. */
static inline uint32_t ab__win_stamp(ab__client_t *c, ab__win_grant_t *g, uint32_t n, uint64_t t) {
  ab__loop_t *l = c->loop;
  ab__win_t *w = &c->win;
  if (t >= g->deadline || n == 0) return 0;
  uint64_t seq = g->seq;
  uint32_t slot = ab__win_slot(l, seq);
  if (w->kind == AB__WIN_ORDERED && w->origin == NULL && w->tag == NULL) {
    /* closed loop on a stream, untagged: the next slots in turn */
    for (uint32_t i = 0; i < n; i++, slot = slot + 1 == l->window ? 0 : slot + 1) {
      w->seq[slot] = seq + i;
      w->ns[slot] = t;
      w->phase[slot] = g->phase;
    }
  } else {
    for (uint32_t i = 0; i < n; i++, slot = slot + 1 == l->window ? 0 : slot + 1) {
      /* ordered: the next slot in turn; datagram: any free one */
      uint32_t s = w->kind != AB__WIN_ORDERED ? ab__dg_take(w, seq + i) : slot;
      w->seq[s] = seq + i;
      w->ns[s] = t;
      w->phase[s] = g->phase;
      if (w->tag != NULL) ab__win_tag(l, w, g, s, seq + i, i);
      if (w->origin != NULL) {
        /* open loop: each message's RTT starts at its intended time; how
         * late it went out is the send lag */
        uint64_t it = ab__win_intended(w, w->sched_k + i);
        w->origin[s] = it;
        if (g->phase == AB_PHASE_MEASURE) {
          uint64_t lag = t > it ? t - it : 0;
          ab_hist_record(&l->send_lag, lag);
          ab_hist_record(&l->iv_lag[ab__iv_at(l, t) - l->iv], lag);
          /* the generator's part: from the intended time or, when the
           * window was full then, from the reply that freed a slot */
          uint64_t from = w->freed_ns > it ? w->freed_ns : it;
          ab_hist_record(&l->gen_lag, t > from ? t - from : 0);
        }
      }
    }
  }
  if (w->origin != NULL) w->sched_k += n;
  if (g->tags != NULL) g->tags += n;
  if (w->inflight == 0) w->oldest_seq = seq;
  w->next_seq = seq + n;
  w->inflight += n;
  if (g->phase == AB_PHASE_MEASURE) {
    l->sent += n;
    l->meas_inflight += n;
    ab__iv_at(l, t)->sent += n;
  } else {
    l->warm_inflight += n;
  }
  g->seq += n;
  g->n -= n;
  return n;
}

/* ---- completion -------------------------------------------------------- */

/* The completion of a message is the per-message path: always inlined
 * into the driver's reply loop (GCC stops inlining it once the callers
 * grow, and a call there costs about 20 instructions per round trip). */
#if defined(__GNUC__)
#define AB__WIN_HOT static inline __attribute__((always_inline))
#else
#define AB__WIN_HOT static inline
#endif

/* Frees slot (in flight, stamped t0 = w->ns[slot]) completed at now and
 * counts it in its phase. */
AB__WIN_HOT int ab__win_account(ab__loop_t *l, ab__win_t *w, uint32_t slot, uint64_t now,
                                  uint64_t t0) {
  uint64_t rtt = now > t0 ? now - t0 : 0; /* bytes there before the send */
  w->ns[slot] = 0;
  if (w->inflight == l->window) w->freed_ns = now; /* generator lag (stamp) */
  w->inflight--;
  if (w->phase[slot] == AB_PHASE_MEASURE) {
    ab__iv_t *iv = ab__iv_at(l, now);
    if (w->origin != NULL) {
      /* open loop: the raw view from the actual send, the corrected one
       * (rtt) from the intended time */
      ab_hist_record(&l->rtt_raw, rtt);
      uint64_t o = w->origin[slot];
      rtt = now > o ? now - o : 0;
    }
    /* the run's histogram is the merge of its intervals' (merge.c) */
    ab_hist_record(&iv->rtt, rtt);
    ab_tag_stats_t *ts = w->tag != NULL && w->tag[slot] ? &l->tags[w->tag[slot] - 1] : NULL;
    if (ts) ab_hist_record(&ts->rtt, rtt);
    uint32_t mark = l->iv_i + 1; /* iv is l->iv[l->iv_i] */
    if (w->iv_mark == 0) l->connections_used++; /* its first measure reply */
    if (w->iv_mark != mark) { /* its first reply in this interval */
      w->iv_mark = mark;
      iv->connections++;
    }
    l->meas_inflight--;
    if (now <= l->deadline_ns) {
      l->completed++;
      iv->completed++;
      if (ts) ts->completed++;
      return AB__WIN_MEASURED;
    }
    l->drained++;
    if (ts) ts->drained++;
    return AB__WIN_FREED;
  }
  l->warmup_completed++;
  l->warm_inflight--;
  return AB__WIN_FREED;
}

/* A stream's reply to (phase ph, connection cid, message seq) arrived at
 * `now`.  ph 0 accepts the phase the message was sent in (a reply that
 * carries no header).  Returns AB__WIN_MEASURED or AB__WIN_FREED; AB_ESEQ
 * when it is not the oldest message in flight (replies come back in
 * request order on a stream); AB_ETIMEDOUT when it came later than the
 * timeout: then it is counted `late` (a measure message) and stays in
 * flight, and the caller fails the connection (ab__win_release counts it
 * as timed out; the engine reopens it), as the sweep would have. */
AB__WIN_HOT int ab__win_complete(ab__client_t *c, uint8_t ph, uint32_t cid, uint64_t seq,
                                   uint64_t now) {
  ab__loop_t *l = c->loop;
  ab__win_t *w = &c->win;
  /* ordered: the messages in flight are oldest_seq .. next_seq - 1, each
   * in its slot (seq mod window), so the oldest one's slot holds it */
  if (cid != c->id || seq != w->oldest_seq || w->inflight == 0) return AB_ESEQ;
  uint32_t slot = ab__win_slot(l, seq);
  if (ph != 0 && w->phase[slot] != ph) return AB_ESEQ;
  uint64_t t0 = w->ns[slot];
  if (now > t0 && now - t0 > l->timeout_ns) {
    /* later than the timeout, before the sweep saw it: late, and timed
     * out by the release that follows */
    if (w->phase[slot] == AB_PHASE_MEASURE) l->late++;
    return AB_ETIMEDOUT;
  }
  w->oldest_seq++;
  return ab__win_account(l, w, slot, now, t0);
}

/* The oldest message in flight completed at `now` (a reply matched by
 * position only).  As ab__win_complete; AB_ESEQ when nothing is in
 * flight. */
static inline int ab__win_complete_oldest(ab__client_t *c, uint64_t now) {
  if (c->win.inflight == 0) return AB_ESEQ;
  return ab__win_complete(c, 0, c->id, c->win.oldest_seq, now);
}

/* A request-mode reply's status, for a measure-phase message in slot:
 * counted per code (< AB_REPLY_CODES; 0 = none), its RTT in the loop's
 * rtt_ok when it succeeded (err 0) and is completed (not drained), else
 * counted in non_success, the interval's errors, its tag's non_success,
 * the loop's status failures and its errors of class err.  The reply
 * completes its message either way (the caller accounts it): a response
 * is a round trip whatever its status (docs/run-object.md: non_success). */
static inline void ab__win_status(ab__loop_t *l, ab__win_t *w, uint32_t slot, uint64_t now,
                                  uint32_t code, int err) {
  if (code < AB_REPLY_CODES) l->reply_codes[code]++;
  if (err == 0) {
    /* as ab__win_account measures it (from the intended time in open
     * loop), for the replies it counts completed */
    uint64_t t0 = w->origin != NULL ? w->origin[slot] : w->ns[slot];
    if (now <= l->deadline_ns) ab_hist_record(&l->rtt_ok, now > t0 ? now - t0 : 0);
    return;
  }
  l->non_success++;
  ab__iv_at(l, now)->errors++;
  if (w->tag != NULL && w->tag[slot]) l->tags[w->tag[slot] - 1].non_success++;
  l->status_failures++;
  ab__errors_add(l->errors, &l->nerrors, err, 1,
                 "a response whose status is outside the success set");
}

/* The oldest message in flight got a whole reply at `now` (matched by
 * position) that carries status `code` (< AB_REPLY_CODES, counted per code
 * for a measure-phase message; 0 = none) and a verdict: err 0 (a success)
 * or err < 0 (the error class the driver was given: the status is outside
 * the success set).  Either way the reply completes its message as
 * ab__win_complete_oldest does -- a response is a round trip whatever its
 * status (docs/run-object.md: non_success) -- and the framing is intact,
 * so the connection goes on.  A measure-phase message's RTT is recorded in
 * the loop's rtt_ok too when it succeeded and is completed (not drained):
 * its count is the successful completions; when it did not, it counts in
 * non_success, the interval's errors, its tag's non_success, the loop's
 * status failures and its errors of class err.  Returns AB__WIN_MEASURED
 * or AB__WIN_FREED; AB_ESEQ when nothing is in flight; AB_ETIMEDOUT as
 * ab__win_complete (counted late, not by code). */
static inline int ab__win_complete_coded(ab__client_t *c, uint64_t now, uint32_t code, int err) {
  ab__loop_t *l = c->loop;
  ab__win_t *w = &c->win;
  uint32_t slot = ab__win_slot(l, w->oldest_seq);
  if (w->inflight == 0 || w->ns[slot] == 0 || w->seq[slot] != w->oldest_seq) return AB_ESEQ;
  if (now > w->ns[slot] && now - w->ns[slot] > l->timeout_ns) {
    if (w->phase[slot] == AB_PHASE_MEASURE) l->late++; /* as ab__win_complete */
    return AB_ETIMEDOUT;
  }
  w->oldest_seq++;
  if (w->phase[slot] == AB_PHASE_MEASURE) ab__win_status(l, w, slot, now, code, err);
  return ab__win_account(l, w, slot, now, w->ns[slot]);
}

/* Records what became of datagram message seq, sent in phase ph, in the
 * outcome ring, unless its entry already holds a younger sequence's (a
 * message that timed out long after it was sent must not erase a recent
 * completion). */
static inline void ab__win_outcome(ab__win_t *w, uint64_t seq, uint8_t st, uint8_t ph) {
  uint32_t i = (uint32_t)(seq % w->out_n);
  if (w->out_state[i] != AB__WIN_OUT_NONE && w->out_seq[i] > seq) return;
  w->out_seq[i] = seq;
  w->out_state[i] = (uint8_t)(st | (ph == AB_PHASE_MEASURE ? AB__WIN_OUT_MEASURE : 0));
}

/* What the outcome ring says of sequence seq: AB__WIN_OUT_* (NONE when its
 * entry holds another sequence), the measure flag in *measure. */
static inline uint8_t ab__win_outcome_of(const ab__win_t *w, uint64_t seq, int *measure) {
  uint32_t i = (uint32_t)(seq % w->out_n);
  if (w->out_seq[i] != seq) return AB__WIN_OUT_NONE;
  *measure = (w->out_state[i] & AB__WIN_OUT_MEASURE) != 0;
  return (uint8_t)(w->out_state[i] & AB__WIN_OUT_STATE);
}

/* Datagram message seq, in flight in `slot`, got its reply at `now`: the
 * completion part of ab__win_complete_datagram (which see). */
static inline int ab__win_dgram_done(ab__client_t *c, uint32_t slot, uint64_t seq, uint64_t now) {
  ab__loop_t *l = c->loop;
  ab__win_t *w = &c->win;
  uint8_t ph = w->phase[slot];
  int measure = ph == AB_PHASE_MEASURE;
  ab__dg_drop(w, slot);
  if (now > w->ns[slot] && now - w->ns[slot] > l->timeout_ns) {
    ab__win_outcome(w, seq, AB__WIN_OUT_LOST, ph);
    w->ns[slot] = 0;
    if (w->inflight == l->window) w->freed_ns = now; /* generator lag */
    w->inflight--;
    if (measure) {
      l->timed_out++;
      ab__iv_at(l, now)->timed_out++;
      l->meas_inflight--;
      l->late++;
    } else {
      l->warm_inflight--;
    }
    return AB__WIN_FREED;
  }
  if (w->any_reply && seq < w->highest_seq) l->reordered += (uint64_t)measure;
  if (!w->any_reply || seq > w->highest_seq) w->highest_seq = seq;
  w->any_reply = 1;
  ab__win_outcome(w, seq, AB__WIN_OUT_DONE, ph);
  return ab__win_account(l, w, slot, now, w->ns[slot]);
}

/* A datagram reply to (phase ph, connection cid, message seq) arrived
 * at `now`; it is matched by its sequence (window_dgram.h), whatever slot
 * the message took.  A reply to a message no longer in flight is counted
 * `late` (it timed out, or is too old for the outcome ring) or
 * `duplicated` (it completed already); one below the highest sequence
 * answered so far is `reordered` and still completes; one later than the
 * timeout times its message out (timed_out, and `late`), its slot freed.
 * late, duplicated and reordered count measure-phase messages only (by the
 * phase the reply carries), as sent and timed_out do.  Returns
 * AB__WIN_MEASURED / AB__WIN_FREED when a slot was freed (issue again),
 * AB__WIN_NONE when not, AB_ESEQ for a message never sent (or another
 * connection's). */
static inline int ab__win_complete_datagram(ab__client_t *c, uint8_t ph, uint32_t cid,
                                            uint64_t seq, uint64_t now) {
  ab__loop_t *l = c->loop;
  ab__win_t *w = &c->win;
  if (cid != c->id) return AB_ESEQ;
  int measure = ph == AB_PHASE_MEASURE;
  uint32_t slot = ab__dg_find(w, seq);
  if (slot == AB__DG_NIL || w->phase[slot] != ph) {
    int m = 0;
    uint8_t st = ab__win_outcome_of(w, seq, &m);
    if (st == AB__WIN_OUT_DONE) l->duplicated += (uint64_t)measure;
    else if (st == AB__WIN_OUT_LOST || seq < w->next_seq) l->late += (uint64_t)measure;
    else return AB_ESEQ;
    return AB__WIN_NONE;
  }
  return ab__win_dgram_done(c, slot, seq, now);
}

/* ---- multiplexed streams (AB__WIN_STREAMS) ----------------------------- */

/* The reply to message seq, carried by its own stream of a multiplexed connection, arrived at
 * `now`: replies come once each, in any order, matched by the sequence the
 * stream was opened for (the in-flight set of window_dgram.h).  ph and cid
 * are what the reply's header says (ph 0: no header, the message's own
 * phase).  err 0: it completes as ab__win_complete does; a response in
 * request mode (code = its status, > 0) completes whatever its status, as
 * ab__win_complete_coded: status_fail 1 says it is outside the success set
 * (err its class; counted by ab__win_status); err < 0 without status_fail
 * (the stream reset by the peer) frees its slot and, in the measure phase,
 * counts it in message_errors, the interval's errors and the loop's errors
 * of class err with the sentence `why`.  Returns AB__WIN_MEASURED
 * or AB__WIN_FREED; AB_ESEQ when seq is not in flight (or the header names
 * another connection or phase); AB_ETIMEDOUT when it came later than the
 * timeout (counted late, left in flight: the caller fails the connection,
 * as the sweep would have). */
AB__WIN_HOT int ab__win_complete_stream(ab__client_t *c, uint8_t ph, uint32_t cid, uint64_t seq,
                                          uint64_t now, uint32_t code, int err, int status_fail,
                                          const char *why) {
  ab__loop_t *l = c->loop;
  ab__win_t *w = &c->win;
  if (cid != c->id) return AB_ESEQ;
  uint32_t slot = ab__dg_find(w, seq);
  if (slot == AB__DG_NIL || (ph != 0 && w->phase[slot] != ph)) return AB_ESEQ;
  uint64_t t0 = w->ns[slot];
  int measure = w->phase[slot] == AB_PHASE_MEASURE;
  if (now > t0 && now - t0 > l->timeout_ns) {
    if (measure) l->late++;
    return AB_ETIMEDOUT;
  }
  ab__dg_drop(w, slot);
  if (status_fail || (err == 0 && code != 0)) {
    /* request mode: a response completes whatever its status */
    if (measure) ab__win_status(l, w, slot, now, code, status_fail ? err : 0);
    return ab__win_account(l, w, slot, now, t0);
  }
  if (err == 0) return ab__win_account(l, w, slot, now, t0);
  w->ns[slot] = 0;
  w->inflight--;
  if (!measure) {
    l->warm_inflight--;
    return AB__WIN_FREED;
  }
  l->meas_inflight--;
  l->message_errors++;
  ab__iv_at(l, now)->errors++;
  ab__errors_add(l->errors, &l->nerrors, err, 1, why);
  return AB__WIN_FREED;
}

/* The peer never processed message seq of c's multiplexed connection
 * (h2: a stream above an orderly GOAWAY's last stream id, RFC 9113
 * 6.8): it is taken back as never sent -- its slot freed, and in the
 * measure phase `sent` (the run's, the current interval's, its tag's) less
 * one, so the identity holds and the next grant issues a message in its
 * place (open loop: it counts in `unsent`).  Its bytes stay in bytes_sent
 * (they did go out).  Returns AB__WIN_FREED, or AB_ESEQ when seq is not in
 * flight. */
static inline int ab__win_unsend_stream(ab__client_t *c, uint64_t seq, uint64_t now) {
  ab__loop_t *l = c->loop;
  ab__win_t *w = &c->win;
  uint32_t slot = ab__dg_find(w, seq);
  if (slot == AB__DG_NIL) return AB_ESEQ;
  int measure = w->phase[slot] == AB_PHASE_MEASURE;
  uint8_t tg = w->tag != NULL ? w->tag[slot] : 0;
  ab__dg_drop(w, slot);
  w->ns[slot] = 0;
  if (w->inflight == l->window) w->freed_ns = now;
  w->inflight--;
  if (!measure) {
    l->warm_inflight--;
    if (tg != 0 && l->tags[tg - 1].warmup_sent > 0) l->tags[tg - 1].warmup_sent--;
    return AB__WIN_FREED;
  }
  l->meas_inflight--;
  l->sent--;
  /* the current interval's (an earlier one may be closed already, read by
   * the live coordinator); one whose sent is still 0 keeps it, so the
   * intervals' sent can exceed `sent` by such a message (rare: a GOAWAY
   * read before the interval's first send) */
  ab__iv_t *iv = ab__iv_at(l, now);
  if (iv->sent > 0) iv->sent--;
  if (tg != 0 && l->tags[tg - 1].sent > 0) l->tags[tg - 1].sent--;
  if (w->origin != NULL) l->unsent++;
  return AB__WIN_FREED;
}

/* The built-in echo's reply p[0..len) (the payload; size checked) to
 * message seq, on its own stream, at `now`: every byte is checked (the
 * header's phase, connection and sequence must be the stream's; a small
 * message's pattern must be seq's), then as ab__win_complete_stream.
 * AB_EPAYLOAD / AB_EMAGIC ... as ab_msg_check; AB_ESEQ when the bytes name
 * another message. */
static inline int ab__win_reply_stream(ab__client_t *c, const uint8_t *p, size_t len,
                                       uint64_t seq, uint64_t now) {
  uint8_t ph = 0;
  uint32_t cid = c->id;
  uint64_t got;
  int r = len >= AB_MSG_HEADER ? ab_msg_check(p, len, &ph, &cid, &got)
                               : ab_msg_small_seq(p, len, c->id, seq, &got);
  if (r < 0) return r;
  if (got != seq) return AB_ESEQ;
  return ab__win_complete_stream(c, ph, cid, seq, now, 0, 0, 0, NULL);
}

/* ---- the built-in echo's replies (proto/framing.h) -------------------- */

/* A stream's echo reply p[0..len) (the payload, len bytes: the size was
 * checked) arrived at `now`: every byte is checked and it completes the
 * oldest message in flight.  With the header (len >= 16) the errors are
 * ab_msg_check's and ab__win_complete's.  A small message (len < 16)
 * carries its sequence's low bits (framing.h): it must be the oldest in
 * flight's; AB_ESEQ when it is another message's in flight (swapped or
 * reordered), AB_EPAYLOAD when it is no message's in flight (damaged bytes
 * give another sequence). */
static inline int ab__win_reply(ab__client_t *c, const uint8_t *p, size_t len, uint64_t now) {
  uint64_t seq;
  if (len >= AB_MSG_HEADER) {
    uint8_t ph;
    uint32_t cid;
    int r = ab_msg_check(p, len, &ph, &cid, &seq);
    return r < 0 ? r : ab__win_complete(c, ph, cid, seq, now);
  }
  const ab__win_t *w = &c->win;
  if (w->inflight == 0) return AB_ESEQ;
  int r = ab_msg_small_seq(p, len, c->id, w->oldest_seq, &seq);
  if (r < 0) return r;
  if (seq - w->oldest_seq >= w->inflight) return AB_EPAYLOAD;
  return ab__win_complete(c, 0, c->id, seq, now);
}

/* Small datagram replies: how many older sequences with the same low bits
 * are looked up in flight (payload < 8 only) before the reply is taken as
 * the youngest one's. */
#define AB__WIN_SMALL_TRIES 16

/* A datagram echo reply p[0..len) (the payload) arrived at `now`.  With the
 * header (len >= 16): as ab__win_complete_datagram, after ab_msg_check's
 * errors.  A small message carries its sequence mod 2^b (b = 8 min(len,
 * 8), framing.h): the youngest sequence sent with those low bits is taken,
 * or an older one (a multiple of 2^b back, at most AB__WIN_SMALL_TRIES
 * times, none older than the oldest in flight) when that one is in flight
 * and the youngest is not; a message in flight completes as in
 * ab__win_complete_datagram.  Otherwise the youngest's entry in the
 * outcome ring decides: duplicated (it completed), late (it timed out), or
 * AB_EPAYLOAD when the ring covers it and it has no outcome (these bytes
 * are no message's: a damaged reply); a sequence older than the ring
 * counts late (it cannot be told from a damaged reply), measure-phase when
 * the loop is measuring or draining.  AB_EPAYLOAD too when no message sent
 * has those low bits. */
static inline int ab__win_reply_datagram(ab__client_t *c, const uint8_t *p, size_t len,
                                         uint64_t now) {
  ab__loop_t *l = c->loop;
  ab__win_t *w = &c->win;
  uint64_t seq;
  if (len >= AB_MSG_HEADER) {
    uint8_t ph;
    uint32_t cid;
    int r = ab_msg_check(p, len, &ph, &cid, &seq);
    return r < 0 ? r : ab__win_complete_datagram(c, ph, cid, seq, now);
  }
  if (w->next_seq == 0) return AB_EPAYLOAD;
  uint64_t top = w->next_seq - 1, mask = ab_msg_small_mask(len);
  int r = ab_msg_small_seq(p, len, c->id, top - mask, &seq); /* in [top - mask, top] */
  if (r < 0) return r;
  if (seq > top) return AB_EPAYLOAD; /* wrapped: below sequence 0 */
  uint32_t slot = ab__dg_find(w, seq);
  if (slot == AB__DG_NIL && mask != UINT64_MAX && w->inflight > 0) {
    uint64_t step = mask + 1, oldest = w->seq[w->age_head];
    uint64_t cand = seq;
    for (int k = 0; k < AB__WIN_SMALL_TRIES && cand >= oldest + step; k++) {
      cand -= step;
      if ((slot = ab__dg_find(w, cand)) != AB__DG_NIL) return ab__win_dgram_done(c, slot, cand, now);
    }
  }
  if (slot != AB__DG_NIL) return ab__win_dgram_done(c, slot, seq, now);
  int measure = 0;
  uint8_t st = ab__win_outcome_of(w, seq, &measure);
  if (st == AB__WIN_OUT_DONE) {
    l->duplicated += (uint64_t)measure;
  } else if (st == AB__WIN_OUT_LOST) {
    l->late += (uint64_t)measure;
  } else if (top - seq < w->out_n) {
    return AB_EPAYLOAD;
  } else {
    l->late += (uint64_t)(l->phase == AB__PH_MEASURE || l->phase == AB__PH_DRAIN);
  }
  return AB__WIN_NONE;
}

/* ---- release, timeouts, the end (window.c) ---------------------------- */

/* Every message c has in flight is given up: the measure-phase ones are
 * counted in *as (&l->timed_out, &l->message_errors, &l->unfinished), the
 * slots freed; nothing is in flight afterwards. */
void ab__win_release(ab__client_t *c, uint64_t *as);

/* The timeout sweep of one live connection at `now`.  Returns 0 when
 * nothing is overdue; AB_ETIMEDOUT when an ordered window's oldest message
 * is older than the timeout (the caller fails the connection: its order
 * can no longer be trusted); or, for a datagram window, the number of
 * overdue messages it freed as timed out (the caller issues again). */
int ab__win_sweep(ab__client_t *c, uint64_t now);

/* The earliest time at which a message of c becomes overdue, or
 * UINT64_MAX when nothing is in flight: where a precise sweep would wake. */
uint64_t ab__win_next_expiry(const ab__client_t *c);

/* The drain ran out: whatever every client of l still has in flight is
 * counted unfinished. */
void ab__win_finish(ab__loop_t *l);

#endif
