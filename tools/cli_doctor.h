/* cli_doctor.h: `redlock doctor [OPTIONS] URI...`: for each voter, what it
 * is and whether it can vote with the options its URI gives, each check
 * with its verdict (ok, warn, FAIL, skip) and the reason.  What the files of
 * the subcommand share:
 *
 *   cli_doctor.c         the subcommand: options, voters (a sentinel voter's
 *                        master asked of its sentinels), the clock interval
 *   cli_doctor_cluster.c a cluster voter: its slot map read from a seed, the
 *                        map's coverage and cluster_state, and one master's
 *                        checks per primary
 *   cli_doctor_checks.c  the checks of one master, over one synchronous
 *                        connection (cli_conn.h)
 *   cli_doctor_acl.c     the table of every command the library sends, and
 *                        the ACL user's permission for each (ACL DRYRUN)
 *   cli_doctor_key.c     the names of the doctor's own key, counter and
 *                        channel
 *   cli_doctor_cmd.c     commands on one master's connection, INFO fields
 *   cli_doctor_report.c  the table a person reads, and the JSON object
 *
 * Calls go one way: cli_doctor.c calls the others; cli_doctor_cluster.c
 * calls the key's names, the commands and the report; the checks call the
 * ACL check, which calls the commands and the report; none calls back up.
 *
 * A voter can vote when none of its checks failed; warnings say what works
 * less well (woken waits fall back to polling, a drifting clock).  A voter
 * the library keeps in a quarantine (cli_quar.h) can vote once it ends. */
#ifndef REDLOCK_CLI_DOCTOR_H
#define REDLOCK_CLI_DOCTOR_H

#include <stddef.h>
#include <stdint.h>

#include "cli_common.h"
#include "cli_conn.h"
#include "proto/keyname.h" /* KEYNAME_TAG_LEN */

struct redisReply;

typedef enum { DR_OK = 0, DR_WARN, DR_FAIL, DR_SKIP } dr_status_t;

#define DR_MAX_CHECKS 32
#define DR_DETAIL_MAX 1024
#define DR_DEFAULT_CLOCK_MS 1000u
#define DR_MAX_CLOCK_MS 60000u
#define DR_DEFAULT_ACK_MS 100u /* WAIT / WAITAOF's timeout when the URI has no wait_ms= */
#define DR_PINGS 10            /* round trips measured; the median is reported */
#define DR_KEY_TTL_MS 10000u   /* the doctor's own keys expire even if left behind */
#define DR_KEY_PREFIX "redlock-doctor:"

typedef struct {
  const char *name; /* a static string: "connect", "role", ... */
  dr_status_t status;
  char detail[DR_DETAIL_MAX];
} dr_check_t;

/* One voter's report. */
typedef struct dr_voter {
  const node_addr_t *addr; /* its URI, parsed */
  char address[320];       /* the master checked ("host:port" or the path); "" when none */
  char server[16];         /* "redis" or "valkey"; "" when unknown */
  char version[32];
  char role[16];    /* "master", "replica", "sentinel"; "" when unknown */
  long replicas;    /* connected replicas; -1 when unknown */
  long long rtt_us; /* median round trip; -1 when not measured */
  double drift_ppm; /* our clock's rate against the server's, when has_drift */
  int has_drift;
  dr_check_t checks[DR_MAX_CHECKS];
  size_t n_checks;
  /* A cluster voter: the slots with a primary (-1 for the other kinds), and
   * one report per primary of its slot map (owned by the voter's
   * dr_cluster_t, cli_doctor_cluster.c; NULL when none).  A primary's own
   * report: the slots it owns (-1 otherwise) and their ranges. */
  long slots_covered;
  struct dr_voter *primaries;
  size_t n_primaries;
  long slots;
  char ranges[256];
  /* The quarantine the library keeps it in now ("restart quarantine: 41 s
   * left"), "" when none: it can vote once that ends. */
  char quarantine[160];
  /* How the library releases and extends there (caps.h's caps_path()), ""
   * when not learnt; limited: it runs no scripts, so what needs them
   * (semaphores, read-write locks, multi-resource locks) is refused there. */
  char path[32];
  int limited;
} dr_voter_t;

/* Room for the doctor's key: the prefix, then "redlock-doctor:" and 16 hex
 * digits. */
#define DR_KEY_SIZE (REDLOCK_MAX_PREFIX_LEN + 96)

/* What the checks of every voter share. */
typedef struct {
  const char *prefix;    /* --key-prefix, "" when none */
  uint64_t timeout_ms;   /* connecting and each reply */
  uint64_t clock_ms;     /* the clock-rate interval; 0: not measured */
  char key[DR_KEY_SIZE]; /* the doctor's key */
  /* its counter and channel, in its hash slot (keyname.h: braces added) */
  char fence_key[sizeof REDLOCK_FENCE_KEY_PREFIX + KEYNAME_TAG_LEN + DR_KEY_SIZE];
  char channel[sizeof REDLOCK_RELEASE_CHANNEL_PREFIX + KEYNAME_TAG_LEN + DR_KEY_SIZE];
  char value[48]; /* the value the doctor's writes hold */
  char hex[17];   /* the random part of the key and value */
} dr_settings_t;

/* ---- the doctor's key (cli_doctor_key.c) ----------------------------------------- */

/* Draws set's random part (hex) and names its key, counter, channel and
 * value from it (set->prefix already set). */
void dr_make_names(dr_settings_t *set);
/* Names the doctor's key PREFIX "redlock-doctor:" HEX SUFFIX, and its
 * counter and channel in its hash slot (a cluster primary's key gets a
 * suffix that puts it in one of the primary's slots). */
void dr_name_key(dr_settings_t *set, const char *suffix);

/* One master under check: the connection is kept open from the checks to
 * the clock's second sample, so that every voter's interval runs at once. */
typedef struct {
  dr_voter_t *v;
  const dr_settings_t *set;
  const node_addr_t *addr; /* the master's address and credentials */
  cli_conn_t cc;
  int up;        /* connected; cleared when the connection is lost */
  int stop;      /* not a master at all (a sentinel), or a discovered address not allowed:
                  * the other checks are moot */
  char *info[3]; /* INFO server, replication, cluster (NULL: refused) */
  int lua_ok;    /* every script loaded and EVALSHA works */
  /* What the library's handshake would learn (caps.h): SCRIPT LOAD's
   * answer, COMMAND INFO DELIFEQ DELEX and the version in INFO server.
   * no_lua: SCRIPT LOAD said the server runs no scripts (no_lua_why). */
  unsigned caps;
  int no_lua;
  char no_lua_why[160];
  char command_info_why[160]; /* COMMAND INFO's error, "" when it answered */
  int no_key;      /* a cluster primary with none of its slots fit for the doctor's key (a
                    * hash tag in --key-prefix): the checks that write it are skipped */
  int denied_info; /* INFO refused (the library's handshake fails) */
  /* The clock's first sample: our monotonic time halfway through TIME's
   * round trip, the server's TIME, and the round trip. */
  uint64_t t0_ns, rtt0_ns;
  int64_t server0_us;
  int has_t0;
} dr_master_t;

/* ---- the report (cli_doctor_report.c) -------------------------------------------- */

/* Appends a check; the detail is printf-formatted and cut to fit. */
__attribute__((format(printf, 4, 5))) dr_check_t *dr_add(dr_voter_t *v, const char *name,
                                                         dr_status_t status, const char *fmt, ...);
int dr_can_vote(const dr_voter_t *v);
/* Prints every voter's report.  Returns 0 when all can vote now,
 * EXIT_CANNOT_VOTE when one cannot, else EXIT_QUARANTINED (all can, some
 * only once their quarantine ends). */
int dr_print_table(const dr_voter_t *voters, size_t n);
int dr_print_json(const dr_voter_t *voters, size_t n);

/* ---- commands on one master's connection (cli_doctor_cmd.c) ------------------------- */

/* One command on m's connection.  NULL when the connection failed: m->up is
 * cleared and a FAIL "connection" check says why. */
struct redisReply *dr_command(dr_master_t *m, const char *fmt, ...);
struct redisReply *dr_command_argv(dr_master_t *m, int argc, const char **argv, const size_t *lens);
/* The value of `field:` in an INFO reply, into out; 0 when absent. */
int dr_info_field(const char *info, const char *field, char *out, size_t size);

/* ---- the checks of one master (cli_doctor_checks.c) ----------------------------------- */

/* Connects and runs every check but the clock's; leaves the connection open
 * (m->up) for dr_master_finish. */
void dr_master_check(dr_master_t *m);
/* The clock's second sample and its check, the clean-up, and closes. */
void dr_master_finish(dr_master_t *m);

/* ---- ACL (cli_doctor_acl.c) --------------------------------------------------------- */

/* The "acl" check: ACL DRYRUN of every command the library sends. */
void dr_check_acl(dr_master_t *m);

/* ---- a cluster voter (cli_doctor_cluster.c) ------------------------------------------ */

typedef struct dr_cluster dr_cluster_t;

/* Reads voter v's slot map from its seeds (any one that answers), adds the
 * slot-map, coverage and cluster-state checks, and makes one master to
 * check per primary (dr_cluster_masters), each with its own report in
 * v->primaries.  *out is NULL when out of memory (a FAIL check says so);
 * it owns v->primaries: free it after the report is printed. */
void dr_cluster_open(dr_voter_t *v, const node_addr_t *a, const dr_settings_t *set,
                     dr_cluster_t **out);
/* The masters to check, one per primary (n set to how many). */
dr_master_t *dr_cluster_masters(dr_cluster_t *cl, size_t *n);
/* After dr_master_check of a primary: its own view of the cluster (CLUSTER
 * INFO's cluster_state) while the connection is open. */
void dr_cluster_check_primary(dr_master_t *m);
void dr_cluster_free(dr_cluster_t *cl);

#endif
