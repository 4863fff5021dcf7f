/* test_quorum.c: unit tests for src/util/quorum.c, Redlock's pure arithmetic.
 *  - quorum_size for N = 1..7;
 *  - quorum_decide: hand-picked cases (early win, early loss classified HELD
 *    vs NOQUORUM, the still-PENDING classification case, N = 1, N = 2) and an
 *    exhaustive check against a brute-force oracle that enumerates how the
 *    pending masters could still answer;
 *  - quorum_drift_ns / quorum_validity_ns (drift 102 ms for 10 s at 0.01,
 *    elapsed time, negative validity, huge elapsed without overflow);
 *  - quorum_retry_delay_ms bounds, backoff_ms growth, cap and jitter. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "unit_support.h"

#include "util/backoff.h"
#include "util/quorum.h"

#define MS ((int64_t)1000000)

/* ---- quorum_size ------------------------------------------------------------ */

static void test_quorum_size(void **state) {
  (void)state;
  static const unsigned expected[] = {0, 1, 2, 2, 3, 3, 4, 4};
  for (unsigned n = 1; n <= 7; n++)
    assert_int_equal(quorum_size(n), expected[n]);
  /* A quorum is always a strict majority: two quorums always intersect. */
  for (unsigned n = 1; n <= 64; n++) {
    assert_true(2 * quorum_size(n) > n);
    assert_true(quorum_size(n) <= n);
  }
}

/* ---- quorum_decide: named cases --------------------------------------------- */

static void test_decide_nothing_yet(void **state) {
  (void)state;
  for (unsigned n = 1; n <= 7; n++)
    assert_int_equal(quorum_decide(n, 0, 0, 0), QUORUM_PENDING);
}

static void test_decide_early_win(void **state) {
  (void)state;
  /* N=5, Q=3: three yes win at once, the other two still pending. */
  assert_int_equal(quorum_decide(5, 3, 0, 0), QUORUM_WON);
  assert_int_equal(quorum_decide(5, 3, 1, 0), QUORUM_WON);
  assert_int_equal(quorum_decide(5, 3, 0, 2), QUORUM_WON);
  assert_int_equal(quorum_decide(5, 2, 0, 0), QUORUM_PENDING);
  assert_int_equal(quorum_decide(5, 2, 1, 1), QUORUM_PENDING);
  /* N=3, Q=2. */
  assert_int_equal(quorum_decide(3, 2, 0, 0), QUORUM_WON);
  assert_int_equal(quorum_decide(3, 1, 0, 0), QUORUM_PENDING);
  /* N=7, Q=4. */
  assert_int_equal(quorum_decide(7, 4, 0, 0), QUORUM_WON);
  assert_int_equal(quorum_decide(7, 3, 3, 0), QUORUM_PENDING);
  assert_int_equal(quorum_decide(7, 4, 3, 0), QUORUM_WON);
}

static void test_decide_early_loss_held(void **state) {
  (void)state;
  /* N=5: three "no" answers: a quorum answered and no quorum of yes is left. */
  assert_int_equal(quorum_decide(5, 0, 3, 0), QUORUM_LOST_HELD);
  /* yes=2,no=2 with one pending: could still win?  No: 2+1 = 3 = Q → pending. */
  assert_int_equal(quorum_decide(5, 2, 2, 0), QUORUM_PENDING);
  /* yes=1,no=2,failed=1, one pending: 1+1 < 3 lost; answered 3 >= Q: HELD. */
  assert_int_equal(quorum_decide(5, 1, 2, 1), QUORUM_LOST_HELD);
  /* N=3: two "no" → held, before the third answers. */
  assert_int_equal(quorum_decide(3, 0, 2, 0), QUORUM_LOST_HELD);
  assert_int_equal(quorum_decide(3, 1, 1, 0), QUORUM_PENDING);
  assert_int_equal(quorum_decide(3, 1, 1, 1), QUORUM_LOST_HELD);
}

static void test_decide_early_loss_noquorum(void **state) {
  (void)state;
  /* N=5: three failed: no quorum can answer any more. */
  assert_int_equal(quorum_decide(5, 0, 0, 3), QUORUM_LOST_NOQUORUM);
  /* N=3: two failed. */
  assert_int_equal(quorum_decide(3, 0, 0, 2), QUORUM_LOST_NOQUORUM);
  assert_int_equal(quorum_decide(3, 1, 0, 2), QUORUM_LOST_NOQUORUM);
  /* N=5: 1 no + 3 failed, one pending: answered+pending = 2 < 3. */
  assert_int_equal(quorum_decide(5, 0, 1, 3), QUORUM_LOST_NOQUORUM);
  /* All answered, too few: yes=2,failed=3 → only 2 answered. */
  assert_int_equal(quorum_decide(5, 2, 0, 3), QUORUM_LOST_NOQUORUM);
}

static void test_decide_pending_classification(void **state) {
  (void)state;
  /* N=5, Q=3, yes=0,no=1,failed=2: the round is lost (0 + 2 pending < 3),
   * but whether it is HELD or NOQUORUM depends on the two pending masters. */
  assert_int_equal(quorum_decide(5, 0, 1, 2), QUORUM_PENDING);
  /* ... and both outcomes are still reachable: */
  assert_int_equal(quorum_decide(5, 0, 3, 2), QUORUM_LOST_HELD);
  assert_int_equal(quorum_decide(5, 0, 1, 4), QUORUM_LOST_NOQUORUM);
  assert_int_equal(quorum_decide(5, 1, 2, 2), QUORUM_LOST_HELD);
  /* N=3: yes=0,no=1,failed=1, one pending. */
  assert_int_equal(quorum_decide(3, 0, 1, 1), QUORUM_PENDING);
  assert_int_equal(quorum_decide(3, 0, 2, 1), QUORUM_LOST_HELD);
  assert_int_equal(quorum_decide(3, 0, 1, 2), QUORUM_LOST_NOQUORUM);
}

static void test_decide_single_node(void **state) {
  (void)state;
  assert_int_equal(quorum_decide(1, 0, 0, 0), QUORUM_PENDING);
  assert_int_equal(quorum_decide(1, 1, 0, 0), QUORUM_WON);
  assert_int_equal(quorum_decide(1, 0, 1, 0), QUORUM_LOST_HELD);
  assert_int_equal(quorum_decide(1, 0, 0, 1), QUORUM_LOST_NOQUORUM);
}

static void test_decide_two_nodes(void **state) {
  (void)state;
  /* N=2 needs both (Q=2): one "no" or one failure loses at once. */
  assert_int_equal(quorum_size(2), 2);
  assert_int_equal(quorum_decide(2, 1, 0, 0), QUORUM_PENDING);
  assert_int_equal(quorum_decide(2, 2, 0, 0), QUORUM_WON);
  assert_int_equal(quorum_decide(2, 1, 1, 0), QUORUM_LOST_HELD);
  assert_int_equal(quorum_decide(2, 1, 0, 1), QUORUM_LOST_NOQUORUM);
  assert_int_equal(quorum_decide(2, 0, 0, 1), QUORUM_LOST_NOQUORUM);
  assert_int_equal(quorum_decide(2, 0, 2, 0), QUORUM_LOST_HELD);
  /* one no, one pending: lost; HELD if the other answers, else NOQUORUM. */
  assert_int_equal(quorum_decide(2, 0, 1, 0), QUORUM_PENDING);
}

/* ---- quorum_decide: exhaustive check against an oracle -----------------------
 * The final outcome once every master has reported, and then the set of final
 * outcomes reachable from a partial count: decide must say PENDING exactly
 * when more than one is reachable, and otherwise name the only one. */

static quorum_outcome_t final_outcome(unsigned n, unsigned yes, unsigned no) {
  unsigned q = n / 2 + 1;
  if (yes >= q)
    return QUORUM_WON;
  if (yes + no >= q)
    return QUORUM_LOST_HELD;
  return QUORUM_LOST_NOQUORUM;
}

static void test_decide_exhaustive(void **state) {
  (void)state;
  for (unsigned n = 1; n <= 9; n++) {
    for (unsigned yes = 0; yes <= n; yes++) {
      for (unsigned no = 0; yes + no <= n; no++) {
        for (unsigned failed = 0; yes + no + failed <= n; failed++) {
          unsigned pending = n - yes - no - failed;
          unsigned reachable = 0; /* bit set of outcomes */
          /* The pending masters split into more yes, more no, more failed. */
          for (unsigned y = 0; y <= pending; y++)
            for (unsigned k = 0; y + k <= pending; k++)
              reachable |= 1u << final_outcome(n, yes + y, no + k);
          quorum_outcome_t got = quorum_decide(n, yes, no, failed);
          int single = (reachable & (reachable - 1)) == 0;
          if (single) {
            if (got != QUORUM_PENDING && (1u << got) == reachable)
              continue;
          } else if (got == QUORUM_PENDING) {
            continue;
          }
          fail_msg("quorum_decide(n=%u, yes=%u, no=%u, failed=%u) = %d, reachable set 0x%x", n, yes,
                   no, failed, (int)got, reachable);
        }
      }
    }
  }
}

/* ---- drift and validity -------------------------------------------------------- */

static void test_drift(void **state) {
  (void)state;
  assert_int_equal(quorum_drift_ns(10000, 0.01), 102 * MS);
  assert_int_equal(quorum_drift_ns(10000, 0.0), 2 * MS);
  assert_int_equal(quorum_drift_ns(0, 0.01), 2 * MS);
  assert_int_equal(quorum_drift_ns(1000, 0.1), 102 * MS);
  /* 1 ms at 1 %: 10 us + 2 ms. */
  assert_int_equal(quorum_drift_ns(1, 0.01), 2 * MS + 10000);
  /* Largest inputs stay positive and in range. */
  int64_t big = quorum_drift_ns(UINT32_MAX, 0.49);
  assert_true(big > (int64_t)(UINT32_MAX * 0.48) * MS);
}

static void test_validity(void **state) {
  (void)state;
  /* No time spent: ttl - drift. */
  assert_int_equal(quorum_validity_ns(10000, 0, 0.01), (10000 - 102) * MS);
  /* 50 ms spent. */
  assert_int_equal(quorum_validity_ns(10000, (uint64_t)(50 * MS), 0.01), (10000 - 102 - 50) * MS);
  /* Sub-millisecond precision is kept. */
  assert_int_equal(quorum_validity_ns(10000, 1234567, 0.01), (10000 - 102) * MS - 1234567);
  /* Exactly used up. */
  assert_int_equal(quorum_validity_ns(10000, (uint64_t)(9898 * MS), 0.01), 0);
}

static void test_validity_negative(void **state) {
  (void)state;
  /* The round took longer than the ttl. */
  assert_int_equal(quorum_validity_ns(100, (uint64_t)(200 * MS), 0.01), (100 - 200 - 3) * MS);
  assert_true(quorum_validity_ns(100, (uint64_t)(200 * MS), 0.01) < 0);
  /* Tiny ttl: the 2 ms drift alone eats it. */
  assert_true(quorum_validity_ns(1, 0, 0.0) < 0);
  assert_true(quorum_validity_ns(2, 0, 0.0) == 0);
}

static void test_validity_huge_elapsed(void **state) {
  (void)state;
  /* Must not overflow (UBSan would abort on signed overflow) and must stay
   * negative however large elapsed is. */
  static const uint64_t elapsed[] = {(uint64_t)INT64_MAX / 2, (uint64_t)INT64_MAX,
                                     (uint64_t)INT64_MAX + 1, UINT64_MAX};
  for (size_t i = 0; i < sizeof elapsed / sizeof elapsed[0]; i++) {
    int64_t v = quorum_validity_ns(UINT32_MAX, elapsed[i], 0.49);
    assert_true(v < 0);
    int64_t v2 = quorum_validity_ns(1, elapsed[i], 0.0);
    assert_true(v2 < 0);
  }
  /* Monotone in elapsed. */
  assert_true(quorum_validity_ns(10000, UINT64_MAX, 0.01) <=
              quorum_validity_ns(10000, (uint64_t)(20000 * MS), 0.01));
}

/* ---- retry delay ----------------------------------------------------------------- */

static void test_retry_delay_bounds(void **state) {
  (void)state;
  static const uint32_t randoms[] = {0, 1, 2, 199, 200, 201, 12345, 0x7fffffffu, UINT32_MAX};
  for (size_t i = 0; i < sizeof randoms / sizeof randoms[0]; i++) {
    uint64_t d = quorum_retry_delay_ms(200, 200, randoms[i]);
    assert_in_range(d, 200, 400);
    assert_int_equal(d, 200 + randoms[i] % 201);
  }
  /* Both ends are reachable. */
  assert_int_equal(quorum_retry_delay_ms(200, 200, 0), 200);
  assert_int_equal(quorum_retry_delay_ms(200, 200, 200), 400);
  assert_int_equal(quorum_retry_delay_ms(200, 200, 201), 200);
  /* Jitter 0: always exactly delay. */
  for (size_t i = 0; i < sizeof randoms / sizeof randoms[0]; i++) {
    assert_int_equal(quorum_retry_delay_ms(200, 0, randoms[i]), 200);
    assert_int_equal(quorum_retry_delay_ms(0, 0, randoms[i]), 0);
  }
  /* Largest values do not wrap around 32 bits. */
  assert_int_equal(quorum_retry_delay_ms(UINT32_MAX, UINT32_MAX, UINT32_MAX),
                   (uint64_t)UINT32_MAX * 2);
  assert_int_equal(quorum_retry_delay_ms(UINT32_MAX, 1, 1), (uint64_t)UINT32_MAX + 1);
}

/* ---- reconnect backoff ------------------------------------------------------------- */

static void test_backoff_growth(void **state) {
  (void)state;
  /* base 25, cap 1000: 25, 50, 100, 200, 400, 800, 1000, 1000, ...  With
   * random32 = d/2 the result is the top of the range, d. */
  static const uint64_t full[] = {25, 50, 100, 200, 400, 800, 1000, 1000, 1000};
  for (unsigned f = 0; f < sizeof full / sizeof full[0]; f++) {
    uint64_t d = full[f];
    assert_int_equal(backoff_ms(f, 25, 1000, (uint32_t)(d / 2)), d);
    /* random32 = 0: the bottom of the range, d - d/2. */
    assert_int_equal(backoff_ms(f, 25, 1000, 0), d - d / 2);
  }
  /* Strictly grows until the cap (top of range). */
  uint64_t prev = 0;
  for (unsigned f = 0; f < 6; f++) {
    uint64_t top = backoff_ms(f, 25, 1000, (uint32_t)(full[f] / 2));
    assert_true(top == 2 * prev || f == 0);
    prev = top;
  }
}

static void test_backoff_cap(void **state) {
  (void)state;
  static const unsigned failures[] = {6, 10, 31, 32, 63, 64, 100, 1000, UINT_MAX};
  for (size_t i = 0; i < sizeof failures / sizeof failures[0]; i++) {
    for (uint32_t r = 0; r < 2000; r += 7) {
      uint64_t d = backoff_ms(failures[i], 25, 1000, r);
      assert_in_range(d, 500, 1000);
    }
    assert_int_equal(backoff_ms(failures[i], 25, 1000, UINT32_MAX),
                     500 + (uint64_t)UINT32_MAX % 501);
  }
  /* base above the cap: the cap. */
  assert_in_range(backoff_ms(0, 5000, 1000, 12345), 500, 1000);
  /* Large base and cap do not overflow. */
  assert_in_range(backoff_ms(100, 0x80000000u, UINT32_MAX, 7), UINT32_MAX / 2, UINT32_MAX);
}

static void test_backoff_jitter_range(void **state) {
  (void)state;
  /* Equal jitter: within [d - d/2, d] for every random value, and both ends
   * are hit by some random value. */
  for (unsigned f = 0; f < 8; f++) {
    uint64_t d = (uint64_t)25 << f;
    if (d > 1000)
      d = 1000;
    int saw_low = 0, saw_high = 0;
    for (uint32_t r = 0; r < 5000; r++) {
      uint64_t got = backoff_ms(f, 25, 1000, r * 2654435761u);
      assert_in_range(got, d - d / 2, d);
      saw_low |= got == d - d / 2;
      saw_high |= got == d;
    }
    assert_true(saw_low);
    assert_true(saw_high);
  }
  /* Degenerate: base 1 (half 0) gives exactly 1; cap 0 gives 0. */
  assert_int_equal(backoff_ms(0, 1, 1000, UINT32_MAX), 1);
  assert_int_equal(backoff_ms(5, 25, 0, UINT32_MAX), 0);
}

/* Watch renewal: a tick of ttl/30 capped at 100 ms, a spread of ttl/10 capped
 * at 2 s. */
static void test_watch_tick_and_spread(void **state) {
  (void)state;
  assert_int_equal(quorum_watch_tick_ms(30000), QUORUM_WATCH_TICK_MAX_MS);
  assert_int_equal(quorum_watch_tick_ms(900), 30);
  assert_int_equal(quorum_watch_tick_ms(10), 1); /* never 0 */
  assert_int_equal(quorum_watch_spread_ms(30000), QUORUM_WATCH_SPREAD_MAX_MS);
  assert_int_equal(quorum_watch_spread_ms(900), 90);
  assert_int_equal(quorum_watch_spread_ms(5), 0);
}

/* Never later than a third of the ttl left, never earlier than that less the
 * spread and a tick, and always on a tick of loop time. */
static void test_watch_delay_bounds(void **state) {
  (void)state;
  static const uint32_t ttls[] = {30, 300, 900, 3000, 30000, 600000};
  for (size_t i = 0; i < sizeof ttls / sizeof ttls[0]; i++) {
    uint32_t ttl = ttls[i], tick = quorum_watch_tick_ms(ttl), spread = quorum_watch_spread_ms(ttl);
    for (uint64_t now = 0; now < 3 * (uint64_t)tick + 7; now += 1 + tick / 3) {
      for (uint32_t early = 0; early <= spread + 3; early += 1 + spread / 4) {
        int64_t validity = ttl; /* just acquired or extended */
        uint64_t d = quorum_watch_delay_ms(validity, ttl, now, early);
        int64_t nominal = validity - ttl / 3; /* a third of the ttl left */
        assert_true(d >= 1);
        assert_true((int64_t)d <= nominal);
        assert_true((int64_t)d > nominal - (int64_t)spread - (int64_t)tick || d == 1);
        assert_true((now + d) % tick == 0 || d == 1);
      }
    }
  }
}

/* Locks taken within one tick of each other renew together: each is
 * scheduled when taken (validity = ttl), at loop times 1000 .. 1099, and
 * all expire at the tick 21 000, not at 100 different times. */
static void test_watch_delay_batches(void **state) {
  (void)state;
  uint32_t ttl = 30000; /* tick 100 ms; a third left after 20 000 ms */
  for (uint64_t taken = 1000; taken < 1100; taken += 3)
    assert_int_equal(taken + quorum_watch_delay_ms(ttl, ttl, taken, 0), 21000);
  /* One tick later: the next batch. */
  assert_int_equal(1100 + quorum_watch_delay_ms(ttl, ttl, 1100, 0), 21100);
}

/* A third of the ttl already gone: 0, the caller's retry schedule. */
static void test_watch_delay_past(void **state) {
  (void)state;
  assert_int_equal(quorum_watch_delay_ms(10000, 30000, 5, 0), 0);
  assert_int_equal(quorum_watch_delay_ms(0, 30000, 5, 0), 0);
  assert_int_equal(quorum_watch_delay_ms(-5, 30000, 5, 0), 0);
  /* Just after the third is left... but the spread pulls it to now: 1 ms. */
  assert_int_equal(quorum_watch_delay_ms(10001, 30000, 1234, 2000), 1);
}

UNIT_MAIN(cmocka_unit_test(test_quorum_size), cmocka_unit_test(test_decide_nothing_yet),
          cmocka_unit_test(test_decide_early_win), cmocka_unit_test(test_decide_early_loss_held),
          cmocka_unit_test(test_decide_early_loss_noquorum),
          cmocka_unit_test(test_decide_pending_classification),
          cmocka_unit_test(test_decide_single_node), cmocka_unit_test(test_decide_two_nodes),
          cmocka_unit_test(test_decide_exhaustive), cmocka_unit_test(test_drift),
          cmocka_unit_test(test_validity), cmocka_unit_test(test_validity_negative),
          cmocka_unit_test(test_validity_huge_elapsed), cmocka_unit_test(test_retry_delay_bounds),
          cmocka_unit_test(test_backoff_growth), cmocka_unit_test(test_backoff_cap),
          cmocka_unit_test(test_backoff_jitter_range), cmocka_unit_test(test_watch_tick_and_spread),
          cmocka_unit_test(test_watch_delay_bounds), cmocka_unit_test(test_watch_delay_batches),
          cmocka_unit_test(test_watch_delay_past))
