/* SPDX-License-Identifier: MIT */
/* Lock holders sampled in the same tick as their waiters (issue 13).
 *
 * When a waiting sample's futex looks like a contended mutex or a writer-held rwlock, waits.c
 * reads the holder's TID from the lock (the owner read) and reports it here. At the end of the
 * tick, every holder that is a live thread of this process and was not sampled since that
 * owner read is sampled once more (sample.c's wp_sample_holders: the same handshake or /proc
 * look as any sample, but not counted: its stack is only what the waiter's wait points to),
 * and the waiting sample's wait is moved to the entry that carries the holder's stack id.
 *
 * Order: a holder's stack is used only when it was taken AFTER the owner read (a sequence
 * number per fresh sample and per owner read), or when the holder's CPU clock has not moved
 * since it was taken (it has not run: the stack is where it still is), so it shows what the
 * holder did while it held the lock, not just before it took it. The stack counted for a
 * thread that did not answer in time (sample.c's missed_answer: its last one, a guess) is
 * never used as a holder's unless that clock says so.
 *
 * Bound: at most WP_LOCKS_HOLDERS_PER_TICK extra threads per tick (one handshake batch), so a
 * contended tick costs at most one more batch; beyond that, that tick's other waits keep
 * their holder's TID without a stack.
 *
 * Sampler thread only, outside suspension windows (wp_locks_settle starts a handshake batch,
 * whose window obeys the rules of sample.c's read_held). Not async-signal-safe. */
#ifndef WP_WAIT_LOCKS_H
#define WP_WAIT_LOCKS_H

#include <stdint.h>
#include <sys/types.h>

#include "handshake.h"
#include "threads.h"

#define WP_LOCKS_HOLDERS_PER_TICK WP_HS_BATCH
/* A wait whose holder's stack is unknown (format.h: WP_WAIT_NO_HOLDER_STACK). */
#define WP_LOCKS_NO_STACK UINT32_MAX

struct wp_wait_entry;

/* A new tick: forget the last one's pending waits. */
void wp_locks_tick_begin(void);
/* A fresh sample of `t` was recorded with stack `stack_id` (counted or a holder's; not a
 * stack guessed for a thread that did not answer), `cpu` its CPU clock then (ns -1:
 * unknown). */
void wp_locks_sampled(struct wp_athread *t, uint32_t stack_id, const struct wp_cpu_reading *cpu);
/* Whether `t`'s CPU clock `cpu` (read just now) says it has not run since its latest sample
 * (wp_cpu_unmoved), whose stack is then where it is: that stack is reported sampled again
 * now. */
int wp_locks_unmoved(struct wp_athread *t, const struct wp_cpu_reading *cpu);
/* `units` samples of waiter `t` were just counted in `e`, whose lock `owner` holds (read just
 * now, after the waiter's sample). */
void wp_locks_owner_read(struct wp_athread *t, struct wp_wait_entry *e, pid_t owner,
			 uint32_t units, uint64_t weight_ns);
/* End of the tick: samples the holders not sampled since their owner reads (bounded, above),
 * then gives each pending wait its holder's stack. */
void wp_locks_settle(uint64_t now);
/* Holder samples taken (for META holder_samples). */
uint64_t wp_locks_holder_samples(void);
void wp_locks_count_holder_sample(void);
/* Holders looked at but not sampled (no answer, exited...; META holder_missed). */
uint64_t wp_locks_holder_missed(void);
void wp_locks_count_holder_missed(void);
/* Forgets everything (a fork child). */
void wp_locks_reset(void);

#endif
