/* sightings.c: first sightings of a server's replication history, shared
 * through a directory (see sightings.h). */
#define _GNU_SOURCE /* O_CLOEXEC, O_NOFOLLOW, futimens, dirfd */
#include "util/sightings.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/status.h"

#define BOOT_ID_LEN 36
#define ID_LEN 40 /* a run_id, a replication id: 40 hex digits */
#define NAME_LEN (2 * ID_LEN + 1)
/* A record unused this long is removed when a new one is written. */
#define STALE_S (30 * 24 * 3600)
/* A record in use is touched (its mtime: last use) at most this often. */
#define TOUCH_S (24 * 3600)

static int fail(char *why, size_t why_len, const char *what, const char *path, int err) {
  if (why_len > 0)
    snprintf(why, why_len, "%s %s%s%s", what, path, err != 0 ? ": " : "",
             err != 0 ? strerror(err) : "");
  return 0;
}

static int is_hex_id(const char *s) {
  if (strlen(s) != ID_LEN)
    return 0;
  for (const char *p = s; *p != '\0'; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
      return 0;
  return 1;
}

static status_t boot_id(char out[BOOT_ID_LEN + 1]) {
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
  if (f == NULL)
    return ST_EIO;
  int ok = fscanf(f, "%36s", out) == 1 && strlen(out) == BOOT_ID_LEN;
  fclose(f);
  return ok ? ST_OK : ST_EIO;
}

static uint64_t mono_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* dir and its missing parents, mode 0700; then dir must be this user's
 * and writable by nobody else. */
static int dir_ready(const char *dir, char *why, size_t why_len) {
  char path[SIGHTINGS_DIR_MAX + 1];
  size_t len = strlen(dir);
  if (len == 0 || len > SIGHTINGS_DIR_MAX)
    return fail(why, why_len, "state directory name too long or empty:", "", 0);
  memcpy(path, dir, len + 1);
  for (size_t i = 1; i <= len; i++) {
    if (path[i] != '/' && path[i] != '\0')
      continue;
    char c = path[i];
    path[i] = '\0';
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
      return fail(why, why_len, "cannot make state directory", path, errno);
    path[i] = c;
  }
  struct stat st;
  if (stat(dir, &st) != 0)
    return fail(why, why_len, "cannot read state directory", dir, errno);
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) != 0)
    return fail(why, why_len,
                "state directory not used (not a directory of this user's, or writable by others):",
                dir, 0);
  return 1;
}

/* Reads a record: ST_OK with *found (and then *mono_ns); *found is 0 when
 * there is none (errno ENOENT).  ST_EIO when it is not to be used (why). */
static status_t record_read(int dfd, const char *name, const char *boot, uint64_t *mono_ns,
                            int *found, char *why, size_t why_len) {
  *found = 0;
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return ST_OK;
    fail(why, why_len, "cannot read sighting", name, errno);
    return ST_EIO;
  }
  struct stat st;
  char text[160];
  ssize_t n = -1;
  int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
           (st.st_mode & 022) == 0 && (n = read(fd, text, sizeof text - 1)) > 0;
  char rec_boot[BOOT_ID_LEN + 1];
  unsigned long long mono = 0;
  if (ok) {
    text[n] = '\0';
    ok = sscanf(text, "redlock-sighting 1 boot %36s mono %llu", rec_boot, &mono) == 2 &&
         strcmp(rec_boot, boot) == 0;
  }
  if (ok && time(NULL) - st.st_mtime > TOUCH_S)
    (void)futimens(fd, NULL); /* in use: not stale */
  close(fd);
  if (!ok) {
    fail(why, why_len, "sighting not used (not this user's, malformed or of another boot):", name,
         0);
    return ST_EIO;
  }
  *mono_ns = mono;
  *found = 1;
  return ST_OK;
}

/* Writes a record of now under name, unless one is there already (the
 * first writer wins): ST_OK with *written 1, or 0 when another was first;
 * ST_EIO on error (why). */
static status_t record_write(int dfd, const char *name, const char *boot, uint64_t now,
                             int *written, char *why, size_t why_len) {
  *written = 0;
  char tmp[64], text[160];
  snprintf(tmp, sizeof tmp, ".tmp-%ld-%llu", (long)getpid(), (unsigned long long)now);
  int n = snprintf(text, sizeof text, "redlock-sighting 1 boot %s mono %llu\n", boot,
                   (unsigned long long)now);
  int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    fail(why, why_len, "cannot write sighting", tmp, errno);
    return ST_EIO;
  }
  int ok = write(fd, text, (size_t)n) == n;
  ok = close(fd) == 0 && ok;
  status_t st = ST_EIO;
  if (!ok) {
    fail(why, why_len, "cannot write sighting", tmp, errno);
  } else if (linkat(dfd, tmp, dfd, name, 0) == 0) {
    *written = 1;
    st = ST_OK;
  } else if (errno == EEXIST) {
    st = ST_OK;
  } else {
    fail(why, why_len, "cannot write sighting", name, errno);
  }
  (void)unlinkat(dfd, tmp, 0);
  return st;
}

/* Removes records of this user's unused for STALE_S, and temporary files
 * left by a writer that died (older than a minute). */
static void prune(int dfd) {
  int fd = dup(dfd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (d == NULL) {
    if (fd >= 0)
      close(fd);
    return;
  }
  time_t now = time(NULL);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int tmp = strncmp(e->d_name, ".tmp-", 5) == 0;
    if (!tmp && strlen(e->d_name) != NAME_LEN)
      continue;
    struct stat st;
    if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != geteuid())
      continue;
    if (now - st.st_mtime > (tmp ? 60 : STALE_S))
      (void)unlinkat(dfd, e->d_name, 0);
  }
  closedir(d);
}

int sightings_first_seen(const char *dir, const char *run_id, const char *replid, uint64_t *age_ns,
                         char *why, size_t why_len) {
  if (why_len > 0)
    why[0] = '\0';
  char boot[BOOT_ID_LEN + 1], name[NAME_LEN + 1];
  if (!is_hex_id(run_id) || !is_hex_id(replid))
    return fail(why, why_len, "no sighting for a server without run_id and replication id", "", 0);
  if (boot_id(boot) != ST_OK)
    return fail(why, why_len, "no sighting: cannot read", "/proc/sys/kernel/random/boot_id", 0);
  if (!dir_ready(dir, why, why_len))
    return 0;
  snprintf(name, sizeof name, "%s-%s", run_id, replid);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return fail(why, why_len, "cannot open state directory", dir, errno);
  uint64_t now = mono_now_ns(), mono = 0;
  status_t st = ST_OK;
  int found = 0;
  for (int tries = 0; tries < 2 && st == ST_OK && !found; tries++) {
    st = record_read(dfd, name, boot, &mono, &found, why, why_len);
    if (st != ST_OK || found)
      break;
    int written = 0;
    st = record_write(dfd, name, boot, now, &written, why, why_len);
    if (st == ST_OK && written) {
      mono = now;
      found = 1;
      prune(dfd);
    } /* not written: another client wrote it first: read that one */
  }
  close(dfd);
  if (st != ST_OK || !found)
    return 0;
  *age_ns = now > mono ? now - mono : 0;
  return 1;
}
