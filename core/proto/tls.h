/* tls.h -- TLS as a byte transform (docs/scenarios.md key `tls`; docs/protocols.md).
 *
 * OpenSSL runs over two ciphertext buffers (tls_bio.h) and never touches a
 * socket (h2o's approach): the transport feeds the ciphertext it read with
 * ab_tls_feed(), gets plaintext back with ab_tls_read(), hands plaintext to
 * ab_tls_write() and sends whatever ab_tls_take_out() returns (or, without
 * a copy, what ab_tls_out_peek() shows, then ab_tls_out_drop()).  The same TCP transport thus
 * serves plain and TLS, and the codec above (codec.h) only sees plaintext.
 *
 * Errors follow ab_error.h: 0 or a positive value on success, a negative
 * AB_* code on failure.  A TLS failure on a connection is AB_EPROTO and
 * ab_tls_error() then holds one line of reason (OpenSSL's text, e.g.
 * "no application protocol", "certificate verify failed: self-signed
 * certificate").  A failed context constructor leaves its reason in
 * ab_tls_last_error() (per thread).
 *
 * Ownership and threads: a context (ab_tls_ctx_t) is made once per run,
 * may be shared by connections on any number of threads, and must outlive
 * every connection made from it.  A connection (ab_tls_conn_t) belongs to
 * one thread at a time.  All buffers passed in are the caller's and are
 * not kept after the call returns (except what ab_tls_feed_lent() lends,
 * until ab_tls_keep()).
 *
 * Typical pump (either side):
 *   ab_tls_feed(c, bytes_from_socket, n);
 *   if (!done) r = ab_tls_handshake(c);   1 done, 0 in progress, < 0 failed
 *   else       r = ab_tls_read(c, buf, cap, &got) until got == 0;
 *   ab_tls_write(c, plain, len) as the codec produces output;
 *   while (ab_tls_pending_out(c)) send(ab_tls_take_out(c, buf, cap) bytes);
 * Output can appear after any call (handshake flights, session tickets,
 * key updates, alerts -- also after a failure: send it before closing so
 * the peer learns why), so check ab_tls_pending_out() after each one.
 *
 * Steady-state cost: no allocation per call or per record beyond OpenSSL's
 * own record buffers; the ciphertext buffers grow to the largest burst and
 * keep that size.
 */
#ifndef AB_TLS_H
#define AB_TLS_H

#include <stddef.h>
#include <stdint.h>

typedef struct ab_tls_ctx_s ab_tls_ctx_t;
typedef struct ab_tls_conn_s ab_tls_conn_t;

/* The scenario's `tls` table.  Every field may be NULL / 0 for the
 * default.  Strings are copied by the constructors. */
typedef struct {
  const char *version; /* "1.2" or "1.3" (exactly that version), "1.2-1.3"
                          (either: the highest both have); NULL = "1.3" */
  const char *ciphers; /* TLS 1.3: ciphersuites ("TLS_AES_128_GCM_SHA256:..."),
                          TLS 1.2: an OpenSSL cipher list; NULL = OpenSSL's
                          defaults */
  const char *sni;     /* client: server name to send; NULL = the verify
                          host when it is a DNS name, none for an IP */
  const char *alpn;    /* comma-separated protocol names, each 1..255 bytes,
                          in preference order ("h2,http/1.1"); NULL or "" =
                          no ALPN */
  int resume;          /* nonzero: session resumption (tickets) */
  int insecure;        /* client: nonzero = do not verify the server's
                          certificate (chain or name); the CA is ignored */
} ab_tls_opts_t;

/* After the handshake (ab_tls_info()).  The strings stay valid while the
 * connection lives. */
typedef struct {
  const char *version; /* "TLSv1.3", "TLSv1.2" */
  const char *cipher;  /* OpenSSL's name, "TLS_AES_256_GCM_SHA384" */
  const char *sni;     /* server: the name the client sent; client: the
                          name it sent; "" when none */
  char alpn[256];      /* the negotiated protocol, "" when none */
  int resumed;         /* 1 when the session was resumed */
} ab_tls_info_t;

/* Server context.  Generates a fresh EC P-256 key and a self-signed X.509v3
 * certificate in memory: CN=arkbench, SAN DNS:localhost, IP:127.0.0.1,
 * IP:::1, serverAuth, valid from one hour ago until one day from now,
 * signed with SHA-256.  Versions and ciphers from o (NULL o = defaults).
 * ALPN: when o->alpn is set and the client offers ALPN, the server selects
 * the first protocol of the client's list it also has; when none matches
 * the handshake fails with the no_application_protocol alert.  o->resume
 * turns on session tickets (one per TLS 1.3 handshake) and the server
 * session cache; off, no tickets are sent.
 * Returns 0 and *out, AB_ECONFIG (bad version / ciphers / alpn; reason in
 * ab_tls_last_error()), AB_ENOMEM or AB_EPROTO (OpenSSL failure). */
int ab_tls_server_ctx_new(const ab_tls_opts_t *o, ab_tls_ctx_t **out);

/* Client context.  Verifies the server's chain against the PEM
 * certificate(s) in ca_pem (NUL-terminated; NULL = the system's default
 * trust store) and fails the handshake when verification fails.  Offers
 * o->alpn, sends SNI per o->sni (see ab_tls_opts_t).  With o->resume the
 * context keeps the last resumable session it received and offers it on
 * the next connection.  With o->insecure nothing is verified (ca_pem is
 * not read) and every handshake that completes is accepted.
 * Returns 0 and *out, AB_ECONFIG (bad options, or no certificate in
 * ca_pem), AB_ENOMEM or AB_EPROTO. */
int ab_tls_client_ctx_new(const ab_tls_opts_t *o, const char *ca_pem,
                          ab_tls_ctx_t **out);

/* Checks o as a client context would use it -- version, ciphers (with
 * OpenSSL's own parser: SSL_CTX_set_ciphersuites for 1.3, _cipher_list for
 * 1.2), the ALPN list -- then makes a server context as a run does (its
 * generated EC P-256 certificate) and a client trusting it and runs one
 * handshake between them in memory, so that a cipher list left empty at
 * the security level ("no ciphers available") or a level refusing the key
 * ("ee key too small") is refused at load rather than failing every run.
 * Nothing is kept; costs one key generation and one handshake (~ms).  Returns 0, AB_ECONFIG
 * (reason in ab_tls_last_error()) or AB_ENOMEM. */
int ab_tls_opts_check(const ab_tls_opts_t *o);

/* Checks that path is a readable file holding at least one PEM
 * certificate (the tls.ca of a scenario).  Returns 0 or AB_ECONFIG (reason
 * in ab_tls_last_error(), without the path). */
int ab_tls_ca_file_check(const char *path);

/* Frees a context (NULL is fine).  Every connection made from it must have
 * been freed first. */
void ab_tls_ctx_free(ab_tls_ctx_t *ctx);
/* Drops the session a client context would offer next (tls.resume): none
 * until a connection gets one. */
void ab_tls_ctx_forget_session(ab_tls_ctx_t *ctx);

/* Server context: its certificate, PEM, NUL-terminated, owned by ctx (for
 * clients' ca_pem and `openssl s_client -CAfile`).  NULL for a client
 * context. */
const char *ab_tls_ctx_cert_pem(const ab_tls_ctx_t *ctx);

/* Reason for the last failed ab_tls_*_ctx_new() on this thread; "" when
 * none.  Valid until the next constructor call on this thread. */
const char *ab_tls_last_error(void);

/* New connection of ctx.  is_client must match the context's side.
 * verify_host (client only, may be NULL): the name or IP literal the
 * server's certificate must match ("127.0.0.1", "::1", "localhost");
 * NULL = o->sni when set, else the chain is verified without a name check.
 * Returns 0 and *out, AB_EINVAL or AB_ENOMEM. */
int ab_tls_conn_new(ab_tls_ctx_t *ctx, int is_client, const char *verify_host,
                    ab_tls_conn_t **out);

/* Frees a connection (NULL is fine).  Sends nothing: call ab_tls_close()
 * and flush first for a clean close.  A connection that completed its
 * handshake and saw no error leaves its session resumable even without a
 * close_notify (benchmark connections are often just dropped); a failed
 * one does not. */
void ab_tls_conn_free(ab_tls_conn_t *c);

/* Hands n bytes read from the socket to TLS.  Returns 0 or AB_ENOMEM. */
int ab_tls_feed(ab_tls_conn_t *c, const uint8_t *cipher, size_t n);

/* As ab_tls_feed, but cipher[0..n) is read in place (no copy) by the
 * calls that follow, until ab_tls_keep() copies what they left (a partial
 * record) -- call it before cipher's memory is reused.  0 or AB_ENOMEM. */
int ab_tls_feed_lent(ab_tls_conn_t *c, const uint8_t *cipher, size_t n);
int ab_tls_keep(ab_tls_conn_t *c);

/* Drives the handshake with what has been fed.  Returns 1 when done (also
 * on every later call), 0 when it needs more input (first send
 * ab_tls_pending_out()), or AB_EPROTO with ab_tls_error() set. */
int ab_tls_handshake(ab_tls_conn_t *c);

/* Decrypts up to cap bytes of plaintext into buf (as many records as fit
 * and have arrived).  Returns 0 with *got bytes (0 = need more input);
 * AB_ECLOSED once the peer's close_notify has been read (plaintext before
 * it is returned first); AB_EPROTO on a TLS error (ab_tls_error()),
 * among them a fatal alert from the peer (not an orderly close).
 * Before the handshake is done this drives it, returning *got = 0. */
int ab_tls_read(ab_tls_conn_t *c, uint8_t *buf, size_t cap, size_t *got);

/* Encrypts all n bytes of plain into the outgoing buffer (records of up to
 * 16 KiB; n = 0 writes nothing).  Only after the handshake is done.
 * Returns 0, AB_EINVAL (handshake not done), AB_ECLOSED (after
 * ab_tls_close()) or AB_EPROTO. */
int ab_tls_write(ab_tls_conn_t *c, const uint8_t *plain, size_t n);

/* Queues a close_notify alert.  Returns 0 or AB_EPROTO. */
int ab_tls_close(ab_tls_conn_t *c);

/* Bytes of ciphertext waiting to be sent to the socket. */
size_t ab_tls_pending_out(ab_tls_conn_t *c);

/* Moves up to cap bytes of that ciphertext into buf; returns how many. */
size_t ab_tls_take_out(ab_tls_conn_t *c, uint8_t *buf, size_t cap);

/* The ciphertext waiting, in place: *data and the count (valid until the
 * next call on c); ab_tls_out_drop() then forgets the first n bytes. */
size_t ab_tls_out_peek(ab_tls_conn_t *c, const uint8_t **data);
void ab_tls_out_drop(ab_tls_conn_t *c, size_t n);

/* Negotiated parameters.  Returns 0, or AB_EINVAL before the handshake is
 * done. */
int ab_tls_info(ab_tls_conn_t *c, ab_tls_info_t *info);

/* One line of reason for the connection's last failure; "" when none.
 * Owned by c. */
const char *ab_tls_error(const ab_tls_conn_t *c);

#endif
