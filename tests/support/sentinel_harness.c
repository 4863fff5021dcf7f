/* sentinel_harness.c: Redis Sentinel processes for the integration tests
 * (see sentinel_harness.h). */
#include "sentinel_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "redis_harness.h"

#define SH_START_TIMEOUT_MS 5000
#define SH_COMMAND_TIMEOUT_MS 2000
#define SH_START_ATTEMPTS 5

struct sh_sentinel {
  pid_t pid;
  int port, tls_port;
  char *password;
};

static redisContext *connect_sync(const sh_sentinel_t *s, int timeout_ms) {
  struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, tv);
  if (c == NULL || c->err) {
    if (c != NULL)
      redisFree(c);
    return NULL;
  }
  redisSetTimeout(c, tv);
  if (s->password != NULL) {
    redisReply *r = redisCommand(c, "AUTH %s", s->password);
    int ok = r != NULL && r->type != REDIS_REPLY_ERROR;
    if (r != NULL)
      freeReplyObject(r);
    if (!ok) {
      redisFree(c);
      return NULL;
    }
  }
  return c;
}

/* Appends a reply as text (arrays: elements joined by '\n'). */
int sh_command(sh_sentinel_t *s, char *buf, size_t size, const char *fmt, ...) {
  if (buf != NULL && size > 0)
    buf[0] = '\0';
  if (s == NULL || s->pid == 0)
    return -1;
  redisContext *c = connect_sync(s, SH_COMMAND_TIMEOUT_MS);
  if (c == NULL)
    return -1;
  va_list ap;
  va_start(ap, fmt);
  redisReply *r = redisvCommand(c, fmt, ap);
  va_end(ap);
  redisFree(c);
  if (r == NULL)
    return -1;
  rh_reply_text(r, buf, size);
  freeReplyObject(r);
  return 0;
}

int sh_master_field(sh_sentinel_t *s, const char *name, const char *field, char *buf, size_t size) {
  redisContext *c = s != NULL && s->pid != 0 ? connect_sync(s, SH_COMMAND_TIMEOUT_MS) : NULL;
  if (c == NULL)
    return -1;
  redisReply *r = redisCommand(c, "SENTINEL MASTER %s", name);
  redisFree(c);
  int rc = -1;
  for (size_t i = 0; r != NULL && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
    const redisReply *k = r->element[i], *v = r->element[i + 1];
    if (k->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING &&
        strcmp(k->str, field) == 0) {
      snprintf(buf, size, "%s", v->str);
      rc = 0;
      break;
    }
  }
  if (r != NULL)
    freeReplyObject(r);
  return rc;
}

int sh_port(const sh_sentinel_t *s) { return s->port; }
int sh_tls_port(const sh_sentinel_t *s) { return s->tls_port; }
pid_t sh_pid(const sh_sentinel_t *s) { return s->pid; }

typedef struct {
  sh_sentinel_t *s;
  int died;
} ready_t;

/* Our sentinel answers PING and is our child (INFO's process_id), or has
 * exited (a port taken meanwhile, a bad config). */
static int pred_ready(void *arg) {
  ready_t *w = arg;
  if (waitpid(w->s->pid, NULL, WNOHANG) == w->s->pid) {
    w->s->pid = 0;
    w->died = 1;
    return 1;
  }
  char info[4096];
  if (sh_command(w->s, info, sizeof info, "INFO server") != 0)
    return 0;
  const char *p = strstr(info, "process_id:");
  return p != NULL && atol(p + 11) == (long)w->s->pid;
}

static int write_config(const char *path, int port, int tls_port, const sh_options_t *o) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    fprintf(stderr, "sentinel_harness: %s: %s\n", path, strerror(errno));
    return -1;
  }
  fprintf(f,
          "port %d\nbind 127.0.0.1\ndir %s\nlogfile %s/sentinel-%d.log\n"
          "sentinel monitor %s 127.0.0.1 %d %d\n"
          "sentinel down-after-milliseconds %s %u\nsentinel failover-timeout %s %u\n",
          port, o->dir, o->dir, port, o->master_name, o->master_port, o->quorum, o->master_name,
          o->down_after_ms, o->master_name, o->failover_timeout_ms);
  if (o->password != NULL)
    fprintf(f, "requirepass %s\nsentinel sentinel-pass %s\n", o->password, o->password);
  if (o->master_password != NULL)
    fprintf(f, "sentinel auth-pass %s %s\n", o->master_name, o->master_password);
  if (o->tls_cert_file != NULL)
    fprintf(f,
            "tls-port %d\ntls-cert-file %s\ntls-key-file %s\ntls-ca-cert-file %s\n"
            "tls-auth-clients no\ntls-replication yes\n",
            tls_port, o->tls_cert_file, o->tls_key_file, o->tls_ca_cert_file);
  return fclose(f) == 0 ? 0 : -1;
}

int sh_start(sh_sentinel_t **out, const sh_options_t *o) {
  *out = NULL;
  const char *exe = rh_server_executable();
  if (exe == NULL) {
    fprintf(stderr, "sentinel_harness: no %s\n", rh_server_name());
    return -1;
  }
  sh_sentinel_t *s = calloc(1, sizeof *s);
  if (s == NULL || (o->password != NULL && (s->password = strdup(o->password)) == NULL)) {
    sh_stop(s);
    return -1;
  }
  for (int attempt = 0; attempt < SH_START_ATTEMPTS; attempt++) {
    s->port = rh_free_port();
    s->tls_port = o->tls_cert_file != NULL ? rh_free_port() : 0;
    char conf[4096];
    snprintf(conf, sizeof conf, "%s/sentinel-%d.conf", o->dir, s->port);
    if (s->port <= 0 || s->tls_port < 0 || s->tls_port == s->port ||
        write_config(conf, s->port, s->tls_port, o) != 0)
      break;
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
      break;
    if (pid == 0) {
      if (rh_child_init(parent) != 0)
        _exit(127);
      int devnull = open("/dev/null", O_RDWR);
      dup2(devnull, 0);
      dup2(devnull, 1);
      dup2(devnull, 2);
      execl(exe, exe, conf, "--sentinel", (char *)NULL);
      _exit(127);
    }
    s->pid = pid;
    ready_t w = {.s = s};
    if (rh_wait_until(pred_ready, &w, SH_START_TIMEOUT_MS) && !w.died) {
      *out = s;
      return 0;
    }
    if (s->pid != 0) { /* up but not answering: stop it, try another port */
      kill(s->pid, SIGKILL);
      waitpid(s->pid, NULL, 0);
      s->pid = 0;
    }
  }
  fprintf(stderr, "sentinel_harness: could not start a sentinel (%s)\n", exe);
  sh_stop(s);
  return -1;
}

void sh_stop(sh_sentinel_t *s) {
  if (s == NULL)
    return;
  if (s->pid > 0) {
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
  }
  free(s->password);
  free(s);
}
