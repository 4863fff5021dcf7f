/* api_stale_handle.c: a handle passed again after its unlock (a double
 * unlock on an error path) is refused with REDLOCK_EINVAL and touches no
 * other lock, however many handles were made in between, up to the bound
 * redlock.h states (HANDLE_TAGS, 2^19 on 64-bit platforms).
 *
 * The schedule, for k = 1, 16, 17, 1000 and 100 000: lock and unlock `a`
 * (handle h0); k lock + unlock cycles on other resources; 40 victim locks
 * taken and held (the handle ring hands h0's memory to one of them); then
 * unlock, extend, watch, extend_async and unlock_async on h0 all return
 * EINVAL; every victim's key is still on every master with its value, and
 * each victim still reports validity and is not lost; the victims unlock
 * OK.  With the handle's address as its value, the 17th cycle's first
 * victim got h0's address and the stale unlock released it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#define VICTIMS 40
#define TTL_MS 30000u

static void never_cb(int status, void *arg) {
  (void)status;
  (void)arg;
  fail_msg("a call that returned an error ran its callback");
}

static void never_lost_cb(redlock_lock_t *lock, int reason, void *arg) {
  (void)lock;
  (void)reason;
  (void)arg;
}

/* A client that rides out a loaded machine: 100 000 cycles must not meet
 * one request that took longer than the library's default 100 ms. */
static redlock_t *patient_client(int reentrant) {
  redlock_options_t *o = fx_options(fx_group, 0, fx_group->n, FX_NO_LOG);
  assert_int_equal(redlock_options_set_timeouts(o, 2000, 2000), REDLOCK_OK);
  assert_int_equal(redlock_options_set_retry(o, 10, 20, 20), REDLOCK_OK);
  assert_int_equal(redlock_options_set_reentrant(o, reentrant), REDLOCK_OK);
  return fx_open_free(fx_group, o);
}

/* The cycles in between.  Up to SEQUENTIAL_MAX one after the other (the
 * pool's hold-back of freed handles is what 1, 16 and 17 reach); beyond it
 * in waves of WAVE locks on as many names, taken and released with the
 * async calls: the same count of handles made and freed, in far fewer
 * round trips (100 000 blocking cycles keep a core busy for 30 s, 75 s
 * under ASan). */
#define SEQUENTIAL_MAX 1000u
#define WAVE 32u

typedef struct {
  fx_event_t *ev;
  redlock_lock_t *lock;
  atomic_int status;
} wave_slot_t;

static void wave_locked_cb(int status, redlock_lock_t *lock, void *arg) {
  wave_slot_t *slot = arg;
  slot->lock = lock;
  atomic_store(&slot->status, status);
  fx_event_post(slot->ev);
}

static void wave_unlocked_cb(int status, void *arg) {
  wave_slot_t *slot = arg;
  atomic_store(&slot->status, status);
  fx_event_post(slot->ev);
}

/* Waits for n posts of ev; each slot's status must be OK. */
static void wave_wait(fx_event_t *ev, wave_slot_t *slots, unsigned n) {
  for (unsigned i = 0; i < n; i++)
    assert_true(fx_event_wait(ev, 10000));
  for (unsigned i = 0; i < n; i++)
    assert_int_equal(atomic_load(&slots[i].status), REDLOCK_OK);
}

static void make_handles(redlock_t *c, unsigned cycles) {
  FX_NAME(other, "stale:cycle");
  unsigned k = 0;
  for (; k < cycles && k < SEQUENTIAL_MAX; k++) {
    redlock_lock_t *l = NULL;
    assert_int_equal(redlock_lock(c, other, TTL_MS, &l), REDLOCK_OK);
    assert_int_equal(redlock_unlock(c, l), REDLOCK_OK);
  }
  char names[WAVE][160];
  for (unsigned i = 0; i < WAVE; i++)
    snprintf(names[i], sizeof names[i], "%s:%u", other, i);
  fx_event_t ev;
  fx_event_init(&ev);
  wave_slot_t slots[WAVE];
  while (k < cycles) {
    unsigned n = cycles - k < WAVE ? cycles - k : WAVE;
    for (unsigned i = 0; i < n; i++) {
      slots[i].ev = &ev;
      slots[i].lock = NULL;
      atomic_store(&slots[i].status, -1);
      assert_int_equal(redlock_lock_async(c, names[i], TTL_MS, 0, wave_locked_cb, &slots[i]),
                       REDLOCK_OK);
    }
    wave_wait(&ev, slots, n);
    for (unsigned i = 0; i < n; i++) {
      atomic_store(&slots[i].status, -1);
      assert_int_equal(redlock_unlock_async(c, slots[i].lock, wave_unlocked_cb, &slots[i]),
                       REDLOCK_OK);
    }
    wave_wait(&ev, slots, n);
    k += n;
  }
  fx_event_destroy(&ev);
}

static void stale_after(unsigned cycles) {
  redlock_t *c = patient_client(0);
  FX_NAME(first, "stale:first");
  redlock_lock_t *h0 = NULL;
  assert_int_equal(redlock_lock(c, first, TTL_MS, &h0), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, h0), REDLOCK_OK);

  make_handles(c, cycles);

  redlock_lock_t *victims[VICTIMS];
  char names[VICTIMS][128], values[VICTIMS][64];
  for (int i = 0; i < VICTIMS; i++) {
    fx_name(names[i], sizeof names[i], "stale:victim");
    assert_int_equal(redlock_lock(c, names[i], TTL_MS, &victims[i]), REDLOCK_OK);
    fx_copy_value(values[i], sizeof values[i], victims[i]);
  }

  assert_int_equal(redlock_unlock(c, h0), REDLOCK_EINVAL);
  assert_int_equal(redlock_extend(c, h0, TTL_MS), REDLOCK_EINVAL);
  assert_int_equal(redlock_watch(c, h0, never_lost_cb, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_extend_async(c, h0, TTL_MS, never_cb, NULL), REDLOCK_EINVAL);
  assert_int_equal(redlock_unlock_async(c, h0, never_cb, NULL), REDLOCK_EINVAL);

  /* No victim was touched: each holds on every master, valid, not lost.  A
   * lock returns once a quorum decided it, so the last master's copy is
   * awaited (with a deadline) rather than read once. */
  for (int i = 0; i < VICTIMS; i++) {
    assert_true(redlock_lock_validity_ms(victims[i]) > 0);
    assert_false(redlock_lock_is_lost(victims[i]));
    assert_value_everywhere(fx_group, names[i], values[i]);
  }
  for (int i = 0; i < VICTIMS; i++)
    assert_int_equal(redlock_unlock(c, victims[i]), REDLOCK_OK);
  fx_close_client(fx_group, c);
}

static void test_stale_after_1(void **state) {
  (void)state;
  stale_after(1);
}
static void test_stale_after_16(void **state) {
  (void)state;
  stale_after(16);
}
static void test_stale_after_17(void **state) {
  (void)state;
  stale_after(17);
}
static void test_stale_after_1000(void **state) {
  (void)state;
  stale_after(1000);
}
static void test_stale_after_100000(void **state) {
  (void)state;
  stale_after(100000);
}

/* A stale hold (reentrancy) is refused the same way, and so is a handle of
 * another client. */
static void test_stale_hold_and_foreign(void **state) {
  (void)state;
  redlock_t *c = patient_client(1);
  redlock_t *other = patient_client(0);
  FX_NAME(res, "stale:hold");
  redlock_lock_t *lease = NULL, *hold = NULL, *foreign = NULL;
  assert_int_equal(redlock_lock(c, res, TTL_MS, &lease), REDLOCK_OK);
  assert_int_equal(redlock_lock(c, res, TTL_MS, &hold), REDLOCK_OK);
  assert_ptr_not_equal(hold, lease);
  assert_int_equal(redlock_unlock(c, hold), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, hold), REDLOCK_EINVAL);
  FX_NAME(res2, "stale:foreign");
  assert_int_equal(redlock_lock(other, res2, TTL_MS, &foreign), REDLOCK_OK);
  assert_int_equal(redlock_unlock(c, foreign), REDLOCK_EINVAL);
  assert_true(redlock_lock_validity_ms(lease) > 0);
  assert_int_equal(redlock_unlock(c, lease), REDLOCK_OK);
  assert_int_equal(redlock_unlock(other, foreign), REDLOCK_OK);
  fx_close_client(fx_group, other);
  fx_close_client(fx_group, c);
}

FX_GROUP_MAIN(600, fx_group_test(test_stale_after_1), fx_group_test(test_stale_after_16),
              fx_group_test(test_stale_after_17), fx_group_test(test_stale_after_1000),
              fx_group_test(test_stale_after_100000), fx_group_test(test_stale_hold_and_foreign))
