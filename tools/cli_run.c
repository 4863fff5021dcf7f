/* cli_run.c: `redlock run [OPTIONS] RESOURCE [--] COMMAND [ARGS...]`.
 *
 * Takes a Redlock lock (fencing on), runs COMMAND with the fencing token in
 * its environment, keeps the lock alive with redlock_watch() while COMMAND
 * runs, releases it when COMMAND exits and exits with COMMAND's status.  If
 * the lock is lost, COMMAND gets SIGTERM (SIGKILL after a grace period) and
 * redlock exits with its own "lost" status (EXIT_LOST); with --max-hold the
 * lock is released at the bound (redlock_watch_bounded) and COMMAND ends the
 * same way, with EXIT_MAX_HOLD.  docs/cli.md and
 * docs/redlock.1 document the options and the exit statuses. */
#define _GNU_SOURCE

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_child.h"
#include "cli_common.h"
#include "cli_file.h"
#include "cli_hold.h"
#include "cli_probe.h"
#include "cli_quar.h"

/* How often a wait on a terminal says it is still waiting. */
#define PROGRESS_EVERY_MS 5000

/* Set on the library's loop thread, read by the main thread. */
static atomic_int g_lock_done;
static atomic_int g_lock_status;
static _Atomic(redlock_lock_t *) g_lock_result;
static atomic_int g_lost;
static atomic_int g_lost_reason; /* REDLOCK_LOST_MAX_HOLD: --max-hold, not a loss */
/* Each master's quarantine as the client judged it (its master events). */
static cli_quar_t g_quar;

static void lock_cb(int status, redlock_lock_t *lock, void *arg) {
  (void)arg;
  atomic_store(&g_lock_result, lock);
  atomic_store(&g_lock_status, status);
  atomic_store(&g_lock_done, 1);
  wake_main();
}

static void lost_cb(redlock_lock_t *lock, int reason, void *arg) {
  (void)lock;
  (void)arg;
  atomic_store(&g_lost_reason, reason);
  atomic_store(&g_lost, 1);
  wake_main();
}

/* After "no quorum": what each master looks like now, over a plain
 * connection (redlock_last_votes describes the client's latest round, which
 * after a failed attempt may be the release that followed it, and leaves
 * out the masters whose votes were not in when it was decided), and which
 * quarantine the client keeps it in, until when (its master events). */
static void diagnose_masters(const hold_opts_t *o) {
  char *key, *fence_key;
  if (probe_keys(o->conn.prefix, o->resource, &key, &fence_key) != 0)
    return;
  uint64_t timeout = o->connect_ms ? o->connect_ms : 1000;
  int quarantined = 0;
  for (size_t i = 0; i < o->conn.nodes.n; i++) {
    master_report_t rep;
    probe_master(&o->conn.nodes.addrs[i], key, fence_key, timeout, &rep);
    /* A sentinel or cluster voter: the master asked too. */
    char label[700];
    snprintf(label, sizeof label, "%s%s%s", o->conn.nodes.addrs[i].label,
             rep.master[0] ? " -> " : "", rep.master);
    char why[160];
    if (!rep.up) {
      err_msg("  %s: %s", label, rep.state);
    } else if (cli_quar_why(&g_quar, i, why, sizeof why)) {
      err_msg("  %s: quarantined (%s): up %s, its vote does not count until then", label, why,
              rep.uptime[0] ? rep.uptime : "?");
      quarantined++;
    } else {
      err_msg("  %s: %s (answers now)", label, rep.state);
    }
    free(rep.value);
  }
  if (quarantined > 0)
    err_msg("a quarantined master's vote counts once its quarantine (max TTL long) ends: wait, "
            "or see Quarantines, --no-quarantine and --max-ttl in redlock run --help");
  free(key);
  free(fence_key);
}

/* The lock attempt's failure -> exit status, with a message. */
static int lock_failure(redlock_t *client, const hold_opts_t *o, int status) {
  char votes[1024];
  votes[0] = '\0';
  redlock_last_votes(client, votes, sizeof votes);
  switch (status) {
  case REDLOCK_ELOCKED:
  case REDLOCK_ETIMEDOUT:
    if (status == REDLOCK_ETIMEDOUT)
      err_msg("cannot lock '%s': waited %" PRIu64 " ms; it is held by another holder", o->resource,
              o->wait_ms);
    else
      err_msg("cannot lock '%s': %s", o->resource, redlock_strerror(status));
    info_msg("last round: %s", votes);
    return o->conflict_exit;
  case REDLOCK_ENOQUORUM:
  case REDLOCK_EEXPIRED:
    err_msg("cannot lock '%s': %s", o->resource, redlock_strerror(status));
    info_msg("last round: %s", votes);
    if (status == REDLOCK_ENOQUORUM && g_verbosity >= 0)
      diagnose_masters(o);
    return EXIT_NOQUORUM;
  case REDLOCK_ENOTSUP: /* what was asked needs Lua, and too many masters run none */
    err_msg("cannot lock '%s': too few masters can run it (a %s needs Lua scripts): %s",
            o->resource, o->mode == HOLD_MUTEX ? "lock" : "read-write lock", votes);
    return EXIT_NOQUORUM;
  default:
    err_msg("cannot lock '%s': %s (%s)", o->resource, redlock_strerror(status),
            redlock_err_name(status));
    return EXIT_INTERNAL;
  }
}

/* The hold run asks for: a plain lock, or a read or write hold of the
 * read-write lock of the same name. */
static int start_attempt(redlock_t *client, const hold_opts_t *o) {
  uint32_t ttl = (uint32_t)o->ttl_ms, wait = (uint32_t)o->wait_ms;
  switch (o->mode) {
  case HOLD_SHARED:
    return redlock_rwlock_read_async(client, o->resource, ttl, wait, lock_cb, NULL);
  case HOLD_EXCLUSIVE:
    return redlock_rwlock_write_async(client, o->resource, ttl, wait, lock_cb, NULL);
  default:
    return redlock_lock_async(client, o->resource, ttl, wait, lock_cb, NULL);
  }
}

/* One more attempt of the same hold, at once. */
static int try_once(redlock_t *client, const hold_opts_t *o, redlock_lock_t **lock) {
  uint32_t ttl = (uint32_t)o->ttl_ms;
  switch (o->mode) {
  case HOLD_SHARED:
    return redlock_rwlock_read(client, o->resource, ttl, 0, lock);
  case HOLD_EXCLUSIVE:
    return redlock_rwlock_write(client, o->resource, ttl, 0, lock);
  default:
    return redlock_trylock(client, o->resource, ttl, lock);
  }
}

/* Why the wait goes on, from the client's latest round: the main thread has
 * no call on record, so redlock_last_votes describes the waiting attempt's
 * last round. */
static const char *wait_reason(redlock_t *client) {
  char votes[64];
  votes[0] = '\0';
  redlock_last_votes(client, votes, sizeof votes);
  if (strncmp(votes, "lost (no quorum)", 16) == 0)
    return "too few masters answer";
  return "held by another";
}

/* Seconds, rounded down, for the progress line. */
static uint64_t whole_s(uint64_t ms) { return ms / 1000; }

/* Waits for the lock.  Returns 0 with *out set when it is held; otherwise
 * *out is NULL and the exit status is returned (the -E code for a busy
 * lock, which may be 0: the caller tells a held lock by *out, not by the
 * status), or 128+N when signal N arrived first. */
static int acquire(redlock_t *client, const hold_opts_t *o, redlock_lock_t **out) {
  *out = NULL;
  int rc = start_attempt(client, o);
  if (rc != 0) {
    err_msg("cannot lock '%s': %s", o->resource, redlock_strerror(rc));
    return rc == REDLOCK_EINVAL ? EXIT_USAGE : EXIT_INTERNAL;
  }
  if (o->wait_ms > 0)
    info_msg("waiting up to %" PRIu64 " ms for '%s'", o->wait_ms, o->resource);
  /* A person at a terminal hears of a long wait every few seconds; a script
   * (stderr not a terminal) keeps a quiet log. */
  int progress = o->wait_ms > 0 && g_verbosity >= 0 && isatty(STDERR_FILENO);
  uint64_t started = now_ms(), next_progress = started + PROGRESS_EVERY_MS;
  while (!atomic_load(&g_lock_done)) {
    int64_t timeout = -1;
    if (progress) {
      uint64_t now = now_ms();
      if (now >= next_progress) {
        err_msg("waiting for '%s': %s, %" PRIu64 " s of %" PRIu64 " s", o->resource,
                wait_reason(client), whole_s(now - started), whole_s(o->wait_ms + 999));
        next_progress += PROGRESS_EVERY_MS;
        continue;
      }
      timeout = (int64_t)(next_progress - now);
    }
    siginfo_t info;
    int sig = wait_signal(timeout, &info);
    if (sig > 0 && is_forwarded(sig)) {
      /* Even if the lock was granted meanwhile: the caller's redlock_close
       * cancels the call or releases the lock. */
      err_msg("got %s while waiting for '%s'; giving up", sig_name(sig), o->resource);
      return 128 + sig;
    }
  }
  int status = atomic_load(&g_lock_status);
  if (status == REDLOCK_OK) {
    *out = atomic_load(&g_lock_result);
    return 0;
  }
  if (status == REDLOCK_ETIMEDOUT) {
    /* The wait ended on a held lock (a wait that ends for lack of quorum
     * returns REDLOCK_ENOQUORUM: 69, never the busy code).  One more attempt
     * takes a lock freed at the very end of the wait, and tells masters that
     * stopped answering since the last round. */
    redlock_lock_t *lock = NULL;
    int again = try_once(client, o, &lock);
    if (again == REDLOCK_OK) {
      *out = lock;
      return 0;
    }
    if (again != REDLOCK_ELOCKED)
      status = again;
  }
  return lock_failure(client, o, status);
}

/* Runs COMMAND under the held lock; returns the exit status. */
static int run_locked(redlock_t *client, const hold_opts_t *o, redlock_lock_t *lock,
                      const fdset_t *inherited) {
  uint64_t fence = redlock_lock_fence(lock);
  info_msg("locked '%s' (fence %" PRIu64 ", valid for %" PRId64 " ms)", o->resource, fence,
           redlock_lock_validity_ms(lock));
  int rc = o->max_hold_ms != 0
               ? redlock_watch_bounded(client, lock, (uint32_t)o->max_hold_ms, lost_cb, NULL)
               : redlock_watch(client, lock, lost_cb, NULL);
  if (rc != 0) {
    err_msg("cannot keep '%s' alive: %s", o->resource, redlock_strerror(rc));
    redlock_unlock(client, lock);
    return EXIT_INTERNAL;
  }
  char fence_text[32];
  snprintf(fence_text, sizeof fence_text, "%" PRIu64, fence);
  const char *const names[] = {o->fence_env, "REDLOCK_RESOURCE", "REDLOCK_VALUE"};
  const char *const values[] = {fence_text, o->resource, redlock_lock_value(lock)};
  pid_t pid;
  rc = command_start(o, names, values, 3, inherited, &pid);
  if (rc != 0) {
    redlock_unlock(client, lock);
    return rc;
  }
  info_msg("running '%s' (pid %ld)", o->command[0], (long)pid);

  int wstatus = 0;
  stopper_t stop = {0};
  for (;;) {
    pid_t r = waitpid(pid, &wstatus, WNOHANG);
    if (r == pid)
      break;
    if (r < 0 && errno != EINTR) {
      err_msg("waitpid: %s", strerror(errno));
      wstatus = -1;
      break;
    }
    if (atomic_load(&g_lost) && !stop.term_sent) {
      err_msg("lock on '%s' %s; sending SIGTERM to '%s' (pid %ld)", o->resource,
              atomic_load(&g_lost_reason) == REDLOCK_LOST_MAX_HOLD
                  ? "released at its --max-hold bound"
                  : "lost",
              o->command[0], (long)pid);
      stopper_term(&stop, o, pid);
    }
    int64_t timeout = stopper_tick(&stop, o, pid);
    siginfo_t info;
    int sig = wait_signal(timeout, &info);
    if (sig > 0 && sig != SIGCHLD)
      command_forward(o, pid, sig, &info);
  }

  int status = wstatus == -1 ? EXIT_INTERNAL : exit_status_of(wstatus);
  int lost = atomic_load(&g_lost) || redlock_lock_is_lost(lock);
  rc = redlock_unlock(client, lock); /* frees the handle */
  if (lost && atomic_load(&g_lost_reason) == REDLOCK_LOST_MAX_HOLD) {
    err_msg("the lock on '%s' reached its --max-hold bound while '%s' ran (its exit status: %d)",
            o->resource, o->command[0], status);
    return EXIT_MAX_HOLD;
  }
  if (lost) {
    err_msg("the lock on '%s' was lost while '%s' ran (its exit status: %d)", o->resource,
            o->command[0], status);
    return EXIT_LOST;
  }
  if (rc == REDLOCK_ELOST) {
    err_msg("the lock on '%s' was no longer held on a quorum when '%s' finished (its exit "
            "status: %d)",
            o->resource, o->command[0], status);
    return EXIT_LOST;
  }
  if (rc != REDLOCK_OK)
    err_msg("release of '%s' not confirmed (%s); it expires within %" PRIu64 " ms", o->resource,
            redlock_strerror(rc), o->ttl_ms);
  else
    info_msg("released '%s'; '%s' exited with status %d", o->resource, o->command[0], status);
  return status;
}

/* --metrics-file: the client's stats, written to a temporary file that
 * mkostemp creates beside PATH and renamed over it (cli_file.h), so that a
 * reader (node_exporter's textfile collector, say) never sees half a file
 * and nothing planted at a predictable name is followed.  A failure is reported and does not change
 * the exit status: COMMAND's own matters more. */
static void write_metrics(redlock_t *client, const hold_opts_t *o) {
  int format = o->metrics_format ? o->metrics_format : REDLOCK_STATS_PROMETHEUS;
  char *text = NULL;
  int len = redlock_stats(client, format, NULL, 0);
  while (len >= 0) {
    size_t size = (size_t)len + 4096; /* counters may grow while we render */
    free(text);
    text = malloc(size);
    if (text == NULL) {
      len = REDLOCK_ENOMEM;
      break;
    }
    int got = redlock_stats(client, format, text, size);
    if (got >= 0 && (size_t)got < size) {
      len = got;
      break;
    }
    len = got;
  }
  if (len < 0) {
    err_msg("cannot write the metrics: %s", redlock_strerror(len));
    free(text);
    return;
  }
  if (cli_file_replace(o->metrics_file, text, (size_t)len, 0644) != 0)
    err_msg("cannot write the metrics to '%s': %s", o->metrics_file, strerror(errno));
  else
    info_msg("metrics written to '%s'", o->metrics_file);
  free(text);
}

int cmd_run(int argc, char **argv) {
  hold_opts_t o;
  fdset_t inherited = {0};
  redlock_options_t *opts = NULL;
  redlock_t *client = NULL;
  int status = hold_prepare(&HOLD_RUN, argc, argv, &o, &inherited, &opts);
  if (status == 0)
    status = cli_quar_init(&g_quar, &o.conn.nodes);
  if (status == 0 && redlock_options_set_event_cb(opts, cli_quar_event, &g_quar) != 0)
    status = EXIT_INTERNAL;
  if (status == 0)
    status = tls_for_probes(opts, &o.conn.nodes);
  if (status == 0)
    status = hold_open(&client, opts);
  if (status == 0) {
    redlock_lock_t *lock = NULL;
    status = acquire(client, &o, &lock);
    if (lock != NULL)
      status = run_locked(client, &o, lock, &inherited);
    if (o.metrics_file != NULL)
      write_metrics(client, &o);
  }
  redlock_close(client); /* NULL is ignored; cancels a wait, releases what is held */
  cli_quar_free(&g_quar);
  redlock_options_free(opts);
  tls_for_probes_free();
  nodes_free(&o.conn.nodes);
  free(inherited.fds);
  return status;
}
