/* cli_doctor_key.c: the names of the doctor's own key, its fencing counter
 * and its release channel, which every master's checks write and read:
 * random, so that two doctors never touch each other's keys; placed in a
 * cluster primary's slots by cli_doctor_cluster.c. */
#define _POSIX_C_SOURCE 200809L /* O_CLOEXEC, clock_gettime */
#include "cli_doctor.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void dr_name_key(dr_settings_t *set, const char *suffix) {
  snprintf(set->key, sizeof set->key, "%s" DR_KEY_PREFIX "%s%s", set->prefix, set->hex, suffix);
  /* Named as the library names them (keyname.h: in the key's hash slot). */
  size_t key_len = strlen(set->key);
  keyname_build(set->fence_key, REDLOCK_FENCE_KEY_PREFIX, sizeof REDLOCK_FENCE_KEY_PREFIX - 1,
                set->key, key_len, "", 0);
  keyname_build(set->channel, REDLOCK_RELEASE_CHANNEL_PREFIX,
                sizeof REDLOCK_RELEASE_CHANNEL_PREFIX - 1, set->key, key_len, "", 0);
}

/* The doctor's key, counter, channel and value: random, so that two
 * doctors never touch each other's keys. */
void dr_make_names(dr_settings_t *set) {
  unsigned char rnd[8] = {0};
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || read(fd, rnd, sizeof rnd) != (ssize_t)sizeof rnd) {
    struct timespec ts; /* unique enough with the PID */
    clock_gettime(CLOCK_REALTIME, &ts);
    memcpy(rnd, &ts.tv_nsec, sizeof ts.tv_nsec < sizeof rnd ? sizeof ts.tv_nsec : sizeof rnd);
  }
  if (fd >= 0)
    close(fd);
  for (int i = 0; i < 8; i++)
    snprintf(set->hex + 2 * i, 3, "%02x", rnd[i]);
  dr_name_key(set, "");
  snprintf(set->value, sizeof set->value, "redlock-doctor-%s", set->hex);
}
