/* clockshift.c: an LD_PRELOAD shim that shifts one process's wall clock, for
 * the torture test's clock-jump scenario (tests/torture/torture_clockjump.c):
 * a redis-server whose wall clock jumps forward expires keys early, which is
 * the honest limit of Redlock that fencing tokens answer (docs/safety.md §4).
 * libfaketime hangs redis-server on this system; this shim does only what
 * the test needs.
 *
 * What it shifts: clock_gettime(CLOCK_REALTIME and CLOCK_REALTIME_COARSE),
 * gettimeofday() and time() return the real value plus an offset.  Monotonic
 * and CPU clocks are left alone (Redis measures durations with them).
 *
 * Where the offset comes from: the environment variable CLOCKSHIFT_FILE names
 * a file whose first 8 bytes are a signed 64-bit offset in nanoseconds (host
 * byte order).  The shim maps the file (MAP_SHARED, read-only) once, in its
 * constructor; every call then reads the offset with one atomic load, so the
 * test changes the clock of the running server simply by pwrite()ing a new
 * value into the file (the page cache is shared).  Without the variable, or
 * when the file cannot be opened, the offset is 0.  Reading the offset is a
 * plain memory load: cheap, lock-free and async-signal-safe, as it must be in
 * functions Redis calls on every command and from signal handlers.
 *
 * The real functions are found with dlsym(RTLD_NEXT) in the constructor;
 * calls made before it ran (other libraries' constructors) use the raw system
 * calls.  Built without sanitizers (an ASan-instrumented preload would have to
 * come before the ASan runtime, which a plain redis-server does not load). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* The libc prototypes mark the pointers nonnull; callers may still pass NULL
 * (gettimeofday(NULL, tz) is legal), so the checks below stay. */
#pragma GCC diagnostic ignored "-Wnonnull-compare"

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
typedef int (*gettimeofday_fn)(struct timeval *, void *);

static clock_gettime_fn real_clock_gettime;
static gettimeofday_fn real_gettimeofday;
static const volatile int64_t *offset_ns_ptr; /* into the mapped file, or NULL */

__attribute__((constructor)) static void clockshift_init(void) {
  real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
  real_gettimeofday = (gettimeofday_fn)dlsym(RTLD_NEXT, "gettimeofday");
  const char *path = getenv("CLOCKSHIFT_FILE");
  if (path == NULL || path[0] == '\0')
    return;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(int64_t)) {
    void *p = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED)
      offset_ns_ptr = (const volatile int64_t *)p;
  }
  close(fd);
}

static int64_t offset_ns(void) {
  const volatile int64_t *p = offset_ns_ptr;
  return p != NULL ? __atomic_load_n((const int64_t *)p, __ATOMIC_RELAXED) : 0;
}

static int raw_clock_gettime(clockid_t id, struct timespec *ts) {
  if (real_clock_gettime != NULL)
    return real_clock_gettime(id, ts);
  return (int)syscall(SYS_clock_gettime, id, ts);
}

static void shift_timespec(struct timespec *ts, int64_t off) {
  int64_t ns = (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec + off;
  ts->tv_sec = (time_t)(ns / 1000000000LL);
  ts->tv_nsec = (long)(ns % 1000000000LL);
  if (ts->tv_nsec < 0) {
    ts->tv_nsec += 1000000000L;
    ts->tv_sec -= 1;
  }
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  int rc = raw_clock_gettime(id, ts);
  if (rc == 0 && ts != NULL && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
    int64_t off = offset_ns();
    if (off != 0)
      shift_timespec(ts, off);
  }
  return rc;
}

/* glibc 2.36 declares the second parameter as void *restrict. */
int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
  int rc;
  if (real_gettimeofday != NULL)
    rc = real_gettimeofday(tv, tz);
  else
    rc = (int)syscall(SYS_gettimeofday, tv, tz);
  if (rc == 0 && tv != NULL) {
    int64_t off = offset_ns();
    if (off != 0) {
      int64_t us = (int64_t)tv->tv_sec * 1000000LL + tv->tv_usec + off / 1000;
      tv->tv_sec = (time_t)(us / 1000000LL);
      tv->tv_usec = (suseconds_t)(us % 1000000LL);
      if (tv->tv_usec < 0) {
        tv->tv_usec += 1000000;
        tv->tv_sec -= 1;
      }
    }
  }
  return rc;
}

time_t time(time_t *out) {
  struct timespec ts;
  if (raw_clock_gettime(CLOCK_REALTIME, &ts) != 0)
    return (time_t)-1;
  int64_t off = offset_ns();
  if (off != 0)
    shift_timespec(&ts, off);
  if (out != NULL)
    *out = ts.tv_sec;
  return ts.tv_sec;
}
