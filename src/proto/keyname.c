/* keyname.c: a resource's derived names in its lock key's slot (see
 * keyname.h for the rule and why it holds). */
#include "proto/keyname.h"

#include "redlock.h"

#include <string.h>

int keyname_has_tag(const char *key, size_t len) {
  const char *open = memchr(key, '{', len);
  if (open == NULL)
    return 0;
  size_t start = (size_t)(open - key) + 1;
  const char *close = memchr(key + start, '}', len - start);
  return close != NULL && close > key + start;
}

int keyname_in_slot(const char *key, size_t len) {
  /* With a tag the name hashes by the same tag; without one, "{" + key +
   * "}" hashes by key whole exactly when the added '}' closes the tag. */
  return keyname_has_tag(key, len) || memchr(key, '}', len) == NULL;
}

size_t keyname_len(size_t prefix_len, const char *key, size_t len, size_t suffix_len) {
  return prefix_len + len + (keyname_has_tag(key, len) ? 0 : KEYNAME_TAG_LEN) + suffix_len;
}

size_t keyname_build(char *out, const char *prefix, size_t prefix_len, const char *key, size_t len,
                     const char *suffix, size_t suffix_len) {
  int tag = !keyname_has_tag(key, len);
  char *w = out;
  memcpy(w, prefix, prefix_len);
  w += prefix_len;
  if (tag)
    *w++ = '{';
  memcpy(w, key, len);
  w += len;
  if (tag)
    *w++ = '}';
  memcpy(w, suffix, suffix_len);
  w += suffix_len;
  *w = '\0';
  return (size_t)(w - out);
}

/* 1 when key[0..len) ends with suffix; *stem is then the length before it. */
static int ends_with(const char *key, size_t len, const char *suffix, size_t *stem) {
  size_t n = strlen(suffix);
  if (n > len || memcmp(key + len - n, suffix, n) != 0)
    return 0;
  *stem = len - n;
  return 1;
}

/* 1 when key ends with ":sem:" + a slot number a semaphore can have. */
static int ends_with_sem_slot(const char *key, size_t len, size_t *stem) {
  static const char sep[] = ":sem:";
  size_t digits = 0;
  unsigned long value = 0;
  while (digits < len && digits < 5 && key[len - 1 - digits] >= '0' && key[len - 1 - digits] <= '9')
    digits++;
  if (digits == 0 || digits == 5)
    return 0;
  const char *first = key + len - digits;
  if (digits > 1 && first[0] == '0')
    return 0; /* slots are written without leading zeros */
  for (size_t i = 0; i < digits; i++)
    value = value * 10 + (unsigned long)(first[i] - '0');
  if (value >= REDLOCK_MAX_SEM_LIMIT)
    return 0;
  return ends_with(key, len - digits, sep, stem);
}

const char *keyname_reserved(const char *key, size_t len, int mutex) {
  static const char reserved[] = REDLOCK_RESERVED_PREFIX;
  if (len >= sizeof reserved - 1 && memcmp(key, reserved, sizeof reserved - 1) == 0)
    return "it starts with the reserved prefix " REDLOCK_RESERVED_PREFIX
           " (the library's fence counters and release channels)";
  /* The semaphore's and read-write lock's suffixes (prims.h, a layer up;
   * test_keyname checks they are the same). */
  static const char *const prim_suffixes[] = {
      ":sem:limit",
      ":rw:write",
      ":rw:read",
      ":rw:intent",
  };
  if (!mutex)
    return NULL;
  size_t stem = 0;
  int prim = ends_with_sem_slot(key, len, &stem);
  for (size_t i = 0; !prim && i < sizeof prim_suffixes / sizeof prim_suffixes[0]; i++)
    prim = ends_with(key, len, prim_suffixes[i], &stem);
  if (prim && keyname_has_tag(key, stem))
    return "it has a hash tag and ends like a semaphore's or read-write lock's key "
           "(:sem:N, :sem:limit, :rw:write, :rw:read, :rw:intent), which it would share";
  return NULL;
}
