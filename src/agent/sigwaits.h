/* SPDX-License-Identifier: MIT */
/* The program's own ways of receiving signals never hand it one of ours.
 *
 * A thread that blocks the sampling signal is never sent it (sigmask.h, handshake.h), but
 * glibc changes masks internally (around pthread_create's clone, siglongjmp, setcontext) where
 * no interposer sees, so one of ours may still be pending now and then. Where the program
 * asks for pending signals, ours are left out:
 * - signalfd(), sigwait(), sigwaitinfo(), sigtimedwait(): our signal is taken out of the set
 *   waited for. A set that names our signal on purpose (it leaves out some free real-time
 *   signal) makes the sampler move to another signal first, as sigaction() does: the
 *   program gets its own SIGPROF timer ticks. Only a set naming every free signal (a filled
 *   set) loses ours.
 * - sigpending(): ours is not reported.
 * - The temporary masks of sigsuspend, ppoll, pselect and epoll_pwait never block our
 *   signal: the thread's published mask (what the sampler trusts) stays true during the
 *   call, and a pending one of ours is delivered to our handler there, the call being
 *   retried as for any of our signals (eintr.h). */
#ifndef WP_SIGWAITS_H
#define WP_SIGWAITS_H

#include <signal.h>

/* A set of signals to wait for, without ours (moving away first when the set asks for ours
 * on purpose). Returns `set` itself when it does not hold ours, else `buf`. */
const sigset_t *wp_sigwaits_wait_set(const sigset_t *set, sigset_t *buf);
/* A temporary mask for a call, without ours. Returns `mask` or `buf`. Async-signal-safe. */
const sigset_t *wp_sigwaits_temp_mask(const sigset_t *mask, sigset_t *buf);

#endif
