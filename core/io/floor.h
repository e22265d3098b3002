/* floor.h -- the physical floor of loopback TCP echo on this host.
 *
 * ab_floor_run() is the least a loopback echo can cost here: one thread, one
 * epoll set (level-triggered), raw non-blocking sockets with TCP_NODELAY and
 * nothing else.  It exists so that `arkbench calibrate` can show how much of
 * a measured round trip is arkbench's own overhead.
 *
 * Shape: a listening socket on 127.0.0.1:0; `clients` client sockets
 * connected to it, and the server sockets accepted from it, all in one epoll
 * set in the calling thread.  Messages are `payload` bytes with no header (a
 * raw stream cut into fixed-size pieces).  Each client keeps `window`
 * messages in flight: it writes window x payload bytes at start; on every
 * readiness event it reads all that is available, counts the whole messages
 * that completed, and writes that many new ones in one write call from a
 * preallocated buffer.  Each server socket reads what is available and writes
 * it back; a short write is kept in a per-connection pending buffer and the
 * socket waits for EPOLLOUT (not EPOLLIN) until that buffer is empty.
 *
 * What the floor omits, on purpose: per-message timing, any check of the
 * echoed bytes, framing, histograms, and every allocation after start-up.
 *
 * Phases: connect, warm-up (warmup_s, not counted), measure (duration_s).
 * Round trips are counted only inside the measure interval, as observed with
 * CLOCK_MONOTONIC after each epoll_wait; at the deadline nothing more is
 * sent and every socket is closed without draining.
 */
#ifndef AB_FLOOR_H
#define AB_FLOOR_H

#include <stddef.h>
#include <stdint.h>

/* Limits ab_floor_check() enforces (the scenario limits, but payload may be
 * as small as one byte because the floor has no header). */
#define AB_FLOOR_MAX_PAYLOAD ((size_t)16 << 20) /* 16 MiB */
#define AB_FLOOR_MAX_CLIENTS 100000
#define AB_FLOOR_MAX_WINDOW 4096
#define AB_FLOOR_MAX_INFLIGHT ((uint64_t)1 << 30) /* clients*window*payload */

typedef struct ab_floor_cfg_s {
  size_t payload;    /* bytes per message, 1 .. AB_FLOOR_MAX_PAYLOAD */
  int clients;       /* connections, 1 .. AB_FLOOR_MAX_CLIENTS */
  int window;        /* messages in flight per connection, 1 .. 4096 */
  double warmup_s;   /* seconds, >= 0; runs but is not counted */
  double duration_s; /* seconds, > 0; the measure interval */
} ab_floor_cfg_t;

typedef struct ab_floor_result_s {
  uint64_t round_trips;     /* messages echoed back inside the measure */
  double elapsed_s;         /* measure interval actually observed (wall) */
  double round_trips_per_s; /* round_trips / elapsed_s */
  double mean_rtt_us;       /* Little's law: clients*window / rate * 1e6;
                               0 when no round trip completed */
  double cpu_user_s;        /* user CPU of the calling thread in the measure */
  double cpu_sys_s;         /* system CPU of the calling thread (this is
                               where loopback TCP work is charged) */
} ab_floor_result_t;

/* Validates cfg.  Returns 0, or AB_ECONFIG with *why (if why != NULL) set
 * to a static sentence naming the field and its range. */
int ab_floor_check(const ab_floor_cfg_t *cfg, const char **why);

/* Runs the floor echo in the calling thread for about
 * warmup_s + duration_s seconds and fills *out (zeroed first).
 * Returns 0; AB_ECONFIG for a bad cfg; AB_ENOMEM; AB_ECLOSED if a peer
 * closed a connection early; AB_ETIMEDOUT if a connection was not accepted
 * within 5 s; or a negated errno from a socket call (e.g. -EMFILE when the
 * file-descriptor limit is below 2*clients + 2).  Never exits, never raises a
 * signal (writes use MSG_NOSIGNAL).  Allocates its buffers at start and frees
 * everything, sockets included, before returning. */
int ab_floor_run(const ab_floor_cfg_t *cfg, ab_floor_result_t *out);

#endif
