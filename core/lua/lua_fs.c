/* lua_fs.c -- checked, durable writes of the results files.
 *
 * Why in C: LuaJIT may compile the Lua side of a write loop into a trace in
 * which the result of a buffered f:write()/f:flush() is lost (strace showed
 * write() failing with ENOSPC while f:flush() returned true).  Here every
 * write(2), fsync(2), close(2) and rename(2) result is checked by the code
 * that made the call.  All functions return luv style: a value, or
 * nil, "ENAME: text", "ENAME" (names from ab_error.h / libuv).
 *
 *   core.write_file(path, data) -> true | nil, err, code
 *       writes data to "<path>.tmp-<pid>" (O_EXCL), fsyncs it, renames it
 *       over path and fsyncs the folder: path is either its old content or
 *       the whole new one, never a cut file.  The temporary file is removed
 *       on failure.
 *   core.append_line(path, line) -> true | nil, err, code
 *       appends line .. "\n" with one write(2) on an O_APPEND descriptor and
 *       fsyncs it.  A short write (a full disk) is cut back off with
 *       ftruncate, so the file only ever holds complete lines.
 *   core.mkdir(path) -> true | nil, err, code
 *       one mkdir(2), mode 0777 & ~umask: EEXIST when the path exists, which
 *       makes it an exclusive claim on a folder name.
 *   core.write_fd(fd, data) -> true | nil, err, code
 *       writes all of data to an inherited descriptor (the worker's result
 *       channel, see core/io/proc.h), retrying on EINTR and short writes.
 *   core.file_kind(path) -> "file" | "directory" | "FIFO" | "character device" |
 *       "block device" | "socket" | "special file" | nil  (stat: follows links)
 *   core.dir_entries(path) -> { name, ... } (sorted, no "." / "..") | nil, err, code
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>

#include "base/ab_error.h"
#include "lua/lua_core.h"

/* All of buf to fd; 0 or a negated errno (ENOSPC for a write of 0). */
static int write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (n == 0) return -ENOSPC;
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

/* fsync the folder holding path, so that a rename or a new file survives a
 * crash.  Filesystems that cannot fsync a folder (EINVAL) are not an error. */
static int fsync_parent(const char *path) {
  const char *slash = strrchr(path, '/');
  char dir[4096];
  if (slash == NULL) {
    strcpy(dir, ".");
  } else if (slash == path) {
    strcpy(dir, "/");
  } else {
    size_t n = (size_t)(slash - path);
    if (n >= sizeof(dir)) return 0;
    memcpy(dir, path, n);
    dir[n] = '\0';
  }
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;
  int err = fsync(fd) != 0 && errno != EINVAL ? -errno : 0;
  close(fd);
  return err;
}

static int l_write_file(lua_State *L) {
  size_t plen, len;
  const char *path = luaL_checklstring(L, 1, &plen);
  const char *data = luaL_checklstring(L, 2, &len);
  if (strlen(path) != plen || plen == 0) return ab_lua_fail(L, -EINVAL);
  char *tmp = malloc(plen + 32);
  if (tmp == NULL) return ab_lua_fail(L, AB_ENOMEM);
  snprintf(tmp, plen + 32, "%s.tmp-%ld", path, (long)getpid());
  int err = 0;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    err = -errno;
    free(tmp);
    return ab_lua_fail(L, err);
  }
  err = write_all(fd, data, len);
  if (err == 0 && fsync(fd) != 0) err = -errno;
  if (close(fd) != 0 && err == 0) err = -errno;
  if (err == 0 && rename(tmp, path) != 0) err = -errno;
  if (err != 0) {
    unlink(tmp);
    free(tmp);
    return ab_lua_fail(L, err);
  }
  free(tmp);
  err = fsync_parent(path);
  if (err != 0) return ab_lua_fail(L, err);
  lua_pushboolean(L, 1);
  return 1;
}

static int l_append_line(lua_State *L) {
  size_t plen, len;
  const char *path = luaL_checklstring(L, 1, &plen);
  const char *line = luaL_checklstring(L, 2, &len);
  if (strlen(path) != plen || plen == 0) return ab_lua_fail(L, -EINVAL);
  char *buf = malloc(len + 1);
  if (buf == NULL) return ab_lua_fail(L, AB_ENOMEM);
  memcpy(buf, line, len);
  buf[len] = '\n';
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    int err = -errno;
    free(buf);
    return ab_lua_fail(L, err);
  }
  struct stat st;
  off_t before = fstat(fd, &st) == 0 ? st.st_size : -1;
  int err = 0;
  ssize_t n;
  do {
    n = write(fd, buf, len + 1);
  } while (n < 0 && errno == EINTR);
  if (n < 0) err = -errno;
  else if ((size_t)n != len + 1) err = -ENOSPC; /* a cut line: take it back */
  if (err != 0 && n > 0 && before >= 0 && ftruncate(fd, before) != 0) err = -errno;
  if (err == 0 && fsync(fd) != 0) err = -errno;
  if (close(fd) != 0 && err == 0) err = -errno;
  free(buf);
  if (err != 0) return ab_lua_fail(L, err);
  lua_pushboolean(L, 1);
  return 1;
}

static int l_mkdir(lua_State *L) {
  size_t plen;
  const char *path = luaL_checklstring(L, 1, &plen);
  if (strlen(path) != plen || plen == 0) return ab_lua_fail(L, -EINVAL);
  if (mkdir(path, 0777) != 0) return ab_lua_fail(L, -errno);
  lua_pushboolean(L, 1);
  return 1;
}

static int l_write_fd(lua_State *L) {
  int fd = (int)luaL_checkinteger(L, 1);
  size_t len;
  const char *data = luaL_checklstring(L, 2, &len);
  int err = write_all(fd, data, len);
  if (err != 0) return ab_lua_fail(L, err);
  lua_pushboolean(L, 1);
  return 1;
}

static int l_file_kind(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  struct stat st;
  if (stat(path, &st) != 0) {
    lua_pushnil(L);
    return 1;
  }
  /* "file" and "directory" are what callers test; the others are words
   * for messages ("is a FIFO") */
  const char *kind = S_ISREG(st.st_mode)    ? "file"
                     : S_ISDIR(st.st_mode)  ? "directory"
                     : S_ISFIFO(st.st_mode) ? "FIFO"
                     : S_ISCHR(st.st_mode)  ? "character device"
                     : S_ISBLK(st.st_mode)  ? "block device"
                     : S_ISSOCK(st.st_mode) ? "socket"
                                            : "special file";
  lua_pushstring(L, kind);
  return 1;
}

static int l_dir_entries(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  DIR *d = opendir(path);
  if (d == NULL) return ab_lua_fail(L, -errno);
  lua_newtable(L);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    lua_pushstring(L, e->d_name);
    lua_rawseti(L, -2, ++n);
  }
  closedir(d);
  /* sorted, so that messages and specs do not depend on readdir order */
  lua_getglobal(L, "table");
  lua_getfield(L, -1, "sort");
  lua_remove(L, -2);
  lua_pushvalue(L, -2);
  lua_call(L, 1, 0);
  return 1;
}

void ab_lua_register_fs(lua_State *L) {
  static const luaL_Reg fns[] = {{"write_file", l_write_file},
                                 {"append_line", l_append_line},
                                 {"mkdir", l_mkdir},
                                 {"write_fd", l_write_fd},
                                 {"file_kind", l_file_kind},
                                 {"dir_entries", l_dir_entries},
                                 {NULL, NULL}};
  for (const luaL_Reg *r = fns; r->name; r++) {
    lua_pushcfunction(L, r->func);
    lua_setfield(L, -2, r->name);
  }
}
