/* sightings.h: when a server's replication history was first seen, kept in
 * a directory that the clients of one user on one machine share
 * (redlock_options_set_state_dir; the CLI's --state-dir).
 *
 * Why: a master that reports master_replid2 was promoted (or restarted from
 * its own RDB file, which INFO cannot tell apart) at a time INFO does not
 * give, so a client that sees it for the first time quarantines it for max
 * TTL from then (quarantine.h).  A short-lived client (the CLI, a cron job)
 * always sees it for the first time, and would never see it vote.  The
 * change that gave the server its replication id happened before anyone saw
 * that id, so the first sighting by any client on this machine dates it as
 * well as the client's own would, only earlier (docs/safety.md §5b).
 *
 * A record is a file named RUN_ID-REPLID holding the boot's id and the
 * CLOCK_MONOTONIC time of the first sighting: the clock every process of one
 * boot shares, and a record of another boot is not used.  The first writer
 * wins (link(2) of a finished file), so a record never moves later; removing
 * one (pruning, a user) only makes the next client wait longer.  Only files
 * owned by this user, in a directory of this user's that nobody else can
 * write, are trusted: a forged early sighting would cut a quarantine short.
 * No allocation: fixed buffers only. */
#ifndef REDLOCK_SIGHTINGS_H
#define REDLOCK_SIGHTINGS_H

#include <stddef.h>
#include <stdint.h>

/* Longest directory name accepted (redlock_options_set_state_dir). */
#define SIGHTINGS_DIR_MAX 3072

/* Looks up the first sighting of (run_id, replid) in dir, creating dir
 * (mode 0700, and its missing parents) and the record (now) when there is
 * none.  1 and *age_ns (how long ago it was first seen; 0 when recorded
 * now), or 0 when it cannot be used (a directory or record not to be
 * trusted, another boot's record, an I/O error: why says which). */
int sightings_first_seen(const char *dir, const char *run_id, const char *replid, uint64_t *age_ns,
                         char *why, size_t why_len);

#endif
