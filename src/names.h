/* names.h: the library's own names on the masters (release channel, fencing
 * counters), as the internal code spells them.  The one definition is public
 * (redlock.h: other clients and the tests need them too); the scripts in
 * src/lua write @REDLOCK_RELEASE_CHANNEL_PREFIX@, which CMake replaces with
 * the header's value before it takes their SHA1s (test_scripts checks). */
#ifndef REDLOCK_NAMES_H
#define REDLOCK_NAMES_H

#include "redlock.h"

#define NOTIFY_CHANNEL_PREFIX REDLOCK_RELEASE_CHANNEL_PREFIX
#define FENCE_KEY_PREFIX REDLOCK_FENCE_KEY_PREFIX

#endif
