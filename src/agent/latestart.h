/* SPDX-License-Identifier: MIT */
#ifndef WALLPROF_LATESTART_H
#define WALLPROF_LATESTART_H

#include <stdint.h>

/* A fork child's sampler, started at its first tick rather than at the fork (issue 19).
 *
 * Most fork children exec or exit within a millisecond; a task made at the fork is made for
 * nothing, and the child's end then waits for it. So the child arms a one-shot timer on
 * CLOCK_MONOTONIC, half an interval ahead, whose signal is the handshake's, tagged as ours
 * (handshake.c): its handler makes the task then, with one clone on the thread state the
 * parent's task left in the child's memory (task.c: no allocation, no lock, so a signal
 * handler can). The task's first tick is where it would have been (sampler.c: one interval
 * after the fork): nothing is lost. A child that ends or execs first never makes one.
 *
 * Not a timer on the child's CPU clock (tried, session 12): the kernel looks at those only at
 * a scheduler tick that finds the thread running, tens of milliseconds late on a busy machine.
 * The signal cannot reach a process whose every thread blocks it: a thread about to block it
 * starts the sampler first (sigmask.c), as does a change of the handshake's signal and the
 * leader's pthread_exit. Async-signal-safe throughout: system calls and atomics. */

/* Arms the timer, `delay_ns` ahead; at its signal (or wp_latestart_now) calls `start`, which
 * must be async-signal-safe. 0, or -errno (then the caller starts at once). */
int wp_latestart_arm(uint64_t delay_ns, void (*start)(void));

/* Starts now if armed and not started yet (a thread about to block the signal). */
void wp_latestart_now(void);

/* Whether a start is armed and has not happened. */
int wp_latestart_armed(void);

/* Around a fork by the program (forks.c): an armed start is held, so that no task is made
 * while the process is copied (the child then takes the parent task's thread state over as
 * its parent would have: whole), and a signal that comes meanwhile starts it on release.
 * hold returns 1 when it held one; else, if a start was under way on another thread, it
 * has waited for it. */
int wp_latestart_hold(void);
void wp_latestart_release(void);

/* Disarms (the process ends, execs or stops profiling). If another thread's handler is
 * starting at that moment, waits for it (a clone: microseconds; bounded). Returns 1 if the
 * start happened (the sampler then runs and must be stopped), 0 if not. */
int wp_latestart_cancel(void);

/* In a fork child: the parent's timer is not this process's (timers are not inherited). */
void wp_latestart_forget(void);

#endif
