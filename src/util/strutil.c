/* strutil.c: small string helpers. */
#include "util/strutil.h"
#include "util/alloc.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *str_ndup(const char *s, size_t len) {
  char *out = rl_malloc(len + 1);
  if (out != NULL) {
    memcpy(out, s, len);
    out[len] = '\0';
  }
  return out;
}

char *str_dup(const char *s) { return str_ndup(s, strlen(s)); }

char *str_printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int need = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (need < 0)
    return NULL;
  char *out = rl_malloc((size_t)need + 1);
  if (out == NULL)
    return NULL;
  va_start(ap, fmt);
  vsnprintf(out, (size_t)need + 1, fmt, ap);
  va_end(ap);
  return out;
}

int str_host_ok(const char *s, size_t len, size_t cap) {
  if (len == 0 || len >= cap)
    return 0;
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
      return 0;
  return 1;
}

status_t str_port(const char *s, size_t len, int *port) {
  long v = 0;
  if (len == 0 || len > 5)
    return ST_EINVAL;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return ST_EINVAL;
    v = v * 10 + (s[i] - '0');
  }
  if (v < 1 || v > 65535)
    return ST_EINVAL;
  *port = (int)v;
  return ST_OK;
}

/* Lowercase ASCII copy of s into buf (size bytes); 0 when it does not fit. */
static int lower_copy(char *buf, size_t size, const char *s) {
  size_t len = strlen(s);
  if (len >= size)
    return 0;
  for (size_t i = 0; i <= len; i++)
    buf[i] = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] - 'A' + 'a') : s[i];
  return 1;
}

int str_host_allowed(const char *host, const char *const *patterns, size_t n) {
  if (n == 0)
    return 1;
  /* Host names are case-insensitive; FNM_CASEFOLD is not POSIX. */
  char h[256], p[256];
  if (host == NULL || !lower_copy(h, sizeof h, host))
    return 0;
  for (size_t i = 0; i < n; i++)
    if (lower_copy(p, sizeof p, patterns[i]) && fnmatch(p, h, 0) == 0)
      return 1;
  return 0;
}

void str_measured_put(char *buf, size_t size, size_t *len, const char *s, size_t n) {
  if (*len < size) {
    size_t room = size - *len;
    memcpy(buf + *len, s, n < room ? n : room);
  }
  *len += n;
}
