/* SPDX-License-Identifier: MIT */
/* A fork child's sampler starts at its first tick, not at the fork (issue 19).
 *
 * A fork child takes over its parent task's thread state (task.h), so its sampler's start
 * is one clone, which a signal handler may make. The child arms a one-shot kernel timer on
 * its own CPU clock (the forking thread's, its only one) for one tick interval, with the
 * agent's signal, and makes nothing until the timer fires or the child enters an interposed
 * call that may block (eintr.c, transfers.c: it is sampled waiting from there). A child that
 * execs or exits first (a shell's or a build's fork children mostly do) had no task to start,
 * stop and wait for: it writes its line in the run's list itself (the caller of
 * wp_sampler_stop does, as for any process that ended before its sampler ran).
 *
 * A CPU clock, not the wall clock: its timer fires while the thread runs, as the sampler's
 * own signals come only to running threads. A wall timer reached a child blocked in a call
 * that no interposer resumes (sem_wait, connect, a raw futex) and cut it short with EINTR
 * (test_lazy_start's futex child saw it).
 *
 * The timer's signal is told from the program's by what it carries (SI_TIMER and the value
 * we gave). While the start is deferred the child stays single-threaded, and the signal
 * deliverable to the thread the timer names: a call that would end either (the program's
 * pthread_create, a mask that blocks the signal, the leader leaving, an exit thread, a job
 * for the sampler) makes the task first (wp_firsttick_now). */
#ifndef WALLPROF_FIRSTTICK_H
#define WALLPROF_FIRSTTICK_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

/* Defers the task's start (wp_task_defer) to a timer that fires once the calling thread has
 * run `after_ns` of CPU time, with signal `signo`, on that thread. 0 when armed; -1 when the
 * start cannot be deferred (then the caller starts the task now). */
int wp_firsttick_arm(void (*fn)(void *), void *arg, uint64_t after_ns, int signo);

/* Whether a delivery is the timer's. Async-signal-safe. */
int wp_firsttick_is_ours(const siginfo_t *info);

/* Makes the deferred task now, if one is deferred and this is the process that deferred it
 * (a vfork child shares our memory, and must not). Async-signal-safe: the timer's handler
 * and the calls above. */
void wp_firsttick_now(void);

/* At the entry of the interposed calls that may block (eintr.c, transfers.c): a deferred
 * start is made there, before the call, so that a child that waits is sampled waiting. */
extern _Atomic pid_t wp_firsttick_armed_in;
static inline void wp_firsttick_poll(void)
{
	if (__builtin_expect(atomic_load_explicit(&wp_firsttick_armed_in, memory_order_relaxed), 0))
		wp_firsttick_now();
}

/* For a stop: 1 when a deferred task was cancelled (it will never run: the caller does what
 * it would have), 0 when there is a task (or a thread) to stop as usual. Async-signal-safe. */
int wp_firsttick_cancel(void);

/* In a fork child: the parent's timer is not the child's (timers are not inherited). */
void wp_firsttick_fork_child(void);

#endif
