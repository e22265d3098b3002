/* http_request.c -- the request mode's plan (http.h): a case's requests
 * built once into the bytes every connection sends as they are.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/ab_error.h"
#include "proto/http.h"

#define DEC_MAX 20

/* RFC 9110 tchar */
static int is_tchar(unsigned char ch) {
  if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) return 1;
  return ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

static int visible(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] == 0x7f) return 0;
  return 1;
}

/* Whether the header lines (each "Name: value\r\n") are well formed; sets
 * *has_host when one of them is Host. */
static int headers_ok(const char *h, int *has_host) {
  *has_host = 0;
  while (*h) {
    const char *eol = strstr(h, "\r\n");
    const char *colon = strchr(h, ':');
    if (eol == NULL || colon == NULL || colon > eol || colon == h) return 0;
    for (const char *q = h; q < colon; q++)
      if (!is_tchar((unsigned char)*q)) return 0;
    for (const char *q = colon + 1; q < eol; q++)
      if (*q == '\r' || *q == '\n' || *q == '\0') return 0;
    if (colon - h == 4 && strncasecmp(h, "host", 4) == 0) *has_host = 1;
    h = eol + 2;
  }
  return 1;
}

static int wants_length(const char *m) {
  return strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0 || strcmp(m, "PATCH") == 0;
}

static int build_one(const ab_http_request_opts_t *o, const char *host, ab_http_req_t *r,
                     char *err, size_t errlen, uint32_t i) {
  const char *m = o->method ? o->method : "GET";
  const char *path = o->path ? o->path : "/";
  const char *hd = o->headers ? o->headers : "";
  size_t ml = strlen(m), pl = strlen(path), hl = strlen(hd), hostl = strlen(host);
  int has_host = 0;
  if (ml == 0) goto bad_method;
  for (size_t k = 0; k < ml; k++)
    if (!is_tchar((unsigned char)m[k])) goto bad_method;
  if (path[0] != '/' || !visible(path, pl)) {
    snprintf(err, errlen, "request %u: path must start with '/' and hold no spaces or control"
             " characters", i + 1);
    return AB_EINVAL;
  }
  if (!headers_ok(hd, &has_host)) {
    snprintf(err, errlen, "request %u: headers must be \"Name: value\" lines", i + 1);
    return AB_EINVAL;
  }
  if (!has_host && (hostl == 0 || hostl > AB_HTTP_HOST_MAX || !visible(host, hostl))) {
    snprintf(err, errlen, "request %u: the Host header '%s' is not valid", i + 1, host);
    return AB_EINVAL;
  }
  for (uint32_t k = 0; k < o->nstatus; k++) {
    if (o->status[k] < 100 || o->status[k] >= AB_HTTP_STATUS_END) {
      snprintf(err, errlen, "request %u: status %u is not from 100 to 599", i + 1,
               (unsigned)o->status[k]);
      return AB_EINVAL;
    }
    r->ok[o->status[k] >> 6] |= (uint64_t)1 << (o->status[k] & 63);
  }
  if (o->nstatus == 0)
    for (int st = 200; st < 300; st++) r->ok[st >> 6] |= (uint64_t)1 << (st & 63);
  int with_len = o->body != NULL || wants_length(m);
  size_t cap = ml + 1 + pl + sizeof(" HTTP/1.1\r\nHost: \r\n") + hostl + hl +
               sizeof("Content-Length: \r\n") + DEC_MAX + 2 + o->body_len + 1;
  char *b = malloc(cap);
  if (b == NULL) return AB_ENOMEM;
  int n = snprintf(b, cap, "%s %s HTTP/1.1\r\n", m, path);
  if (!has_host) n += snprintf(b + n, cap - (size_t)n, "Host: %s\r\n", host);
  memcpy(b + n, hd, hl);
  n += (int)hl;
  if (with_len)
    n += snprintf(b + n, cap - (size_t)n, "Content-Length: %llu\r\n",
                  (unsigned long long)o->body_len);
  b[n++] = '\r';
  b[n++] = '\n';
  if (o->body_len) memcpy(b + n, o->body, o->body_len);
  r->bytes = (uint8_t *)b;
  r->len = (size_t)n + o->body_len;
  r->head = strcmp(m, "HEAD") == 0;
  return 0;
bad_method:
  snprintf(err, errlen, "request %u: method '%s' is not an HTTP token", i + 1, m);
  return AB_EINVAL;
}

int ab_http_plan_new(const ab_http_request_opts_t *reqs, uint32_t n, const char *host,
                     ab_http_plan_t **out, char *err, size_t errlen) {
  *out = NULL;
  if (n == 0 || reqs == NULL) {
    snprintf(err, errlen, "no requests");
    return AB_EINVAL;
  }
  ab_http_plan_t *p = calloc(1, sizeof(*p));
  if (p == NULL || (p->reqs = calloc(n, sizeof(*p->reqs))) == NULL) {
    free(p);
    return AB_ENOMEM;
  }
  p->n = n;
  for (uint32_t i = 0; i < n; i++) {
    int r = build_one(&reqs[i], host ? host : "127.0.0.1", &p->reqs[i], err, errlen, i);
    if (r < 0) {
      if (r == AB_ENOMEM) snprintf(err, errlen, "out of memory building the requests");
      ab_http_plan_free(p);
      return r;
    }
    if (p->reqs[i].len > p->max_len) p->max_len = p->reqs[i].len;
  }
  *out = p;
  return 0;
}

int ab_http_plan_split(ab_http_plan_t *p, const uint32_t *counts, uint32_t nconns, char *err,
                       size_t errlen) {
  uint64_t sum = 0;
  for (uint32_t k = 0; k < nconns; k++) {
    if (counts[k] == 0) {
      snprintf(err, errlen, "connection %u has no request", k);
      return AB_EINVAL;
    }
    sum += counts[k];
  }
  if (nconns == 0 || sum != p->n) {
    snprintf(err, errlen, "the connections' lists hold %llu requests, the plan %u",
             (unsigned long long)sum, p->n);
    return AB_EINVAL;
  }
  if ((p->conns = calloc(nconns, sizeof(*p->conns))) == NULL) return AB_ENOMEM;
  uint32_t first = 0;
  for (uint32_t k = 0; k < nconns; k++) {
    p->conns[k].first = first;
    p->conns[k].n = counts[k];
    first += counts[k];
  }
  p->nconns = nconns;
  return 0;
}

void ab_http_plan_free(ab_http_plan_t *p) {
  if (p == NULL) return;
  free(p->conns);
  for (uint32_t i = 0; i < p->n; i++) free(p->reqs[i].bytes);
  free(p->reqs);
  free(p);
}
