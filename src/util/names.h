/* names.h: the library's own name prefixes on the masters (release
 * channel, fencing counters), as the internal code spells them.  The one
 * definition is public (redlock.h: other clients and the tests need them
 * too).  A name is built from a prefix and a lock key by keyname.h, so that
 * it hashes to the key's cluster slot; the scripts in src/lua get every
 * name in KEYS or ARGV and spell none (test_scripts checks). */
#ifndef REDLOCK_NAMES_H
#define REDLOCK_NAMES_H

#include "redlock.h"

#define NOTIFY_CHANNEL_PREFIX REDLOCK_RELEASE_CHANNEL_PREFIX
#define FENCE_KEY_PREFIX REDLOCK_FENCE_KEY_PREFIX

#endif
