/* cli_doctor_report.c: what `redlock doctor` found, as a table a person
 * reads at a glance (one block per voter: "VOTER label: can vote", then one
 * line per check; a cluster voter's primaries' lines after its own, each
 * naming its primary) or as one JSON object (docs/cli.md gives its
 * fields).
 * Both say the same; the exit status is theirs. */
#define _GNU_SOURCE

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli_doctor.h"
#include "cli_term.h"

dr_check_t *dr_add(dr_voter_t *v, const char *name, dr_status_t status, const char *fmt, ...) {
  if (v->n_checks == DR_MAX_CHECKS) /* a programming error: the last one is overwritten */
    v->n_checks--;
  dr_check_t *c = &v->checks[v->n_checks++];
  c->name = name;
  c->status = status;
  char raw[sizeof c->detail];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(raw, sizeof raw, fmt, ap);
  va_end(ap);
  /* Details quote servers (replies, user names, INFO fields): whatever a
   * check forgot to escape, none reaches the terminal raw. */
  cli_term_escape(raw, strlen(raw), c->detail, sizeof c->detail);
  return c;
}

/* A cluster voter cannot vote when one of its primaries cannot either: the
 * locks whose keys hash to that primary's slots would get no vote. */
int dr_can_vote(const dr_voter_t *v) {
  for (size_t i = 0; i < v->n_checks; i++)
    if (v->checks[i].status == DR_FAIL)
      return 0;
  for (size_t i = 0; i < v->n_primaries; i++)
    if (!dr_can_vote(&v->primaries[i]))
      return 0;
  return 1;
}

/* A voter that can vote without running scripts on one of its masters:
 * what needs Lua (semaphores, read-write locks, multi-resource locks) is
 * refused there. */
static int dr_limited(const dr_voter_t *v) {
  if (v->limited)
    return 1;
  for (size_t i = 0; i < v->n_primaries; i++)
    if (dr_limited(&v->primaries[i]))
      return 1;
  return 0;
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

/* Voters that can vote, but not for what needs Lua. */
static size_t count_limited(const dr_voter_t *voters, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += (size_t)(dr_can_vote(&voters[i]) && dr_limited(&voters[i]));
  return k;
}

/* Voters that can vote, but only once their quarantine ends. */
static size_t count_quarantined(const dr_voter_t *voters, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += (size_t)(dr_can_vote(&voters[i]) && voters[i].quarantine[0] != '\0');
  return k;
}

/* docs/cli.md: 1 when a voter cannot vote, 2 when every voter can but some
 * only once their quarantine ends, 0 when all can now. */
static int exit_status(size_t voting, size_t later, size_t n) {
  return voting < n ? EXIT_CANNOT_VOTE : later > 0 ? EXIT_QUARANTINED : 0;
}

/* The widths of the name column: a check's name, or for a primary's check
 * "HOST:PORT NAME" (the address padded to waddr). */
static void widths(const dr_voter_t *voters, size_t n, int *wname, int *waddr) {
  for (size_t i = 0; i < n; i++) {
    const dr_voter_t *v = &voters[i];
    for (size_t j = 0; j < v->n_checks; j++)
      if ((int)strlen(v->checks[j].name) > *wname)
        *wname = (int)strlen(v->checks[j].name);
    for (size_t k = 0; k < v->n_primaries; k++) {
      if ((int)strlen(v->primaries[k].address) > *waddr)
        *waddr = (int)strlen(v->primaries[k].address);
      int inner = 0, unused = 0;
      widths(&v->primaries[k], 1, &inner, &unused);
      if (inner > *wname)
        *wname = inner;
    }
  }
}

static void print_check(const dr_check_t *c, const char *primary, int waddr, int wname) {
  if (primary == NULL) {
    printf("  %-4s  %-*s  %s\n", status_word(c->status, 0), waddr ? waddr + 1 + wname : wname,
           c->name, c->detail);
    return;
  }
  printf("  %-4s  %-*s %-*s  %s\n", status_word(c->status, 0), waddr, primary, wname, c->name,
         c->detail);
}

int dr_print_table(const dr_voter_t *voters, size_t n) {
  int wname = 0, waddr = 0;
  widths(voters, n, &wname, &waddr);
  for (size_t i = 0; i < n; i++) {
    const dr_voter_t *v = &voters[i];
    if (dr_can_vote(v) && v->quarantine[0])
      printf("%sVOTER %s: can vote once its quarantine ends (%s)\n", i ? "\n" : "", v->addr->label,
             v->quarantine);
    else if (dr_can_vote(v) && dr_limited(v))
      printf("%sVOTER %s: can vote, with limits (no Lua: plain and fenced locks of one resource "
             "only)\n",
             i ? "\n" : "", v->addr->label);
    else
      printf("%sVOTER %s: %s\n", i ? "\n" : "", v->addr->label,
             dr_can_vote(v) ? "can vote" : "cannot vote");
    for (size_t j = 0; j < v->n_checks; j++)
      print_check(&v->checks[j], NULL, waddr, wname);
    /* each primary's lines name it */
    for (size_t k = 0; k < v->n_primaries; k++) {
      const dr_voter_t *p = &v->primaries[k];
      for (size_t j = 0; j < p->n_checks; j++)
        print_check(&p->checks[j], p->address, waddr, wname);
    }
  }
  size_t voting = count_voting(voters, n), later = count_quarantined(voters, n);
  size_t quorum = n / 2 + 1;
  if (voting == n)
    printf("\n%s %zu voter%s can vote", n == 1 ? "the" : "all", n, n == 1 ? "" : "s");
  else
    printf("\n%zu of %zu voters can vote (a quorum is %zu)", voting, n, quorum);
  if (later > 0)
    printf("; %zu of them only once %s quarantine ends (%zu vote%s now)", later,
           later == 1 ? "its" : "their", voting - later, voting - later == 1 ? "s" : "");
  size_t limited = count_limited(voters, n);
  if (limited > 0)
    printf("; %zu of them with limits (no Lua: no vote there for semaphores, read-write locks and "
           "multi-resource locks%s)",
           limited,
           voting - limited < quorum ? ", and too few others for a quorum: those are refused "
                                       "(unsupported)"
                                     : "");
  printf("\n");
  return exit_status(voting, later, n);
}

static void json_opt_str(const char *s) {
  if (s[0] != '\0')
    json_str(s);
  else
    fputs("null", stdout);
}

/* The fields a voter's object and a primary's share, from "can_vote" to
 * "checks". */
static void json_report(const dr_voter_t *v) {
  printf("\"can_vote\":%s,\"can_vote_now\":%s,\"quarantine\":", dr_can_vote(v) ? "true" : "false",
         dr_can_vote(v) && !v->quarantine[0] ? "true" : "false");
  json_opt_str(v->quarantine);
  fputs(",\"address\":", stdout);
  json_opt_str(v->address);
  fputs(",\"server\":", stdout);
  json_opt_str(v->server);
  fputs(",\"version\":", stdout);
  json_opt_str(v->version);
  fputs(",\"role\":", stdout);
  json_opt_str(v->role);
  fputs(",\"path\":", stdout);
  json_opt_str(v->path);
  printf(",\"limited\":%s", dr_limited(v) ? "true" : "false");
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
  fputs("]", stdout);
}

int dr_print_json(const dr_voter_t *voters, size_t n) {
  static const char *const kinds[] = {"standalone", "sentinel", "cluster"};
  fputs("{\"voters\":[", stdout);
  for (size_t i = 0; i < n; i++) {
    const dr_voter_t *v = &voters[i];
    fputs(i ? ",{\"uri_label\":" : "{\"uri_label\":", stdout);
    json_str(v->addr->label);
    unsigned kind = (unsigned)v->addr->voter;
    printf(",\"kind\":\"%s\",", kind < sizeof kinds / sizeof kinds[0] ? kinds[kind] : "unknown");
    json_report(v);
    /* A cluster voter: the slots with a primary, and each primary's
     * report (null for the other kinds). */
    if (v->addr->voter != VOTER_KIND_CLUSTER) {
      fputs(",\"slots_covered\":null,\"primaries\":null}", stdout);
      continue;
    }
    if (v->slots_covered >= 0)
      printf(",\"slots_covered\":%ld,\"primaries\":[", v->slots_covered);
    else
      fputs(",\"slots_covered\":null,\"primaries\":[", stdout);
    for (size_t k = 0; k < v->n_primaries; k++) {
      const dr_voter_t *p = &v->primaries[k];
      printf("%s{\"slots\":%ld,\"ranges\":", k ? "," : "", p->slots);
      json_str(p->ranges);
      fputs(",", stdout);
      json_report(p);
      fputs("}", stdout);
    }
    fputs("]}", stdout);
  }
  size_t voting = count_voting(voters, n), later = count_quarantined(voters, n);
  printf("],\"all_can_vote\":%s,\"all_can_vote_now\":%s,\"limited_voters\":%zu}\n",
         voting == n ? "true" : "false", voting == n && later == 0 ? "true" : "false",
         count_limited(voters, n));
  return exit_status(voting, later, n);
}
