/* transport.h -- what a case asks of its transport, and what the transport
 * reports back: plain data the engine carries between the layer that
 * builds the case (core/lua/lua_engine_cfg.c) and the drivers
 * (core/drivers/transport.c, udp.c), without reading it.
 *
 * Strings are borrowed: they must outlive the run (ab_run_case).
 */
#ifndef AB_TRANSPORT_H
#define AB_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

/* http, https request mode (docs/protocols.md "Request mode"): one entry
 * of the rotation a connection's requests follow.  headers is zero or
 * more "Name: value\r\n" lines, already checked (no CR/LF inside). */
typedef struct {
  const char *method;          /* a token, e.g. "GET" */
  const char *path;            /* starts with '/' */
  const char *headers;         /* "" for none */
  const char *body;            /* NULL or body_len bytes */
  size_t body_len;
  const uint16_t *status;      /* the success set; nstatus 0 = any 2xx */
  uint32_t nstatus;
} ab_http_request_opts_t;

typedef struct {
  /* tls, wss, https: NULL = defaults (TLS 1.3, OpenSSL's suites, no SNI
   * for IPs, no ALPN, no resumption); alpn is a comma-separated list */
  const char *tls_version, *tls_ciphers, *tls_sni, *tls_alpn;
  /* server role: the generated certificate (PEM) is written there so other
   * clients can verify it; client role with a target: the PEM to trust */
  const char *tls_cert_out;
  int tls_resume;
  /* client: do not verify the server's certificate (tls.verify = false;
   * said loudly by the layer that builds the case) */
  int tls_insecure;
  /* http, https: request mode when http_nrequests > 0 (else the echo,
   * POST /echo); http_host is the Host header then ("host[:port]") */
  const ab_http_request_opts_t *http_requests;
  uint32_t http_nrequests;
  /* request = function(i, conn): connection k's own list is the next
   * http_conn_counts[k] entries of http_requests, the lists back to back
   * (http_nconns of them, one per client; 0: every connection rotates
   * through all http_requests) */
  const uint32_t *http_conn_counts;
  uint32_t http_nconns;
  const char *http_host;
  /* udp: socket buffers to request (bytes; 0 = the defaults 64 KiB send,
   * 4 MiB receive); server_recv_buffer applies to the server socket */
  uint32_t udp_send_buffer, udp_recv_buffer, udp_server_recv_buffer;
  /* h2, h2c: the SETTINGS sent (scenario key h2; 0 = arkbench's default,
   * proto/h2.h) */
  uint32_t h2_max_concurrent_streams, h2_initial_window_size, h2_max_frame_size,
      h2_header_table_size;
  int h2_header_table_size_set, h2_initial_window_size_set;
} ab_transport_opts_t;

/* What the kernel granted for a requested socket buffer (Linux reports
 * twice the usable size; we record what getsockopt says). */
typedef struct {
  int32_t send_requested, send_granted, recv_requested, recv_granted;
} ab_udp_buffers_t;

typedef struct {
  /* the first TLS session's parameters (client side, or the server's in
   * server role); "" when the case has none */
  char tls_version[16], tls_cipher[64], tls_alpn[64], tls_sni[128];
  int tls_resumed;
  /* client side, every connection: TLS handshakes completed, and those
   * that resumed a session */
  uint64_t tls_handshakes, tls_resumed_count;
  /* udp: the buffers of the first client socket and the server socket */
  ab_udp_buffers_t udp_client_buffers, udp_server_buffers;
  /* h2, h2c: the SETTINGS the first connection sent and the ones its peer
   * sent (max_concurrent_streams, initial_window_size, max_frame_size,
   * header_table_size; a peer's value it did not send is the RFC's
   * default), h2_peer_seen 0 when no peer SETTINGS arrived; h2_cap the
   * smallest MAX_CONCURRENT_STREAMS any peer announced (0: none) */
  uint32_t h2_ours[4], h2_peer[4];
  int h2_peer_seen;
  uint32_t h2_cap;
} ab_session_info_t;

#endif
