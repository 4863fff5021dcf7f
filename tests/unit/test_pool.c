/* test_pool.c: unit tests for the free lists, src/util/pool.c: blocks by
 * size class and a client's memory for calls (the reply objects: test_replypool).
 *  - pool: a freed block is handed out again (LIFO) for any size of its
 *    class, aligned as malloc's; classes do not mix; each class keeps at
 *    most POOL_KEEP_MAX blocks and POOL_CLASS_BUDGET bytes; a block larger
 *    than the largest class and a NULL pool go straight to malloc / free;
 *    pool_clear gives everything back;
 *  - callmem: ops and key blocks as the pool, zeroed by callmem_calloc;
 *    handles are zeroed when reused and come back FIFO, never before
 *    CALLMEM_HANDLES_HELD more handles were freed after them (what keeps a
 *    stale handle refused), and a lock + unlock loop settles on a fixed set
 *    of addresses (no allocation in steady state). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/handle.h"
#include "util/pool.h"

static size_t kept(const pool_t *pool) {
  size_t n = 0;
  for (int i = 0; i < POOL_CLASSES; i++)
    n += pool->count[i];
  return n;
}

static void test_lifo_reuse(void **state) {
  (void)state;
  pool_t pool;
  pool_init(&pool);
  char *a = pool_alloc(&pool, 100);
  char *b = pool_alloc(&pool, 100);
  assert_non_null(a);
  assert_non_null(b);
  assert_int_equal((uintptr_t)a % _Alignof(max_align_t), 0);
  memset(a, 0xab, 100);
  pool_free(&pool, a);
  pool_free(&pool, b);
  assert_int_equal(kept(&pool), 2);
  /* The last freed first, for any size of the class (100 and 90 bytes share one). */
  assert_ptr_equal(pool_alloc(&pool, 90), b);
  assert_ptr_equal(pool_alloc(&pool, 100), a);
  assert_int_equal(kept(&pool), 0);
  /* Another class is not served from this one. */
  pool_free(&pool, a);
  char *big = pool_alloc(&pool, 1000);
  assert_ptr_not_equal(big, a);
  assert_int_equal(kept(&pool), 1);
  pool_free(&pool, big);
  pool_free(&pool, b);
  pool_clear(&pool);
  assert_int_equal(kept(&pool), 0);
  pool_clear(&pool); /* empty: nothing to do */
}

/* n blocks of size bytes, all freed: how many the pool kept. */
static unsigned keeps_of(size_t size, unsigned n) {
  pool_t pool;
  pool_init(&pool);
  void **blocks = calloc(n, sizeof *blocks);
  assert_non_null(blocks);
  for (unsigned i = 0; i < n; i++)
    assert_non_null(blocks[i] = pool_alloc(&pool, size));
  for (unsigned i = 0; i < n; i++)
    pool_free(&pool, blocks[i]);
  unsigned k = (unsigned)kept(&pool);
  pool_clear(&pool);
  free(blocks);
  return k;
}

static void test_bounds(void **state) {
  (void)state;
  /* Small blocks: POOL_KEEP_MAX of them. */
  assert_int_equal(keeps_of(100, POOL_KEEP_MAX + 50), POOL_KEEP_MAX);
  assert_int_equal(keeps_of(100, 10), 10);
  /* The largest class (8 KiB with its header): the byte budget decides. */
  assert_int_equal(keeps_of(8000, 200), POOL_CLASS_BUDGET / 8192);
  /* Larger than any class: never kept. */
  assert_int_equal(keeps_of(9000, 5), 0);
  assert_int_equal(keeps_of(1000000, 2), 0);
}

static void test_no_pool(void **state) {
  (void)state;
  /* NULL: plain malloc with the header, so pool_free of any pool takes it. */
  char *p = pool_alloc(NULL, 64);
  assert_non_null(p);
  memset(p, 1, 64);
  pool_free(NULL, p);
  pool_t pool;
  pool_init(&pool);
  p = pool_alloc(NULL, 64);
  pool_free(&pool, p); /* kept by the pool that frees it */
  assert_int_equal(kept(&pool), 1);
  assert_ptr_equal(pool_alloc(&pool, 64), p);
  pool_free(&pool, p);
  pool_free(&pool, NULL);
  pool_clear(&pool);
}

static void test_callmem_blocks(void **state) {
  (void)state;
  callmem_t mem;
  assert_int_equal(callmem_init(&mem, 200), 0);
  unsigned char *op = callmem_alloc(&mem, 300);
  assert_non_null(op);
  memset(op, 0xff, 300);
  callmem_release(&mem, op);
  unsigned char *again = callmem_calloc(&mem, 300);
  assert_ptr_equal(again, op);
  for (int i = 0; i < 300; i++)
    assert_int_equal(again[i], 0);
  callmem_release(&mem, again);
  callmem_release(&mem, NULL);
  callmem_free(&mem);
}

#define CYCLES 2000

static void test_callmem_handles(void **state) {
  (void)state;
  enum { SIZE = 352 };
  callmem_t mem;
  assert_int_equal(callmem_init(&mem, SIZE), 0);
  /* One handle at a time, as a lock + unlock loop makes them. */
  static void *seen[CYCLES];
  for (int c = 0; c < CYCLES; c++) {
    uint32_t n = UINT32_MAX;
    unsigned char *h = callmem_handle_new(&mem, &n);
    assert_non_null(h);
    assert_int_equal(n, (uint32_t)c); /* numbered in order (handle.h) */
    for (int i = 0; i < SIZE; i++)
      assert_int_equal(h[i], 0);
    memset(h, 0x5a, SIZE);
    seen[c] = h;
    /* Not reused before CALLMEM_HANDLES_HELD others were freed after it. */
    for (int back = 1; back <= CALLMEM_HANDLES_HELD && back <= c; back++)
      assert_ptr_not_equal(seen[c - back], h);
    callmem_handle_free(&mem, h);
  }
  /* Steady state: the same CALLMEM_HANDLES_HELD + 1 addresses go round. */
  for (int c = CYCLES - 100; c < CYCLES; c++)
    assert_ptr_equal(seen[c], seen[c - (CALLMEM_HANDLES_HELD + 1)]);
  /* Many out at once: the ring keeps CALLMEM_HANDLES_MAX, frees the rest. */
  static void *out[CALLMEM_HANDLES_MAX + 20];
  for (int i = 0; i < CALLMEM_HANDLES_MAX + 20; i++)
    assert_non_null(out[i] = callmem_handle_new(&mem, &(uint32_t){0}));
  for (int i = 0; i < CALLMEM_HANDLES_MAX + 20; i++)
    callmem_handle_free(&mem, out[i]);
  assert_int_equal(mem.count, CALLMEM_HANDLES_MAX);
  callmem_handle_free(&mem, NULL);
  callmem_free(&mem);
}

/* Handle values (handle.h): a value decodes to its handle; the values of
 * one address differ for HANDLE_TAGS numbers in a row, and repeat after
 * exactly that many; a real address decodes to itself. */
static void test_handle_values(void **state) {
  (void)state;
  void *p = malloc(64);
  assert_non_null(p);
  assert_ptr_equal(handle_decode(p), p); /* an address passes through */
  void *first = handle_encode(p, 0);
#if HANDLE_TAG_BITS > 0
  assert_ptr_not_equal(first, p);
  assert_true(((uintptr_t)first & 1) == 1);
#endif
  for (uint32_t n = 0; n < HANDLE_TAGS + 3; n++) {
    void *v = handle_encode(p, n);
    assert_ptr_equal(handle_decode(v), p);
    if (n > 0 && n < HANDLE_TAGS)
      assert_ptr_not_equal(v, first);
  }
  assert_ptr_equal(handle_encode(p, HANDLE_TAGS), first);
  /* Values of nearby addresses never collide with each other's numbers. */
  unsigned char *q = (unsigned char *)p + 16;
  for (uint32_t n = 0; n < 64; n++)
    for (uint32_t m = 0; m < 64; m++)
      assert_ptr_not_equal(handle_encode(p, n), handle_encode(q, m));
  free(p);
}

/* A serial lock + unlock loop: the handle a client makes after k other
 * cycles never has the value of the first one, for every k below
 * HANDLE_TAGS, even though its address comes back every
 * CALLMEM_HANDLES_HELD + 1 cycles. */
static void test_handle_values_reused_address(void **state) {
  (void)state;
  callmem_t mem;
  assert_int_equal(callmem_init(&mem, 128), 0);
  uint32_t n0;
  void *h0 = callmem_handle_new(&mem, &n0);
  assert_non_null(h0);
  void *v0 = handle_encode(h0, n0);
  callmem_handle_free(&mem, h0);
  unsigned same_address = 0;
  for (uint32_t k = 1; k < HANDLE_TAGS; k++) {
    uint32_t n;
    void *h = callmem_handle_new(&mem, &n);
    assert_non_null(h);
    same_address += h == h0;
    if (handle_encode(h, n) == v0)
      fail_msg("handle %u has the value of handle 0", (unsigned)k);
    callmem_handle_free(&mem, h);
  }
#if HANDLE_TAG_BITS > 0
  assert_true(same_address > 1000); /* the address did come back */
#else
  (void)same_address; /* no number in a value: the hold-back is all there is */
#endif
  callmem_free(&mem);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lifo_reuse),
      cmocka_unit_test(test_bounds),
      cmocka_unit_test(test_no_pool),
      cmocka_unit_test(test_callmem_blocks),
      cmocka_unit_test(test_callmem_handles),
      cmocka_unit_test(test_handle_values),
      cmocka_unit_test(test_handle_values_reused_address),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
