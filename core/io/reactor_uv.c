/* reactor_uv.c -- the reactor (reactor.h) on libuv: a uv_poll_t per watch
 * on the reactor's uv_loop_t. */
#include "io/reactor.h"

_Static_assert((int)AB_REACTOR_READABLE == (int)UV_READABLE &&
                   (int)AB_REACTOR_WRITABLE == (int)UV_WRITABLE,
               "reactor events pass through to libuv unchanged");

static void on_poll(uv_poll_t *h, int status, int events) {
  ab_reactor_watch_t *w = h->data;
  w->cb(w, status, events);
}

static int uv_watch_init(ab_reactor_t *r, ab_reactor_watch_t *w, int fd) {
  int rc = uv_poll_init((uv_loop_t *)r->impl, &w->impl.uv, fd);
  if (rc < 0) return rc;
  w->impl.uv.data = w;
  return 0;
}

static int uv_watch_start(ab_reactor_watch_t *w, int events) {
  return uv_poll_start(&w->impl.uv, events, on_poll);
}

static void uv_watch_stop(ab_reactor_watch_t *w) { uv_poll_stop(&w->impl.uv); }

static void uv_watch_close(ab_reactor_watch_t *w) { uv_close((uv_handle_t *)&w->impl.uv, NULL); }

static const ab_reactor_ops_t uv_ops = {
    .name = "uv",
    .watch_init = uv_watch_init,
    .watch_start = uv_watch_start,
    .watch_stop = uv_watch_stop,
    .watch_close = uv_watch_close,
};

void ab_reactor_uv_init(ab_reactor_t *r, uv_loop_t *loop, void *owner) {
  r->ops = &uv_ops;
  r->impl = loop;
  r->owner = owner;
  r->scratch = NULL;
  r->slot = 0;
}
