/* test_conn.c -- conn.h on a real libuv loop over loopback TCP, both ends
 * in this process: plaintext and TLS connections carry every byte in order
 * (a 1 MiB burst too, which the kernel takes in several writes); the TLS
 * handshake is the connection's (on_ready runs once per side, after it,
 * and at once without TLS); plaintext sent before the handshake is done
 * waits and then goes out first; a client that does not trust the server's
 * certificate gets on_error(AB_EPROTO) with OpenSSL's reason, and neither
 * side becomes ready; setting up a used connection again (a reopen) keeps
 * its watch's lock and start count (io/reactor.h). */
#include <arpa/inet.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "base/ab_error.h"
#include "io/conn.h"
#include "test/ab_test.h"
#include "test/io/tcp_pair.h"

static uv_loop_t loop;
static ab_reactor_t reactor;


typedef struct {
  ab_conn_t conn;
  uv_tcp_t tcp;
  uint8_t *rbuf;
  size_t rcap, rlen;
  int is_server;    /* echoes what it reads */
  int ready_calls;
  int errors, error;
  size_t want;      /* client: stop the loop once this many bytes came back */
  int bad_order;    /* client: a byte out of pattern */
  size_t checked;
} side_t;

static void on_ready(ab_conn_t *c) { ((side_t *)c->data)->ready_calls++; }

static void on_readable(ab_conn_t *c) {
  side_t *s = c->data;
  for (;;) {
    size_t room = 0;
    ssize_t n = ab_conn_recv(c, &room);
    if (s->is_server && s->rlen > 0) {
      CHECK(ab_conn_send(c, s->rbuf, s->rlen) == 0);
      s->rlen = 0;
    }
    if (!s->is_server) {
      for (size_t i = 0; i < s->rlen; i++)
        if (s->rbuf[i] != pattern(s->checked + i)) s->bad_order++;
      s->checked += s->rlen;
      s->rlen = 0;
      if (s->checked >= s->want) uv_stop(&loop);
    }
    if (n <= 0 || (size_t)n < room) return;
  }
}

static void on_error(ab_conn_t *c, int err) {
  side_t *s = c->data;
  s->errors++;
  s->error = err;
  uv_stop(&loop);
}

static const ab_conn_cbs_t cbs = {on_ready, on_readable, on_error, NULL};

static void side_start(side_t *s, int fd, ab_tls_ctx_t *ctx, int is_client, uint8_t *scratch) {
  ab_tls_conn_t *tls = NULL;
  if (ctx) CHECK(ab_tls_conn_new(ctx, is_client, is_client ? "127.0.0.1" : NULL, &tls) == 0);
  CHECK(uv_tcp_init(&loop, &s->tcp) == 0);
  CHECK(uv_tcp_open(&s->tcp, fd) == 0);
  ab_conn_init(&s->conn, tls, scratch);
  s->conn.data = s;
  s->is_server = !is_client;
  CHECK(ab_conn_start(&s->conn, &reactor, &s->tcp, (ab_sockio_kept_t){&s->rbuf, &s->rcap, &s->rlen},
                      &cbs) == 0);
}

static void side_end(side_t *s) {
  ab_conn_close(&s->conn);
  uv_close((uv_handle_t *)&s->tcp, NULL);
  uv_run(&loop, UV_RUN_NOWAIT);
  ab_conn_free(&s->conn);
  free(s->rbuf);
}

/* Client sends `early` bytes at once (before any handshake is done), then
 * `total - early` once ready; everything must come back in order. */
static void echo_case(ab_tls_ctx_t *sctx, ab_tls_ctx_t *cctx, size_t early, size_t total) {
  int a, b;
  tcp_pair(&a, &b);
  static uint8_t rx_c[AB_CONN_CIPHER_RX], rx_s[AB_CONN_CIPHER_RX];
  side_t *cl = calloc(1, sizeof(side_t)), *sv = calloc(1, sizeof(side_t));
  uint8_t *msg = malloc(total);
  for (size_t i = 0; i < total; i++) msg[i] = pattern(i);
  side_start(sv, b, sctx, 0, rx_s);
  side_start(cl, a, cctx, 1, rx_c);
  cl->want = total;
  /* without TLS both are ready at once; with it neither is yet */
  CHECK_EQ_U64(cl->ready_calls, cctx ? 0 : 1);
  CHECK(ab_conn_send(&cl->conn, msg, early) == 0);
  while (!cl->conn.ready && cl->errors == 0 && sv->errors == 0) uv_run(&loop, UV_RUN_ONCE);
  CHECK(cl->conn.ready);
  CHECK(ab_conn_send(&cl->conn, msg + early, total - early) == 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK_EQ_U64(cl->errors + sv->errors, 0);
  CHECK_EQ_U64(cl->ready_calls, 1);
  CHECK_EQ_U64(sv->ready_calls, 1);
  CHECK_EQ_U64(cl->checked, total);
  CHECK_EQ_U64(cl->bad_order, 0);
  CHECK(ab_conn_idle(&cl->conn));
  if (cctx) {
    ab_tls_info_t info;
    CHECK(ab_conn_tls_info(&cl->conn, &info) == 0);
  } else {
    ab_tls_info_t info;
    CHECK(ab_conn_tls_info(&cl->conn, &info) == AB_EINVAL);
  }
  side_end(cl);
  side_end(sv);
  free(cl);
  free(sv);
  free(msg);
}

/* A client whose CA is not the server's: the handshake fails on the
 * client with the reason, nobody becomes ready. */
static void untrusted_case(ab_tls_ctx_t *sctx, ab_tls_ctx_t *other) {
  int a, b;
  tcp_pair(&a, &b);
  static uint8_t rx_c[AB_CONN_CIPHER_RX], rx_s[AB_CONN_CIPHER_RX];
  side_t *cl = calloc(1, sizeof(side_t)), *sv = calloc(1, sizeof(side_t));
  side_start(sv, b, sctx, 0, rx_s);
  side_start(cl, a, other, 1, rx_c);
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK_EQ_U64(cl->errors, 1);
  CHECK(cl->error == AB_EPROTO);
  CHECK(strstr(ab_conn_error_text(&cl->conn), "certificate verify failed") != NULL);
  CHECK_EQ_U64(cl->ready_calls, 0);
  CHECK_EQ_U64(sv->ready_calls, 0);
  side_end(cl);
  side_end(sv);
  free(cl);
  free(sv);
}

/* ab_conn_init on a connection's memory once more (a reopen): the rest is
 * zeroed, the watch's lock and start count are not touched. */
static void reinit_case(void) {
  static ab_conn_t c;
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  uint8_t scratch[16];
  memset(&c, 0xab, sizeof(c));
  c.io.watch.lock = &mu;
  c.io.watch.gen = 3;
  ab_conn_init(&c, NULL, scratch);
  CHECK(c.io.watch.lock == &mu);
  CHECK_EQ_U64(c.io.watch.gen, 3);
  CHECK(c.io.fd == 0 && c.io.started == 0 && c.io.on_readable == NULL);
  CHECK(c.tls == NULL && c.cipher_rx == scratch && c.data == NULL && c.t_setup == 0);
}

int main(void) {
  CHECK(uv_loop_init(&loop) == 0);
  ab_reactor_uv_init(&reactor, &loop, NULL);
  ab_tls_ctx_t *sctx = NULL, *cctx = NULL, *sctx2 = NULL, *other = NULL;
  CHECK(ab_tls_server_ctx_new(NULL, &sctx) == 0);
  CHECK(ab_tls_client_ctx_new(NULL, ab_tls_ctx_cert_pem(sctx), &cctx) == 0);
  CHECK(ab_tls_server_ctx_new(NULL, &sctx2) == 0);
  CHECK(ab_tls_client_ctx_new(NULL, ab_tls_ctx_cert_pem(sctx2), &other) == 0);

  echo_case(NULL, NULL, 100, 4096);           /* plaintext */
  echo_case(NULL, NULL, 0, 1 << 20);          /* plaintext, a burst */
  echo_case(sctx, cctx, 100, 4096);           /* TLS, early bytes wait */
  echo_case(sctx, cctx, 70000, 1 << 20);      /* TLS, a burst */
  untrusted_case(sctx, other);
  reinit_case();

  ab_tls_ctx_free(cctx);
  ab_tls_ctx_free(other);
  ab_tls_ctx_free(sctx);
  ab_tls_ctx_free(sctx2);
  uv_loop_close(&loop);
  TEST_DONE();
}
