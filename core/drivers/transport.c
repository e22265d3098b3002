/* transport.c -- per-case transport setup every driver row shares
 * (ab_driver_t case_open / case_close; see drivers_int.h): the codec for
 * the protocol, the TLS contexts, and the session parameters and socket
 * buffers copied into the result at the end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "drivers/drivers_int.h"
#include "proto/caps.h"
#include "proto/codecs.h"

/* One handshake in memory before anything is timed: OpenSSL initialises
 * lazily (several ms on first use), which would otherwise land in the
 * first connection's handshake_us. */
static void warm_tls(ab__engine_t *eng) {
  ab_tls_conn_t *cl = NULL, *sv = NULL;
  uint8_t buf[16384];
  if (ab_tls_conn_new(eng->dc->tls_client, 1, eng->dc->verify_host, &cl) == 0 &&
      ab_tls_conn_new(eng->dc->tls_server, 0, NULL, &sv) == 0) {
    for (int i = 0; i < 10; i++) {
      int a = ab_tls_handshake(cl), b = ab_tls_handshake(sv);
      size_t n;
      while ((n = ab_tls_take_out(cl, buf, sizeof(buf))) > 0) ab_tls_feed(sv, buf, n);
      while ((n = ab_tls_take_out(sv, buf, sizeof(buf))) > 0) ab_tls_feed(cl, buf, n);
      if ((a == 1 && b == 1) || a < 0 || b < 0) break;
    }
  }
  ab_tls_conn_free(cl);
  ab_tls_conn_free(sv);
  /* its session (TLS 1.2 sends the ticket in the handshake) is no run's:
   * the first connection must not resume it (tls_resumed) */
  ab_tls_ctx_forget_session(eng->dc->tls_client);
}

/* The codec the capability table names for the protocol (proto/caps.h:
 * "ws", "http", else the framing key's; a datagram row names none and
 * frames like the framing key too). */

/* The whole of a PEM file, NUL-terminated, in *out (the caller frees it).
 * 0, a negated errno, or AB_ENOMEM; a file over 16 MiB is AB_EINVAL. */
static int read_pem(const char *path, char **out) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (f == NULL) return -errno;
  size_t cap = 65536, len = 0;
  char *buf = malloc(cap);
  int r = buf ? 0 : AB_ENOMEM;
  while (r == 0) {
    if (len + 1 == cap) {
      char *nb = cap >= ((size_t)16 << 20) ? NULL : realloc(buf, cap * 2);
      if (nb == NULL) { r = cap >= ((size_t)16 << 20) ? AB_EINVAL : AB_ENOMEM; break; }
      buf = nb;
      cap *= 2;
    }
    size_t n = fread(buf + len, 1, cap - 1 - len, f);
    len += n;
    if (n == 0) {
      if (ferror(f)) r = -EIO;
      break;
    }
  }
  fclose(f);
  if (r < 0) { free(buf); return r; }
  buf[len] = '\0';
  *out = buf;
  return 0;
}

static const ab_codec_vt_t *codec_for(const ab_proto_cap_t *cap, int framing) {
  if (cap->codec && strcmp(cap->codec, "ws") == 0) return &ab_codec_ws;
  if (cap->codec && strcmp(cap->codec, "http") == 0) return &ab_codec_http;
  if (cap->codec && strcmp(cap->codec, "h2") == 0) return &ab_codec_h2;
  return framing == AB_FRAMING_RAW ? &ab_codec_raw : &ab_codec_length;
}

static void free_plan(void *p) { ab_http_plan_free(p); }
static void free_h2_plan(void *p) { ab_h2_plan_free(p); }

/* Request mode (the http codec's only): the case's requests, built once. */
static int open_requests(ab__engine_t *eng, char *err, size_t errlen) {
  const ab_case_cfg_t *cfg = eng->cfg;
  if (eng->dc->codec_vt == &ab_codec_h2) {
    /* HTTP/2: the same rotation as header lists (proto/h2.h) */
    const char *h2host = cfg->transport.http_host ? cfg->transport.http_host : eng->dc->host;
    ab_h2_plan_t *hp = NULL;
    char why2[200];
    int r2 = ab_h2_plan_new(cfg->transport.http_requests, cfg->transport.http_nrequests, h2host,
                            eng->dc->use_tls, &hp, why2, sizeof(why2));
    if (r2 == 0 && cfg->transport.http_nconns > 0)
      r2 = ab_h2_plan_split(hp, cfg->transport.http_conn_counts, cfg->transport.http_nconns, why2,
                            sizeof(why2));
    if (r2 < 0) {
      ab_h2_plan_free(hp);
      snprintf(err, errlen, "request: %s", r2 == AB_ENOMEM ? "out of memory" : why2);
      free(eng->dc);
      eng->dc = NULL;
      return r2 == AB_ENOMEM ? r2 : AB_ECONFIG;
    }
    eng->dc->requests = hp;
    eng->dc->request_max = hp->http->max_len;
    eng->dc->requests_free = free_h2_plan;
    return 0;
  }
  if (eng->dc->codec_vt != &ab_codec_http) {
    snprintf(err, errlen, "requests are for protocol http, https, h2 or h2c only");
    free(eng->dc);
    eng->dc = NULL;
    return AB_ECONFIG;
  }
  const char *host = cfg->transport.http_host ? cfg->transport.http_host : eng->dc->host;
  ab_http_plan_t *plan = NULL;
  char why[200];
  int r = ab_http_plan_new(cfg->transport.http_requests, cfg->transport.http_nrequests, host,
                           &plan, why, sizeof(why));
  if (r == 0 && cfg->transport.http_nconns > 0)
    r = ab_http_plan_split(plan, cfg->transport.http_conn_counts, cfg->transport.http_nconns, why,
                           sizeof(why));
  if (r < 0) {
    ab_http_plan_free(plan);
    snprintf(err, errlen, "request: %s", r == AB_ENOMEM ? "out of memory" : why);
    free(eng->dc);
    eng->dc = NULL;
    return r == AB_ENOMEM ? r : AB_ECONFIG;
  }
  eng->dc->requests = plan;
  eng->dc->request_max = plan->max_len;
  eng->dc->requests_free = free_plan;
  return 0;
}

/* Chooses the codec for the protocol and makes the TLS
 * contexts (the server's generates its EC P-256 certificate now, before
 * anything is timed). */
int ab__transport_open(ab__engine_t *eng, char *err, size_t errlen) {
  const ab_case_cfg_t *cfg = eng->cfg;
  const ab_proto_cap_t *cap = ab_caps_protocol(cfg->protocol);
  if (cap == NULL) {
    snprintf(err, errlen, "unknown protocol %d", cfg->protocol);
    return AB_ECONFIG;
  }
  if ((eng->dc = calloc(1, sizeof(*eng->dc))) == NULL) {
    snprintf(err, errlen, "out of memory setting up the case");
    return AB_ENOMEM;
  }
  eng->dc->use_tls = cap->tls;
  eng->dc->codec_vt = codec_for(cap, cfg->framing);
  eng->dc->use_ws = eng->dc->codec_vt == &ab_codec_ws;
  eng->dc->host = cfg->host ? cfg->host : "127.0.0.1";
  eng->dc->verify_host = eng->dc->host;
  if (cfg->transport.http_nrequests > 0) {
    int r = open_requests(eng, err, errlen);
    if (r < 0) return r;
  }
  if (!eng->dc->use_tls) return 0;
  ab_tls_opts_t o;
  memset(&o, 0, sizeof(o));
  o.version = cfg->transport.tls_version;
  o.ciphers = cfg->transport.tls_ciphers;
  o.sni = cfg->transport.tls_sni;
  o.alpn = cfg->transport.tls_alpn;
  /* h2: ALPN "h2" offered and served unless tls.alpn says otherwise; the
   * client refuses a server that selects anything else (stream.c) */
  if (o.alpn == NULL) o.alpn = cap->alpn;
  eng->dc->require_alpn = cap->alpn;
  o.resume = cfg->transport.tls_resume;
  o.insecure = cfg->transport.tls_insecure;
  int r = 0;
  if (cfg->role != AB_ROLE_CLIENT) r = ab_tls_server_ctx_new(&o, &eng->dc->tls_server);
  /* h2: the client offers "h2,http/1.1" as h2load does, so that a server
   * without HTTP/2 selects http/1.1 and the refusal can name it */
  if (r == 0 && o.alpn == cap->alpn && cap->alpn && strcmp(cap->alpn, "h2") == 0)
    o.alpn = "h2,http/1.1";
  if (r == 0 && cfg->role != AB_ROLE_SERVER) {
    /* against our own server: trust its certificate; against a target:
     * trust the PEM given (tls_cert_out doubles as the CA file path) */
    const char *ca = eng->dc->tls_server ? ab_tls_ctx_cert_pem(eng->dc->tls_server) : NULL;
    char *file_pem = NULL;
    if (ca == NULL && cfg->transport.tls_cert_out) {
      /* a CA that cannot be read is an error, never a silent fall-back to
       * the system store; a bundle is read whole, however long */
      int e = read_pem(cfg->transport.tls_cert_out, &file_pem);
      if (e < 0) {
        snprintf(err, errlen, "TLS setup: cannot read the CA file %s: %s (%s)",
                 cfg->transport.tls_cert_out, ab_strerror(e), ab_err_name(e));
        ab_tls_ctx_free(eng->dc->tls_server);
        eng->dc->tls_server = NULL;
        return AB_ECONFIG;
      }
      ca = file_pem;
    }
    r = ab_tls_client_ctx_new(&o, ca, &eng->dc->tls_client);
    free(file_pem);
  }
  if (r == 0 && eng->dc->tls_server && eng->dc->tls_client) warm_tls(eng);
  if (r == 0 && cfg->role == AB_ROLE_SERVER && cfg->transport.tls_cert_out) {
    FILE *f = fopen(cfg->transport.tls_cert_out, "wb");
    if (f == NULL) r = AB_EINVAL;
    else {
      fputs(ab_tls_ctx_cert_pem(eng->dc->tls_server), f);
      fclose(f);
    }
  }
  if (r < 0) {
    snprintf(err, errlen, "TLS setup: %s", ab_tls_last_error());
    ab_tls_ctx_free(eng->dc->tls_server);
    ab_tls_ctx_free(eng->dc->tls_client);
    if (eng->dc->requests_free) eng->dc->requests_free(eng->dc->requests);
    free(eng->dc);
    eng->dc = NULL;
    return AB_ECONFIG;
  }
  return 0;
}

void ab__transport_close(ab__engine_t *eng, ab_result_t *out) {
  if (eng->dc == NULL) return;
  out->session = eng->dc->session;
  uint32_t cap = out->session.h2_cap;
  if (cap && cap < eng->cfg->window && out->nnotes < AB_MAX_NOTES)
    snprintf(out->notes[out->nnotes++], sizeof(out->notes[0]),
             "window %u is above the peer's SETTINGS_MAX_CONCURRENT_STREAMS %u: at most %u "
             "streams were in flight per connection",
             eng->cfg->window, cap, cap);
  out->session.tls_handshakes = atomic_load(&eng->dc->tls_handshakes);
  out->session.tls_resumed_count = atomic_load(&eng->dc->tls_resumed);
  ab_tls_ctx_free(eng->dc->tls_server);
  ab_tls_ctx_free(eng->dc->tls_client);
  if (eng->dc->requests_free) eng->dc->requests_free(eng->dc->requests);
  free(eng->dc);
  eng->dc = NULL;
}
