/* fault_proxy_main.c: redlock-fault-proxy, the fault proxy (fault_proxy.h)
 * as a standalone program, for manual testing and the benchmark's slow-node
 * mode:
 *
 *   redlock-fault-proxy --listen PORT --upstream 127.0.0.1:PORT [--delay MS]
 *
 * --listen 0 picks a free port.  The listening port is printed on stdout as
 * one line (then stdout is flushed) so a script can read it; the proxy then
 * runs until SIGINT or SIGTERM.  Exit status 0 on a signal, 2 on bad usage,
 * 1 when the proxy could not start. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "cli_args.h"
#include "fault_proxy.h"

static void usage(FILE *f) {
  fprintf(f, "usage: redlock-fault-proxy --listen PORT --upstream 127.0.0.1:PORT [--delay MS]\n"
             "  --listen PORT     port to listen on at 127.0.0.1 (0 = a free one, printed)\n"
             "  --upstream H:P    redis-server to forward to (127.0.0.0/8 only)\n"
             "  --delay MS        latency added to every chunk, each direction\n");
}

/* Whole-string decimal in [min, max], else -1. */
static long parse_long(const char *s, long min, long max) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
    return -1;
  return v;
}

int main(int argc, char **argv) {
  long listen_port = -1, upstream_port = -1, delay = 0;
  char host[64] = "";
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    const char *val = cli_value(argc, argv, &i, usage);
    if (strcmp(arg, "--listen") == 0) {
      listen_port = parse_long(val, 0, 65535);
    } else if (strcmp(arg, "--delay") == 0) {
      delay = parse_long(val, 0, UINT_MAX / 1000);
    } else if (strcmp(arg, "--upstream") == 0) {
      const char *colon = strrchr(val, ':');
      if (colon == NULL || (size_t)(colon - val) >= sizeof host) {
        fprintf(stderr, "redlock-fault-proxy: --upstream wants HOST:PORT\n");
        return 2;
      }
      memcpy(host, val, (size_t)(colon - val));
      host[colon - val] = '\0';
      upstream_port = parse_long(colon + 1, 1, 65535);
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (listen_port < 0 || upstream_port < 0 || host[0] == '\0' || delay < 0) {
    usage(stderr);
    return 2;
  }

  /* Blocked before the proxy thread exists, so the signals stay pending for
   * sigwait below instead of killing the process mid-forward. */
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);

  fault_proxy_t *proxy = NULL;
  int rc = fault_proxy_start_on(&proxy, (int)listen_port, host, (int)upstream_port);
  if (rc != 0) {
    fprintf(stderr,
            "redlock-fault-proxy: cannot start (listen 127.0.0.1:%ld, upstream %s:%ld): %s\n"
            "  (the upstream must be an IPv4 address in 127.0.0.0/8 or localhost)\n",
            listen_port, host, upstream_port, uv_strerror(rc));
    return 1;
  }
  if (delay > 0)
    fault_proxy_set_delay(proxy, (unsigned)delay);
  printf("%d\n", fault_proxy_port(proxy));
  fflush(stdout);

  int sig = 0;
  while (sigwait(&stop_signals, &sig) != 0) {
  }
  fault_proxy_stop(proxy);
  return 0;
}
