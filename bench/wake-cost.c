/* wake-cost: what it costs on this machine to put a thread to sleep and
 * wake it, without Redis or the library: the floor under every blocking
 * call (docs/performance.md, "Blocking path").  T threads each wait on their
 * own semaphore; the main thread posts them all, then collects one answer
 * from each on a semaphore of its own, ROUNDS times.  Prints the process's
 * CPU (getrusage) and the wall time per wake.
 *
 *   redlock-wake-cost T ROUNDS      e.g. 1 50000, 8 5000, 128 500 */
#define _GNU_SOURCE /* getrusage under -std=c11 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define MAX_THREADS 1024

static sem_t wake[MAX_THREADS], answer;
static volatile int stopping;

static void *sleeper(void *arg) {
  sem_t *mine = arg;
  for (;;) {
    sem_wait(mine);
    if (stopping)
      return NULL;
    sem_post(&answer);
  }
}

static double wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv) {
  int t = argc > 1 ? atoi(argv[1]) : 0;
  long rounds = argc > 2 ? atol(argv[2]) : 0;
  if (t < 1 || t > MAX_THREADS || rounds < 1) {
    fprintf(stderr, "usage: redlock-wake-cost THREADS(1..%d) ROUNDS\n", MAX_THREADS);
    return 2;
  }
  pthread_t threads[MAX_THREADS];
  sem_init(&answer, 0, 0);
  for (int i = 0; i < t; i++) {
    sem_init(&wake[i], 0, 0);
    if (pthread_create(&threads[i], NULL, sleeper, &wake[i]) != 0) {
      fprintf(stderr, "redlock-wake-cost: could not start thread %d\n", i);
      return 1;
    }
  }
  double t0 = wall_s(), c0 = cpu_s();
  for (long r = 0; r < rounds; r++) {
    for (int i = 0; i < t; i++)
      sem_post(&wake[i]);
    for (int i = 0; i < t; i++)
      sem_wait(&answer);
  }
  double t1 = wall_s(), c1 = cpu_s();
  double wakes = (double)rounds * t;
  printf("T=%d: %.2f us CPU per wake (post, the sleeper's wait and its answer), %.2f us wall\n", t,
         (c1 - c0) / wakes * 1e6, (t1 - t0) / wakes * 1e6);
  stopping = 1;
  for (int i = 0; i < t; i++)
    sem_post(&wake[i]);
  for (int i = 0; i < t; i++)
    pthread_join(threads[i], NULL);
  return 0;
}
