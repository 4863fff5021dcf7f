/* fuzz_common.c: helpers shared by the fuzz targets (see fuzz_targets.h). */
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_targets.h"

/* The reader's array constructor takes the element count as an int in
 * hiredis 0.14 and as a size_t from 1.0 on (as in src/conn/conn.c). */
#if HIREDIS_MAJOR >= 1
typedef size_t fuzz_elements_t;
#else
typedef int fuzz_elements_t;
#endif

static redisReplyObjectFunctions capped_fn;
static void *(*default_create_array)(const redisReadTask *, fuzz_elements_t);

static void *capped_create_array(const redisReadTask *task, fuzz_elements_t elements) {
  if ((size_t)elements > FUZZ_MAX_ELEMENTS)
    return NULL; /* the reader then fails with "Out of memory" */
  return default_create_array(task, elements);
}

void *fuzz_reader_create(void) {
  redisReader *reader = redisReaderCreate();
  FUZZ_CHECK(reader != NULL);
  if (default_create_array == NULL) {
    capped_fn = *reader->fn;
    default_create_array = capped_fn.createArray;
    capped_fn.createArray = capped_create_array;
  }
  reader->fn = &capped_fn;
  return reader;
}

char *fuzz_copy(const uint8_t *data, size_t size) {
  char *copy = malloc(size > 0 ? size : 1);
  FUZZ_CHECK(copy != NULL);
  if (size > 0)
    memcpy(copy, data, size);
  return copy;
}
