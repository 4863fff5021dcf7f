/* timebase.h: the library's time: the monotonic clock (clock_now_ns), and
 * the one clock and timer seam over it.  Every module that measures time
 * or waits for it (the engine's rounds, retries, watches and elections, a
 * master's connect deadline and backoff, the notifier's subscribers) is
 * handed a timebase_t by its owner and reads the clock and runs its timers
 * through it, never clock_now_ns() or uv_now() or uv_timer_* by itself.  The
 * library's timebase (timebase_uv_init) is the monotonic clock and libuv
 * timers; the unit tests plug in a stepped clock whose timers fire when the
 * test steps it, with no linker tricks.
 *
 * Thread rules: loop thread only, except tb_now_ns (any thread: the
 * library's clock is clock_now_ns). */
#ifndef REDLOCK_TIMEBASE_H
#define REDLOCK_TIMEBASE_H

#include <stdint.h>
#include <uv.h>

#include "util/list.h"

/* The monotonic clock every elapsed time and validity is measured on, in
 * nanoseconds on CLOCK_MONOTONIC (the same clock as uv_hrtime()).  Never the
 * wall clock: a clock step must not stretch a lock. */
uint64_t clock_now_ns(void);

typedef struct tb_timer tb_timer_t;
typedef void (*tb_timer_cb)(tb_timer_t *timer);
/* A closed timer's memory is its owner's again (it may free it). */
typedef void (*tb_closed_cb)(tb_timer_t *timer);

/* What a timebase implements.  `arg` is timebase_t.arg. */
typedef struct timebase_ops {
  uint64_t (*now_ns)(void *arg);
  /* The time timers count their delays from, in ms (libuv's: the loop's
   * time, updated once per turn): a delay computed against it fires on
   * that very millisecond, which lets timers of many locks share a tick. */
  uint64_t (*timer_now_ms)(void *arg);
  /* Makes timer usable: 0 or a libuv error. */
  int (*init)(void *arg, tb_timer_t *timer);
  /* (Re)starts timer to fire once, ms from now.  0 or a libuv error. */
  int (*start)(void *arg, tb_timer_t *timer, uint64_t ms);
  void (*stop)(void *arg, tb_timer_t *timer);
  /* Stops it for good; timer->closed_cb runs later, from the loop (never
   * from inside this call). */
  void (*close)(void *arg, tb_timer_t *timer);
} timebase_ops_t;

typedef struct timebase {
  const timebase_ops_t *ops;
  void *arg;
} timebase_t;

/* A timer, embedded or allocated by its owner.  `data` is the owner's; the
 * rest belongs to the timebase. */
struct tb_timer {
  void *data;
  const timebase_t *tb;
  tb_timer_cb cb;
  tb_closed_cb closed_cb;
  int active; /* started, not yet fired or stopped */
  /* the library's timebase */
  uv_timer_t uv;
  /* a stepped timebase's (tests): its due time and its place in its list */
  uint64_t due_ns;
  list_node_t link;
};

/* The library's timebase: clock_now_ns and libuv timers on `loop`. */
void timebase_uv_init(timebase_t *tb, uv_loop_t *loop);

static inline uint64_t tb_now_ns(const timebase_t *tb) { return tb->ops->now_ns(tb->arg); }
static inline uint64_t tb_timer_now_ms(const timebase_t *tb) {
  return tb->ops->timer_now_ms(tb->arg);
}

/* 0 or a libuv error (then the timer must not be used or closed). */
int tb_timer_init(const timebase_t *tb, tb_timer_t *timer, void *data);
/* Fires cb(timer) once, ms from now (a running timer is restarted).  0 or a
 * libuv error (the timer is then stopped). */
int tb_timer_start(tb_timer_t *timer, tb_timer_cb cb, uint64_t ms);
void tb_timer_stop(tb_timer_t *timer);
static inline int tb_timer_active(const tb_timer_t *timer) { return timer->active; }
/* Stops it for good; closed(timer) runs later from the loop, after which the
 * timer's memory may be freed.  closed may be NULL. */
void tb_timer_close(tb_timer_t *timer, tb_closed_cb closed);

/* For a timebase's implementation: the timer is due (clears `active` first,
 * so that cb may start it again). */
void tb_timer_fire(tb_timer_t *timer);

#endif
