/* lua_request.h -- the case's `request` and `tls.verify` keys into the
 * case config (http, https request mode; docs/protocols.md "Request
 * mode"), and the run object's `http` table. */
#ifndef AB_LUA_REQUEST_H
#define AB_LUA_REQUEST_H

#include <stddef.h>

#include <lua.h>

#include "engine/engine.h"

/* What the config points into while the run goes (freed by
 * ab_lua_requests_free). */
typedef struct {
  ab_http_request_opts_t *reqs;
  char **headers;          /* one joined "Name: value\r\n..." per entry */
  uint16_t *status;        /* every entry's success set, back to back */
  uint32_t n;
  uint32_t *conn_counts;   /* request_conns: each connection's list length */
  uint32_t *conn_first;    /* ... and where it starts */
  uint32_t nconns;
  char host[300];          /* the Host header: target, default port dropped */
  /* the entries' tags (engine/tags.h): distinct names in order of first
   * use (strings of the case table), and entry i's tag id (0: none) */
  const char *tag_names[AB_TAGS_MAX];
  uint32_t ntags;
  uint8_t *tag_rot;
} ab_lua_requests_t;

/* Reads case.request (a list of {method=, path=, headers={"Name: value",
 * ...}, body=, status={...}, tag=}, as the scenario check normalised it;
 * with case.request_conns = {n1, n2, ...}, connection k's own list is the
 * next n(k+1) of them: request = function(i, conn), arkbench.cmd.worker)
 * and tls.verify from the case table at index 1 into cfg->transport, and
 * the entries' tags into cfg's tag fields (a tagged case when any entry
 * has one).  0, or -1 with a sentence in err. */
int ab_lua_read_request(lua_State *L, ab_case_cfg_t *cfg, ab_lua_requests_t *keep, char *err,
                        size_t errlen);
void ab_lua_requests_free(ab_lua_requests_t *keep);

/* In request mode: result.http = { status = { ["200"] = n, ... } } and
 * payload_mib_per_s = 0 (no payload is sent), and
 * with tls.verify = false, result.tls.verify = false (the table on top of
 * the stack is the result). */
void ab_lua_push_http(lua_State *L, const ab_case_cfg_t *cfg, const ab_result_t *r);

#endif
