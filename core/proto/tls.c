/* tls.c -- TLS over two ciphertext buffers (see tls.h).
 *
 * Each connection owns an SSL and two buffer BIOs (tls_bio.h): rbio holds
 * ciphertext fed from the socket, wbio collects ciphertext to send, which
 * the transport reads in place.  Nothing here knows about sockets or event
 * loops.
 *
 * Error queue: OpenSSL's per-thread error queue is drained on every failure
 * path here (the reason is copied into the connection), so a later call on
 * another connection of the same thread starts from an empty queue.  The
 * hot calls (read/write) classify a failed SSL_read/SSL_write through the
 * SSL's own state (want-read, received shutdown) rather than the queue,
 * so they need no ERR_clear_error() per call.
 */
#include "proto/tls.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "base/ab_error.h"
#include "proto/tls_bio.h"

struct ab_tls_ctx_s {
  SSL_CTX *ssl_ctx;
  int is_client;
  int resume;
  int min_ver, max_ver; /* the versions offered/accepted */
  char *cert_pem;     /* server: the generated certificate */
  char *sni;          /* client: o->sni copy, or NULL */
  uint8_t *alpn;      /* ALPN wire format (length-prefixed names) */
  size_t alpn_len;
  pthread_mutex_t lock; /* guards last_session */
  SSL_SESSION *last_session; /* client with resume: offered next */
};

struct ab_tls_conn_s {
  SSL *ssl;
  BIO *rbio, *wbio;   /* owned by ssl */
  ab_cbuf_t *rbuf, *wbuf; /* their buffers (freed with them) */
  ab_tls_ctx_t *ctx;
  int done;           /* handshake finished */
  int failed;         /* a fatal error was recorded in err */
  char err[256];
};

/* ---- errors ------------------------------------------------------------ */

static _Thread_local char last_error[256];

const char *ab_tls_last_error(void) { return last_error; }

/* Appends OpenSSL's earliest queued reason (if any) to a formatted
 * message, then empties the queue. */
static void set_ctx_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(last_error, sizeof(last_error), fmt, ap);
  va_end(ap);
  unsigned long e = ERR_get_error();
  if (e != 0 && n >= 0 && (size_t)n < sizeof(last_error) - 3) {
    const char *why = ERR_reason_error_string(e);
    snprintf(last_error + n, sizeof(last_error) - (size_t)n, ": %s",
             why ? why : "OpenSSL error");
  }
  ERR_clear_error();
}

/* Records why connection c failed (OpenSSL's reason, plus the certificate
 * verification result on a client) and returns AB_EPROTO. */
static int conn_fail(ab_tls_conn_t *c, int ssl_err) {
  unsigned long e = ERR_get_error();
  const char *why = e ? ERR_reason_error_string(e) : NULL;
  char buf[128];
  if (e && !why) {
    ERR_error_string_n(e, buf, sizeof(buf));
    why = buf;
  }
  /* the verification result names the failure only when it is one: the
   * client verifies (tls.verify = false computes a result and ignores it:
   * every error read "...: self-signed certificate"), and OpenSSL's reason
   * is a failed verification or there is none (issue 27) */
  int verifying = c->ctx->is_client && (SSL_get_verify_mode(c->ssl) & SSL_VERIFY_PEER);
  long vr = verifying ? SSL_get_verify_result(c->ssl) : X509_V_OK;
  if (vr != X509_V_OK && (e == 0 || ERR_GET_REASON(e) == SSL_R_CERTIFICATE_VERIFY_FAILED))
    snprintf(c->err, sizeof(c->err), "%s: %s",
             why ? why : "certificate verify failed",
             X509_verify_cert_error_string(vr));
  else if (why && c->ctx->is_client && !c->done && c->ctx->min_ver == c->ctx->max_ver &&
           (ERR_GET_REASON(e) == SSL_R_TLSV1_ALERT_PROTOCOL_VERSION ||
            ERR_GET_REASON(e) == SSL_R_UNSUPPORTED_PROTOCOL)) {
    /* the usual cause: a server without the one version we offer */
    const char *v = c->ctx->max_ver == TLS1_3_VERSION ? "1.3" : "1.2";
    const char *o = c->ctx->max_ver == TLS1_3_VERSION ? "1.2" : "1.3";
    snprintf(c->err, sizeof(c->err),
             "%s (the server does not offer TLS %s; set tls.version = \"%s\" or"
             " \"1.2-1.3\", or --tls-version %s)", why, v, o, o);
  } else if (why)
    snprintf(c->err, sizeof(c->err), "%s", why);
  else if (ssl_err == SSL_ERROR_ZERO_RETURN)
    snprintf(c->err, sizeof(c->err), "peer closed the connection");
  else if (ssl_err == SSL_ERROR_SYSCALL)
    snprintf(c->err, sizeof(c->err), "unexpected end of stream");
  else
    snprintf(c->err, sizeof(c->err), "TLS error (SSL_get_error %d)", ssl_err);
  ERR_clear_error();
  c->failed = 1;
  return AB_EPROTO;
}

/* ---- options ----------------------------------------------------------- */

/* "1.2", "1.3" (exactly that version) or "1.2-1.3" (either, the highest
 * both sides have); NULL = "1.3". */
static int parse_version(const char *v, int *min, int *max) {
  if (v == NULL || strcmp(v, "1.3") == 0) {
    *min = *max = TLS1_3_VERSION;
  } else if (strcmp(v, "1.2") == 0) {
    *min = *max = TLS1_2_VERSION;
  } else if (strcmp(v, "1.2-1.3") == 0) {
    *min = TLS1_2_VERSION;
    *max = TLS1_3_VERSION;
  } else {
    set_ctx_error("tls version \"%s\": expected \"1.2\", \"1.3\" or \"1.2-1.3\"", v);
    return AB_ECONFIG;
  }
  return 0;
}

/* "h2,http/1.1" -> "\x02h2\x08http/1.1" (malloc'd; NULL for none). */
static int parse_alpn(const char *s, uint8_t **out, size_t *out_len) {
  *out = NULL;
  *out_len = 0;
  if (s == NULL || *s == '\0') return 0;
  size_t n = strlen(s);
  uint8_t *w = malloc(n + 1);
  if (w == NULL) return AB_ENOMEM;
  size_t len = 0;
  const char *p = s;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t l = comma ? (size_t)(comma - p) : strlen(p);
    if (l == 0 || l > 255) {
      free(w);
      set_ctx_error("tls alpn \"%s\": each protocol name must be 1..255 bytes", s);
      return AB_ECONFIG;
    }
    w[len++] = (uint8_t)l;
    memcpy(w + len, p, l);
    len += l;
    if (!comma) break;
    p = comma + 1;
  }
  *out = w;
  *out_len = len;
  return 0;
}

static int is_ip_literal(const char *h) {
  unsigned char a[16];
  return inet_pton(AF_INET, h, a) == 1 || inet_pton(AF_INET6, h, a) == 1;
}

/* ---- the certificate --------------------------------------------------- */

static int add_ext(X509 *x, X509V3_CTX *v3, int nid, const char *value) {
  X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, v3, nid, value);
  if (ext == NULL) return 0;
  int ok = X509_add_ext(x, ext, -1);
  X509_EXTENSION_free(ext);
  return ok;
}

/* A fresh P-256 key and a self-signed certificate for it (tls.h). */
static int make_cert(EVP_PKEY **pkey_out, X509 **x509_out) {
  EVP_PKEY *pkey = EVP_EC_gen("P-256");
  X509 *x = X509_new();
  BIGNUM *serial = BN_new();
  unsigned char sb[16];
  int ok = pkey && x && serial;
  ok = ok && X509_set_version(x, X509_VERSION_3);
  ok = ok && RAND_bytes(sb, sizeof(sb)) == 1;
  if (ok) sb[0] &= 0x7f; /* a positive serial */
  ok = ok && BN_bin2bn(sb, sizeof(sb), serial) != NULL;
  ok = ok && BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(x)) != NULL;
  ok = ok && X509_gmtime_adj(X509_getm_notBefore(x), -3600) != NULL;
  ok = ok && X509_gmtime_adj(X509_getm_notAfter(x), 86400) != NULL;
  ok = ok && X509_set_pubkey(x, pkey);
  X509_NAME *name = ok ? X509_get_subject_name(x) : NULL;
  ok = ok && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                        (const unsigned char *)"arkbench", -1, -1, 0);
  ok = ok && X509_set_issuer_name(x, name);
  if (ok) {
    /* A leaf that is its own trust anchor: clients (and `openssl verify`)
     * trust exactly this certificate. */
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
    ok = add_ext(x, &v3, NID_basic_constraints, "critical,CA:FALSE") &&
         add_ext(x, &v3, NID_key_usage, "critical,digitalSignature") &&
         add_ext(x, &v3, NID_ext_key_usage, "serverAuth") &&
         add_ext(x, &v3, NID_subject_key_identifier, "hash") &&
         add_ext(x, &v3, NID_authority_key_identifier, "keyid:always") &&
         add_ext(x, &v3, NID_subject_alt_name,
                 "DNS:localhost,IP:127.0.0.1,IP:::1");
  }
  ok = ok && X509_sign(x, pkey, EVP_sha256()) > 0;
  BN_free(serial);
  if (!ok) {
    EVP_PKEY_free(pkey);
    X509_free(x);
    set_ctx_error("generating the certificate");
    return AB_EPROTO;
  }
  *pkey_out = pkey;
  *x509_out = x;
  return 0;
}

static char *cert_to_pem(X509 *x) {
  BIO *m = BIO_new(BIO_s_mem());
  char *pem = NULL;
  BUF_MEM *bm = NULL;
  if (m && PEM_write_bio_X509(m, x) && BIO_get_mem_ptr(m, &bm) > 0 && bm) {
    pem = malloc(bm->length + 1);
    if (pem) {
      memcpy(pem, bm->data, bm->length);
      pem[bm->length] = '\0';
    }
  }
  BIO_free(m);
  return pem;
}

/* ---- contexts ---------------------------------------------------------- */

/* Server ALPN: the first protocol in the client's list that we also have;
 * none -> fatal no_application_protocol alert. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg) {
  (void)ssl;
  const ab_tls_ctx_t *ctx = arg;
  for (unsigned int i = 0; i < inlen;) {
    unsigned int l = in[i];
    if (l == 0 || i + 1 + l > inlen) break; /* malformed list */
    for (size_t j = 0; j < ctx->alpn_len; j += 1 + (size_t)ctx->alpn[j]) {
      if (ctx->alpn[j] == l && memcmp(ctx->alpn + j + 1, in + i + 1, l) == 0) {
        *out = in + i + 1;
        *outlen = (unsigned char)l;
        return SSL_TLSEXT_ERR_OK;
      }
    }
    i += 1 + l;
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

/* Client with resume: keep the newest resumable session (TLS 1.3 tickets
 * arrive after the handshake, read by ab_tls_read). */
static int new_session(SSL *ssl, SSL_SESSION *sess) {
  ab_tls_ctx_t *ctx = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
  if (ctx == NULL || !SSL_SESSION_is_resumable(sess)) return 0;
  pthread_mutex_lock(&ctx->lock);
  SSL_SESSION *old = ctx->last_session;
  ctx->last_session = sess; /* returning 1 hands us the reference */
  pthread_mutex_unlock(&ctx->lock);
  SSL_SESSION_free(old);
  return 1;
}

/* What both sides share: versions, ciphers, ALPN list. */
static int ctx_common(ab_tls_ctx_t *ctx, const ab_tls_opts_t *o, int is_client) {
  int ver, max, r;
  if ((r = parse_version(o->version, &ver, &max)) != 0) return r;
  if (ver != max && o->ciphers) {
    set_ctx_error("tls ciphers with version \"%s\": a cipher list is for one version;"
                  " set version to \"1.2\" or \"1.3\"", o->version);
    return AB_ECONFIG;
  }
  if ((r = parse_alpn(o->alpn, &ctx->alpn, &ctx->alpn_len)) != 0) return r;
  ctx->is_client = is_client;
  ctx->resume = o->resume != 0;
  ctx->min_ver = ver;
  ctx->max_ver = max;
  ctx->ssl_ctx = SSL_CTX_new(is_client ? TLS_client_method() : TLS_server_method());
  if (ctx->ssl_ctx == NULL) {
    set_ctx_error("SSL_CTX_new");
    return AB_ENOMEM;
  }
  SSL_CTX *s = ctx->ssl_ctx;
  SSL_CTX_set_app_data(s, ctx);
  if (!SSL_CTX_set_min_proto_version(s, ver) || !SSL_CTX_set_max_proto_version(s, max)) {
    set_ctx_error("tls version \"%s\"", o->version ? o->version : "1.3");
    return AB_ECONFIG;
  }
  SSL_CTX_set_options(s, SSL_OP_NO_RENEGOTIATION);
  /* all of a write is consumed or it fails (memory BIOs never block) */
  SSL_CTX_clear_mode(s, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_RELEASE_BUFFERS);
  if (o->ciphers) {
    int ok = ver == TLS1_3_VERSION ? SSL_CTX_set_ciphersuites(s, o->ciphers)
                                   : SSL_CTX_set_cipher_list(s, o->ciphers);
    /* an unknown TLS 1.3 name may be skipped silently: check that some
     * cipher of the version remains */
    if (ok) {
      STACK_OF(SSL_CIPHER) *list = SSL_CTX_get_ciphers(s);
      int n = 0;
      for (int i = 0; list && i < sk_SSL_CIPHER_num(list); i++) {
        const SSL_CIPHER *ci = sk_SSL_CIPHER_value(list, i);
        int is13 = strcmp(SSL_CIPHER_get_version(ci), "TLSv1.3") == 0;
        n += (ver == TLS1_3_VERSION) == is13;
      }
      ok = n > 0;
    }
    if (!ok) {
      set_ctx_error("tls ciphers \"%s\": no usable TLS %s cipher", o->ciphers,
                    ver == TLS1_3_VERSION ? "1.3" : "1.2");
      return AB_ECONFIG;
    }
  }
  return 0;
}

static int ctx_alloc(ab_tls_ctx_t **out) {
  ab_tls_ctx_t *ctx = calloc(1, sizeof(*ctx));
  if (ctx == NULL) {
    set_ctx_error("out of memory");
    return AB_ENOMEM;
  }
  pthread_mutex_init(&ctx->lock, NULL);
  *out = ctx;
  return 0;
}

int ab_tls_server_ctx_new(const ab_tls_opts_t *o, ab_tls_ctx_t **out) {
  static const ab_tls_opts_t defaults;
  ab_tls_ctx_t *ctx;
  EVP_PKEY *pkey = NULL;
  X509 *x = NULL;
  int r;
  last_error[0] = '\0';
  if (out == NULL) return AB_EINVAL;
  *out = NULL;
  if (o == NULL) o = &defaults;
  if ((r = ctx_alloc(&ctx)) != 0) return r;
  if ((r = ctx_common(ctx, o, 0)) != 0) goto fail;
  if ((r = make_cert(&pkey, &x)) != 0) goto fail;
  SSL_CTX *s = ctx->ssl_ctx;
  if (!SSL_CTX_use_certificate(s, x) || !SSL_CTX_use_PrivateKey(s, pkey) ||
      !SSL_CTX_check_private_key(s)) {
    set_ctx_error("installing the generated EC P-256 certificate");
    r = AB_EPROTO;
    goto fail;
  }
  if ((ctx->cert_pem = cert_to_pem(x)) == NULL) {
    set_ctx_error("writing the certificate PEM");
    r = AB_ENOMEM;
    goto fail;
  }
  if (ctx->alpn) SSL_CTX_set_alpn_select_cb(s, alpn_select, ctx);
  if (ctx->resume) {
    static const unsigned char sid_ctx[] = "arkbench";
    SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_SERVER);
    SSL_CTX_set_session_id_context(s, sid_ctx, sizeof(sid_ctx) - 1);
    SSL_CTX_set_num_tickets(s, 1);
  } else {
    SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(s, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(s, 0);
  }
  EVP_PKEY_free(pkey); /* the SSL_CTX holds its own references */
  X509_free(x);
  *out = ctx;
  return 0;
fail:
  EVP_PKEY_free(pkey);
  X509_free(x);
  ab_tls_ctx_free(ctx);
  return r;
}

/* Moves what `from` has to send into `to`; 0 or a negative error. */
static int pump(ab_tls_conn_t *from, ab_tls_conn_t *to) {
  uint8_t buf[4096];
  size_t n;
  while ((n = ab_tls_take_out(from, buf, sizeof(buf))) > 0) {
    int r = ab_tls_feed(to, buf, n);
    if (r != 0) return r;
  }
  return 0;
}

/* One handshake in memory between a server context made as a run makes it
 * (the generated EC P-256 certificate) and a client trusting it: what the
 * option strings cannot tell alone -- no cipher left for the version at
 * the security level, a certificate key the level refuses -- fails here. */
static int check_handshake(const ab_tls_opts_t *o) {
  ab_tls_opts_t so = *o, co = *o;
  so.sni = co.sni = NULL;
  so.resume = co.resume = 0;
  ab_tls_ctx_t *sctx = NULL, *cctx = NULL;
  ab_tls_conn_t *s = NULL, *c = NULL;
  int r = ab_tls_server_ctx_new(&so, &sctx);
  if (r != 0) return r;
  if ((r = ab_tls_client_ctx_new(&co, ab_tls_ctx_cert_pem(sctx), &cctx)) != 0) goto out;
  if ((r = ab_tls_conn_new(sctx, 0, NULL, &s)) != 0 ||
      (r = ab_tls_conn_new(cctx, 1, "localhost", &c)) != 0) {
    set_ctx_error("tls: cannot make a connection to check the settings");
    goto out;
  }
  int cdone = 0, sdone = 0;
  for (int round = 0; round < 16 && !(cdone && sdone); round++) {
    if ((r = ab_tls_handshake(c)) < 0) {
      set_ctx_error("the client side fails the handshake: %s", ab_tls_error(c));
      goto out;
    }
    cdone = r == 1;
    if ((r = pump(c, s)) != 0) goto out;
    if ((r = ab_tls_handshake(s)) < 0) {
      set_ctx_error("the server side fails the handshake: %s", ab_tls_error(s));
      goto out;
    }
    sdone = r == 1;
    if ((r = pump(s, c)) != 0) goto out;
  }
  r = cdone && sdone ? 0 : AB_EPROTO;
  if (r != 0) set_ctx_error("the handshake does not finish");
out:
  if (r != 0) r = AB_ECONFIG;
  ab_tls_conn_free(c);
  ab_tls_conn_free(s);
  ab_tls_ctx_free(cctx);
  ab_tls_ctx_free(sctx);
  return r;
}

int ab_tls_opts_check(const ab_tls_opts_t *o) {
  ab_tls_ctx_t *ctx;
  int r;
  last_error[0] = '\0';
  if (o == NULL) return 0;
  if ((r = ctx_alloc(&ctx)) != 0) return r;
  r = ctx_common(ctx, o, 1);
  ab_tls_ctx_free(ctx);
  if (r != 0) return r;
  return check_handshake(o);
}

int ab_tls_ca_file_check(const char *path) {
  last_error[0] = '\0';
  BIO *b = BIO_new_file(path, "r");
  if (b == NULL) {
    ERR_clear_error();
    set_ctx_error("is missing or unreadable");
    return AB_ECONFIG;
  }
  int n = 0;
  X509 *x;
  while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
    n++;
    X509_free(x);
  }
  BIO_free(b);
  ERR_clear_error(); /* PEM's end-of-input "no start line" */
  if (n == 0) {
    set_ctx_error("holds no PEM certificate");
    return AB_ECONFIG;
  }
  return 0;
}

int ab_tls_client_ctx_new(const ab_tls_opts_t *o, const char *ca_pem,
                          ab_tls_ctx_t **out) {
  static const ab_tls_opts_t defaults;
  ab_tls_ctx_t *ctx;
  int r;
  last_error[0] = '\0';
  if (out == NULL) return AB_EINVAL;
  *out = NULL;
  if (o == NULL) o = &defaults;
  if ((r = ctx_alloc(&ctx)) != 0) return r;
  if ((r = ctx_common(ctx, o, 1)) != 0) goto fail;
  SSL_CTX *s = ctx->ssl_ctx;
  if (o->sni && *o->sni && (ctx->sni = strdup(o->sni)) == NULL) {
    r = AB_ENOMEM;
    goto fail;
  }
  SSL_CTX_set_verify(s, o->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
  if (o->insecure) {
    /* tls.verify = false: no trust store, no name check (said loudly by
     * the scenario check and in the run object) */
  } else if (ca_pem == NULL) {
    if (!SSL_CTX_set_default_verify_paths(s)) {
      set_ctx_error("loading the default trust store");
      r = AB_ECONFIG;
      goto fail;
    }
  } else {
    BIO *m = BIO_new_mem_buf(ca_pem, -1);
    X509_STORE *store = SSL_CTX_get_cert_store(s);
    X509 *x;
    int n = 0;
    while (m && (x = PEM_read_bio_X509(m, NULL, NULL, NULL)) != NULL) {
      n += X509_STORE_add_cert(store, x) == 1;
      X509_free(x);
    }
    BIO_free(m);
    ERR_clear_error(); /* PEM's end-of-input "no start line" */
    if (n == 0) {
      set_ctx_error("tls: no certificate found in the CA PEM");
      r = AB_ECONFIG;
      goto fail;
    }
  }
  /* note: SSL_CTX_set_alpn_protos returns 0 on success */
  if (ctx->alpn && SSL_CTX_set_alpn_protos(s, ctx->alpn, (unsigned)ctx->alpn_len) != 0) {
    set_ctx_error("tls alpn");
    r = AB_ECONFIG;
    goto fail;
  }
  if (ctx->resume) {
    SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_CLIENT |
                                          SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(s, new_session);
  } else {
    SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(s, SSL_OP_NO_TICKET);
  }
  *out = ctx;
  return 0;
fail:
  ab_tls_ctx_free(ctx);
  return r;
}

void ab_tls_ctx_forget_session(ab_tls_ctx_t *ctx) {
  if (ctx == NULL) return;
  pthread_mutex_lock(&ctx->lock);
  SSL_SESSION *old = ctx->last_session;
  ctx->last_session = NULL;
  pthread_mutex_unlock(&ctx->lock);
  SSL_SESSION_free(old);
}

void ab_tls_ctx_free(ab_tls_ctx_t *ctx) {
  if (ctx == NULL) return;
  SSL_CTX_free(ctx->ssl_ctx);
  SSL_SESSION_free(ctx->last_session);
  pthread_mutex_destroy(&ctx->lock);
  free(ctx->cert_pem);
  free(ctx->sni);
  free(ctx->alpn);
  free(ctx);
}

const char *ab_tls_ctx_cert_pem(const ab_tls_ctx_t *ctx) {
  return ctx ? ctx->cert_pem : NULL;
}

/* ---- connections ------------------------------------------------------- */

int ab_tls_conn_new(ab_tls_ctx_t *ctx, int is_client, const char *verify_host,
                    ab_tls_conn_t **out) {
  if (out == NULL) return AB_EINVAL;
  *out = NULL;
  if (ctx == NULL || (is_client != 0) != ctx->is_client) return AB_EINVAL;
  ab_tls_conn_t *c = calloc(1, sizeof(*c));
  if (c == NULL) return AB_ENOMEM;
  c->ctx = ctx;
  c->ssl = SSL_new(ctx->ssl_ctx);
  c->rbio = ab_cbuf_bio_new(&c->rbuf);
  c->wbio = ab_cbuf_bio_new(&c->wbuf);
  if (c->ssl == NULL || c->rbio == NULL || c->wbio == NULL) {
    BIO_free(c->rbio);
    BIO_free(c->wbio);
    SSL_free(c->ssl);
    free(c);
    ERR_clear_error();
    return AB_ENOMEM;
  }
  /* (an empty rbio reads as "retry", never as end of stream) */
  SSL_set_bio(c->ssl, c->rbio, c->wbio);
  if (!is_client) {
    SSL_set_accept_state(c->ssl);
    *out = c;
    return 0;
  }
  SSL_set_connect_state(c->ssl);
  const char *host = verify_host ? verify_host : ctx->sni;
  const char *sni = ctx->sni ? ctx->sni
                    : (verify_host && !is_ip_literal(verify_host)) ? verify_host
                                                                   : NULL;
  int ok = 1;
  if (sni) ok = SSL_set_tlsext_host_name(c->ssl, sni) == 1;
  if (ok && host) {
    if (is_ip_literal(host)) {
      ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host) == 1;
    } else {
      SSL_set_hostflags(c->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      ok = SSL_set1_host(c->ssl, host) == 1;
    }
  }
  if (ok && ctx->resume) {
    pthread_mutex_lock(&ctx->lock);
    SSL_SESSION *sess = ctx->last_session;
    if (sess && SSL_SESSION_is_resumable(sess))
      SSL_SESSION_up_ref(sess);
    else
      sess = NULL; /* none yet, or spoilt by a failed connection */
    pthread_mutex_unlock(&ctx->lock);
    if (sess) {
      ok = SSL_set_session(c->ssl, sess) == 1;
      SSL_SESSION_free(sess);
    }
  }
  if (!ok) {
    ERR_clear_error();
    ab_tls_conn_free(c);
    return AB_EINVAL;
  }
  *out = c;
  return 0;
}

void ab_tls_conn_free(ab_tls_conn_t *c) {
  if (c == NULL) return;
  /* OpenSSL marks the session of a connection freed without a sent
   * close_notify as not resumable (TLS 1.2 truncation caution).  A
   * benchmark connection that ends without one but without an error is a
   * healthy session to resume; a failed one is left to OpenSSL's rule. */
  if (c->done && !c->failed)
    SSL_set_shutdown(c->ssl, SSL_get_shutdown(c->ssl) | SSL_SENT_SHUTDOWN);
  SSL_free(c->ssl); /* frees both BIOs */
  free(c);
}

int ab_tls_feed(ab_tls_conn_t *c, const uint8_t *cipher, size_t n) {
  return ab_cbuf_append(c->rbuf, cipher, n);
}

int ab_tls_feed_lent(ab_tls_conn_t *c, const uint8_t *cipher, size_t n) {
  return ab_cbuf_lend(c->rbuf, cipher, n);
}

int ab_tls_keep(ab_tls_conn_t *c) { return ab_cbuf_keep(c->rbuf); }

int ab_tls_handshake(ab_tls_conn_t *c) {
  if (c->done) return 1;
  if (c->failed) return AB_EPROTO;
  ERR_clear_error();
  int r = SSL_do_handshake(c->ssl);
  if (r == 1) {
    c->done = 1;
    return 1;
  }
  int e = SSL_get_error(c->ssl, r);
  if (e == SSL_ERROR_WANT_READ) return 0;
  return conn_fail(c, e);
}

int ab_tls_read(ab_tls_conn_t *c, uint8_t *buf, size_t cap, size_t *got) {
  size_t total = 0;
  *got = 0;
  if (c->failed) return AB_EPROTO;
  while (total < cap) {
    size_t n = 0;
    if (SSL_read_ex(c->ssl, buf + total, cap - total, &n)) {
      total += n;
      continue;
    }
    if (SSL_want_read(c->ssl)) break; /* rbio is empty */
    /* the peer's close_notify; a fatal alert it sent also marks the
     * shutdown received, but is SSL_ERROR_SSL: a failure with its reason */
    int e = SSL_get_error(c->ssl, 0);
    if (e == SSL_ERROR_ZERO_RETURN) {
      if (total) break; /* the next call reports the close */
      return AB_ECLOSED;
    }
    int r = conn_fail(c, e);
    if (total) break; /* hand over what arrived; the next call fails */
    return r;
  }
  if (!c->done && SSL_is_init_finished(c->ssl)) c->done = 1;
  *got = total;
  return 0;
}

int ab_tls_write(ab_tls_conn_t *c, const uint8_t *plain, size_t n) {
  size_t w = 0;
  if (c->failed) return AB_EPROTO;
  if (!SSL_is_init_finished(c->ssl)) return AB_EINVAL;
  if (SSL_get_shutdown(c->ssl) & SSL_SENT_SHUTDOWN) return AB_ECLOSED;
  if (n == 0) return 0;
  if (SSL_write_ex(c->ssl, plain, n, &w) && w == n) return 0;
  return conn_fail(c, SSL_get_error(c->ssl, 0));
}

int ab_tls_close(ab_tls_conn_t *c) {
  if (c->failed) return AB_EPROTO;
  if (SSL_get_shutdown(c->ssl) & SSL_SENT_SHUTDOWN) return 0;
  ERR_clear_error();
  int r = SSL_shutdown(c->ssl);
  if (r >= 0) return 0; /* 0: sent, the peer's has not arrived; 1: both */
  return conn_fail(c, SSL_get_error(c->ssl, r));
}

size_t ab_tls_pending_out(ab_tls_conn_t *c) { return ab_cbuf_pending(c->wbuf); }

size_t ab_tls_take_out(ab_tls_conn_t *c, uint8_t *buf, size_t cap) {
  size_t n = ab_cbuf_pending(c->wbuf);
  if (n > cap) n = cap;
  if (n) memcpy(buf, ab_cbuf_data(c->wbuf), n);
  ab_cbuf_drop(c->wbuf, n);
  return n;
}

size_t ab_tls_out_peek(ab_tls_conn_t *c, const uint8_t **data) {
  *data = ab_cbuf_data(c->wbuf);
  return ab_cbuf_pending(c->wbuf);
}

void ab_tls_out_drop(ab_tls_conn_t *c, size_t n) { ab_cbuf_drop(c->wbuf, n); }

int ab_tls_info(ab_tls_conn_t *c, ab_tls_info_t *info) {
  if (!SSL_is_init_finished(c->ssl)) return AB_EINVAL;
  const unsigned char *alpn = NULL;
  unsigned int alpn_len = 0;
  const char *sni = SSL_get_servername(c->ssl, TLSEXT_NAMETYPE_host_name);
  info->version = SSL_get_version(c->ssl);
  info->cipher = SSL_CIPHER_get_name(SSL_get_current_cipher(c->ssl));
  info->sni = sni ? sni : "";
  SSL_get0_alpn_selected(c->ssl, &alpn, &alpn_len);
  if (alpn_len >= sizeof(info->alpn)) alpn_len = sizeof(info->alpn) - 1;
  if (alpn_len) memcpy(info->alpn, alpn, alpn_len);
  info->alpn[alpn_len] = '\0';
  info->resumed = SSL_session_reused(c->ssl) == 1;
  return 0;
}

const char *ab_tls_error(const ab_tls_conn_t *c) { return c->err; }
