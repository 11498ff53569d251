/* SPDX-License-Identifier: MIT */
/* Lock holders sampled in the same tick as their waiters: see wait_locks.h. */
#include "wait_locks.h"

#include <stddef.h>

#include "pages.h"
#include "sample.h"
#include "waits.h"

/* Waits of one tick whose holder was read: at most one per chosen thread in practice
 * (WALLPROF_THREADS per tick); beyond this many, a wait keeps its holder's TID only. */
#define PENDING_MAX 64

struct pending {
	struct wp_athread *waiter;
	struct wp_wait_entry *e;
	pid_t owner;
	uint32_t units;
	uint64_t weight_ns;
	uint64_t seq; /* when the owner was read */
};

static struct pending pending[PENDING_MAX] WP_BIG;
static size_t npending;
static uint64_t seq, holder_samples, holder_missed;

void wp_locks_tick_begin(void)
{
	npending = 0;
}

void wp_locks_sampled(struct wp_athread *t, uint32_t stack_id, const struct wp_cpu_reading *cpu)
{
	t->lock_seq = ++seq;
	t->lock_stack = stack_id;
	t->lock_cpu = *cpu;
}

int wp_locks_unmoved(struct wp_athread *t, const struct wp_cpu_reading *cpu)
{
	if (!t->lock_seq || !wp_cpu_unmoved(&t->lock_cpu, cpu))
		return 0;
	t->lock_seq = ++seq;
	return 1;
}

void wp_locks_owner_read(struct wp_athread *t, struct wp_wait_entry *e, pid_t owner,
			 uint32_t units, uint64_t weight_ns)
{
	if (npending == PENDING_MAX || owner <= 0 || owner == t->tid)
		return;
	pending[npending++] = (struct pending){ t, e, owner, units, weight_ns, ++seq };
}

/* The live thread `tid` of this process, or NULL. */
static struct wp_athread *thread_of(pid_t tid)
{
	struct wp_athread *all = wp_threads_all(), *t;
	HASH_FIND_INT(all, &tid, t);
	return t && t->alive ? t : NULL;
}

/* Whether `h` has a sample taken after the owner read of `p`. */
static int sampled_since(const struct wp_athread *h, const struct pending *p)
{
	return h->lock_seq > p->seq && h->lock_stack != WP_LOCKS_NO_STACK;
}

void wp_locks_settle(uint64_t now)
{
	if (!npending)
		return;
	struct wp_athread *need[WP_LOCKS_HOLDERS_PER_TICK];
	size_t nneed = 0;
	for (size_t i = 0; i < npending; i++) {
		struct wp_athread *h = thread_of(pending[i].owner);
		if (!h || sampled_since(h, &pending[i]))
			continue;
		size_t k = 0;
		while (k < nneed && need[k] != h)
			k++;
		if (k == nneed && nneed < WP_LOCKS_HOLDERS_PER_TICK)
			need[nneed++] = h;
	}
	if (nneed)
		wp_sample_holders(need, nneed, now);
	for (size_t i = 0; i < npending; i++) {
		struct wp_athread *h = thread_of(pending[i].owner);
		if (h && sampled_since(h, &pending[i]))
			wp_waits_set_holder(pending[i].waiter, pending[i].e, pending[i].units,
					    pending[i].weight_ns, h->lock_stack);
	}
	npending = 0;
}

uint64_t wp_locks_holder_samples(void)
{
	return holder_samples;
}

void wp_locks_count_holder_sample(void)
{
	holder_samples++;
}

uint64_t wp_locks_holder_missed(void)
{
	return holder_missed;
}

void wp_locks_count_holder_missed(void)
{
	holder_missed++;
}

void wp_locks_reset(void)
{
	npending = 0;
	holder_samples = holder_missed = 0;
}
