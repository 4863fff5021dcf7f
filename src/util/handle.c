/* handle.c: handle values (see handle.h). */
#include "util/handle.h"

#define TAGGED ((uintptr_t)1)

#if HANDLE_TAG_BITS > 0
#define LOW_BITS 3
#define LOW_MASK ((uintptr_t)0xE)             /* bits 1..3 */
#define ADDR_MASK ((uintptr_t)0xFFFFFFFFFFF0) /* bits 4..47 */
#define HIGH_SHIFT 48

void *handle_encode(void *p, uint32_t n) {
  uintptr_t a = (uintptr_t)p;
  if ((a & ~ADDR_MASK) != 0)
    return p; /* an address that uses the tag's bits: not tagged */
  n &= HANDLE_TAGS - 1;
  uintptr_t low = ((uintptr_t)n << 1) & LOW_MASK;
  uintptr_t high = (uintptr_t)(n >> LOW_BITS) << HIGH_SHIFT;
  return (void *)(a | high | low | TAGGED);
}

void *handle_decode(const void *value) {
  uintptr_t v = (uintptr_t)value;
  return (void *)((v & TAGGED) != 0 ? v & ADDR_MASK : v);
}
#else
void *handle_encode(void *p, uint32_t n) {
  (void)n;
  return p;
}

void *handle_decode(const void *value) { return (void *)(uintptr_t)value; }
#endif
