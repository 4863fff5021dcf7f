/* timebase.c: the library's time (timebase.h): the monotonic clock, the
 * timer calls every module makes, and the library's own timebase over the
 * clock and libuv timers. */
#define _POSIX_C_SOURCE 200809L
#include "util/timebase.h"

#include <time.h>

uint64_t clock_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int tb_timer_init(const timebase_t *tb, tb_timer_t *timer, void *data) {
  timer->data = data;
  timer->tb = tb;
  timer->cb = NULL;
  timer->closed_cb = NULL;
  timer->active = 0;
  timer->due_ns = 0;
  list_init(&timer->link);
  return tb->ops->init(tb->arg, timer);
}

int tb_timer_start(tb_timer_t *timer, tb_timer_cb cb, uint64_t ms) {
  timer->cb = cb;
  timer->active = 1;
  int rc = timer->tb->ops->start(timer->tb->arg, timer, ms);
  if (rc != 0)
    timer->active = 0;
  return rc;
}

void tb_timer_stop(tb_timer_t *timer) {
  timer->active = 0;
  timer->tb->ops->stop(timer->tb->arg, timer);
}

void tb_timer_close(tb_timer_t *timer, tb_closed_cb closed) {
  timer->active = 0;
  timer->closed_cb = closed;
  timer->tb->ops->close(timer->tb->arg, timer);
}

void tb_timer_fire(tb_timer_t *timer) {
  timer->active = 0;
  timer->cb(timer);
}

/* ---- the library's timebase ---- */

static uint64_t uv_tb_now(void *arg) {
  (void)arg;
  return clock_now_ns();
}

static uint64_t uv_tb_timer_now_ms(void *arg) { return uv_now((uv_loop_t *)arg); }

static int uv_tb_init(void *arg, tb_timer_t *timer) {
  timer->uv.data = timer;
  return uv_timer_init((uv_loop_t *)arg, &timer->uv);
}

static void uv_tb_fired(uv_timer_t *handle) { tb_timer_fire((tb_timer_t *)handle->data); }

static int uv_tb_start(void *arg, tb_timer_t *timer, uint64_t ms) {
  (void)arg;
  return uv_timer_start(&timer->uv, uv_tb_fired, ms, 0);
}

static void uv_tb_stop(void *arg, tb_timer_t *timer) {
  (void)arg;
  (void)uv_timer_stop(&timer->uv); /* cannot fail on an initialised timer */
}

static void uv_tb_closed(uv_handle_t *handle) {
  tb_timer_t *timer = handle->data;
  if (timer->closed_cb != NULL)
    timer->closed_cb(timer);
}

static void uv_tb_close(void *arg, tb_timer_t *timer) {
  (void)arg;
  uv_close((uv_handle_t *)&timer->uv, uv_tb_closed);
}

static const timebase_ops_t uv_timebase = {
    .now_ns = uv_tb_now,
    .timer_now_ms = uv_tb_timer_now_ms,
    .init = uv_tb_init,
    .start = uv_tb_start,
    .stop = uv_tb_stop,
    .close = uv_tb_close,
};

void timebase_uv_init(timebase_t *tb, uv_loop_t *loop) {
  tb->ops = &uv_timebase;
  tb->arg = loop;
}
