/* strutil.h: small string helpers (C11 has no strdup). */
#ifndef REDLOCK_STRUTIL_H
#define REDLOCK_STRUTIL_H

#include <stddef.h>

char *str_dup(const char *s);
char *str_ndup(const char *s, size_t len);
/* malloc'ed printf; NULL when out of memory. */
char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
