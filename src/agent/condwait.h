/* SPDX-License-Identifier: MIT */
/* Which mutex a condition waiter waits with (issue 13). glibc's pthread_cond_t (2.25 and
 * later) does not record the mutex passed to pthread_cond_wait, so the waiter says it: the
 * interposed pthread_cond_wait, pthread_cond_timedwait and pthread_cond_clockwait (condwait.c)
 * publish "this thread waits on cond C with mutex M" in the agent's own memory before calling
 * glibc's, and put back what was there after. The sampler reads it for a thread it found
 * blocked in a futex wait inside C (waits.c).
 *
 * A lock-free open-addressing table keyed by tid, as threadmask.h's: a thread claims its entry
 * on its first condition wait (one gettid, one CAS) and is its only writer; the sampler only
 * reads. Entries are given back when their thread ends (threadmask.c's exit hook calls
 * wp_condwait_thread_end); a fork child starts with an empty table. */
#ifndef WP_CONDWAIT_H
#define WP_CONDWAIT_H

#include <stdint.h>
#include <sys/types.h>

/* Sampler: the mutex `tid` published with a condition whose bytes contain futex address
 * `futex`; 0 when none (no entry, no condition wait published, or another condition).
 * Lock-free, no system call, bounded probe. A pair read while the thread moves on to another
 * wait may be a mismatched one: a wrong name at worst. */
uint64_t wp_condwait_mutex(pid_t tid, uint64_t futex);
/* The calling thread is ending: its entry is given back. Async-signal-safe (atomics, TLS,
 * gettid). */
void wp_condwait_thread_end(void);
/* Constructor: resolves glibc's functions, empties the table in fork children. */
void wp_condwait_init(void);

#endif
