/* strutil.h: small string helpers (C11 has no strdup). */
#ifndef REDLOCK_STRUTIL_H
#define REDLOCK_STRUTIL_H

#include <stddef.h>

#include "util/status.h"

char *str_dup(const char *s);
char *str_ndup(const char *s, size_t len);
/* malloc'ed printf; NULL when out of memory. */
char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 1 when [s, s+len) is a host as a server names one in a reply: not empty,
 * shorter than cap, printable ASCII without blanks. */
int str_host_ok(const char *s, size_t len, size_t cap);
/* 1 when host matches one of the n patterns (fnmatch(3) globs, compared
 * without regard to ASCII case), or when n == 0 (nothing pinned). */
int str_host_allowed(const char *host, const char *const *patterns, size_t n);
/* A decimal port 1..65535 in [s, s+len), nothing else: ST_OK with *port;
 * ST_EINVAL otherwise (*port untouched). */
status_t str_port(const char *s, size_t len, int *port);
/* Appends n bytes of s at *len in buf (size bytes) as snprintf would: what
 * fits is copied, *len counts them all (the text's whole length). */
void str_measured_put(char *buf, size_t size, size_t *len, const char *s, size_t n);

#endif
