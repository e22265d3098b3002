/* lua_request.c -- see lua_request.h. */
#include "lua/lua_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "base/ab_error.h"
#include "proto/caps.h"

static const char *field_string(lua_State *L, int t, const char *key, size_t *len) {
  lua_getfield(L, t, key);
  const char *s = lua_isstring(L, -1) ? lua_tolstring(L, -1, len) : NULL;
  lua_pop(L, 1); /* the string stays referenced by the case table */
  return s;
}

/* Entry i's headers list joined into "Name: value\r\n" lines. */
static char *join_headers(lua_State *L, int t) {
  lua_getfield(L, t, "headers");
  size_t total = 1;
  int n = lua_istable(L, -1) ? (int)lua_objlen(L, -1) : 0;
  for (int k = 1; k <= n; k++) {
    lua_rawgeti(L, -1, k);
    size_t len = 0;
    if (lua_isstring(L, -1)) lua_tolstring(L, -1, &len);
    total += len + 2;
    lua_pop(L, 1);
  }
  char *out = malloc(total), *d = out;
  if (out == NULL) {
    lua_pop(L, 1);
    return NULL;
  }
  for (int k = 1; k <= n; k++) {
    lua_rawgeti(L, -1, k);
    size_t len = 0;
    const char *h = lua_isstring(L, -1) ? lua_tolstring(L, -1, &len) : "";
    memcpy(d, h, len);
    d += len;
    *d++ = '\r';
    *d++ = '\n';
    lua_pop(L, 1);
  }
  *d = '\0';
  lua_pop(L, 1);
  return out;
}

/* The Host header for a target "host:port" (brackets kept for IPv6): the
 * port dropped when it is the scheme's default. */
static void host_header(const char *target, int tls, char *out, size_t outlen) {
  snprintf(out, outlen, "%s", target);
  char *colon = strrchr(out, ':');
  if (colon && colon > out && colon[-1] != ':' &&
      strcmp(colon + 1, tls ? "443" : "80") == 0)
    *colon = '\0';
}

static int read_tls_verify(lua_State *L, ab_case_cfg_t *cfg) {
  lua_getfield(L, 1, "tls");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "verify");
    cfg->transport.tls_insecure = lua_isboolean(L, -1) && !lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return 0;
}

/* Entry i's tag (the table at t) into keep: its id in the rotation, a new
 * name added.  0, or -1 with a sentence in err. */
static int read_tag(lua_State *L, int t, ab_lua_requests_t *keep, uint32_t i, char *err,
                    size_t errlen) {
  size_t len = 0;
  const char *tag = field_string(L, t, "tag", &len);
  if (tag == NULL) return 0;
  uint32_t id = 0;
  while (id < keep->ntags && strcmp(keep->tag_names[id], tag) != 0) id++;
  if (id == keep->ntags) {
    if (keep->ntags == AB_TAGS_MAX || len == 0 || len > AB_TAG_NAME_MAX) {
      snprintf(err, errlen, "request %u: tag '%s': expected at most %d distinct tags of 1 to %d"
               " bytes", i + 1, tag, AB_TAGS_MAX, AB_TAG_NAME_MAX);
      return -1;
    }
    keep->tag_names[keep->ntags++] = tag;
  }
  keep->tag_rot[i] = (uint8_t)(id + 1);
  return 0;
}

/* case.request_conns (request = function(i, conn)): one list length per
 * connection, summing to the requests read. */
static int read_conn_counts(lua_State *L, ab_lua_requests_t *keep, char *err, size_t errlen) {
  lua_getfield(L, 1, "request_conns");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  int n = lua_istable(L, -1) ? (int)lua_objlen(L, -1) : 0;
  uint64_t sum = 0;
  if (n > 0) {
    keep->conn_counts = calloc((size_t)n, sizeof(uint32_t));
    keep->conn_first = calloc((size_t)n, sizeof(uint32_t));
  }
  if (n <= 0 || keep->conn_counts == NULL || keep->conn_first == NULL) {
    lua_pop(L, 1);
    snprintf(err, errlen, n <= 0 ? "request_conns must be a non-empty list of counts"
                                 : "out of memory reading the requests");
    return -1;
  }
  for (int k = 1; k <= n; k++) {
    lua_rawgeti(L, -1, k);
    double v = lua_tonumber(L, -1);
    lua_pop(L, 1);
    if (!(v >= 1 && v <= keep->n)) {
      lua_pop(L, 1);
      snprintf(err, errlen, "request_conns[%d] is not a count from 1 to %u", k, keep->n);
      return -1;
    }
    keep->conn_counts[k - 1] = (uint32_t)v;
    keep->conn_first[k - 1] = (uint32_t)sum;
    sum += (uint32_t)v;
  }
  lua_pop(L, 1);
  if (sum != keep->n) {
    snprintf(err, errlen, "request_conns sum to %llu, not the %u requests",
             (unsigned long long)sum, keep->n);
    return -1;
  }
  keep->nconns = (uint32_t)n;
  return 0;
}

/* Request entry i (1-based, the table at stack index t) into
 * keep->reqs[i - 1], its status codes written from *st on: 0, -1 with a
 * sentence in err, or AB_ENOMEM.  The stack is left as it was. */
static int read_entry(lua_State *L, int t, ab_lua_requests_t *keep, int i, uint16_t **st,
                      char *err, size_t errlen) {
  ab_http_request_opts_t *o = &keep->reqs[i - 1];
  o->method = field_string(L, t, "method", NULL);
  o->path = field_string(L, t, "path", NULL);
  o->body = field_string(L, t, "body", &o->body_len);
  if ((keep->headers[i - 1] = join_headers(L, t)) == NULL) return AB_ENOMEM;
  o->headers = keep->headers[i - 1];
  lua_getfield(L, t, "status");
  int k = lua_istable(L, -1) ? (int)lua_objlen(L, -1) : 0;
  o->status = *st;
  for (int j = 1; j <= k; j++) {
    lua_rawgeti(L, -1, j);
    double v = lua_tonumber(L, -1);
    *(*st)++ = v >= 0 && v < 65536 ? (uint16_t)v : 0;
    lua_pop(L, 1);
  }
  o->nstatus = (uint32_t)k;
  lua_pop(L, 1);
  return read_tag(L, t, keep, (uint32_t)i - 1, err, errlen) < 0 ? -1 : 0;
}

int ab_lua_read_request(lua_State *L, ab_case_cfg_t *cfg, ab_lua_requests_t *keep, char *err,
                        size_t errlen) {
  memset(keep, 0, sizeof(*keep));
  read_tls_verify(L, cfg);
  lua_getfield(L, 1, "request");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  int n = lua_istable(L, -1) ? (int)lua_objlen(L, -1) : 0;
  if (n <= 0) {
    lua_pop(L, 1);
    snprintf(err, errlen, "request must be a non-empty list of {method=, path=, ...}");
    return -1;
  }
  size_t nst = 0;
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    lua_getfield(L, -1, "status");
    if (lua_istable(L, -1)) nst += lua_objlen(L, -1);
    lua_pop(L, 2);
  }
  keep->n = (uint32_t)n;
  keep->reqs = calloc((size_t)n, sizeof(*keep->reqs));
  keep->headers = calloc((size_t)n, sizeof(char *));
  keep->status = calloc(nst + 1, sizeof(uint16_t));
  keep->tag_rot = calloc((size_t)n, 1);
  if (keep->reqs == NULL || keep->headers == NULL || keep->status == NULL || keep->tag_rot == NULL)
    goto nomem;
  uint16_t *st = keep->status;
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    int t = lua_gettop(L);
    if (!lua_istable(L, t)) {
      lua_pop(L, 2);
      snprintf(err, errlen, "request %d is not a table", i);
      return -1;
    }
    int r = read_entry(L, t, keep, i, &st, err, errlen);
    if (r == AB_ENOMEM) {
      lua_pop(L, 2);
      goto nomem;
    }
    if (r < 0) {
      lua_pop(L, 2);
      return -1;
    }
    lua_pop(L, 1);
  }
  if (keep->ntags > 0) {
    cfg->tagged = 1;
    cfg->tag_names = keep->tag_names;
    cfg->ntag_names = keep->ntags;
    cfg->tag_rot = keep->tag_rot;
    cfg->ntag_rot = keep->n;
  }
  lua_pop(L, 1);
  if (read_conn_counts(L, keep, err, errlen) < 0) return -1;
  lua_getfield(L, 1, "target");
  const char *target = lua_tostring(L, -1);
  host_header(target ? target : "127.0.0.1", cfg->protocol == AB_PROTO_HTTPS, keep->host,
              sizeof(keep->host));
  lua_pop(L, 1);
  cfg->transport.http_requests = keep->reqs;
  cfg->transport.http_nrequests = keep->n;
  cfg->transport.http_conn_counts = keep->conn_counts;
  cfg->transport.http_nconns = keep->nconns;
  if (cfg->tagged && keep->nconns > 0) {
    /* each connection's tags follow its own list */
    cfg->tag_rot_first = keep->conn_first;
    cfg->tag_rot_n = keep->conn_counts;
    cfg->ntag_rot_conns = keep->nconns;
  }
  cfg->transport.http_host = keep->host;
  return 0;
nomem:
  lua_pop(L, 1);
  snprintf(err, errlen, "out of memory reading the requests");
  return -1;
}

void ab_lua_requests_free(ab_lua_requests_t *keep) {
  for (uint32_t i = 0; keep->headers && i < keep->n; i++) free(keep->headers[i]);
  free(keep->headers);
  free(keep->reqs);
  free(keep->status);
  free(keep->tag_rot);
  free(keep->conn_counts);
  free(keep->conn_first);
  memset(keep, 0, sizeof(*keep));
}

void ab_lua_push_http(lua_State *L, const ab_case_cfg_t *cfg, const ab_result_t *r) {
  if (cfg->transport.tls_insecure) {
    lua_getfield(L, -1, "tls");
    if (lua_istable(L, -1)) {
      lua_pushboolean(L, 0);
      lua_setfield(L, -2, "verify");
    }
    lua_pop(L, 1);
  }
  if (cfg->transport.http_nrequests == 0) return;
  lua_pushnumber(L, 0); /* no payload is sent */
  lua_setfield(L, -2, "payload_mib_per_s");
  lua_newtable(L);
  lua_newtable(L);
  for (int code = 0; code < AB_REPLY_CODES; code++) {
    if (r->reply_codes[code] == 0) continue;
    char key[8];
    snprintf(key, sizeof(key), "%d", code);
    lua_pushnumber(L, (double)r->reply_codes[code]);
    lua_setfield(L, -2, key);
  }
  lua_setfield(L, -2, "status");
  lua_setfield(L, -2, "http");
}
