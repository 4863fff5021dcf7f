/* keyname.h: the names of a resource's other keys and channels (fencing
 * counters, semaphore and read-write keys, release channels), built from
 * its lock key so that every one of them hashes to the lock key's cluster
 * slot (keyslot.h): a cluster voter must find all the keys of one script on
 * one primary, and a single-slot script never gets CROSSSLOT.
 *
 * The lock key K (key prefix + resource) itself never changes: other
 * Redlock clients take the same key.  A derived name is
 *     PREFIX + tagged(K) + SUFFIX
 * where tagged(K) is K itself when K has a hash tag, else "{" + K + "}".
 * The library's PREFIXes contain no '{', so the first '{' of the name is
 * K's own (or the one added): the name's tag is K's tag, or K whole.
 * That fails only for a K with no tag that contains a '}' ("a}b", "x{}y}"):
 * the tag would end at K's '}'.  keyname_in_slot() tells those apart; their
 * names are built the same way (they work on any voter that is not a
 * cluster). */
#ifndef REDLOCK_KEYNAME_H
#define REDLOCK_KEYNAME_H

#include <stddef.h>

/* The bytes tagged(K) may add to K: "{" and "}". */
#define KEYNAME_TAG_LEN 2

/* 1 when key has a hash tag (keyslot.h): a '{', then a '}' after at least
 * one byte; else 0. */
int keyname_has_tag(const char *key, size_t len);

/* 1 when every name keyname_build makes from key (with a prefix free of
 * '{') hashes to key's slot; 0 for a key with no hash tag that contains a
 * '}', whose names cannot share its slot. */
int keyname_in_slot(const char *key, size_t len);

/* The length of prefix + tagged(key) + suffix (no NUL): at most
 * prefix_len + len + KEYNAME_TAG_LEN + suffix_len. */
size_t keyname_len(size_t prefix_len, const char *key, size_t len, size_t suffix_len);

/* Writes prefix + tagged(key) + suffix and a NUL at out, which has room for
 * keyname_len(...) + 1 bytes; returns the length (no NUL).  Any bytes. */
size_t keyname_build(char *out, const char *prefix, size_t prefix_len, const char *key, size_t len,
                     const char *suffix, size_t suffix_len);

/* Why the key `key` (key prefix + resource or name) must not be used: it
 * starts with REDLOCK_RESERVED_PREFIX (the library's own fence counters and
 * channels); or, for a mutex's lock key (mutex != 0; a semaphore's or
 * read-write lock's K is never a key itself), it is one of a semaphore's or read-write
 * lock's keys, tagged(K) + ":sem:" + slot (canonical decimal below
 * REDLOCK_MAX_SEM_LIMIT), + ":sem:limit", + ":rw:write", ":rw:read" or
 * ":rw:intent" for some K (exactly the keys with a hash tag that end so:
 * the suffixes hold no brace, so the tag lies in the stem, which is then
 * its own tagged()).  A static message, or NULL when the key is free. */
const char *keyname_reserved(const char *key, size_t len, int mutex);

#endif
