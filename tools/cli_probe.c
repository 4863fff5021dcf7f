/* cli_probe.c: one master over a plain synchronous hiredis connection
 * (see cli_probe.h).  `status` reports what it finds; `run` uses it to say
 * why a lock found no quorum.  It does not go through the library on
 * purpose: it must show a master's state even when the library would not
 * count it (down, quarantined, refusing our scripts). */
#define _GNU_SOURCE

#include "cli_probe.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "cli_conn.h"
#include "proto/keyname.h" /* the library's names, from the redlock_uri target */

/* A printable copy of s (len bytes): other bytes and '\\' as \xNN.  NULL
 * when out of memory. */
char *escape_value(const char *s, size_t len) {
  char *out = malloc(len * 4 + 1);
  if (out == NULL)
    return NULL;
  char *p = out;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      *p++ = (char)c;
    } else {
      sprintf(p, "\\x%02x", c);
      p += 4;
    }
  }
  *p = '\0';
  return out;
}

void probe_master(const node_addr_t *addr, const char *key, const char *fence_key,
                  uint64_t timeout_ms, master_report_t *rep) {
  memset(rep, 0, sizeof *rep);
  rep->pttl = -2;
  rep->uptime_s = -1;
  char why[1200];
  cli_sentinel_master_t found;
  int sentinel = addr->voter == VOTER_KIND_SENTINEL;
  if (addr->voter == VOTER_KIND_CLUSTER) { /* the subcommands refuse them first */
    snprintf(rep->state, sizeof rep->state, "error (cluster voters are not supported yet)");
    return;
  }
  if (sentinel) {
    if (cli_conn_ask_sentinels(addr, timeout_ms, &found, why, sizeof why) != 0) {
      snprintf(rep->state, sizeof rep->state, "down (%s)", why);
      return;
    }
    snprintf(rep->master, sizeof rep->master, "%s", found.addr);
    snprintf(rep->sentinel, sizeof rep->sentinel, "%s", found.sentinel);
    addr = &found.master;
  }
  cli_conn_t cc;
  int rc = cli_conn_open(&cc, addr, timeout_ms, why, sizeof why);
  if (rc != CLI_CONN_OK) {
    /* "error": the master answers, but refuses our credentials or db. */
    snprintf(rep->state, sizeof rep->state, "%s (%s)", rc == CLI_CONN_DOWN ? "down" : "error", why);
    cli_conn_close(&cc);
    return;
  }
  /* One round trip: the commands pipelined (ROLE only for a sentinel
   * voter, whose sentinels may lag behind a failover). */
  redisContext *c = cc.c;
  redisAppendCommand(c, "GET %s", key);
  redisAppendCommand(c, "PTTL %s", key);
  redisAppendCommand(c, "GET %s", fence_key);
  redisAppendCommand(c, "INFO server");
  int n = 4;
  if (sentinel) {
    redisAppendCommand(c, "ROLE");
    n = 5;
  }
  redisReply *replies[5] = {NULL, NULL, NULL, NULL, NULL};
  for (int i = 0; i < n; i++) {
    void *p = NULL;
    if (redisGetReply(c, &p) != REDIS_OK) {
      snprintf(rep->state, sizeof rep->state, "down (%s)", cli_conn_io_why(&cc));
      for (int j = 0; j < i; j++)
        freeReplyObject(replies[j]);
      cli_conn_close(&cc);
      return;
    }
    replies[i] = p;
  }
  rep->up = 1;
  snprintf(rep->state, sizeof rep->state, "up");
  if (replies[0]->type == REDIS_REPLY_STRING) {
    rep->value = escape_value(replies[0]->str, replies[0]->len);
  } else if (replies[0]->type == REDIS_REPLY_ERROR) {
    /* WRONGTYPE: the master answers, the key is not a lock.  NOAUTH, NOPERM
     * and the like: it does not answer for us. */
    int answers = strncmp(replies[0]->str, "WRONGTYPE", 9) == 0;
    rep->up = answers;
    snprintf(rep->state, sizeof rep->state, "%s (GET: %.*s)", answers ? "up" : "error",
             (int)replies[0]->len, replies[0]->str);
  }
  if (replies[1]->type == REDIS_REPLY_INTEGER)
    rep->pttl = replies[1]->integer;
  if (replies[2]->type == REDIS_REPLY_STRING)
    snprintf(rep->fence, sizeof rep->fence, "%.*s", (int)replies[2]->len, replies[2]->str);
  if (replies[3]->type == REDIS_REPLY_STRING) {
    const char *u = strstr(replies[3]->str, "uptime_in_seconds:");
    if (u != NULL) {
      long long secs = strtoll(u + strlen("uptime_in_seconds:"), NULL, 10);
      snprintf(rep->uptime, sizeof rep->uptime, "%llds", secs);
      rep->uptime_s = secs;
    }
  }
  if (sentinel && rep->up) {
    const redisReply *role = replies[4];
    if (role->type != REDIS_REPLY_ARRAY || role->elements < 1 ||
        role->element[0]->type != REDIS_REPLY_STRING ||
        strcmp(role->element[0]->str, "master") != 0) {
      char said[64] = "no answer";
      if (role->type == REDIS_REPLY_ARRAY && role->elements >= 1 &&
          role->element[0]->type == REDIS_REPLY_STRING)
        cli_printable(role->element[0]->str, role->element[0]->len, said, sizeof said);
      else if (role->type == REDIS_REPLY_ERROR)
        cli_printable(role->str, role->len, said, sizeof said);
      rep->up = 0;
      snprintf(rep->state, sizeof rep->state,
               "error (%s names it, but its ROLE is '%s', not master: it cannot vote)",
               rep->sentinel, said);
    }
  }
  for (int i = 0; i < n; i++)
    freeReplyObject(replies[i]);
  cli_conn_close(&cc);
}

int probe_keys(const char *prefix, const char *resource, char **key, char **fence_key) {
  size_t klen = (prefix != NULL ? strlen(prefix) : 0) + strlen(resource) + 1;
  size_t flen = klen + strlen(REDLOCK_FENCE_KEY_PREFIX) + KEYNAME_TAG_LEN;
  *key = malloc(klen);
  *fence_key = malloc(flen);
  if (*key == NULL || *fence_key == NULL) {
    free(*key);
    free(*fence_key);
    *key = *fence_key = NULL;
    return -1;
  }
  snprintf(*key, klen, "%s%s", prefix != NULL ? prefix : "", resource);
  keyname_build(*fence_key, REDLOCK_FENCE_KEY_PREFIX, strlen(REDLOCK_FENCE_KEY_PREFIX), *key,
                klen - 1, "", 0);
  return 0;
}
