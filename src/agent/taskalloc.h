/* SPDX-License-Identifier: MIT */
#ifndef WALLPROF_TASKALLOC_H
#define WALLPROF_TASKALLOC_H

/* Allocation on the agent's tasks (the sampler's tables: stacks, threads, waits, CPU waits,
 * and uthash's buckets for them), inside the fork guard (forkguard.h).
 *
 * The sampler allocates from the program's allocator, whatever it is. glibc's malloc takes
 * its arenas' locks in fork() itself, so a fork child never inherits one held; an allocator
 * the program brings without fork handlers (seen: Chromium's crash handler under
 * PartitionAlloc, whose fork child stayed blocked) does not. Now that a fork no longer waits
 * for the tick, a fork may land while the sampler is inside such an allocator's malloc, and
 * its child would wait on that lock for good at its first malloc. Inside the guard, a fork
 * waits for the one call in progress (microseconds) instead. Never called while a thread is
 * held (the rules of the window), nor inside another guarded section (the guard does not
 * nest: an inner call would wait for a fork that waits for the outer one). */

#include <stdlib.h>

#include "forkguard.h"

static inline void *wp_task_malloc(size_t n)
{
	wp_guard_enter();
	void *p = malloc(n);
	wp_guard_leave();
	return p;
}

static inline void *wp_task_calloc(size_t k, size_t n)
{
	wp_guard_enter();
	void *p = calloc(k, n);
	wp_guard_leave();
	return p;
}

static inline void *wp_task_realloc(void *q, size_t n)
{
	wp_guard_enter();
	void *p = realloc(q, n);
	wp_guard_leave();
	return p;
}

static inline void wp_task_free(void *p)
{
	if (!p)
		return;
	wp_guard_enter();
	free(p);
	wp_guard_leave();
}

/* uthash's own allocations (buckets, their growth) for the agent's tables. */
#undef uthash_malloc
#undef uthash_free
#define uthash_malloc(sz) wp_task_malloc(sz)
#define uthash_free(ptr, sz) wp_task_free(ptr)

#endif
