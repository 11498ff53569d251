/* SPDX-License-Identifier: MIT */
/* What waiting samples wait in (issue 13): for a sample of a thread blocked in a system call,
 * read from /proc/self/task/TID/syscall, the call's number and the arguments that name what
 * it waits for, plus one fact read from memory or /proc (a futex's would-be mutex owner, a
 * sleep's requested duration, what an io or child wait waits for: wait_fds.h). Counted in a
 * side table keyed by (stack id, call, arguments, that fact), so the stack table does not
 * grow: a stack blocked in one call on one object has one entry. Written as WP_REC_WAIT
 * records (format.h).
 *
 * Sampler thread only, outside suspension windows: these allocate, read /proc (descriptors,
 * socket tables, children) and process memory (process_vm_readv: fault-proof, bounded). Not
 * async-signal-safe. */
#ifndef WP_WAITS_H
#define WP_WAITS_H

#include <stdint.h>
#include "taskalloc.h" /* before uthash: its allocations inside the fork guard */
#include <uthash.h>

#include "threads.h"
#include "../common/format.h"

struct wp_wait_key {
	uint32_t stack_id, nr;
	uint64_t a0, a1, a2, aux;
	/* the lock holder's stack sampled in the same tick (wait_locks.h), else
	 * WP_LOCKS_NO_STACK */
	uint32_t holder_stack, pad;
	/* a futex wait inside a condition: the mutex its waiter published (condwait.h), else 0 */
	uint64_t cond_mutex;
};

struct wp_wait_entry {
	UT_hash_handle hh;
	struct wp_wait_key key;
	uint64_t count, weight_ns;
	/* an io or child wait described only in part (a /proc read was put off): its call's
	 * arguments, to describe it again at the thread's next sample (wait_fds.h) */
	int partial;
	uint64_t args[6];
	uint32_t target_len;
	char target[]; /* what it waits for, in words (wait_fds.h), not NUL-terminated */
};

/* Counts a waiting sample of `t` on stack `stack_id`, blocked in call `nr` with arguments
 * `args` (the six of /proc's syscall file). `may_look`: whether a descriptor's target may be
 * read from /proc now (the first-look ration); *looked_ns gets the CPU time such a look took
 * (0 when none). Sets t->last_wait. Returns the entry, NULL when out of memory. */
struct wp_wait_entry *wp_waits_add(struct wp_athread *t, uint32_t stack_id, long nr,
				   const uint64_t args[6], uint32_t units, uint64_t weight_ns,
				   int may_look, uint64_t *looked_ns);
/* Counts another sample of `t`'s last wait (the thread has not run since): a futex's owner is
 * read again, as a lock may change hands while its waiter sleeps, and an io or child wait
 * described in part is described again (may_look, looked_ns: as for wp_waits_add). */
void wp_waits_again(struct wp_athread *t, uint32_t units, uint64_t weight_ns, int may_look,
		    uint64_t *looked_ns);
/* Moves `units` samples (and `weight_ns`) of `t` from `e` to the entry of the same wait whose
 * holder's stack is `holder_stack` (wait_locks.c, at the end of the tick). Out of memory: they
 * stay where they are, without the holder's stack. */
void wp_waits_set_holder(struct wp_athread *t, struct wp_wait_entry *e, uint32_t units,
			 uint64_t weight_ns, uint32_t holder_stack);
/* A futex wait's holder as it is now (a mutex's owner, an rwlock's writer: waits.c reads it
 * the same way at each sample), for the profile's LAST records; for any other wait, the one
 * its sample read (key->aux). One bounded read of memory (peek.h), no lock, no allocation:
 * usable from the writer's fatal-signal path. */
uint64_t wp_waits_holder_now(const struct wp_wait_key *k);
/* A thread's LAST record (format.h's WP_REC_LAST) from its last sample and the wait that
 * sample was in, for the agent's writer and the outside sampler's alike; `tid` as the file
 * gives it. 0 when the thread is not alive or has no sample yet (no record). The lock's
 * holder is read again now: the samples of one tick are taken one after the other, and a
 * thread seen waiting for a lock may have taken it before the thread seen next waited for it
 * in turn (two such records would make a loop of threads that were never stuck). One that
 * holds the lock now is not waiting for it, unless it already held it when sampled (a normal
 * mutex locked twice). */
int wp_waits_last_record(const struct wp_athread *t, uint32_t tid, struct wp_rec_last *r);
/* Whose memory is read (the sampler's tid, as sample.c's stack copies). */

struct wp_wait_entry *wp_waits_all(void);
uint64_t wp_waits_count(void);
uint64_t wp_waits_bytes(void);
/* Forgets every entry and cached descriptor (a fork child, a new profile). With `abandon` (a
 * fork child) the table is dropped, never walked or freed (see wp_stacks_reset). */
void wp_waits_reset(int abandon);

#endif
