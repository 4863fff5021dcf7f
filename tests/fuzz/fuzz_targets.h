/* fuzz_targets.h: the fuzz targets of redlock-c, shared by the libFuzzer
 * executables (libfuzzer_main.c, clang only) and the corpus replayer
 * (replay.c, any compiler, ctest "fuzz_corpus").
 *
 * Each target is a plain function fuzz_one_<name>(data, size) that feeds the
 * bytes to the library's parsing code and checks invariants with FUZZ_CHECK,
 * which prints the failed condition and calls __builtin_trap(): libFuzzer
 * records it as a crash, and the replayer dies with SIGILL.  Targets return 0
 * and keep no state between calls (no leaks, nothing static that changes). */
#ifndef REDLOCK_FUZZ_TARGETS_H
#define REDLOCK_FUZZ_TARGETS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FUZZ_CHECK(cond)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #cond);            \
      fflush(stderr);                                                                              \
      __builtin_trap();                                                                            \
    }                                                                                              \
  } while (0)

int fuzz_one_uri(const uint8_t *data, size_t size);     /* fuzz_uri.c: uri_parse */
int fuzz_one_info(const uint8_t *data, size_t size);    /* fuzz_info.c: info_parse_server */
int fuzz_one_reply(const uint8_t *data, size_t size);   /* fuzz_reply.c: reply.h via hiredis */
int fuzz_one_evalsha(const uint8_t *data, size_t size); /* fuzz_evalsha.c: EVALSHA -> EVAL */

/* fuzz_common.c: a hiredis redisReader (returned as void * so that this header
 * needs no hiredis) with the default reply objects, except that arrays of more
 * than FUZZ_MAX_ELEMENTS elements are refused: hiredis 0.14 allocates an
 * array's element table as soon as it reads "*<count>" (up to INT_MAX
 * elements, 16 GiB), which libFuzzer would report as an out-of-memory crash
 * of hiredis; refused, the reader fails with "Out of memory" instead. */
#define FUZZ_MAX_ELEMENTS (1 << 16)
/* fuzz_common.c: a malloc'ed copy of the input (size bytes, at least 1
 * allocated), so that a target may modify it and AddressSanitizer sees reads
 * past its end; never NULL (an allocation failure traps). */
char *fuzz_copy(const uint8_t *data, size_t size);
void *fuzz_reader_create(void);

/* The targets by name, as the replayer finds them under corpus/<name>/ and
 * regressions/<name>/. */
typedef struct {
  const char *name;
  int (*fn)(const uint8_t *data, size_t size);
} fuzz_target_t;

#define FUZZ_TARGETS(XX) XX(uri) XX(info) XX(reply) XX(evalsha)

#endif
