/* test_sightings.c: sightings.h, the first sightings of a server's
 * replication history shared between clients through a directory: made on
 * first sight, read back later (never moved later), kept apart per history,
 * and not trusted from a directory or file another user could have written,
 * from another boot, or malformed; stale ones pruned. */
#define _GNU_SOURCE /* mkdtemp, utimensat */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "redlock.h"
#include "util/sightings.h"

#define RUN_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define REPL_1 "1111111111111111111111111111111111111111"
#define REPL_2 "2222222222222222222222222222222222222222"

typedef struct {
  char root[64];
  char dir[128];
} tmp_t;

static int setup(void **state) {
  tmp_t *t = calloc(1, sizeof *t);
  if (t == NULL)
    return -1;
  snprintf(t->root, sizeof t->root, "/tmp/test-sightings-XXXXXX");
  if (mkdtemp(t->root) == NULL) {
    free(t);
    return -1;
  }
  snprintf(t->dir, sizeof t->dir, "%s/state/redlock", t->root); /* parents made too */
  *state = t;
  return 0;
}

static int teardown(void **state) {
  tmp_t *t = *state;
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->root);
  int rc = system(cmd);
  free(t);
  return rc == 0 ? 0 : -1;
}

static void record_path(const tmp_t *t, const char *run, const char *repl, char *out, size_t n) {
  snprintf(out, n, "%s/%s-%s", t->dir, run, repl);
}

static int seen(const tmp_t *t, const char *run, const char *repl, uint64_t *age, char *why) {
  return sightings_first_seen(t->dir, run, repl, age, why, 200);
}

static void test_first_then_earlier(void **state) {
  tmp_t *t = *state;
  uint64_t age = 99;
  char why[200];
  assert_int_equal(seen(t, RUN_A, REPL_1, &age, why), 1);
  assert_int_equal(age, 0); /* recorded now */
  struct stat st;
  assert_int_equal(stat(t->dir, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  char path[256];
  record_path(t, RUN_A, REPL_1, path, sizeof path);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  struct timespec pause = {0, 2000000};
  nanosleep(&pause, NULL); /* so that the second reading is later */
  uint64_t age2 = 0;
  assert_int_equal(seen(t, RUN_A, REPL_1, &age2, why), 1);
  assert_true(age2 >= 2000000u); /* the first sighting, not this one */
  /* Another replication id of the same server is another history. */
  uint64_t age3 = 99;
  assert_int_equal(seen(t, RUN_A, REPL_2, &age3, why), 1);
  assert_int_equal(age3, 0);
}

/* The first writer wins: a record already there is read, never replaced. */
static void test_existing_record_kept(void **state) {
  tmp_t *t = *state;
  uint64_t age = 0;
  char why[200], path[256], boot[64] = "";
  assert_int_equal(seen(t, RUN_A, REPL_1, &age, why), 1);
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  assert_non_null(f);
  assert_int_equal(fscanf(f, "%63s", boot), 1);
  fclose(f);
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  record_path(t, RUN_A, REPL_2, path, sizeof path);
  f = fopen(path, "w");
  assert_non_null(f);
  /* Seen 5 s ago (as another client would have written it). */
  fprintf(f, "redlock-sighting 1 boot %s mono %llu\n", boot,
          (unsigned long long)(now.tv_sec - 5) * 1000000000ull + (unsigned long long)now.tv_nsec);
  fclose(f);
  assert_int_equal(chmod(path, 0600), 0);
  assert_int_equal(seen(t, RUN_A, REPL_2, &age, why), 1);
  assert_true(age >= 5000000000ull && age < 60000000000ull);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  assert_int_equal(chmod(path, 0600), 0);
}

static void test_untrusted(void **state) {
  tmp_t *t = *state;
  uint64_t age = 0;
  char why[200], path[256];
  assert_int_equal(seen(t, RUN_A, REPL_1, &age, why), 1); /* makes the directory */
  /* Another boot's record: its clock is not ours. */
  record_path(t, RUN_A, REPL_2, path, sizeof path);
  write_text(path, "redlock-sighting 1 boot 00000000-0000-0000-0000-000000000000 mono 1\n");
  assert_int_equal(seen(t, RUN_A, REPL_2, &age, why), 0);
  assert_non_null(strstr(why, "another boot"));
  /* Malformed. */
  write_text(path, "garbage\n");
  assert_int_equal(seen(t, RUN_A, REPL_2, &age, why), 0);
  /* Writable by others. */
  record_path(t, RUN_A, REPL_1, path, sizeof path);
  assert_int_equal(chmod(path, 0666), 0);
  assert_int_equal(seen(t, RUN_A, REPL_1, &age, why), 0);
  assert_int_equal(chmod(path, 0600), 0);
  assert_int_equal(seen(t, RUN_A, REPL_1, &age, why), 1);
  /* Another user's file (only root can make one). */
  if (geteuid() == 0) {
    assert_int_equal(chown(path, 1, 1), 0);
    assert_int_equal(seen(t, RUN_A, REPL_1, &age, why), 0);
    assert_int_equal(chown(path, 0, 0), 0);
  }
  /* A directory others may write. */
  assert_int_equal(chmod(t->dir, 0777), 0);
  assert_int_equal(seen(t, RUN_A, REPL_1, &age, why), 0);
  assert_non_null(strstr(why, "writable by others"));
  assert_int_equal(chmod(t->dir, 0700), 0);
  /* Not an id: never a path of its own. */
  assert_int_equal(seen(t, "../../etc/passwd", REPL_1, &age, why), 0);
  assert_int_equal(seen(t, RUN_A, "", &age, why), 0);
}

/* A record unused for 30 days goes when a new one is written. */
static void test_prune(void **state) {
  tmp_t *t = *state;
  uint64_t age = 0;
  char why[200], path[256];
  assert_int_equal(seen(t, RUN_A, REPL_1, &age, why), 1);
  record_path(t, RUN_A, REPL_1, path, sizeof path);
  struct timespec old[2] = {{time(NULL) - 31 * 24 * 3600, 0}, {time(NULL) - 31 * 24 * 3600, 0}};
  assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
  assert_int_equal(seen(t, RUN_A, REPL_2, &age, why), 1);
  struct stat st;
  assert_int_equal(stat(path, &st), -1);
}

static void test_option(void **state) {
  (void)state;
  redlock_options_t *o = redlock_options_new();
  assert_non_null(o);
  const char *dir = "x";
  assert_int_equal(redlock_options_get_state_dir(o, &dir), 0);
  assert_null(dir); /* none by default */
  assert_int_equal(redlock_options_set_state_dir(o, "relative/dir"), REDLOCK_EINVAL);
  assert_int_equal(redlock_options_set_state_dir(o, "/var/tmp/x"), 0);
  assert_int_equal(redlock_options_get_state_dir(o, &dir), 0);
  assert_string_equal(dir, "/var/tmp/x");
  assert_int_equal(redlock_options_set_state_dir(o, ""), 0);
  assert_int_equal(redlock_options_get_state_dir(o, &dir), 0);
  assert_null(dir);
  assert_int_equal(redlock_options_set_state_dir(NULL, "/x"), REDLOCK_EINVAL);
  char *long_dir = malloc(SIGHTINGS_DIR_MAX + 2);
  assert_non_null(long_dir);
  memset(long_dir, 'a', SIGHTINGS_DIR_MAX + 1);
  long_dir[0] = '/';
  long_dir[SIGHTINGS_DIR_MAX + 1] = '\0';
  assert_int_equal(redlock_options_set_state_dir(o, long_dir), REDLOCK_EINVAL);
  free(long_dir);
  redlock_options_free(o);
}

/* A directory that cannot be made, or whose name is empty or too long, is
 * no place for sightings: 0, why naming it. */
static void test_dir_refused(void **state) {
  tmp_t *t = *state;
  uint64_t age = 99;
  char why[200];
  assert_int_equal(sightings_first_seen("", RUN_A, REPL_1, &age, why, sizeof why), 0);
  assert_non_null(strstr(why, "too long or empty"));
  static char long_dir[SIGHTINGS_DIR_MAX + 2];
  memset(long_dir, 'd', sizeof long_dir - 1);
  long_dir[0] = '/';
  assert_int_equal(sightings_first_seen(long_dir, RUN_A, REPL_1, &age, why, sizeof why), 0);
  assert_non_null(strstr(why, "too long or empty"));
  /* Its parent is a regular file: mkdir fails. */
  char file[160], under[200];
  snprintf(file, sizeof file, "%s/a-file", t->root);
  FILE *f = fopen(file, "w");
  assert_non_null(f);
  fclose(f);
  snprintf(under, sizeof under, "%s/state", file);
  assert_int_equal(sightings_first_seen(under, RUN_A, REPL_1, &age, why, sizeof why), 0);
  assert_non_null(strstr(why, "cannot make state directory"));
  assert_non_null(strstr(why, file));
}

/* A record that is a symbolic link is not followed (another user could
 * point it anywhere): 0, why naming it; an id that is not 40 hex digits
 * makes no record; and pruning passes over what is no regular file. */
static void test_link_and_bad_ids(void **state) {
  tmp_t *t = *state;
  uint64_t age = 0;
  char why[200];
  assert_int_equal(seen(t, RUN_A, REPL_2, &age, why), 1); /* makes the directory */
  char path[256];
  record_path(t, RUN_A, REPL_1, path, sizeof path);
  assert_int_equal(symlink("/etc/hostname", path), 0);
  assert_int_equal(seen(t, RUN_A, REPL_1, &age, why), 0);
  assert_non_null(strstr(why, "cannot read sighting"));
  assert_int_equal(unlink(path), 0);
  assert_int_equal(mkdir(path, 0700), 0); /* a directory of a record's name */
  char upper[] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
  assert_int_equal(seen(t, upper, REPL_1, &age, why), 0);
  assert_non_null(strstr(why, "without run_id and replication id"));
  /* A new record prunes: the directory stays. */
  assert_int_equal(seen(t, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", REPL_1, &age, why), 1);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
}

/* A record read back that is older than a day is touched: in use, so the
 * pruning of stale ones leaves it. */
static void test_old_record_touched(void **state) {
  tmp_t *t = *state;
  uint64_t age = 0;
  char why[200];
  assert_int_equal(seen(t, RUN_A, REPL_1, &age, why), 1);
  char path[256];
  record_path(t, RUN_A, REPL_1, path, sizeof path);
  time_t old = time(NULL) - 3 * 24 * 3600;
  struct timespec times[2] = {{.tv_sec = old}, {.tv_sec = old}};
  assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
  assert_int_equal(seen(t, RUN_A, REPL_1, &age, why), 1);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_true(st.st_mtime > old + 24 * 3600);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_first_then_earlier, setup, teardown),
      cmocka_unit_test_setup_teardown(test_existing_record_kept, setup, teardown),
      cmocka_unit_test_setup_teardown(test_untrusted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_prune, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dir_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_old_record_touched, setup, teardown),
      cmocka_unit_test_setup_teardown(test_link_and_bad_ids, setup, teardown),
      cmocka_unit_test(test_option),
  };
  return cmocka_run_group_tests_name("sightings", tests, NULL, NULL);
}
