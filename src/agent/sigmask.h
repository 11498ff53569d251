/* SPDX-License-Identifier: MIT */
/* The program's signal masks, as the agent must know them.
 *
 * 1. Every thread's mask is published (threadmask.h) before the sampler could act on it:
 *    sigprocmask and pthread_sigmask are interposed. A call that may block more publishes
 *    the union of the old and new masks first, then settles any request the sampler has in
 *    flight for this thread (handshake.h: the signal lands now, before the mask changes),
 *    then changes the mask and publishes the exact result; one that only unblocks changes
 *    the mask first and publishes after. Either way the published mask never says
 *    "unblocked" while the kernel's blocks the signal.
 * 2. The sampler thread runs with every signal blocked for its whole life, and libunwind
 *    blocks every signal around each access to its cache (a sigprocmask pair per frame);
 *    on that thread such calls cannot change anything and are answered without entering
 *    the kernel. */
#ifndef WP_SIGMASK_H
#define WP_SIGMASK_H

/* Called by the sampler thread once: blocks every signal (it starts so anyway) and answers
 * this thread's later calls that would leave that mask as it is without a system call. */
void wp_sigmask_quiet_this_thread(void);
/* Resolves libc's sigprocmask and pthread_sigmask (constructor; the interposers also resolve
 * lazily). */
void wp_sigmask_init(void);
/* How many calls were answered without the system call (for META and the tests). */
unsigned long long wp_sigmask_skipped(void);

#endif
