/* lua_exec_light.c -- execution = "lua", the light form: message = bytes |
 * function(i), expect = length | "line" | function(buf).  C connects,
 * keeps `window` messages in flight, writes and parses like the callback
 * echo (tcp_client.c), and calls Lua only to build a message (when message
 * is a function) and to find where a reply ends (when expect is a
 * function).  Those calls run on the loop's main state with the handler,
 * message and expect in the stack slots AB__LX_IDX_* (lx_loop_open).
 */
#include "lua/lua_exec_int.h"

#include <math.h>
#include <string.h>

#include <lauxlib.h>

#include "base/ab_error.h"
#include "base/clock.h"

/* "file:line" where the function at idx was defined. */
static const char *fn_where(lua_State *L, int idx) {
  lua_Debug ar;
  lua_pushvalue(L, idx);
  if (!lua_getinfo(L, ">S", &ar)) return lua_pushstring(L, "?"), lua_tostring(L, -1);
  return lua_pushfstring(L, "%s:%d", ar.short_src, ar.linedefined);
}

/* The tag message(i) returned (on top of the stack, popped) into *tag:
 * nil is none, a string the case's id of that name (lua_exec_tags.c).
 * 0, or -1 after a script error (stack as it was below the tag). */
static int light_tag(ab__lx_loop_t *lx, uint64_t i, uint8_t *tag) {
  lua_State *L = lx->L;
  int t = lua_type(L, -1);
  *tag = 0;
  if (t == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  const char *why = NULL;
  int id = t == LUA_TSTRING ? ab__lx_tag_of(lx, -1, &why) : -1;
  if (id > 0) {
    *tag = (uint8_t)id;
    lua_pop(L, 1);
    return 0;
  }
  if (why == NULL) why = lua_pushfstring(L, "its second value is %s; expected nil or a tag name "
                                            "(a string)", luaL_typename(L, -1));
  const char *at = fn_where(L, AB__LX_IDX_MESSAGE);
  ab__lx_script_error(lx, lua_pushfstring(L, "%s: message(%d): %s", at, (int)i, why));
  lua_pop(L, 4);
  return -1;
}

/* message(i, id) on the loop's state -> bytes[, tag]; leaves the string
 * on the stack, its tag in *tag.  0, or -1 after a script error (stack
 * clean). */
static int light_message(ab__lx_loop_t *lx, ab__lx_conn_t *k, uint64_t i, const char **p, size_t *n,
                         uint8_t *tag) {
  lua_State *L = lx->L;
  lua_pushvalue(L, AB__LX_IDX_MESSAGE);
  lua_pushnumber(L, (lua_Number)i);
  lua_pushnumber(L, k->id);
  if (lua_pcall(L, 2, 2, AB__LX_IDX_TRACEBACK) != 0) {
    ab__lx_script_error(lx, lua_tostring(L, -1));
    lua_pop(L, 1);
    return -1;
  }
  if (light_tag(lx, i, tag) < 0) {
    lua_pop(L, 1);
    return -1;
  }
  if (lua_type(L, -1) != LUA_TSTRING) {
    const char *at = fn_where(L, AB__LX_IDX_MESSAGE);
    ab__lx_script_error(lx, lua_pushfstring(L, "%s: message(%d) returned %s; expected a string (the "
                                        "request's bytes)", at, (int)i, luaL_typename(L, -2)));
    lua_pop(L, 3);
    return -1;
  }
  *p = lua_tolstring(L, -1, n);
  if (*n == 0) {
    const char *at = fn_where(L, AB__LX_IDX_MESSAGE);
    ab__lx_script_error(lx, lua_pushfstring(L, "%s: message(%d) returned an empty string; "
                                        "expected the request's bytes", at, (int)i));
    lua_pop(L, 3);
    return -1;
  }
  return 0;
}

/* expect(buf): 1 and *used, 0 (incomplete), -1 after a script error. */
static int light_expect(ab__lx_loop_t *lx, const uint8_t *p, size_t n, size_t *used) {
  lua_State *L = lx->L;
  lua_pushvalue(L, AB__LX_IDX_EXPECT);
  lua_pushlstring(L, (const char *)p, n);
  if (lua_pcall(L, 1, 1, AB__LX_IDX_TRACEBACK) != 0) {
    ab__lx_script_error(lx, lua_tostring(L, -1));
    lua_pop(L, 1);
    return -1;
  }
  int t = lua_type(L, -1);
  if (t == LUA_TNIL || (t == LUA_TBOOLEAN && !lua_toboolean(L, -1))) {
    lua_pop(L, 1);
    return 0;
  }
  double v = t == LUA_TNUMBER ? lua_tonumber(L, -1) : -1;
  if (!(v >= 1 && v <= (double)n && v == floor(v))) {
    const char *got = t == LUA_TNUMBER ? lua_pushfstring(L, "%f", v) : luaL_typename(L, -1);
    if (t != LUA_TNUMBER) lua_pushnil(L);
    const char *at = fn_where(L, AB__LX_IDX_EXPECT);
    ab__lx_script_error(lx, lua_pushfstring(L, "%s: expect(buf) returned %s; expected nil (reply "
                                        "incomplete) or an integer from 1 to #buf (%d)",
                                     at, got, (int)n));
    lua_pop(L, 4);
    return -1;
  }
  lua_pop(L, 1);
  *used = (size_t)v;
  return 1;
}

/* Fills the window: builds the messages, stamps them with one clock
 * reading just before they reach the socket, writes them in one batch. */
void ab__lx_light_pump(ab__lx_conn_t *k) {
  ab__lx_loop_t *lx = k->lx;
  ab__dclient_t *c = k->c;
  ab__win_grant_t g;
  if (!c->h.alive || lx->stopping || ab__win_grant(&c->h, ab_now_ns(), &g) == 0) return;
  uint32_t n = g.n;
  ab_outbuf_t *out = ab_conn_out(k->conn);
  size_t total = 0;
  for (uint32_t i = 0; i < n; i++) {
    const char *p = lx->msg;
    size_t len = lx->msg_len;
    if (lx->msg_fn && light_message(lx, k, k->msg_i + 1 + i, &p, &len, &lx->tagbuf[i]) < 0) return;
    uint8_t *dst = len ? ab_outbuf_reserve(out, total + len) : NULL;
    if (len && dst == NULL) {
      if (lx->msg_fn) lua_pop(lx->L, 1);
      ab__client_fail(c, AB_ENOMEM, "send buffer");
      return;
    }
    if (len) memcpy(dst + total, p, len);
    total += len;
    if (lx->msg_fn) lua_pop(lx->L, 1);
  }
  if (lx->msg_fn) g.tags = lx->tagbuf; /* message's second values */
  else g.tag = lx->msg_tag;              /* the scenario's tag key */
  /* built too late: never sent, never counted */
  if (ab__win_stamp(&c->h, &g, n, ab_now_ns()) == 0) return;
  k->msg_i += n;
  ab_outbuf_commit(out, total);
  int r = ab_conn_flush(k->conn);
  if (r < 0) ab__lx_conn_failed(k, r, "write");
}

/* Completes every whole reply in the buffer (in order: the oldest round
 * trip in flight), then refills the window. */
void ab__lx_light_parse(ab__lx_conn_t *k) {
  ab__lx_loop_t *lx = k->lx;
  ab__dclient_t *c = k->c;
  ab__loop_t *l = lx->l;
  int got = 0;
  while (c->h.alive && !lx->stopping) {
    size_t have = ab__lx_avail(k), used = 0;
    if (have == 0) break;
    const uint8_t *p = ab__lx_rdata(k);
    if (lx->expect_kind == AB__LX_EXP_LEN) {
      if (have < lx->expect_len) break;
      used = lx->expect_len;
    } else if (lx->expect_kind == AB__LX_EXP_LINE) {
      const uint8_t *nl = memchr(p, '\n', have);
      if (nl == NULL) break;
      used = (size_t)(nl - p) + 1;
    } else {
      /* expect(buf) sees a prefix first: twice the last reply's size, not
       * the whole pipelined buffer (a copy per call).  A reply may arrive
       * split anywhere, so a correct expect answers nil to any prefix that
       * is not a whole reply; then it sees everything buffered. */
      size_t show = k->hint && k->hint < have ? k->hint : have;
      int r = light_expect(lx, p, show, &used);
      if (r == 0 && show < have) r = light_expect(lx, p, show = have, &used);
      if (r <= 0) break;
      k->hint = used < 32 ? 64 : 2 * used;
    }
    int r = ab__win_complete_oldest(&c->h, k->now);
    if (r == AB_ESEQ && l->phase >= AB__PH_DONE) { /* late, after a forced end: dropped */
      ab__lx_consume(k, have);
      break;
    }
    if (r < 0) {
      ab__client_fail(c, r, r == AB_ETIMEDOUT ? "no reply within the timeout"
                                              : "reply with no request in flight");
      return;
    }
    if (r == AB__WIN_MEASURED) lx->reply_bytes += used;
    ab__lx_consume(k, used);
    got = 1;
  }
  if (got && c->h.alive) {
    ab__lx_light_pump(k);
    ab__loop_check_progress(l);
  }
}

/* For the light form over datagrams (lua_exec_udp.c). */
int ab__lx_light_message(ab__lx_loop_t *lx, ab__lx_conn_t *k, uint64_t i, const char **p, size_t *n,
                         uint8_t *tag) {
  return light_message(lx, k, i, p, n, tag);
}

const char *ab__lx_fn_where(lua_State *L, int idx) { return fn_where(L, idx); }
