/* async_uv.c: redlock-c on the program's own libuv loop.
 *
 *   example-async-uv [redis://host:port ...]   (default: redis://127.0.0.1:6379)
 *
 * redlock_open_uv() attaches the client to our loop: no thread is started,
 * and every callback runs on this loop, from uv_run().  The chain is
 *   lock_async -> extend_async -> unlock_async -> redlock_close_uv,
 * after which the loop has nothing left and uv_run() returns. */
#define _POSIX_C_SOURCE 200809L /* uv.h needs POSIX types under -std=c11 */
#include <stdio.h>
#include <uv.h>

#include "redlock.h"
#include "redlock_uv.h"

#define RESOURCE "example:async"

typedef struct {
  redlock_t *client;
  redlock_lock_t *lock;
  int status; /* first failure, or 0 */
} app_t;

static void on_closed(void *arg) {
  (void)arg;
  printf("client closed\n");
}

static void finish(app_t *app, const char *step, int status) {
  if (status != REDLOCK_OK && app->status == 0)
    app->status = status;
  printf("%s: %s\n", step, redlock_strerror(status));
  redlock_close_uv(app->client, on_closed, app); /* from the loop thread, as required */
}

static void on_unlocked(int status, void *arg) {
  /* The handle is freed after this callback returns. */
  finish(arg, "unlock", status);
}

static void on_extended(int status, void *arg) {
  app_t *app = arg;
  if (status == REDLOCK_OK)
    printf("extended: valid for %lld ms\n", (long long)redlock_lock_validity_ms(app->lock));
  else
    app->status = status;
  /* Release in any case: unlock_async frees the handle. */
  int rc = redlock_unlock_async(app->client, app->lock, on_unlocked, app);
  if (rc != REDLOCK_OK)
    finish(app, "unlock_async", rc);
}

static void on_locked(int status, redlock_lock_t *lock, void *arg) {
  app_t *app = arg;
  if (status != REDLOCK_OK) {
    char votes[512];
    redlock_last_votes(app->client, votes, sizeof votes);
    printf("votes: %s\n", votes);
    finish(app, "lock", status);
    return;
  }
  app->lock = lock;
  printf("locked %s, valid for %lld ms\n", redlock_lock_resource(lock),
         (long long)redlock_lock_validity_ms(lock));
  int rc = redlock_extend_async(app->client, lock, 20000, on_extended, app);
  if (rc != REDLOCK_OK) {
    app->status = rc;
    on_extended(rc, app);
  }
}

int main(int argc, char **argv) {
  uv_loop_t loop;
  if (uv_loop_init(&loop) != 0)
    return 1;

  redlock_options_t *opts = redlock_options_new();
  if (opts == NULL)
    return 1;
  int rc = 0;
  if (argc < 2)
    rc = redlock_options_add_node(opts, "redis://127.0.0.1:6379");
  for (int i = 1; i < argc && rc == 0; i++)
    rc = redlock_options_add_node(opts, argv[i]);

  app_t app = {0};
  if (rc == 0)
    rc = redlock_open_uv(&app.client, opts, &loop);
  redlock_options_free(opts);
  if (rc != 0) {
    fprintf(stderr, "setup: %s\n", redlock_strerror(rc));
    uv_loop_close(&loop);
    return 1;
  }

  /* wait_ms == 0: retry by the options' retry policy.  The call waits for
   * the first connection attempts, which run once the loop does. */
  rc = redlock_lock_async(app.client, RESOURCE, 10000, 0, on_locked, &app);
  if (rc != REDLOCK_OK)
    finish(&app, "lock_async", rc);

  uv_run(&loop, UV_RUN_DEFAULT); /* returns when the client has closed */
  uv_loop_close(&loop);
  return app.status == 0 ? 0 : 1;
}
