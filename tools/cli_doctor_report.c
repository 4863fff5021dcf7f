/* cli_doctor_report.c: what `redlock doctor` found, as a table a person
 * reads at a glance (one block per voter: "VOTER label: can vote", then one
 * line per check) or as one JSON object (docs/cli.md gives its fields).
 * Both say the same; the exit status is theirs. */
#define _GNU_SOURCE

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli_doctor.h"

dr_check_t *dr_add(dr_voter_t *v, const char *name, dr_status_t status, const char *fmt, ...) {
  if (v->n_checks == DR_MAX_CHECKS) /* a programming error: the last one is overwritten */
    v->n_checks--;
  dr_check_t *c = &v->checks[v->n_checks++];
  c->name = name;
  c->status = status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->detail, sizeof c->detail, fmt, ap);
  va_end(ap);
  return c;
}

int dr_can_vote(const dr_voter_t *v) {
  for (size_t i = 0; i < v->n_checks; i++)
    if (v->checks[i].status == DR_FAIL)
      return 0;
  return 1;
}

static const char *status_word(dr_status_t s, int json) {
  switch (s) {
  case DR_OK:
    return "ok";
  case DR_WARN:
    return "warn";
  case DR_FAIL:
    return json ? "fail" : "FAIL";
  default:
    return "skip";
  }
}

static size_t count_voting(const dr_voter_t *voters, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += (size_t)dr_can_vote(&voters[i]);
  return k;
}

int dr_print_table(const dr_voter_t *voters, size_t n) {
  int wname = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < voters[i].n_checks; j++)
      if ((int)strlen(voters[i].checks[j].name) > wname)
        wname = (int)strlen(voters[i].checks[j].name);
  for (size_t i = 0; i < n; i++) {
    const dr_voter_t *v = &voters[i];
    printf("%sVOTER %s: %s\n", i ? "\n" : "", v->addr->label,
           dr_can_vote(v) ? "can vote" : "cannot vote");
    for (size_t j = 0; j < v->n_checks; j++) {
      const dr_check_t *c = &v->checks[j];
      printf("  %-4s  %-*s  %s\n", status_word(c->status, 0), wname, c->name, c->detail);
    }
  }
  size_t voting = count_voting(voters, n);
  size_t quorum = n / 2 + 1;
  if (voting == n)
    printf("\n%s %zu voter%s can vote\n", n == 1 ? "the" : "all", n, n == 1 ? "" : "s");
  else
    printf("\n%zu of %zu voters can vote (a quorum is %zu)\n", voting, n, quorum);
  return voting == n ? 0 : EXIT_CANNOT_VOTE;
}

static void json_opt_str(const char *s) {
  if (s[0] != '\0')
    json_str(s);
  else
    fputs("null", stdout);
}

int dr_print_json(const dr_voter_t *voters, size_t n) {
  static const char *const kinds[] = {"standalone", "sentinel", "cluster"};
  fputs("{\"voters\":[", stdout);
  for (size_t i = 0; i < n; i++) {
    const dr_voter_t *v = &voters[i];
    fputs(i ? ",{\"uri_label\":" : "{\"uri_label\":", stdout);
    json_str(v->addr->label);
    unsigned kind = (unsigned)v->addr->voter;
    printf(",\"kind\":\"%s\",\"can_vote\":%s,\"address\":",
           kind < sizeof kinds / sizeof kinds[0] ? kinds[kind] : "unknown",
           dr_can_vote(v) ? "true" : "false");
    json_opt_str(v->address);
    fputs(",\"server\":", stdout);
    json_opt_str(v->server);
    fputs(",\"version\":", stdout);
    json_opt_str(v->version);
    fputs(",\"role\":", stdout);
    json_opt_str(v->role);
    if (v->replicas >= 0)
      printf(",\"replicas\":%ld", v->replicas);
    else
      fputs(",\"replicas\":null", stdout);
    if (v->rtt_us >= 0)
      printf(",\"rtt_us\":%lld", v->rtt_us);
    else
      fputs(",\"rtt_us\":null", stdout);
    if (v->has_drift)
      printf(",\"clock_drift_ppm\":%.1f", v->drift_ppm);
    else
      fputs(",\"clock_drift_ppm\":null", stdout);
    fputs(",\"checks\":[", stdout);
    for (size_t j = 0; j < v->n_checks; j++) {
      const dr_check_t *c = &v->checks[j];
      fputs(j ? ",{\"name\":" : "{\"name\":", stdout);
      json_str(c->name);
      printf(",\"status\":\"%s\",\"detail\":", status_word(c->status, 1));
      json_str(c->detail);
      fputs("}", stdout);
    }
    fputs("]}", stdout);
  }
  size_t voting = count_voting(voters, n);
  printf("],\"all_can_vote\":%s}\n", voting == n ? "true" : "false");
  return voting == n ? 0 : EXIT_CANNOT_VOTE;
}
