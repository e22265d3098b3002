/* drivers_int.h -- what the driver files (core/drivers/) share with each
 * other: the callback tcp client and server, the layered stream path
 * (tls/ws/http), udp, the coroutine echo, and the per-case transport setup.
 * The engine never includes this header: it reaches a driver only through
 * its ab_driver_t (engine/driver.h; rows in registry.c).  The Lua driver
 * (core/lua) builds on the coroutine rows and uses these too.
 */
#ifndef AB_DRIVERS_INT_H
#define AB_DRIVERS_INT_H

#include <stdatomic.h>

#include "engine/engine_int.h"
#include "engine/window.h"
#include "base/outbuf.h"
#include "io/conn.h"
#include "io/scheduler.h"
#include "io/sockio.h"
#include "proto/codec.h"
#include "proto/tls.h"
#include "proto/ws.h"

/* What a tls/ws/wss/http/https connection adds above its ab_conn_t (which
 * holds the socket IO, the TLS transform and the codec, io/conn.h): the
 * WebSocket upgrade and the client's handshake bookkeeping. */
enum { AB__LY_HS_TLS = 1, AB__LY_HS_WS, AB__LY_READY };

typedef struct {
  int state;                    /* AB__LY_HS_TLS .. AB__LY_READY */
  ab_ws_hs_t *ws_hs;            /* during the WebSocket upgrade */
  int reported;                 /* counted towards the CONNECTED stage */
} ab__layers_t;

/* Plain tcp, callback and coroutine: every recv of a connection with no
 * partial frame kept lands in the loop's io_rx, and a client batch that
 * fits is built in io_tx, so the bytes the kernel copies stay in a few hot
 * cache lines whatever the connection count; a connection's own buffer
 * holds only a partial frame (2000 connections x 64 KiB: RSS 13 MiB, not
 * 145).  A client's frames larger than io_rx never fit in it whole, so
 * they are read into the connection's own buffer. */
#define AB__IO_RX ((size_t)256 << 10)
#define AB__IO_TX ((size_t)256 << 10)
#define AB__IO_SHARED_MAX AB__IO_RX

/* A client connection, as every driver row (and the Lua driver) keeps it:
 * the engine's header first (engine_int.h; the engine allocates
 * sizeof(ab__dclient_t) per client from ab_driver_t.client_size), then the
 * socket and protocol state.  The libuv handle's data points at the
 * whole. */
typedef struct ab__dclient_s {
  ab__client_t h;               /* first: AB__DC() casts between the two */
  uint8_t *rbuf;
  size_t rcap, rlen;
  ab_conn_t conn;               /* the socket's IO [+ TLS] [+ codec]; plain
                                   tcp, callback, uses conn.io alone */
  union {
    uv_tcp_t tcp;
    uv_udp_t udp;
  };
  uv_connect_t creq;
  uint64_t connect_start_ns;
  uint8_t connect_timed_out;    /* its TCP connect was cancelled at the
                                   connect timeout (ECONNTIMEDOUT) */
  ab__layers_t ly;              /* layered protocols only */
  /* execution = coroutine (coro_echo.c) */
  ab_task_t *task;
  int co_waiting, co_err;
  int co_connect;               /* its TCP connect: 0 pending, 1 done, < 0
                                   the error */
  uint64_t co_now;              /* clock at the last read */
  int co_idle;                  /* waiting for replies, plain tcp: a read
                                   may land in the loop's io_rx (co_view) */
  const uint8_t *co_view;       /* input in io_rx, parsed before the task
                                   waits again (coro_echo.c) */
  size_t co_vlen;
  uint8_t *sbuf;                /* request batch */
  size_t scap;
  /* udp only */
  uint8_t *dgram;               /* one datagram being built */
  /* shared:N: queued for its home to close its handle (home_close.c) */
  struct ab__dclient_s *hc_next;
} ab__dclient_t;

/* A client's own requests -- its window of them, `most` bytes each at
 * most on the wire -- are allowed above its backpressure bound
 * (io/sockio.h, ab_sockio_allow): only what it writes in answer to what
 * it reads (pongs) can stop its reads.  0 or a libuv error. */
static inline int ab__client_allow(ab__dclient_t *c, size_t most) {
  return ab_sockio_allow(&c->conn.io, (size_t)c->h.loop->eng->cfg->window * most);
}

/* The driver's client behind the engine's header (a cast: free). */
#define AB__DC(hc) ((ab__dclient_t *)(void *)(hc))
/* Client i of loop l, as the drivers see it. */
#define AB__DCLIENT(l, i) AB__DC(ab__loop_client((l), (i)))

/* A server connection (accepted by tcp_server.c, served by the row's
 * accept entry). */
struct ab__sconn_s {
  uv_tcp_t tcp;
  ab__loop_t *loop;             /* shared:N: the loop running it now */
  ab__loop_t *home;             /* the loop that accepted it (its handle's) */
  int close_later;              /* shared:N: closed off home; home closes
                                   the handle (home_close.c) */
  pthread_mutex_t mu;           /* shared:N: held by whoever runs it */
  int closing;
  int eof;                      /* the client half-closed: close once every
                                   reply has gone out */
  int lingering;                /* TLS: the client's close_notify was read
                                   (and answered): reading on until the
                                   client's FIN or RST tells how it left */
  uint8_t *rbuf;
  size_t rcap, rlen;
  ab_conn_t conn;               /* the socket's IO [+ TLS] [+ codec], as
                                   the client's */
  ab__job_t job;                /* pool completions for this connection */
  struct ab__sconn_s *next, *prev; /* loop's list of server connections */
  /* pool:N only: frames waiting for their work to come back */
  uint8_t *held;
  size_t hcap, hlen, hoff;
  ab__layers_t ly;              /* layered protocols only */
  ab_task_t *task;              /* execution = coroutine */
  int co_waiting, co_err;
  int co_idle;                  /* as the client's (ab__dclient_t) */
  const uint8_t *co_view;
  size_t co_vlen;
  uint64_t in_pool;             /* pool jobs submitted and not back on
                                   the loop (ab__sconn_submit): the struct
                                   is freed only when none is */
  int reap;                     /* closed while jobs were in the pool:
                                   freed when the last comes back */
  int keep;                     /* held from outside the drivers (the Lua
                                   driver's conn object): freed only with
                                   the loop */
  uint64_t jobs_out;            /* jobs submitted, not yet returned */
  uint64_t jobs_back;           /* returned jobs not yet released */
  uint64_t jobs_held;           /* jobs submitted, their replies not yet
                                   released */
  struct ab__sconn_s *hc_next;  /* shared:N: queued for its home to close
                                   its handle (home_close.c) */
};

/* pool:N: a server connection's requests that wait for the work pool
 * (`bytes` of them held, jobs_held jobs) are output it owes: they count in
 * its backpressure backlog (io/sockio.h, ab_sockio_owe) with the pool's
 * per-job slots, so a client that sends faster than the pool works is
 * pushed back instead of buffered.  0 or a libuv error. */
static inline int ab__sconn_owe_held(ab__sconn_t *s, size_t bytes) {
  return ab_sockio_owe(&s->conn.io, bytes + (size_t)s->jobs_held * AB__POOL_JOB_BYTES);
}

/* The drivers' part of a loop (ab__loop_t.d): sockets and buffers of the
 * row that runs it; made in loop_open, freed in loop_close. */
struct ab__dloop_s {
  ab_reactor_t reactor;         /* socket readiness for the loop's conns */
  uv_tcp_t listener;            /* stream rows, when the role serves */
  int listening;
  uv_udp_t userver;             /* udp: the one server socket of this loop */
  uint8_t *udp_rx;              /* udp: receive buffer (64 KiB) */
  uint8_t *cipher_rx;           /* tls: ciphertext read buffer (64 KiB) */
  uint8_t *io_rx;               /* plain tcp, callback and coroutine:
                                   receive buffer shared by the loop's
                                   connections */
  uint8_t *io_tx;               /* and the client batch being built (any
                                   protocol, coroutine) */
  ab_sched_t *sched;            /* coroutine and scripted rows */
  struct ab__udp_job_s *udp_free; /* udp + pool: recycled datagram jobs */
  ab__sconn_t *sconns;          /* list of server connections */
  ab__sconn_t *reaped;          /* closed ones, freed at the next accept
                                   (ab__server_reap) or the loop's end */
  /* shared:N: connections of this (home) loop that ended on another
   * thread, whose handles this loop closes (home_close.c) */
  uv_async_t hc_async;
  pthread_mutex_t hc_mu;        /* guards the lists and hc_open */
  ab__dclient_t *hc_clients;
  ab__sconn_t *hc_sconns;
  int hc_open, hc_inited;
};

/* The drivers' part of a case (ab__engine_t.dc): what transport.c sets up
 * once per case; session facts are copied into the result at case_close. */
struct ab__dcase_s {
  const char *host;             /* Host header / WebSocket host */
  const char *verify_host;      /* name the server certificate must match */
  int use_tls, use_ws;
  const ab_codec_vt_t *codec_vt;
  const char *require_alpn;     /* client: the ALPN protocol the server must
                                   select (h2), else NULL */
  /* request mode (the codec writes whole prepared requests and judges
   * each reply, codec.h): the plan, its longest request; NULL = payloads */
  void *requests;
  size_t request_max;
  void (*requests_free)(void *plan);
  ab_tls_ctx_t *tls_server, *tls_client;
  ab_session_info_t session;    /* copied into the result at case_close */
  /* session's TLS parameters / SNI recorded (set once, under eng->mu;
   * read without it to skip the lock afterwards) */
  atomic_int tls_params_taken, tls_sni_taken;
  /* client TLS handshakes completed and resumed, every connection (one
   * atomic add per handshake; into session at case_close) */
  atomic_uint_fast64_t tls_handshakes, tls_resumed;
};

/* transport.c: per-case setup shared by every stream and datagram row:
 * codec choice and the TLS contexts (made and warmed before anything is
 * timed); case_close copies the session parameters into the result. */
int ab__transport_open(ab__engine_t *eng, char *err, size_t errlen);
void ab__transport_close(ab__engine_t *eng, ab_result_t *out);

/* A whole reply payload: checks every byte and completes it; in request
 * mode, completes the oldest message by the codec's verdict instead
 * (stream.c). */
int ab__client_reply(ab__dclient_t *c, const ab_msgview_t *msg, uint64_t now);
/* Writes messages seq.. seq+n-1 at dst for the case's codec: prepared
 * requests in request mode, else header + pattern payload (phase ph) +
 * trailer.  dst has room for n * ab__msg_room(l).  Returns the bytes. */
size_t ab__client_build(ab__dclient_t *c, uint8_t *dst, uint32_t n, uint8_t ph, uint64_t seq);
size_t ab__msg_room(const ab__loop_t *l);
/* Counts the bytes of messages just handed to a connection in phase ph
 * (counters.h: bytes_sent, measure phase only). */
static inline void ab__client_count_sent(ab__loop_t *l, uint8_t ph, size_t n) {
  if (ph == AB_PHASE_MEASURE) l->bytes_sent += n;
}
/* Counts n bytes of replies parsed at `now` (counters.h: bytes_received,
 * while the measure phase sends). */
static inline void ab__client_count_received(ab__loop_t *l, size_t n, uint64_t now) {
  uint64_t dl;
  if (n > 0 && ab__win_phase(l, now, &dl) == AB_PHASE_MEASURE) l->bytes_received += n;
}

/* source.c: a client socket from the case's source addresses (cfg->bind):
 * init (the socket is made at once when there are any), then bind for
 * connection id before the connect (0 when there are none) */
int ab__client_tcp_init(ab__loop_t *l, uv_tcp_t *tcp);
int ab__client_tcp_bind(ab__loop_t *l, uv_tcp_t *tcp, uint32_t id);

/* tcp_client.c: callback tcp client */
void ab__client_connect(ab__dclient_t *c, const struct sockaddr *addr);
void ab__client_pump(ab__dclient_t *c);
void ab__client_fail(ab__dclient_t *c, int code, const char *what);
/* Any driver: c's TCP connect has had no answer for the connect timeout:
 * counts ECONNTIMEDOUT (with the address and the limit in its reason) and
 * cancels it (closes the handle: the connect callback gets UV_ECANCELED
 * with c->connect_timed_out set). */
void ab__client_connect_timed_out(ab__dclient_t *c);
/* "127.0.0.1:7000" or "[::1]:7000" into out[0..cap); returns out. */
const char *ab__addr_text(const struct sockaddr_storage *a, char *out, size_t cap);
/* The plain tcp driver's connect_expired (driver.h). */
void ab__client_connect_expired(ab__dclient_t *c);
void ab__client_close(ab__dclient_t *c);
/* Churn: c's connection has done its requests_per_connection round trips
 * (ab__win_spent): closed (a FIN: nothing is unread) to be replaced
 * (ab__client_retire).  Returns 1 when it was closed, 0 when it stays
 * (the loop is past sending).  Every execution mode's client calls it. */
int ab__client_recycle(ab__dclient_t *c);
void ab__client_on_closed(uv_handle_t *h);
/* c is started again (a reopen, engine sweep.c): its driver part back to
 * zero, as allocated (every handle of it has closed by then). */
void ab__client_reset(ab__dclient_t *c);

/* A server connection's read failed: an orderly EOF or, in server role, a
 * client's reset (not ours to count as a failure: counted apart) closes it
 * quietly; anything else is an error. */
void ab__sconn_read_failed(ab__sconn_t *s, ssize_t nread);
/* Server side: the first completed TLS handshake's parameters. */

/* tcp_server.c */
/* Hands one job of s's to the work pool (pool:N), counted in s->in_pool. */
void ab__sconn_submit(ab__sconn_t *s);
/* Frees the server connections closed in earlier passes of l's loop. */
void ab__server_reap(ab__loop_t *l);
int ab__server_listen(ab__loop_t *l);
void ab__sconn_close(ab__sconn_t *s);
void ab__sconn_error(ab__sconn_t *s, int code, const char *what);
/* The client's FIN (every server row): a half-close -- s->eof set, reads
 * held (a readable end of stream would wake the loop for ever), and the
 * connection closed once no request waits for the pool and no reply for
 * the socket (ab__sconn_finish_if_done, called again as those drain), so
 * an `echo ... | nc` style client still gets every reply. */
void ab__sconn_half_closed(ab__sconn_t *s);
void ab__sconn_finish_if_done(ab__sconn_t *s);
void ab__server_work_returned(ab__sconn_t *s, uint64_t n);
/* The callback tcp row's accept: plain frames on sockio. */
void ab__server_accept_plain(ab__sconn_t *s);
void ab__server_close_all(ab__loop_t *l);

/* stream.c: layered protocols */
void ab__sclient_connect(ab__dclient_t *c, const struct sockaddr *addr);
void ab__sclient_pump(ab__dclient_t *c);
/* Its connect or handshakes outlived the connect limit: fails it with
 * AB_ETIMEDOUT (a no-op once reported). */
void ab__sclient_connect_expired(ab__dclient_t *c);
void ab__sserver_accept(ab__sconn_t *s);
void ab__sserver_release(ab__sconn_t *s, uint64_t n);
void ab__layers_free(ab__layers_t *ly);
/* pieces shared with coro_echo.c and the lua driver */
/* Drops buf[0..used) and moves the rest to the front. */
void ab__consume(uint8_t *buf, size_t *len, size_t used);
/* A client's connect (and handshakes) finished, well or not: reports it to
 * the engine once (ab__loop_connect_done). */
void ab__client_reported(ab__dclient_t *c);
/* A client's session is up (its TLS and WebSocket handshakes are done):
 * alive, counted ready, its handshake time (from ab__conn_setup to now)
 * recorded for protocols with a handshake, and reported (above).  Every
 * driver's client comes through here; the TLS session parameters are
 * recorded earlier, by the conn itself (ab__conn_setup's on_tls_done). */
void ab__client_ready(ab__dclient_t *c);
/* Sets up a connection's ab_conn_t for the case's protocol: its TLS
 * connection (client or server side) when the protocol has TLS, and, with
 * `codec` set, the protocol's codec (a client's knows the peer's host).
 * 0 or an error. */
int ab__conn_setup(ab__loop_t *l, ab_conn_t *conn, int is_client, int codec, uint32_t id);
/* The codec's counters of a closing client, into its loop's. */
void ab__conn_fold_stats(ab__loop_t *l, const ab_conn_t *conn);

/* coro_echo.c: execution = coroutine */
void ab__co_client_start(ab__dclient_t *c);
void ab__co_client_wake(ab__dclient_t *c);
/* As ab__sclient_connect_expired, for a coroutine client (its task sees
 * AB_ETIMEDOUT and reports). */
void ab__co_client_connect_expired(ab__dclient_t *c);
void ab__co_server_accept(ab__sconn_t *s);
void ab__co_job_done(ab__sconn_t *s);

/* home_close.c: shared:N, a connection that ended on another thread than
 * its home's: its handle is closed by the home, soon (the queuer holds the
 * connection's lock and has stopped its IO; ab__client_close and
 * ab__sconn_close call these). */
int ab__home_close_open(ab__loop_t *l);   /* loop_open (dloop_new) */
void ab__home_close_stop(ab__loop_t *l);  /* the loop's stop */
void ab__home_close_free(ab__loop_t *l);  /* loop_close */
void ab__home_close_client(ab__dclient_t *c);
void ab__home_close_sconn(ab__sconn_t *s);

/* udp.c */
int ab__udp_server_open(ab__loop_t *l);
void ab__udp_client_open(ab__dclient_t *c, const struct sockaddr *addr);
/* Opens client c's socket connected to addr with the case's buffer sizes
 * (udp = {...}), its connect time recorded, reading every datagram into
 * the loop's udp_rx and handing it to on_recv (the echo's, or a scripted
 * driver's); on success c is alive and counted ready.  0, or the error,
 * counted (ab__loop_error) and the handle closed. */
int ab__udp_socket_open(ab__dclient_t *c, const struct sockaddr *addr, uv_udp_recv_cb on_recv);
void ab__udp_pump(ab__dclient_t *c);
void ab__udp_free(ab__loop_t *l);


/* registry.c: the driver rows */
extern const ab_driver_t ab__driver_tcp_callback, ab__driver_stream_callback,
    ab__driver_udp_callback, ab__driver_coroutine, ab__driver_udp_scripted;

#endif
