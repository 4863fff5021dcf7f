/* fake_server.h: one fake master of the test kit (redlock_testing.h) as a
 * server: its listener (a Unix socket or 127.0.0.1), its connections and
 * their RESP requests, the commands that concern the connection or the
 * server rather than the data (PING, INFO, SUBSCRIBE and its kin, CLIENT,
 * SELECT, AUTH, COMMAND INFO, WAIT, WAITAOF, QUIT), publishing, and its
 * faults (kill, restart, pause, slow replies, failover).  The data commands
 * go to fake_exec.h.  Everything here runs on the kit's loop thread. */
#ifndef REDLOCK_FAKE_SERVER_H
#define REDLOCK_FAKE_SERVER_H

#include <stdint.h>
#include <uv.h>

#include "testing/fake_exec.h"
#include "util/status.h"

typedef struct fake_master fake_master_t;

/* Where a master listens and how it reads its clock. */
typedef struct {
  uv_loop_t *loop;
  const char *path; /* a Unix socket's path, or NULL: 127.0.0.1 */
  int port;         /* 127.0.0.1's port when path is NULL; 0: a free one */
  /* The kit's clock (µs since the Unix epoch), before this master's own jumps. */
  uint64_t (*now_us)(void *arg);
  void *clock_arg;
  unsigned index; /* the master's index in its kit (INFO's process_id is index + 1) */
} fake_where_t;

/* A master, listening, empty, up for a day.  ST_EIO when it cannot listen. */
status_t fake_master_new(const fake_where_t *where, fake_master_t **out);
/* The port it listens on (TCP), fixed for its life. */
int fake_master_port(const fake_master_t *m);
/* Closes everything; the master is freed once its handles are closed. */
void fake_master_close(fake_master_t *m);

int fake_master_is_down(const fake_master_t *m);
void fake_master_kill(fake_master_t *m);
status_t fake_master_restart(fake_master_t *m);
void fake_master_pause(fake_master_t *m, int paused);
void fake_master_slow(fake_master_t *m, uint32_t delay_ms);
void fake_master_clock_jump(fake_master_t *m, uint64_t ms);
status_t fake_master_failover(fake_master_t *m, uint64_t lag_ms);
void fake_master_set_mode(fake_master_t *m, fake_mode_t mode);
int fake_master_drop_key(fake_master_t *m, const char *key, size_t len);
int fake_master_has_key(fake_master_t *m, const char *key, size_t len);
long long fake_master_commands(const fake_master_t *m);

#endif
