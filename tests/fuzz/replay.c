/* replay.c: the corpus replayer, ctest "fuzz_corpus" (label unit).  Built
 * with any compiler, in every build (normal and ASan), it runs each file of
 * <dir>/<target>/ through fuzz_one_<target>() for every <dir> given, normally
 * tests/fuzz/corpus (the seed corpus) and tests/fuzz/regressions (inputs that
 * once crashed a fuzzer), so that the checks of the fuzz targets run in CI
 * without clang and a bug a fuzzer found stays fixed.
 *
 *   fuzz_replay [-o] DIR...          every <target>/ subdirectory of each DIR
 *   fuzz_replay -t TARGET FILE...    the given files through one target
 *
 * Files directly in a DIR (a README) are ignored; a subdirectory that names no
 * target is an error, and so is a first DIR (the corpus) without any input for
 * some target, unless -o is given: a wrong path cannot make the test pass
 * vacuously.  The other DIRs (regressions) may be empty.  A failed check traps
 * (SIGILL) and a memory error aborts under AddressSanitizer: the file being
 * run is printed on stderr first. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../support/test_io.h"
#include "fuzz_targets.h"

#if defined(__SANITIZE_ADDRESS__)
#define REPLAY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REPLAY_ASAN 1
#endif
#endif

#define XX(name) {#name, fuzz_one_##name},
static const fuzz_target_t targets[] = {FUZZ_TARGETS(XX)};
#undef XX
#define N_TARGETS (sizeof targets / sizeof targets[0])

static char current[4096]; /* the file being run, for the crash message */

static void say_current(void) {
  static const char pre[] = "fuzz_replay: crashed on input ";
  if (current[0] == '\0')
    return;
  ssize_t w = write(2, pre, sizeof pre - 1);
  w = write(2, current, strlen(current));
  w = write(2, "\n", 1);
  (void)w;
}

static void on_signal(int sig) {
  say_current();
  signal(sig, SIG_DFL);
  raise(sig);
}

/* AddressSanitizer (gcc and clang) calls this before exiting on an error. */
void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

static const fuzz_target_t *find_target(const char *name) {
  for (size_t i = 0; i < N_TARGETS; i++)
    if (strcmp(targets[i].name, name) == 0)
      return &targets[i];
  return NULL;
}

/* Runs one file; returns 0, or -1 when it cannot be read. */
static int run_file(const fuzz_target_t *t, const char *path) {
  size_t len;
  char *buf = tio_read_file(path, &len);
  if (buf == NULL) {
    fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  snprintf(current, sizeof current, "%s (target %s, %zu bytes)", path, t->name, len);
  /* An exact-size copy, so that AddressSanitizer sees reads past the end. */
  uint8_t *exact = malloc(len > 0 ? len : 1);
  if (exact == NULL) {
    free(buf);
    return -1;
  }
  memcpy(exact, buf, len);
  free(buf);
  t->fn(exact, len);
  free(exact);
  current[0] = '\0';
  return 0;
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int skip_name(const struct dirent *e) { return e->d_name[0] != '.'; }

/* Runs every file of dir/<target>/; counts them per target in counts[]. */
static int run_root(const char *root, size_t counts[N_TARGETS]) {
  struct dirent **subs;
  int n_subs = scandir(root, &subs, skip_name, alphasort);
  int rc = 0;
  if (n_subs < 0) {
    fprintf(stderr, "fuzz_replay: %s: %s\n", root, strerror(errno));
    return -1;
  }
  for (int i = 0; i < n_subs; i++) {
    char sub[2048];
    snprintf(sub, sizeof sub, "%s/%s", root, subs[i]->d_name);
    if (!is_dir(sub))
      continue; /* a README */
    const fuzz_target_t *t = find_target(subs[i]->d_name);
    if (t == NULL) {
      fprintf(stderr, "fuzz_replay: %s: no fuzz target of that name\n", sub);
      rc = -1;
      continue;
    }
    struct dirent **files;
    int n_files = scandir(sub, &files, skip_name, alphasort);
    if (n_files < 0) {
      fprintf(stderr, "fuzz_replay: %s: %s\n", sub, strerror(errno));
      rc = -1;
      continue;
    }
    for (int j = 0; j < n_files; j++) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", sub, files[j]->d_name);
      if (is_dir(path)) {
        free(files[j]);
        continue;
      }
      if (run_file(t, path) != 0)
        rc = -1;
      else
        counts[t - targets]++;
      free(files[j]);
    }
    free(files);
  }
  for (int i = 0; i < n_subs; i++)
    free(subs[i]);
  free(subs);
  return rc;
}

static int usage(void) {
  fprintf(stderr, "usage: fuzz_replay [-o] DIR...\n"
                  "       fuzz_replay -t TARGET FILE...\n"
                  "  DIR holds <target>/ subdirectories (targets:");
  for (size_t i = 0; i < N_TARGETS; i++)
    fprintf(stderr, " %s", targets[i].name);
  fprintf(stderr, "); -o: a DIR may lack inputs for some targets\n");
  return 2;
}

int main(int argc, char **argv) {
  signal(SIGILL, on_signal);
  signal(SIGABRT, on_signal);
  signal(SIGTRAP, on_signal);
#ifndef REPLAY_ASAN /* AddressSanitizer reports these itself */
  signal(SIGSEGV, on_signal);
  signal(SIGBUS, on_signal);
#endif
  if (__sanitizer_set_death_callback != NULL)
    __sanitizer_set_death_callback(say_current);

  if (argc >= 3 && strcmp(argv[1], "-t") == 0) {
    const fuzz_target_t *t = find_target(argv[2]);
    if (t == NULL || argc < 4)
      return usage();
    int rc = 0;
    for (int i = 3; i < argc; i++)
      if (run_file(t, argv[i]) != 0)
        rc = 1;
    printf("fuzz_replay: %d file(s) through %s: %s\n", argc - 3, t->name, rc ? "FAILED" : "ok");
    return rc;
  }

  int optional = 0, first = 1;
  if (argc > 1 && strcmp(argv[1], "-o") == 0)
    optional = 1, first = 2;
  if (first >= argc)
    return usage();
  int rc = 0;
  for (int i = first; i < argc; i++) {
    size_t counts[N_TARGETS] = {0};
    int must_cover = !optional && i == first;
    if (run_root(argv[i], counts) != 0)
      rc = 1;
    printf("fuzz_replay: %s:", argv[i]);
    for (size_t t = 0; t < N_TARGETS; t++) {
      printf(" %s=%zu", targets[t].name, counts[t]);
      if (must_cover && counts[t] == 0) {
        fprintf(stderr, "fuzz_replay: %s/%s: no inputs\n", argv[i], targets[t].name);
        rc = 1;
      }
    }
    printf("\n");
  }
  printf("fuzz_replay: %s\n", rc ? "FAILED" : "all inputs passed");
  return rc;
}
