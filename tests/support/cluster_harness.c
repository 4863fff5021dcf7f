/* cluster_harness.c: Redis Cluster processes for the integration tests
 * (see cluster_harness.h). */
#include "cluster_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CH_JOIN_TIMEOUT_MS 30000
#define CH_SLOTS 16384
#define CH_AGREE_ROUNDS 10     /* a migrated slot's owner claimed again at most this often */
#define CH_AGREE_ROUND_MS 1000 /* each after this long without agreement */

struct ch_cluster {
  unsigned n, primaries, replicas;
  int interleaved; /* ch_options_t */
  rh_server_t *nodes[CH_MAX_NODES];
  int bus[CH_MAX_NODES];
  int tls_port[CH_MAX_NODES]; /* 0: no TLS */
  char id[CH_MAX_NODES][41];
  char dir[PATH_MAX];
  char uri[64 * CH_MAX_NODES];
};

unsigned ch_count(const ch_cluster_t *c) { return c->n; }
rh_server_t *ch_node(const ch_cluster_t *c, unsigned i) { return c->nodes[i]; }
int ch_port(const ch_cluster_t *c, unsigned i) { return rh_server_port(c->nodes[i]); }

int ch_tls_port(const ch_cluster_t *c, unsigned i) { return c->tls_port[i]; }

static const char *uri_of(ch_cluster_t *c, unsigned n, int tls) {
  if (n == 0 || n > c->n)
    n = c->n;
  int used = snprintf(c->uri, sizeof c->uri, "%s", tls ? "rediss-cluster://" : "redis-cluster://");
  for (unsigned i = 0; i < n; i++)
    used += snprintf(c->uri + used, sizeof c->uri - (size_t)used, "%s127.0.0.1:%d",
                     i > 0 ? "," : "", tls ? c->tls_port[i] : ch_port(c, i));
  return c->uri;
}

const char *ch_uri(ch_cluster_t *c, unsigned n) { return uri_of(c, n, 0); }
const char *ch_uri_tls(ch_cluster_t *c, unsigned n) { return uri_of(c, n, 1); }

/* Says what failed on node i (its answer in buf); -1. */
static int fail(ch_cluster_t *c, unsigned i, const char *what, const char *buf) {
  fprintf(stderr, "cluster_harness: node %u (port %d): %s: %s\n", i, ch_port(c, i), what, buf);
  return -1;
}

/* Every node says cluster_state:ok, all slots assigned, and knows the
 * others (cluster_known_nodes: CLUSTER NODES' lines, which an interleaved
 * map makes too long to read here). */
static int pred_joined(void *arg) {
  ch_cluster_t *c = arg;
  for (unsigned i = 0; i < c->n; i++) {
    char info[4096];
    const char *known;
    if (rh_server_command(c->nodes[i], info, sizeof info, "CLUSTER INFO") != 0 ||
        strstr(info, "cluster_state:ok") == NULL ||
        strstr(info, "cluster_slots_assigned:16384") == NULL ||
        (known = strstr(info, "cluster_known_nodes:")) == NULL ||
        strtoul(known + strlen("cluster_known_nodes:"), NULL, 10) < c->n)
      return 0;
  }
  return 1;
}

typedef struct {
  ch_cluster_t *c;
  unsigned replica, primary;
} knows_t;

/* The replica knows the primary's id (a REPLICATE needs that). */
static int pred_knows(void *arg) {
  knows_t *k = arg;
  char nodes[8192];
  return rh_server_command(k->c->nodes[k->replica], nodes, sizeof nodes, "CLUSTER NODES") == 0 &&
         strstr(nodes, k->c->id[k->primary]) != NULL;
}

static int pred_ok(void *arg) {
  ch_cluster_t *c = arg;
  for (unsigned i = 0; i < c->n; i++) {
    char info[4096];
    if (rh_server_pid(c->nodes[i]) == 0)
      continue;
    if (rh_server_command(c->nodes[i], info, sizeof info, "CLUSTER INFO") != 0 ||
        strstr(info, "cluster_state:ok") == NULL)
      return 0;
  }
  return 1;
}

int ch_wait_ok(ch_cluster_t *c, int timeout_ms) { return rh_wait_until(pred_ok, c, timeout_ms); }

static int join(ch_cluster_t *c) {
  char buf[512];
  for (unsigned i = 0; i < c->n; i++) {
    if (rh_server_command(c->nodes[i], buf, sizeof buf, "CLUSTER MYID") != 0 || strlen(buf) != 40)
      return fail(c, i, "CLUSTER MYID", buf);
    memcpy(c->id[i], buf, 41);
  }
  for (unsigned i = 1; i < c->n; i++)
    if (rh_server_command(c->nodes[0], buf, sizeof buf, "CLUSTER MEET 127.0.0.1 %d %d",
                          ch_port(c, i), c->bus[i]) != 0 ||
        strcmp(buf, "OK") != 0)
      return fail(c, 0, "CLUSTER MEET", buf);
  for (unsigned p = 0; c->interleaved && p < c->primaries; p++) {
    /* One command: the slots are in the text (hiredis splits it at spaces). */
    size_t size = 32 + 6 * (CH_SLOTS / c->primaries + 1), used;
    char *cmd = malloc(size);
    if (cmd == NULL)
      return fail(c, p, "CLUSTER ADDSLOTS", "out of memory");
    used = (size_t)snprintf(cmd, size, "CLUSTER ADDSLOTS");
    for (unsigned s = p; s < CH_SLOTS; s += c->primaries)
      used += (size_t)snprintf(cmd + used, size - used, " %u", s);
    int rc = rh_server_command(c->nodes[p], buf, sizeof buf, cmd);
    free(cmd);
    if (rc != 0 || strcmp(buf, "OK") != 0)
      return fail(c, p, "CLUSTER ADDSLOTS", buf);
  }
  for (unsigned p = 0; !c->interleaved && p < c->primaries; p++) {
    int start = (int)(CH_SLOTS * p / c->primaries),
        end = (int)(CH_SLOTS * (p + 1) / c->primaries) - 1;
    if (rh_server_command(c->nodes[p], buf, sizeof buf, "CLUSTER ADDSLOTSRANGE %d %d", start,
                          end) != 0 ||
        strcmp(buf, "OK") != 0)
      return fail(c, p, "CLUSTER ADDSLOTSRANGE", buf);
  }
  for (unsigned p = 0; p < c->primaries; p++)
    for (unsigned r = 0; r < c->replicas; r++) {
      knows_t k = {c, c->primaries + p * c->replicas + r, p};
      if (!rh_wait_until(pred_knows, &k, CH_JOIN_TIMEOUT_MS))
        return fail(c, k.replica, "does not learn of its primary", buf);
      if (rh_server_command(c->nodes[k.replica], buf, sizeof buf, "CLUSTER REPLICATE %s",
                            c->id[p]) != 0 ||
          strcmp(buf, "OK") != 0)
        return fail(c, k.replica, "CLUSTER REPLICATE", buf);
    }
  if (!rh_wait_until(pred_joined, c, CH_JOIN_TIMEOUT_MS)) {
    rh_server_command(c->nodes[0], buf, sizeof buf, "CLUSTER INFO");
    return fail(c, 0, "the cluster is not ok in time", buf);
  }
  return 0;
}

int ch_start(ch_cluster_t **out, const ch_options_t *o) {
  *out = NULL;
  unsigned n = o->primaries * (1 + o->replicas_per_primary);
  if (o->primaries == 0 || n > CH_MAX_NODES) {
    fprintf(stderr, "cluster_harness: at most %d nodes\n", CH_MAX_NODES);
    return -1;
  }
  ch_cluster_t *c = calloc(1, sizeof *c);
  if (c == NULL)
    return -1;
  c->primaries = o->primaries;
  c->replicas = o->replicas_per_primary;
  c->interleaved = o->interleaved;
  const char *tmp = getenv("TMPDIR");
  snprintf(c->dir, sizeof c->dir, "%s/redlock-cluster-XXXXXX",
           tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
  if (mkdtemp(c->dir) == NULL) {
    c->dir[0] = '\0';
    ch_stop(c);
    return -1;
  }
  for (; c->n < n; c->n++) {
    char conf[PATH_MAX + 32], bus[16];
    snprintf(conf, sizeof conf, "%s/nodes-%u.conf", c->dir, c->n);
    c->bus[c->n] = rh_free_port();
    snprintf(bus, sizeof bus, "%d", c->bus[c->n]);
    char tls_port[16];
    c->tls_port[c->n] = o->tls_cert_file != NULL ? rh_free_port() : 0;
    snprintf(tls_port, sizeof tls_port, "%d", c->tls_port[c->n]);
    const char *args[] = {"--cluster-enabled", "yes", "--cluster-config-file", conf,
                          "--cluster-port", bus, "--cluster-node-timeout", "2000",
                          /* A replica always may stand for election: on a
                           * loaded machine its last contact with a killed
                           * primary can look older than the default
                           * factor (10 node timeouts) allows. */
                          "--cluster-replica-validity-factor", "0",
                          /* TLS (ch_options_t), else the list ends here. */
                          o->tls_cert_file != NULL ? "--tls-port" : NULL, tls_port, "--tls-cluster",
                          "yes", "--tls-replication", "yes", "--tls-auth-clients", "no",
                          "--tls-cert-file", o->tls_cert_file, "--tls-key-file", o->tls_key_file,
                          "--tls-client-cert-file", o->tls_client_cert_file,
                          "--tls-client-key-file", o->tls_client_key_file, "--tls-ca-cert-file",
                          o->tls_ca_cert_file, NULL};
    rh_options_t ro = {.extra_args = args};
    if (c->bus[c->n] <= 0 || (o->tls_cert_file != NULL && c->tls_port[c->n] <= 0) ||
        rh_server_start(&c->nodes[c->n], &ro) != 0) {
      fprintf(stderr, "cluster_harness: cannot start node %u\n", c->n);
      ch_stop(c);
      return -1;
    }
  }
  if (join(c) != 0) {
    ch_stop(c);
    return -1;
  }
  *out = c;
  return 0;
}

void ch_line_ranges(char *line, void (*fn)(long a, long b, void *arg), void *arg) {
  int field = 0;
  char *save = NULL;
  for (char *f = strtok_r(line, " ", &save); f != NULL; f = strtok_r(NULL, " ", &save), field++) {
    if (field < 8 || f[0] == '[')
      continue;
    long a = strtol(f, NULL, 10), b = a;
    const char *dash = strchr(f, '-');
    if (dash != NULL)
      b = strtol(dash + 1, NULL, 10);
    fn(a, b, arg);
  }
}

char *ch_myself_line(char *nodes) {
  char *line = strstr(nodes, "myself");
  if (line == NULL)
    return NULL;
  while (line > nodes && line[-1] != '\n')
    line--;
  char *eol = strchr(line, '\n');
  if (eol != NULL)
    *eol = '\0';
  return line;
}

typedef struct {
  long slot;
  int found;
} serves_t;

static void range_serves(long a, long b, void *arg) {
  serves_t *s = arg;
  s->found |= a <= s->slot && s->slot <= b;
}

/* 1 when a CLUSTER NODES line's slot ranges include slot (cuts line). */
static int line_serves(char *line, int slot) {
  serves_t s = {slot, 0};
  ch_line_ranges(line, range_serves, &s);
  return s.found;
}

int ch_owner(ch_cluster_t *c, unsigned asked, int slot) {
  (void)asked;
  /* Each running primary's own line of CLUSTER NODES ("myself") lists the
   * slot ranges it serves (fields 9 on: "a-b", "a", or "[...]" for a slot
   * being migrated). */
  enum { NODES_SIZE = 1 << 20 }; /* an interleaved map's lines are long */
  char *nodes = malloc(NODES_SIZE);
  int owner = -1;
  for (unsigned i = 0; nodes != NULL && owner < 0 && i < c->n; i++) {
    char role[4096];
    if (rh_server_pid(c->nodes[i]) == 0 ||
        rh_server_command(c->nodes[i], role, sizeof role, "ROLE") != 0 ||
        strncmp(role, "master", 6) != 0 ||
        rh_server_command(c->nodes[i], nodes, NODES_SIZE, "CLUSTER NODES") != 0)
      continue;
    char *line = ch_myself_line(nodes);
    if (line != NULL && line_serves(line, slot))
      owner = (int)i;
  }
  free(nodes);
  return owner;
}

typedef struct {
  ch_cluster_t *c;
  int slot;
  unsigned to;
} agree_t;

/* Every running node's CLUSTER NODES gives the slot to node `to` alone. */
static int pred_agree(void *arg) {
  agree_t *a = arg;
  enum { NODES_SIZE = 1 << 20 }; /* an interleaved map's lines are long */
  char *nodes = malloc(NODES_SIZE);
  int agreed = nodes != NULL;
  for (unsigned i = 0; agreed && i < a->c->n; i++) {
    if (rh_server_pid(a->c->nodes[i]) == 0)
      continue;
    if (rh_server_command(a->c->nodes[i], nodes, NODES_SIZE, "CLUSTER NODES") != 0) {
      agreed = 0;
      break;
    }
    int owners = 0, ours = 0;
    char *save = NULL;
    for (char *line = strtok_r(nodes, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
      int is_to = strncmp(line, a->c->id[a->to], 40) == 0;
      if (line_serves(line, a->slot)) {
        owners++;
        ours += is_to;
      }
    }
    agreed = owners == 1 && ours == 1;
  }
  free(nodes);
  return agreed;
}

int ch_migrate_slot(ch_cluster_t *c, int slot, unsigned from, unsigned to) {
  char buf[8192];
  if (rh_server_command(c->nodes[to], buf, sizeof buf, "CLUSTER SETSLOT %d IMPORTING %s", slot,
                        c->id[from]) != 0 ||
      strcmp(buf, "OK") != 0)
    return fail(c, to, "SETSLOT IMPORTING", buf);
  if (rh_server_command(c->nodes[from], buf, sizeof buf, "CLUSTER SETSLOT %d MIGRATING %s", slot,
                        c->id[to]) != 0 ||
      strcmp(buf, "OK") != 0)
    return fail(c, from, "SETSLOT MIGRATING", buf);
  for (;;) {
    if (rh_server_command(c->nodes[from], buf, sizeof buf, "CLUSTER GETKEYSINSLOT %d 100", slot) !=
        0)
      return fail(c, from, "GETKEYSINSLOT", buf);
    if (buf[0] == '\0')
      break;
    char *save = NULL;
    for (char *key = strtok_r(buf, "\n", &save); key != NULL; key = strtok_r(NULL, "\n", &save)) {
      char r[256];
      if (rh_server_command(c->nodes[from], r, sizeof r, "MIGRATE 127.0.0.1 %d %s 0 5000",
                            ch_port(c, to), key) != 0 ||
          (strcmp(r, "OK") != 0 && strcmp(r, "NOKEY") != 0))
        return fail(c, from, "MIGRATE", r);
    }
  }
  /* The target first, then the source, then the others. */
  if (rh_server_command(c->nodes[to], buf, sizeof buf, "CLUSTER SETSLOT %d NODE %s", slot,
                        c->id[to]) != 0 ||
      strcmp(buf, "OK") != 0)
    return fail(c, to, "SETSLOT NODE (target)", buf);
  if (rh_server_command(c->nodes[from], buf, sizeof buf, "CLUSTER SETSLOT %d NODE %s", slot,
                        c->id[to]) != 0 ||
      strcmp(buf, "OK") != 0)
    return fail(c, from, "SETSLOT NODE (source)", buf);
  for (unsigned i = 0; i < c->primaries; i++)
    if (i != to && i != from)
      (void)rh_server_command(c->nodes[i], buf, sizeof buf, "CLUSTER SETSLOT %d NODE %s", slot,
                              c->id[to]);
  /* Done when every running node says `to` serves the slot.  In a cluster
   * still settling its config-epoch collisions the source may bump its
   * epoch past the target's, and its older claim then wins back the slot
   * on the target (each then redirects to the other): the target claims
   * it again with a newer epoch, as redis-cli's fix does. */
  agree_t agree = {c, slot, to};
  for (int round = 0; round < CH_AGREE_ROUNDS; round++) {
    if (rh_wait_until(pred_agree, &agree, CH_AGREE_ROUND_MS))
      return 0;
    (void)rh_server_command(c->nodes[to], buf, sizeof buf, "CLUSTER SETSLOT %d NODE %s", slot,
                            c->id[to]);
    (void)rh_server_command(c->nodes[to], buf, sizeof buf, "CLUSTER BUMPEPOCH");
  }
  return fail(c, to, "slot owner agreed by every node", "no agreement");
}

const char *ch_id(const ch_cluster_t *c, unsigned i) { return c->id[i]; }

int ch_is_master(ch_cluster_t *c, unsigned i) {
  char role[4096];
  return rh_server_pid(c->nodes[i]) != 0 &&
         rh_server_command(c->nodes[i], role, sizeof role, "ROLE") == 0 &&
         strncmp(role, "master", 6) == 0;
}

typedef struct {
  ch_cluster_t *c;
  unsigned i;
  char why[160]; /* what the last poll found wanting */
} master_t;

/* The line of CLUSTER NODES (in nodes) about node id, or NULL; its end is
 * made the string's end. */
static char *node_line(char *nodes, const char *id) {
  for (char *line = nodes; line != NULL && *line != '\0';) {
    char *eol = strchr(line, '\n');
    if (eol != NULL)
      *eol = '\0';
    if (strncmp(line, id, 40) == 0)
      return line;
    line = eol != NULL ? eol + 1 : NULL;
  }
  return NULL;
}

/* Node i is a master, every running node is ok, and every running node's
 * CLUSTER NODES flags i as a master (the others learned of the promotion). */
static int pred_master(void *arg) {
  master_t *m = arg;
  if (!ch_is_master(m->c, m->i)) {
    snprintf(m->why, sizeof m->why, "ROLE is not master");
    return 0;
  }
  if (!pred_ok(m->c)) {
    snprintf(m->why, sizeof m->why, "a node is not cluster_state:ok");
    return 0;
  }
  for (unsigned k = 0; k < m->c->n; k++) {
    char nodes[8192];
    if (rh_server_pid(m->c->nodes[k]) == 0)
      continue;
    if (rh_server_command(m->c->nodes[k], nodes, sizeof nodes, "CLUSTER NODES") != 0)
      return 0;
    const char *line = node_line(nodes, m->c->id[m->i]);
    if (line == NULL || strstr(line, "master") == NULL) {
      snprintf(m->why, sizeof m->why, "node %u says: %.120s", k, line != NULL ? line : "(none)");
      return 0;
    }
  }
  return 1;
}

int ch_wait_master(ch_cluster_t *c, unsigned i, int timeout_ms) {
  master_t m = {c, i, ""};
  if (rh_wait_until(pred_master, &m, timeout_ms))
    return 0;
  return fail(c, i, "not a master everyone agrees on in time", m.why);
}

int ch_failover(ch_cluster_t *c, unsigned i, const char *how, int timeout_ms) {
  char buf[512];
  int rc = how != NULL && how[0] != '\0'
               ? rh_server_command(c->nodes[i], buf, sizeof buf, "CLUSTER FAILOVER %s", how)
               : rh_server_command(c->nodes[i], buf, sizeof buf, "CLUSTER FAILOVER");
  if (rc != 0 || strcmp(buf, "OK") != 0)
    return fail(c, i, "CLUSTER FAILOVER", buf);
  return ch_wait_master(c, i, timeout_ms);
}

const char *ch_cli(void) {
  static char path[PATH_MAX];
  const char *server = rh_server_executable();
  if (server == NULL)
    return NULL;
  size_t n = strlen(server);
  if (n < 7 || strcmp(server + n - 7, "-server") != 0 || n + 1 >= sizeof path)
    return NULL;
  snprintf(path, sizeof path, "%.*s-cli", (int)(n - 7), server);
  return access(path, X_OK) == 0 ? path : NULL;
}

int ch_reshard_start(ch_cluster_t *c, unsigned from, unsigned to, unsigned slots) {
  const char *cli = ch_cli();
  if (cli == NULL) {
    fprintf(stderr, "cluster_harness: no cli beside %s\n", rh_server_name());
    return -1;
  }
  char at[32], n[16], out[PATH_MAX + 16];
  snprintf(at, sizeof at, "127.0.0.1:%d", ch_port(c, from));
  snprintf(n, sizeof n, "%u", slots);
  snprintf(out, sizeof out, "%s/reshard.out", c->dir);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    if (rh_child_init(parent) != 0)
      _exit(127);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execl(cli, cli, "--cluster", "reshard", at, "--cluster-from", c->id[from], "--cluster-to",
          c->id[to], "--cluster-slots", n, "--cluster-yes", (char *)NULL);
    _exit(127);
  }
  return (int)pid;
}

int ch_reshard_wait(ch_cluster_t *c, int pid, int timeout_ms) {
  uint64_t until = rh_now_ms() + (uint64_t)timeout_ms;
  int status = 0;
  pid_t got;
  while ((got = waitpid(pid, &status, WNOHANG)) == 0 && rh_now_ms() < until)
    nanosleep(&(struct timespec){0, 10000000}, NULL); /* a child process: polled for its exit */
  if (got == 0) {
    kill(pid, SIGKILL);
    (void)waitpid(pid, &status, 0);
  }
  if (got == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return 0;
  char out[PATH_MAX + 16], line[512];
  snprintf(out, sizeof out, "%s/reshard.out", c->dir);
  fprintf(stderr, "cluster_harness: reshard failed (%s); its output:\n",
          got == 0 ? "timed out" : "exit status");
  FILE *f = fopen(out, "r");
  for (int k = 0; f != NULL && k < 200 && fgets(line, sizeof line, f) != NULL; k++)
    fputs(line, stderr);
  if (f != NULL)
    fclose(f);
  return -1;
}

void ch_stop(ch_cluster_t *c) {
  if (c == NULL)
    return;
  for (unsigned i = 0; i < c->n; i++)
    rh_server_free(c->nodes[i]);
  if (c->dir[0] != '\0')
    rh_remove_dir(c->dir);
  free(c);
}
