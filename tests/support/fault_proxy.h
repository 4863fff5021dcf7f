/* fault_proxy.h: a loopback TCP proxy that injects network faults (latency,
 * stalls, black holes, resets, refused connections) between a client and one
 * redis-server, for the integration and torture tests and the benchmark's
 * slow-node mode.
 *
 * The proxy runs its own libuv loop on its own thread, so a test can drive a
 * synchronous client, or a library loop, on the calling thread.  It listens
 * on 127.0.0.1 only and forwards only to 127.0.0.0/8.
 *
 * Every control function is thread-safe and synchronous: it returns once the
 * proxy thread has applied the change, so the next byte the test sends is
 * subject to it.  Controls affect existing and new connections.  They must
 * not be called after fault_proxy_stop(), and never from the proxy thread.
 *
 * Functions returning int return 0, or a negative libuv error code
 * (UV_EINVAL for bad arguments). */
#ifndef FAULT_PROXY_H
#define FAULT_PROXY_H

#include <stddef.h>

typedef struct fault_proxy fault_proxy_t;

/* Bytes a connection may hold (both directions, queued or being written)
 * before the proxy resets it; fault_proxy_set_max_buffer() changes it. */
#define FAULT_PROXY_DEFAULT_MAX_BUFFER ((size_t)16 * 1024 * 1024)

/* Starts the proxy thread, listening on 127.0.0.1:0 (a free port, see
 * fault_proxy_port) and forwarding to upstream_host:upstream_port, which must
 * be an IPv4 address in 127.0.0.0/8 (or "localhost").  *out is NULL on
 * failure. */
int fault_proxy_start(fault_proxy_t **out, const char *upstream_host, int upstream_port);
/* The same, listening on 127.0.0.1:listen_port (0 = a free port). */
int fault_proxy_start_on(fault_proxy_t **out, int listen_port, const char *upstream_host,
                         int upstream_port);

/* The port the proxy listens on. */
int fault_proxy_port(const fault_proxy_t *proxy);

/* Adds delay_ms of latency to every chunk in both directions, order kept.
 * Applies to bytes already queued too (measured from their arrival). */
int fault_proxy_set_delay(fault_proxy_t *proxy, unsigned delay_ms);
/* A slow but live master: forwards the client's commands to the server one
 * at a time, each at least pace_ms after the one before it (0: off), so the
 * server answers every command pace_ms late, in order, and is never silent
 * for longer than that.  Commands are found by their RESP framing (arrays of
 * bulk strings, as hiredis writes them; an inline command ends at its
 * newline), so set it before the client connects (bytes read while it is
 * off are not framed).  Replies are not held. */
int fault_proxy_set_pace(fault_proxy_t *proxy, unsigned pace_ms);
/* Nonzero: forward nothing, buffer everything (up to the buffer cap), like a
 * peer that stopped running; zero: forward the backlog, then carry on. */
int fault_proxy_set_stall(fault_proxy_t *proxy, int stalled);
/* Nonzero: drop every byte both ways (and what is queued), keep the
 * connections open.  Connection closes (FIN) still pass, so closed clients
 * do not pile up. */
int fault_proxy_set_blackhole(fault_proxy_t *proxy, int on);
/* Resets (RST, both sides) every connection open now. */
int fault_proxy_reset_all(fault_proxy_t *proxy);
/* Nonzero: new connections are accepted and reset at once.  The kernel
 * completes the TCP handshake before the proxy sees a connection, so a
 * client's connect() may succeed; its first read or write fails. */
int fault_proxy_set_refuse(fault_proxy_t *proxy, int on);
/* Per-connection buffer cap in bytes (0 = FAULT_PROXY_DEFAULT_MAX_BUFFER). */
int fault_proxy_set_max_buffer(fault_proxy_t *proxy, size_t bytes);

/* Forwards new connections to upstream_host:upstream_port (the same rules
 * as fault_proxy_start: 127.0.0.0/8 or "localhost") and resets (RST, both
 * sides) every connection open now, as a virtual IP moved to another server
 * would: no client keeps talking to the old upstream, and every client sees
 * the change as a reconnect.  When it returns, every connection accepted from
 * then on goes to the new upstream.  The other settings (delay, stall, ...)
 * are kept.  UV_EINVAL (nothing changed) for a bad address. */
int fault_proxy_set_upstream(fault_proxy_t *proxy, const char *upstream_host, int upstream_port);

/* Client connections currently open (accepted and not yet closed). */
unsigned fault_proxy_connections(const fault_proxy_t *proxy);

/* Closes every connection and the listener, joins the thread, frees.  NULL
 * is fine. */
void fault_proxy_stop(fault_proxy_t *proxy);

#endif
