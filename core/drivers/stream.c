/* stream.c -- tls, ws, wss, http and https over TCP, callback style.
 *
 *   socket <-> ab_conn_t (io/conn.h: sockio + [TLS] + codec) <-> plaintext
 *          <-> [WebSocket upgrade, ws.h] <-> codec (codecs.h)
 *
 * The connection object moves the bytes exactly as plain tcp's path does
 * (recv/send on the loop's reactor, no libuv stream) and runs the TLS
 * handshake itself; this file adds the WebSocket upgrade and the echo.
 * The client connects, finishes the handshakes before warm-up (their time
 * goes to `handshake_us`, never into RTT), then sends requests built by the
 * codec and checks every reply exactly like the plain TCP client.  The
 * server accepts, answers the upgrade and echoes each request through the
 * codec (its work inline, or on the pool:N pool with replies released in
 * arrival order).  Both ends stop reading while their unsent output --
 * replies, requests held for the pool, pongs and close frames the codec
 * wrote -- is over the bound of io/sockio.h, as the plain ones do: every
 * read's output is flushed before the next read, and a held request counts
 * as owed output (ab__sconn_owe_held); a client's own requests are
 * allowed above the bound (ab__client_allow).  What differs between codecs
 * is asked through the codec interface (codec.h): no codec is named here.
 * Plain `tcp` keeps its own leaner loop (tcp_client.c, tcp_server.c) over
 * the same conn.io.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ab_error.h"
#include "base/clock.h"
#include "base/work.h"
#include "drivers/drivers_int.h"
#include "engine/window.h"
#include "proto/codecs.h"
#include "proto/framing.h"

/* ---- shared ------------------------------------------------------------ */

void ab__layers_free(ab__layers_t *ly) {
  free(ly->ws_hs);
  ly->ws_hs = NULL;
}

/* The case's session parameters come from the first TLS handshake that
 * completes on the side the case measures (a server-only case: its
 * accepted connections; otherwise the clients).  Runs once per
 * connection from the conn (on_tls_done, set by ab__conn_setup), so every
 * driver records it the same way; the engine lock is taken only until
 * one has been recorded. */
static void record_tls(ab__loop_t *l, ab_conn_t *conn, int want_params, int want_sni) {
  ab__dcase_t *dc = l->eng->dc;
  want_params = want_params && !atomic_load_explicit(&dc->tls_params_taken, memory_order_acquire);
  want_sni = want_sni && !atomic_load_explicit(&dc->tls_sni_taken, memory_order_acquire);
  ab_tls_info_t info;
  if ((!want_params && !want_sni) || ab_conn_tls_info(conn, &info) != 0) return;
  pthread_mutex_lock(&l->eng->mu);
  ab_session_info_t *se = &dc->session;
  if (want_sni && !atomic_load_explicit(&dc->tls_sni_taken, memory_order_relaxed) && info.sni &&
      info.sni[0]) {
    snprintf(se->tls_sni, sizeof(se->tls_sni), "%s", info.sni);
    atomic_store_explicit(&dc->tls_sni_taken, 1, memory_order_release);
  }
  if (want_params && !atomic_load_explicit(&dc->tls_params_taken, memory_order_relaxed)) {
    snprintf(se->tls_version, sizeof(se->tls_version), "%s", info.version ? info.version : "");
    snprintf(se->tls_cipher, sizeof(se->tls_cipher), "%s", info.cipher ? info.cipher : "");
    snprintf(se->tls_alpn, sizeof(se->tls_alpn), "%.63s", info.alpn);
    se->tls_resumed = info.resumed;
    atomic_store_explicit(&dc->tls_params_taken, 1, memory_order_release);
  }
  pthread_mutex_unlock(&l->eng->mu);
}

/* SNI is what a server received; the parameters come from the side the
 * case measures. */
static void client_tls_done(ab_conn_t *conn, void *arg) {
  ab__loop_t *l = arg;
  if (l->eng->cfg->role == AB_ROLE_SERVER) return;
  record_tls(l, conn, 1, 0);
  ab__dcase_t *dc = l->eng->dc;
  ab_tls_info_t info;
  atomic_fetch_add_explicit(&dc->tls_handshakes, 1, memory_order_relaxed);
  if (ab_conn_tls_info(conn, &info) == 0 && info.resumed)
    atomic_fetch_add_explicit(&dc->tls_resumed, 1, memory_order_relaxed);
}

static void server_tls_done(ab_conn_t *conn, void *arg) {
  ab__loop_t *l = arg;
  record_tls(l, conn, l->eng->cfg->role == AB_ROLE_SERVER, 1);
}

int ab__conn_setup(ab__loop_t *l, ab_conn_t *conn, int is_client, int codec, uint32_t id) {
  ab__engine_t *eng = l->eng;
  uint64_t t0 = ab_now_ns(); /* the session's setup starts here (handshake_us) */
  ab_tls_conn_t *tls = NULL;
  int r = 0;
  if (eng->dc->use_tls)
    r = ab_tls_conn_new(is_client ? eng->dc->tls_client : eng->dc->tls_server, is_client,
                        is_client ? eng->dc->verify_host : NULL, &tls);
  if (r < 0) return r;
  ab_conn_init(conn, tls, l->d->cipher_rx);
  conn->t_setup = t0;
  conn->on_tls_done = is_client ? client_tls_done : server_tls_done;
  conn->tls_done_arg = l;
  if (!codec) return 0;
  const ab_codec_vt_t *vt = eng->dc->codec_vt;
  uint64_t max_msg = is_client || vt->fixed_size ? eng->cfg->payload : eng->max_frame;
  r = ab_codec_create(vt, ab_conn_out(conn), max_msg, is_client, &conn->codec);
  if (r == 0 && is_client) r = ab_codec_set_peer_host(conn->codec, eng->dc->host);
  if (r == 0 && is_client && vt == &ab_codec_h2) r = ab_h2_set_scheme(conn->codec, eng->dc->use_tls);
  if (r == 0 && vt == &ab_codec_h2) {
    const ab_transport_opts_t *t = &eng->cfg->transport;
    ab_h2_settings_t hs = {t->h2_max_concurrent_streams, t->h2_initial_window_size,
                           t->h2_max_frame_size, t->h2_header_table_size,
                           t->h2_initial_window_size_set, t->h2_header_table_size_set};
    r = ab_h2_set_settings(conn->codec, &hs);
  }
  if (r == 0 && is_client && eng->dc->requests)
    r = ab_codec_set_requests(conn->codec, eng->dc->requests, id);
  return r;
}

/* A multiplexing codec's counts (HTTP/2) into the loop; the first
 * connection's SETTINGS, and the smallest stream cap, into the session. */
static void fold_mux(ab__loop_t *l, const ab_codec_stats_t *st) {
  const uint64_t *rs = st->mux.resets;
  l->h2_responses_1xx += st->mux.responses[1];
  l->h2_responses_2xx += st->mux.responses[2];
  l->h2_responses_3xx += st->mux.responses[3];
  l->h2_responses_4xx += st->mux.responses[4];
  l->h2_responses_5xx += st->mux.responses[5];
  l->h2_rst_no_error += rs[AB_RST_NO_ERROR];
  l->h2_rst_protocol_error += rs[AB_RST_PROTOCOL];
  l->h2_rst_internal_error += rs[AB_RST_INTERNAL];
  l->h2_rst_flow_control_error += rs[AB_RST_FLOW_CONTROL];
  l->h2_rst_refused_stream += rs[AB_RST_REFUSED];
  l->h2_rst_cancel += rs[AB_RST_CANCEL];
  l->h2_rst_other += rs[AB_RST_OTHER];
  l->h2_goaways += st->mux.goaways;
  l->h2_goaway_unprocessed += st->mux.goaway_unprocessed;
  if (st->mux.goaway_last_stream > l->h2_goaway_last_stream)
    l->h2_goaway_last_stream = st->mux.goaway_last_stream;
  if (st->mux.goaway_code > l->h2_goaway_code) l->h2_goaway_code = st->mux.goaway_code;
  l->h2_stall_ns += st->mux.stall_ns;
  l->h2_header_bytes_out += st->mux.header_bytes_out;
  l->h2_header_bytes_in += st->mux.header_bytes_in;
  l->h2_data_bytes_out += st->mux.data_bytes_out;
  l->h2_data_bytes_in += st->mux.data_bytes_in;
  ab_session_info_t *se = &l->eng->dc->session;
  pthread_mutex_lock(&l->eng->mu);
  if (se->h2_ours[0] == 0 && st->mux.ours[0]) memcpy(se->h2_ours, st->mux.ours, sizeof(se->h2_ours));
  if (!se->h2_peer_seen && st->mux.peer_seen) {
    memcpy(se->h2_peer, st->mux.peer, sizeof(se->h2_peer));
    se->h2_peer_seen = 1;
  }
  if (st->peer_max_streams && (se->h2_cap == 0 || st->peer_max_streams < se->h2_cap))
    se->h2_cap = st->peer_max_streams;
  pthread_mutex_unlock(&l->eng->mu);
}

void ab__conn_fold_stats(ab__loop_t *l, const ab_conn_t *conn) {
  if (conn->codec == NULL) return;
  ab_codec_stats_t st = {0};
  ab_codec_stats(conn->codec, &st);
  /* each status its own class ("HTTP 404"); past the codec's table, the
   * rest under AB_EHTTPSTATUS */
  uint64_t rest = st.status_errors;
  for (int i = 0; i < st.nstatus; i++) {
    char why[64];
    snprintf(why, sizeof(why), "a response with status %d", st.by_status[i].status);
    ab__errors_add(l->errors, &l->nerrors, AB_ERR_HTTP(st.by_status[i].status), st.by_status[i].n,
                   why);
    rest -= st.by_status[i].n;
  }
  if (rest) ab__errors_add(l->errors, &l->nerrors, AB_EHTTPSTATUS, rest, NULL);
  l->status_failures += st.status_errors;
  if (conn->codec->vt->mux_submit) fold_mux(l, &st);
}

void ab__consume(uint8_t *buf, size_t *len, size_t used) {
  if (used == 0) return;
  *len -= used;
  if (*len > 0) memmove(buf, buf + used, *len);
}

static ab_sockio_kept_t client_in(ab__dclient_t *c) {
  return (ab_sockio_kept_t){&c->rbuf, &c->rcap, &c->rlen};
}

static ab_sockio_kept_t sconn_in(ab__sconn_t *s) {
  return (ab_sockio_kept_t){&s->rbuf, &s->rcap, &s->rlen};
}

/* ---- client ------------------------------------------------------------ */

void ab__client_reported(ab__dclient_t *c) {
  if (c->ly.reported) return;
  c->ly.reported = 1;
  /* shared:N: a first connect is counted by its home, told from this
   * thread; a reopen's end is the connection's own (counted and woken
   * here, holding its lock) */
  if (c->h.loop->eng->shared && !c->h.reopening)
    ab__loop_connect_done_on(c->h.home, c->h.loop);
  else ab__client_connect_done(&c->h);
}

static void handshake_failed(ab__dclient_t *c, int code, const char *what, const char *detail) {
  char why[200], msg[320];
  snprintf(msg, sizeof(msg), "connection %u: %s: %s", c->h.id, what,
           detail && detail[0] ? detail : ab_conn_reason(&c->conn, code, why, sizeof(why)));
  ab__client_setup_error(&c->h, code, msg); /* retried, or the run's error */
  c->h.alive = 0;
  ab__client_close(c);
  ab__client_reported(c);
}

void ab__client_ready(ab__dclient_t *c) {
  ab__loop_t *l = c->h.loop;
  c->ly.state = AB__LY_READY;
  c->h.alive = 1;
  if (!c->h.reopening || c->h.first_pending) l->ready_clients++; /* the coordinator's count of first connects */
  if (l->eng->dc->use_tls || l->eng->dc->use_ws)
    ab_hist_record(&l->handshake, ab_now_ns() - c->conn.t_setup);
  ab__client_reported(c);
}

static void send_upgrade(ab__dclient_t *c) {
  char key[AB_WS_KEY_LEN + 1];
  char req[1024];
  c->ly.ws_hs = calloc(1, sizeof(ab_ws_hs_t));
  if (c->ly.ws_hs == NULL || ab_ws_new_key(key) < 0 ||
      ab_ws_hs_init(c->ly.ws_hs, 1, key) < 0) {
    handshake_failed(c, AB_ENOMEM, "websocket upgrade", NULL);
    return;
  }
  int n = ab_ws_request(req, sizeof(req), c->h.loop->eng->dc->host, "/echo", key);
  if (n < 0) {
    handshake_failed(c, AB_EINVAL, "websocket upgrade request", NULL);
    return;
  }
  c->ly.state = AB__LY_HS_WS;
  int r = ab_conn_send(&c->conn, (const uint8_t *)req, (size_t)n);
  if (r < 0) handshake_failed(c, r, "websocket upgrade request", NULL);
}

size_t ab__msg_room(const ab__loop_t *l) {
  const ab__dcase_t *dc = l->eng->dc;
  return dc->requests ? dc->request_max : dc->codec_vt->max_overhead + l->eng->cfg->payload;
}

size_t ab__client_build(ab__dclient_t *c, uint8_t *dst, uint32_t n, uint8_t ph, uint64_t seq) {
  const ab__engine_t *eng = c->h.loop->eng;
  const ab_codec_vt_t *vt = eng->dc->codec_vt;
  ab_codec_t *codec = c->conn.codec;
  size_t total = 0;
  if (eng->dc->requests) {
    for (uint32_t i = 0; i < n; i++) total += vt->client_request(codec, dst + total, seq + i);
    return total;
  }
  uint32_t payload = eng->cfg->payload;
  if (vt->plain_frames) { /* [prefix] payload: no codec call per message */
    int pfx = vt->plain_frames == AB_FRAMES_LENGTH;
    for (uint32_t i = 0; i < n; i++) {
      uint8_t *m = dst + total;
      size_t hdr = pfx ? ab_prefix_encode(m, payload) : 0;
      ab_msg_fill(m + hdr, payload, ph, c->h.id, seq + i);
      total += hdr + payload;
    }
    return total;
  }
  for (uint32_t i = 0; i < n; i++) {
    uint8_t *m = dst + total;
    size_t hdr = vt->client_begin(codec, m, payload);
    ab_msg_fill(m + hdr, payload, ph, c->h.id, seq + i);
    size_t tail = vt->client_end(codec, m + hdr, payload, m + hdr + payload);
    total += hdr + payload + tail;
  }
  return total;
}

/* A multiplexing codec (HTTP/2): each message its own stream, at most as
 * many as the peer lets us open now (its SETTINGS_MAX_CONCURRENT_STREAMS);
 * the codec writes the frames. */
static void client_pump_mux(ab__dclient_t *c, uint64_t now) {
  ab__loop_t *l = c->h.loop;
  const ab__engine_t *eng = l->eng;
  ab_codec_t *codec = c->conn.codec;
  const ab_codec_vt_t *vt = codec->vt;
  ab__win_grant_t g;
  if (ab__win_grant(&c->h, now, &g) == 0) return;
  uint32_t room = vt->mux_room(codec);
  uint32_t n = g.n < room ? g.n : room;
  if (n == 0) return;
  uint32_t payload = eng->cfg->payload;
  if (!eng->dc->requests) {
    for (uint32_t i = 0; i < n; i++) {
      uint8_t *body = vt->mux_body(codec, i, payload);
      if (body == NULL) {
        vt->mux_submit(codec, 0, 0);
        ab__client_fail(c, AB_ENOMEM, "send buffer");
        return;
      }
      ab_msg_fill(body, payload, g.phase, c->h.id, g.seq + i);
    }
  }
  uint64_t seq = g.seq;
  /* built too late: never sent, never counted */
  if (ab__win_stamp(&c->h, &g, n, ab_now_ns()) == 0) {
    vt->mux_submit(codec, 0, 0);
    return;
  }
  int r = vt->mux_submit(codec, seq, n);
  if (r == 0) r = ab_conn_flush(&c->conn);
  if (r < 0 && r != AB_ECLOSED) ab__client_fail(c, r, "send");
}

static void client_pump(ab__dclient_t *c, uint64_t now) {
  ab__loop_t *l = c->h.loop;
  ab__win_grant_t g;
  if (!c->h.alive || c->ly.state != AB__LY_READY) return;
  if (c->conn.codec->vt->mux_submit) {
    client_pump_mux(c, now);
    return;
  }
  if (ab__win_grant(&c->h, now, &g) == 0) {
    if (ab__win_spent(&c->h)) ab__client_recycle(c); /* churn */
    return;
  }
  uint32_t n = g.n;
  ab_outbuf_t *out = ab_conn_out(&c->conn);
  uint8_t *dst = ab_outbuf_reserve(out, (size_t)n * ab__msg_room(l));
  if (dst == NULL) {
    ab__client_fail(c, AB_ENOMEM, "send buffer");
    return;
  }
  size_t total = ab__client_build(c, dst, n, g.phase, g.seq);
  /* built too late: never sent, never counted */
  if (ab__win_stamp(&c->h, &g, n, ab_now_ns()) == 0) return;
  ab__client_count_sent(l, g.phase, total);
  ab_outbuf_commit(out, total);
  int r = ab_conn_flush(&c->conn);
  if (r < 0 && r != AB_ECLOSED) ab__client_fail(c, r, "send");
}

void ab__sclient_pump(ab__dclient_t *c) { client_pump(c, ab_now_ns()); }

/* One reply: check it and account for it.  Returns 0 or an error code
 * (AB_ETIMEDOUT: it came later than the timeout; AB_EPEERCLOSE: it
 * counted, and the server closes after it -- ab__client_fail takes that
 * as the orderly end it is). */
int ab__client_reply(ab__dclient_t *c, const ab_msgview_t *msg, uint64_t now) {
  const ab_codec_vt_t *vt = c->conn.codec->vt;
  if (vt->mux_reply) {
    /* its own stream: matched by the message the stream carried */
    uint64_t seq = 0;
    const char *why = NULL;
    int err = vt->mux_reply(c->conn.codec, &seq, &why);
    if (err == AB_ESEQ) return err;
    if (err > 0) { /* never processed by the peer: never sent */
      int r = ab__win_unsend_stream(&c->h, seq, now);
      return r < 0 ? r : 0;
    }
    if (err < 0) {
      int r = ab__win_complete_stream(&c->h, 0, c->h.id, seq, now, 0, err, 0,
                                      why ? why : "a stream that failed");
      return r < 0 ? r : 0;
    }
    if (c->h.loop->eng->dc->requests) {
      int status = 0;
      int verdict = vt->reply_verdict(c->conn.codec, &status);
      int r = ab__win_complete_stream(&c->h, 0, c->h.id, seq, now, status > 0 ? (uint32_t)status : 0,
                                      verdict, verdict < 0,
                                      "a response whose status is outside the success set");
      return r < 0 ? r : 0;
    }
    if (msg->len != c->h.loop->eng->cfg->payload) return AB_ESIZE;
    int r = ab__win_reply_stream(&c->h, msg->data, msg->len, seq, now);
    return r < 0 ? r : 0;
  }
  if (c->h.loop->eng->dc->requests) {
    /* request mode: matched by position, judged by its status */
    int status = 0;
    int err = c->conn.codec->vt->reply_verdict(c->conn.codec, &status);
    int r = ab__win_complete_coded(&c->h, now, status > 0 ? (uint32_t)status : 0, err);
    if (r >= 0 && ab_codec_closes_after(c->conn.codec)) return AB_EPEERCLOSE;
    return r < 0 ? r : 0;
  }
  if (msg->len != c->h.loop->eng->cfg->payload) return AB_ESIZE;
  int r = ab__win_reply(&c->h, msg->data, msg->len, now);
  if (r >= 0 && ab_codec_closes_after(c->conn.codec)) return AB_EPEERCLOSE;
  return r < 0 ? r : 0;
}

/* The client's read failed (end of stream, a reset, TLS). */
static void client_read_failed(ab__dclient_t *c, int code) {
  const char *what = "read";
  code = ab_err_stream_end(code, AB_SIDE_CLIENT);
  if (c->ly.state != AB__LY_READY) {
    handshake_failed(c, code, "handshake", NULL);
    return;
  }
  if (code == AB_ECLOSED && ab_codec_client_eof(c->conn.codec) < 0) {
    code = AB_EPROTO;
    what = "connection closed in the middle of a response (premature EOF)";
  }
  ab__client_fail(c, code, what);
}

/* The WebSocket upgrade's answer.  Returns 1 when the connection is ready
 * for replies, 0 when it waits for more (or failed). */
static int client_upgrade(ab__dclient_t *c) {
  size_t used = 0;
  int h = ab_ws_hs_feed(c->ly.ws_hs, c->rbuf, c->rlen, &used);
  ab__consume(c->rbuf, &c->rlen, used);
  if (h < 0) {
    handshake_failed(c, AB_EPROTO, "websocket upgrade", "the server's 101 answer was not valid");
    return 0;
  }
  if (h == 0) return 0;
  free(c->ly.ws_hs);
  c->ly.ws_hs = NULL;
  ab__client_ready(c);
  return 1;
}

/* Every whole reply in the input: checked and counted.  0, or -1 after
 * failing the connection. */
static int client_take_replies(ab__dclient_t *c, uint64_t now) {
  const ab_codec_vt_t *vt = c->h.loop->eng->dc->codec_vt;
  size_t off = 0;
  for (;;) {
    size_t used = 0;
    ab_msgview_t msg;
    int got = vt->client_parse(c->conn.codec, c->rbuf + off, c->rlen - off, &used, &msg);
    int r = got > 0 ? ab__client_reply(c, &msg, now) : got;
    off += used;
    if (r < 0) {
      ab_conn_flush(&c->conn); /* a close frame the codec wrote */
      ab__client_fail(c, r, "reply");
      return -1;
    }
    /* a codec may hand out several replies from one read (HTTP/2: every
     * stream that completed in it), the later ones with used 0 */
    if (got == 0 && used == 0) break;
    if (got == 0 && off >= c->rlen) break;
  }
  ab__client_count_received(c->h.loop, off, now);
  ab__consume(c->rbuf, &c->rlen, off);
  /* pongs and other control answers the codec queued */
  ab_outbuf_t *out = ab_conn_out(&c->conn);
  if (out->len > 0) ab_conn_flush(&c->conn);
  return 0;
}

static void client_on_readable(ab_conn_t *conn) {
  ab__dclient_t *c = conn->data;
  ab__loop_t *l = c->h.loop = conn->io.watch.running; /* shared:N: this thread's */
  while (!c->h.closing) {
    size_t room = 0;
    ssize_t n = ab_conn_recv(conn, &room);
    if (n < 0 && n != AB_ECLOSED) {
      client_read_failed(c, (int)n);
      return;
    }
    if (n == 0 && c->rlen == 0) return;
    uint64_t now = ab_now_ns();
    if (c->ly.state == AB__LY_HS_WS && !client_upgrade(c)) return;
    if (!c->h.alive) return;
    if (client_take_replies(c, now) < 0) return;
    if (n == AB_ECLOSED) {
      ab__client_fail(c, AB_ECLOSED, "TLS close_notify");
      return;
    }
    client_pump(c, now);
    ab__loop_check_progress(l);
    if (n == 0 || (size_t)n < room) return;
  }
}

static void client_on_ready(ab_conn_t *conn) {
  ab__dclient_t *c = conn->data;
  c->h.loop = conn->io.watch.running;
  const char *want = c->h.loop->eng->dc->require_alpn;
  ab_tls_info_t info;
  if (want && ab_conn_tls_info(conn, &info) == 0 && strcmp(info.alpn, want) != 0) {
    char why[200];
    snprintf(why, sizeof(why), "the server selected %s%.60s%s by ALPN, not %.20s",
             info.alpn[0] ? "\"" : "", info.alpn[0] ? info.alpn : "no protocol",
             info.alpn[0] ? "\"" : "", want);
    handshake_failed(c, AB_EPROTO, "TLS ALPN", why);
    return;
  }
  if (c->h.loop->eng->dc->use_ws) send_upgrade(c);
  else ab__client_ready(c);
}

static void client_on_error(ab_conn_t *conn, int err) {
  ab__dclient_t *c = conn->data;
  c->h.loop = conn->io.watch.running;
  if (c->ly.state == AB__LY_READY) ab__client_fail(c, err, "socket");
  else if (err == AB_EPROTO) handshake_failed(c, err, "TLS handshake", ab_conn_error_text(conn));
  else handshake_failed(c, ab_err_stream_end(err, AB_SIDE_CLIENT), "handshake", NULL);
}

static const ab_conn_cbs_t client_cbs = {
    .on_ready = client_on_ready,
    .on_readable = client_on_readable,
    .on_error = client_on_error,
};

static void client_connected(uv_connect_t *req, int status) {
  ab__dclient_t *c = req->data;
  ab__loop_t *l = c->h.loop;
  uint64_t now = ab_now_ns();
  ab_hist_record(&l->connect, now - c->connect_start_ns);
  if (status == UV_ECANCELED && c->h.closing) return; /* failed already */
  if (status < 0) {
    handshake_failed(c, status, "connect", NULL);
    return;
  }
  int r = ab__conn_setup(l, &c->conn, 1, 1, c->h.id);
  if (r < 0) {
    handshake_failed(c, r, "connection setup", NULL);
    return;
  }
  c->conn.data = c;
  c->ly.state = AB__LY_HS_TLS;
  /* shared:N: other threads may run it as soon as it is watched */
  ab__client_take(l, &c->h);
  ab_reactor_watch_set_lock(&c->conn.io.watch, l->eng->shared ? &c->h.mu : NULL);
  r = ab_conn_start(&c->conn, &l->d->reactor, &c->tcp, client_in(c), &client_cbs);
  if (r == 0) r = ab__client_allow(c, l->eng->dc->codec_vt->max_overhead + l->eng->cfg->payload);
  if (r < 0) {
    if (r == AB_EPROTO) handshake_failed(c, r, "TLS handshake", ab_conn_error_text(&c->conn));
    else handshake_failed(c, r, "read start", NULL);
  }
  ab__client_give(l, &c->h);
}

void ab__sclient_connect_expired(ab__dclient_t *c) {
  if (c->ly.reported || c->h.closing) return;
  if (c->conn.data == NULL) {
    /* still in its TCP connect (client_connected sees UV_ECANCELED) */
    ab__client_connect_timed_out(c);
    ab__client_reported(c);
    return;
  }
  handshake_failed(c, AB_ETIMEDOUT, "handshake", "did not finish within the timeout (ETIMEDOUT)");
}

void ab__sclient_connect(ab__dclient_t *c, const struct sockaddr *addr) {
  ab__loop_t *l = c->h.loop;
  int r = ab__client_tcp_init(l, &c->tcp);
  if (r == 0) {
    c->tcp.data = c;
    c->creq.data = c;
    uv_tcp_nodelay(&c->tcp, 1);
    c->connect_start_ns = ab_now_ns();
    r = ab__client_tcp_bind(l, &c->tcp, c->h.id);
    if (r == 0) r = uv_tcp_connect(&c->creq, &c->tcp, addr, client_connected);
  }
  if (r < 0) {
    if (c->tcp.data == NULL) {
      /* never initialised: nothing to close */
      char msg[160];
      snprintf(msg, sizeof(msg), "connection %u: connect: %s (%s)", c->h.id, ab_strerror(r),
               ab_err_name(r));
      ab__client_setup_error(&c->h, r, msg);
      c->ly.reported = 1;
      ab__client_connect_done(&c->h);
      if (c->h.reopen) ab__client_closed(&c->h); /* no close callback comes */
      return;
    }
    handshake_failed(c, r, "connect", NULL);
  }
}

/* ---- server ------------------------------------------------------------ */

/* The reply to one request (work already done). */
static int server_reply(ab__sconn_t *s, const uint8_t *p, size_t n) {
  return s->loop->eng->dc->codec_vt->server_reply(s->conn.codec, p, n);
}

static void close_after_flush(ab__sconn_t *s) {
  ab_conn_flush(&s->conn);
  ab__sconn_close(s);
}

void ab__sserver_release(ab__sconn_t *s, uint64_t n) {
  s->jobs_back += n;
  if (s->closing || s->lingering) return;
  while (s->jobs_back > 0 && s->hlen - s->hoff >= 4) {
    uint32_t len;
    memcpy(&len, s->held + s->hoff, 4);
    int r = server_reply(s, s->held + s->hoff + 4, len);
    s->hoff += 4 + (size_t)len;
    s->jobs_back--;
    s->jobs_held--;
    if (r < 0) {
      close_after_flush(s);
      return;
    }
  }
  if (s->hoff == s->hlen) s->hoff = s->hlen = 0;
  ab__sconn_owe_held(s, s->hlen - s->hoff);
  int r = ab_conn_flush(&s->conn);
  if (r < 0) ab__sconn_error(s, r, "write");
  else ab__sconn_finish_if_done(s);
}

static int hold(ab__sconn_t *s, const ab_msgview_t *m) {
  size_t need = 4 + m->len;
  if (s->hoff > 0 && s->hlen + need > s->hcap) {
    memmove(s->held, s->held + s->hoff, s->hlen - s->hoff);
    s->hlen -= s->hoff;
    s->hoff = 0;
  }
  if (ab_buf_grow(&s->held, &s->hcap, s->hlen, need) != 0) return AB_ENOMEM;
  uint32_t len = (uint32_t)m->len;
  memcpy(s->held + s->hlen, &len, 4);
  memcpy(s->held + s->hlen + 4, m->data, m->len);
  s->hlen += need;
  return 0;
}

/* The client's upgrade request.  Returns 1 when the connection is ready
 * for requests, 0 when it waits for more (or was closed). */
static int server_upgrade(ab__sconn_t *s) {
  size_t used = 0;
  int h = ab_ws_hs_feed(s->ly.ws_hs, s->rbuf, s->rlen, &used);
  if (h == 0) {
    ab__consume(s->rbuf, &s->rlen, used);
    return 0;
  }
  char reply[512];
  int n = ab_ws_hs_reply(s->ly.ws_hs, reply, sizeof(reply));
  if (n > 0) ab_outbuf_append(ab_conn_out(&s->conn), reply, (size_t)n);
  if (h < 0) {
    ab__loop_error(s->loop, AB_EPROTO, "server: websocket upgrade refused");
    close_after_flush(s);
    return 0;
  }
  ab__consume(s->rbuf, &s->rlen, used);
  free(s->ly.ws_hs);
  s->ly.ws_hs = NULL;
  s->ly.state = AB__LY_READY;
  return 1;
}

/* Every whole request in the input: worked on and answered (or handed to
 * the pool).  0, or -1 after closing the connection. */
static int server_take_requests(ab__sconn_t *s) {
  ab__loop_t *l = s->loop;
  ab__engine_t *eng = l->eng;
  const ab_codec_vt_t *vt = eng->dc->codec_vt;
  size_t off = 0;
  for (;;) {
    size_t used = 0;
    ab_msgview_t msg;
    int r = vt->server_parse(s->conn.codec, s->rbuf + off, s->rlen - off, &used, &msg);
    off += used;
    if (r == 0) break;
    if (r < 0) {
      if (r != AB_ECLOSED) {
        char why[160], what[200];
        snprintf(what, sizeof(what), "server: request from a client: %s",
                 ab_conn_reason(&s->conn, r, why, sizeof(why)));
        ab__loop_error(l, r, what);
      }
      close_after_flush(s);
      return -1;
    }
    l->server_messages++;
    l->server_bytes += msg.len;
    if (eng->pool) {
      if (hold(s, &msg) != 0) {
        ab__sconn_error(s, AB_ENOMEM, "held requests");
        return -1;
      }
      s->jobs_out++;
      s->jobs_held++;
      ab__sconn_submit(s);
    } else {
      if (eng->cfg->work) l->work_sink ^= ab_work(eng->cfg->work, l->work_sink + 1);
      if (server_reply(s, msg.data, msg.len) < 0) {
        ab__consume(s->rbuf, &s->rlen, off);
        close_after_flush(s);
        return -1;
      }
    }
  }
  ab__consume(s->rbuf, &s->rlen, off);
  if (eng->pool) ab__sconn_owe_held(s, s->hlen - s->hoff);
  int r = ab_conn_flush(&s->conn);
  if (r < 0) {
    ab__sconn_error(s, r, "write");
    return -1;
  }
  return 0;
}

/* After the client's close_notify (answered with ours by the conn): the
 * requests that came before it get no reply (TLS can no longer carry one),
 * and the connection stays open until the client's side of TCP ends, so
 * that how the client left is seen every time, not by timing: its FIN is
 * an orderly close, its RST (a client that resets after its close_notify)
 * a reset (ab__sconn_error).  Bytes that still come are read and dropped. */
static void server_linger(ab__sconn_t *s) {
  ab_conn_t *conn = &s->conn;
  s->lingering = 1;
  s->rlen = 0;
  while (!s->closing && ab_sockio_may_read(&conn->io)) {
    ssize_t n = ab_conn_recv_discard(conn);
    if (n == 0) return;
    if (n < 0) {
      ab__sconn_error(s, (int)n, "read");
      return;
    }
  }
}

/* Reads until the socket has nothing more or reading stops (backpressure:
 * a client that does not read its replies is pushed back). */
static void server_on_readable(ab_conn_t *conn) {
  ab__sconn_t *s = conn->data;
  s->loop = conn->io.watch.running; /* shared:N: this thread's loop */
  if (s->lingering) {
    server_linger(s);
    return;
  }
  while (!s->closing && ab_sockio_may_read(&conn->io)) {
    size_t room = 0;
    ssize_t n = ab_conn_recv(conn, &room);
    if (n == AB_EPROTO) {
      /* with OpenSSL's reason, as the client side says it */
      char what[200];
      snprintf(what, sizeof(what), "TLS: %s", ab_conn_error_text(conn));
      ab__sconn_error(s, (int)n, what);
      return;
    }
    if (n == UV_EOF && !s->eof) {
      ab__sconn_half_closed(s); /* the replies owed go out first */
      return;
    }
    if (n < 0 && n != AB_ECLOSED) {
      ab__sconn_read_failed(s, n);
      return;
    }
    if (n == AB_ECLOSED) {
      server_linger(s);
      return;
    }
    if (n == 0 && s->rlen == 0) return;
    if (s->ly.state == AB__LY_HS_WS && !server_upgrade(s)) return;
    if (server_take_requests(s) < 0) return;
    if (n == 0 || (size_t)n < room) return;
  }
}

static void server_on_ready(ab_conn_t *conn) {
  ab__sconn_t *s = conn->data;
  s->loop = conn->io.watch.running;
  ab__engine_t *eng = s->loop->eng;
  s->ly.state = eng->dc->use_ws ? AB__LY_HS_WS : AB__LY_READY;
}

static void server_on_error(ab_conn_t *conn, int err) {
  ab__sconn_t *s = conn->data;
  s->loop = conn->io.watch.running;
  if (!conn->ready && err == AB_EPROTO) {
    char what[200];
    snprintf(what, sizeof(what), "TLS handshake: %s", ab_conn_error_text(conn));
    ab__sconn_error(s, err, what);
    return;
  }
  ab__sconn_read_failed(s, err);
}

static void server_on_drained(ab_conn_t *conn) {
  ab__sconn_t *s = conn->data;
  s->loop = conn->io.watch.running;
  ab__sconn_finish_if_done(s);
}

static const ab_conn_cbs_t server_cbs = {
    .on_ready = server_on_ready,
    .on_readable = server_on_readable,
    .on_error = server_on_error,
    .on_drained = server_on_drained,
};

void ab__sserver_accept(ab__sconn_t *s) {
  ab__loop_t *l = s->loop;
  ab__engine_t *eng = l->eng;
  int r = ab__conn_setup(l, &s->conn, 0, 1, 0);
  s->conn.data = s;
  if (r == 0 && eng->dc->use_ws) {
    s->ly.ws_hs = calloc(1, sizeof(ab_ws_hs_t));
    r = s->ly.ws_hs ? ab_ws_hs_init(s->ly.ws_hs, 0, NULL) : AB_ENOMEM;
  }
  if (r < 0) {
    ab__sconn_error(s, r, "accept setup");
    return;
  }
  s->ly.state = AB__LY_HS_TLS;
  s->conn.io.watch.lock = eng->shared ? &s->mu : NULL; /* a new connection: nobody reads it yet */
  r = ab_conn_start(&s->conn, &l->d->reactor, &s->tcp, sconn_in(s), &server_cbs);
  if (r < 0) ab__sconn_error(s, r, "read start");
}
