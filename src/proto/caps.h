/* caps.h: what a master can run for us besides SET NX PX, learnt at its
 * handshake: whether it has a Lua engine (Valkey 9.1 makes Lua a module an
 * operator can leave out or unload), and which of the commands that release
 * and extend a lock without a script it has:
 *   DELIFEQ key value           Valkey >= 9.0            (delete if equal)
 *   DELEX key IFEQ value        Valkey >= 9.2, Redis >= 8.4
 *   SET key value IFEQ old ...  Valkey >= 8.1, Redis >= 8.4
 * DELIFEQ and DELEX are asked for by name (COMMAND INFO, so a command an
 * operator renamed away counts as missing); SET's IFEQ option cannot be
 * asked for, so it is read off the version INFO server gives.  Pure
 * functions: the node (voters/node_handshake.c, node_pipe.c) and the CLI's doctor use them. */
#ifndef REDLOCK_CAPS_H
#define REDLOCK_CAPS_H

#include <stddef.h>
#include <stdint.h>

struct redisReply;

typedef enum {
  CAP_LUA = 1u << 0,     /* EVALSHA / EVAL run (SCRIPT LOAD succeeded) */
  CAP_DELIFEQ = 1u << 1, /* DELIFEQ key value */
  CAP_DELEX = 1u << 2,   /* DELEX key IFEQ value */
  CAP_SET_IFEQ = 1u << 3 /* SET key value IFEQ old [PX ms] */
} cap_t;

/* A master releases without a script with either command. */
#define CAPS_RELEASE (CAP_DELIFEQ | CAP_DELEX)

/* A server's version as INFO server gives it, packed major * 10000 +
 * minor * 100 + patch (each part capped at 99); 0 when unknown. */
#define CAPS_VERSION(major, minor, patch) ((uint32_t)(major)*10000u + (minor)*100u + (patch))

/* The options and commands the version implies (CAP_SET_IFEQ; the others
 * are asked for by name).  is_valkey: server_name:valkey. */
unsigned caps_from_version(int is_valkey, uint32_t version);

/* COMMAND INFO DELIFEQ DELEX's reply: CAP_DELIFEQ and/or CAP_DELEX for the
 * commands the server described (a nil or empty entry: it has no such
 * command); 0 for anything else (an error: e.g. COMMAND forbidden). */
unsigned caps_from_command_info(const struct redisReply *reply);

/* 1 when an error reply to SCRIPT LOAD / EVAL / EVALSHA means the server
 * runs no scripts at all (no Lua engine: "ERR Could not find scripting
 * engine 'lua'", or the command renamed away: "ERR unknown command"), as
 * opposed to a refusal of this client (NOPERM, NOAUTH) or a failure. */
int caps_no_scripts_error(const char *msg, size_t len);

/* The way a master with these caps runs releases and extensions:
 * "scripts", "script-free commands", "both" (script-free commands used,
 * scripts there for what needs them) or "none" (no scripts and neither
 * command: only plain locks are taken there, and not released before their
 * TTL). */
const char *caps_path(unsigned caps);

#endif
