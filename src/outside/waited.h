/* SPDX-License-Identifier: MIT */
/* How long a blocked thread of another process has been blocked, for --dump, without root and
 * without stopping it. /proc/PID/task/TID/sched's se.exec_start is the scheduler's clock when
 * the thread last started or stopped running: for a thread blocked since, when it blocked.
 * That clock is the run queue's task clock of the CPU it last ran on (stat's field 39), which
 * leaves out the time the CPU spent in interrupts and, in a virtual machine, the time stolen
 * from it: it lags CLOCK_MONOTONIC by a different amount on each CPU (measured here, 2 CPUs:
 * 110 s and 112 s behind after 4.5 hours up, growing by ~8 ms a second under load). So each
 * CPU's lag is measured now, by running this thread on it (sched_setaffinity) and reading its
 * own exec_start, fresh after a sched_yield; a thread blocked on that CPU has been blocked for
 * now - (exec_start + lag). The lag grew meanwhile by the interrupt and stolen time of the
 * wait, so the figure is short by that much (about 1% of it on a loaded virtual machine). */
#ifndef WP_WAITED_H
#define WP_WAITED_H

#include <stdint.h>
#include <sys/types.h>

/* Measures every CPU's lag, now (this thread visits each CPU it may run on; its affinity is
 * restored). Returns the number of CPUs measured. */
int wp_waited_calibrate(void);
/* How long thread `tid` of `pid` has not run, in ns, as of CLOCK_MONOTONIC `now`, into *ns.
 * 0, or -1 when it cannot be known (its CPU's lag was not measured, /proc refused, the thread
 * ended, or the figure makes no sense: negative). */
int wp_waited_ns(pid_t pid, pid_t tid, uint64_t now, uint64_t *ns);

#endif
