/* lua_exec_int.h -- shared internals of the execution = "lua" driver (the
 * public side is lua_exec.h).  Not a public header.
 *
 *   lua_exec.c        the engine hooks' per-loop state (loop_open/close,
 *                     the scenario's boot), stopping after a script error,
 *                     the public API
 *   lua_exec_task.c   script errors, the Lua task kind (resume, release)
 *   lua_exec_conn.c   a connection's buffer and waiting state, the C
 *                     primitives of the conn methods
 *   lua/arkbench/exec/boot.lua, conn.lua  the Lua side: picking the
 *                     scenario part's hooks, the conn methods
 *   lua_exec_light.c  the light form (message/expect, C does the IO)
 *   lua_exec_tags.c   tags: names to the case's ids (conn:call's tag,
 *                     message's second value)
 *   lua_exec_tcp.c    client and server connections: connect, accept,
 *                     and the connection object's callbacks (any stream
 *                     protocol: tcp or tls, io/conn.h)
 *   lua_exec_udp.c    udp clients: their sockets, datagram queue, the
 *                     datagram conn primitives and the light form over
 *                     datagrams (lua/arkbench/exec/dgram.lua: the methods)
 *
 * Threads: a loop's ab__lx_loop_t, lua_State and connections are touched
 * only by that loop's thread while the loop runs (and by the coordinator
 * thread in loop_open / loop_close).  The shared ab_lua_exec_t holds the
 * first script error (mutex) and the list of loops to wake on one
 * (uv_async_send is thread-safe; the list is complete before any loop
 * thread starts).
 */
#ifndef AB_LUA_EXEC_INT_H
#define AB_LUA_EXEC_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <lua.h>
#include <uv.h>

#include "drivers/drivers_int.h"
#include "engine/window.h"
#include "lua/lua_exec.h"
#include "base/outbuf.h"
#include "io/scheduler.h"

#define AB__LX_MAGIC 0x4c58636eu /* "LXcn" */
#define AB__LX_READ_CHUNK 65536
#define AB__LX_ERRMSG_MAX 8192

/* main-state stack slots (light form) */
enum { AB__LX_IDX_TRACEBACK = 1, AB__LX_IDX_MESSAGE = 2, AB__LX_IDX_EXPECT = 3 };

enum { AB__LX_MODE_FULL = 1, AB__LX_MODE_LIGHT = 2 };
enum { AB__LX_EXP_LEN = 1, AB__LX_EXP_LINE = 2, AB__LX_EXP_FN = 3 };

/* What a waiting task waits for (ab__lx_conn_t.want). */
enum {
  AB__LX_W_NONE = 0,   /* nothing wakes it but cancellation (a sleep, a dead conn) */
  AB__LX_W_ANY = -1,   /* any new bytes or an error */
  AB__LX_W_LINE = -2,  /* a '\n' in the buffer or an error */
  AB__LX_W_PHASE = -3  /* the next phase (client_wake) */
};                     /* > 0: that many bytes buffered, or an error */

typedef struct ab__lx_loop_s ab__lx_loop_t;

typedef struct ab__lx_conn_s {
  uint32_t magic;
  ab__lx_loop_t *lx;
  int is_client;
  uint32_t id;
  ab__dclient_t *c;              /* client side */
  ab__sconn_t *s;               /* server side */
  ab_conn_t *conn;              /* the engine's conn of c or s: socket
                                   [+ TLS], no codec (Lua reads bytes) */
  uint8_t **rbuf;               /* the engine's buffer fields of c or s */
  size_t *rcap, *rlen;
  size_t roff;                  /* rbuf[roff..rlen) not consumed yet */
  uint64_t consumed;            /* bytes consumed so far */
  /* the task (full form) */
  ab_task_t *task;
  lua_State *co;
  int co_ref;
  int started;
  int waiting;                  /* suspended in wait() or sleep() */
  long want;                    /* AB__LX_W_* or a byte count */
  int err;                      /* sticky IO error (AB_ECLOSED at EOF) */
  int reported;                 /* err was returned to Lua once */
  uint64_t now;                 /* clock at the last read */
  /* conn:call */
  int call_active;
  uint64_t call_seq, call_t0, call_consumed;
  /* conn:sleep */
  uv_timer_t timer;
  int timer_open;
  uint64_t sleep_until;
  /* light form: messages built so far; bytes to show expect(buf) first */
  uint64_t msg_i;
  size_t hint;
  struct ab__lx_conn_s *next;   /* server conns of the loop */
  /* udp (lua_exec_udp.c): rbuf holds the datagrams not read yet, each as
   * a record (length, receive time, bytes) */
  uint64_t seq_base;            /* light form: the sequence of message 1 */
  uint64_t meas_seq0;           /* the first measure-phase sequence
                                   (UINT64_MAX until one is sent): the
                                   phase of any sequence of the client */
  uint64_t dg_t;                /* the datagram read last: receive time */
  size_t dg_len;                /* and length */
  int call_timedout;            /* the call in flight timed out: the
                                   waiting conn:call returns ETIMEDOUT */
  uint64_t lost[8];             /* timed-out calls with no reply yet (a
                                   ring, oldest first at lost_head) */
  uint32_t nlost, lost_head;
} ab__lx_conn_t;

struct ab_lua_exec_s {
  ab_driver_t driver;               /* the coroutine row, Lua-driven */
  char *scenario_path;
  char **sets;
  int nsets;
  int quick;
  int index;
  char *case_id;
  char *lua_path, *lua_cpath, *root;
  pthread_mutex_t mu;
  int nscript_errors;               /* guarded by mu */
  char errmsg[AB__LX_ERRMSG_MAX];   /* guarded by mu */
  ab__lx_loop_t **loops;            /* complete before the loop threads start */
  uint32_t nloops;
  uint64_t reply_bytes;             /* summed in loop_close */
  int dgram;                        /* the protocol is a datagram one (udp) */
};

struct ab__lx_loop_s {
  ab_lua_exec_t *x;
  ab__loop_t *l;
  lua_State *L;
  int mode;
  int ref_client, ref_server, ref_mt, ref_message, ref_expect;
  /* light form */
  const char *msg;              /* message string (pinned by ref_message) */
  size_t msg_len;
  int msg_fn;
  int expect_kind;
  size_t expect_len;
  ab__lx_conn_t *cconns;        /* one per client of the loop */
  ab__lx_conn_t *sconns;        /* Lua-served connections (list) */
  uint32_t next_sid;
  /* tags (lua_exec_tags.c): the light form's tags of one pump's messages
   * (window entries), and the tag strings seen (pinned) with their ids */
  uint8_t *tagbuf;
  uint8_t msg_tag;              /* a constant message's tag (the scenario's
                                   `tag` key), 0: none */
  const char *tag_str[AB_TAGS_MAX];
  uint8_t tag_id[AB_TAGS_MAX];
  uint32_t ntag_cache;
  uv_async_t abort_async;
  int dgram;                    /* as ab_lua_exec_t's */
  int stopping;                 /* a script error: drive nothing more */
  int stopped;
  uint64_t reply_bytes;
};

/* ---- inline: they run once per message or per read ------------------ */

static inline ab__lx_conn_t *ab__lx_conn_of(ab__lx_loop_t *lx, ab__dclient_t *c) {
  /* the clients are sizeof(ab__dclient_t) apart (the row's client_size) */
  return &lx->cconns[(size_t)((unsigned char *)c - lx->l->clients) / sizeof(ab__dclient_t)];
}

static inline size_t ab__lx_avail(const ab__lx_conn_t *k) { return *k->rlen - k->roff; }
static inline const uint8_t *ab__lx_rdata(const ab__lx_conn_t *k) { return *k->rbuf + k->roff; }

static inline void ab__lx_consume(ab__lx_conn_t *k, size_t n) {
  k->roff += n;
  k->consumed += n;
  if (k->roff >= *k->rlen) k->roff = *k->rlen = 0;
}

/* ---- lua_exec_task.c -------------------------------------------------- */

void ab__lx_close_noop(uv_handle_t *h);
/* Records a script error (msg: file:line, text, traceback) and tells every
 * loop to stop driving its connections. */
void ab__lx_script_error(ab__lx_loop_t *lx, const char *msg);
/* Makes the task running fn_ref(conn) for k; 0 or an error code. */
int ab__lx_task_new(ab__lx_loop_t *lx, ab__lx_conn_t *k, int fn_ref);

/* ---- lua_exec_conn.c -------------------------------------------------- */

/* Drops what Lua consumed from the front of the buffer (before a read). */
void ab__lx_compact(ab__lx_conn_t *k);
/* Sends n bytes on the connection; a failure also fails the connection.
 * 0 or an error. */
int ab__lx_send(ab__lx_conn_t *k, const uint8_t *p, size_t n);
/* Has what the waiting task asked for (k->want) arrived? */
int ab__lx_want_met(const ab__lx_conn_t *k);
void ab__lx_wake(ab__lx_conn_t *k);
/* An IO failure of a connection (see lua_exec_conn.c). */
void ab__lx_conn_failed(ab__lx_conn_t *k, int code, const char *what);
/* Runs lua/arkbench/exec/conn.lua over the C primitives and leaves the conn
 * metatable on L's stack; raises a Lua error if it fails (boot() runs it
 * protected). */
void ab__lx_conn_open(lua_State *L, ab__lx_loop_t *lx);

/* ---- lua_exec_tags.c -------------------------------------------------- */

/* The tag id of the string at idx of lx->L (1 .. AB_TAGS_MAX), or -1 with
 * *why (a Lua string pushed on lx->L) when it cannot be one. */
int ab__lx_tag_of(ab__lx_loop_t *lx, int idx, const char **why);
/* Sets the primitive tag(name) -> id | nil, why in the table on top. */
void ab__lx_tags_prims(lua_State *L, ab__lx_loop_t *lx);

/* ---- lua_exec_light.c ------------------------------------------------- */

void ab__lx_light_pump(ab__lx_conn_t *k);
void ab__lx_light_parse(ab__lx_conn_t *k);
/* message(i, id) on the loop's state -> bytes[, tag]; leaves the string
 * on the stack, points *p, *n at it and puts its tag's id in *tag.  0, or
 * -1 after a script error (stack clean). */
int ab__lx_light_message(ab__lx_loop_t *lx, ab__lx_conn_t *k, uint64_t i, const char **p, size_t *n,
                         uint8_t *tag);
/* "file:line" where the function at idx of L was defined (pushed on L). */
const char *ab__lx_fn_where(lua_State *L, int idx);

/* ---- lua_exec_udp.c: udp clients -------------------------------------- */

void ab__lx_udp_client_start(ab__client_t *hc);
void ab__lx_udp_client_wake(ab__client_t *hc);
/* boot(): what the datagram forms refuse (a server function, expect =
 * "line"); raises a Lua error naming path. */
void ab__lx_udp_boot_check(lua_State *L, ab__lx_loop_t *lx, const char *path);
/* Adds the datagram primitives to the table on top of L (conn.lua hands
 * them to dgram.lua). */
void ab__lx_udp_prims(lua_State *L);

/* ---- lua_exec_tcp.c: the engine hooks for connections ----------------- */

void ab__lx_client_start(ab__client_t *hc);
void ab__lx_client_wake(ab__client_t *hc);
/* The driver table's connect_expired: a client still in its handshakes
 * fails with AB_ETIMEDOUT, counted like a failed connect. */
void ab__lx_client_connect_expired(ab__client_t *hc);
void ab__lx_server_accept(ab__sconn_t *s);
/* Starts k's client function as its task (the connection is up). */
void ab__lx_start_client(ab__lx_conn_t *k);

#endif
