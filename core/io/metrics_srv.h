/* metrics_srv.h -- a tiny HTTP/1.x server of one text (the live OpenMetrics
 * of `arkbench run --metrics-listen`, docs/reports.md "Live metrics").
 *
 * It runs on a thread of its own in the orchestrator process: the workers'
 * loops never see it, and the orchestrator only swaps the text under a
 * mutex (ab_metrics_srv_set), so a slow or stuck scraper can delay no one
 * but the next scraper.  One connection at a time: read the request head
 * (at most 8 KiB, 2 s), answer `GET /metrics` (and `GET /`) with the text
 * (Content-Type application/openmetrics-text; version=1.0.0), any other
 * path 404, any other method 405, then close.  Signals stay blocked on the
 * thread (the orchestrator's SIGINT/SIGTERM handlers run on its own), and
 * writes never raise SIGPIPE.
 *
 *   ab_metrics_srv_start(host, port, &srv, &bound_port) -> 0 | -errno
 *       host: a numeric IPv4/IPv6 address or a name getaddrinfo resolves
 *       (its first address); port 0: the kernel's choice, in bound_port.
 *       -EADDRINUSE, -EACCES, -EADDRNOTAVAIL, -EINVAL (no such host)...
 *       (negative errno values: libuv's codes, ab_err_name names them)
 *   ab_metrics_srv_set(srv, text, len)   the text served from now on
 *   ab_metrics_srv_scrapes(srv) -> n     requests answered 200 so far
 *   ab_metrics_srv_stop(srv)             close the port, join, free
 */
#ifndef AB_IO_METRICS_SRV_H
#define AB_IO_METRICS_SRV_H

#include <stddef.h>
#include <stdint.h>

typedef struct ab_metrics_srv ab_metrics_srv_t;

int ab_metrics_srv_start(const char *host, int port, ab_metrics_srv_t **out, int *bound_port);
void ab_metrics_srv_set(ab_metrics_srv_t *s, const char *text, size_t len);
uint64_t ab_metrics_srv_scrapes(ab_metrics_srv_t *s);
void ab_metrics_srv_stop(ab_metrics_srv_t *s);

#endif
