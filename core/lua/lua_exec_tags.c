/* lua_exec_tags.c -- execution = "lua": tags (docs/lua-api.md "Tags";
 * engine/tags.h).  A tag is a name the script gives a round trip --
 * conn:call(request, expect, "get") in the full form, the second value of
 * message(i, id) in the light form -- and the engine keeps each tag's
 * counts and RTT histogram.  Names become the case's ids (1 .. 16, the
 * same on every loop) here, once per new name per loop:
 *
 *   full form   conn.lua keeps a name -> id table per loop state and calls
 *               the primitive tag(name) only for a name it has not seen;
 *   light form  the name is the string message() returned; Lua strings
 *               are interned, so the loop caches the string object's
 *               address (the string pinned in the registry, so the address
 *               stays its) and a known tag costs a compare per cached tag.
 */
#include "lua/lua_exec_int.h"

#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "base/ab_error.h"

/* Why name[0..len) is no tag (r from ab__tag_id), as a Lua string on L's
 * stack; returns it. */
static const char *tag_refusal(lua_State *L, ab__lx_loop_t *lx, const char *name, size_t len,
                               int r) {
  if (r == AB_ECONFIG) {
    char list[AB_TAGS_MAX * (AB_TAG_NAME_MAX + 2) + 1];
    return lua_pushfstring(L, "tag '%s': a case has at most %d distinct tags (it has %s)", name,
                           AB_TAGS_MAX, ab_tag_names_list(&lx->l->eng->tags, list, sizeof(list)));
  }
  (void)len;
  return lua_pushfstring(L, "tag '%s': expected a name of 1 to %d bytes without control "
                            "characters", name, AB_TAG_NAME_MAX);
}

int ab__lx_tag_of(ab__lx_loop_t *lx, int idx, const char **why) {
  lua_State *L = lx->L;
  size_t len;
  const char *s = lua_tolstring(L, idx, &len);
  for (uint32_t i = 0; i < lx->ntag_cache; i++)
    if (lx->tag_str[i] == s) return lx->tag_id[i];
  int id = ab__tag_id(lx->l->eng, s, len);
  if (id < 0) {
    *why = tag_refusal(L, lx, s, len, id);
    return -1;
  }
  if (lx->ntag_cache < AB_TAGS_MAX) {
    /* pinned: the address stays this string's for the loop's life */
    lua_pushvalue(L, idx);
    luaL_ref(L, LUA_REGISTRYINDEX);
    lx->tag_str[lx->ntag_cache] = s;
    lx->tag_id[lx->ntag_cache++] = (uint8_t)id;
  }
  return id;
}

/* tag(name) -> id | nil, why (the full form's conn.lua caches the id) */
static int f_tag(lua_State *L) {
  ab__lx_loop_t *lx = lua_touserdata(L, lua_upvalueindex(1));
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  int id = ab__tag_id(lx->l->eng, s, len);
  if (id < 0) {
    lua_pushnil(L);
    tag_refusal(L, lx, s, len, id);
    return 2;
  }
  lua_pushinteger(L, id);
  return 1;
}

void ab__lx_tags_prims(lua_State *L, ab__lx_loop_t *lx) {
  lua_pushlightuserdata(L, lx);
  lua_pushcclosure(L, f_tag, 1);
  lua_setfield(L, -2, "tag");
}
