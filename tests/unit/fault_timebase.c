/* fault_timebase.c: timers libuv refuses (see fault_timebase.h). */
#include "fault_timebase.h"

#include <stddef.h>

#include "api/client.h"
#include "conn/link.h"

static struct {
  const timebase_ops_t *real; /* the client's own: what is not failed goes there */
  timebase_ops_t ops;
  const tb_timer_t *spared; /* the client's round deadline */
  timer_faults_t counts;
} faults;

/* A connection's own timer: its data is the link it is embedded in. */
static int is_link_timer(const tb_timer_t *timer) {
  return (const char *)timer - offsetof(link_t, timer) == (const char *)timer->data;
}

static int failed_here(const tb_timer_t *timer, unsigned *count) {
  if (timer == faults.spared || is_link_timer(timer) || *count == 0)
    return 0;
  (*count)--;
  return 1;
}

static int faulty_init(void *arg, tb_timer_t *timer) {
  if (failed_here(timer, &faults.counts.fail_inits))
    return UV_ENOMEM;
  return faults.real->init(arg, timer);
}

static int faulty_start(void *arg, tb_timer_t *timer, uint64_t ms) {
  if (timer == faults.spared && faults.counts.fail_deadline_starts > 0) {
    faults.counts.fail_deadline_starts--;
    return UV_EINVAL;
  }
  if (failed_here(timer, &faults.counts.fail_starts))
    return UV_EINVAL;
  return faults.real->start(arg, timer, ms);
}

timer_faults_t *fault_timebase_install(engine_fx_t *fx) {
  if (fx->client->timebase.ops != &faults.ops) /* else already in place: keep the real one */
    faults.real = fx->client->timebase.ops;
  faults.ops = *faults.real;
  faults.ops.init = faulty_init;
  faults.ops.start = faulty_start;
  faults.spared = &fx->client->deadline.timer;
  faults.counts = (timer_faults_t){0};
  fx->client->timebase.ops = &faults.ops;
  return &faults.counts;
}
