/* lua_tls.c -- TLS settings checked at load (proto/tls.h).
 *
 *   core.tls_check({ version = "1.2" | "1.3" | "1.2-1.3" | nil, ciphers = string | nil,
 *                    alpn = "a,b" | nil, ca = path | nil }) -> true | nil, reason
 *       builds (and frees) a client context with OpenSSL's own parsers and
 *       runs one in-memory handshake against a server context made as a run
 *       makes it (ab_tls_opts_check), so that settings OpenSSL refuses --
 *       or that leave no cipher, or refuse the certificate's key -- are
 *       refused before any run starts.  ca: a readable file with at least
 *       one PEM certificate (reason "tls ca \"path\": holds no PEM ...").
 *       reason is one line ("tls ciphers \"NOPE\": no usable TLS 1.3
 *       cipher").  Strings with NUL bytes are refused here (C cannot pass
 *       them on).
 */
#include <string.h>

#include <lauxlib.h>

#include "base/ab_error.h"
#include "lua/lua_core.h"
#include "proto/tls.h"

/* opts[name] as a C string, NULL when absent; raises for a non-string. */
static const char *opt_string(lua_State *L, const char *name, int *has_nul) {
  lua_getfield(L, 1, name);
  const char *s = NULL;
  if (!lua_isnil(L, -1)) {
    size_t len;
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_argerror(L, 1, lua_pushfstring(L, "%s must be a string", name));
    s = lua_tolstring(L, -1, &len);
    if (strlen(s) != len) *has_nul = 1;
  }
  lua_pop(L, 1); /* the string stays alive in the table */
  return s;
}

static int l_tls_check(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  ab_tls_opts_t o;
  memset(&o, 0, sizeof(o));
  int nul = 0;
  o.version = opt_string(L, "version", &nul);
  o.ciphers = opt_string(L, "ciphers", &nul);
  o.alpn = opt_string(L, "alpn", &nul);
  const char *ca = opt_string(L, "ca", &nul);
  if (nul) {
    lua_pushnil(L);
    lua_pushstring(L, "tls: a string contains a NUL byte");
    return 2;
  }
  if (ca != NULL && ab_tls_ca_file_check(ca) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "tls ca \"%s\": %s", ca, ab_tls_last_error());
    return 2;
  }
  if (o.version == NULL && o.ciphers == NULL && o.alpn == NULL) {
    lua_pushboolean(L, 1); /* the defaults: nothing to try */
    return 1;
  }
  int err = ab_tls_opts_check(&o);
  if (err != 0) {
    lua_pushnil(L);
    const char *why = ab_tls_last_error();
    lua_pushstring(L, why[0] ? why : ab_strerror(err));
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

void ab_lua_register_tls(lua_State *L) {
  lua_pushcfunction(L, l_tls_check);
  lua_setfield(L, -2, "tls_check");
}
