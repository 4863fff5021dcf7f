/* libfuzzer_main.c: the libFuzzer entry point of one fuzz target.  Compiled
 * once per target with -DFUZZ_ONE=fuzz_one_<name> (tests/fuzz/CMakeLists.txt)
 * and linked with -fsanitize=fuzzer, which supplies main(). */
#include "fuzz_targets.h"

#ifndef FUZZ_ONE
#error "define FUZZ_ONE as the target function, e.g. -DFUZZ_ONE=fuzz_one_uri"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return FUZZ_ONE(data, size); }
