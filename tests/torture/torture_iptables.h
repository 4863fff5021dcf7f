/* torture_iptables.h: the iptables DROP fault of the torture driver:
 *   iptables -I INPUT -i lo -p tcp --dport <master's port> -j DROP, later -D.
 * Root only: probed at the start, skipped with a message otherwise.  Every
 * rule carries the comment "redlock-torture-<pid>-<start time>" and is
 * removed at exit, on a signal, by the watchdog, and, if a run was
 * SIGKILLed, by the next run, which removes the rules of owners no longer
 * alive (the start time keeps a reused PID from passing for the owner). */
#ifndef TORTURE_IPTABLES_H
#define TORTURE_IPTABLES_H

#include "torture_common.h"

/* The comment of this run's rules (before anything else). */
void ipt_init(const char *comment);
/* The TCP port of master m (0 .. TORTURE_MASTERS-1). */
void ipt_set_port(int m, int port);
/* Decides whether the fault can be used (disabled: --no-iptables), says so
 * on stdout when it cannot, and removes rules stale runs left behind. */
void ipt_probe(int disabled);
int ipt_usable(void);

/* Adds / removes the DROP rule of master m.  0 or -1. */
int ipt_add(int m);
int ipt_del(int m);
int ipt_is_active(int m);
/* Removes every rule this process may have added: async-signal-safe. */
void ipt_cleanup(void);

/* The start time of a process (field 22 of /proc/<pid>/stat, clock ticks
 * since boot), 0 when it does not exist or is a zombie.  With the PID it
 * names a process for good: a PID can be reused, the pair cannot. */
unsigned long long proc_start_time(long pid);

#endif
