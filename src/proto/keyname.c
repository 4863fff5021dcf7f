/* keyname.c: a resource's derived names in its lock key's slot (see
 * keyname.h for the rule and why it holds). */
#include "proto/keyname.h"

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
