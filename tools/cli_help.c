/* cli_help.c: the --help texts of the `redlock` tool: an overview for
 * `redlock --help`, and one text per subcommand for `redlock SUBCOMMAND
 * --help`, so that each shows only the options it takes.  The full manual
 * is redlock(1), which the packages install. */
#include <stdio.h>
#include <string.h>

#include "cli_common.h"

static const char OVERVIEW[] =
    "Usage: redlock run [OPTIONS] RESOURCE [--] COMMAND [ARGS...]\n"
    "       redlock run [OPTIONS] RESOURCE -c 'SHELL COMMAND'\n"
    "       redlock elect [OPTIONS] NAME [--] COMMAND [ARGS...]\n"
    "       redlock elect --observe NAME [--json] [-w DURATION] [OPTIONS]\n"
    "       redlock status [OPTIONS] RESOURCE\n"
    "       redlock revoke [OPTIONS] RESOURCE\n"
    "       redlock doctor [OPTIONS] [URI...]\n"
    "       redlock --help | --version\n"
    "\n"
    "Like flock(1) across machines: a Redlock lock over N independent Redis masters\n"
    "(held when a majority, N/2 + 1, accepted it).\n"
    "\n"
    "  run      take the lock on RESOURCE and run COMMAND while holding it\n"
    "  elect    campaign for leadership of NAME and run COMMAND while leader\n"
    "           (--observe NAME: print who leads NAME as it changes)\n"
    "  status   show RESOURCE's keys on every master, and who holds it\n"
    "  revoke   take the lock on RESOURCE back from whoever holds it\n"
    "  doctor   say whether each master can vote, and why not\n"
    "\n"
    "'redlock SUBCOMMAND --help' (or 'redlock help SUBCOMMAND') lists a subcommand's\n"
    "options; the manual: man redlock.\n";

/* The connection options: every subcommand's. */
static const char CONN_HELP[] =
    "Connection options (every subcommand):\n"
    "  -N, --node URI           a Redis master; repeat for each (usually 3 or 5):\n"
    "                           redis://[[user]:password@]host[:port][/db],\n"
    "                           rediss://... (TLS) or unix:///path/to/socket;\n"
    "                           redis-sentinel://HOST:PORT[,...]/MASTER-NAME,\n"
    "                           redis-cluster://HOST:PORT[,...] (one vote, from\n"
    "                           the primary of the key's slot), rediss-sentinel://,\n"
    "                           rediss-cluster:// (TLS).  Without --node, the\n"
    "                           comma-separated list in REDLOCK_NODES is used\n"
    "  -p, --key-prefix PREFIX  Redis key = PREFIX + RESOURCE (default: none)\n"
    "      --owner LABEL        an owner label in the lock's value, readable by\n"
    "                           anyone (never a secret): 1..64 printable ASCII\n"
    "                           bytes without '~'; %h the host name, %p the pid\n"
    "                           (env REDLOCK_OWNER; default %h:%p; \"\": none)\n"
    "      --tls-ca PATH        CA certificates (PEM file, or hashed directory)\n"
    "      --tls-cert FILE      client certificate (PEM); with --tls-key\n"
    "      --tls-key FILE       the client certificate's private key (PEM)\n"
    "      --tls-server-name NAME  name the masters' certificates must carry\n"
    "      --tls-insecure       check neither the certificate chain nor the name\n"
    "      --allow-discovered PATTERN  connect only to discovered hosts (named by a\n"
    "                           sentinel or a cluster node) that match a PATTERN\n"
    "                           (glob; repeatable; env REDLOCK_ALLOW_DISCOVERED,\n"
    "                           comma-separated)\n"
    "                           (environment: REDLOCK_TLS_CA, REDLOCK_TLS_CERT,\n"
    "                           REDLOCK_TLS_KEY, REDLOCK_TLS_SERVER_NAME,\n"
    "                           REDLOCK_TLS_INSECURE=1; options take precedence)\n"
    "  -q, --quiet              no messages on stderr (usage errors excepted)\n"
    "  -v, --verbose            progress and the library's log; twice for debug\n"
    "  -h, --help               this help\n"
    "  -V, --version            the library's version\n";

static const char DURATIONS[] =
    "Durations: a number with a unit, 250ms, 1.5s, 2m, 1h; a bare number is in\n"
    "milliseconds.\n";
static const char RUN_DURATIONS[] =
    "Durations: a number with a unit, 250ms, 1.5s, 2m, 1h; a bare number is in\n"
    "milliseconds, except for -w/--wait, where it is in seconds as in flock(1).\n";

static const char HOLD_HELP[] =
    "  -t, --ttl DURATION       lock TTL, renewed while COMMAND runs (default 30s for\n"
    "                           run, 10s for elect); above 60s, it raises the max\n"
    "                           TTL to match unless --max-ttl is given\n"
    "  -f, --fence-env NAME     environment variable for the fencing token\n"
    "                           (default REDLOCK_FENCE)\n"
    "      --no-quarantine      count the votes of freshly (re)started or promoted\n"
    "                           masters at once\n"
    "      --max-ttl DURATION   largest allowed TTL, also the quarantine length\n"
    "                           (default 60s, or --ttl when larger)\n"
    "  -g, --grace DURATION     after a lost lock, SIGKILL COMMAND this long after\n"
    "                           SIGTERM (default 5s)\n"
    "  -G, --process-group      run COMMAND in its own process group\n"
    "      --connect-timeout DURATION  connect + handshake bound per master (1s)\n"
    "      --request-timeout DURATION  bound on each round of requests (100ms)\n"
    "      --max-hold DURATION  release the lock (end the term) this long after it\n"
    "                           was taken, even while COMMAND runs: COMMAND gets\n"
    "                           SIGTERM as after a loss (run then exits with 124)\n";

static const char RUN_HELP[] =
    "Usage: redlock run [OPTIONS] RESOURCE [--] COMMAND [ARGS...]\n"
    "       redlock run [OPTIONS] RESOURCE -c 'SHELL COMMAND'\n"
    "\n"
    "Take the lock on RESOURCE, run COMMAND with the fencing token in its\n"
    "environment (REDLOCK_FENCE, REDLOCK_RESOURCE, REDLOCK_VALUE), keep the lock\n"
    "alive while COMMAND runs, release it when COMMAND exits, and exit with\n"
    "COMMAND's status.  If the lock is lost, COMMAND gets SIGTERM, then SIGKILL\n"
    "after --grace, and redlock exits with 71.\n"
    "\n"
    "Options of run (as flock(1) where they meet):\n"
    "  -n, --nonblock           one attempt: fail at once when the lock is busy\n"
    "                           (the default)\n"
    "  -w, --wait SECONDS       wait up to SECONDS for the lock (fractions and units\n"
    "                           allowed: 1.5, 250ms, 2m); every 5 s of the wait a\n"
    "                           line on stderr when it is a terminal\n"
    "  -E, --conflict-exit-code CODE  exit status (0..255) when the lock is busy or\n"
    "                           the wait ran out (default 75); COMMAND does not run\n"
    "  -c, --command 'COMMAND'  run COMMAND through 'sh -c' (instead of ARGS)\n"
    "  -s, --shared             take a read hold of the read-write lock RESOURCE:\n"
    "                           any number of -s runs at once, none with -x\n"
    "  -x, --exclusive          take the write hold of the read-write lock RESOURCE\n"
    "                           (excludes -s and -x runs; without -s or -x run\n"
    "                           takes a plain lock, which excludes plain runs only)\n"
    "      --metrics-file PATH  when run ends, write the client's stats to PATH\n"
    "      --metrics-format F   prometheus (default) or json\n";

static const char ELECT_HELP[] =
    "Usage: redlock elect [OPTIONS] NAME [--] COMMAND [ARGS...]\n"
    "\n"
    "Campaign for leadership of NAME and run COMMAND while leader, with the term\n"
    "(a fencing token) in REDLOCK_TERM and REDLOCK_FENCE.  If leadership is lost,\n"
    "COMMAND gets SIGTERM, then SIGKILL after --grace, and redlock campaigns again.\n"
    "When COMMAND exits by itself, redlock resigns and exits with its status.\n"
    "\n"
    "With --observe NAME, campaign for nothing: print who leads NAME, one line\n"
    "per change as it happens ('leader LABEL term N ttl MSms', 'none',\n"
    "'unknown'), until SIGINT/SIGTERM or the --wait ends (exit 0).\n"
    "      --observe NAME       follow who leads NAME (no COMMAND)\n"
    "      --json               with --observe: one JSON object per line\n"
    "  -w, --wait DURATION      with --observe: stop after DURATION\n"
    "      --poll DURATION      with --observe: longest time between two reads\n"
    "                           when nothing is announced (default: retry delay)\n"
    "\n"
    "Options of elect:\n";

static const char STATUS_HELP[] =
    "Usage: redlock status [OPTIONS] RESOURCE\n"
    "\n"
    "Show, per master, whether it answers, the value holding the key, its PTTL,\n"
    "the fence counter, the master's uptime, its path (scripts, both,\n"
    "script-free commands, none: how locks are released there) and its\n"
    "quarantine; then the library's view: held by a quorum or not, whether the\n"
    "masters agree, the holder's owner label, its TTL range and the fence.\n"
    "\n"
    "Options of status:\n"
    "      --timeout DURATION   connect and reply timeout per master (default 1s)\n"
    "      --json               one JSON object instead of the table (the view:\n"
    "                           its \"inspect\" field)\n"
    "      --kind KIND          the view of a lock (default), semaphore, rwlock\n"
    "                           or election named RESOURCE\n"
    "      --no-quarantine, --max-ttl DURATION  judge the quarantines as run would\n";

static const char REVOKE_HELP[] =
    "Usage: redlock revoke [OPTIONS] RESOURCE\n"
    "\n"
    "End the current hold of the lock (or election) RESOURCE on a quorum,\n"
    "whoever holds it, and print the fence it raised: with fencing, the key's\n"
    "counter is raised above the holder's token and the key deleted (tell your\n"
    "store the fence: it then refuses the old holder); without, the key keeps\n"
    "its remaining TTL under the revoker's value (fence 0).  The holder's next\n"
    "extension fails: its `redlock run` ends COMMAND and exits 71.\n"
    "\n"
    "Options of revoke:\n"
    "      --timeout DURATION   connect and reply timeout per master (default 1s)\n";

static const char DOCTOR_HELP[] =
    "Usage: redlock doctor [OPTIONS] [URI...]\n"
    "\n"
    "For each voter (each URI, else --node or REDLOCK_NODES): what it is and\n"
    "whether it can vote with the options its URI gives.  One line per check:\n"
    "ok, warn, FAIL or skip, and why.\n"
    "\n"
    "Options of doctor (before the URIs; -p names the doctor's own key prefix):\n"
    "      --timeout DURATION   connect and reply timeout per server (default 1s)\n"
    "      --clock-ms DURATION  interval of the clock-rate measure (default 1s;\n"
    "                           0: not measured)\n"
    "      --json               one JSON object instead of the table\n"
    "      --no-quarantine, --max-ttl DURATION  judge the quarantines as run would\n";

static const char EXIT_RUN[] =
    "Exit status: COMMAND's (128+N if signal N killed it), or 64 usage error,\n"
    "69 no quorum (too few masters answered or voted, with or without --wait),\n"
    "70 internal error, 71 lock lost while COMMAND ran, 75 busy: held by another\n"
    "or --wait ran out (-E CODE), 126 COMMAND not executable, 127 not found,\n"
    "128+N redlock got signal N while waiting.\n";

static const char EXIT_ELECT[] =
    "Exit status: COMMAND's, or 64, 70, 126, 127 as for run, or 128+N when\n"
    "signal N arrived while campaigning.\n";

static const char EXIT_STATUS[] =
    "Exit status: 0 when a quorum of masters answered, 69 otherwise, 64 usage.\n";

static const char EXIT_REVOKE[] =
    "Exit status: 0 revoked on a quorum, 69 too few masters answered (or ran\n"
    "no Lua), 70 internal error, 64 usage.\n";

static const char EXIT_DOCTOR[] =
    "Exit status: 0 every voter can vote now, 1 one cannot, 2 all can but some only\n"
    "once their quarantine ends, 64 usage.\n";

static const char QUARANTINE[] =
    "Quarantines: a master whose uptime is below the max TTL (restarted: it may\n"
    "have forgotten locks) or that was promoted does not vote until max TTL has\n"
    "passed; fresh masters therefore give \"no quorum\" for up to a minute.  Wait,\n"
    "or use --no-quarantine (only if no lock can have been held on them before),\n"
    "or a smaller --max-ttl.\n\n";

static const char SEE_ALSO[] = "\nThe manual: man redlock.\n";

void print_help(const char *cmd) {
  if (cmd == NULL) {
    fputs(OVERVIEW, stdout);
    return;
  }
  if (strcmp(cmd, "run") == 0) {
    fputs(RUN_HELP, stdout);
    fputs(HOLD_HELP, stdout);
    fputs("\n", stdout);
    fputs(CONN_HELP, stdout);
    fputs("\n", stdout);
    fputs(QUARANTINE, stdout);
    fputs(RUN_DURATIONS, stdout);
    fputs(EXIT_RUN, stdout);
  } else if (strcmp(cmd, "elect") == 0) {
    fputs(ELECT_HELP, stdout);
    fputs(HOLD_HELP, stdout);
    fputs("\n", stdout);
    fputs(CONN_HELP, stdout);
    fputs("\n", stdout);
    fputs(DURATIONS, stdout);
    fputs(EXIT_ELECT, stdout);
  } else if (strcmp(cmd, "status") == 0) {
    fputs(STATUS_HELP, stdout);
    fputs("\n", stdout);
    fputs(CONN_HELP, stdout);
    fputs("\n", stdout);
    fputs(DURATIONS, stdout);
    fputs(EXIT_STATUS, stdout);
  } else if (strcmp(cmd, "revoke") == 0) {
    fputs(REVOKE_HELP, stdout);
    fputs("\n", stdout);
    fputs(CONN_HELP, stdout);
    fputs("\n", stdout);
    fputs(DURATIONS, stdout);
    fputs(EXIT_REVOKE, stdout);
  } else {
    fputs(DOCTOR_HELP, stdout);
    fputs("\n", stdout);
    fputs(CONN_HELP, stdout);
    fputs("\n", stdout);
    fputs(DURATIONS, stdout);
    fputs(EXIT_DOCTOR, stdout);
  }
  fputs(SEE_ALSO, stdout);
}
