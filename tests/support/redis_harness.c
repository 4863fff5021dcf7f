/* redis_harness.c: real redis-server processes for the integration tests and
 * the demo (API and contract in redis_harness.h).
 *
 * Rules this file keeps, because tests run in parallel on shared machines:
 *  - every server is our child (fork + exec), bound to 127.0.0.1 only, and is
 *    only ever signalled by its PID; nothing here looks processes up by name;
 *  - the child asks the kernel for SIGKILL when its parent thread dies
 *    (PR_SET_PDEATHSIG), so a crashed or killed test leaks no servers.  The
 *    signal follows the *thread* that forked: start servers from a thread
 *    that outlives them (the tests use the main thread);
 *  - readiness is observed (PING, then INFO's process_id must be our child's
 *    PID, so a foreign server that grabbed the port is never mistaken for
 *    ours), never assumed after a sleep;
 *  - a free port comes from binding 127.0.0.1:0; another process may take it
 *    before redis-server binds, so a start that fails is retried on a new
 *    port (a restart keeps its port and retries until its deadline).
 *
 * The server program is REDLOCK_TEST_SERVER when set (a name looked up on
 * PATH, or a path), redis-server otherwise: the same tests run against Redis
 * and Valkey (valkey-server takes the same options).
 *
 * Replies of rh_server_command() are rendered as text: status and bulk
 * strings verbatim, integers in decimal, nil as "(nil)", errors as the
 * server sent them ("ERR ...", "WRONGPASS ...", "OOM ..."), arrays as their
 * elements joined by '\n' (nested arrays flattened, empty array = "").
 *
 * Each server gets a private directory, $TMPDIR/redis-harness-<pid>-XXXXXX
 * (--dir and its log), removed when the server is freed; directories left
 * by a test process that died are removed by the next one.  Set
 * RH_KEEP_DIR=1 to keep them all, for post-mortems.
 *
 * Threads: rh_server_command, rh_wait_until and rh_now_ms may be called from
 * any thread; start/stop/fault calls belong to one thread (the one that
 * must outlive the servers, see PDEATHSIG above). */
#define _GNU_SOURCE
#include "redis_harness.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RH_HOST "127.0.0.1"
#define RH_START_TIMEOUT_MS 5000
#define RH_STOP_TIMEOUT_MS 2000
#define RH_COMMAND_TIMEOUT_MS 2000
/* rh_server_command_slow's: commands that write a file and fsync it before
 * answering (CLUSTER slot changes save nodes.conf), which a machine busy
 * with disk writes can hold up for seconds. */
#define RH_SLOW_COMMAND_TIMEOUT_MS 20000
#define RH_PROBE_TIMEOUT_MS 200 /* one readiness probe; the loop has the deadline */
#define RH_START_ATTEMPTS 5     /* fresh ports tried by rh_server_start */
#define RH_MAX_ARGS (56 + RH_MAX_EXTRA_ARGS)
#define RH_DEFAULT_SERVER "redis-server"

extern char **environ;

struct rh_server {
  int port;
  pid_t pid; /* 0 while down */
  int paused;
  char *password;
  char *acl_user;
  char *acl_password;
  char *unix_socket;
  char *bind_also;
  int enable_debug;
  int no_lua;
  char *executable;    /* NULL: rh_server_executable() */
  char *tls_cert_file; /* NULL: plain TCP */
  char *tls_key_file;
  char *tls_ca_cert_file;
  int tls_auth_clients;
  char *env[RH_MAX_ENV + 1];               /* rh_options_t.env, copied; NULL-terminated */
  char *extra_args[RH_MAX_EXTRA_ARGS + 1]; /* rh_options_t.extra_args, copied */
  char ctl_socket[300];                    /* TLS servers: the harness's plain unix socket */
  char dir[256];                           /* private directory: --dir and the log */
  char log_path[320];
  char uri[512];
};

/* ---- time ------------------------------------------------------------------------ */

uint64_t rh_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(unsigned ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

int rh_wait_until(int (*pred)(void *arg), void *arg, int timeout_ms) {
  uint64_t deadline = rh_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
  for (;;) {
    if (pred(arg))
      return 1;
    if (rh_now_ms() >= deadline)
      return 0;
    sleep_ms(1);
  }
}

/* ---- small helpers ----------------------------------------------------------------- */

static char *dup_or_null(const char *s) { return s != NULL ? strdup(s) : NULL; }

/* Percent-encodes everything but RFC 3986 unreserved characters, so any
 * password survives the trip through a redis:// URI. */
static void uri_escape(char *out, size_t size, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  size_t o = 0;
  for (; *s != '\0' && o + 4 < size; s++) {
    unsigned char c = (unsigned char)*s;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out[o++] = (char)c;
    } else {
      out[o++] = '%';
      out[o++] = hex[c >> 4];
      out[o++] = hex[c & 15];
    }
  }
  out[o] = '\0';
}

static void build_uri(rh_server_t *s) {
  char user[128] = "", pass[128] = "";
  const char *scheme = s->tls_cert_file != NULL ? "rediss" : "redis";
  if (s->acl_user != NULL) {
    uri_escape(user, sizeof user, s->acl_user);
    uri_escape(pass, sizeof pass, s->acl_password);
    snprintf(s->uri, sizeof s->uri, "%s://%s:%s@" RH_HOST ":%d", scheme, user, pass, s->port);
  } else if (s->password != NULL) {
    uri_escape(pass, sizeof pass, s->password);
    snprintf(s->uri, sizeof s->uri, "%s://:%s@" RH_HOST ":%d", scheme, pass, s->port);
  } else {
    snprintf(s->uri, sizeof s->uri, "%s://" RH_HOST ":%d", scheme, s->port);
  }
}

int rh_free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = -1;
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
      getsockname(fd, (struct sockaddr *)&addr, &len) == 0)
    port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

const char *rh_server_executable(void) {
  static char found[PATH_MAX];
  const char *name = getenv("REDLOCK_TEST_SERVER");
  if (name == NULL || name[0] == '\0')
    name = RH_DEFAULT_SERVER;
  if (strchr(name, '/') != NULL) {
    /* A path: made absolute, so that it still works from any directory, but
     * symbolic links are kept: valkey-server is a link to valkey-check-rdb
     * and chooses what to be by the name it was run as. */
    char cwd[PATH_MAX];
    if (name[0] == '/')
      snprintf(found, sizeof found, "%s", name);
    else if (getcwd(cwd, sizeof cwd) == NULL ||
             snprintf(found, sizeof found, "%s/%s", cwd, name) >= (int)sizeof found)
      return NULL;
    return access(found, X_OK) == 0 ? found : NULL;
  }
  size_t name_len = strlen(name);
  const char *path = getenv("PATH");
  if (path != NULL) {
    const char *p = path;
    while (*p != '\0') {
      const char *colon = strchr(p, ':');
      size_t len = colon != NULL ? (size_t)(colon - p) : strlen(p);
      if (len > 0 && len + 1 + name_len < sizeof found) {
        memcpy(found, p, len);
        found[len] = '/';
        memcpy(found + len + 1, name, name_len + 1);
        if (access(found, X_OK) == 0)
          return found;
      }
      if (colon == NULL)
        break;
      p = colon + 1;
    }
  }
  if (sizeof "/usr/bin/" + name_len <= sizeof found) {
    snprintf(found, sizeof found, "/usr/bin/%s", name);
    if (access(found, X_OK) == 0)
      return found;
  }
  return NULL;
}

const char *rh_server_name(void) {
  const char *name = getenv("REDLOCK_TEST_SERVER");
  return name != NULL && name[0] != '\0' ? name : RH_DEFAULT_SERVER;
}

const char *rh_valkey9_executable(void) {
  const char *path = getenv("REDLOCK_TEST_VALKEY9");
  return path != NULL && path[0] != '\0' && access(path, X_OK) == 0 ? path : NULL;
}

/* The program this server runs, for messages. */
static const char *server_program(const rh_server_t *s) {
  return s->executable != NULL ? s->executable : rh_server_name();
}

/* Prints the end of the server's log: why a start failed is written there. */
static void dump_log_tail(const rh_server_t *s) {
  FILE *f = fopen(s->log_path, "r");
  if (f == NULL)
    return;
  char buf[2048];
  if (fseek(f, 0, SEEK_END) == 0) {
    long size = ftell(f);
    if (size > (long)sizeof buf - 1)
      fseek(f, size - (long)sizeof buf + 1, SEEK_SET);
    else
      fseek(f, 0, SEEK_SET);
  }
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  fprintf(stderr, "redis_harness: tail of %s:\n%s\n", s->log_path, buf);
}

/* ---- one synchronous connection ---------------------------------------------------- */

/* Connects and authenticates.  NULL when the server cannot be reached or
 * refuses our credentials. */
static redisContext *connect_sync(const rh_server_t *s, int timeout_ms) {
  struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
  redisContext *c = s->tls_cert_file != NULL ? redisConnectUnixWithTimeout(s->ctl_socket, tv)
                                             : redisConnectWithTimeout(RH_HOST, s->port, tv);
  if (c == NULL)
    return NULL;
  if (c->err || redisSetTimeout(c, tv) != REDIS_OK) {
    redisFree(c);
    return NULL;
  }
  redisReply *r = NULL;
  if (s->acl_user != NULL)
    r = redisCommand(c, "AUTH %s %s", s->acl_user, s->acl_password);
  else if (s->password != NULL)
    r = redisCommand(c, "AUTH %s", s->password);
  else
    return c;
  int ok = r != NULL && r->type == REDIS_REPLY_STATUS;
  if (r != NULL)
    freeReplyObject(r);
  if (!ok) {
    redisFree(c);
    return NULL;
  }
  return c;
}

/* Appends the reply's text at buf[*used]; always NUL-terminated, truncated
 * when it does not fit. */
static void render_reply(const redisReply *r, char *buf, size_t size, size_t *used) {
  if (size == 0)
    return;
  size_t room = size - *used;
  int n = 0;
  switch (r->type) {
  case REDIS_REPLY_STATUS:
  case REDIS_REPLY_STRING:
  case REDIS_REPLY_ERROR:
    n = snprintf(buf + *used, room, "%.*s", (int)r->len, r->str);
    break;
  case REDIS_REPLY_INTEGER:
    n = snprintf(buf + *used, room, "%lld", r->integer);
    break;
  case REDIS_REPLY_NIL:
    n = snprintf(buf + *used, room, "(nil)");
    break;
  case REDIS_REPLY_ARRAY:
    buf[*used] = '\0';
    for (size_t i = 0; i < r->elements; i++) {
      if (i > 0 && *used + 1 < size) {
        buf[(*used)++] = '\n';
        buf[*used] = '\0';
      }
      render_reply(r->element[i], buf, size, used);
    }
    return;
  default:
    n = snprintf(buf + *used, room, "(reply type %d)", r->type);
    break;
  }
  if (n < 0)
    n = 0;
  *used += (size_t)n < room ? (size_t)n : room - 1;
}

static int server_vcommand(rh_server_t *server, int timeout_ms, char *buf, size_t size,
                           const char *fmt, va_list ap) {
  if (buf != NULL && size > 0)
    buf[0] = '\0';
  if (server == NULL || server->pid == 0)
    return -1;
  redisContext *c = connect_sync(server, timeout_ms);
  if (c == NULL)
    return -1;
  redisReply *r = redisvCommand(c, fmt, ap);
  redisFree(c);
  if (r == NULL)
    return -1;
  if (buf != NULL && size > 0) {
    size_t used = 0;
    render_reply(r, buf, size, &used);
  }
  freeReplyObject(r);
  return 0;
}

int rh_server_command(rh_server_t *server, char *buf, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = server_vcommand(server, RH_COMMAND_TIMEOUT_MS, buf, size, fmt, ap);
  va_end(ap);
  return rc;
}

int rh_server_command_slow(rh_server_t *server, char *buf, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = server_vcommand(server, RH_SLOW_COMMAND_TIMEOUT_MS, buf, size, fmt, ap);
  va_end(ap);
  return rc;
}

void rh_reply_text(const struct redisReply *r, char *buf, size_t size) {
  if (buf == NULL || size == 0)
    return;
  buf[0] = '\0';
  size_t used = 0;
  render_reply(r, buf, size, &used);
}

typedef struct {
  rh_server_t *master, *replica;
} link_pair_t;

static int replica_linked(void *arg) {
  link_pair_t *p = arg;
  char info[4096];
  return rh_server_command(p->replica, info, sizeof info, "INFO replication") == 0 &&
         strstr(info, "master_link_status:up") != NULL &&
         rh_server_command(p->master, info, sizeof info, "INFO replication") == 0 &&
         strstr(info, "connected_slaves:1") != NULL;
}

int rh_wait_replica_linked(rh_server_t *master, rh_server_t *replica, int timeout_ms) {
  link_pair_t p = {master, replica};
  return rh_wait_until(replica_linked, &p, timeout_ms);
}

/* ---- process control ----------------------------------------------------------------- */

/* Reaps the child if it has exited; returns 1 when it is gone. */
static int child_exited(rh_server_t *s) {
  if (s->pid == 0)
    return 1;
  int status;
  pid_t r = waitpid(s->pid, &status, WNOHANG);
  if (r == s->pid || (r < 0 && errno == ECHILD)) {
    s->pid = 0;
    s->paused = 0;
    return 1;
  }
  return 0;
}

static int child_exited_pred(void *arg) { return child_exited(arg); }

/* Waits up to timeout_ms for the child to exit; 1 when it did. */
static int reap_within(rh_server_t *s, int timeout_ms) {
  return rh_wait_until(child_exited_pred, s, timeout_ms);
}

static void kill_and_reap(rh_server_t *s) {
  if (s->pid == 0)
    return;
  kill(s->pid, SIGKILL);
  int status;
  while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR) {
  }
  s->pid = 0;
  s->paused = 0;
}

int rh_child_init(pid_t parent) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
    return -1;
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  static const int sigs[] = {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGALRM};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    sigaction(sigs[i], &dfl, NULL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  return 0;
}

static void close_inherited_fds(long max_fd) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 3u, ~0u, 0) == 0)
    return;
#endif
  for (long fd = 3; fd < max_fd; fd++)
    close((int)fd);
}

/* The test's environment without the names s->env sets, then s->env: a
 * malloc'ed array of borrowed strings, built before fork. */
static char **server_environment(const rh_server_t *s) {
  size_t n = 0;
  while (environ[n] != NULL)
    n++;
  char **envp = calloc(n + RH_MAX_ENV + 1, sizeof *envp);
  if (envp == NULL)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int replaced = 0;
    for (size_t j = 0; s->env[j] != NULL && !replaced; j++) {
      size_t name_len = strcspn(s->env[j], "=") + 1; /* "NAME=" */
      replaced = strncmp(environ[i], s->env[j], name_len) == 0;
    }
    if (!replaced)
      envp[k++] = environ[i];
  }
  for (size_t j = 0; s->env[j] != NULL; j++)
    envp[k++] = s->env[j];
  return envp;
}

/* fork + exec of redis-server on s->port.  Everything the child needs is
 * built before fork: after fork only async-signal-safe calls are allowed
 * (the test process has other threads, e.g. redlock clients' loops). */
static int spawn(rh_server_t *s) {
  const char *exe = s->executable != NULL ? s->executable : rh_server_executable();
  if (exe == NULL) {
    fprintf(stderr, "redis_harness: %s not found (REDLOCK_TEST_SERVER, PATH)\n", rh_server_name());
    return -1;
  }
  char port_str[16];
  snprintf(port_str, sizeof port_str, "%d", s->port);
  snprintf(s->log_path, sizeof s->log_path, "%s/redis-%d.log", s->dir, s->port);
  /* A restart starts a fresh log: the old server's lines would confuse a
   * post-mortem of the new one. */
  unlink(s->log_path);

  char acl_pass_arg[300];
  const char *argv[RH_MAX_ARGS];
  int argc = 0;
  argv[argc++] = exe;
  argv[argc++] = "--port";
  argv[argc++] = s->tls_cert_file != NULL ? "0" : port_str;
  if (s->tls_cert_file != NULL) {
    argv[argc++] = "--tls-port";
    argv[argc++] = port_str;
    argv[argc++] = "--tls-cert-file";
    argv[argc++] = s->tls_cert_file;
    argv[argc++] = "--tls-key-file";
    argv[argc++] = s->tls_key_file;
    argv[argc++] = "--tls-ca-cert-file";
    argv[argc++] = s->tls_ca_cert_file;
    argv[argc++] = "--tls-auth-clients";
    argv[argc++] = s->tls_auth_clients ? "yes" : "no";
  }
  argv[argc++] = "--bind";
  argv[argc++] = RH_HOST;
  if (s->bind_also != NULL)
    argv[argc++] = s->bind_also; /* --bind takes several addresses */
  argv[argc++] = "--save";
  argv[argc++] = "";
  argv[argc++] = "--appendonly";
  argv[argc++] = "no";
  argv[argc++] = "--daemonize";
  argv[argc++] = "no";
  argv[argc++] = "--logfile";
  argv[argc++] = s->log_path;
  argv[argc++] = "--dir";
  argv[argc++] = s->dir;
  if (s->password != NULL) {
    argv[argc++] = "--requirepass";
    argv[argc++] = s->password;
  }
  if (s->acl_user != NULL) {
    /* --user NAME on >PASS ~* &* +@all: each rule is its own argument. */
    snprintf(acl_pass_arg, sizeof acl_pass_arg, ">%s", s->acl_password);
    argv[argc++] = "--user";
    argv[argc++] = s->acl_user;
    argv[argc++] = "on";
    argv[argc++] = acl_pass_arg;
    argv[argc++] = "~*";
    argv[argc++] = "&*";
    argv[argc++] = "+@all";
  }
  if (s->enable_debug) {
    argv[argc++] = "--enable-debug-command";
    argv[argc++] = "local";
  }
  if (s->no_lua) {
    argv[argc++] = "--enable-module-command";
    argv[argc++] = "local";
  }
  if (s->unix_socket != NULL || s->tls_cert_file != NULL) {
    argv[argc++] = "--unixsocket";
    argv[argc++] = s->unix_socket != NULL ? s->unix_socket : s->ctl_socket;
    argv[argc++] = "--unixsocketperm";
    argv[argc++] = "700";
  }
  for (size_t i = 0; s->extra_args[i] != NULL; i++)
    argv[argc++] = s->extra_args[i];
  argv[argc] = NULL;
  char **envp = s->env[0] != NULL ? server_environment(s) : environ;
  if (envp == NULL)
    return -1;

  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) {
    if (envp != environ)
      free(envp);
    return -1;
  }
  struct rlimit rl;
  long max_fd =
      getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536
          ? (long)rl.rlim_cur
          : 65536;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(devnull);
    if (envp != environ)
      free(envp);
    return -1;
  }
  if (pid == 0) {
    /* Child: die with the parent, start from a clean signal state, and
     * hold none of the test's descriptors (they would keep the test's
     * sockets alive). */
    if (rh_child_init(parent) != 0)
      _exit(127);
    /* redis-server logs to --logfile; only config errors reach stdio, and
     * the readiness loop reports those as a failed start. */
    dup2(devnull, 0);
    dup2(devnull, 1);
    dup2(devnull, 2);
    close_inherited_fds(max_fd);
    execve(exe, (char *const *)argv, envp);
    _exit(127);
  }
  close(devnull);
  if (envp != environ)
    free(envp);
  s->pid = pid;
  s->paused = 0;
  return 0;
}

/* Reads INFO server's process_id over c; -1 when absent. */
static long info_process_id(redisContext *c) {
  redisReply *r = redisCommand(c, "INFO server");
  long pid = -1;
  if (r != NULL && r->type == REDIS_REPLY_STRING) {
    const char *p = strstr(r->str, "process_id:");
    if (p != NULL)
      pid = strtol(p + strlen("process_id:"), NULL, 10);
  }
  if (r != NULL)
    freeReplyObject(r);
  return pid;
}

#define READY_OK 0
#define READY_DIED (-1)    /* the child exited: e.g. the port was taken */
#define READY_FOREIGN (-2) /* someone else's server answers on our port */
#define READY_TIMEOUT (-3)

/* Polls PING until our child answers or the deadline passes. */
static int wait_ready(rh_server_t *s, uint64_t deadline) {
  for (;;) {
    if (child_exited(s))
      return READY_DIED;
    redisContext *c = connect_sync(s, RH_PROBE_TIMEOUT_MS);
    if (c != NULL) {
      redisReply *r = redisCommand(c, "PING");
      int pong = r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
      if (r != NULL)
        freeReplyObject(r);
      long pid = pong ? info_process_id(c) : -1;
      redisFree(c);
      if (pong)
        return pid == (long)s->pid ? READY_OK : READY_FOREIGN;
      /* A server still loading answers -LOADING: poll again. */
    }
    if (rh_now_ms() >= deadline)
      return READY_TIMEOUT;
    sleep_ms(2);
  }
}

int rh_server_unload_lua(const rh_server_t *s) {
  redisContext *c = connect_sync(s, RH_COMMAND_TIMEOUT_MS);
  if (c == NULL)
    return -1;
  int rc = -1;
  redisReply *r = redisCommand(c, "MODULE UNLOAD lua");
  if (r == NULL)
    goto out;
  if (r->type != REDIS_REPLY_STATUS) {
    fprintf(stderr, "redis_harness: %s cannot run without Lua: MODULE UNLOAD lua: %.*s\n",
            server_program(s), r->type == REDIS_REPLY_ERROR ? (int)r->len : 0,
            r->type == REDIS_REPLY_ERROR ? r->str : "");
    rc = RH_ERR_NO_LUA;
    goto out;
  }
  freeReplyObject(r);
  r = redisCommand(c, "EVAL %s 0", "return 1");
  if (r == NULL)
    goto out;
  if (r->type == REDIS_REPLY_ERROR) {
    rc = 0;
  } else {
    fprintf(stderr, "redis_harness: %s still runs EVAL after MODULE UNLOAD lua\n",
            server_program(s));
    rc = RH_ERR_NO_LUA;
  }
out:
  if (r != NULL)
    freeReplyObject(r);
  redisFree(c);
  return rc;
}

/* Spawns on s->port and waits for readiness; on failure nothing runs. */
static int start_on_port(rh_server_t *s, uint64_t deadline) {
  build_uri(s);
  if (spawn(s) != 0)
    return READY_DIED;
  int rc = wait_ready(s, deadline);
  if (rc != READY_OK)
    kill_and_reap(s);
  return rc;
}

/* ---- public: life cycle ---------------------------------------------------------------- */

void rh_remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d != NULL) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      char path[PATH_MAX];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
    closedir(d);
  }
  rmdir(dir);
}

/* A server's private directory, unless RH_KEEP_DIR asks to keep it. */
static void remove_dir(const char *dir) {
  const char *keep = getenv("RH_KEEP_DIR");
  if (keep != NULL && keep[0] != '\0' && strcmp(keep, "0") != 0)
    return;
  rh_remove_dir(dir);
}

/* Directories are named redis-harness-<pid>-XXXXXX.  A test process that
 * dies abnormally (abort, sanitizer, ctest timeout) cannot remove its own;
 * its servers die with it (PDEATHSIG) and the next harness user in any
 * process removes the directories of owners that no longer exist. */
static void sweep_stale_dirs(const char *tmp) {
  static int swept;
  const char *keep = getenv("RH_KEEP_DIR");
  if (swept || (keep != NULL && keep[0] != '\0' && strcmp(keep, "0") != 0))
    return;
  swept = 1;
  DIR *d = opendir(tmp);
  if (d == NULL)
    return;
  static const char prefix[] = "redis-harness-";
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, prefix, sizeof prefix - 1) != 0)
      continue;
    char *end;
    long owner = strtol(e->d_name + sizeof prefix - 1, &end, 10);
    if (end == e->d_name + sizeof prefix - 1 || *end != '-' || owner <= 0)
      continue;
    if (kill((pid_t)owner, 0) == 0 || errno != ESRCH)
      continue; /* the owner (or a process reusing its PID) is alive */
    char path[600];
    snprintf(path, sizeof path, "%s/%s", tmp, e->d_name);
    remove_dir(path);
  }
  closedir(d);
}

static void server_destroy(rh_server_t *s) {
  if (s->dir[0] != '\0')
    remove_dir(s->dir);
  free(s->password);
  free(s->acl_user);
  free(s->acl_password);
  free(s->unix_socket);
  free(s->bind_also);
  free(s->tls_cert_file);
  free(s->tls_key_file);
  free(s->tls_ca_cert_file);
  free(s->executable);
  for (size_t i = 0; s->env[i] != NULL; i++)
    free(s->env[i]);
  for (size_t i = 0; s->extra_args[i] != NULL; i++)
    free(s->extra_args[i]);
  free(s);
}

int rh_server_start(rh_server_t **out, const rh_options_t *opts) {
  if (out == NULL)
    return -1;
  *out = NULL;
  if (opts != NULL && (opts->acl_user == NULL) != (opts->acl_password == NULL)) {
    fprintf(stderr, "redis_harness: acl_user and acl_password go together\n");
    return -1;
  }
  rh_server_t *s = calloc(1, sizeof *s);
  if (s == NULL)
    return -1;
  if (opts != NULL) {
    s->password = dup_or_null(opts->password);
    s->acl_user = dup_or_null(opts->acl_user);
    s->acl_password = dup_or_null(opts->acl_password);
    s->unix_socket = dup_or_null(opts->unix_socket);
    s->bind_also = dup_or_null(opts->bind_also);
    s->enable_debug = opts->enable_debug;
    s->no_lua = opts->no_lua;
    s->executable = dup_or_null(opts->executable);
    if ((opts->password && !s->password) || (opts->acl_user && !s->acl_user) ||
        (opts->acl_password && !s->acl_password) || (opts->unix_socket && !s->unix_socket) ||
        (opts->bind_also && !s->bind_also) || (opts->executable && !s->executable)) {
      server_destroy(s);
      return -1;
    }
    if (s->executable != NULL && access(s->executable, X_OK) != 0) {
      fprintf(stderr, "redis_harness: %s: not an executable\n", s->executable);
      server_destroy(s);
      return -1;
    }
    for (size_t i = 0; opts->env != NULL && opts->env[i] != NULL; i++) {
      if (i == RH_MAX_ENV || strchr(opts->env[i], '=') == NULL ||
          (s->env[i] = strdup(opts->env[i])) == NULL) {
        fprintf(stderr, "redis_harness: env: at most %d NAME=VALUE entries\n", RH_MAX_ENV);
        server_destroy(s);
        return -1;
      }
    }
    for (size_t i = 0; opts->extra_args != NULL && opts->extra_args[i] != NULL; i++) {
      if (i == RH_MAX_EXTRA_ARGS || (s->extra_args[i] = strdup(opts->extra_args[i])) == NULL) {
        fprintf(stderr, "redis_harness: extra_args: at most %d arguments\n", RH_MAX_EXTRA_ARGS);
        server_destroy(s);
        return -1;
      }
    }
    if (opts->tls_cert_file != NULL) {
      s->tls_cert_file = strdup(opts->tls_cert_file);
      s->tls_key_file = dup_or_null(opts->tls_key_file);
      s->tls_ca_cert_file = dup_or_null(opts->tls_ca_cert_file);
      s->tls_auth_clients = opts->tls_auth_clients;
      if (!s->tls_cert_file || !s->tls_key_file || !s->tls_ca_cert_file) {
        fprintf(stderr, "redis_harness: TLS needs cert, key and CA files\n");
        server_destroy(s);
        return -1;
      }
    }
  }
  const char *tmp = getenv("TMPDIR");
  if (tmp == NULL || tmp[0] == '\0')
    tmp = "/tmp";
  sweep_stale_dirs(tmp);
  snprintf(s->dir, sizeof s->dir, "%s/redis-harness-%d-XXXXXX", tmp, (int)getpid());
  if (mkdtemp(s->dir) == NULL) {
    fprintf(stderr, "redis_harness: mkdtemp %s: %s\n", s->dir, strerror(errno));
    s->dir[0] = '\0';
    server_destroy(s);
    return -1;
  }
  snprintf(s->ctl_socket, sizeof s->ctl_socket, "%s",
           s->unix_socket != NULL ? s->unix_socket : s->dir);
  if (s->unix_socket == NULL)
    strncat(s->ctl_socket, "/ctl.sock", sizeof s->ctl_socket - strlen(s->ctl_socket) - 1);

  uint64_t deadline = rh_now_ms() + RH_START_TIMEOUT_MS;
  int rc = READY_DIED;
  for (int attempt = 0; attempt < RH_START_ATTEMPTS && rc != READY_OK; attempt++) {
    if (attempt > 0 && rh_now_ms() >= deadline)
      break;
    s->port = rh_free_port();
    if (s->port <= 0)
      continue;
    rc = start_on_port(s, deadline);
    if (rc != READY_OK && attempt + 1 < RH_START_ATTEMPTS)
      fprintf(stderr, "redis_harness: start on port %d failed (%d); trying another port\n", s->port,
              rc);
  }
  if (rc != READY_OK) {
    fprintf(stderr, "redis_harness: could not start %s\n", server_program(s));
    dump_log_tail(s);
    server_destroy(s);
    return -1;
  }
  if (s->no_lua && (rc = rh_server_unload_lua(s)) != 0) {
    rh_server_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

int rh_cluster_start(rh_server_t **servers, size_t n, const rh_options_t *opts) {
  for (size_t i = 0; i < n; i++)
    servers[i] = NULL;
  for (size_t i = 0; i < n; i++) {
    int rc = rh_server_start(&servers[i], opts);
    if (rc != 0) {
      rh_cluster_free(servers, i);
      return rc;
    }
  }
  return 0;
}

void rh_cluster_free(rh_server_t **servers, size_t n) {
  for (size_t i = 0; i < n; i++) {
    rh_server_free(servers[i]);
    servers[i] = NULL;
  }
}

int rh_server_port(const rh_server_t *server) { return server != NULL ? server->port : -1; }

pid_t rh_server_pid(const rh_server_t *server) { return server != NULL ? server->pid : 0; }

const char *rh_server_uri(const rh_server_t *server) { return server != NULL ? server->uri : NULL; }

const char *rh_server_unix_path(const rh_server_t *server) {
  if (server == NULL || (server->unix_socket == NULL && server->tls_cert_file == NULL))
    return NULL;
  return server->ctl_socket;
}

int rh_server_kill(rh_server_t *server) {
  if (server == NULL || server->pid == 0)
    return -1;
  kill_and_reap(server);
  return 0;
}

int rh_server_restart(rh_server_t *server) {
  if (server == NULL)
    return -1;
  kill_and_reap(server);
  /* Same port: clients are configured with it.  The only way it can be busy
   * is a short-lived socket of someone else's; retry until the deadline. */
  uint64_t deadline = rh_now_ms() + RH_START_TIMEOUT_MS;
  for (;;) {
    int rc = start_on_port(server, deadline);
    if (rc == READY_OK) {
      if (server->no_lua && (rc = rh_server_unload_lua(server)) != 0) {
        kill_and_reap(server);
        return rc;
      }
      return 0;
    }
    if (rh_now_ms() >= deadline) {
      fprintf(stderr, "redis_harness: restart on port %d failed (%d)\n", server->port, rc);
      dump_log_tail(server);
      return -1;
    }
    sleep_ms(20);
  }
}

int rh_server_pause(rh_server_t *server) {
  if (server == NULL || server->pid == 0 || kill(server->pid, SIGSTOP) != 0)
    return -1;
  server->paused = 1;
  return 0;
}

int rh_server_resume(rh_server_t *server) {
  if (server == NULL || server->pid == 0 || kill(server->pid, SIGCONT) != 0)
    return -1;
  server->paused = 0;
  return 0;
}

void rh_server_free(rh_server_t *server) {
  if (server == NULL)
    return;
  if (server->pid != 0) {
    /* A stopped process would sit on SIGTERM until the SIGKILL deadline. */
    if (server->paused)
      kill(server->pid, SIGCONT);
    kill(server->pid, SIGTERM);
    if (!reap_within(server, RH_STOP_TIMEOUT_MS))
      kill_and_reap(server);
  }
  server_destroy(server);
}
