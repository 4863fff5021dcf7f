/* cli_observe.c: `redlock elect --observe NAME [OPTIONS]` (cmd_elect hands
 * it over when --observe is given).
 *
 * Follows who leads the election NAME without campaigning
 * (redlock_election_observe) and prints one line per change as the library
 * reports it: "leader LABEL term N ttl MSms" ("-" for a leader without a
 * label), "none", "unknown"; with --json one JSON object per line.  Runs
 * until SIGINT or SIGTERM, or, with -w/--wait, that long; exits 0 then
 * (128 + the signal for the other signals run and elect forward).
 * The lines are printed from the library's loop thread (on_change), each
 * whole and flushed; the main thread only waits for a signal or the end of
 * the wait.  Exit status: 0, 64 usage, 70 an internal error. */
#define _GNU_SOURCE /* getopt_long */

#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_admin.h"
#include "cli_child.h"
#include "cli_common.h"
#include "cli_term.h"

typedef struct {
  conn_opts_t conn;
  const char *name;
  uint64_t wait_ms; /* 0: until a signal */
  uint64_t poll_ms; /* 0: the library's default (the retry delay) */
  int json;
} observe_opts_t;

static void print_view(const redlock_leader_t *v, int json) {
  if (json) {
    static const char *const states[] = {[REDLOCK_LEADER_NONE] = "none",
                                         [REDLOCK_LEADER_HELD] = "held",
                                         [REDLOCK_LEADER_UNKNOWN] = "unknown"};
    printf("{\"state\":\"%s\",\"owner\":", states[v->state]);
    if (v->state == REDLOCK_LEADER_HELD) {
      json_str(v->owner);
      printf(",\"term\":%" PRIu64 ",\"ttl_ms\":%" PRId64 "}\n", v->term, v->ttl_ms);
    } else {
      printf("null,\"term\":null,\"ttl_ms\":null}\n");
    }
  } else if (v->state == REDLOCK_LEADER_HELD) {
    char label[4 * REDLOCK_MAX_OWNER + 1];
    printf("leader %s term %" PRIu64 " ttl %" PRId64 "ms\n",
           v->owner[0] != '\0' ? cli_term_str(v->owner, label, sizeof label) : "-", v->term,
           v->ttl_ms);
  } else {
    puts(v->state == REDLOCK_LEADER_NONE ? "none" : "unknown");
  }
  fflush(stdout);
}

static void on_change(redlock_observer_t *obs, const redlock_leader_t *view, void *arg) {
  (void)obs;
  print_view(view, *(const int *)arg);
}

static int take_observe_option(void *ctx, int opt, const char *arg) {
  observe_opts_t *o = ctx;
  switch (opt) {
  case OPT_OBSERVE:
    o->name = arg;
    return 0;
  case OPT_JSON:
    o->json = 1;
    return 0;
  case 'w':
    if (parse_duration(arg, 1000, 1, UINT32_MAX, &o->wait_ms) != 0)
      return usage_error("--wait: expected a duration (1.5, 250ms, 2m), got '%s'", arg);
    return 0;
  case OPT_POLL:
    if (parse_duration(arg, 1000, 1, UINT32_MAX, &o->poll_ms) != 0)
      return usage_error("--poll: expected a duration (1.5, 250ms, 2m), got '%s'", arg);
    return 0;
  default:
    return OPT_NOT_MINE;
  }
}

int cmd_elect_observe(int argc, char **argv) {
  observe_opts_t o = {0};
  static const struct option longs[] = {{"observe", required_argument, NULL, OPT_OBSERVE},
                                        {"json", no_argument, NULL, OPT_JSON},
                                        {"wait", required_argument, NULL, 'w'},
                                        {"poll", required_argument, NULL, OPT_POLL},
                                        {NULL, 0, NULL, 0}};
  static const struct option *const tables[] = {longs, NULL};
  const cmd_options_t opts = {
      .shorts = "w:", .longs = tables, .take = take_observe_option, .ctx = &o};
  int status = parse_options(argc, argv, &o.conn, &opts);
  if (status == 0 && o.name == NULL)
    status = usage_error("elect --observe: missing NAME");
  if (status == 0 && optind < argc)
    status = usage_error("elect --observe: unexpected argument '%s'", argv[optind]);
  if (status == 0)
    status = conn_finish(&o.conn, o.name);
  /* Before the library's thread exists: it inherits the blocked signals. */
  fdset_t inherited = {0};
  if (status == 0)
    status = child_setup(&inherited);
  redlock_t *client = NULL;
  if (status == 0)
    status = admin_open(&o.conn, DEFAULT_STATUS_TIMEOUT_MS, &client);
  redlock_observer_t *obs = NULL;
  if (status == 0) {
    int rc =
        redlock_election_observe(client, o.name, (uint32_t)o.poll_ms, on_change, &o.json, &obs);
    if (rc != 0) {
      err_msg("cannot observe '%s': %s", o.name, redlock_strerror(rc));
      status = rc == REDLOCK_EINVAL ? EXIT_USAGE : EXIT_INTERNAL;
    }
  }
  if (status == 0) {
    info_msg("observing '%s'", o.name);
    uint64_t end = o.wait_ms != 0 ? now_ms() + o.wait_ms : 0;
    for (;;) {
      int64_t timeout = -1;
      if (end != 0) {
        uint64_t now = now_ms();
        if (now >= end)
          break;
        timeout = (int64_t)(end - now);
      }
      siginfo_t info;
      int sig = wait_signal(timeout, &info);
      if (sig > 0 && is_forwarded(sig)) {
        info_msg("got %s; done observing '%s'", sig_name(sig), o.name);
        if (sig != SIGINT && sig != SIGTERM)
          status = 128 + sig; /* as a shell says for a command that signal ended */
        break;
      }
    }
    redlock_observe_stop(client, obs); /* no line after this */
  }
  redlock_close(client);
  nodes_free(&o.conn.nodes);
  free(inherited.fds);
  return status < 0 ? -1 : status;
}
