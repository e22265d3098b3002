/* h2_mem.c -- see h2_mem.h. */
#include "proto/h2_mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MEM_HDR 16 /* before each block: its class (int32), its size (u64) */


static int mem_class(size_t n) {
  int k = 0;
  size_t sz = 32;
  while (sz < n && k < AB__H2_MEM_CLASSES) {
    sz <<= 1;
    k++;
  }
  return k < AB__H2_MEM_CLASSES ? k : -1;
}

static void *mem_malloc(size_t n, void *ud) {
  ab__h2_mem_t *h = ud;
  int k = mem_class(n);
  uint8_t *b;
  if (k >= 0 && h->fl[k]) {
    b = h->fl[k];
    memcpy(&h->fl[k], b + MEM_HDR, sizeof(void *));
    return b + MEM_HDR;
  }
  b = malloc(MEM_HDR + (k >= 0 ? (size_t)32 << k : n));
  if (b == NULL) return NULL;
  int32_t tag = k;
  memcpy(b, &tag, sizeof(tag));
  uint64_t len = n;
  memcpy(b + 8, &len, sizeof(len));
  return b + MEM_HDR;
}

static void mem_free(void *p, void *ud) {
  ab__h2_mem_t *h = ud;
  if (p == NULL) return;
  uint8_t *b = (uint8_t *)p - MEM_HDR;
  int32_t k;
  memcpy(&k, b, sizeof(k));
  if (k < 0) {
    free(b);
    return;
  }
  memcpy(b + MEM_HDR, &h->fl[k], sizeof(void *));
  h->fl[k] = b;
}

static void *mem_calloc(size_t nm, size_t sz, void *ud) {
  if (sz && nm > SIZE_MAX / sz) return NULL;
  void *p = mem_malloc(nm * sz, ud);
  if (p) memset(p, 0, nm * sz);
  return p;
}

static void *mem_realloc(void *p, size_t n, void *ud) {
  if (p == NULL) return mem_malloc(n, ud);
  uint8_t *b = (uint8_t *)p - MEM_HDR;
  int32_t k;
  memcpy(&k, b, sizeof(k));
  size_t have;
  if (k >= 0) have = (size_t)32 << k;
  else {
    uint64_t len;
    memcpy(&len, b + 8, sizeof(len));
    have = (size_t)len;
  }
  if (n <= have && k >= 0) return p;
  void *q = mem_malloc(n, ud);
  if (q == NULL) return NULL;
  memcpy(q, p, have < n ? have : n);
  mem_free(p, ud);
  return q;
}

void ab__h2_mem_drop(ab__h2_mem_t *h) {
  for (int k = 0; k < AB__H2_MEM_CLASSES; k++) {
    uint8_t *b = h->fl[k];
    while (b) {
      uint8_t *nx;
      memcpy(&nx, b + MEM_HDR, sizeof(void *));
      free(b);
      b = nx;
    }
    h->fl[k] = NULL;
  }
}

void ab__h2_mem_init(ab__h2_mem_t *h) {
  memset(h, 0, sizeof(*h));
  h->mem = (nghttp2_mem){h, mem_malloc, mem_free, mem_calloc, mem_realloc};
}
