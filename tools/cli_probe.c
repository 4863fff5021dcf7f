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
#include <sys/time.h>

#include "cli_common.h"
#include "tls.h" /* the probes' TLS connections, from the redlock_uri target */

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

static int reply_error(redisReply *r, char *why, size_t size, const char *what) {
  if (r == NULL)
    return -1;
  if (r->type == REDIS_REPLY_ERROR) {
    snprintf(why, size, "%s: %.*s", what, (int)r->len, r->str);
    return 1;
  }
  return 0;
}

/* The SSL_CTX of status's (and run's diagnostic) connections to rediss://
 * masters; NULL when none is listed.  A process-wide program global, not
 * library state. */
static tls_client_t *g_tls;

int tls_for_probes(const redlock_options_t *opts, const nodes_t *nodes) {
  int any = 0;
  for (size_t i = 0; i < nodes->n; i++)
    any |= nodes->addrs[i].tls;
  if (!any || g_tls != NULL)
    return 0;
  char why[384];
  if (tls_client_new(&g_tls, opts, why, sizeof why) != 0) {
    err_msg("TLS: %s", why);
    return EXIT_USAGE;
  }
  return 0;
}

void probe_master(const node_addr_t *addr, const char *key, const char *fence_key,
                  uint64_t timeout_ms, master_report_t *rep) {
  memset(rep, 0, sizeof *rep);
  rep->pttl = -2;
  rep->uptime_s = -1;
  struct timeval tv = {(time_t)(timeout_ms / 1000), (suseconds_t)(timeout_ms % 1000) * 1000};
  redisContext *c = addr->kind == NODE_ADDR_UNIX
                        ? redisConnectUnixWithTimeout(addr->path, tv)
                        : redisConnectWithTimeout(addr->host, addr->port, tv);
  if (c == NULL) {
    snprintf(rep->state, sizeof rep->state, "down (out of memory)");
    return;
  }
  if (c->err) {
    snprintf(rep->state, sizeof rep->state, "down (%s)", c->errstr);
    redisFree(c);
    return;
  }
  redisSetTimeout(c, tv);
  redisReply *r = NULL;
  char why[256], io_why[256];
  void *ssl = NULL;
  int got_reply = 0;
/* Why the connection failed: TLS's reason when it has one, else hiredis'. */
#define IO_WHY()                                                                                   \
  (ssl != NULL && tls_explain(ssl, !got_reply, c->errstr, io_why, sizeof io_why) ? io_why          \
                                                                                 : c->errstr)
  if (addr->tls) {
    /* The same checks as the library's connections (tls.c), done here
     * synchronously within the timeout set above. */
    if (g_tls == NULL) {
      snprintf(rep->state, sizeof rep->state, "down (TLS is not set up)");
      redisFree(c);
      return;
    }
    if ((ssl = tls_attach(g_tls, c, addr->host, why, sizeof why)) == NULL) {
      snprintf(rep->state, sizeof rep->state, "down (%s)", why);
      redisFree(c);
      return;
    }
  }
  /* AUTH, then SELECT, when the URI asks for them: each must succeed. */
  for (int step = 0; step < 2; step++) {
    const char *what = step == 0 ? "AUTH" : "SELECT";
    if (step == 0 ? addr->password == NULL : addr->db == 0)
      continue;
    if (step == 1)
      r = redisCommand(c, "SELECT %d", addr->db);
    else if (addr->user != NULL)
      r = redisCommand(c, "AUTH %s %s", addr->user, addr->password);
    else
      r = redisCommand(c, "AUTH %s", addr->password);
    if (reply_error(r, why, sizeof why, what) != 0) {
      snprintf(rep->state, sizeof rep->state, "%s (%s)", r ? "error" : "down", r ? why : IO_WHY());
      goto done;
    }
    got_reply = 1;
    freeReplyObject(r);
    r = NULL;
  }
  /* One round trip: the four commands pipelined. */
  redisAppendCommand(c, "GET %s", key);
  redisAppendCommand(c, "PTTL %s", key);
  redisAppendCommand(c, "GET %s", fence_key);
  redisAppendCommand(c, "INFO server");
  redisReply *replies[4] = {NULL, NULL, NULL, NULL};
  for (int i = 0; i < 4; i++) {
    void *p = NULL;
    if (redisGetReply(c, &p) != REDIS_OK) {
      snprintf(rep->state, sizeof rep->state, "down (%s)", IO_WHY());
      for (int j = 0; j < i; j++)
        freeReplyObject(replies[j]);
      goto done;
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
  for (int i = 0; i < 4; i++)
    freeReplyObject(replies[i]);
done:
#undef IO_WHY
  if (r != NULL)
    freeReplyObject(r);
  redisFree(c);
}

void tls_for_probes_free(void) {
  tls_client_free(g_tls);
  g_tls = NULL;
}

int probe_keys(const char *prefix, const char *resource, char **key, char **fence_key) {
  size_t klen = (prefix != NULL ? strlen(prefix) : 0) + strlen(resource) + 1;
  size_t flen = klen + strlen(REDLOCK_FENCE_KEY_PREFIX);
  *key = malloc(klen);
  *fence_key = malloc(flen);
  if (*key == NULL || *fence_key == NULL) {
    free(*key);
    free(*fence_key);
    *key = *fence_key = NULL;
    return -1;
  }
  snprintf(*key, klen, "%s%s", prefix != NULL ? prefix : "", resource);
  snprintf(*fence_key, flen, "%s%s", REDLOCK_FENCE_KEY_PREFIX, *key);
  return 0;
}
