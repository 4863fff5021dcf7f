/* notify.h: release notifications for waiting lockers.  Our release script
 * PUBLISHes on "__redlock_release__:<key>" when it deletes a key.  A waiter
 * subscribes to that channel on every master through one subscriber
 * connection per master, shared by all waiters of the client, with the
 * subscriptions ref-counted per channel; it retries as soon as a release is
 * announced instead of sleeping blindly.  Expiry and other clients' releases
 * publish nothing: waiters keep a jittered fallback timer for those.
 *
 * A cluster voter of Redis >= 7.0 announces with SPUBLISH on the channel's
 * shard instead (it stays inside the slot's shard; a PUBLISH crosses the
 * cluster bus to every node): its channels are subscribed with SSUBSCRIBE
 * at the primary that holds each channel's slot, through one "shard
 * subscriber" connection per (master, primary) that has waiters.  A shard
 * subscription the server ends (its slot moved away: SUNSUBSCRIBE) or
 * refuses (MOVED) drops that connection: its channels are subscribed again,
 * each at its slot's primary then, after the reconnect backoff. */
#ifndef REDLOCK_NOTIFY_H
#define REDLOCK_NOTIFY_H

#include <stddef.h>

#include "util/list.h"
#include "util/names.h" /* NOTIFY_CHANNEL_PREFIX */
#include "util/status.h"
#include "voters/node.h"

/* Whom a release announced on a channel wakes (the first waiter decides). */
#define NOTIFY_WAKE_ONE 0  /* a lock: the longest waiter (one can win it) */
#define NOTIFY_WAKE_ALL 1  /* a read-write lock: every waiter (a writer's release may admit all) */
#define NOTIFY_WAKE_EACH 2 /* a semaphore: one waiter per distinct release (message) */

typedef struct notify_channel notify_channel_t;
typedef struct notify_subscriber notify_subscriber_t;

/* One waiter, embedded by its owner (a waiting lock call). */
typedef struct notify_waiter {
  list_node_t link;          /* notify.c: its channel's waiters */
  notify_channel_t *channel; /* notify.c: NULL while not registered (the owner may test it) */
  int in_attempt;            /* owner: an attempt is out; a release then only marks it woken */
  int woken;                 /* owner: a release was announced during the attempt */
} notify_waiter_t;

/* A watcher (an election's observer), embedded by its owner: unlike a
 * waiter it is told of every announcement on its channel, releases and
 * grants alike, and takes no waiter's turn (a lock's release still wakes
 * one waiter). */
typedef struct notify_watcher {
  list_node_t link;          /* notify.c: its channel's watchers */
  notify_channel_t *channel; /* notify.c: NULL while not registered */
  /* owner: something was announced on the channel, or its subscription
   * was first confirmed (an announcement before it may have been missed).
   * Must not unregister w. */
  void (*heard)(struct notify_watcher *w);
} notify_watcher_t;

/* The payload of a grant's announcement: an election that won a term says
 * so on the release channel of its key (NOTIFY_GRANT_PAYLOAD then the term
 * in decimal).  Only watchers hear it: a waiter woken by it would only
 * find the key taken. */
#define NOTIFY_GRANT_PAYLOAD "granted:"

/* The notifier of one client: its channels and one subscriber connection per
 * master (made by the first waiter).  Everything runs on the loop thread. */
typedef struct notify {
  const node_env_t *env; /* loop, flusher, TLS, log, random, connect timeout */
  const node_t *nodes;   /* the masters: address, and the IP their lookup found */
  unsigned n_nodes;
  /* A release was announced for w's channel: the owner retries now (or,
   * with w->in_attempt, marks it woken).  May unregister w. */
  void (*wake)(void *arg, notify_waiter_t *w);
  void *arg;
  /* Optional (owner, set after notify_init): the master whose connection
   * master i's subscriber follows (its address, and the IP its lookup
   * found), asked before each connection attempt; NULL: nodes[i].  A
   * cluster voter of servers without shard channels names one of its
   * primaries that is up: the cluster bus carries a PUBLISH to every node,
   * so a subscription at any of them hears every release. */
  const node_t *(*via)(void *via_arg, unsigned i);
  /* Optional (owner, set after notify_init): whether master i announces on
   * shard channels (1; *node: the node whose server holds `slot`, the
   * channel's, or NULL while unknown: its waiters poll), or on plain ones
   * (0: followed at via).  Asked whenever a channel is to be subscribed. */
  int (*shard_via)(void *via_arg, unsigned i, int slot, const node_t **node);
  /* Optional: master i's shard subscription got an error reply (len
   * bytes), say a MOVED the owner may learn the slot's primary from. */
  void (*shard_refused)(void *via_arg, unsigned i, const char *error, size_t len);
  void *via_arg;
  int closing;                      /* owner: no reconnects any more */
  list_node_t channels;             /* with waiters or live subscriptions */
  notify_subscriber_t *subscribers; /* per master, made by the first waiter */
  list_node_t shard_subs;           /* the shard subscribers (notify_subscriber_t.in_shard) */
  unsigned n_shard_subs;
  unsigned timers_open;      /* subscriber timers not yet closed after shutdown */
  void (*closed)(void *arg); /* notify_shutdown's done callback */
} notify_t;

void notify_init(notify_t *n, const node_env_t *env, const node_t *nodes, unsigned n_nodes,
                 void (*wake)(void *arg, notify_waiter_t *w), void *arg);
/* Registers w for the channel `name` (len bytes: NOTIFY_CHANNEL_PREFIX + key
 * for a lock), woken as wake_mode says.  ST_OK, or ST_ENOMEM (the waiter
 * then just polls).  A registered waiter is left as it is. */
status_t notify_wait(notify_t *n, notify_waiter_t *w, const char *name, size_t len, int wake_mode);
/* The waiter's attempt ended (lost): the channel may wake a waiter again. */
void notify_attempt_done(notify_waiter_t *w);
/* A release was announced on the channel `name` (what a master's message
 * does; payload: the message's, or NULL): wakes its waiters, if any.  The
 * engine's unit tests announce through it, having no subscriber connection. */
void notify_announce(notify_t *n, const char *name, size_t len, const char *payload,
                     size_t payload_len);
/* Unregisters (no-op when not registered). */
void notify_unwait(notify_t *n, notify_waiter_t *w);
/* Registers w (its `heard` set) for the channel `name` (len bytes), as
 * notify_wait: ST_OK, or ST_ENOMEM (the watcher then polls). */
status_t notify_watch(notify_t *n, notify_watcher_t *w, const char *name, size_t len);
/* Unregisters (no-op when not registered). */
void notify_unwatch(notify_t *n, notify_watcher_t *w);
/* Closes the subscriber connections; closed(arg) runs once their handles are
 * closed (at once, from inside this call, when there were none). */
void notify_shutdown(notify_t *n, void (*closed)(void *arg));
/* Frees the channels and subscribers (after closed ran). */
void notify_free(notify_t *n);

#endif
