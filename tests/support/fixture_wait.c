/* fixture_wait.c: waiting without sleeping-and-looking (see fixture.h):
 * counting events with a monotonic deadline, the stall monitor that tells a
 * starved machine from a slow library, a watchdog against hangs, and the
 * small process helpers the waits need. */
#include "fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- events ------------------------------------------------------------------------ */

void fx_event_init(fx_event_t *ev) {
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  /* Monotonic: a wall-clock step must not stretch or cut a deadline. */
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&ev->cond, &attr);
  pthread_condattr_destroy(&attr);
  pthread_mutex_init(&ev->mu, NULL);
  ev->count = 0;
}

void fx_event_destroy(fx_event_t *ev) {
  pthread_cond_destroy(&ev->cond);
  pthread_mutex_destroy(&ev->mu);
}

void fx_event_post(fx_event_t *ev) {
  pthread_mutex_lock(&ev->mu);
  ev->count++;
  pthread_cond_broadcast(&ev->cond);
  pthread_mutex_unlock(&ev->mu);
}

int fx_event_wait(fx_event_t *ev, int timeout_ms) {
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += timeout_ms / 1000;
  deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&ev->mu);
  int rc = 0;
  while (ev->count == 0 && rc == 0)
    rc = pthread_cond_timedwait(&ev->cond, &ev->mu, &deadline);
  int got = ev->count > 0;
  if (got)
    ev->count--;
  pthread_mutex_unlock(&ev->mu);
  return got;
}

/* ---- stall monitor ------------------------------------------------------------------- */

static pthread_t stall_thread;
static atomic_int stall_running;
static atomic_uint stall_worst_ms;

static void *stall_main(void *arg) {
  (void)arg;
  while (atomic_load(&stall_running)) {
    uint64_t before = rh_now_ms();
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 1000000L};
    nanosleep(&ts, NULL);
    uint64_t late = rh_now_ms() - before;
    late = late > 1 ? late - 1 : 0;
    unsigned worst = atomic_load(&stall_worst_ms);
    while (late > worst && !atomic_compare_exchange_weak(&stall_worst_ms, &worst, (unsigned)late)) {
    }
  }
  return NULL;
}

void fx_stall_monitor_start(void) {
  atomic_store(&stall_worst_ms, 0);
  atomic_store(&stall_running, 1);
  if (pthread_create(&stall_thread, NULL, stall_main, NULL) != 0) {
    fprintf(stderr, "fixture: cannot start the stall monitor\n");
    abort(); /* a test must not run believing it is watched */
  }
}

void fx_stall_monitor_stop(void) {
  if (!atomic_exchange(&stall_running, 0))
    return;
  pthread_join(stall_thread, NULL);
}

void fx_stall_reset(void) { atomic_store(&stall_worst_ms, 0); }

unsigned fx_stall_max_ms(void) { return atomic_load(&stall_worst_ms); }

/* ---- process helpers ------------------------------------------------------------------- */

uint64_t fx_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void fx_sleep_ms(unsigned ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

void fx_beside_self(char *buf, size_t size, const char *name) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  char *slash = n > 0 ? (self[n] = '\0', strrchr(self, '/')) : NULL;
  if (slash == NULL) {
    snprintf(buf, size, "%s", name);
    return;
  }
  *slash = '\0';
  snprintf(buf, size, "%s/%s", self, name);
}

/* Reads the Threads: line of /proc/self/status with open/read/close rather
 * than walking /proc/self/task with opendir: ThreadSanitizer's opendir does
 * not mark the descriptor it gets as new, so closedir of a number that a
 * client's finished loop thread used for its epoll descriptor was reported
 * as a race with that thread. */
int fx_thread_count(void) {
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  char buf[4096];
  ssize_t got = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (got <= 0)
    return -1;
  buf[got] = '\0';
  const char *at = strstr(buf, "\nThreads:");
  return at != NULL ? atoi(at + strlen("\nThreads:")) : -1;
}

void fx_name(char *buf, size_t size, const char *what) {
  static atomic_uint seq;
  snprintf(buf, size, "api:%s:%ld:%u", what, (long)getpid(), atomic_fetch_add(&seq, 1));
}

static void watchdog_fired(int sig) {
  (void)sig;
  static const char msg[] = "api test: watchdog fired (a wait did not end)\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(3);
}

void fx_watchdog(unsigned seconds) {
  setvbuf(stdout, NULL, _IONBF, 0); /* progress lines survive a watchdog _exit */
  signal(SIGALRM, watchdog_fired);
  alarm(seconds);
}
