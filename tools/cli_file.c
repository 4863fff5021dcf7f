/* cli_file.c: a file replaced whole, by a temporary file renamed over it
 * (cli_file.h). */
#define _GNU_SOURCE /* mkostemp */

#include "cli_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "DIR/.BASE.XXXXXX" for path "DIR/BASE" (or "BASE"), malloc'ed.  In the
 * same directory: rename(2) does not cross file systems. */
static char *temp_template(const char *path) {
  const char *slash = strrchr(path, '/');
  size_t dir_len = slash != NULL ? (size_t)(slash - path) + 1 : 0;
  const char *base = path + dir_len;
  size_t size = strlen(path) + sizeof "/..XXXXXX";
  char *t = malloc(size);
  if (t != NULL)
    snprintf(t, size, "%.*s.%s.XXXXXX", (int)dir_len, path, base);
  return t;
}

static int write_all(int fd, const char *data, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return -1;
    data += n;
    len -= (size_t)n;
  }
  return 0;
}

int cli_file_replace(const char *path, const char *data, size_t len, mode_t mode) {
  if (path == NULL || path[0] == '\0' || path[strlen(path) - 1] == '/') {
    errno = EINVAL;
    return -1;
  }
  char *tmp = temp_template(path);
  if (tmp == NULL) {
    errno = ENOMEM;
    return -1;
  }
  int fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    free(tmp);
    errno = e;
    return -1;
  }
  /* mkostemp makes it 0600; readers (a metrics collector) need more. */
  int rc = fchmod(fd, mode) == 0 && write_all(fd, data, len) == 0 && fsync(fd) == 0 ? 0 : -1;
  int e = errno;
  if (close(fd) != 0 && rc == 0) {
    rc = -1;
    e = errno;
  }
  if (rc == 0 && rename(tmp, path) != 0) {
    rc = -1;
    e = errno;
  }
  if (rc != 0)
    unlink(tmp);
  free(tmp);
  errno = e;
  return rc;
}
