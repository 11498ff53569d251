/* SPDX-License-Identifier: MIT */
/* Each thread's signal mask, as the thread itself publishes it, for the sampler to read
 * before it signals anyone.
 *
 * A thread that blocks the sampling signal must never be sent it: the signal would stay
 * pending and reach the program (a signalfd, sigwait, sigpending, or its own handler for that
 * signal after we moved away from it). The interposed sigprocmask/pthread_sigmask publish the
 * calling thread's new mask here (threads started by pthread_create publish the mask they
 * inherit before running the program's code), and the sampler looks a thread up before each
 * signal. handshake.c closes the race with a thread that is blocking the signal right now.
 *
 * A lock-free open-addressing table keyed by tid: each thread claims its entry once (CAS) and
 * is the only writer of it; the sampler only reads. An entry is given back when its thread
 * ends (a pthread key destructor); a stale one (a thread that ended without it) is taken over
 * by the next thread with the same tid. In a fork child the table starts empty; in a vfork
 * child (memory shared with the parent, which must not see the child's masks) nothing is
 * published. Masks are the first 64 signals, bit sig-1. */
#ifndef WP_THREADMASK_H
#define WP_THREADMASK_H

#include <stdint.h>
#include <sys/types.h>

struct wp_tmask;

/* The calling thread's entry, claimed (and filled with its current mask, one system call) on
 * first use. NULL in a vfork child, before the agent's constructor, or when the table has no
 * room: the caller then publishes nothing. Costs one getpid system call (the only way to tell
 * a vfork child, which runs on its parent's thread-local storage). Async-signal-safe. */
struct wp_tmask *wp_tmask_self(void);
/* Publishes `mask` (sequentially consistent store). */
void wp_tmask_set(struct wp_tmask *e, uint64_t mask);
/* What `e` last published. */
uint64_t wp_tmask_get(const struct wp_tmask *e);
pid_t wp_tmask_tid(const struct wp_tmask *e);
/* Sampler: the mask `tid` published. Returns 1 when it has an entry, 0 when not (a thread
 * the agent did not see start, or one that has not published yet). Lock-free, no system
 * call; bounded probe. */
int wp_tmask_lookup(pid_t tid, uint64_t *mask);
/* Whether this process is one the agent's memory does not belong to (a vfork child). */
int wp_tmask_foreign(void);
/* Gives the calling thread's entry back once it ends (its pthread_create wrapper calls it). */
void wp_tmask_release_at_exit(struct wp_tmask *e);
/* Constructor: records the process, publishes the calling (main) thread, empties the table
 * in fork children. */
void wp_tmask_init(void);
/* The first word of a sigset_t (signals 1..64). */
uint64_t wp_sigset_word(const void *set);

#endif
