/* SPDX-License-Identifier: MIT */
/* Waiting without a call to show for it (issue 13): the part of a runnable thread's samples
 * that it spent on a runqueue, waiting for a CPU ("cpu"), and samples of a thread in
 * uninterruptible sleep, state D ("disk": a page fault, a swap-in, a read of a file).
 *
 * cpu: the kernel counts, per thread, the time spent runnable on a runqueue
 * (/proc/self/task/TID/schedstat, field 2: run_delay; brought up to date when the thread gets
 * on a CPU, not continuously). Its growth between two reads is owed to the thread's samples
 * in state R (signalled, or not run since its last sample without being blocked in a call):
 * each takes up to its own weight less the CPU time the thread used since its previous
 * sample, as it cannot have waited longer than it did not run (run_delay also counts a
 * thread woken from a lock or a sleep waiting for a CPU, which the samples in between counted
 * as the lock or the sleep: what grew beyond the sample's own share is moved from that wait,
 * up to what those samples counted, by wp_cpuwait_waited_again's record; never twice). A thread that has not run at all
 * since its last sample, and was not blocked in a call, waited the whole sample: given at
 * once, and deducted from later growth. Reads: none for a sample of a thread that ran all
 * its interval, at most one per thread every CPUWAIT_READ_EVERY_NS, and in all rationed by
 * the caller like the first looks of sample.c.
 *
 * Each is counted per stack id in a side table, written as WAIT records with a pseudo call
 * number (format.h: WP_WAIT_NR_CPU, WP_WAIT_NR_DISK).
 *
 * Sampler thread only, outside suspension windows: these read /proc and allocate. Not
 * async-signal-safe. */
#ifndef WP_CPUWAIT_H
#define WP_CPUWAIT_H

#include <stdint.h>
#include "taskalloc.h" /* before uthash: its allocations inside the fork guard */
#include <uthash.h>

#include "threads.h"

struct wp_cpuwait_entry {
	UT_hash_handle hh;
	struct {
		uint32_t stack_id, nr; /* nr: WP_WAIT_NR_CPU or WP_WAIT_NR_DISK */
		uint64_t a0, a1;       /* disk: the call (a0, ~0 when none) and its first argument */
	} key;
	uint64_t units_fx; /* samples, in 1/1024 (a share of a sample is counted) */
	uint64_t weight_ns;
	uint32_t target_len;
	char target[]; /* disk: the descriptor's target when known */
};

/* A sample of `t` in state R, counted on stack `stack_id` with `units` and `weight_ns`.
 * `unmoved`: the thread has not run since its last sample (the whole sample waited).
 * `may_read`: whether /proc may be read now (the caller's ration); returns the CPU time a
 * read took (0 when none), for the caller to charge to that ration. *unran_ns: the part of
 * the sample the thread neither ran nor was given as waiting for a CPU (not unmoved): it was
 * blocked (reconcile.h), or queued as a later read shows. */
uint64_t wp_cpuwait_runnable(struct wp_athread *t, uint32_t stack_id, uint32_t units,
			     uint64_t weight_ns, int unmoved, int may_read, uint64_t now,
			     uint64_t *unran_ns);

/* `t` has not run since its last sample, blocked in a call: its wait (t->last_wait) was
 * counted again for `weight_ns`. It may have been woken and be queued for a CPU instead, which
 * nothing but schedstat's later growth tells: wp_cpuwait_runnable then moves what grew beyond
 * its own sample's share from that wait to "cpu", up to what was counted again. */
void wp_cpuwait_waited_again(struct wp_athread *t, uint32_t units, uint64_t weight_ns);

/* Whether a thread blocked in call `nr` (-1: none) on a descriptor whose target is `target`
 * (may be NULL) may be in uninterruptible sleep for a disk, i.e. whether its state is worth a
 * read: outside any call (a page fault), a call on a file (a path, not a terminal), or a call
 * that names files or syncs them. Pipes, sockets, futexes and sleeps sleep interruptibly. */
int wp_cpuwait_may_be_disk(long nr, const char *target, uint32_t target_len);
/* Thread `tid`'s state letter from /proc (one read of its stat: 'R', 'S', 'D'...), 0 when
 * unreadable; *spent_ns gets the CPU time the read took. */
int wp_cpuwait_state(pid_t tid, uint64_t *spent_ns);
/* Counts a sample of `t` in state D on stack `stack_id`, blocked in call `nr` (-1: none) with
 * first argument `a0` and the descriptor target `target` (may be NULL). Remembers it as t's
 * last wait for wp_cpuwait_again. */
void wp_cpuwait_disk(struct wp_athread *t, uint32_t stack_id, long nr, uint64_t a0,
		     const char *target, uint32_t target_len, uint32_t units, uint64_t weight_ns);
/* `t` has not run since its last sample: count its last disk wait again, if it had one. */
void wp_cpuwait_again(struct wp_athread *t, uint32_t units, uint64_t weight_ns);
/* `t`'s last sample was not in state D. */
void wp_cpuwait_not_disk(struct wp_athread *t);

struct wp_cpuwait_entry *wp_cpuwait_all(void);
uint64_t wp_cpuwait_count(void);
uint64_t wp_cpuwait_bytes(void);
/* For the META statistics: reads of schedstat, of stat, and the CPU time of both. */
uint64_t wp_cpuwait_reads(void);
uint64_t wp_cpuwait_state_reads(void);
uint64_t wp_cpuwait_read_ns(void);
/* Forgets every entry (a fork child, a new profile). With `abandon` (a fork child) the table
 * is dropped, never walked or freed (see wp_stacks_reset). */
void wp_cpuwait_reset(int abandon);

#endif
