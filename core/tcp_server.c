/* tcp_server.c -- the built-in echo server over TCP, callback style.
 *
 * Reads into a per-connection buffer, cuts whole frames (length prefix or
 * fixed-size raw), does the configured `work` per frame and writes the
 * frames back unchanged.  When nothing is queued it writes straight from
 * the read buffer (uv_try_write) and copies only what the kernel did not
 * take.  In shared:N with a work pool, frames wait in `held` until the pool
 * returns their work, and are released in arrival order, so the echo order
 * on a connection is the send order whichever worker finishes first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ab_error.h"
#include "engine_int.h"
#include "framing.h"
#include "work.h"

#define READ_CHUNK 65536

static void on_sclosed(uv_handle_t *h) {
  ab__sconn_t *s = h->data;
  ab__layers_free(&s->ly);
  free(s->cbuf);
  s->cbuf = NULL;
  ab_outbuf_free(&s->out);
  free(s->rbuf);
  free(s->held);
  s->rbuf = s->held = NULL;
  /* the struct stays on the loop's list until the engine frees it: pool
   * jobs may still point at it */
}

void ab__sconn_close(ab__sconn_t *s) {
  if (s->closing) return;
  s->closing = 1;
  uv_close((uv_handle_t *)&s->tcp, on_sclosed);
}

void ab__sconn_error(ab__sconn_t *s, int code, const char *what) {
  ab__loop_t *l = s->loop;
  if (l->phase != AB__PH_STOPPING && !s->closing) {
    char msg[200];
    snprintf(msg, sizeof(msg), "server: %s: %s (%s)", what, ab_strerror(code),
             ab_err_name(code));
    ab__loop_error(l, code, msg);
  }
  ab__sconn_close(s);
}

void ab__sconn_read_failed(ab__sconn_t *s, ssize_t nread) {
  ab__loop_t *l = s->loop;
  if (nread == UV_EOF) {
    ab__sconn_close(s);
  } else if (l->eng->cfg->role == AB_ROLE_SERVER &&
             (nread == UV_ECONNRESET || nread == UV_EPIPE)) {
    l->srv_resets++;
    ab__sconn_close(s);
  } else {
    ab__sconn_error(s, (int)nread, "read");
  }
}

static void on_swrite_error(ab_outbuf_t *ob, int err) {
  ab__sconn_t *s = (ab__sconn_t *)((char *)ob - offsetof(ab__sconn_t, out));
  ab__sconn_error(s, err, "write");
}

static void on_salloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  ab__sconn_t *s = h->data;
  (void)hint;
  if (ab__grow(&s->rbuf, &s->rcap, s->rlen, READ_CHUNK) != 0) {
    *buf = uv_buf_init(NULL, 0); /* libuv reports UV_ENOBUFS */
    return;
  }
  *buf = uv_buf_init((char *)s->rbuf + s->rlen, (unsigned)(s->rcap - s->rlen));
}

/* Length of the frame at p (prefix included), 0 if incomplete, <0 error;
 * *payload gets the message's own length. */
static int64_t frame_len(const ab__engine_t *eng, const uint8_t *p, size_t avail,
                         uint64_t *payload) {
  const ab_case_cfg_t *cfg = eng->cfg;
  if (cfg->framing == AB_FRAMING_RAW) {
    *payload = cfg->payload;
    return avail >= cfg->payload ? (int64_t)cfg->payload : 0;
  }
  uint64_t len;
  int r = ab_prefix_decode(p, avail, eng->max_frame, &len);
  if (r == AB_EAGAIN) return 0;
  if (r < 0) return r;
  if (avail < (size_t)r + len) return 0;
  *payload = len;
  return (int64_t)((size_t)r + len);
}

static void echo(ab__sconn_t *s, const uint8_t *p, size_t n) {
  if (ab_outbuf_idle(&s->out)) {
    ab_outbuf_write_direct(&s->out, p, n);
  } else if (ab_outbuf_append(&s->out, p, n) != 0) {
    ab__sconn_error(s, AB_ENOMEM, "send buffer");
  } else {
    ab_outbuf_flush(&s->out);
  }
}

static void on_sread(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  ab__sconn_t *s = st->data;
  ab__loop_t *l = s->loop;
  ab__engine_t *eng = l->eng;
  (void)buf;
  if (nread <= 0) {
    if (nread == 0) return;
    /* EOF or reset from our own clients at the end is normal; counted only
     * while the run is live */
    ab__sconn_read_failed(s, nread);
    return;
  }
  if (s->closing) return;
  s->rlen += (size_t)nread;
  size_t off = 0;
  uint64_t frames = 0, payload_bytes = 0;
  for (;;) {
    uint64_t pl = 0;
    int64_t n = frame_len(eng, s->rbuf + off, s->rlen - off, &pl);
    if (n == 0) break;
    if (n < 0) {
      ab__sconn_error(s, (int)n, "request framing");
      return;
    }
    off += (size_t)n;
    frames++;
    payload_bytes += pl;
  }
  if (frames == 0) return;
  l->srv_messages += frames;
  l->srv_bytes += payload_bytes;
  if (eng->pool) {
    if (s->hcap - s->hlen < off) {
      size_t want = s->hcap ? s->hcap * 2 : 65536;
      while (want - s->hlen < off) want *= 2;
      uint8_t *p = realloc(s->held, want);
      if (p == NULL) {
        ab__sconn_error(s, AB_ENOMEM, "held frames");
        return;
      }
      s->held = p;
      s->hcap = want;
    }
    memcpy(s->held + s->hlen, s->rbuf, off);
    s->hlen += off;
    s->jobs_out += frames;
    for (uint64_t i = 0; i < frames; i++) ab__pool_submit(eng->pool, &s->job);
  } else {
    uint64_t work = eng->cfg->work;
    if (work) {
      for (uint64_t i = 0; i < frames; i++)
        l->work_sink ^= ab_work(work, l->work_sink + i);
    }
    echo(s, s->rbuf, off);
  }
  s->rlen -= off;
  if (s->rlen > 0) memmove(s->rbuf, s->rbuf + off, s->rlen);
}

void ab__server_work_returned(ab__sconn_t *s, uint64_t n) {
  s->jobs_back += n;
  if (s->closing) return;
  size_t start = s->hoff, end = s->hoff;
  while (s->jobs_back > 0) {
    uint64_t pl;
    int64_t len = frame_len(s->loop->eng, s->held + end, s->hlen - end, &pl);
    if (len <= 0) break; /* cannot happen: held frames are whole */
    end += (size_t)len;
    s->jobs_back--;
  }
  if (end > start) echo(s, s->held + start, end - start);
  s->hoff = end;
  if (s->hoff == s->hlen) {
    s->hoff = s->hlen = 0;
  } else if (s->hoff > s->hcap / 2) {
    memmove(s->held, s->held + s->hoff, s->hlen - s->hoff);
    s->hlen -= s->hoff;
    s->hoff = 0;
  }
}

static void job_done(ab__job_t *job) {
  ab__sconn_t *s = (ab__sconn_t *)((char *)job - offsetof(ab__sconn_t, job));
  if (s->loop->eng->coro) ab__co_job_done(s);
  else if (s->loop->eng->layered) ab__sserver_release(s, 1);
  else ab__server_work_returned(s, 1);
}

static void on_connection(uv_stream_t *server, int status) {
  ab__loop_t *l = server->data;
  if (status < 0) {
    ab__loop_error(l, status, "server: accept");
    return;
  }
  ab__sconn_t *s = calloc(1, sizeof(*s));
  if (s == NULL) {
    ab__loop_error(l, AB_ENOMEM, "server: accept");
    return;
  }
  s->loop = l;
  s->job.done = job_done;
  l->srv_connections++;
  uv_tcp_init(&l->loop, &s->tcp);
  s->tcp.data = s;
  s->next = l->sconns;
  if (l->sconns) l->sconns->prev = s;
  l->sconns = s;
  if (uv_accept(server, (uv_stream_t *)&s->tcp) != 0) {
    ab__sconn_close(s);
    return;
  }
  uv_tcp_nodelay(&s->tcp, 1);
  ab_outbuf_init(&s->out, (uv_stream_t *)&s->tcp, on_swrite_error);
  if (l->eng->hooks && l->eng->hooks->server_accept) {
    l->eng->hooks->server_accept(l->exec_state, s);
    return;
  }
  if (l->eng->coro) {
    ab__co_server_accept(s);
    return;
  }
  if (l->eng->layered) {
    ab__sserver_accept(s);
    return;
  }
  int r = uv_read_start((uv_stream_t *)&s->tcp, on_salloc, on_sread);
  if (r < 0) ab__sconn_error(s, r, "read start");
}

int ab__server_listen(ab__loop_t *l) {
  int r = uv_tcp_init(&l->loop, &l->listener);
  if (r < 0) return r;
  l->listener.data = l;
  l->listening = 1;
  int fd = ab__server_socket(l, SOCK_STREAM);
  if (fd < 0) return fd;
  r = uv_tcp_open(&l->listener, fd);
  if (r < 0) {
    close(fd);
    return r;
  }
  r = uv_listen((uv_stream_t *)&l->listener, 4096, on_connection);
  if (r < 0) return r;
  struct sockaddr_storage ss;
  int len = sizeof(ss);
  r = uv_tcp_getsockname(&l->listener, (struct sockaddr *)&ss, &len);
  if (r < 0) return r;
  l->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
  return 0;
}

void ab__server_close_all(ab__loop_t *l) {
  for (ab__sconn_t *s = l->sconns; s; s = s->next) ab__sconn_close(s);
}
