/* lua_exec_udp.c -- execution = "lua" over udp (docs/lua-api.md, "Over
 * udp").  Each client is one connected UDP socket, opened as the callback
 * udp echo opens its own (drivers/udp.c: ab__udp_socket_open, the loop's
 * libuv reactor, the case's buffer sizes); every datagram read is one
 * message.  Accounting is the window's datagram rules (engine/window.h):
 * a message takes any free slot and is completed by its sequence, a
 * message without a reply after `timeout` is freed as timed out by the
 * engine's sweep, which then calls wake (here), and a reply to a message
 * no longer in flight is counted `late` by the window.
 *
 * Full form.  Datagrams collect in the client's buffer as records
 * (length, receive time, bytes) until the function reads them: conn:receive
 * returns the next one whole; conn:call sends one datagram (stamped just
 * before uv_udp_try_send) and reads datagrams until expect(d) accepts one
 * (without expect: the next one), which completes the round trip at its
 * receive time.  A datagram expect rejects, or one still queued when a
 * call begins (a call's reply comes after its request), answers no call
 * in flight: it is taken as the late reply of this client's oldest
 * timed-out call that had none yet (counted `late`), else counted in
 * errors (ESEQ).  A call the sweep timed out returns nil, "ETIMEDOUT...";
 * the socket goes on.
 *
 * Light form.  C sends `window` datagrams per client (one message each),
 * message(i) built as over a stream; expect = a length (the datagram's,
 * answering the oldest message in flight), or function(d, id, last)
 * returning the number i of the message the datagram answers (so a lost
 * or late reply is matched exactly), true (the oldest in flight) or
 * nil/false (answers none: ESEQ).
 *
 * The phase of a sequence: the client's sequences grow through warm-up
 * into the measure phase, so every one from the first measure-phase one
 * (meas_seq0) on is a measure message.  No server function: the built-in
 * udp echo answers runs without a target.
 */
#include "lua/lua_exec_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "base/ab_error.h"
#include "base/clock.h"
#include "lua/lua_core.h"

#define DG_HDR (sizeof(uint32_t) + sizeof(uint64_t))
/* datagrams the function has not read yet, at most (bytes of records) */
#define DG_QUEUE_MAX ((size_t)4 << 20)
#define NLOST (sizeof(((ab__lx_conn_t *)0)->lost) / sizeof(uint64_t))

static uint8_t phase_of(const ab__lx_conn_t *k, uint64_t seq) {
  return seq >= k->meas_seq0 ? AB_PHASE_MEASURE : AB_PHASE_WARMUP;
}

static int conn_dead(const ab__lx_conn_t *k) { return k->err || !k->c->h.alive; }

/* A send the socket refused for now (its buffer full; an ICMP port
 * unreachable of an earlier datagram reported here): the datagram is lost,
 * not the socket. */
static int transient(int r) { return r == UV_EAGAIN || r == UV_ENOBUFS || r == UV_ECONNREFUSED; }

static int try_send(ab__lx_conn_t *k, const char *p, size_t n) {
  uv_buf_t b = uv_buf_init((char *)p, (unsigned)n);
  int r = uv_udp_try_send(&k->c->udp, &b, 1, NULL);
  return r < 0 ? r : 0;
}

/* A timed message lost at its send: counted by class, then lost by the
 * timeout like any other (sent = ... + timed_out holds). */
static void lost_at_send(ab__lx_conn_t *k, int r) {
  ab__loop_t *l = k->c->h.loop;
  if (r == UV_ECONNREFUSED) ab__loop_error(l, r, "udp client: send: the peer's port is closed");
  else ab__errors_add(l->errors, &l->nerrors, r, 1,
                      "udp send: the socket buffer was full, the message was lost here");
}

/* Stamps the next granted message at a fresh clock reading; 0 when it is
 * too late (nothing counted, nothing to send). */
static int stamp_one(ab__lx_conn_t *k, ab__win_grant_t *g, uint64_t *seq, uint64_t *t) {
  uint64_t s = g->seq;
  uint8_t ph = g->phase;
  *t = ab_now_ns();
  if (ab__win_stamp(&k->c->h, g, 1, *t) == 0) return 0;
  if (ph == AB_PHASE_MEASURE && k->meas_seq0 == UINT64_MAX) k->meas_seq0 = s;
  *seq = s;
  return 1;
}

/* ---- the datagram queue (full form) ---------------------------------- */

static int queue_push(ab__lx_conn_t *k, const uint8_t *p, size_t n, uint64_t t) {
  ab__lx_compact(k);
  size_t need = *k->rlen + DG_HDR + n;
  if (need > DG_QUEUE_MAX) return UV_ENOBUFS;
  if (need > *k->rcap) {
    size_t cap = *k->rcap ? *k->rcap : 4096;
    while (cap < need) cap *= 2;
    uint8_t *b = realloc(*k->rbuf, cap);
    if (b == NULL) return AB_ENOMEM;
    *k->rbuf = b;
    *k->rcap = cap;
  }
  uint8_t *d = *k->rbuf + *k->rlen;
  uint32_t len = (uint32_t)n;
  memcpy(d, &len, sizeof(len));
  memcpy(d + sizeof(len), &t, sizeof(t));
  if (n) memcpy(d + DG_HDR, p, n);
  *k->rlen += DG_HDR + n;
  return 0;
}

/* The next datagram: 1 with its bytes at *p (valid until the next push),
 * its length and receive time in k->dg_len, k->dg_t; 0 when none. */
static int queue_pop(ab__lx_conn_t *k, const uint8_t **p) {
  if (ab__lx_avail(k) < DG_HDR) return 0;
  const uint8_t *d = ab__lx_rdata(k);
  uint32_t len;
  memcpy(&len, d, sizeof(len));
  memcpy(&k->dg_t, d + sizeof(len), sizeof(k->dg_t));
  k->dg_len = len;
  *p = d + DG_HDR;
  ab__lx_consume(k, DG_HDR + len);
  return 1;
}

/* The datagram read last answers no call in flight: the late reply of the
 * oldest timed-out call still without one, else a stray (ESEQ). */
static void stray(ab__lx_conn_t *k) {
  ab__dclient_t *c = k->c;
  if (k->nlost > 0) {
    uint64_t seq = k->lost[k->lost_head];
    k->lost_head = (k->lost_head + 1) % (uint32_t)NLOST;
    k->nlost--;
    /* not in flight any more: the window counts it late */
    ab__win_complete_datagram(&c->h, phase_of(k, seq), c->h.id, seq, k->dg_t);
    return;
  }
  ab__loop_error(c->h.loop, AB_ESEQ, "udp client: a datagram that answers no call in flight");
}

static void lost_push(ab__lx_conn_t *k, uint64_t seq) {
  if (k->nlost == NLOST) { /* the oldest is too old to be answered now */
    k->lost_head = (k->lost_head + 1) % (uint32_t)NLOST;
    k->nlost--;
  }
  k->lost[(k->lost_head + k->nlost) % (uint32_t)NLOST] = seq;
  k->nlost++;
}

/* ---- the light form over datagrams ------------------------------------ */

/* Fills the window: one datagram per message, each stamped just before
 * its send. */
static void light_pump(ab__lx_conn_t *k) {
  ab__lx_loop_t *lx = k->lx;
  ab__dclient_t *c = k->c;
  ab__win_grant_t g;
  if (!c->h.alive || lx->stopping || ab__win_grant(&c->h, ab_now_ns(), &g) == 0) return;
  while (g.n > 0) {
    const char *p = lx->msg;
    size_t len = lx->msg_len;
    uint8_t tag = lx->msg_tag; /* the scenario's tag key (a constant message) */
    if (lx->msg_fn && ab__lx_light_message(lx, k, k->msg_i + 1, &p, &len, &tag) < 0) return;
    g.tag = tag; /* message's second value (engine/tags.h) */
    if (k->msg_i == 0) k->seq_base = g.seq;
    uint64_t seq, t;
    int stamped = stamp_one(k, &g, &seq, &t);
    int r = 0;
    if (stamped) {
      k->msg_i++;
      r = try_send(k, p, len);
    }
    if (lx->msg_fn) lua_pop(lx->L, 1);
    if (!stamped) return;
    if (r < 0) {
      if (transient(r)) lost_at_send(k, r);
      else ab__client_fail(c, r, "udp send");
      return;
    }
  }
}

/* expect(d, id, last) on the loop's state: 1 with *seq the message the
 * datagram answers, 0 when it answers none, -1 after a script error. */
static int light_expect(ab__lx_loop_t *lx, ab__lx_conn_t *k, const uint8_t *p, size_t n, uint64_t *seq) {
  lua_State *L = lx->L;
  const ab__win_t *w = &k->c->h.win;
  lua_pushvalue(L, AB__LX_IDX_EXPECT);
  lua_pushlstring(L, (const char *)p, n);
  lua_pushnumber(L, k->id);
  lua_pushnumber(L, (lua_Number)k->msg_i);
  if (lua_pcall(L, 3, 1, AB__LX_IDX_TRACEBACK) != 0) {
    ab__lx_script_error(lx, lua_tostring(L, -1));
    lua_pop(L, 1);
    return -1;
  }
  int t = lua_type(L, -1);
  double v = t == LUA_TNUMBER ? lua_tonumber(L, -1) : 0;
  if (t == LUA_TNIL || (t == LUA_TBOOLEAN && !lua_toboolean(L, -1))) {
    lua_pop(L, 1);
    return 0;
  }
  if (t == LUA_TBOOLEAN) { /* true: the oldest in flight */
    lua_pop(L, 1);
    if (w->inflight == 0) return 0;
    *seq = w->seq[w->age_head];
    return 1;
  }
  if (t == LUA_TNUMBER && v >= 1 && v <= (double)k->msg_i && v == (double)(uint64_t)v) {
    lua_pop(L, 1);
    *seq = k->seq_base + (uint64_t)v - 1;
    return 1;
  }
  const char *got = t == LUA_TNUMBER ? lua_pushfstring(L, "%f", v) : luaL_typename(L, -1);
  if (t != LUA_TNUMBER) lua_pushnil(L);
  const char *at = ab__lx_fn_where(L, AB__LX_IDX_EXPECT);
  ab__lx_script_error(lx, lua_pushfstring(L, "%s: expect(d, id, last) returned %s; expected the "
                                          "number i (1 .. last = %d) of the message the datagram "
                                          "answers, true (the oldest in flight) or nil (none)",
                                          at, got, (int)k->msg_i));
  lua_pop(L, 4);
  return -1;
}

static void light_reply(ab__lx_conn_t *k, const uint8_t *p, size_t n, uint64_t now) {
  ab__lx_loop_t *lx = k->lx;
  ab__dclient_t *c = k->c;
  ab__loop_t *l = lx->l;
  const ab__win_t *w = &c->h.win;
  uint64_t seq;
  if (lx->expect_kind == AB__LX_EXP_FN) {
    int r = light_expect(lx, k, p, n, &seq);
    if (r < 0) return;
    if (r == 0) {
      ab__loop_error(l, AB_ESEQ, "udp client: a datagram that expect says answers no message");
      return;
    }
  } else {
    if (n != lx->expect_len) {
      ab__loop_error(l, AB_ESIZE, "udp client: a reply datagram whose length is not expect's");
      return;
    }
    if (w->inflight == 0) {
      ab__loop_error(l, AB_ESEQ, "udp client: a datagram with no message in flight");
      return;
    }
    seq = w->seq[w->age_head];
  }
  int r = ab__win_complete_datagram(&c->h, phase_of(k, seq), c->h.id, seq, now);
  if (r < 0) {
    ab__loop_error(l, r, "udp client: a reply to a message never sent");
    return;
  }
  if (r == AB__WIN_NONE) return; /* late or duplicated: counted */
  if (r == AB__WIN_MEASURED) lx->reply_bytes += n;
  light_pump(k);
  ab__loop_check_progress(l);
}

/* ---- the socket -------------------------------------------------------- */

static void on_recv(uv_udp_t *u, ssize_t n, const uv_buf_t *buf, const struct sockaddr *from,
                    unsigned flags) {
  ab__dclient_t *c = u->data;
  ab__loop_t *l = c->h.loop;
  ab__lx_loop_t *lx = l->drv_state;
  ab__lx_conn_t *k = ab__lx_conn_of(lx, c);
  if (n < 0) {
    /* ECONNREFUSED from an ICMP port unreachable: counted, the socket goes on */
    ab__loop_error(l, (int)n, n == UV_ECONNREFUSED ? "udp client: receive: the target's port is "
                                                     "closed (an ICMP port unreachable came back)"
                                                   : "udp client: receive");
    return;
  }
  if (from == NULL || !c->h.alive || lx->stopping) return;
  uint64_t now = ab_now_ns();
  if (flags & UV_UDP_PARTIAL) {
    ab__loop_error(l, AB_ESIZE, "udp client: a datagram over 64 KiB, cut short");
    return;
  }
  if (lx->mode == AB__LX_MODE_LIGHT) {
    light_reply(k, (const uint8_t *)buf->base, (size_t)n, now);
    return;
  }
  int r = queue_push(k, (const uint8_t *)buf->base, (size_t)n, now);
  if (r < 0) {
    ab__loop_error(l, r, "udp client: 4 MiB of datagrams the client function did not read: dropped");
    return;
  }
  if (k->waiting && ab__lx_want_met(k)) ab__lx_wake(k);
}

void ab__lx_udp_client_start(ab__client_t *hc) {
  ab__dclient_t *c = AB__DC(hc);
  ab__loop_t *l = c->h.loop;
  ab__lx_loop_t *lx = l->drv_state;
  ab__lx_conn_t *k = ab__lx_conn_of(lx, c);
  k->magic = AB__LX_MAGIC;
  k->lx = lx;
  k->is_client = 1;
  k->id = c->h.id;
  k->c = c;
  k->conn = &c->conn;
  k->rbuf = &c->rbuf;
  k->rcap = &c->rcap;
  k->rlen = &c->rlen;
  k->co_ref = LUA_NOREF;
  k->meas_seq0 = UINT64_MAX;
  if (!lx->stopping) ab__udp_socket_open(c, (const struct sockaddr *)&l->connect_addr, on_recv);
  /* a datagram socket is ready as soon as it is open */
  ab__client_connect_done(&c->h);
  /* the light form's window fills when a sending phase begins (wake) */
  if (c->h.alive && !lx->stopping && lx->mode == AB__LX_MODE_FULL) ab__lx_start_client(k);
}

void ab__lx_udp_client_wake(ab__client_t *hc) {
  ab__dclient_t *c = AB__DC(hc);
  ab__lx_loop_t *lx = c->h.loop->drv_state;
  ab__lx_conn_t *k = ab__lx_conn_of(lx, c);
  if (k->magic != AB__LX_MAGIC || lx->stopping || !c->h.alive) return;
  if (lx->mode == AB__LX_MODE_LIGHT) {
    light_pump(k);
    return;
  }
  if (k->call_active && ab__dg_find(&c->h.win, k->call_seq) == AB__DG_NIL) {
    /* the sweep timed the call out (counted timed_out); its reply may
     * still come, late */
    k->call_active = 0;
    k->call_timedout = 1;
    lost_push(k, k->call_seq);
    if (k->waiting && k->want != AB__LX_W_NONE) ab__lx_wake(k);
    return;
  }
  if (k->waiting && k->want == AB__LX_W_PHASE) ab__lx_wake(k);
}

void ab__lx_udp_boot_check(lua_State *L, ab__lx_loop_t *lx, const char *path) {
  if (lx->ref_server != LUA_NOREF) {
    lua_pushfstring(L, "%s: execution = \"lua\" over udp runs a client only: remove server = "
                       "function(conn) (the built-in udp echo answers a run without target)", path);
    lua_error(L);
  }
  if (lx->expect_kind == AB__LX_EXP_LINE) {
    lua_pushfstring(L, "%s: execution = \"lua\" over udp: expect = \"line\" means nothing for "
                       "datagrams; give a length or function(d, id, last)", path);
    lua_error(L);
  }
}

/* ---- the datagram primitives of the conn methods (full form) --------- */

static ab__lx_conn_t *arg_conn(lua_State *L) {
  ab__lx_conn_t *k = lua_touserdata(L, 1);
  if (k == NULL || lua_type(L, 1) != LUA_TLIGHTUSERDATA || k->magic != AB__LX_MAGIC)
    luaL_argerror(L, 1, "not an arkbench connection");
  return k;
}

/* Nothing to return: the connection's error once, then false (waiting
 * parks the task until the run ends); or false, waiting for `want`. */
static int not_yet(lua_State *L, ab__lx_conn_t *k, long want) {
  if (conn_dead(k)) {
    if (!k->reported) {
      k->reported = 1;
      return ab_lua_fail(L, k->err ? k->err : AB_ECLOSED);
    }
    want = AB__LX_W_NONE;
  }
  k->want = want;
  lua_pushboolean(L, 0);
  return 1;
}

/* dg_send(k, s) -> true | nil, err, code: one datagram, untimed */
static int f_dg_send(lua_State *L) {
  ab__lx_conn_t *k = arg_conn(L);
  size_t n;
  const char *p = luaL_checklstring(L, 2, &n);
  if (conn_dead(k)) return ab_lua_fail(L, k->err ? k->err : AB_ECLOSED);
  int r = try_send(k, p, n);
  if (r < 0) {
    if (!transient(r)) ab__lx_conn_failed(k, r, "udp send");
    return ab_lua_fail(L, r);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* dg_recv(k, in_call) -> the next datagram | false (wait) | nil, err,
 * code (in a call: ETIMEDOUT once when the sweep timed it out) */
static int f_dg_recv(lua_State *L) {
  ab__lx_conn_t *k = arg_conn(L);
  if (lua_toboolean(L, 2) && k->call_timedout) {
    k->call_timedout = 0;
    lua_pushnil(L);
    lua_pushliteral(L, "ETIMEDOUT: no reply within the timeout");
    lua_pushliteral(L, "ETIMEDOUT");
    return 3;
  }
  const uint8_t *p;
  if (queue_pop(k, &p)) {
    lua_pushlstring(L, (const char *)p, k->dg_len);
    return 1;
  }
  return not_yet(L, k, AB__LX_W_ANY);
}

/* dg_call_begin(k, request, tag) -> true (sent and timed) | false (not
 * sending now: wait for the next phase) | nil, err, code; tag: the case's
 * tag id (lua_exec_tags.c), 0 for none */
static int f_dg_call_begin(lua_State *L) {
  ab__lx_conn_t *k = arg_conn(L);
  size_t n;
  const char *p = luaL_checklstring(L, 2, &n);
  if (!k->is_client) return luaL_error(L, "conn:call is for client connections");
  if (conn_dead(k)) return not_yet(L, k, AB__LX_W_NONE);
  /* what came before the request answers no call of it */
  const uint8_t *d;
  while (queue_pop(k, &d)) stray(k);
  k->call_timedout = 0;
  ab__win_grant_t g;
  uint64_t seq, t;
  if (ab__win_grant(&k->c->h, ab_now_ns(), &g) == 0) return not_yet(L, k, AB__LX_W_PHASE);
  g.tag = (uint8_t)lua_tointeger(L, 3);
  if (!stamp_one(k, &g, &seq, &t)) return not_yet(L, k, AB__LX_W_PHASE);
  k->call_seq = seq;
  k->call_t0 = t;
  k->call_active = 1;
  int r = try_send(k, p, n);
  if (r < 0 && transient(r)) {
    lost_at_send(k, r); /* sent and lost: the call times out */
  } else if (r < 0) {
    k->call_active = 0;
    k->reported = 1;
    ab__lx_conn_failed(k, r, "udp send");
    return ab_lua_fail(L, r);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* dg_call_end(k) -> true | nil, err, code: the datagram read last is the
 * reply of the call in flight */
static int f_dg_call_end(lua_State *L) {
  ab__lx_conn_t *k = arg_conn(L);
  ab__dclient_t *c = k->c;
  ab__loop_t *l = c->h.loop;
  if (!k->call_active) return ab_lua_fail(L, AB_ETIMEDOUT);
  k->call_active = 0;
  uint64_t t = k->dg_t > k->call_t0 ? k->dg_t : k->call_t0;
  int late = t - k->call_t0 > l->timeout_ns;
  int r = ab__win_complete_datagram(&c->h, phase_of(k, k->call_seq), c->h.id, k->call_seq, t);
  if (r == AB__WIN_MEASURED) k->lx->reply_bytes += k->dg_len;
  ab__loop_check_progress(l);
  /* later than the timeout (timed_out and late, by the window), or
   * released meanwhile (the run's end) */
  if (late || r < 0 || r == AB__WIN_NONE) {
    lua_pushnil(L);
    lua_pushliteral(L, "ETIMEDOUT: the reply came after the timeout");
    lua_pushliteral(L, "ETIMEDOUT");
    return 3;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* dg_stray(k): the datagram read last answers no call in flight */
static int f_dg_stray(lua_State *L) {
  stray(arg_conn(L));
  return 0;
}

void ab__lx_udp_prims(lua_State *L) {
  static const luaL_Reg prims[] = {{"dg_send", f_dg_send},         {"dg_recv", f_dg_recv},
                                   {"dg_call_begin", f_dg_call_begin},
                                   {"dg_call_end", f_dg_call_end}, {"dg_stray", f_dg_stray},
                                   {NULL, NULL}};
  for (const luaL_Reg *r = prims; r->name; r++) {
    lua_pushcfunction(L, r->func);
    lua_setfield(L, -2, r->name);
  }
}
