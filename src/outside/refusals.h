/* SPDX-License-Identifier: MIT */
/* Whether the outside sampler may look at process `pid`, and if not, one line saying why and
 * what to do: no such process, a zombie, another tracer holding it (named from TracerPid),
 * another user's process, Yama's ptrace_scope, perf_event_paranoid. /proc/PID/task/TID/syscall
 * and process_vm_readv need ptrace read access (PTRACE_MODE_ATTACH: the same checks as
 * attaching a debugger, without attaching); the perf clocks need perf_event_open on another
 * process's threads (allowed for one's own processes up to paranoid 2). */
#ifndef WP_REFUSALS_H
#define WP_REFUSALS_H

#include <stddef.h>
#include <sys/types.h>

/* 0 when every check passes; else -1 with the line in `why` (without "wallprof: "). */
int wp_refusal_check(pid_t pid, char *why, size_t cap);
/* The line for a perf_event_open that failed with errno `e` on `pid`. */
void wp_refusal_perf(int e, char *why, size_t cap);

#endif
