/* test_io.h: whole-buffer I/O for test programs (plain libc, header-only):
 * read a file into memory, write a buffer out across short writes. */
#ifndef REDLOCK_TEST_IO_H
#define REDLOCK_TEST_IO_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The whole file, malloc'ed, with a NUL after its *len bytes (for text);
 * NULL (errno set) when it cannot be opened or read, or out of memory. */
static inline char *tio_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  size_t cap = 4096, n = 0, got;
  char *buf = malloc(cap);
  while (buf != NULL && (got = fread(buf + n, 1, cap - 1 - n, f)) > 0) {
    n += got;
    if (n == cap - 1) {
      char *grown = realloc(buf, cap * 2);
      if (grown == NULL)
        free(buf);
      buf = grown;
      cap *= 2;
    }
  }
  if (buf != NULL && ferror(f)) {
    free(buf);
    buf = NULL;
    errno = EIO;
  }
  fclose(f);
  if (buf != NULL)
    buf[n] = '\0';
  *len = n;
  return buf;
}

/* Writes all len bytes (EINTR resumed): 0, or -1 on an error. */
static inline int tio_write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

#endif
