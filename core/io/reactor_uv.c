/* reactor_uv.c -- the reactor (reactor.h) on libuv: a uv_poll_t. */
#include "io/reactor.h"

static void on_poll(uv_poll_t *h, int status, int events) {
  ab_reactor_watch_t *w = h->data;
  w->cb(w, status, events);
}

int ab_reactor_watch_init(ab_reactor_watch_t *w, uv_loop_t *loop, int fd) {
  int r = uv_poll_init(loop, &w->poll, fd);
  if (r < 0) return r;
  w->poll.data = w;
  return 0;
}

int ab_reactor_watch_start(ab_reactor_watch_t *w, int events, ab_reactor_cb cb) {
  w->cb = cb;
  return uv_poll_start(&w->poll, events, on_poll);
}

void ab_reactor_watch_stop(ab_reactor_watch_t *w) { uv_poll_stop(&w->poll); }

void ab_reactor_watch_close(ab_reactor_watch_t *w) { uv_close((uv_handle_t *)&w->poll, NULL); }
