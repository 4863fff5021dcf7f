/* fake_clock.c: the stepped clock and the timers it fires (see fake_clock.h). */
#include "fake_clock.h"

#include <stdio.h>
#include <stdlib.h>

#define MAX_TIMERS 256

typedef struct {
  tb_timer_t *tb;
  uint64_t due_ns;
  uint64_t seq; /* start order: libuv fires timers due together in that order */
} fake_timer_t;

static struct {
  uv_loop_t *loop;
  uint64_t now_ns;
  uint64_t seq;
  unsigned n;
  fake_timer_t timers[MAX_TIMERS];
  list_node_t closing; /* tb timers closed: their closed_cb runs at the next pump */
  timebase_t tb;
} clk;

void fake_clock_init(uv_loop_t *loop, uint64_t start_ns) {
  clk.loop = loop;
  clk.now_ns = start_ns;
  clk.seq = 0;
  clk.n = 0;
  list_init(&clk.closing);
}

uint64_t fake_now_ns(void) { return clk.now_ns; }

static int timer_index(const void *timer) {
  for (unsigned i = 0; i < clk.n; i++)
    if ((const void *)clk.timers[i].tb == timer)
      return (int)i;
  return -1;
}

static void timer_remove(const void *timer) {
  int i = timer_index(timer);
  if (i >= 0)
    clk.timers[i] = clk.timers[--clk.n];
}

static void timer_add(fake_timer_t t) {
  if (clk.n == MAX_TIMERS) {
    fprintf(stderr, "fake_clock: too many timers\n");
    abort();
  }
  clk.timers[clk.n++] = t;
}

/* ---- the fake timebase ---- */
static uint64_t fake_tb_now(void *arg) {
  (void)arg;
  return clk.now_ns;
}
static uint64_t fake_tb_timer_now_ms(void *arg) {
  (void)arg;
  return clk.now_ns / 1000000u;
}
static int fake_tb_init(void *arg, tb_timer_t *timer) {
  (void)arg;
  (void)timer;
  return 0;
}
static int fake_tb_start(void *arg, tb_timer_t *timer, uint64_t ms) {
  (void)arg;
  timer_remove(timer);
  timer->due_ns = clk.now_ns + ms * 1000000u;
  timer_add((fake_timer_t){.tb = timer, .due_ns = timer->due_ns, .seq = clk.seq++});
  return 0;
}
static void fake_tb_stop(void *arg, tb_timer_t *timer) {
  (void)arg;
  timer_remove(timer);
}
static void fake_tb_close(void *arg, tb_timer_t *timer) {
  (void)arg;
  timer_remove(timer);
  list_insert_tail(&clk.closing, &timer->link);
}
static const timebase_ops_t fake_tb_ops = {
    .now_ns = fake_tb_now,
    .timer_now_ms = fake_tb_timer_now_ms,
    .init = fake_tb_init,
    .start = fake_tb_start,
    .stop = fake_tb_stop,
    .close = fake_tb_close,
};

const timebase_t *fake_timebase(void) {
  clk.tb.ops = &fake_tb_ops;
  clk.tb.arg = NULL;
  return &clk.tb;
}

static int run_closes(void) {
  int ran = 0;
  while (!list_empty(&clk.closing)) {
    list_node_t *n = clk.closing.next;
    list_remove(n);
    tb_timer_t *timer = list_entry(n, tb_timer_t, link);
    ran = 1;
    if (timer->closed_cb != NULL)
      timer->closed_cb(timer);
  }
  return ran;
}

static int earliest(void) {
  int best = -1;
  for (unsigned i = 0; i < clk.n; i++) {
    const fake_timer_t *t = &clk.timers[i];
    if (best < 0 || t->due_ns < clk.timers[best].due_ns ||
        (t->due_ns == clk.timers[best].due_ns && t->seq < clk.timers[best].seq))
      best = (int)i;
  }
  return best;
}

void fake_pump(void) {
  for (;;) {
    /* A few non-blocking turns: a wake-up, then the closes it starts. */
    for (int turn = 0; turn < 3; turn++) {
      uv_run(clk.loop, UV_RUN_NOWAIT);
      if (run_closes())
        turn = 0;
    }
    int i = earliest();
    if (i < 0 || clk.timers[i].due_ns > clk.now_ns)
      return;
    fake_timer_t t = clk.timers[i];
    clk.timers[i] = clk.timers[--clk.n];
    tb_timer_fire(t.tb);
  }
}

void fake_advance_ns(uint64_t ns) {
  uint64_t target = clk.now_ns + ns;
  fake_pump();
  for (;;) {
    int i = earliest();
    if (i < 0 || clk.timers[i].due_ns > target)
      break;
    if (clk.timers[i].due_ns > clk.now_ns)
      clk.now_ns = clk.timers[i].due_ns;
    fake_pump();
  }
  clk.now_ns = target;
  fake_pump();
}

void fake_advance_ms(uint64_t ms) { fake_advance_ns(ms * 1000000u); }

void fake_advance_timers_only_ms(uint64_t ms) {
  uint64_t target = clk.now_ns + ms * 1000000u;
  for (;;) {
    int i = earliest();
    if (i < 0 || clk.timers[i].due_ns > target)
      break;
    if (clk.timers[i].due_ns > clk.now_ns)
      clk.now_ns = clk.timers[i].due_ns;
    fake_timer_t t = clk.timers[i];
    clk.timers[i] = clk.timers[--clk.n];
    tb_timer_fire(t.tb);
  }
  clk.now_ns = target;
}

unsigned fake_timers_pending(void) { return clk.n + !list_empty(&clk.closing); }

uint64_t fake_next_due_in_ns(void) {
  int i = earliest();
  if (i < 0)
    return UINT64_MAX;
  return clk.timers[i].due_ns > clk.now_ns ? clk.timers[i].due_ns - clk.now_ns : 0;
}
