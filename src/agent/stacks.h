/* SPDX-License-Identifier: MIT */
/* Distinct stacks, counted per thread, in a uthash table keyed by (tid, flags, frames).
 * Memory grows with the number of distinct stacks, not with the length of the run:
 * each costs sizeof(struct wp_stack_entry) + 8 bytes a frame + uthash's handle.
 * The per-sample timeline (for per-thread timelines) is kept per thread as LEB128 pairs,
 * about 3-4 bytes a sample, up to a global cap after which it stops (and says so).
 * Sampler thread only, outside suspension windows (these allocate). */
#ifndef WP_STACKS_H
#define WP_STACKS_H

#include <stdint.h>
#include "taskalloc.h" /* before uthash: its allocations inside the fork guard */
#include <uthash.h>

#include "threads.h"

#define WP_AGENT_MAX_FRAMES 256
#define WP_TIMELINE_CAP (64u << 20)

struct wp_stack_entry {
	UT_hash_handle hh;
	uint32_t id;
	uint64_t count;
	uint64_t weight_ns;
	/* the key: these three fields and the frames, contiguous */
	uint32_t tid;
	uint32_t flags;
	uint32_t nframes;
	uint32_t pad;
	uint64_t pcs[];
};

/* Counts a sample of `t` with this stack (pcs leaf first), taken at `rel_us` after the run's
 * start, standing for `units` sampling intervals (more than one when the tick came late, or
 * in cpu mode when CPU time accrued between looks) and `weight_ns` of wall or CPU time.
 * Returns the entry, or NULL when out of memory (the sample is then counted as lost). */
struct wp_stack_entry *wp_stacks_add(struct wp_athread *t, const uint64_t *pcs, uint32_t n,
				     uint32_t flags, uint32_t units, uint64_t weight_ns,
				     uint64_t rel_us);
/* The entry of this stack of `t`, added with no count when new, without counting a sample
 * (a lock holder's stack, wait_locks.h). NULL when out of memory. */
struct wp_stack_entry *wp_stacks_intern(struct wp_athread *t, const uint64_t *pcs, uint32_t n,
					uint32_t flags);
/* The same for an existing entry (a thread that has not moved). */
void wp_stacks_again(struct wp_athread *t, struct wp_stack_entry *e, uint32_t units,
		     uint64_t weight_ns, uint64_t rel_us);
/* Moves `units` and `weight_ns` of samples already counted on `from` to `to`, another stack
 * of the same thread (reconcile.h: a sample's interval split by its thread's clocks). */
void wp_stacks_move(struct wp_athread *t, struct wp_stack_entry *from, struct wp_stack_entry *to,
		    uint32_t units, uint64_t weight_ns);

struct wp_stack_entry *wp_stacks_all(void);
/* Forgets every stack (a new profile; a fork child starts its own). With `abandon` (a fork
 * child) the table is dropped, never walked or freed: the parent's sampler may have been
 * changing it as the process forked. */
void wp_stacks_reset(int abandon);
uint64_t wp_stacks_count(void);
uint64_t wp_stacks_bytes(void);
int wp_stacks_timeline_truncated(void);

#endif
