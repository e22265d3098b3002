/* udp.c -- the built-in echo over UDP (docs/protocols.md).
 *
 * Server: one unconnected socket per loop; every datagram is one message,
 * echoed to its sender (work inline, or on the shared:N pool).  A reply the
 * kernel will not take at once (EAGAIN) is dropped and counted: a UDP
 * server does not queue.
 * Client: one connected socket per client, `window` messages in flight.  A
 * message without a reply after `timeout` is lost: its slot is freed and
 * the window keeps moving.  A reply that arrives after that is `late` (never
 * a completion with a huge RTT); a second reply to a completed message is
 * `duplicated`; a reply whose sequence is below the highest one seen on the
 * connection is `reordered` (and still completes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/ab_error.h"
#include "base/clock.h"
#include "engine/engine_int.h"
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
  *buf = uv_buf_init((char *)l->udp_rx, UDP_RX);
}

static void reply(ab__loop_t *l, const uint8_t *p, size_t n, const struct sockaddr *to) {
  uv_buf_t b = uv_buf_init((char *)p, (unsigned)n);
  int r = uv_udp_try_send(&l->userver, &b, 1, to);
  if (r < 0) l->server_drops++;
}

static void job_done(ab__job_t *job) {
  udp_job_t *j = (udp_job_t *)job;
  ab__loop_t *l = j->loop;
  if (l->phase != AB__PH_STOPPING)
    reply(l, j->data, j->len, (const struct sockaddr *)&j->addr);
  j->next = l->udp_free;
  l->udp_free = j;
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
    l->srv_messages++;
    l->srv_bytes += (uint64_t)n;
    udp_job_t *j = l->udp_free;
    if (j) l->udp_free = j->next;
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
  l->srv_messages++;
  l->srv_bytes += (uint64_t)n;
  if (eng->cfg->work) l->work_sink ^= ab_work(eng->cfg->work, l->work_sink + 1);
  reply(l, (const uint8_t *)buf->base, (size_t)n, from);
}

int ab__udp_server_open(ab__loop_t *l) {
  ab__engine_t *eng = l->eng;
  l->udp_rx = malloc(UDP_RX);
  if (l->udp_rx == NULL) return AB_ENOMEM;
  int r = uv_udp_init(&l->loop, &l->userver);
  if (r < 0) return r;
  l->userver.data = l;
  l->listening = 1;
  int fd = ab__server_socket(l, SOCK_DGRAM);
  if (fd < 0) return fd;
  r = uv_udp_open(&l->userver, fd);
  if (r < 0) {
    close(fd);
    return r;
  }
  set_buffers(&l->userver, eng->cfg->udp_send_buffer,
              eng->cfg->udp_server_recv_buffer ? eng->cfg->udp_server_recv_buffer
                                               : (eng->cfg->udp_recv_buffer ? eng->cfg->udp_recv_buffer
                                                                             : DEFAULT_RCVBUF),
              &eng->udp_server_buffers);
  struct sockaddr_storage ss;
  int len = sizeof(ss);
  r = uv_udp_getsockname(&l->userver, (struct sockaddr *)&ss, &len);
  if (r < 0) return r;
  l->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
  return uv_udp_recv_start(&l->userver, on_salloc, on_srecv);
}

void ab__udp_free(ab__loop_t *l) {
  while (l->udp_free) {
    udp_job_t *j = l->udp_free;
    l->udp_free = j->next;
    free(j);
  }
  free(l->udp_rx);
  l->udp_rx = NULL;
}

/* ---- client ------------------------------------------------------------ */

static void outcome_set(ab__client_t *c, uint64_t seq, uint8_t st) {
  uint32_t i = (uint32_t)(seq % c->out_n);
  c->out_seq[i] = seq;
  c->out_state[i] = st;
}

static uint8_t outcome_get(const ab__client_t *c, uint64_t seq) {
  uint32_t i = (uint32_t)(seq % c->out_n);
  return c->out_seq[i] == seq ? c->out_state[i] : AB__UDP_OUT_NONE;
}

static void on_calloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  ab__client_t *c = h->data;
  (void)hint;
  *buf = uv_buf_init((char *)c->loop->udp_rx, UDP_RX);
}

static void on_crecv(uv_udp_t *u, ssize_t n, const uv_buf_t *buf,
                     const struct sockaddr *from, unsigned flags) {
  ab__client_t *c = u->data;
  ab__loop_t *l = c->loop;
  const ab_case_cfg_t *cfg = l->eng->cfg;
  (void)from;
  if (n < 0) {
    /* ECONNREFUSED from an ICMP port unreachable: count, keep going */
    ab__loop_error(l, (int)n, "udp client: receive");
    return;
  }
  if (n == 0 || !c->alive) return;
  uint64_t now = ab_now_ns();
  uint8_t ph;
  uint32_t cid;
  uint64_t seq;
  int r = (flags & UV_UDP_PARTIAL) || (size_t)n != cfg->payload ? AB_ESIZE
          : ab_msg_check((const uint8_t *)buf->base, (size_t)n, &ph, &cid, &seq);
  if (r == 0 && cid != c->id) r = AB_ESEQ;
  if (r < 0) {
    ab__loop_error(l, r, "udp client: reply check");
    return;
  }
  uint32_t slot = ab__slot(l, seq);
  if (c->slot_ns[slot] == 0 || c->slot_seq[slot] != seq || c->slot_phase[slot] != ph) {
    uint8_t st = outcome_get(c, seq);
    if (st == AB__UDP_OUT_LOST) l->late++;
    else if (st == AB__UDP_OUT_DONE) l->duplicated++;
    else if (seq >= c->next_seq) ab__loop_error(l, AB_ESEQ, "udp client: reply to a message never sent");
    else l->late++; /* too old for the ring: it timed out long ago */
    return;
  }
  if (c->any_reply && seq < c->highest_seq) l->reordered++;
  if (!c->any_reply || seq > c->highest_seq) c->highest_seq = seq;
  c->any_reply = 1;
  uint64_t rtt = now - c->slot_ns[slot];
  c->slot_ns[slot] = 0;
  c->inflight--;
  outcome_set(c, seq, AB__UDP_OUT_DONE);
  if (ph == AB_PHASE_MEASURE) {
    ab_hist_record(&l->rtt, rtt);
    if (now <= l->deadline_ns) l->completed++;
    else l->drained++;
    l->meas_inflight--;
  } else {
    l->warmup_completed++;
    l->warm_inflight--;
  }
  ab__udp_pump(c);
  ab__loop_check_progress(l);
}

void ab__udp_pump(ab__client_t *c) {
  ab__loop_t *l = c->loop;
  const ab_case_cfg_t *cfg = l->eng->cfg;
  uint8_t phase;
  uint64_t dl;
  if (!c->alive) return;
  if (l->phase == AB__PH_WARMUP) {
    phase = AB_PHASE_WARMUP;
    dl = l->warm_deadline_ns;
  } else if (l->phase == AB__PH_MEASURE) {
    phase = AB_PHASE_MEASURE;
    dl = l->deadline_ns;
  } else {
    return;
  }
  while (c->inflight < cfg->window) {
    uint64_t seq = c->next_seq;
    uint32_t slot = ab__slot(l, seq);
    if (c->slot_ns[slot] != 0) break; /* an older message still owns it */
    ab_msg_fill(c->dgram, cfg->payload, phase, c->id, seq);
    uint64_t t = ab_now_ns();
    if (t >= dl) return;
    uv_buf_t b = uv_buf_init((char *)c->dgram, cfg->payload);
    int r = uv_udp_try_send(&c->udp, &b, 1, NULL);
    if (r == UV_EAGAIN || r == UV_ENOBUFS) {
      /* the socket buffer is full: this message is lost locally; count it
       * sent and lost so the identity holds and the schedule moves on */
      ab__errors_add(l->errors, &l->nerrors, r, 1);
    } else if (r < 0) {
      ab__client_fail(c, r, "udp send");
      return;
    }
    c->slot_seq[slot] = seq;
    c->slot_ns[slot] = t;
    c->slot_phase[slot] = phase;
    c->next_seq = seq + 1;
    c->inflight++;
    if (phase == AB_PHASE_MEASURE) {
      l->sent++;
      l->meas_inflight++;
    } else {
      l->warm_inflight++;
    }
    if (r < 0) break; /* let the timeout account for it; try later */
  }
}

void ab__udp_client_open(ab__client_t *c, const struct sockaddr *addr) {
  ab__loop_t *l = c->loop;
  const ab_case_cfg_t *cfg = l->eng->cfg;
  uint64_t t0 = ab_now_ns();
  char msg[160];
  c->out_n = cfg->window * 4 < 64 ? 64 : cfg->window * 4;
  c->dgram = malloc(cfg->payload);
  c->out_seq = calloc(c->out_n, sizeof(uint64_t));
  c->out_state = calloc(c->out_n, 1);
  int r = (c->dgram && c->out_seq && c->out_state) ? 0 : AB_ENOMEM;
  if (r == 0) r = uv_udp_init(&l->loop, &c->udp);
  if (r == 0) {
    c->udp.data = c;
    r = uv_udp_connect(&c->udp, addr);
    if (r == 0) {
      ab_udp_buffers_t rec;
      set_buffers(&c->udp, cfg->udp_send_buffer, cfg->udp_recv_buffer, &rec);
      if (c->id == 0) l->eng->udp_client_buffers = rec;
      r = uv_udp_recv_start(&c->udp, on_calloc, on_crecv);
    }
  }
  ab_hist_record(&l->connect, ab_now_ns() - t0);
  if (r < 0) {
    snprintf(msg, sizeof(msg), "connection %u: udp socket: %s (%s)", c->id,
             ab_strerror(r), ab_err_name(r));
    ab__loop_error(l, r, msg);
    if (c->udp.data) ab__client_close(c);
  } else {
    c->alive = 1;
    c->loop->ready_clients++;
  }
}

void ab__udp_tick(ab__loop_t *l, uint64_t now) {
  const ab_case_cfg_t *cfg = l->eng->cfg;
  uint64_t limit = (uint64_t)(cfg->timeout_s * 1e9);
  for (uint32_t i = 0; i < l->nclients; i++) {
    ab__client_t *c = &l->clients[i];
    if (!c->alive || c->inflight == 0) continue;
    int freed = 0;
    for (uint32_t k = 0; k < cfg->window; k++) {
      uint64_t t = c->slot_ns[k];
      if (t == 0 || now <= t || now - t <= limit) continue;
      outcome_set(c, c->slot_seq[k], AB__UDP_OUT_LOST);
      c->slot_ns[k] = 0;
      c->inflight--;
      if (c->slot_phase[k] == AB_PHASE_MEASURE) {
        l->timed_out++;
        l->meas_inflight--;
      } else {
        l->warm_inflight--;
      }
      freed = 1;
    }
    if (freed) ab__udp_pump(c);
  }
  ab__loop_check_progress(l);
}
