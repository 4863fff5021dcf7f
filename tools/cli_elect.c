/* cli_elect.c: `redlock elect [OPTIONS] NAME [--] COMMAND [ARGS...]`.
 *
 * Campaigns for leadership of NAME (redlock_elect) and runs COMMAND while
 * leader, with the term (a fencing token) in REDLOCK_TERM and in the fence
 * variable.  On a lost term COMMAND gets SIGTERM, then SIGKILL after
 * --grace, and once it is gone redlock waits to be elected again (the
 * library campaigns by itself) and runs COMMAND anew; with --max-hold each
 * term ends at its bound (redlock_elect_bounded) the same way.  When COMMAND exits
 * by itself, redlock resigns (handing over at once) and exits with
 * COMMAND's status: a supervisor decides whether to run it again.  Options,
 * signals, descriptors and spawning are run's (cli_hold.c, cli_child.c).
 * With --observe NAME it campaigns for nothing: cli_observe.c follows who
 * leads NAME. */
#define _GNU_SOURCE

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli_child.h"
#include "cli_common.h"
#include "cli_hold.h"

/* Set on the library's loop thread, read by the main thread.  on_elected
 * and on_lost strictly alternate, so "leader" is elected > lost. */
static pthread_mutex_t g_elect_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned g_elect_elected, g_elect_lost;
static uint64_t g_elect_term;
static int g_elect_reason; /* the last term's end: REDLOCK_LOST_MAX_HOLD, or a loss */

static void elect_elected_cb(redlock_election_t *e, uint64_t term, void *arg) {
  (void)e;
  (void)arg;
  pthread_mutex_lock(&g_elect_mu);
  g_elect_elected++;
  g_elect_term = term;
  pthread_mutex_unlock(&g_elect_mu);
  wake_main();
}

static void elect_lost_cb(redlock_election_t *e, int reason, void *arg) {
  (void)e;
  (void)arg;
  pthread_mutex_lock(&g_elect_mu);
  g_elect_reason = reason;
  g_elect_lost++;
  pthread_mutex_unlock(&g_elect_mu);
  wake_main();
}

/* Starts COMMAND for `term`, with REDLOCK_TERM, the fence variable and
 * REDLOCK_RESOURCE set (and an outer `redlock run`'s REDLOCK_VALUE
 * removed).  0, or an exit status when it cannot run. */
static int elect_spawn(const hold_opts_t *o, uint64_t term, const fdset_t *inherited, pid_t *pid) {
  char term_text[32];
  snprintf(term_text, sizeof term_text, "%" PRIu64, term);
  const char *const names[] = {"REDLOCK_TERM", o->fence_env, "REDLOCK_RESOURCE", "REDLOCK_VALUE"};
  const char *const values[] = {term_text, term_text, o->resource, NULL};
  return command_start(o, names, values, 4, inherited, pid);
}

/* The main loop: returns the exit status. */
static int elect_loop(const hold_opts_t *o, const fdset_t *inherited) {
  pid_t pid = 0;
  unsigned spawned_for = 0; /* the election (count) COMMAND runs for */
  int stopping = 0;
  stopper_t stop = {0};
  for (;;) {
    pthread_mutex_lock(&g_elect_mu);
    unsigned elected = g_elect_elected, lost = g_elect_lost;
    uint64_t term = g_elect_term;
    int bounded = g_elect_reason == REDLOCK_LOST_MAX_HOLD;
    pthread_mutex_unlock(&g_elect_mu);
    int64_t timeout = -1; /* until the grace after SIGTERM runs out */
    if (pid != 0) {
      int wstatus;
      pid_t r = waitpid(pid, &wstatus, WNOHANG);
      if (r < 0 && errno != EINTR) {
        err_msg("waitpid: %s", strerror(errno));
        return EXIT_INTERNAL;
      }
      if (r == pid) {
        pid = 0;
        int status = exit_status_of(wstatus);
        if (!stop.term_sent || stopping) {
          info_msg("'%s' exited with status %d; resigning '%s'", o->command[0], status,
                   o->resource);
          return status;
        }
        info_msg("'%s' stopped (status %d) after the loss; campaigning again for '%s'",
                 o->command[0], status, o->resource);
        stop = (stopper_t){0};
        continue; /* perhaps elected again meanwhile */
      }
      if (lost >= spawned_for && !stop.term_sent) {
        err_msg("leadership of '%s' %s; sending SIGTERM to '%s' (pid %ld)", o->resource,
                bounded ? "ended at its --max-hold bound" : "lost", o->command[0], (long)pid);
        stopper_term(&stop, o, pid);
      }
      timeout = stopper_tick(&stop, o, pid);
    } else if (elected > lost && elected != spawned_for) {
      info_msg("elected leader of '%s' (term %" PRIu64 "); running '%s'", o->resource, term,
               o->command[0]);
      int rc = elect_spawn(o, term, inherited, &pid);
      if (rc != 0)
        return rc;
      spawned_for = elected;
      continue; /* the loss may already be known */
    }
    siginfo_t info;
    int sig = wait_signal(timeout, &info);
    if (sig > 0 && is_forwarded(sig)) {
      if (pid == 0) {
        err_msg("got %s while campaigning for '%s'; giving up", sig_name(sig), o->resource);
        return 128 + sig;
      }
      stopping = 1; /* COMMAND's exit now ends redlock, even after a loss */
      command_forward(o, pid, sig, &info);
    }
  }
}

/* Whether the command line asks to observe (--observe, before any "--"). */
static int wants_observe(int argc, char **argv) {
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
    if (strcmp(argv[i], "--observe") == 0 || strncmp(argv[i], "--observe=", 10) == 0)
      return 1;
  return 0;
}

int cmd_elect(int argc, char **argv) {
  if (wants_observe(argc, argv))
    return cmd_elect_observe(argc, argv);
  hold_opts_t o;
  fdset_t inherited = {0};
  redlock_options_t *opts = NULL;
  redlock_t *client = NULL;
  redlock_election_t *election = NULL;
  int status = hold_prepare(&HOLD_ELECT, argc, argv, &o, &inherited, &opts);
  if (status == 0)
    status = hold_open(&client, opts);
  if (status == 0) {
    int rc = o.max_hold_ms != 0 ? redlock_elect_bounded(client, o.resource, (uint32_t)o.ttl_ms,
                                                        (uint32_t)o.max_hold_ms, elect_elected_cb,
                                                        elect_lost_cb, NULL, &election)
                                : redlock_elect(client, o.resource, (uint32_t)o.ttl_ms,
                                                elect_elected_cb, elect_lost_cb, NULL, &election);
    if (rc != 0) {
      err_msg("cannot campaign for '%s': %s", o.resource, redlock_strerror(rc));
      status = rc == REDLOCK_EINVAL ? EXIT_USAGE : EXIT_INTERNAL;
    }
  }
  if (status == 0) {
    info_msg("campaigning for '%s'", o.resource);
    status = elect_loop(&o, &inherited);
  }
  if (election != NULL)
    redlock_resign(client, election); /* hands over at once (close would too, later) */
  redlock_close(client);
  redlock_options_free(opts);
  nodes_free(&o.conn.nodes);
  free(inherited.fds);
  return status;
}
