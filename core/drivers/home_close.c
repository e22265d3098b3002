/* home_close.c -- shared:N: the libuv handle of a connection that ended on
 * another loop thread than its home's is closed by its home, soon
 * (docs/topologies.md).
 *
 * A connection's uv_tcp_t belongs to the libuv loop of its home (where it
 * was connected or accepted), and only that thread may uv_close it.  When
 * a connection fails or ends while another thread runs it, that thread
 * stops its IO at once (ab_conn_close: its watch leaves the reactor set)
 * and queues it here; the home's async handle wakes the home, which takes
 * the connection's lock and closes the handle.  Its close callback then
 * frees the connection's buffers and, for a client to be reopened, tells
 * the engine (ab__client_closed, engine/sweep.c), exactly as on one
 * thread.  So a lost connection is reopened in every model, and a long
 * `serve --topology shared:N` gives back the descriptors of connections
 * that ended.
 *
 * Cost: one mutex and one async wake-up per connection that ends off its
 * home -- per connection, never per message.  Lock order: a queuer holds
 * the connection's lock, then the queue's; the home takes the queue's
 * alone, then each connection's, so the two never wait on each other.
 */
#include "drivers/drivers_int.h"

static void on_closes(uv_async_t *a) {
  ab__loop_t *l = a->data;
  ab__dloop_t *d = l->d;
  pthread_mutex_lock(&d->hc_mu);
  ab__dclient_t *c = d->hc_clients;
  ab__sconn_t *s = d->hc_sconns;
  d->hc_clients = NULL;
  d->hc_sconns = NULL;
  pthread_mutex_unlock(&d->hc_mu);
  while (c) {
    ab__dclient_t *next = c->hc_next;
    ab__client_take(l, &c->h); /* c now runs on its home */
    c->hc_next = NULL;
    ab__client_close(c);
    ab__client_give(l, &c->h);
    c = next;
  }
  while (s) {
    ab__sconn_t *next = s->hc_next;
    pthread_mutex_lock(&s->mu);
    s->hc_next = NULL;
    s->loop = l;
    ab__sconn_close(s);
    pthread_mutex_unlock(&s->mu);
    s = next;
  }
}

int ab__home_close_open(ab__loop_t *l) {
  ab__dloop_t *d = l->d;
  if (!l->eng->shared) return 0;
  pthread_mutex_init(&d->hc_mu, NULL);
  d->hc_inited = 1;
  int r = uv_async_init(&l->loop, &d->hc_async, on_closes);
  if (r < 0) return r;
  d->hc_async.data = l;
  d->hc_open = 1;
  return 0;
}

static void close_noop(uv_handle_t *h) { (void)h; }

void ab__home_close_stop(ab__loop_t *l) {
  ab__dloop_t *d = l->d;
  if (d == NULL || !d->hc_open) return;
  /* what is still queued is closed by the stop itself */
  pthread_mutex_lock(&d->hc_mu);
  d->hc_open = 0;
  d->hc_clients = NULL;
  d->hc_sconns = NULL;
  pthread_mutex_unlock(&d->hc_mu);
  uv_close((uv_handle_t *)&d->hc_async, close_noop);
}

void ab__home_close_free(ab__loop_t *l) {
  if (l->d && l->d->hc_inited) pthread_mutex_destroy(&l->d->hc_mu);
}

/* The home's wake-up, while its queue is open (after the home's stop
 * nothing is queued: the stop closes every connection itself). */
static void wake_home(ab__dloop_t *d) {
  if (d->hc_open) uv_async_send(&d->hc_async);
}

void ab__home_close_client(ab__dclient_t *c) {
  ab__dloop_t *d = c->h.home->d;
  pthread_mutex_lock(&d->hc_mu);
  if (d->hc_open) {
    c->hc_next = d->hc_clients;
    d->hc_clients = c;
  }
  wake_home(d);
  pthread_mutex_unlock(&d->hc_mu);
}

void ab__home_close_sconn(ab__sconn_t *s) {
  ab__dloop_t *d = s->home->d;
  pthread_mutex_lock(&d->hc_mu);
  if (d->hc_open) {
    s->hc_next = d->hc_sconns;
    d->hc_sconns = s;
  }
  wake_home(d);
  pthread_mutex_unlock(&d->hc_mu);
}
