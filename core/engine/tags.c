/* tags.c -- see tags.h. */
#include "engine/tags.h"

#include <stdio.h>
#include <string.h>

#include "base/ab_error.h"

void ab_tags_init(ab_tag_stats_t *tab) {
  for (int i = 0; i < AB_TAGS_MAX; i++) {
    tab[i].sent = tab[i].warmup_sent = tab[i].completed = tab[i].drained = 0;
    tab[i].non_success = 0;
    ab_hist_init(&tab[i].rtt);
  }
}

void ab_tags_merge(ab_tag_stats_t *dst, const ab_tag_stats_t *src) {
  for (int i = 0; i < AB_TAGS_MAX; i++) {
    dst[i].sent += src[i].sent;
    dst[i].warmup_sent += src[i].warmup_sent;
    dst[i].completed += src[i].completed;
    dst[i].drained += src[i].drained;
    dst[i].non_success += src[i].non_success;
    ab_hist_merge(&dst[i].rtt, &src[i].rtt);
  }
}

int ab_tag_names_id(ab_tag_names_t *t, const char *name, size_t len) {
  if (len == 0 || len > AB_TAG_NAME_MAX) return AB_EINVAL;
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f) return AB_EINVAL;
  int id = AB_ECONFIG;
  pthread_mutex_lock(&t->mu);
  for (uint32_t i = 0; i < t->n; i++) {
    if (strlen(t->names[i]) == len && memcmp(t->names[i], name, len) == 0) {
      id = (int)i + 1;
      break;
    }
  }
  if (id < 0 && t->n < AB_TAGS_MAX) {
    memcpy(t->names[t->n], name, len);
    t->names[t->n][len] = '\0';
    id = (int)++t->n;
  }
  pthread_mutex_unlock(&t->mu);
  return id;
}

char *ab_tag_names_list(ab_tag_names_t *t, char *buf, size_t len) {
  size_t at = 0;
  if (len == 0) return buf;
  buf[0] = '\0';
  pthread_mutex_lock(&t->mu);
  for (uint32_t i = 0; i < t->n && at + 1 < len; i++) {
    int w = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", t->names[i]);
    if (w < 0) break;
    at += (size_t)w;
  }
  pthread_mutex_unlock(&t->mu);
  return buf;
}
