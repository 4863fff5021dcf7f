/* api_metrics_http.c: examples/metrics_http.c scraped the way Prometheus
 * would, against N = 3 real masters.
 *
 *   api_metrics_http path/to/example-metrics-http [CHECKER DASHBOARD]
 *
 * Starts the example on a free loopback port, scrapes /metrics with curl
 * until its job locks have moved the counters and its leader lock is watched,
 * checks the text with `promtool check metrics` and /metrics.json with
 * python3 -m json.tool, checks a 404, then stops it with SIGTERM: it must exit
 * 0 and its leader lock must be released on every master.  promtool, curl or
 * python3 missing: that check is skipped with a SKIP line (scripts/deps.sh
 * installs all three).
 *
 * With CHECKER and DASHBOARD (the test docs_grafana_dashboard), the scrape
 * is also the list of metric names the Grafana dashboard may use:
 * `python3 CHECKER DASHBOARD SCRAPE` (tests/docs/check_dashboard.py) must
 * pass. */
#include "fixture.h"

#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

static const char *example_path;
static const char *dashboard_checker, *dashboard_path; /* NULL: no dashboard check */

static int have_program(const char *name) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
  return system(cmd) == 0;
}

static int sh(const char *cmd) {
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Reads a whole small file into a static buffer. */
static const char *slurp(const char *path) {
  static char buf[1 << 18];
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return "";
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static double sample(const char *text, const char *series) {
  size_t len = strlen(series);
  for (const char *p = text; p != NULL && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
    if (strncmp(p, series, len) == 0 && p[len] == ' ')
      return strtod(p + len + 1, NULL);
  return -1;
}

typedef struct {
  int port;
  char path[64];
} scrape_t;

/* Scrapes /metrics into s->path; 1 when the job counters moved and the
 * leader lock is watched. */
static int pred_scraped(void *arg) {
  scrape_t *s = arg;
  char cmd[256];
  snprintf(cmd, sizeof cmd, "curl -sf -o %s http://127.0.0.1:%d/metrics", s->path, s->port);
  if (sh(cmd) != 0)
    return 0;
  const char *text = slurp(s->path);
  return sample(text, "redlock_operations_total{op=\"acquire\",outcome=\"ok\"}") >= 3 &&
         sample(text, "redlock_operations_total{op=\"release\",outcome=\"ok\"}") >= 2 &&
         sample(text, "redlock_watched_locks") == 1;
}

static void test_scrape(void **state) {
  (void)state;
  if (!have_program("curl")) {
    /* The dashboard check has nothing to check without a scrape: in CI
     * (REDLOCK_REQUIRE_TOOLCHAINS=1, scripts/test.sh) that is a failure. */
    const char *require = getenv("REDLOCK_REQUIRE_TOOLCHAINS");
    if (dashboard_checker != NULL && require != NULL && strcmp(require, "1") == 0)
      fail_msg("curl not installed, and REDLOCK_REQUIRE_TOOLCHAINS=1: dashboard not checked");
    printf("SKIP: curl not installed (scripts/deps.sh installs it): metrics_http not scraped\n");
    return;
  }
  int out[2];
  assert_int_equal(pipe(out), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  char *argv[8] = {(char *)example_path, "--port", "0", "--no-quarantine"};
  for (size_t i = 0; i < fx_group->n; i++)
    argv[4 + i] = (char *)rh_server_uri(fx_group->servers[i]);
  argv[4 + fx_group->n] = NULL;
  pid_t pid;
  assert_int_equal(posix_spawn(&pid, example_path, &fa, NULL, argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  FILE *f = fdopen(out[0], "r");
  assert_non_null(f);
  char line[256] = "";
  int port = 0;
  if (fgets(line, sizeof line, f) == NULL ||
      sscanf(line, "listening on http://127.0.0.1:%d/metrics", &port) != 1) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    fail_msg("example-metrics-http did not start: '%s'", line);
  }
  fclose(f);

  scrape_t s = {port, ""};
  snprintf(s.path, sizeof s.path, "/tmp/api_metrics_http_%ld.prom", (long)getpid());
  int ok = rh_wait_until(pred_scraped, &s, 10000);
  if (!ok)
    fprintf(stderr, "last scrape:\n%s\n", slurp(s.path));
  if (ok && have_program("promtool")) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "promtool check metrics < %s", s.path);
    if (sh(cmd) != 0) {
      ok = 0;
      fprintf(stderr, "promtool rejected:\n%s\n", slurp(s.path));
    }
  } else if (ok) {
    printf("SKIP: promtool not installed (Debian package `prometheus`): /metrics not linted\n");
  }
  char cmd[1536];
  if (ok && dashboard_checker != NULL) {
    snprintf(cmd, sizeof cmd, "python3 '%s' '%s' '%s'", dashboard_checker, dashboard_path, s.path);
    if (sh(cmd) != 0) {
      ok = 0;
      fprintf(stderr, "the dashboard check failed (above), against this scrape:\n%s\n",
              slurp(s.path));
    }
  }
  if (ok && have_program("python3")) {
    snprintf(cmd, sizeof cmd,
             "curl -sf http://127.0.0.1:%d/metrics.json | python3 -m json.tool >/dev/null", port);
    ok = sh(cmd) == 0;
  }
  if (ok) {
    snprintf(cmd, sizeof cmd,
             "test \"$(curl -s -o /dev/null -w '%%{http_code}' http://127.0.0.1:%d/nope)\" = 404",
             port);
    ok = sh(cmd) == 0;
  }
  unlink(s.path);

  assert_int_equal(kill(pid, SIGTERM), 0);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(ok);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  /* Its orderly close released the leader lock everywhere. */
  assert_nil_everywhere(fx_group, "metrics_http:leader");
}

int main(int argc, char **argv) {
  if (argc != 2 && argc != 4) {
    fprintf(stderr, "usage: %s path/to/example-metrics-http [CHECKER DASHBOARD]\n", argv[0]);
    return 2;
  }
  example_path = argv[1];
  if (argc == 4) {
    dashboard_checker = argv[2];
    dashboard_path = argv[3];
  }
  fx_use_profile(&fx_profile_api);
  fx_watchdog(120);
  const struct CMUnitTest tests[] = {
      fx_group_test(test_scrape),
  };
  return cmocka_run_group_tests(tests, fx_group_setup_3, fx_group_teardown);
}
