/* h2_mem.h -- the allocator each HTTP/2 session gets (nghttp2_mem, h2.c):
 * freed blocks are kept on per-session free lists by size class (2^5 ..
 * 2^16 bytes; larger ones go straight to malloc and free), so once a
 * connection is warm nghttp2's per-stream allocations (its stream object,
 * header blocks, outbound frame items) are list pops, never malloc.  The
 * lists hold at most what the busiest moment needed; ab__h2_mem_drop frees
 * them, after the session is deleted.  One session, one thread at a time.
 */
#ifndef AB_H2_MEM_H
#define AB_H2_MEM_H

#include <nghttp2/nghttp2.h>

#define AB__H2_MEM_CLASSES 12

typedef struct {
  nghttp2_mem mem;                  /* hand &mem to nghttp2_session_*_new3 */
  void *fl[AB__H2_MEM_CLASSES];     /* free lists by class */
} ab__h2_mem_t;

/* Sets the allocator up, its lists empty (h must not move afterwards). */
void ab__h2_mem_init(ab__h2_mem_t *h);
/* Frees every block on the lists. */
void ab__h2_mem_drop(ab__h2_mem_t *h);

#endif
