/* SPDX-License-Identifier: MIT */
/* Whether the outside sampler may look at process `pid`, and if not, one line saying why and
 * what to do: no such process, a zombie, another tracer holding it (named from TracerPid),
 * another user's process, Yama's ptrace_scope, perf_event_paranoid, a seccomp filter or
 * security module refusing process_vm_readv or perf_event_open. /proc/PID/task/TID/syscall
 * and process_vm_readv need ptrace read access (PTRACE_MODE_ATTACH: the same checks as
 * attaching a debugger, without attaching); the perf clocks need perf_event_open on another
 * process's threads (allowed for one's own processes up to paranoid 2). */
#ifndef WP_REFUSALS_H
#define WP_REFUSALS_H

#include <stddef.h>
#include <sys/types.h>

/* 0 when every check passes; else -1 with the line in `why` (without "wallprof: "). */
int wp_refusal_check(pid_t pid, char *why, size_t cap);
/* --exec (a static program, our own child: no permission check between us): whether the
 * calls themselves are allowed here (a seccomp filter refuses them for every target). */
int wp_refusal_check_self(char *why, size_t cap);
/* Exit status of wallprof-outside --exec refusing before it ran the program (it writes no
 * profile then; the program's own 125 comes with one). */
#define WP_OUTSIDE_REFUSED 125
/* The line for a perf_event_open that failed with errno `e` on `pid`. */
void wp_refusal_perf(int e, char *why, size_t cap);

#endif
