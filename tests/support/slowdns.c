/* slowdns.c: an LD_PRELOAD shim over getaddrinfo() for the resolver tests
 * (tests/integration/test_resolve.c).  Names the test maps are answered
 * here, after an optional delay, with numeric loopback addresses (in the
 * order given) or "no such name"; every other name goes to the real
 * getaddrinfo().  So the tests never
 * send a DNS query anywhere, and a lookup can be made to hang like a dead
 * resolver's.
 *
 * The test, in the same process, finds the two functions below with dlsym:
 *   slowdns_map(name, ips, delay_ms): answer `name` with `ips`, one address or
 *     several separated by commas ("127.0.0.2,127.0.0.1"; NULL: EAI_NONAME)
 *   slowdns_lookups(name): how many lookups of `name` were asked for. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOWDNS_MAX 32

typedef struct {
  char name[128];
  char ip[256]; /* "" = no such name; else addresses separated by commas */
  int delay_ms;
  int lookups;
} slowdns_entry_t;

/* The shim's whole state (a test-only preload, not library code). */
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static slowdns_entry_t entries[SLOWDNS_MAX];
static int n_entries;

static slowdns_entry_t *find(const char *name) {
  for (int i = 0; i < n_entries; i++)
    if (strcmp(entries[i].name, name) == 0)
      return &entries[i];
  return NULL;
}

int slowdns_map(const char *name, const char *ip, int delay_ms);
int slowdns_map(const char *name, const char *ip, int delay_ms) {
  pthread_mutex_lock(&mutex);
  slowdns_entry_t *e = find(name);
  if (e == NULL && n_entries < SLOWDNS_MAX) {
    e = &entries[n_entries++];
    memset(e, 0, sizeof *e);
    strncpy(e->name, name, sizeof e->name - 1);
  }
  if (e != NULL) {
    strncpy(e->ip, ip != NULL ? ip : "", sizeof e->ip - 1);
    e->delay_ms = delay_ms;
  }
  pthread_mutex_unlock(&mutex);
  return e != NULL ? 0 : -1;
}

int slowdns_lookups(const char *name);
int slowdns_lookups(const char *name) {
  pthread_mutex_lock(&mutex);
  slowdns_entry_t *e = find(name);
  int n = e != NULL ? e->lookups : 0;
  pthread_mutex_unlock(&mutex);
  return n;
}

typedef int (*getaddrinfo_fn)(const char *, const char *, const struct addrinfo *,
                              struct addrinfo **);

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res) {
  getaddrinfo_fn real = (getaddrinfo_fn)dlsym(RTLD_NEXT, "getaddrinfo");
  if (node == NULL)
    return real(node, service, hints, res);
  char ip[256];
  int delay_ms = 0, mapped = 0;
  pthread_mutex_lock(&mutex);
  slowdns_entry_t *e = find(node);
  if (e != NULL) {
    mapped = 1;
    e->lookups++;
    memcpy(ip, e->ip, sizeof ip);
    delay_ms = e->delay_ms;
  }
  pthread_mutex_unlock(&mutex);
  if (!mapped)
    return real(node, service, hints, res);
  if (delay_ms > 0) {
    struct timespec ts = {delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
  }
  if (ip[0] == '\0')
    return EAI_NONAME;
  struct addrinfo numeric;
  memset(&numeric, 0, sizeof numeric);
  if (hints != NULL)
    numeric = *hints;
  numeric.ai_flags |= AI_NUMERICHOST;
  numeric.ai_flags &= ~AI_ADDRCONFIG;
  /* One real lookup per address, chained in order (glibc's freeaddrinfo
   * frees entry by entry, so the chain is freed as one list). */
  struct addrinfo *head = NULL, **tail = &head;
  int rc = EAI_NONAME;
  char *save = NULL;
  for (char *one = strtok_r(ip, ",", &save); one != NULL; one = strtok_r(NULL, ",", &save)) {
    struct addrinfo *part = NULL;
    rc = real(one, service, &numeric, &part);
    if (rc != 0) {
      if (head != NULL)
        freeaddrinfo(head);
      return rc;
    }
    *tail = part;
    while (*tail != NULL)
      tail = &(*tail)->ai_next;
  }
  if (head == NULL)
    return rc;
  *res = head;
  return 0;
}
