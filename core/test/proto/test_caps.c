/* test_caps.c -- the capability table (proto/caps.h): lookups by id and
 * name, the execution bits of each row, the limits. */
#include <string.h>

#include "proto/caps.h"
#include "proto/framing.h"
#include "test/ab_test.h"

int main(void) {
  size_t n = 0;
  const ab_proto_cap_t *protos = ab_caps_protocols(&n);
  CHECK_EQ_U64(n, 9);
  static const char *order[] = {"tcp", "udp", "ws", "tls", "wss", "http", "https", "h2", "h2c"};
  for (size_t i = 0; i < n && i < 9; i++) {
    CHECK(strcmp(protos[i].name, order[i]) == 0);
    /* id and name lead to the same row */
    CHECK(ab_caps_protocol(protos[i].id) == &protos[i]);
    CHECK(ab_caps_protocol_named(protos[i].name) == &protos[i]);
    CHECK(ab_caps_runs(&protos[i], AB_EXEC_CALLBACK));
    CHECK(protos[i].payload_max <= ab_caps_limits()->payload_max);
    /* a stream has a codec; a datagram has none */
    CHECK((protos[i].transport == AB_TRANSPORT_STREAM) == (protos[i].codec != NULL));
    /* the coroutine echo runs every stream protocol but the multiplexed
     * ones (h2, h2c) and no datagram one */
    CHECK(ab_caps_runs(&protos[i], AB_EXEC_COROUTINE) ==
          (protos[i].transport == AB_TRANSPORT_STREAM && !protos[i].streams));
  }
  CHECK(ab_caps_protocol(0) == NULL);
  CHECK(ab_caps_protocol(AB_PROTO_H2C + 1) == NULL);
  CHECK(ab_caps_protocol_named("quic") == NULL);
  CHECK(ab_caps_protocol_named(NULL) == NULL);

  const ab_proto_cap_t *udp = ab_caps_protocol(AB_PROTO_UDP);
  CHECK(udp != NULL && udp->transport == AB_TRANSPORT_DATAGRAM);
  CHECK(udp != NULL && udp->payload_max == AB_UDP_MAX_PAYLOAD);
  CHECK(!ab_caps_runs(udp, AB_EXEC_COROUTINE));
  CHECK(ab_caps_runs(udp, AB_EXEC_HOOKS)); /* execution = "lua" over datagrams */
  const ab_proto_cap_t *tcp = ab_caps_protocol(AB_PROTO_TCP);
  CHECK(ab_caps_runs(tcp, AB_EXEC_HOOKS));
  CHECK(!ab_caps_runs(tcp, 0));
  CHECK(!ab_caps_runs(tcp, 40));
  CHECK(!ab_caps_runs(NULL, AB_EXEC_CALLBACK));
  int ntls = 0;
  for (size_t i = 0; i < n; i++) ntls += protos[i].tls;
  CHECK(ntls == 4);
  /* HTTP/2: a stream per message; h2 requires ALPN h2, h2c is cleartext */
  const ab_proto_cap_t *h2 = ab_caps_protocol(AB_PROTO_H2), *h2c = ab_caps_protocol(AB_PROTO_H2C);
  CHECK(h2 && h2->tls && h2->streams && strcmp(h2->alpn, "h2") == 0 && strcmp(h2->codec, "h2") == 0);
  CHECK(h2c && !h2c->tls && h2c->streams && h2c->alpn == NULL);
  CHECK(!ab_caps_runs_churn(h2, AB_EXEC_CALLBACK) && ab_caps_runs_shared(h2, AB_EXEC_CALLBACK));
  CHECK(ab_caps_protocol(AB_PROTO_WSS)->tls && strcmp(ab_caps_protocol(AB_PROTO_WSS)->codec, "ws") == 0);
  CHECK(strcmp(ab_caps_protocol(AB_PROTO_HTTPS)->codec, "http") == 0);

  const ab_cap_name_t *execs = ab_caps_executions(&n);
  CHECK_EQ_U64(n, 3);
  CHECK(ab_caps_id(execs, n, "lua") == AB_EXEC_HOOKS);
  CHECK(ab_caps_id(execs, n, "coroutine") == AB_EXEC_COROUTINE);
  CHECK(ab_caps_id(execs, n, "fibers") == 0);
  CHECK(ab_caps_id(execs, n, NULL) == 0);
  CHECK(strcmp(ab_caps_name(execs, n, AB_EXEC_CALLBACK), "callback") == 0);
  CHECK(ab_caps_name(execs, n, 99) == NULL);

  const ab_cap_name_t *framings = ab_caps_framings(&n);
  CHECK(ab_caps_id(framings, n, "raw") == AB_FRAMING_RAW);
  CHECK(ab_caps_id(framings, n, "length") == AB_FRAMING_LENGTH);
  const ab_cap_name_t *models = ab_caps_models(&n);
  CHECK(ab_caps_id(models, n, "shared") == AB_MODEL_SHARED);
  CHECK(ab_caps_id(models, n, "pool") == AB_MODEL_POOL);
  CHECK(ab_caps_id(models, n, "threads") == 0);

  const ab_caps_limits_t *lim = ab_caps_limits();
  CHECK_EQ_U64(lim->payload_min, AB_MSG_MIN_PAYLOAD);
  CHECK_EQ_U64(lim->payload_max, AB_MSG_MAX_PAYLOAD);
  CHECK_EQ_U64(lim->window_max, 4096);
  CHECK_EQ_U64(lim->threads_max, 256);
  CHECK_EQ_U64(lim->inflight_max, 1073741824);
  CHECK(lim->open_loop == 1);
  TEST_DONE();
}
