/* fuzz_common.c: helpers shared by the fuzz targets (see fuzz_targets.h). */
#include <hiredis/hiredis.h>

#include "fuzz_targets.h"

static redisReplyObjectFunctions capped_fn;
static void *(*default_create_array)(const redisReadTask *, int);

static void *capped_create_array(const redisReadTask *task, int elements) {
  if (elements > FUZZ_MAX_ELEMENTS)
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
