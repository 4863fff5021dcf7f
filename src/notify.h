/* notify.h: release notifications for waiting lockers.  Our release script
 * PUBLISHes on "__redlock_release__:<key>" when it deletes a key.  A waiter
 * subscribes to that channel on every master through one subscriber
 * connection per master, shared by all waiters of the client, with the
 * subscriptions ref-counted per channel; it retries as soon as a release is
 * announced instead of sleeping blindly.  Expiry and other clients' releases
 * publish nothing: waiters keep a jittered fallback timer for those. */
#ifndef REDLOCK_NOTIFY_H
#define REDLOCK_NOTIFY_H

#include <stddef.h>

#include "list.h"

struct redlock;
struct op;

#include "names.h" /* NOTIFY_CHANNEL_PREFIX */

/* Whom a release announced on a channel wakes (the first waiter decides). */
#define NOTIFY_WAKE_ONE 0  /* a lock: the longest waiter (one can win it) */
#define NOTIFY_WAKE_ALL 1  /* a read-write lock: every waiter (a writer's release may admit all) */
#define NOTIFY_WAKE_EACH 2 /* a semaphore: one waiter per distinct release (message) */

typedef struct notify_channel notify_channel_t;

/* Registers a waiting lock op for releases of its first key; the op is woken
 * with lock_wake().  0, or REDLOCK_ENOMEM (the op then just polls). */
int notify_wait(struct op *op);
/* The op's attempt ended (lost): the channel may wake a waiter again. */
void notify_attempt_done(struct op *op);
/* Unregisters (no-op when not registered). */
void notify_unwait(struct op *op);
/* Closes the subscriber connections and frees the channels (teardown). */
void notify_shutdown(struct redlock *client);
void notify_free(struct redlock *client);

#endif
