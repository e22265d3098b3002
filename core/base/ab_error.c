/* ab_error.c -- names and texts for ab_error.h codes. */
#include "base/ab_error.h"

#include <stdio.h>
#include <string.h>

#include <uv.h>

const char *ab_err_name(int err) {
  if (ab_err_http_status(err)) return "EHTTPSTATUS";
  switch (err) {
  case 0: return "OK";
#define AB_ERR_NAME(name, value, text) case value: return #name;
    AB_ERRNO_MAP(AB_ERR_NAME)
#undef AB_ERR_NAME
  default: return uv_err_name(err);
  }
}

const char *ab_strerror(int err) {
  if (ab_err_http_status(err)) return "HTTP response status outside 2xx";
  switch (err) {
  case 0: return "success";
#define AB_ERR_TEXT(name, value, text) case value: return text;
    AB_ERRNO_MAP(AB_ERR_TEXT)
#undef AB_ERR_TEXT
  default: return uv_strerror(err);
  }
}

int ab_err_stream_end(int err, int side) {
  if (err == UV_EOF || err == AB_ECLOSED) return AB_ECLOSED;
  if (err == UV_EPIPE) return side == AB_SIDE_CLIENT ? AB_ECLOSED : UV_ECONNRESET;
  return err;
}

/* The errno-style keys of the table (the HTTP row is matched by code). */
static const char *const peer_keys[] = {
#define AB_CLASS_KEY(key, kind, doc) key,
    AB_ERROR_CLASSES(AB_CLASS_KEY)
#undef AB_CLASS_KEY
};

int ab_err_is_peer(int err) {
  if (err == UV_EPIPE || err == AB_EHTTPSTATUS || ab_err_http_status(err)) return 1;
  const char *name = ab_err_name(err);
  for (size_t i = 0; i < sizeof(peer_keys) / sizeof(peer_keys[0]); i++)
    if (strcmp(peer_keys[i], name) == 0) return 1;
  return 0;
}

const char *ab_err_class_key(int err, char *buf, size_t cap) {
  int st = ab_err_http_status(err);
  if (st) snprintf(buf, cap, "HTTP %d", st);
  else if (err == AB_EHTTPSTATUS) snprintf(buf, cap, "HTTP other");
  else snprintf(buf, cap, "%s", err == UV_EPIPE ? "ECONNRESET" : ab_err_name(err));
  return buf;
}
