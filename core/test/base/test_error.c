/* test_error.c -- ab_error.h's error classes: which codes are the peer's
 * (and under which key) and which are ours; how a stream's end is counted
 * on each side; HTTP statuses as codes of their own. */
#include <string.h>

#include <uv.h>

#include "base/ab_error.h"
#include "test/ab_test.h"

static int key_is(int err, const char *want) {
  char buf[32];
  return strcmp(ab_err_class_key(err, buf, sizeof(buf)), want) == 0;
}

/* The same peer behaviour gives the same code, on either side. */
static void test_stream_end(void) {
  /* an orderly close, however it was met */
  CHECK(ab_err_stream_end(UV_EOF, AB_SIDE_CLIENT) == AB_ECLOSED);
  CHECK(ab_err_stream_end(AB_ECLOSED, AB_SIDE_CLIENT) == AB_ECLOSED);
  CHECK(ab_err_stream_end(UV_EPIPE, AB_SIDE_CLIENT) == AB_ECLOSED);
  CHECK(ab_err_stream_end(UV_EOF, AB_SIDE_SERVER) == AB_ECLOSED);
  /* a reset; on a server a client's RST after its FIN too */
  CHECK(ab_err_stream_end(UV_ECONNRESET, AB_SIDE_CLIENT) == UV_ECONNRESET);
  CHECK(ab_err_stream_end(UV_ECONNRESET, AB_SIDE_SERVER) == UV_ECONNRESET);
  CHECK(ab_err_stream_end(UV_EPIPE, AB_SIDE_SERVER) == UV_ECONNRESET);
  /* the rest unchanged */
  CHECK(ab_err_stream_end(AB_EPAYLOAD, AB_SIDE_CLIENT) == AB_EPAYLOAD);
  CHECK(ab_err_stream_end(AB_ENOMEM, AB_SIDE_SERVER) == AB_ENOMEM);
  CHECK(ab_err_stream_end(UV_ECONNREFUSED, AB_SIDE_CLIENT) == UV_ECONNREFUSED);
}

static void test_peer_or_ours(void) {
  int peer[] = {AB_ECLOSED,     UV_ECONNRESET, UV_EPIPE,  UV_ECONNREFUSED,  UV_EHOSTUNREACH,
                UV_ENETUNREACH, AB_ETIMEDOUT,  AB_EPROTO, AB_EFRAME,        AB_EMAGIC,
                AB_EPAYLOAD,    AB_ESEQ,       AB_ESIZE,  AB_ERR_HTTP(404), AB_ERR_HTTP(503)};
  for (size_t i = 0; i < sizeof(peer) / sizeof(peer[0]); i++) CHECK(ab_err_is_peer(peer[i]));
  int ours[] = {AB_ENOMEM, AB_ECONFIG,       AB_EINVAL,  AB_EINTR, AB_EAGAIN,
                UV_EMFILE, UV_EADDRNOTAVAIL, UV_ENOBUFS, UV_EAGAIN};
  for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++) CHECK(!ab_err_is_peer(ours[i]));
}

static void test_keys(void) {
  CHECK(key_is(AB_ECLOSED, "ECLOSED"));
  CHECK(key_is(UV_ECONNRESET, "ECONNRESET"));
  CHECK(key_is(UV_EPIPE, "ECONNRESET")); /* a write that met a reset */
  CHECK(key_is(UV_ECONNREFUSED, "ECONNREFUSED"));
  CHECK(key_is(AB_ETIMEDOUT, "ETIMEDOUT"));
  CHECK(key_is(AB_EFRAME, "EFRAME"));
  CHECK(key_is(AB_ERR_HTTP(404), "HTTP 404"));
  CHECK(key_is(AB_ERR_HTTP(500), "HTTP 500"));
  CHECK(key_is(AB_EHTTPSTATUS, "HTTP other"));
  CHECK(ab_err_is_peer(AB_EHTTPSTATUS));
  CHECK(key_is(AB_ENOMEM, "ENOMEM")); /* ours: its own name */
  char small[4];
  ab_err_class_key(AB_ERR_HTTP(404), small, sizeof(small)); /* cut, terminated */
  CHECK(strlen(small) == 3);
}

static void test_http_codes(void) {
  CHECK(ab_err_http_status(AB_ERR_HTTP(100)) == 100);
  CHECK(ab_err_http_status(AB_ERR_HTTP(999)) == 999);
  CHECK(ab_err_http_status(AB_EHTTPSTATUS) == 0);
  CHECK(ab_err_http_status(UV_ECONNRESET) == 0);
  CHECK(ab_err_http_status(AB_ERR_HTTP(99)) == 0);
  CHECK(strcmp(ab_err_name(AB_ERR_HTTP(418)), "EHTTPSTATUS") == 0);
  /* the code ranges do not meet: ours are -4001..-4099, HTTP -5100..-5999 */
  CHECK(AB_ERR_HTTP(100) < AB_EHTTPSTATUS);
}

int main(void) {
  test_stream_end();
  test_peer_or_ours();
  test_keys();
  test_http_codes();
  TEST_DONE();
}
