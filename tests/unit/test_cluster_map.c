/* test_cluster_map.c: unit tests for src/proto/cluster_map.c: slot maps from
 * CLUSTER SHARDS and CLUSTER SLOTS replies (well-formed and malformed),
 * MOVED / ASK errors, and the key slot of a formatted command.  Replies are
 * hiredis structs built by hand from an arena, no server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "unit_support.h"

#include "proto/cluster_map.h"
#include "proto/keyslot.h"

#define ID_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define ID_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define ID_C "cccccccccccccccccccccccccccccccccccccccc"

/* ---- a reply arena: every node a test builds lives here until arena_reset ---- */

#define ARENA_REPLIES (256 * 1024) /* a fully interleaved CLUSTER SLOTS reply */
#define ARENA_PTRS (256 * 1024)
static redisReply arena[ARENA_REPLIES];
static redisReply *arena_ptrs[ARENA_PTRS];
static size_t n_replies, n_ptrs;

static void arena_reset(void) { n_replies = n_ptrs = 0; }

static redisReply *node_new(int type) {
  assert_true(n_replies < ARENA_REPLIES);
  redisReply *r = &arena[n_replies++];
  memset(r, 0, sizeof *r);
  r->type = type;
  return r;
}

static redisReply *str(const char *s) {
  redisReply *r = node_new(REDIS_REPLY_STRING);
  r->str = (char *)s;
  r->len = strlen(s);
  return r;
}

static redisReply *num(long long v) {
  redisReply *r = node_new(REDIS_REPLY_INTEGER);
  r->integer = v;
  return r;
}

static redisReply *nil(void) { return node_new(REDIS_REPLY_NIL); }

static redisReply *err(const char *s) {
  redisReply *r = str(s);
  r->type = REDIS_REPLY_ERROR;
  return r;
}

/* An array of the n replies given (NULL-terminated varargs). */
static redisReply *arr(redisReply *first, ...) {
  redisReply *r = node_new(REDIS_REPLY_ARRAY);
  r->element = &arena_ptrs[n_ptrs];
  va_list ap;
  va_start(ap, first);
  for (redisReply *e = first; e != NULL; e = va_arg(ap, redisReply *)) {
    assert_true(n_ptrs < ARENA_PTRS);
    arena_ptrs[n_ptrs++] = e;
    r->elements++;
  }
  va_end(ap);
  return r;
}

/* An array of n elements, to be filled in. */
static redisReply *arr_n(size_t n) {
  assert_true(n <= ARENA_PTRS - n_ptrs);
  redisReply *r = node_new(REDIS_REPLY_ARRAY);
  r->element = &arena_ptrs[n_ptrs];
  r->elements = n;
  n_ptrs += n;
  return r;
}

/* A CLUSTER SHARDS node, RESP2 style (flat field/value array). */
static redisReply *shard_node(const char *id, int port, const char *ip, const char *endpoint,
                              const char *role, const char *health) {
  return arr(str("id"), str(id), str("port"), num(port), str("ip"), str(ip), str("endpoint"),
             str(endpoint), str("role"), str(role), str("replication-offset"), num(72156),
             str("health"), str(health), NULL);
}

/* A three-shard cluster: 0-5460 at 7000, 5461-10922 at 7001, 10923-16383 at 7002. */
static redisReply *three_shards(void) {
  return arr(
      arr(str("slots"), arr(num(0), num(5460), NULL), str("nodes"),
          arr(shard_node(ID_A, 7000, "127.0.0.1", "127.0.0.1", "master", "online"),
              shard_node(ID_C, 7005, "127.0.0.1", "127.0.0.1", "replica", "online"), NULL),
          NULL),
      arr(str("slots"), arr(num(5461), num(10922), NULL), str("nodes"),
          arr(shard_node(ID_B, 7001, "127.0.0.1", "127.0.0.1", "master", "online"), NULL), NULL),
      arr(str("slots"), arr(num(10923), num(16383), NULL), str("nodes"),
          arr(shard_node(ID_C, 7002, "127.0.0.1", "127.0.0.1", "master", "online"), NULL), NULL),
      NULL);
}

static void test_shards(void **state) {
  (void)state;
  arena_reset();
  cluster_map_t m;
  cluster_map_init(&m);
  char why[160];
  assert_int_equal(cluster_map_parse_shards(&m, three_shards(), "10.0.0.1", 0, why, sizeof why),
                   ST_OK);
  assert_int_equal(m.n_primaries, 3);
  assert_int_equal(m.covered, KEYSLOT_COUNT);
  int a = cluster_map_owner(&m, 0), b = cluster_map_owner(&m, 5461),
      c = cluster_map_owner(&m, 16383);
  assert_int_equal(m.primaries[a].port, 7000);
  assert_string_equal(m.primaries[a].id, ID_A);
  assert_int_equal(m.primaries[b].port, 7001);
  assert_int_equal(m.primaries[c].port, 7002);
  assert_int_equal(cluster_map_owner(&m, 5460), a);
  assert_int_equal(cluster_map_owner(&m, 10922), b);
  assert_string_equal(m.primaries[a].host, "127.0.0.1");
  assert_int_equal(cluster_map_find(&m, "127.0.0.1", 7001), b);
  assert_int_equal(cluster_map_find(&m, "127.0.0.1", 7005), -1); /* a replica */
  assert_int_equal(cluster_map_owner(&m, -1), -1);
  assert_int_equal(cluster_map_owner(&m, KEYSLOT_COUNT), -1);
  cluster_map_clear(&m);
  assert_int_equal(m.n_primaries, 0);
  assert_int_equal(cluster_map_owner(&m, 0), -1);
}

static void test_shards_variants(void **state) {
  (void)state;
  char why[160];
  cluster_map_t m;
  cluster_map_init(&m);
  /* Several ranges for one shard, an unknown endpoint ("?": the host asked),
   * a shard whose primary failed (no primary for its slots), a shard with
   * no slots, TLS ports. */
  arena_reset();
  redisReply *tls_node = arr(str("id"), str(ID_A), str("port"), num(7000), str("tls-port"),
                             num(8000), str("ip"), str("127.0.0.1"), str("endpoint"), str("?"),
                             str("role"), str("master"), str("health"), str("online"), NULL);
  redisReply *r = arr(
      arr(str("slots"), arr(num(0), num(99), num(200), num(299), NULL), str("nodes"),
          arr(tls_node, NULL), NULL),
      arr(str("slots"), arr(num(100), num(199), NULL), str("nodes"),
          arr(shard_node(ID_B, 7001, "127.0.0.1", "127.0.0.1", "master", "fail"),
              shard_node(ID_C, 7004, "127.0.0.1", "127.0.0.1", "replica", "online"), NULL),
          NULL),
      arr(str("slots"), arr(NULL), str("nodes"),
          arr(shard_node(ID_C, 7003, "127.0.0.1", "127.0.0.1", "master", "online"), NULL), NULL),
      NULL);
  assert_int_equal(cluster_map_parse_shards(&m, r, "seed.example", 1, why, sizeof why), ST_OK);
  assert_int_equal(m.n_primaries, 1);
  assert_int_equal(m.covered, 200);
  int a = cluster_map_owner(&m, 250);
  assert_int_equal(a, 0);
  assert_string_equal(m.primaries[a].host, "seed.example");
  assert_int_equal(m.primaries[a].port, 8000); /* tls */
  assert_int_equal(cluster_map_owner(&m, 150), -1);
  /* the same without TLS: the plain port */
  assert_int_equal(cluster_map_parse_shards(&m, r, "seed.example", 0, why, sizeof why), ST_OK);
  assert_int_equal(m.primaries[0].port, 7000);
  cluster_map_clear(&m);
}

/* Each malformed reply is refused with a reason, and leaves an empty map. */
static void expect_bad_shards(redisReply *r, const char *reason_part) {
  cluster_map_t m;
  cluster_map_init(&m);
  char why[160] = "";
  assert_int_equal(cluster_map_parse_shards(&m, r, "127.0.0.1", 0, why, sizeof why), ST_EINVAL);
  assert_non_null(strstr(why, reason_part));
  assert_int_equal(m.n_primaries, 0);
  assert_int_equal(m.covered, 0);
  assert_null(m.primaries);
}

static void test_shards_malformed(void **state) {
  (void)state;
  arena_reset();
  expect_bad_shards(NULL, "no reply");
  expect_bad_shards(err("ERR unknown subcommand 'SHARDS'"), "unknown subcommand");
  expect_bad_shards(str("hello"), "not an array");
  expect_bad_shards(arr(str("x"), NULL), "not a field/value map");
  expect_bad_shards(arr(arr(str("slots"), NULL), NULL), "not a field/value map");
  expect_bad_shards(arr(arr(str("slots"), arr(num(0), NULL), str("nodes"), arr(NULL), NULL), NULL),
                    "without slots");
  expect_bad_shards(arr(arr(str("slots"), arr(num(0), num(1), NULL), NULL), NULL), "without slots");
  redisReply *good_nodes =
      arr(shard_node(ID_A, 7000, "127.0.0.1", "127.0.0.1", "master", "online"), NULL);
  expect_bad_shards(
      arr(arr(str("slots"), arr(num(0), num(16384), NULL), str("nodes"), good_nodes, NULL), NULL),
      "not an integer in 0..16383");
  expect_bad_shards(
      arr(arr(str("slots"), arr(num(5), num(1), NULL), str("nodes"), good_nodes, NULL), NULL),
      "start <= end");
  expect_bad_shards(
      arr(arr(str("slots"), arr(str("0"), num(1), NULL), str("nodes"), good_nodes, NULL), NULL),
      "not an integer");
  /* a node that is not a map; two primaries in a shard; a bad port; a bad host */
  expect_bad_shards(
      arr(arr(str("slots"), arr(num(0), num(1), NULL), str("nodes"), arr(str("x"), NULL), NULL),
          NULL),
      "not a field/value map");
  expect_bad_shards(
      arr(arr(str("slots"), arr(num(0), num(1), NULL), str("nodes"),
              arr(shard_node(ID_A, 7000, "127.0.0.1", "127.0.0.1", "master", "online"),
                  shard_node(ID_B, 7001, "127.0.0.1", "127.0.0.1", "master", "online"), NULL),
              NULL),
          NULL),
      "two primaries");
  expect_bad_shards(
      arr(arr(str("slots"), arr(num(0), num(1), NULL), str("nodes"),
              arr(shard_node(ID_A, 0, "127.0.0.1", "127.0.0.1", "master", "online"), NULL), NULL),
          NULL),
      "usable address");
  expect_bad_shards(
      arr(arr(str("slots"), arr(num(0), num(1), NULL), str("nodes"),
              arr(shard_node(ID_A, 7000, "127.0.0.1", "bad host", "master", "online"), NULL), NULL),
          NULL),
      "usable address");
  /* two primaries claiming one slot */
  expect_bad_shards(
      arr(arr(str("slots"), arr(num(0), num(10), NULL), str("nodes"),
              arr(shard_node(ID_A, 7000, "127.0.0.1", "127.0.0.1", "master", "online"), NULL),
              NULL),
          arr(str("slots"), arr(num(10), num(20), NULL), str("nodes"),
              arr(shard_node(ID_B, 7001, "127.0.0.1", "127.0.0.1", "master", "online"), NULL),
              NULL),
          NULL),
      "slot 10 is claimed by two primaries");
  /* A previous map is emptied by a failed parse. */
  cluster_map_t m;
  cluster_map_init(&m);
  char why[160];
  assert_int_equal(cluster_map_parse_shards(&m, three_shards(), NULL, 0, why, sizeof why), ST_OK);
  assert_int_equal(cluster_map_parse_shards(&m, str("x"), NULL, 0, why, sizeof why), ST_EINVAL);
  assert_int_equal(m.n_primaries, 0);
  assert_int_equal(cluster_map_owner(&m, 0), -1);
  /* An unknown endpoint with no host to fall back on. */
  assert_int_equal(
      cluster_map_parse_shards(
          &m,
          arr(arr(str("slots"), arr(num(0), num(1), NULL), str("nodes"),
                  arr(shard_node(ID_A, 7000, "127.0.0.1", "?", "master", "online"), NULL), NULL),
              NULL),
          NULL, 0, why, sizeof why),
      ST_EINVAL);
}

/* Caps: more primaries than CLUSTER_MAP_MAX_PRIMARIES is refused. */
static void test_shards_caps(void **state) {
  (void)state;
  arena_reset();
  static redisReply *shards[CLUSTER_MAP_MAX_PRIMARIES + 1];
  static redisReply top;
  static char ports[CLUSTER_MAP_MAX_PRIMARIES + 1][8];
  for (int i = 0; i <= CLUSTER_MAP_MAX_PRIMARIES; i++) {
    snprintf(ports[i], sizeof ports[i], "%d", 10000 + i);
    shards[i] = arr(str("slots"), arr(num(i), num(i), NULL), str("nodes"),
                    arr(arr(str("port"), str(ports[i]), str("ip"), str("127.0.0.1"), str("role"),
                            str("master"), NULL),
                        NULL),
                    NULL);
  }
  memset(&top, 0, sizeof top);
  top.type = REDIS_REPLY_ARRAY;
  top.element = shards;
  top.elements = CLUSTER_MAP_MAX_PRIMARIES;
  cluster_map_t m;
  cluster_map_init(&m);
  char why[160];
  assert_int_equal(cluster_map_parse_shards(&m, &top, NULL, 0, why, sizeof why), ST_OK);
  assert_int_equal(m.n_primaries, CLUSTER_MAP_MAX_PRIMARIES);
  assert_int_equal(m.covered, CLUSTER_MAP_MAX_PRIMARIES);
  assert_int_equal(m.primaries[cluster_map_owner(&m, 7)].port, 10007); /* port as text */
  top.elements = CLUSTER_MAP_MAX_PRIMARIES + 1;
  assert_int_equal(cluster_map_parse_shards(&m, &top, NULL, 0, why, sizeof why), ST_EINVAL);
  assert_non_null(strstr(why, "primaries"));
  assert_int_equal(m.n_primaries, 0);
  top.elements = KEYSLOT_COUNT + 1;
  assert_int_equal(cluster_map_parse_shards(&m, &top, NULL, 0, why, sizeof why), ST_EINVAL);
  cluster_map_clear(&m);
}

/* A node id of 40 hex digits made from i (static storage, one per i). */
#define IDS 2048
static const char *id_of(unsigned i) {
  static char ids[IDS][CLUSTER_ID_LEN + 1];
  assert_true(i < IDS);
  snprintf(ids[i], sizeof ids[i], "%040x", i + 1);
  return ids[i];
}

/* CLUSTER SHARDS of `shards` shards of a primary (port 10000 + k) and
 * `replicas` replicas each, slot s owned by shard s % shards, every slot a
 * range of its own (as many reshards leave a map). */
static redisReply *interleaved_shards(unsigned shards, unsigned replicas) {
  redisReply *top = arr_n(shards);
  for (unsigned k = 0; k < shards; k++) {
    unsigned n_slots = (KEYSLOT_COUNT - k + shards - 1) / shards;
    redisReply *slots = arr_n(2 * n_slots), *nodes = arr_n(1 + replicas);
    for (unsigned j = 0; j < n_slots; j++) {
      slots->element[2 * j] = num(k + j * shards);
      slots->element[2 * j + 1] = num(k + j * shards);
    }
    nodes->element[0] =
        shard_node(id_of(k), 10000 + (int)k, "127.0.0.1", "127.0.0.1", "master", "online");
    for (unsigned r = 0; r < replicas; r++)
      nodes->element[1 + r] =
          shard_node(id_of(shards + k * replicas + r), 20000 + (int)(k * replicas + r), "127.0.0.1",
                     "127.0.0.1", "replica", "online");
    top->element[k] = arr(str("slots"), slots, str("nodes"), nodes, NULL);
  }
  return top;
}

/* Every slot owned by the primary at port 10000 + s % shards. */
static void assert_interleaved(const cluster_map_t *m, unsigned shards) {
  assert_int_equal(m->n_primaries, shards);
  assert_int_equal(m->covered, KEYSLOT_COUNT);
  for (int slot = 0; slot < KEYSLOT_COUNT; slot++) {
    int at = cluster_map_owner(m, slot);
    assert_true(at >= 0);
    assert_int_equal(m->primaries[at].port, 10000 + slot % (int)shards);
  }
}

/* The largest maps a cluster makes (docs/api.md, "Cluster sizes"): 16384
 * single-slot ranges over 3 shards, over 500 shards of a primary and a
 * replica (1000 nodes), over 1000 primaries; and CLUSTER SLOTS of 16384
 * single-slot ranges, each with its primary and a replica. */
static void test_interleaved(void **state) {
  (void)state;
  cluster_map_t m;
  cluster_map_init(&m);
  char why[160];
  static const unsigned shapes[][2] = {{3, 1}, {3, 0}, {500, 1}, {1000, 0}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    arena_reset();
    redisReply *r = interleaved_shards(shapes[i][0], shapes[i][1]);
    status_t st = cluster_map_parse_shards(&m, r, NULL, 0, why, sizeof why);
    if (st != ST_OK)
      fail_msg("%u shards of %u nodes: %s", shapes[i][0], 1 + shapes[i][1], why);
    assert_interleaved(&m, shapes[i][0]);
  }
  /* CLUSTER SLOTS: the same map, a range per slot */
  arena_reset();
  redisReply *top = arr_n(KEYSLOT_COUNT);
  for (unsigned slot = 0; slot < KEYSLOT_COUNT; slot++) {
    unsigned k = slot % 3;
    top->element[slot] =
        arr(num(slot), num(slot), arr(str("127.0.0.1"), num(10000 + k), str(id_of(k)), NULL),
            arr(str("127.0.0.1"), num(20000 + k), str(id_of(3 + k)), NULL), NULL);
  }
  assert_int_equal(cluster_map_parse_slots(&m, top, NULL, why, sizeof why), ST_OK);
  assert_interleaved(&m, 3);
  /* still capped: one primary more than CLUSTER_MAP_MAX_PRIMARIES */
  arena_reset();
  assert_int_equal(cluster_map_parse_shards(&m,
                                            interleaved_shards(CLUSTER_MAP_MAX_PRIMARIES + 1, 0),
                                            NULL, 0, why, sizeof why),
                   ST_EINVAL);
  assert_non_null(strstr(why, "primaries"));
  assert_int_equal(m.n_primaries, 0);
  cluster_map_clear(&m);
}

static void test_slots(void **state) {
  (void)state;
  arena_reset();
  redisReply *r =
      arr(arr(num(0), num(5460), arr(str("127.0.0.1"), num(7000), str(ID_A), arr(NULL), NULL),
              arr(str("127.0.0.1"), num(7005), str(ID_C), NULL), NULL),
          arr(num(5461), num(10922), arr(str(""), num(7001), str(ID_B), NULL), NULL),
          arr(num(10923), num(16383), arr(nil(), num(7002), NULL), NULL),
          /* the same primary again, another range */
          NULL);
  cluster_map_t m;
  cluster_map_init(&m);
  char why[160];
  assert_int_equal(cluster_map_parse_slots(&m, r, "10.1.1.1", why, sizeof why), ST_OK);
  assert_int_equal(m.n_primaries, 3);
  assert_int_equal(m.covered, KEYSLOT_COUNT);
  const cluster_primary_t *a = &m.primaries[cluster_map_owner(&m, 100)];
  const cluster_primary_t *b = &m.primaries[cluster_map_owner(&m, 6000)];
  const cluster_primary_t *c = &m.primaries[cluster_map_owner(&m, 16000)];
  assert_int_equal(a->port, 7000);
  assert_string_equal(a->id, ID_A);
  assert_string_equal(b->host, "10.1.1.1"); /* "": the host asked */
  assert_string_equal(b->id, ID_B);
  assert_string_equal(c->host, "10.1.1.1"); /* nil too */
  assert_string_equal(c->id, "");
  /* one primary, two ranges */
  redisReply *two = arr(arr(num(0), num(9), arr(str("h"), num(7000), NULL), NULL),
                        arr(num(20), num(29), arr(str("h"), num(7000), NULL), NULL), NULL);
  assert_int_equal(cluster_map_parse_slots(&m, two, NULL, why, sizeof why), ST_OK);
  assert_int_equal(m.n_primaries, 1);
  assert_int_equal(m.covered, 20);
  assert_int_equal(cluster_map_owner(&m, 15), -1);
  /* malformed */
  const struct {
    redisReply *r;
    const char *part;
  } bad[] = {
      {NULL, "no reply"},
      {err("ERR This instance has cluster support disabled"), "cluster support disabled"},
      {num(3), "not an array"},
      {arr(arr(num(0), num(1), NULL), NULL), "[start, end, primary"},
      {arr(arr(num(0), num(1), str("x"), NULL), NULL), "[host, port"},
      {arr(arr(num(0), num(1), arr(str("h"), NULL), NULL), NULL), "[host, port"},
      {arr(arr(num(0), num(1), arr(str("h"), num(70000), NULL), NULL), NULL), "usable address"},
      {arr(arr(num(-1), num(1), arr(str("h"), num(7000), NULL), NULL), NULL), "0..16383"},
      {arr(arr(num(3), num(1), arr(str("h"), num(7000), NULL), NULL), NULL), "start <= end"},
      {arr(arr(num(0), num(5), arr(str("h"), num(7000), NULL), NULL),
           arr(num(5), num(6), arr(str("h"), num(7001), NULL), NULL), NULL),
       "slot 5 is claimed"},
      {arr(arr(num(0), num(5), arr(str("h\x01"), num(7000), NULL), NULL), NULL), "usable address"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    why[0] = '\0';
    assert_int_equal(cluster_map_parse_slots(&m, bad[i].r, "h", why, sizeof why), ST_EINVAL);
    assert_non_null(strstr(why, bad[i].part));
    assert_int_equal(m.n_primaries, 0);
  }
  cluster_map_clear(&m);
}

static void test_assign(void **state) {
  (void)state;
  arena_reset();
  cluster_map_t m, other;
  cluster_map_init(&m);
  cluster_map_init(&other);
  char why[160];
  assert_int_equal(cluster_map_parse_shards(&m, three_shards(), NULL, 0, why, sizeof why), ST_OK);
  /* a slot moved to a known primary, then to a new one */
  int b = cluster_map_find(&m, "127.0.0.1", 7001);
  int at = -1;
  assert_int_equal(cluster_map_assign(&m, 0, "127.0.0.1", 7001, &at), ST_OK);
  assert_int_equal(at, b);
  assert_int_equal(cluster_map_owner(&m, 0), b);
  int d = -1;
  assert_int_equal(cluster_map_assign(&m, 1, "127.0.0.9", 7009, &d), ST_OK);
  assert_int_equal(d, 3);
  assert_int_equal(m.n_primaries, 4);
  assert_int_equal(cluster_map_owner(&m, 1), d);
  assert_int_equal(m.covered, KEYSLOT_COUNT);
  assert_int_equal(cluster_map_assign(&m, KEYSLOT_COUNT, "h", 1, &at), ST_EINVAL);
  assert_int_equal(cluster_map_assign(&m, 1, "", 1, &at), ST_EINVAL);
  assert_int_equal(cluster_map_assign(&m, 1, "h", 0, &at), ST_EINVAL);
  /* an empty map learns a slot */
  assert_int_equal(cluster_map_assign(&other, 42, "h", 7000, &at), ST_OK);
  assert_int_equal(at, 0);
  assert_int_equal(other.covered, 1);
  /* moved: dst takes src's content */
  cluster_map_move(&m, &other);
  assert_int_equal(m.n_primaries, 1);
  assert_int_equal(cluster_map_owner(&m, 42), 0);
  assert_int_equal(other.n_primaries, 0);
  assert_null(other.primaries);
  cluster_map_clear(&m);
}

static void test_redirect(void **state) {
  (void)state;
  char host[CLUSTER_HOST_LEN];
  int slot = -1, port = -1;
  const char moved[] = "MOVED 3999 127.0.0.1:6381";
  assert_int_equal(cluster_parse_redirect(moved, sizeof moved - 1, &slot, host, &port),
                   CLUSTER_REDIRECT_MOVED);
  assert_int_equal(slot, 3999);
  assert_string_equal(host, "127.0.0.1");
  assert_int_equal(port, 6381);
  const char ask[] = "ASK 16383 [::1]:7002";
  assert_int_equal(cluster_parse_redirect(ask, sizeof ask - 1, &slot, host, &port),
                   CLUSTER_REDIRECT_ASK);
  assert_int_equal(slot, 16383);
  assert_string_equal(host, "::1");
  assert_int_equal(port, 7002);
  const char v6[] = "MOVED 1 ::1:7002"; /* unbracketed: the port after the last ':' */
  assert_int_equal(cluster_parse_redirect(v6, sizeof v6 - 1, &slot, host, &port),
                   CLUSTER_REDIRECT_MOVED);
  assert_string_equal(host, "::1");
  const char unknown[] = "MOVED 12 :6390"; /* the host that answered */
  assert_int_equal(cluster_parse_redirect(unknown, sizeof unknown - 1, &slot, host, &port),
                   CLUSTER_REDIRECT_MOVED);
  assert_string_equal(host, "");
  assert_int_equal(port, 6390);
  const char name[] = "MOVED 0 redis-1.example:6379";
  assert_int_equal(cluster_parse_redirect(name, sizeof name - 1, &slot, host, &port),
                   CLUSTER_REDIRECT_MOVED);
  assert_string_equal(host, "redis-1.example");
  const char *bad[] = {"MOVED",
                       "MOVED ",
                       "MOVED 3999",
                       "MOVED 3999 ",
                       "MOVED x 127.0.0.1:1",
                       "MOVED 16384 127.0.0.1:1",
                       "MOVED 1234567 h:1",
                       "MOVED 1 127.0.0.1",
                       "MOVED 1 127.0.0.1:",
                       "MOVED 1 127.0.0.1:0",
                       "MOVED 1 127.0.0.1:65536",
                       "MOVED 1 127.0.0.1:12x",
                       "ASK1 127.0.0.1:1",
                       "ERR wrong",
                       "TRYAGAIN Multiple keys request during rehashing of slot",
                       "CLUSTERDOWN The cluster is down",
                       "moved 1 h:1",
                       ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(cluster_parse_redirect(bad[i], strlen(bad[i]), &slot, host, &port),
                     CLUSTER_REDIRECT_NONE);
  assert_int_equal(cluster_parse_redirect(NULL, 0, &slot, host, &port), CLUSTER_REDIRECT_NONE);
  /* bounded by len: "MOVED 3999 127.0.0.1:63" */
  assert_int_equal(cluster_parse_redirect(moved, sizeof moved - 3, &slot, host, &port),
                   CLUSTER_REDIRECT_MOVED);
  assert_int_equal(port, 63);
  /* a '\r' ends it (an error line as hiredis may hand it) */
  const char crlf[] = "MOVED 5 h:7000\r\n";
  assert_int_equal(cluster_parse_redirect(crlf, sizeof crlf - 1, &slot, host, &port),
                   CLUSTER_REDIRECT_MOVED);
  assert_int_equal(port, 7000);
}

static void test_cmd_slot(void **state) {
  (void)state;
  char *cmd = NULL;
  int n = redisFormatCommand(&cmd, "SET %s v NX PX 1000", "lock:{user1}:a");
  assert_true(n > 0);
  assert_int_equal(cluster_cmd_slot(cmd, (size_t)n), keyslot("user1", 5));
  /* bounded by len: a truncated command names no key */
  assert_int_equal(cluster_cmd_slot(cmd, 10), -1);
  redisFreeCommand(cmd);
  n = redisFormatCommand(&cmd, "evalsha %s 2 %s %s v", "0123", "lock:res", "fence:res");
  assert_int_equal(cluster_cmd_slot(cmd, (size_t)n), keyslot("lock:res", 8));
  redisFreeCommand(cmd);
  n = redisFormatCommand(&cmd, "EVAL %s 1 %s", "return 1", "k");
  assert_int_equal(cluster_cmd_slot(cmd, (size_t)n), keyslot("k", 1));
  redisFreeCommand(cmd);
  n = redisFormatCommand(&cmd, "EVALSHA %s 0 arg", "0123");
  assert_int_equal(cluster_cmd_slot(cmd, (size_t)n), -1);
  redisFreeCommand(cmd);
  n = redisFormatCommand(&cmd, "EVALSHA %s 2", "0123");
  assert_int_equal(cluster_cmd_slot(cmd, (size_t)n), -1);
  redisFreeCommand(cmd);
  n = redisFormatCommand(&cmd, "PING");
  assert_int_equal(cluster_cmd_slot(cmd, (size_t)n), -1);
  redisFreeCommand(cmd);
  const char *junk[] = {"",
                        "*",
                        "*2\r\n",
                        "*2\r\n$3\r\nSET\r\n",
                        "*2\r\n$3\r\nSET\r\n$9\r\nab\r\n",
                        "+OK\r\n",
                        "*2\r\n$99999999999\r\n"};
  for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
    assert_int_equal(cluster_cmd_slot(junk[i], strlen(junk[i])), -1);
}

UNIT_MAIN(cmocka_unit_test(test_shards), cmocka_unit_test(test_shards_variants),
          cmocka_unit_test(test_shards_malformed), cmocka_unit_test(test_shards_caps),
          cmocka_unit_test(test_interleaved), cmocka_unit_test(test_slots),
          cmocka_unit_test(test_assign), cmocka_unit_test(test_redirect),
          cmocka_unit_test(test_cmd_slot))
