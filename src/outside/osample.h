/* SPDX-License-Identifier: MIT */
/* The outside sampler's ticks: every thread of process `pid` sampled without entering it.
 *   cpu mode: each thread has a perf task clock (perfring.h) whose ring receives its user
 *             registers and a copy of its stack at every interval of its CPU time; each tick
 *             drains the rings, unwinds every record and counts it with its CPU time.
 *   wall mode: each tick looks at every thread once. A runnable thread (state R) has its
 *             clock armed for one record, 10 us of its CPU time later, which the next tick
 *             counts for it: where it runs, or where it was preempted when it waits for a CPU
 *             (its last stack when it blocked first); a blocked thread is read from
 *             /proc and its stack copied (snapshot.h), or its last stack and wait counted
 *             again when it has not run since (schedstat), which costs no copy.
 * Threads are listed from /proc/PID/task at every tick: a new one gets its clock then, an
 * ended one is drained, closed and kept as exited. Nothing is stopped, signalled or written. */
#ifndef WP_OSAMPLE_H
#define WP_OSAMPLE_H

#include <stdint.h>
#include <sys/types.h>

struct wp_athread;

struct wp_osettings {
	pid_t pid;
	int cpu_mode;
	int hz;
	int once; /* --dump: each thread sampled once (its first sample kept, later ticks skip it) */
	/* once: called with a thread's tid right after its sample, to look at it then */
	void (*on_sampled)(pid_t tid);
};

struct wp_ostats {
	uint64_t ticks, ticks_late, samples, truncated, unwind_ns, stack_reads, moved,
		 reused, perf_records, perf_lost, threads_seen, clocks_opened;
	char clock_refused[200]; /* why a clock could not be opened (first such reason) */
};

/* Opens what the first tick needs: 0, or -errno with a line said on stderr. */
int wp_osample_begin(const struct wp_osettings *s, uint64_t start_ns);
/* --exec: a clock for the program's main thread `pid` before it execs, counting from the
 * exec (enable_on_exec); then, once it has exec'd, the program's image is read. */
void wp_osample_adopt_exec(pid_t pid);
void wp_osample_retarget(pid_t pid);
/* One tick at `now` (CLOCK_MONOTONIC), standing for `units` intervals (more when late).
 * Returns the number of live threads (0: the process is gone). */
int wp_osample_tick(uint64_t now, uint32_t units);
/* Drains the rings one last time, closes every clock. */
void wp_osample_end(uint64_t now);
const struct wp_ostats *wp_osample_stats(void);
/* once: the live threads with no sample yet (running ones whose clock has no record). */
int wp_osample_unsampled(void);
/* A waiter's lock holder, read now (shim.c's wp_locks_owner_read, from waits.c). */
struct wp_wait_entry;
void wp_osample_owner_read(struct wp_athread *waiter, struct wp_wait_entry *e, pid_t owner,
			   uint32_t units, uint64_t weight_ns);
/* Every thread seen (for the writer): the first, and the one after `t`. */
struct wp_athread *wp_othreads_all(void);
struct wp_athread *wp_othread_next(struct wp_athread *t);

#endif
