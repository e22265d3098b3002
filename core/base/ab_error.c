/* ab_error.c -- names and texts for ab_error.h codes. */
#include "base/ab_error.h"

#include <uv.h>

const char *ab_err_name(int err) {
  switch (err) {
  case 0: return "OK";
#define AB_ERR_NAME(name, value, text) case value: return #name;
    AB_ERRNO_MAP(AB_ERR_NAME)
#undef AB_ERR_NAME
  default: return uv_err_name(err);
  }
}

const char *ab_strerror(int err) {
  switch (err) {
  case 0: return "success";
#define AB_ERR_TEXT(name, value, text) case value: return text;
    AB_ERRNO_MAP(AB_ERR_TEXT)
#undef AB_ERR_TEXT
  default: return uv_strerror(err);
  }
}
