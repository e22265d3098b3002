/* source.c -- a client connection's source address (drivers_int.h).
 *
 * One source/destination address pair gives as many connections as the
 * ephemeral port range holds (Linux ip_local_port_range, 32768-60999:
 * 28,232).  With cfg->bind (scenario key bind, or the loopback addresses
 * the worker picks past that range: docs/scenarios.md), connection id
 * leaves from bind[id % nbind].  The socket is bound with
 * IP_BIND_ADDRESS_NO_PORT, so the kernel picks the port at connect time
 * for the whole 4-tuple, as it does for an unbound socket, instead of
 * reserving a port per address at bind time.
 */
#include <netinet/in.h>
#include <sys/socket.h>

#include "drivers/drivers_int.h"

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

int ab__client_tcp_init(ab__loop_t *l, uv_tcp_t *tcp) {
  const ab_case_cfg_t *cfg = l->eng->cfg;
  if (cfg->nbind == 0) return uv_tcp_init(&l->loop, tcp);
  /* the socket exists now, so that its options can be set before bind */
  return uv_tcp_init_ex(&l->loop, tcp, cfg->bind[0].ss_family);
}

int ab__client_tcp_bind(ab__loop_t *l, uv_tcp_t *tcp, uint32_t id) {
  const ab_case_cfg_t *cfg = l->eng->cfg;
  if (cfg->nbind == 0) return 0;
  const struct sockaddr_storage *src = &cfg->bind[id % cfg->nbind];
  uv_os_fd_t fd;
  int r = uv_fileno((const uv_handle_t *)tcp, &fd);
  if (r < 0) return r;
  int one = 1;
  (void)setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
  return uv_tcp_bind(tcp, (const struct sockaddr *)src, 0);
}
