/* bench.h: what the parts of redlock-bench share: the configuration from
 * the command line, the state of a run, the clock and CPU helpers, the
 * workload modes (bench_modes.c) and the report (bench_report.c).
 * redlock-bench.c has the options, the set-up and main. */
#ifndef REDLOCK_BENCH_H
#define REDLOCK_BENCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench_stats.h"
#include "redlock.h"

#define MAX_NODES 16
#define MAX_PIDS 64
#define MAX_CONCURRENCY 65536
#define MAX_WORKERS 1024

/* ---- configuration ---------------------------------------------------------------- */

typedef enum { MODE_THROUGHPUT, MODE_LATENCY, MODE_CONTENTION, MODE_SLOW_NODE } mode_t_;

extern const char *const mode_names[];

/* What the async engine's cycles acquire (coordination primitives: one
 * semaphore or read-write lock per slot, so a cycle is uncontended as for
 * locks, and the figures compare the scripts' cost). */
typedef enum { PRIMITIVE_LOCK, PRIMITIVE_SEMAPHORE, PRIMITIVE_READ, PRIMITIVE_WRITE } primitive_t;
extern const char *const primitive_names[];

typedef struct {
  mode_t_ mode;
  int start_n; /* servers to start (0 with --node) */
  const char *nodes[MAX_NODES];
  int n_nodes;
  pid_t pids[MAX_PIDS];
  int n_pids;
  int concurrency; /* -1 = mode default */
  /* --resources R: the async engine's cycles go round R resource names
   * (slot i takes i, i + C, i + 2C, ... < R in turn); 0: one per slot. */
  int resources;
  double duration_s;
  double warmup_s;
  /* --cycles N: the async engine runs exactly N cycles, no warm-up, the
   * window the whole run (a fixed amount of work for callgrind); 0: timed
   * by --duration. */
  unsigned long cycles_limit;
  uint32_t ttl_ms;
  int workers;
  uint32_t hold_ms;
  uint32_t wait_ms;
  uint32_t delay_ms;
  int api_async;    /* latency mode: async chain instead of blocking calls */
  int api_blocking; /* throughput mode: --threads blocking threads (bench_blocking.c) */
  int api_hiredis;  /* latency mode: a bare synchronous hiredis loop on master 0 */
  int ab_api;       /* --ab-api: async vs blocking, or hiredis vs blocking, in one run */
  int threads;      /* blocking threads (--threads; default --concurrency) */
  int retry_set;
  int retry_count;
  uint32_t retry_delay_ms, retry_jitter_ms;
  uint32_t request_timeout_ms, connect_timeout_ms; /* 0 = library default */
  int quarantine;                                  /* -1 = default for the setup */
  int fencing;
  int no_stats; /* --no-stats: redlock_options_set_stats(opts, 0) */
  int ab_stats; /* --ab-stats: stats on vs off, interleaved in one run */
  /* --ab-node: side B's masters, against --node's (side A), interleaved in
   * one run (as many as --node). */
  const char *ab_nodes[MAX_NODES];
  int n_ab_nodes;
  primitive_t primitive;
  uint32_t sem_limit;
  int json;
  const char *hist_path;
  size_t max_samples; /* 0 = from the duration */
  int verbose;
  int log_level;
  int tls;               /* start the masters TLS-only */
  const char *tls_certs; /* --tls-certs DIR: ca.crt, server.crt, server.key */
  const char *tls_ca, *tls_cert, *tls_key, *tls_server_name;
  int tls_insecure;
} config_t;

/* ---- run state ------------------------------------------------------------------------ */

enum { PHASE_WARMUP = 0, PHASE_MEASURE, PHASE_STOP };

typedef struct bench bench_t;

typedef struct {
  bench_t *b;
  char resource[64];
  int index;     /* the slot's number */
  unsigned turn; /* --resources: which of its names comes next */
  uint64_t t_start;
  uint64_t t_acquired;
} slot_t;

struct bench {
  config_t *cfg;
  redlock_t *client;
  char run_id[32];
  atomic_int phase;
  atomic_int active;    /* async slots still cycling */
  atomic_ulong cycles;  /* completed in the measured window */
  atomic_ulong started; /* --cycles: cycles handed out so far */
  samples_t acquire, cycle;
  errors_t lock_errors, unlock_errors;
  /* window */
  uint64_t t0, t1;
  uint64_t cpu0, cpu1;
  uint64_t sys0, sys1;           /* of cpu: in the kernel (syscalls, wakeups) */
  uint64_t switches0, switches1; /* context switches */
  int64_t srv0, srv1;
  /* contention */
  samples_t handoff, handoff_start;
  unsigned long handoff_negative;
  unsigned long giveups;
  unsigned long per_worker_min, per_worker_max;
  /* outcome */
  int hung;
  int n_nodes;
  int quarantine;
  int tls;          /* some master is rediss:// */
  const char *uri0; /* master 0 (the hiredis baseline connects to it) */
  slot_t *slots;    /* async engine; freed after redlock_close */
};

/* ---- time, CPU, interruption (bench_modes.c) ------------------------------------------ */

/* Set by SIGINT / SIGTERM: the modes stop early. */
extern atomic_int interrupted;

uint64_t now_ns(void); /* CLOCK_MONOTONIC */
/* This process's user + system CPU, µs (getrusage(RUSAGE_SELF)). */
uint64_t self_cpu_us(void);
/* The same and its context switches (voluntary + involuntary, all threads):
 * a blocked call costs one whatever the machine's load. */
typedef struct {
  uint64_t cpu_us, switches;
  uint64_t sys_us; /* of cpu_us, system time */
} usage_t;
usage_t self_usage(void);
/* Sleeps up to `seconds`, returning early on SIGINT / SIGTERM. */
void sleep_s(double seconds);
void sleep_ms(uint32_t ms);
/* The measured window of a mode: CPU, servers' CPU and time at each end. */
void begin_window(bench_t *b);
void end_window(bench_t *b);

/* ---- the library's log (redlock-bench.c) ----------------------------------------------- */

/* Warnings the library logged (counted; the first few printed). */
extern atomic_ulong log_warnings;
/* The log's time origin. */
extern uint64_t log_epoch_ns;

/* ---- the workload modes (bench_modes.c) ------------------------------------------------ */

/* Each runs its warm-up and measured window on b->client.  0, or -1 when
 * out of memory. */
int run_async(bench_t *b);      /* throughput, slow-node, latency --api async */
int run_blocking(bench_t *b);   /* latency: blocking calls */
int run_contention(bench_t *b); /* K threads on one resource */
/* --ab-stats / --ab-node: b->client (side A: stats on, or --node's masters)
 * and off (side B: stats off, or --ab-node's masters) in turns; prints its
 * own report. */
int run_ab(bench_t *b, redlock_t *off);
/* What the two A/B modes (--ab-stats, --ab-api) share: measured segments
 * of AB_SEGMENT_S after AB_RAMP_S of ramp-up, ordered ABBA ABBA... */
#define AB_SEGMENT_S 0.5
#define AB_RAMP_S 0.1
#define AB_MAX_SEGMENTS 512
typedef struct {
  unsigned long cycles;
  uint64_t ns, cpu_us, switches;
} ab_acc_t;
int ab_per_side(double duration_s); /* measured segments per side */
int ab_side(int segment);           /* 0 (A) or 1 (B) */
/* The median over pairs of neighbouring segments of side 1 / side 0 rate. */
double ab_pair_median(const double *seg_rate, const int *seg_side, int segments);
/* Cycles/s and client CPU µs per cycle of each side. */
void ab_rates(const ab_acc_t acc[2], double rate[2], double cpu[2]);
/* The async engine's parts that --ab-api reuses: one slot's next cycle, and
 * waiting (up to 30 s; b->hung otherwise) until every slot has stopped. */
void async_cycle_start(slot_t *s);
void async_wait_drained(bench_t *b);

/* ---- the blocking API and its baselines (bench_blocking.c) ---------------------------- */

/* One redlock_lock + redlock_unlock of `resource`, its latencies and errors
 * recorded when `measuring`; the lock's status. */
int blocking_cycle(bench_t *b, const char *resource, int measuring);
int run_blocking_threads(bench_t *b); /* throughput --api blocking */
int run_hiredis(bench_t *b);          /* latency --api hiredis */
/* --ab-api: throughput: async engine (side 0) vs blocking threads (side 1);
 * latency: bare hiredis (side 0) vs blocking calls (side 1).  Prints its own
 * report. */
int run_ab_api(bench_t *b);

/* ---- output (bench_report.c) ---------------------------------------------------------- */

/* The figures of a finished run (sorts its samples). */
void report(bench_t *b);

/* What --ab-stats or --ab-node measured, per side (0: stats on or --node's
 * masters; 1: stats off or --ab-node's). */
typedef struct {
  int per_side;           /* segments per side */
  double segment_s;       /* measured seconds of a segment */
  double rate[2], cpu[2]; /* cycles/s, client CPU us per cycle */
  double pair_median;     /* median over neighbouring segments of side 1 / side 0 rate */
  double cpu_pair_median; /* the same for client CPU per cycle */
  unsigned long errors;
} ab_result_t;
void report_ab(const bench_t *b, const ab_result_t *r);

/* What --ab-api measured, per side (see run_ab_api). */
typedef struct {
  int per_side;
  double segment_s;
  double rate[2], cpu[2]; /* cycles/s, client CPU us per cycle */
  double switches[2];     /* context switches per cycle */
  double pair_median;     /* median over neighbouring segments of side 1 / side 0 rate */
  stats_t acq[2];         /* latency: acquisition latency per side */
  unsigned long errors;
} ab_api_result_t;
void report_ab_api(const bench_t *b, const ab_api_result_t *r);

/* Writes the acquire-latency histogram of s (sorted by samples_stats). */
int write_hist(const char *path, samples_t *s, const char *title);

#endif
