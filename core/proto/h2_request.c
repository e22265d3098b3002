/* h2_request.c -- request mode's plan for HTTP/2 (h2.h): the rotation of
 * ab_http_request_opts_t entries as nghttp2 header lists, built once. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "base/ab_error.h"
#include "proto/h2.h"

/* Headers HTTP/2 forbids (RFC 9113 8.2.2), and Host (:authority). */
static int dropped(const char *name, size_t n) {
  static const char *const names[] = {"connection", "keep-alive", "proxy-connection",
                                      "transfer-encoding", "upgrade", "host"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    if (strlen(names[i]) == n && strncasecmp(names[i], name, n) == 0) return 1;
  return 0;
}

static int wants_length(const char *m) {
  return strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0 || strcmp(m, "PATCH") == 0;
}

/* Copies s[0..n) into the store at *at (lower-cased when lower) and
 * returns where it went. */
static uint8_t *put(char **at, const char *s, size_t n, int lower) {
  char *d = *at;
  for (size_t i = 0; i < n; i++) d[i] = lower ? (char)tolower((unsigned char)s[i]) : s[i];
  d[n] = '\0';
  *at += n + 1;
  return (uint8_t *)d;
}

static int build_one(const ab_http_request_opts_t *o, const char *host, int tls, ab_h2_req_t *r) {
  const char *m = o->method ? o->method : "GET";
  const char *path = o->path ? o->path : "/";
  const char *hd = o->headers ? o->headers : "";
  size_t lines = 0;
  for (const char *p = hd; (p = strstr(p, "\r\n")) != NULL; p += 2) lines++;
  size_t cap = strlen(m) + strlen(path) + strlen(host) + strlen(hd) + 64 + 4 * 8;
  nghttp2_nv *nv = calloc(5 + lines, sizeof(*nv));
  char *store = malloc(cap);
  if (nv == NULL || store == NULL) {
    free(nv);
    free(store);
    return AB_ENOMEM;
  }
  char *at = store;
  size_t k = 0;
#define NV(nm, nml, val, vall, low)                                                    \
  do {                                                                                 \
    nv[k].name = put(&at, nm, nml, 1);                                                 \
    nv[k].namelen = nml;                                                               \
    nv[k].value = put(&at, val, vall, low);                                            \
    nv[k].valuelen = vall;                                                             \
    nv[k].flags = NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE;        \
    k++;                                                                               \
  } while (0)
  /* the authority: the entry's Host header wins */
  const char *auth = host;
  size_t authl = strlen(host);
  for (const char *p = hd; *p;) {
    const char *e = strstr(p, "\r\n"), *colon = strchr(p, ':');
    if (e == NULL) break;
    if (colon && colon < e && colon - p == 4 && strncasecmp(p, "host", 4) == 0) {
      const char *v = colon + 1;
      while (v < e && (*v == ' ' || *v == '\t')) v++;
      auth = v;
      authl = (size_t)(e - v);
    }
    p = e + 2;
  }
  NV(":method", 7, m, strlen(m), 0);
  NV(":scheme", 7, tls ? "https" : "http", tls ? 5 : 4, 0);
  NV(":authority", 10, auth, authl, 0);
  NV(":path", 5, path, strlen(path), 0);
  for (const char *p = hd; *p;) {
    const char *e = strstr(p, "\r\n"), *colon = strchr(p, ':');
    if (e == NULL) break;
    if (colon && colon < e && !dropped(p, (size_t)(colon - p))) {
      const char *v = colon + 1;
      while (v < e && (*v == ' ' || *v == '\t')) v++;
      const char *ve = e;
      while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
      NV(p, (size_t)(colon - p), v, (size_t)(ve - v), 0);
    }
    p = e + 2;
  }
  if (o->body != NULL || wants_length(m)) {
    char len[24];
    int ln = snprintf(len, sizeof(len), "%llu", (unsigned long long)o->body_len);
    NV("content-length", 14, len, (size_t)ln, 0);
  }
#undef NV
  r->nv = nv;
  r->nnv = k;
  r->store = store;
  r->body = (const uint8_t *)o->body;
  r->body_len = o->body ? o->body_len : 0;
  return 0;
}

void ab_h2_plan_free(ab_h2_plan_t *p) {
  if (p == NULL) return;
  if (p->reqs && p->http)
    for (uint32_t i = 0; i < p->http->n; i++) {
      free(p->reqs[i].nv);
      free(p->reqs[i].store);
    }
  free(p->reqs);
  ab_http_plan_free(p->http);
  free(p);
}

int ab_h2_plan_new(const ab_http_request_opts_t *reqs, uint32_t n, const char *host, int tls,
                   ab_h2_plan_t **out, char *err, size_t errlen) {
  *out = NULL;
  ab_h2_plan_t *p = calloc(1, sizeof(*p));
  if (p == NULL) return AB_ENOMEM;
  /* the HTTP/1.1 plan validates every entry and holds the success sets */
  int r = ab_http_plan_new(reqs, n, host, &p->http, err, errlen);
  if (r == 0 && (p->reqs = calloc(n, sizeof(*p->reqs))) == NULL) r = AB_ENOMEM;
  for (uint32_t i = 0; r == 0 && i < n; i++)
    r = build_one(&reqs[i], host ? host : "127.0.0.1", tls, &p->reqs[i]);
  if (r < 0) {
    if (r == AB_ENOMEM) snprintf(err, errlen, "out of memory building the requests");
    ab_h2_plan_free(p);
    return r;
  }
  *out = p;
  return 0;
}

int ab_h2_plan_split(ab_h2_plan_t *p, const uint32_t *counts, uint32_t nconns, char *err,
                     size_t errlen) {
  return ab_http_plan_split(p->http, counts, nconns, err, errlen);
}
