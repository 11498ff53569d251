/* SPDX-License-Identifier: MIT */
/* Deadlocks (issue 21): the wait-for graph of a process's threads at one moment, checked for
 * cycles. A thread blocked on a mutex (or an rwlock held for writing) waits for its holder; a
 * thread in pthread_join waits for the thread it joins. Each thread waits for at most one
 * other, so the graph is a set of chains, some ending in a loop: a loop is a deadlock, none of
 * its threads can go on. A thread relocking a normal mutex it holds waits for itself: a loop
 * of one.
 *
 * The check is pure (a list of threads in, loops out: no profile, no model), unit-tested in
 * test/unit/test_deadlock.c; deadlock_model.c builds the list from a profile's LAST records
 * (format.h) and names what the loops hold, for every report. */
#ifndef WP_DEADLOCK_H
#define WP_DEADLOCK_H

#include <stddef.h>
#include <stdint.h>

enum wp_dl_kind {
	WP_DL_NONE, /* running, or blocked on something no thread of the process holds */
	WP_DL_LOCK, /* a lock held by thread `target` */
	WP_DL_JOIN, /* joining thread `target` */
};

/* One thread at the moment looked at. Threads are told apart by (proc, tid): a lock held in
 * one process is not waited for in another. */
struct wp_dl_thread {
	uint32_t proc, tid;
	enum wp_dl_kind kind;
	uint64_t object;  /* the lock's address (a join: the joined thread's tid word) */
	uint32_t target;  /* the holder's tid, or the joined thread's */
	uint32_t stack;   /* its stack (an id the caller gives meaning) */
};

/* One loop: `n` indices into the list, each thread waiting for the next, the last for the
 * first. The first is the loop's thread with the lowest index in the list, so a loop is found
 * the same whatever thread the search starts from. */
struct wp_dl_cycle {
	size_t n;
	size_t *members;
};

/* The loops among `v[0..n)`, in the order of their first member; a thread on a chain that
 * leads into a loop is not in it. Returns their number and *out (free with
 * wp_dl_cycles_free), NULL when there are none. A target that is no thread of the list (it
 * ended, or was never sampled) ends a chain. */
size_t wp_dl_find(const struct wp_dl_thread *v, size_t n, struct wp_dl_cycle **out);
void wp_dl_cycles_free(struct wp_dl_cycle *c, size_t n);

#endif
