/* notify.c: subscriber connections and channel subscriptions (see notify.h).
 *
 * Each (channel, master) pair is NONE, SUBSCRIBING, SUBSCRIBED or
 * UNSUBSCRIBING.  hiredis forgets a channel's callback when an UNSUBSCRIBE
 * confirmation arrives, even if a new SUBSCRIBE for it was sent meanwhile, so
 * we never send one while the other is unconfirmed: a channel wanted again
 * while UNSUBSCRIBING is re-subscribed when the confirmation comes.
 *
 * Shard channels (a shard subscriber): hiredis (0.14 to 1.2) knows
 * SUBSCRIBE but not SSUBSCRIBE.  It hands a push to a callback by channel
 * name only for a channel it saw SUBSCRIBEd, and it would queue SSUBSCRIBE,
 * on a subscribed context, as an ordinary command waiting for a reply that
 * is not a push, which never comes.  So a shard subscription is made in two
 * steps, each waiting for the server's answer:
 *   SUBSCRIBING:  SUBSCRIBE ch (a plain one: hiredis learns the name, so
 *                 the channel's "ssubscribe", "smessage" and "sunsubscribe"
 *                 come to our callback; it also hears a PUBLISH on ch,
 *                 harmless, and how an older client's release still wakes)
 *   SSUBSCRIBING: SSUBSCRIBE ch, queued as if the context were not
 *                 subscribed: its callback takes the next reply, whatever it
 *                 is (every callback of the connection is this file's one,
 *                 which reads what a reply is, so that is harmless)
 * and ended in two: SUNSUBSCRIBING (SUNSUBSCRIBE ch, queued the same way),
 * then UNSUBSCRIBING (UNSUBSCRIBE ch).  One step is out at a time on a
 * shard subscriber (sub->busy), so that hiredis's own bookkeeping of the
 * plain confirmations never meets a reply taken by such a callback. */
#include "voters/notify.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "conn/conn.h"
#include "conn/link.h"
#include "proto/keyslot.h"
#include "proto/reply.h"
#include "redlock.h"
#include "util/alloc.h"

typedef enum {
  SUB_NONE = 0,
  SUB_SUBSCRIBING,
  SUB_SUBSCRIBED,
  SUB_UNSUBSCRIBING,
  SUB_SSUBSCRIBING,  /* a shard subscriber's second step */
  SUB_SUNSUBSCRIBING /* a shard subscriber's first step of the end */
} sub_state_t;

/* A semaphore's release is announced by every master, each message carrying
 * the permit's value: the last RECENT_RELEASES values seen tell a new release
 * from another master's copy of one already seen, and which waiter that
 * release woke.  (A copy that arrives after that many other releases only
 * costs a spurious wake-up.) */
#define RECENT_RELEASES 32
#define RECENT_PAYLOAD_MAX 64

typedef struct {
  unsigned next;
  uint8_t len[RECENT_RELEASES];
  char data[RECENT_RELEASES][RECENT_PAYLOAD_MAX];
  const notify_waiter_t *woke[RECENT_RELEASES]; /* compared, never dereferenced: may be gone */
} recent_t;

struct notify_channel {
  notify_t *n;      /* const */
  list_node_t link; /* n->channels */
  list_node_t waiters;
  unsigned n_waiters;
  list_node_t watchers; /* notify_watcher_t.link */
  unsigned n_watchers;
  unsigned busy;           /* > 0 while waking: do not free */
  notify_waiter_t *waking; /* the waiter woken by a release, until its attempt ends */
  int confirmed;           /* some master confirmed the subscription */
  int wake_mode;           /* NOTIFY_WAKE_* */
  recent_t *recent;        /* NOTIFY_WAKE_EACH: the last releases seen */
  char *name;
  size_t name_len;
  int slot; /* const: the name's hash slot (a shard channel's primary holds it) */
  /* Per master: where its subscription is (sub_state_t), and the subscriber
   * carrying it (set while not SUB_NONE). */
  struct {
    uint8_t state;
    notify_subscriber_t *sub;
  } at[];
};

/* A subscriber connection (loop thread): a master's plain-channel one
 * (n->subscribers[index]), or a shard subscriber of master `index` at one
 * primary of its cluster (n->shard_subs). */
struct notify_subscriber {
  notify_t *n;          /* const */
  unsigned index;       /* const: its master */
  const node_t *shard;  /* const: a shard subscriber's node (it follows its address and
                         * IP), NULL for a plain one */
  list_node_t in_shard; /* n->shard_subs, for a shard subscriber */
  /* A shard subscriber's channel whose step is out (NULL: none); reset
   * with the connection. */
  notify_channel_t *busy;
  link_t link; /* link.c's: connect, AUTH, timeouts, backoff; connected on demand */
};

static void pubsub_reply_cb(redisAsyncContext *ac, void *r, void *privdata);
static void channel_sync(notify_t *n, notify_channel_t *channel, unsigned index);

/* ---- channels ------------------------------------------------------------------ */

static notify_channel_t *channel_find(notify_t *n, const char *name, size_t len) {
  for (list_node_t *it = n->channels.next; it != &n->channels; it = it->next) {
    notify_channel_t *channel = list_entry(it, notify_channel_t, link);
    if (channel->name_len == len && memcmp(channel->name, name, len) == 0)
      return channel;
  }
  return NULL;
}

/* Whether anyone listens on the channel (its subscriptions are wanted). */
static int channel_wanted(const notify_channel_t *channel) {
  return channel->n_waiters > 0 || channel->n_watchers > 0;
}

static void channel_maybe_free(notify_t *n, notify_channel_t *channel) {
  if (channel_wanted(channel) || channel->busy > 0)
    return;
  for (unsigned i = 0; i < n->n_nodes; i++)
    if (channel->at[i].state != SUB_NONE)
      return;
  list_remove(&channel->link);
  rl_free(channel->recent);
  rl_free(channel->name);
  rl_free(channel);
}

/* Points master i's subscriber at the connection it follows (n->via; a
 * shard subscriber stays at its node). */
static void subscriber_aim(notify_subscriber_t *sub) {
  notify_t *n = sub->n;
  if (sub->shard != NULL)
    return;
  const node_t *node = n->via != NULL ? n->via(n->via_arg, sub->index) : NULL;
  if (node == NULL)
    node = &n->nodes[sub->index];
  sub->link.cfg.addr = &node->addr;
  sub->link.cfg.ip_from = &node->link;
}

static status_t shard_subscriber(notify_t *n, unsigned index, const node_t *node,
                                 notify_subscriber_t **out);

/* The subscriber that is to carry master `index`'s subscription of the
 * channel: the master's own, or, for shard channels, the one at the
 * primary of the channel's slot; NULL when there is none now (no primary
 * known for the slot, the notifier closing, or out of memory: the
 * channel's waiters then poll). */
static notify_subscriber_t *subscriber_for(notify_t *n, notify_channel_t *channel, unsigned index) {
  const node_t *node = NULL;
  if (n->shard_via == NULL || n->shard_via(n->via_arg, index, channel->slot, &node) == 0)
    return &n->subscribers[index];
  notify_subscriber_t *sub = NULL;
  if (node != NULL)
    (void)shard_subscriber(n, index, node, &sub);
  return sub;
}

/* The commands' formats are literals ("SUBSCRIBE %b", not "%s %b"):
 * tests/integration/test_oom.c tells hiredis' SUBSCRIBE by its format. */

/* A shard command (SSUBSCRIBE, SUNSUBSCRIBE), queued as if the context
 * were not subscribed (see the top of the file).  1 when queued. */
static int shard_command(notify_subscriber_t *sub, const char *format,
                         const notify_channel_t *channel) {
  redisAsyncContext *ac = sub->link.ac;
  int subscribed = ac->c.flags & REDIS_SUBSCRIBED;
  ac->c.flags &= ~REDIS_SUBSCRIBED;
  int rc = redisAsyncCommand(ac, pubsub_reply_cb, sub, format, channel->name, channel->name_len);
  ac->c.flags |= subscribed;
  return rc == REDIS_OK;
}

static int plain_command(notify_subscriber_t *sub, const char *format,
                         const notify_channel_t *channel) {
  return redisAsyncCommand(sub->link.ac, pubsub_reply_cb, sub, format, channel->name,
                           channel->name_len) == REDIS_OK;
}

/* Brings one master's subscription in line with whether anyone waits. */
static void channel_sync(notify_t *n, notify_channel_t *channel, unsigned index) {
  int wanted = channel_wanted(channel);
  notify_subscriber_t *sub = channel->at[index].sub;
  if (channel->at[index].state == SUB_NONE) {
    if (!wanted || n->closing || (sub = subscriber_for(n, channel, index)) == NULL)
      return;
    channel->at[index].sub = sub;
  }
  if (sub->link.state == LINK_DOWN) {
    if (wanted && link_idle(&sub->link)) {
      subscriber_aim(sub);
      link_connect(&sub->link);
    }
    return;
  }
  if (sub->link.ac == NULL || (sub->busy != NULL && sub->busy != channel))
    return; /* a shard subscriber's step is out: this channel's turn comes after */
  int shard = sub->shard != NULL;
  if (wanted && channel->at[index].state == SUB_NONE) {
    if (plain_command(sub, "SUBSCRIBE %b", channel)) {
      channel->at[index].state = SUB_SUBSCRIBING;
      if (shard)
        sub->busy = channel;
    }
  } else if (!wanted && channel->at[index].state == SUB_SUBSCRIBED) {
    if (shard ? shard_command(sub, "SUNSUBSCRIBE %b", channel)
              : plain_command(sub, "UNSUBSCRIBE %b", channel)) {
      channel->at[index].state = shard ? SUB_SUNSUBSCRIBING : SUB_UNSUBSCRIBING;
      if (shard)
        sub->busy = channel;
    }
  }
}

/* A shard subscriber's step is over: the next channel that needs one. */
static void shard_next(notify_subscriber_t *sub) {
  notify_t *n = sub->n;
  unsigned i = sub->index;
  for (list_node_t *it = n->channels.next; it != &n->channels && sub->busy == NULL;) {
    notify_channel_t *channel = list_entry(it, notify_channel_t, link);
    it = it->next;
    int wanted = channel->n_waiters > 0;
    if ((channel->at[i].sub == sub && channel->at[i].state == SUB_SUBSCRIBED && !wanted) ||
        (channel->at[i].state == SUB_NONE && wanted && subscriber_for(n, channel, i) == sub))
      channel_sync(n, channel, i);
  }
}

/* A release: one waiter can win it, so only the longest-waiting one is
 * woken, and goes to the back of the line (a herd of attempts would cost a
 * round each and win nothing more).  If its attempt loses, the lock is held
 * again and the others have nothing to try for; if it fails otherwise, the
 * fallback timers still run.
 *
 * Every master announces the same release, each once it has applied it, so
 * the first announcement can arrive while the others still hold the key: the
 * woken attempt may reach them first and lose.  An announcement during that
 * attempt therefore marks the same waiter woken again (lock_wake on an op in
 * its round), and it tries once more as soon as the attempt ends instead of
 * waiting for its fallback timer: still one waiter, one attempt at a time. */
static void channel_wake_one(notify_t *n, notify_channel_t *channel) {
  if (list_empty(&channel->waiters))
    return;
  if (channel->waking != NULL) {
    channel->busy++;
    n->wake(n->arg, channel->waking);
    channel->busy--;
    channel_maybe_free(n, channel);
    return;
  }
  notify_waiter_t *op = list_entry(channel->waiters.next, notify_waiter_t, link);
  list_remove(&op->link);
  list_insert_tail(&channel->waiters, &op->link);
  channel->busy++;
  channel->waking = op;
  n->wake(n->arg, op);
  channel->busy--;
  channel_maybe_free(n, channel);
}

/* A semaphore's release (payload: the permit's value): the index of its
 * entry when another master's copy was already seen, else -1 after
 * recording it in *slot (-1 too when it cannot be told apart: no payload). */
static int channel_seen(notify_channel_t *channel, const char *payload, size_t len, int *slot) {
  recent_t *recent = channel->recent;
  *slot = -1;
  if (recent == NULL || len == 0 || len > RECENT_PAYLOAD_MAX)
    return -1;
  for (int i = 0; i < RECENT_RELEASES; i++)
    if (recent->len[i] == len && memcmp(recent->data[i], payload, len) == 0)
      return i;
  *slot = (int)(recent->next++ % RECENT_RELEASES);
  memcpy(recent->data[*slot], payload, len);
  recent->len[*slot] = (uint8_t)len;
  recent->woke[*slot] = NULL;
  return -1;
}

static void channel_wake_op(notify_t *n, notify_channel_t *channel, notify_waiter_t *op) {
  channel->busy++;
  n->wake(n->arg, op);
  channel->busy--;
  channel_maybe_free(n, channel);
}

/* A semaphore's release frees one slot, and several may be freed at once:
 * each release wakes one waiter of its own (the longest-waiting idle one, or
 * else one whose attempt is out and that is not yet due to retry), so that a
 * burst of releases does not leave waiters to their fallback timers.  slot:
 * the release's entry in channel->recent (or -1), to remember whom it woke. */
static void channel_wake_each(notify_t *n, notify_channel_t *channel, int slot) {
  notify_waiter_t *chosen = NULL;
  for (list_node_t *it = channel->waiters.next; it != &channel->waiters; it = it->next) {
    notify_waiter_t *op = list_entry(it, notify_waiter_t, link);
    if (!op->in_attempt) {
      chosen = op;
      break;
    }
    if (chosen == NULL && !op->woken)
      chosen = op;
  }
  if (chosen == NULL)
    return; /* every waiter will retry anyway */
  if (slot >= 0)
    channel->recent->woke[slot] = chosen;
  list_remove(&chosen->link);
  list_insert_tail(&channel->waiters, &chosen->link);
  channel_wake_op(n, channel, chosen);
}

/* Another master's copy of a release already seen.  Each master announces
 * once it has applied the release, so the waiter woken by the first copy may
 * have tried that slot where the release had not landed yet, and lost: as
 * for a lock (channel_wake_one), the copy wakes that same waiter again (it
 * retries once its pass ends, or at once if it is idle), if it still waits. */
static void channel_rewake(notify_t *n, notify_channel_t *channel, int seen) {
  const notify_waiter_t *woke = channel->recent->woke[seen];
  for (list_node_t *it = channel->waiters.next; woke != NULL && it != &channel->waiters;
       it = it->next) {
    notify_waiter_t *op = list_entry(it, notify_waiter_t, link);
    if (op == woke) {
      channel_wake_op(n, channel, op);
      return;
    }
  }
}

static void channel_wake(notify_t *n, notify_channel_t *channel) {
  channel->busy++;
  list_node_t *it = channel->waiters.next;
  while (it != &channel->waiters) {
    notify_waiter_t *op = list_entry(it, notify_waiter_t, link);
    it = it->next; /* waking may finish (and unregister) this op */
    n->wake(n->arg, op);
  }
  channel->busy--;
  channel_maybe_free(n, channel);
}

/* ---- subscriber connections ------------------------------------------------------ */

static void subscriber_reset(notify_subscriber_t *sub) {
  notify_t *n = sub->n;
  for (list_node_t *it = n->channels.next; it != &n->channels;) {
    notify_channel_t *channel = list_entry(it, notify_channel_t, link);
    it = it->next;
    if (channel->at[sub->index].sub == sub) {
      channel->at[sub->index].state = SUB_NONE;
      channel->at[sub->index].sub = NULL;
    }
    channel_maybe_free(n, channel);
  }
  sub->busy = NULL;
}

static int any_waiters(notify_t *n) {
  for (list_node_t *it = n->channels.next; it != &n->channels; it = it->next)
    if (channel_wanted(list_entry(it, notify_channel_t, link)))
      return 1;
  return 0;
}

/* The backoff ran out: try again only while someone waits.  A shard
 * subscriber's channels may belong to other primaries by now: each goes
 * where its slot is, and this one reconnects only if some stay here. */
static int subscriber_want_retry(void *arg) {
  notify_subscriber_t *sub = arg;
  notify_t *n = sub->n;
  if (n->closing || !any_waiters(n))
    return 0;
  if (sub->shard == NULL) {
    subscriber_aim(sub); /* a cluster's subscriber may go on to another node */
    return 1;
  }
  int here = 0;
  for (list_node_t *it = n->channels.next; it != &n->channels;) {
    notify_channel_t *channel = list_entry(it, notify_channel_t, link);
    it = it->next;
    if (!channel_wanted(channel) || channel->at[sub->index].state != SUB_NONE)
      continue;
    if (subscriber_for(n, channel, sub->index) == sub)
      here = 1; /* subscribed by the handshake */
    else
      channel_sync(n, channel, sub->index);
  }
  return here;
}

/* The subscriptions are queued behind AUTH, in the same round trip; the
 * subscription callback is registered once, and hiredis routes every
 * channel's confirmations and messages to it by channel name. */
static status_t subscriber_handshake(link_t *link, void *arg) {
  notify_subscriber_t *sub = arg;
  notify_t *n = sub->n;
  (void)link;
  for (list_node_t *it = n->channels.next; it != &n->channels; it = it->next) {
    notify_channel_t *channel = list_entry(it, notify_channel_t, link);
    /* Only the channels that are to be here (another subscriber of the
     * master may carry the rest). */
    if (channel->at[sub->index].state == SUB_NONE && channel_wanted(channel) &&
        subscriber_for(n, channel, sub->index) == sub)
      channel_sync(n, channel, sub->index);
  }
  return ST_OK;
}

static void subscriber_on_link(void *arg, link_t *link, link_event_t ev, int level,
                               const char *what, const char *detail) {
  notify_subscriber_t *sub = arg;
  notify_t *n = sub->n;
  (void)level;
  if (ev == LINK_EV_DOWN) {
    log_write(n->env->log, link->failures == 0 ? REDLOCK_LOG_INFO : REDLOCK_LOG_DEBUG,
              "%s %s: release notifications unavailable (%s%s%s); waiters poll meanwhile",
              sub->shard != NULL ? "primary" : "master", link->cfg.addr->label, what,
              detail != NULL ? ": " : "", detail != NULL ? detail : "");
  } else if (ev == LINK_EV_RETRY) {
    subscriber_reset(sub);
  } else if (ev == LINK_EV_CLOSED) {
    if (--n->timers_open == 0)
      n->closed(n->arg);
  }
}

/* Tells every watcher of the channel (the caller keeps the channel: busy). */
static void channel_tell_watchers(notify_channel_t *channel) {
  for (list_node_t *it = channel->watchers.next; it != &channel->watchers;) {
    notify_watcher_t *w = list_entry(it, notify_watcher_t, link);
    it = it->next;
    w->heard(w);
  }
}

/* Whom an announcement on the channel wakes: its waiters, as its wake mode
 * says (payload: a semaphore permit's value, or none); a grant frees
 * nothing (the waiters would find the key taken), so it wakes none. */
static void channel_wake_for(notify_t *n, notify_channel_t *channel, const char *payload,
                             size_t payload_len) {
  static const size_t grant_len = sizeof NOTIFY_GRANT_PAYLOAD - 1;
  if (payload != NULL && payload_len >= grant_len &&
      memcmp(payload, NOTIFY_GRANT_PAYLOAD, grant_len) == 0)
    return;
  switch (channel->wake_mode) {
  case NOTIFY_WAKE_ALL:
    channel_wake(n, channel);
    break;
  case NOTIFY_WAKE_EACH: {
    int slot = -1;
    int seen = channel_seen(channel, payload, payload_len, &slot);
    if (seen >= 0)
      channel_rewake(n, channel, seen);
    else
      channel_wake_each(n, channel, slot);
    break;
  }
  default:
    channel_wake_one(n, channel);
    break;
  }
}

/* A master announced on the channel (a release, or an election's grant):
 * its watchers are told, then its waiters woken (channel_wake_for).  The
 * channel stays while they run, whoever of them leaves it. */
static void channel_announced(notify_t *n, notify_channel_t *channel, const char *payload,
                              size_t payload_len) {
  channel->busy++;
  channel_tell_watchers(channel);
  channel_wake_for(n, channel, payload, payload_len);
  channel->busy--;
  channel_maybe_free(n, channel);
}

void notify_announce(notify_t *n, const char *name, size_t len, const char *payload,
                     size_t payload_len) {
  notify_channel_t *channel = channel_find(n, name, len);
  if (channel != NULL)
    channel_announced(n, channel, payload, payload_len);
}

/* The subscription of master i is confirmed. */
static void subscribed(notify_t *n, notify_channel_t *channel, unsigned i) {
  channel->at[i].state = SUB_SUBSCRIBED;
  if (!channel_wanted(channel)) {
    channel_sync(n, channel, i);
  } else if (!channel->confirmed) {
    /* A release between a waiter's failed attempt (a watcher's read) and
     * this subscription was missed: the waiters try once more now, the
     * watchers read again. */
    channel->confirmed = 1;
    channel->busy++;
    channel_tell_watchers(channel);
    if (channel->n_waiters > 0)
      channel_wake(n, channel);
    channel->busy--;
    channel_maybe_free(n, channel);
  }
}

static void unsubscribed(notify_t *n, notify_channel_t *channel, unsigned i) {
  channel->at[i].state = SUB_NONE;
  channel->at[i].sub = NULL;
  channel_sync(n, channel, i);
  channel_maybe_free(n, channel);
}

/* A shard subscriber's answer for the channel (kind: what it is): the
 * next step, and once the channel's steps are over, the next channel's. */
static void shard_step(notify_subscriber_t *sub, notify_channel_t *channel, pubsub_kind_t kind) {
  notify_t *n = sub->n;
  unsigned i = sub->index;
  uint8_t state = channel->at[i].state;
  if (kind == PUBSUB_SUNSUBSCRIBE && (state == SUB_SUBSCRIBED || state == SUB_SSUBSCRIBING)) {
    /* Unasked: the channel's slot moved to another primary. */
    link_fail(&sub->link, REDLOCK_LOG_INFO, "shard subscription ended",
              "the channel's slot moved to another primary");
    return;
  }
  if (sub->busy != channel)
    return;
  channel->busy++; /* waking may unregister its last waiter */
  if (kind == PUBSUB_SUBSCRIBE && state == SUB_SUBSCRIBING) {
    if (shard_command(sub, "SSUBSCRIBE %b", channel))
      channel->at[i].state = SUB_SSUBSCRIBING;
    else
      link_fail(&sub->link, REDLOCK_LOG_WARN, "cannot subscribe", "out of memory");
  } else if (kind == PUBSUB_SSUBSCRIBE && state == SUB_SSUBSCRIBING) {
    sub->busy = NULL;
    subscribed(n, channel, i);
  } else if (kind == PUBSUB_SUNSUBSCRIBE && state == SUB_SUNSUBSCRIBING) {
    if (plain_command(sub, "UNSUBSCRIBE %b", channel))
      channel->at[i].state = SUB_UNSUBSCRIBING;
    else
      link_fail(&sub->link, REDLOCK_LOG_WARN, "cannot unsubscribe", "out of memory");
  } else if (kind == PUBSUB_UNSUBSCRIBE && state == SUB_UNSUBSCRIBING) {
    sub->busy = NULL;
    channel->at[i].state = SUB_NONE;
    channel->at[i].sub = NULL;
    channel_sync(n, channel, i);
  }
  channel->busy--;
  channel_maybe_free(n, channel);
  if (sub->busy == NULL)
    shard_next(sub);
}

/* Every subscription reply and message arrives here (privdata = subscriber). */
static void pubsub_reply_cb(redisAsyncContext *ac, void *r, void *privdata) {
  notify_subscriber_t *sub = privdata;
  redisReply *reply = r;
  const char *name;
  size_t name_len;
  pubsub_kind_t kind;
  if (reply == NULL || sub->link.ac != ac)
    return;
  if (sub->shard != NULL && reply->type == REDIS_REPLY_ERROR) {
    /* Its step was refused: the slot is not here (MOVED), the cluster is
     * down, the server cannot.  Subscribed again, each channel where the
     * map then says, after the backoff. */
    if (sub->n->shard_refused != NULL && reply->str != NULL)
      sub->n->shard_refused(sub->n->via_arg, sub->index, reply->str, reply->len);
    link_fail(&sub->link, REDLOCK_LOG_INFO, "shard subscription refused", reply->str);
    return;
  }
  if ((kind = reply_pubsub(reply, &name, &name_len)) == PUBSUB_OTHER)
    return;
  notify_t *n = sub->n;
  link_replied(&sub->link);
  notify_channel_t *channel = channel_find(n, name, name_len);
  if (channel == NULL)
    return;
  unsigned i = sub->index;
  if (kind == PUBSUB_MESSAGE) {
    const char *payload = NULL;
    size_t payload_len = 0;
    (void)reply_pubsub_payload(reply, &payload, &payload_len); /* untouched when none */
    channel_announced(n, channel, payload, payload_len);
    return;
  }
  if (channel->at[i].sub != sub)
    return; /* not this subscriber's (any more) */
  if (sub->shard != NULL)
    shard_step(sub, channel, kind);
  else if (kind == PUBSUB_SUBSCRIBE && channel->at[i].state == SUB_SUBSCRIBING)
    subscribed(n, channel, i);
  else if (kind == PUBSUB_UNSUBSCRIBE && channel->at[i].state == SUB_UNSUBSCRIBING)
    unsubscribed(n, channel, i);
}

/* ---- waiters ----------------------------------------------------------------------- */

/* A subscriber of master index that follows node's address (and the IP
 * its lookup found). */
static void subscriber_setup(notify_t *n, notify_subscriber_t *sub, unsigned index,
                             const node_t *node) {
  const node_env_t *env = n->env;
  link_io_t io = {.loop = env->loop, .flusher = env->flusher, .tls = env->tls, .rng = env->rng};
  sub->n = n;
  sub->index = index;
  link_init(&sub->link,
            &(link_cfg_t){
                .addr = &node->addr,
                .tb = env->tb,
                .log = env->log,
                .role = sub->shard != NULL ? "shard subscriber to primary" : "subscriber to master",
                .connect_timeout_ms = &env->connect_timeout_ms,
                .backoff_base_ms = NODE_BACKOFF_BASE_MS,
                .backoff_cap_ms = NODE_BACKOFF_CAP_MS,
                .stable_ms = 0, /* any subscription made resets the backoff */
                .ip_from = &node->link,
                .handshake = subscriber_handshake,
                .want_retry = subscriber_want_retry,
                .event = subscriber_on_link,
                .arg = sub,
            });
  /* A link without a timer stays down: its waiters poll. */
  (void)link_attach(&sub->link, &io);
}

static status_t subscribers_init(notify_t *n) {
  if (n->subscribers != NULL)
    return ST_OK;
  n->subscribers = rl_calloc(n->n_nodes, sizeof *n->subscribers);
  if (n->subscribers == NULL)
    return ST_ENOMEM;
  for (unsigned i = 0; i < n->n_nodes; i++)
    subscriber_setup(n, &n->subscribers[i], i, &n->nodes[i]);
  return ST_OK;
}

/* Master index's shard subscriber at node in *out, made on first use:
 * ST_OK, or *out NULL with ST_ECLOSED (the notifier is closing: none is
 * made) or ST_ENOMEM. */
static status_t shard_subscriber(notify_t *n, unsigned index, const node_t *node,
                                 notify_subscriber_t **out) {
  *out = NULL;
  if (n->closing)
    return ST_ECLOSED;
  for (list_node_t *it = n->shard_subs.next; it != &n->shard_subs; it = it->next) {
    notify_subscriber_t *sub = list_entry(it, notify_subscriber_t, in_shard);
    if (sub->index == index && sub->shard == node) {
      *out = sub;
      return ST_OK;
    }
  }
  notify_subscriber_t *sub = rl_calloc(1, sizeof *sub);
  if (sub == NULL)
    return ST_ENOMEM;
  sub->shard = node;
  subscriber_setup(n, sub, index, node);
  list_insert_tail(&n->shard_subs, &sub->in_shard);
  n->n_shard_subs++;
  *out = sub;
  return ST_OK;
}

void notify_init(notify_t *n, const node_env_t *env, const node_t *nodes, unsigned n_nodes,
                 void (*wake)(void *arg, notify_waiter_t *w), void *arg) {
  memset(n, 0, sizeof *n);
  n->env = env;
  n->nodes = nodes;
  n->n_nodes = n_nodes;
  n->wake = wake;
  n->arg = arg;
  list_init(&n->channels);
  list_init(&n->shard_subs);
}

/* Brings every master's subscription of the channel in line. */
static void channel_sync_all(notify_t *n, notify_channel_t *channel) {
  for (unsigned i = 0; i < n->n_nodes; i++)
    channel_sync(n, channel, i);
}

/* A waiter or watcher left the channel: the last one unsubscribes it. */
static void channel_left(notify_t *n, notify_channel_t *channel) {
  if (!channel_wanted(channel)) {
    channel->confirmed = 0;
    channel_sync_all(n, channel);
  }
  channel_maybe_free(n, channel);
}

/* The channel `name`, made on first use; a channel nobody waits on yet
 * takes the first waiter's wake mode (wake_mode < 0: a watcher's, which
 * sets none).  ST_OK or ST_ENOMEM. */
static status_t channel_get(notify_t *n, const char *name_in, size_t len, int wake_mode,
                            notify_channel_t **out) {
  if (subscribers_init(n) != 0)
    return ST_ENOMEM;
  notify_channel_t *channel = channel_find(n, name_in, len);
  if (channel == NULL) {
    char *name = rl_malloc(len + 1);
    channel = rl_calloc(1, sizeof *channel + n->n_nodes * sizeof channel->at[0]);
    if (name == NULL || channel == NULL) {
      rl_free(channel);
      rl_free(name);
      return ST_ENOMEM;
    }
    memcpy(name, name_in, len);
    name[len] = '\0';
    channel->n = n;
    channel->name = name;
    channel->name_len = len;
    channel->slot = keyslot(name, len);
    list_init(&channel->waiters);
    list_init(&channel->watchers);
    list_insert_tail(&n->channels, &channel->link);
  }
  if (wake_mode >= 0 && channel->n_waiters == 0) {
    if (wake_mode == NOTIFY_WAKE_EACH && channel->recent == NULL &&
        (channel->recent = rl_calloc(1, sizeof *channel->recent)) == NULL) {
      channel_maybe_free(n, channel);
      return ST_ENOMEM;
    }
    channel->wake_mode = wake_mode;
  }
  *out = channel;
  return ST_OK;
}

status_t notify_wait(notify_t *n, notify_waiter_t *w, const char *name_in, size_t len,
                     int wake_mode) {
  if (w->channel != NULL)
    return ST_OK;
  notify_channel_t *channel;
  if (channel_get(n, name_in, len, wake_mode, &channel) != ST_OK)
    return ST_ENOMEM;
  list_insert_tail(&channel->waiters, &w->link);
  channel->n_waiters++;
  w->channel = channel;
  channel_sync_all(n, channel);
  /* Already subscribed somewhere: the subscription predates this waiter's
   * failed attempt, so no release can have slipped between the two. */
  return ST_OK;
}

status_t notify_watch(notify_t *n, notify_watcher_t *w, const char *name, size_t len) {
  if (w->channel != NULL)
    return ST_OK;
  notify_channel_t *channel;
  if (channel_get(n, name, len, -1, &channel) != ST_OK)
    return ST_ENOMEM;
  list_insert_tail(&channel->watchers, &w->link);
  channel->n_watchers++;
  w->channel = channel;
  channel_sync_all(n, channel);
  return ST_OK;
}

void notify_unwatch(notify_t *n, notify_watcher_t *w) {
  notify_channel_t *channel = w->channel;
  if (channel == NULL)
    return;
  list_remove(&w->link);
  channel->n_watchers--;
  w->channel = NULL;
  channel_left(n, channel);
}

void notify_attempt_done(notify_waiter_t *w) {
  notify_channel_t *channel = w->channel;
  if (channel == NULL)
    return;
  if (channel->waking == w)
    channel->waking = NULL;
  /* A shard channel whose slot's primary was not known: the attempt just
   * made may have taught its voter where the slot is. */
  notify_t *n = channel->n;
  for (unsigned i = 0; i < n->n_nodes; i++)
    if (channel->at[i].state == SUB_NONE)
      channel_sync(n, channel, i);
}

void notify_unwait(notify_t *n, notify_waiter_t *w) {
  notify_channel_t *channel = w->channel;
  if (channel == NULL)
    return;
  notify_attempt_done(w);
  list_remove(&w->link);
  channel->n_waiters--;
  w->channel = NULL;
  channel_left(n, channel);
}

void notify_shutdown(notify_t *n, void (*closed)(void *arg)) {
  n->closing = 1;
  n->closed = closed;
  if (n->subscribers == NULL) {
    closed(n->arg);
    return;
  }
  n->timers_open = n->n_nodes + n->n_shard_subs;
  for (unsigned i = 0; i < n->n_nodes; i++)
    link_shutdown(&n->subscribers[i].link);
  for (list_node_t *it = n->shard_subs.next; it != &n->shard_subs; it = it->next)
    link_shutdown(&list_entry(it, notify_subscriber_t, in_shard)->link);
}

void notify_free(notify_t *n) {
  while (!list_empty(&n->channels)) {
    notify_channel_t *channel = list_entry(n->channels.next, notify_channel_t, link);
    list_remove(&channel->link);
    rl_free(channel->recent);
    rl_free(channel->name);
    rl_free(channel);
  }
  while (!list_empty(&n->shard_subs)) {
    notify_subscriber_t *sub = list_entry(n->shard_subs.next, notify_subscriber_t, in_shard);
    list_remove(&sub->in_shard);
    rl_free(sub);
  }
  n->n_shard_subs = 0;
  rl_free(n->subscribers);
  n->subscribers = NULL;
}
