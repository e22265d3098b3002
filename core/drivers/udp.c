/* udp.c -- the built-in echo over UDP (docs/protocols.md).
 *
 * Server: one unconnected socket per loop; every datagram is one message,
 * echoed to its sender (work inline, or on the pool:N pool).  A reply the
 * kernel will not take at once (EAGAIN) is dropped and counted: a UDP
 * server does not queue.
 * Client: one connected socket per client, `window` messages in flight,
 * accounted by the window's datagram rules (engine/window.h,
 * window_dgram.h): each message takes any free slot and its reply is
 * matched by the sequence it carries; a message without a reply after
 * `timeout` is lost, its slot freed for the next one; a reply after that
 * is `late`, a second one `duplicated`, one below the highest sequence
 * seen `reordered` (and still completes), each counted for measure-phase
 * messages only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/ab_error.h"
#include "base/clock.h"
#include "drivers/drivers_int.h"
#include "engine/window.h"
#include "proto/framing.h"
#include "base/work.h"

#define UDP_RX 65536
#define DEFAULT_SNDBUF 65536
#define DEFAULT_RCVBUF (4 * 1024 * 1024)

typedef struct ab__udp_job_s {
  ab__job_t job;
  ab__loop_t *loop;
  struct ab__udp_job_s *next;
  struct sockaddr_storage addr;
  size_t len;
  uint8_t data[];
} udp_job_t;

static void set_buffers(uv_udp_t *u, uint32_t snd, uint32_t rcv, ab_udp_buffers_t *rec) {
  int s = (int)(snd ? snd : DEFAULT_SNDBUF), r = (int)(rcv ? rcv : DEFAULT_RCVBUF);
  rec->send_requested = s;
  rec->recv_requested = r;
  uv_send_buffer_size((uv_handle_t *)u, &s);
  uv_recv_buffer_size((uv_handle_t *)u, &r);
  int g = 0;
  uv_send_buffer_size((uv_handle_t *)u, &g);
  rec->send_granted = g;
  g = 0;
  uv_recv_buffer_size((uv_handle_t *)u, &g);
  rec->recv_granted = g;
}

/* ---- server ------------------------------------------------------------ */

static void on_salloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  ab__loop_t *l = h->data;
  (void)hint;
  *buf = uv_buf_init((char *)l->d->udp_rx, UDP_RX);
}

static void reply(ab__loop_t *l, const uint8_t *p, size_t n, const struct sockaddr *to) {
  uv_buf_t b = uv_buf_init((char *)p, (unsigned)n);
  int r = uv_udp_try_send(&l->d->userver, &b, 1, to);
  if (r < 0) l->server_drops++;
}

static void job_done(ab__job_t *job) {
  udp_job_t *j = (udp_job_t *)job;
  ab__loop_t *l = j->loop;
  if (l->phase != AB__PH_STOPPING)
    reply(l, j->data, j->len, (const struct sockaddr *)&j->addr);
  j->next = l->d->udp_free;
  l->d->udp_free = j;
}

static void on_srecv(uv_udp_t *u, ssize_t n, const uv_buf_t *buf,
                     const struct sockaddr *from, unsigned flags) {
  ab__loop_t *l = u->data;
  ab__engine_t *eng = l->eng;
  (void)flags;
  if (n < 0) {
    ab__loop_error(l, (int)n, "udp server: receive");
    return;
  }
  if (from == NULL) return; /* nothing more to read */
  if (flags & UV_UDP_PARTIAL) {
    l->server_drops++;
    return;
  }
  if (eng->pool) {
    l->server_messages++;
    l->server_bytes += (uint64_t)n;
    udp_job_t *j = l->d->udp_free;
    if (j) l->d->udp_free = j->next;
    else j = malloc(sizeof(*j) + UDP_RX); /* grows to the peak in flight */
    if (j == NULL) {
      l->server_drops++;
      return;
    }
    j->job.done = job_done;
    j->loop = l;
    j->len = (size_t)n;
    memcpy(&j->addr, from, from->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                        : sizeof(struct sockaddr_in));
    memcpy(j->data, buf->base, (size_t)n);
    ab__pool_submit(eng->pool, &j->job);
    return;
  }
  l->server_messages++;
  l->server_bytes += (uint64_t)n;
  if (eng->cfg->work) l->work_sink ^= ab_work(eng->cfg->work, l->work_sink + 1);
  reply(l, (const uint8_t *)buf->base, (size_t)n, from);
}

int ab__udp_server_open(ab__loop_t *l) {
  ab__engine_t *eng = l->eng;
  l->d->udp_rx = malloc(UDP_RX);
  if (l->d->udp_rx == NULL) return AB_ENOMEM;
  int r = uv_udp_init(&l->loop, &l->d->userver);
  if (r < 0) return r;
  l->d->userver.data = l;
  l->d->listening = 1;
  int fd = ab__server_socket(l, SOCK_DGRAM);
  if (fd < 0) return fd;
  r = uv_udp_open(&l->d->userver, fd);
  if (r < 0) {
    close(fd);
    return r;
  }
  set_buffers(&l->d->userver, eng->cfg->transport.udp_send_buffer,
              eng->cfg->transport.udp_server_recv_buffer ? eng->cfg->transport.udp_server_recv_buffer
                                               : (eng->cfg->transport.udp_recv_buffer ? eng->cfg->transport.udp_recv_buffer
                                                                             : DEFAULT_RCVBUF),
              &eng->dc->session.udp_server_buffers);
  struct sockaddr_storage ss;
  int len = sizeof(ss);
  r = uv_udp_getsockname(&l->d->userver, (struct sockaddr *)&ss, &len);
  if (r < 0) return r;
  l->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
  return uv_udp_recv_start(&l->d->userver, on_salloc, on_srecv);
}

void ab__udp_free(ab__loop_t *l) {
  while (l->d->udp_free) {
    udp_job_t *j = l->d->udp_free;
    l->d->udp_free = j->next;
    free(j);
  }
  free(l->d->udp_rx);
  l->d->udp_rx = NULL;
}

/* ---- client ------------------------------------------------------------ */

/* A client socket's error (a failure path), worded with the address:
 * ECONNREFUSED on a connected UDP socket is the kernel passing on an ICMP
 * port unreachable for an earlier datagram. */
static void udp_client_error(ab__dclient_t *c, int code, const char *op) {
  ab__loop_t *l = c->h.loop;
  char addr[64], msg[320];
  ab__addr_text(&l->connect_addr, addr, sizeof(addr));
  if (code == UV_ECONNREFUSED)
    snprintf(msg, sizeof(msg), "connection %u: udp %s, server %s: ECONNREFUSED: an ICMP port"
             " unreachable came back for a datagram sent there (nothing listens on that UDP port)",
             c->h.id, op, addr);
  else
    snprintf(msg, sizeof(msg), "connection %u: udp %s, server %s: %s (%s)", c->h.id, op, addr,
             ab_strerror(code), ab_err_name(code));
  ab__loop_error(l, code, msg);
}

static void on_calloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  ab__dclient_t *c = h->data;
  (void)hint;
  *buf = uv_buf_init((char *)c->h.loop->d->udp_rx, UDP_RX);
}

static void on_crecv(uv_udp_t *u, ssize_t n, const uv_buf_t *buf,
                     const struct sockaddr *from, unsigned flags) {
  ab__dclient_t *c = u->data;
  ab__loop_t *l = c->h.loop;
  const ab_case_cfg_t *cfg = l->eng->cfg;
  (void)from;
  if (n < 0) {
    /* ECONNREFUSED from an ICMP port unreachable: count, keep going */
    udp_client_error(c, (int)n, "receive");
    return;
  }
  if (n == 0 || !c->h.alive) return;
  uint64_t now = ab_now_ns();
  int r = (flags & UV_UDP_PARTIAL) || (size_t)n != cfg->payload
              ? AB_ESIZE
              : ab__win_reply_datagram(&c->h, (const uint8_t *)buf->base, (size_t)n, now);
  if (r < 0) {
    ab__loop_error(l, r, r == AB_ESEQ ? "udp client: reply to a message never sent"
                                      : "udp client: reply check");
    return;
  }
  if (r == AB__WIN_NONE) return; /* late or duplicated: counted */
  ab__udp_pump(c);
  ab__loop_check_progress(l);
}

/* One datagram per message: each is stamped just before its send, so a
 * datagram the kernel refuses still took its slot and counts as sent (and
 * then lost, by the timeout). */
void ab__udp_pump(ab__dclient_t *c) {
  ab__loop_t *l = c->h.loop;
  const ab_case_cfg_t *cfg = l->eng->cfg;
  ab__win_grant_t g;
  if (!c->h.alive || ab__win_grant(&c->h, ab_now_ns(), &g) == 0) return;
  while (g.n > 0) {
    ab_msg_fill(c->dgram, cfg->payload, g.phase, c->h.id, g.seq);
    if (ab__win_stamp(&c->h, &g, 1, ab_now_ns()) == 0) return;
    uv_buf_t b = uv_buf_init((char *)c->dgram, cfg->payload);
    int r = uv_udp_try_send(&c->udp, &b, 1, NULL);
    if (r == UV_EAGAIN || r == UV_ENOBUFS) {
      /* the socket buffer is full: this message is lost locally; counted
       * sent and lost so the identity holds; try again later */
      ab__errors_add(l->errors, &l->nerrors, r, 1,
                     "udp send: the socket buffer was full, the message was lost here");
      return;
    }
    if (r == UV_ECONNREFUSED) {
      /* the ICMP error of an earlier datagram, reported on this send:
       * counted, this message lost (sent and timed out) */
      udp_client_error(c, r, "send");
      return;
    }
    if (r < 0) {
      ab__client_fail(c, r, "udp send");
      return;
    }
  }
}

int ab__udp_socket_open(ab__dclient_t *c, const struct sockaddr *addr, uv_udp_recv_cb on_recv) {
  ab__loop_t *l = c->h.loop;
  const ab_case_cfg_t *cfg = l->eng->cfg;
  uint64_t t0 = ab_now_ns();
  char msg[160];
  int r = uv_udp_init(&l->loop, &c->udp);
  if (r == 0) {
    c->udp.data = c;
    r = uv_udp_connect(&c->udp, addr);
    if (r == 0) {
      ab_udp_buffers_t rec;
      set_buffers(&c->udp, cfg->transport.udp_send_buffer, cfg->transport.udp_recv_buffer, &rec);
      if (c->h.id == 0) l->eng->dc->session.udp_client_buffers = rec;
      r = uv_udp_recv_start(&c->udp, on_calloc, on_recv);
    }
  }
  ab_hist_record(&l->connect, ab_now_ns() - t0);
  if (r < 0) {
    snprintf(msg, sizeof(msg), "connection %u: udp socket: %s (%s)", c->h.id,
             ab_strerror(r), ab_err_name(r));
    ab__loop_error(l, r, msg);
    if (c->udp.data) ab__client_close(c);
    return r;
  }
  c->h.alive = 1;
  c->h.loop->ready_clients++;
  return 0;
}

void ab__udp_client_open(ab__dclient_t *c, const struct sockaddr *addr) {
  ab__loop_t *l = c->h.loop;
  c->dgram = malloc(l->eng->cfg->payload);
  if (c->dgram == NULL) {
    char msg[160];
    snprintf(msg, sizeof(msg), "connection %u: udp socket: %s (%s)", c->h.id,
             ab_strerror(AB_ENOMEM), ab_err_name(AB_ENOMEM));
    ab__loop_error(l, AB_ENOMEM, msg);
    return;
  }
  ab__udp_socket_open(c, addr, on_crecv);
}
