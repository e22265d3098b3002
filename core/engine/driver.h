/* driver.h -- the one table through which the engine reaches connections.
 *
 * The engine (core/engine/) owns the topology: loops and their threads, the
 * phases and their deadlines, the coordinator, the work pool, the counters
 * and the merge.  Everything that touches a socket belongs to a driver: one
 * row per execution x transport (core/drivers/registry.c picks it; the
 * scripted driver is built by the host layer on a registry row).  The engine
 * never asks which driver it runs: it calls these entries and nothing else
 * of the drivers.
 *
 * State: per case, drivers keep theirs behind eng->dc (made by
 * case_open); per loop behind l->d and l->drv_state; per connection in
 * their own client struct, which embeds the engine's header (ab__client_t
 * in engine_int.h: loop, id, alive/closing, the window) as its first member
 * and whose size the driver gives in client_size, and in their own
 * server-connection struct (the engine only passes it along).  The
 * engine reads and writes only that header.
 *
 * Threads and order, for one case:
 *   case_open    coordinator, before any loop exists: per-case state
 *                (contexts that must exist before anything is timed).
 *   loop_open    coordinator, per loop, after uv_loop_init and before the
 *                loop thread starts: the server side (when the role runs
 *                one) and the loop's buffers; sets l->drv_state if needed.
 *   client_start loop thread, paced by the engine (at most a few hundred
 *                connects in flight per loop, to l->connect_addr): connect
 *                or open client c (again, to reopen it: can_reopen);
 *                the driver calls ab__client_connect_done(c) exactly
 *                once per start when its connect (and handshakes)
 *                finished, well or not -- synchronously if it likes.
 *   wake         loop thread, once per client when a sending phase begins,
 *                and when the timeout sweep freed slots of c (the window,
 *                engine/window.h, decides what may be issued).
 *   accept       loop thread: a server connection s was accepted (its
 *                socket is set up by the driver's own listener, which
 *                calls this entry); NULL for a driver without one.
 *   client_fail  loop thread: the engine gives up on c's connection (a
 *                reply overdue past the timeout, or warm-up overdue); with
 *                can_reopen it reopens it (sweep.c).
 *   work_done    loop thread: one pool job of server connection s came
 *                back (pool:N); NULL when the driver submits none.
 *   stop         loop thread, STOP: cancel tasks, close every handle the
 *                driver opened, so that the loop ends.
 *   loop_close   coordinator, after the loop thread ended (or when setup
 *                failed part way: every entry tolerates a partial open).
 *   case_close   coordinator, last: fills the driver's part of the result
 *                (session parameters, socket buffers) and frees per-case
 *                state.
 * Return codes: 0 or a negative ab_error.h code; err[0..errlen) may get a
 * sentence (else the engine writes a generic one).
 *
 * The table is read-only while a case runs and is shared by its loops; `arg`
 * is the driver's own (the scripted driver's shared state).  Calls are per loop,
 * per connection or per phase, never per message.
 */
#ifndef AB_DRIVER_H
#define AB_DRIVER_H

#include <stddef.h>
#include <stdint.h>

struct ab__engine_s;
struct ab__loop_s;
struct ab__client_s;
struct ab__sconn_s;
typedef struct ab_result_s ab_result_t;

typedef struct ab_driver_s {
  const char *name;             /* for messages */
  void *arg;
  /* a lost message is a measured outcome, not a failure of the run
   * (datagram transports): out->ok ignores timed_out and unfinished */
  int loss_is_measured;
  /* a stream connection that was lost (a reply overdue, a reset, closed by
   * the peer) may be reopened in its place: client_start is called again
   * for the same client once the driver reported its handle closed
   * (ab__client_closed, engine_int.h), with the driver's part of the
   * client back to zero.  0: a lost connection stays closed. */
  int can_reopen;
  /* bytes per client connection: the driver's client struct, which embeds
   * the engine's ab__client_t as its first member (engine_int.h); the
   * engine allocates each loop's clients this far apart and zeroed.  0
   * means sizeof(ab__client_t) (a driver with no per-connection part). */
  size_t client_size;
  int (*case_open)(struct ab__engine_s *eng, char *err, size_t errlen);
  void (*case_close)(struct ab__engine_s *eng, ab_result_t *out);
  int (*loop_open)(struct ab__loop_s *l, char *err, size_t errlen);
  void (*loop_close)(struct ab__loop_s *l);
  void (*client_start)(struct ab__client_s *c);
  void (*wake)(struct ab__client_s *c);
  void (*accept)(struct ab__sconn_s *s);
  void (*client_fail)(struct ab__client_s *c, int code, const char *what);
  /* Optional.  Loop thread, while connecting: no connect of the loop has
   * finished for the scenario's timeout and c was started.  A client
   * already reported is left alone; one still in its connect or
   * handshakes fails with AB_ETIMEDOUT (counted once) and is reported
   * (ab__loop_connect_done).  NULL: the coordinator's limit (timeout +
   * 10 s) ends the run instead. */
  void (*connect_expired)(struct ab__client_s *c);
  void (*work_done)(struct ab__sconn_s *s);
  void (*stop)(struct ab__loop_s *l);
} ab_driver_t;

#endif
