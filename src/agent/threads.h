/* SPDX-License-Identifier: MIT */
/* The registry of the process's threads, from /proc/self/task.
 *
 * Listing costs O(threads), so it is not done every tick: the sampler calls
 * wp_threads_refresh() every tick, which costs one fstat() of /proc/self/task (its link count
 * is the number of threads + 2) and relists only when that count changed or a periodic
 * deadline passed. A thread born between two relists therefore waits at most one tick unless
 * another thread died in the same tick, and at most WP_RELIST_NS then. Relists are rationed
 * by what the last one cost (at most 1% of the sampler's time), so with thousands of threads
 * or constant thread churn a new thread may wait longer.
 *
 * Threads that exit keep their entry (name, counts) if they were ever sampled. Only the
 * sampler thread calls these functions, outside suspension windows (they allocate and read
 * /proc). */
#ifndef WP_THREADS_H
#define WP_THREADS_H

#include <stdint.h>
#include <sys/types.h>
#include "taskalloc.h" /* before uthash: its allocations inside the fork guard */
#include <uthash.h>

#include "clock.h"

#define WP_RELIST_NS (250 * 1000000ull)

struct wp_stack_entry;
struct wp_wait_entry;
struct wp_cpuwait_entry;

struct wp_athread {
	pid_t tid;
	uint32_t flags;            /* WP_THREAD_* of the file format */
	char name[16];              /* read when first sampled (empty until then) */
	uint8_t name_reads;
	int alive;
	unsigned seen_gen;

	/* wall mode: the CPU clock at the last sample; unchanged (wp_cpu_unmoved) means it has
	 * not run since */
	struct wp_cpu_reading last_cpu;
	struct wp_stack_entry *last_stack;
	/* what its last sample waited in (waits.h), NULL when it was not blocked in a call */
	struct wp_wait_entry *last_wait;
	/* wait_locks.c: when its latest sample was recorded (a sequence number) and its stack */
	uint64_t lock_seq;
	uint32_t lock_stack;
	struct wp_cpu_reading lock_cpu; /* its CPU clock at that sample (ns -1: unknown) */
	/* cpuwait.c: its runqueue time (schedstat) at the last read, when (0: never), runqueue
	 * time read but not yet given to samples (negative: given ahead of schedstat), and its
	 * last sample's disk wait (or NULL) */
	uint64_t cw_delay_ns, cw_read_ns;
	int64_t cw_owed_ns;
	/* its CPU clock at its last new sample (not a reuse), and what it ran since the one
	 * before: a sample cannot have waited for a CPU longer than it did not run */
	int64_t cw_cpu_ns, cw_ran_ns;
	int cw_runnable; /* its last sample was in state R (not blocked in a call) */
	struct wp_cpuwait_entry *cw_last_disk;
	/* the wait its samples counted again while it did not run (sample_unmoved), since the
	 * last schedstat read, and how much: woken and queued for a CPU, not run yet, it looks
	 * the same, and schedstat's next growth says which it was (cpuwait.c) */
	struct wp_wait_entry *cw_again_wait;
	uint64_t cw_again_ns, cw_again_units;
	/* reconcile.h: the shares of a whole sample not yet moved either way (1/1024ths), */
	uint32_t cw_moved_fx, cw_ran_fx;
	/* the stack of its latest sample found running, and of its latest found blocked with
	 * what it waited in: a call's wait, or the disk (reconcile.h) */
	struct wp_stack_entry *cw_run_stack, *cw_block_stack;
	struct wp_wait_entry *cw_block_wait;
	struct wp_cpuwait_entry *cw_block_disk;
	uint32_t cw_since_block; /* its new samples since that one (1: the next was this one) */
	uint64_t cw_run_given_ns; /* what its samples counted running (reconcile.c's budget) */
	/* cpu mode: the clock at the last poll and CPU time not yet paid out in samples */
	int64_t poll_cpu_ns;
	uint64_t credit_ns;
	int credit_waited; /* cpu mode: credit was due at a tick that found it off a CPU, since
			    * its last sample (sample.c, tick_cpu) */
	uint64_t held_ns;           /* how long the last handshake held it */
	/* its signal mask from /proc (SigBlk), read once, for a thread that publishes none
	 * (threadmask.h: one the agent did not see start, e.g. a raw clone()) */
	uint64_t proc_sigblk;
	int sigblk_read;
	uint32_t blocked_looks; /* ticks in a row it blocked the sampling signal (sample.c) */
	/* perfclock.h: its perf clock's slot + 1 (0: none), ticks in a row its mask let the
	 * signal through while one was open and since when, when to read its SigBlk again (it
	 * publishes no mask) and when to try opening one again; the time it ran blocking the
	 * signal that no sample saw (sample.c: CPU time in cpu mode, wall time in wall mode)
	 * and why (wp_pclk_why; 0: nothing failed) */
	int pclk;
	uint32_t pclk_unblocked;
	uint64_t pclk_unblocked_at, pclk_look_at, pclk_retry_at;
	uint64_t unseen_ns;
	uint8_t unseen_why;

	uint64_t samples, running, waiting;
	uint64_t first_ns, last_ns; /* since the run's start */
	uintptr_t stack_top;        /* highest stack address an unwind has needed */

	/* timeline: LEB128 (delta us, stack id) pairs, see format.h */
	uint8_t *tl;
	size_t tl_len, tl_cap;
	uint64_t tl_count, tl_last_us;

	UT_hash_handle hh;
};

/* Opens /proc/self/task, on the sampler thread (the agent's own descriptor table, fds.h). */
int wp_threads_open(void);
/* A new start: `self` (the sampler) is never registered; the program's leader is known (no
 * /proc read: the task directory is opened by the first refresh). */
void wp_threads_init(pid_t self);
/* Relists when needed (see above). Returns 1 when the live set changed. */
int wp_threads_refresh(uint64_t now_ns, uint64_t run_start_ns);
/* Whether any thread of the program is left, as of the last refresh. glibc ends the process
 * when the last thread it counts ends, and counts ours too, so the sampler has to notice.
 * Threads other than the leader (tid == pid) leave /proc/self/task as they end, which the
 * link count shows; the leader stays listed, a zombie, until the process ends. Its /proc
 * state is read (one read) only when the link count just fell to the leader plus ours, when
 * it said it is leaving (pthread_exit: 1, 2, 4... ms later) or every 250 ms when its CPU
 * clock has not moved since the last look. A leader found ended is no longer listed. */
int wp_threads_program_left(void);
/* When the sampler should refresh next, even between ticks (CLOCK_MONOTONIC ns): the next
 * look at the leader, or, once it has ended, 20 ms after the last refresh, so the last
 * thread's end is seen soon at any rate. */
uint64_t wp_threads_next_look(void);
/* The leader of process `pid` is leaving (it called pthread_exit). Any thread;
 * async-signal-safe (one atomic store). */
void wp_threads_leader_leaving(pid_t pid);

/* Whether the leader has left (pthread_exit) or ended; a /proc read when nothing said so. */
int wp_threads_leader_left(void);
/* Whether the leader is exiting now (PF_EXITING in its stat): a process killed, between
 * giving up its memory and its end being seen through its pidfd (sampler.c's program_gone
 * took that moment for an exec). Reads /proc. */
int wp_threads_leader_exiting(void);
/* The live threads: an array valid until the next refresh. */
struct wp_athread **wp_threads_live(size_t *n);
/* All threads ever registered and kept (for the writer). */
struct wp_athread *wp_threads_all(void);
/* Marks `t` gone (its tid answered ESRCH). */
void wp_threads_gone(struct wp_athread *t);
/* An ended thread whose perf clock (perfclock.h) has just been closed: forgotten now when it
 * was never sampled (a thread with a clock open is kept until then, as the clock's slot
 * points to it). */
void wp_threads_forget_unsampled(struct wp_athread *t);
/* Reads /proc/self/task/TID/<file> into buf (NUL-terminated). Returns the length, or -1.
 * Opens a file: outside suspension windows only. */
ssize_t wp_threads_read_proc(pid_t tid, const char *file, char *buf, size_t cap);
/* The thread's state letter from /proc/self/task/TID/stat (R, S, D, T, t...), 0 when
 * unreadable. Opens a file: outside suspension windows only. */
char wp_threads_state(pid_t tid);
/* Re-reads the thread's name from /proc (threads often name themselves just after start). */
void wp_threads_reread_name(struct wp_athread *t);
/* Forgets every thread (a new profile; a fork child has only the thread that forked). With
 * `abandon` (a fork child) the table and the live array are dropped, never walked or freed
 * (see wp_stacks_reset). */
void wp_threads_reset(int abandon);
/* The public API's per-thread choices (any thread may call these; the sampler reads them). */
int wp_threads_exclude(pid_t tid, int exclude);
int wp_threads_is_excluded(pid_t tid);
/* The thread now waiting for the sampler to stop: not sampled from then on (threads.c).
 * Async-signal-safe. */
void wp_threads_set_stopping(pid_t tid);
int wp_threads_set_name(pid_t tid, const char *name);
/* Number of threads seen over the run (including exited ones). */
uint64_t wp_threads_seen(void);

#endif
