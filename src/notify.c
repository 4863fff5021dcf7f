/* notify.c: subscriber connections and channel subscriptions (see notify.h).
 *
 * Each (channel, master) pair is NONE, SUBSCRIBING, SUBSCRIBED or
 * UNSUBSCRIBING.  hiredis forgets a channel's callback when an UNSUBSCRIBE
 * confirmation arrives, even if a new SUBSCRIBE for it was sent meanwhile, so
 * we never send one while the other is unconfirmed: a channel wanted again
 * while UNSUBSCRIBING is re-subscribed when the confirmation comes. */
#include "notify.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "conn.h"
#include "quorum.h"
#include "reply.h"

typedef enum { SUB_NONE = 0, SUB_SUBSCRIBING, SUB_SUBSCRIBED, SUB_UNSUBSCRIBING } sub_state_t;

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
  const struct op *woke[RECENT_RELEASES]; /* compared, never dereferenced: may be gone */
} recent_t;

typedef enum { SUBSCRIBER_DOWN = 0, SUBSCRIBER_CONNECTING, SUBSCRIBER_READY } subscriber_state_t;

struct notify_channel {
  list_node_t link; /* client->channels */
  list_node_t waiters;
  unsigned n_waiters;
  unsigned busy;     /* > 0 while waking: do not free */
  struct op *waking; /* the waiter woken by a release, until its attempt ends */
  int confirmed;     /* some master confirmed the subscription */
  int wake_mode;     /* NOTIFY_WAKE_* */
  recent_t *recent;  /* NOTIFY_WAKE_EACH: the last releases seen */
  char *name;
  size_t name_len;
  uint8_t state[]; /* sub_state_t per master */
};

struct notify_subscriber {
  redlock_t *client;
  unsigned index;
  subscriber_state_t state;
  redisAsyncContext *ac;
  uv_timer_t timer; /* connect deadline, then reconnect backoff */
  unsigned failures;
};

static void subscriber_connect(notify_subscriber_t *sub);
static void pubsub_reply_cb(redisAsyncContext *ac, void *r, void *privdata);
static void channel_sync(redlock_t *client, notify_channel_t *channel, unsigned index);

/* ---- channels ------------------------------------------------------------------ */

static notify_channel_t *channel_find(redlock_t *client, const char *name, size_t len) {
  for (list_node_t *it = client->channels.next; it != &client->channels; it = it->next) {
    notify_channel_t *channel = list_entry(it, notify_channel_t, link);
    if (channel->name_len == len && memcmp(channel->name, name, len) == 0)
      return channel;
  }
  return NULL;
}

static void channel_maybe_free(redlock_t *client, notify_channel_t *channel) {
  if (channel->n_waiters > 0 || channel->busy > 0)
    return;
  for (unsigned i = 0; i < client->n_nodes; i++)
    if (channel->state[i] != SUB_NONE)
      return;
  list_remove(&channel->link);
  free(channel->recent);
  free(channel->name);
  free(channel);
}

/* Brings one master's subscription in line with whether anyone waits. */
static void channel_sync(redlock_t *client, notify_channel_t *channel, unsigned index) {
  notify_subscriber_t *sub = &client->subscribers[index];
  int wanted = channel->n_waiters > 0;
  if (sub->state == SUBSCRIBER_DOWN) {
    if (wanted && !uv_is_active((uv_handle_t *)&sub->timer))
      subscriber_connect(sub);
    return;
  }
  if (sub->ac == NULL)
    return;
  if (wanted && channel->state[index] == SUB_NONE) {
    if (redisAsyncCommand(sub->ac, pubsub_reply_cb, sub, "SUBSCRIBE %b", channel->name,
                          channel->name_len) == REDIS_OK)
      channel->state[index] = SUB_SUBSCRIBING;
  } else if (!wanted && channel->state[index] == SUB_SUBSCRIBED) {
    if (redisAsyncCommand(sub->ac, pubsub_reply_cb, sub, "UNSUBSCRIBE %b", channel->name,
                          channel->name_len) == REDIS_OK)
      channel->state[index] = SUB_UNSUBSCRIBING;
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
static void channel_wake_one(redlock_t *client, notify_channel_t *channel) {
  if (list_empty(&channel->waiters))
    return;
  if (channel->waking != NULL) {
    channel->busy++;
    lock_wake(channel->waking);
    channel->busy--;
    channel_maybe_free(client, channel);
    return;
  }
  op_t *op = list_entry(channel->waiters.next, op_t, wait_link);
  list_remove(&op->wait_link);
  list_insert_tail(&channel->waiters, &op->wait_link);
  channel->busy++;
  channel->waking = op;
  lock_wake(op);
  channel->busy--;
  channel_maybe_free(client, channel);
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

static void channel_wake_op(redlock_t *client, notify_channel_t *channel, op_t *op) {
  channel->busy++;
  lock_wake(op);
  channel->busy--;
  channel_maybe_free(client, channel);
}

/* A semaphore's release frees one slot, and several may be freed at once:
 * each release wakes one waiter of its own (the longest-waiting idle one, or
 * else one whose attempt is out and that is not yet due to retry), so that a
 * burst of releases does not leave waiters to their fallback timers.  slot:
 * the release's entry in channel->recent (or -1), to remember whom it woke. */
static void channel_wake_each(redlock_t *client, notify_channel_t *channel, int slot) {
  op_t *chosen = NULL;
  for (list_node_t *it = channel->waiters.next; it != &channel->waiters; it = it->next) {
    op_t *op = list_entry(it, op_t, wait_link);
    if (!op->in_round) {
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
  list_remove(&chosen->wait_link);
  list_insert_tail(&channel->waiters, &chosen->wait_link);
  channel_wake_op(client, channel, chosen);
}

/* Another master's copy of a release already seen.  Each master announces
 * once it has applied the release, so the waiter woken by the first copy may
 * have tried that slot where the release had not landed yet, and lost: as
 * for a lock (channel_wake_one), the copy wakes that same waiter again (it
 * retries once its pass ends, or at once if it is idle), if it still waits. */
static void channel_rewake(redlock_t *client, notify_channel_t *channel, int seen) {
  const op_t *woke = channel->recent->woke[seen];
  for (list_node_t *it = channel->waiters.next; woke != NULL && it != &channel->waiters;
       it = it->next) {
    op_t *op = list_entry(it, op_t, wait_link);
    if (op == woke) {
      channel_wake_op(client, channel, op);
      return;
    }
  }
}

static void channel_wake(redlock_t *client, notify_channel_t *channel) {
  channel->busy++;
  list_node_t *it = channel->waiters.next;
  while (it != &channel->waiters) {
    op_t *op = list_entry(it, op_t, wait_link);
    it = it->next; /* waking may finish (and unregister) this op */
    lock_wake(op);
  }
  channel->busy--;
  channel_maybe_free(client, channel);
}

/* ---- subscriber connections ------------------------------------------------------ */

static void subscriber_reset(notify_subscriber_t *sub) {
  redlock_t *client = sub->client;
  for (list_node_t *it = client->channels.next; it != &client->channels;) {
    notify_channel_t *channel = list_entry(it, notify_channel_t, link);
    it = it->next;
    channel->state[sub->index] = SUB_NONE;
    channel_maybe_free(client, channel);
  }
}

static int any_waiters(redlock_t *client) {
  for (list_node_t *it = client->channels.next; it != &client->channels; it = it->next)
    if (list_entry(it, notify_channel_t, link)->n_waiters > 0)
      return 1;
  return 0;
}

static void backoff_cb(uv_timer_t *timer) {
  notify_subscriber_t *sub = timer->data;
  if (sub->state == SUBSCRIBER_DOWN && any_waiters(sub->client))
    subscriber_connect(sub);
}

static void subscriber_fail(notify_subscriber_t *sub, const char *why) {
  redlock_t *client = sub->client;
  redisAsyncContext *ac = sub->ac;
  sub->ac = NULL;
  sub->state = SUBSCRIBER_DOWN;
  conn_close(ac);
  subscriber_reset(sub);
  client_log(client, sub->failures == 0 ? REDLOCK_LOG_INFO : REDLOCK_LOG_DEBUG,
             "master %s: release notifications unavailable (%s); waiters poll meanwhile",
             client->nodes[sub->index].addr.label, why);
  uint64_t delay = quorum_backoff_ms(sub->failures, NODE_BACKOFF_BASE_MS, NODE_BACKOFF_CAP_MS,
                                     client_random(client));
  if (sub->failures < 32)
    sub->failures++;
  uv_timer_stop(&sub->timer);
  if (!client->close_started)
    uv_timer_start(&sub->timer, backoff_cb, delay, 0);
}

static void subscriber_ready(notify_subscriber_t *sub) {
  if (sub->state != SUBSCRIBER_CONNECTING)
    return;
  sub->state = SUBSCRIBER_READY;
  sub->failures = 0;
  uv_timer_stop(&sub->timer);
}

static void connect_timeout_cb(uv_timer_t *timer) { subscriber_fail(timer->data, "timeout"); }

static void on_connect(const redisAsyncContext *ac, int status) {
  notify_subscriber_t *sub = ac->data;
  if (sub == NULL || sub->ac != ac || status == REDIS_OK)
    return;
  ((redisAsyncContext *)ac)->data = NULL; /* hiredis frees it after this callback */
  sub->ac = NULL;
  subscriber_fail(sub, conn_error(ac));
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
  (void)status;
  notify_subscriber_t *sub = ac->data;
  if (sub == NULL || sub->ac != ac)
    return;
  sub->ac = NULL; /* hiredis frees it after this callback */
  subscriber_fail(sub, conn_error(ac));
}

static void auth_reply_cb(redisAsyncContext *ac, void *r, void *privdata) {
  notify_subscriber_t *sub = privdata;
  redisReply *reply = r;
  if (reply == NULL || sub->ac != ac)
    return;
  if (reply->type == REDIS_REPLY_ERROR)
    subscriber_fail(sub, reply->str);
  else
    subscriber_ready(sub);
}

/* Every subscription reply and message arrives here (privdata = subscriber). */
static void pubsub_reply_cb(redisAsyncContext *ac, void *r, void *privdata) {
  notify_subscriber_t *sub = privdata;
  redisReply *reply = r;
  const char *name;
  size_t name_len;
  pubsub_kind_t kind;
  if (reply == NULL || sub->ac != ac ||
      (kind = reply_pubsub(reply, &name, &name_len)) == PUBSUB_OTHER)
    return;
  redlock_t *client = sub->client;
  subscriber_ready(sub);
  notify_channel_t *channel = channel_find(client, name, name_len);
  if (channel == NULL)
    return;
  unsigned i = sub->index;
  if (kind == PUBSUB_MESSAGE) {
    const char *payload = NULL;
    size_t payload_len = 0;
    switch (channel->wake_mode) {
    case NOTIFY_WAKE_ALL:
      channel_wake(client, channel);
      break;
    case NOTIFY_WAKE_EACH: {
      int slot = -1, seen = -1;
      if (reply_pubsub_payload(reply, &payload, &payload_len))
        seen = channel_seen(channel, payload, payload_len, &slot);
      if (seen >= 0)
        channel_rewake(client, channel, seen);
      else
        channel_wake_each(client, channel, slot);
      break;
    }
    default:
      channel_wake_one(client, channel);
      break;
    }
  } else if (kind == PUBSUB_SUBSCRIBE) {
    channel->state[i] = SUB_SUBSCRIBED;
    if (channel->n_waiters == 0) {
      channel_sync(client, channel, i);
    } else if (!channel->confirmed) {
      /* A release between a waiter's failed attempt and this subscription
       * was missed: the waiters try once more now. */
      channel->confirmed = 1;
      channel_wake(client, channel);
    }
  } else if (kind == PUBSUB_UNSUBSCRIBE) {
    channel->state[i] = SUB_NONE;
    channel_sync(client, channel, i);
    channel_maybe_free(client, channel);
  }
}

static void subscriber_connect(notify_subscriber_t *sub) {
  redlock_t *client = sub->client;
  const node_t *node = &client->nodes[sub->index];
  const node_addr_t *addr = &node->addr;
  if (addr->kind == NODE_ADDR_TCP && node_ip(node)[0] == '\0') {
    subscriber_fail(sub, "the master's host name is not resolved yet");
    return;
  }
  char err[256];
  redisAsyncContext *ac =
      conn_open(addr, node_ip(node), client->tls, client->loop, &client->flusher, sub, on_connect,
                on_disconnect, err, sizeof err);
  if (ac == NULL) {
    subscriber_fail(sub, err);
    return;
  }
  sub->ac = ac;
  sub->state = SUBSCRIBER_CONNECTING;
  int auth = conn_queue_auth(ac, addr, auth_reply_cb, sub);
  if (auth < 0) {
    subscriber_fail(sub, "cannot queue AUTH");
    return;
  }
  /* The subscription callback is registered once; hiredis routes every
   * channel's confirmations and messages to it by channel name. */
  for (list_node_t *it = client->channels.next; it != &client->channels; it = it->next)
    channel_sync(client, list_entry(it, notify_channel_t, link), sub->index);
  uv_timer_start(&sub->timer, connect_timeout_cb, client->opts.connect_timeout_ms, 0);
}

/* ---- waiters ----------------------------------------------------------------------- */

static int subscribers_init(redlock_t *client) {
  if (client->subscribers != NULL)
    return 0;
  client->subscribers = calloc(client->n_nodes, sizeof *client->subscribers);
  if (client->subscribers == NULL)
    return REDLOCK_ENOMEM;
  for (unsigned i = 0; i < client->n_nodes; i++) {
    notify_subscriber_t *sub = &client->subscribers[i];
    sub->client = client;
    sub->index = i;
    uv_timer_init(client->loop, &sub->timer);
    sub->timer.data = sub;
    client->handles_open++;
  }
  return 0;
}

int notify_wait(op_t *op) {
  redlock_t *client = op->client;
  if (op->channel != NULL)
    return 0;
  if (subscribers_init(client) != 0)
    return REDLOCK_ENOMEM;
  /* A lock's channel is named after its key; a permit's or a read-write
   * hold's was named when its op was made (prims.h). */
  const char *prefix = NOTIFY_CHANNEL_PREFIX, *key = op->keys[0];
  size_t prefix_len = sizeof NOTIFY_CHANNEL_PREFIX - 1, key_len = op->key_lens[0];
  if (op->prim.channel != NULL) {
    prefix_len = 0;
    key = op->prim.channel;
    key_len = op->prim.channel_len;
  }
  size_t len = prefix_len + key_len;
  char *name = malloc(len + 1);
  if (name == NULL)
    return REDLOCK_ENOMEM;
  memcpy(name, prefix, prefix_len);
  memcpy(name + prefix_len, key, key_len);
  name[len] = '\0';
  notify_channel_t *channel = channel_find(client, name, len);
  if (channel == NULL) {
    int mode = prim_wake_mode(op);
    channel = calloc(1, sizeof *channel + client->n_nodes);
    recent_t *recent = mode == NOTIFY_WAKE_EACH ? calloc(1, sizeof *recent) : NULL;
    if (channel == NULL || (mode == NOTIFY_WAKE_EACH && recent == NULL)) {
      free(channel);
      free(recent);
      free(name);
      return REDLOCK_ENOMEM;
    }
    channel->wake_mode = mode;
    channel->recent = recent;
    channel->name = name;
    channel->name_len = len;
    list_init(&channel->waiters);
    list_insert_tail(&client->channels, &channel->link);
  } else {
    free(name);
  }
  list_insert_tail(&channel->waiters, &op->wait_link);
  channel->n_waiters++;
  op->channel = channel;
  for (unsigned i = 0; i < client->n_nodes; i++)
    channel_sync(client, channel, i);
  /* Already subscribed somewhere: the subscription predates this waiter's
   * failed attempt, so no release can have slipped between the two. */
  return 0;
}

void notify_attempt_done(op_t *op) {
  if (op->channel != NULL && op->channel->waking == op)
    op->channel->waking = NULL;
}

void notify_unwait(op_t *op) {
  notify_channel_t *channel = op->channel;
  if (channel == NULL)
    return;
  notify_attempt_done(op);
  redlock_t *client = op->client;
  list_remove(&op->wait_link);
  channel->n_waiters--;
  op->channel = NULL;
  if (channel->n_waiters == 0) {
    channel->confirmed = 0;
    for (unsigned i = 0; i < client->n_nodes; i++)
      channel_sync(client, channel, i);
  }
  channel_maybe_free(client, channel);
}

static void subscriber_timer_closed(uv_handle_t *handle) {
  notify_subscriber_t *sub = handle->data;
  client_handle_closed(sub->client);
}

void notify_shutdown(redlock_t *client) {
  if (client->subscribers == NULL)
    return;
  for (unsigned i = 0; i < client->n_nodes; i++) {
    notify_subscriber_t *sub = &client->subscribers[i];
    redisAsyncContext *ac = sub->ac;
    sub->ac = NULL;
    sub->state = SUBSCRIBER_DOWN;
    conn_close(ac);
    uv_timer_stop(&sub->timer);
    uv_close((uv_handle_t *)&sub->timer, subscriber_timer_closed);
  }
}

void notify_free(redlock_t *client) {
  while (!list_empty(&client->channels)) {
    notify_channel_t *channel = list_entry(client->channels.next, notify_channel_t, link);
    list_remove(&channel->link);
    free(channel->recent);
    free(channel->name);
    free(channel);
  }
  free(client->subscribers);
  client->subscribers = NULL;
}
