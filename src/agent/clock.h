/* SPDX-License-Identifier: MIT */
/* Clocks the agent reads. clock_gettime is async-signal-safe and served by the vDSO for the
 * monotonic clock, so the handler may use wp_now_ns(). */
#ifndef WP_CLOCK_H
#define WP_CLOCK_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

static inline uint64_t wp_ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

static inline uint64_t wp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return wp_ts_ns(&ts);
}

/* CLOCK_REALTIME `ms` from now, as pthread's timed waits want it. */
static inline struct timespec wp_realtime_in_ms(long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* The CPU-time clock of another thread of this process, as the kernel encodes it
 * (CPUCLOCK_SCHED | per-thread): ((~tid) << 3) | 6. */
static inline clockid_t wp_thread_cpu_clock(pid_t tid)
{
	return (clockid_t)((~(unsigned)tid << 3) | 6u);
}

/* CPU time of thread `tid` of the program in ns, or -1 when it no longer exists. A system
 * call (cpuclock.c): the thread's CPU clock where the caller is in the program's thread group;
 * from the sampler's task, outside it, where the kernel refuses those clocks, the thread's
 * schedstat (updated at the scheduler's ticks and switches: a running thread's lags by up to a
 * tick). */
int64_t wp_thread_cpu_ns(pid_t tid);

/* What tells whether a thread has run between two readings (wp_cpu_unmoved). In the thread
 * group its CPU clock alone does: it moves whenever the thread runs. From the sampler's task
 * the clock is schedstat's sum, which stays put while a thread runs less than a tick without
 * a switch: `runs` (schedstat's pcount, the times it was put on a CPU) moves at each switch
 * in, and a reading that may have been taken while the thread was on a CPU is marked, since
 * the thread may have run on ever since without either moving. Compare readings of one
 * source only: the handler's own reading of its clock (handshake.h) is exact, schedstat's
 * lags, so a reading from the handler is always marked. */
struct wp_cpu_reading {
	int64_t ns;        /* CPU time (-1: unknown, or the thread has ended) */
	uint64_t runs;     /* schedstat's pcount from the task; 0 in the thread group */
	int maybe_on_cpu;  /* taken while the thread may have been on a CPU */
};

/* Reads `tid`'s clock into *r (unmarked); returns r->ns. */
int64_t wp_thread_cpu_read(pid_t tid, struct wp_cpu_reading *r);
/* Whether `now` (read just now) says the thread has not run since `then`. */
int wp_cpu_unmoved(const struct wp_cpu_reading *then, const struct wp_cpu_reading *now);
/* Whether thread clocks are read from schedstat (the sampler's task), where a running
 * thread's lags and two reads a system call apart do not tell it runs. */
int wp_cpuclock_lags(void);
/* From the task: 1 when `tid` is in state R (on a CPU or waiting for one), 0 when it is not,
 * -1 when unreadable (ended). One pread of its /proc stat through a kept descriptor. */
int wp_thread_runnable(pid_t tid);

/* Whether wp_thread_cpu_ns reads from outside the thread group (the sampler's task). */
void wp_cpuclock_outside(int outside);

/* A fork child: the cached descriptors were the parent task's. */
void wp_cpuclock_forget(void);

/* The CPU time process `pid` has used, user and system, from any of its threads or the
 * sampler's task (which is not one of them). 0 or -1. */
int wp_program_cpu(pid_t pid, uint64_t *user_ns, uint64_t *sys_ns);
/* The same total alone, from the process CPU clock only (no /proc read): for the one line
 * of a process that took no sample. 0 when unreadable. */
uint64_t wp_program_cpu_total(pid_t pid);

/* CPU time of the calling thread in ns: what a piece of the sampler's own work cost it (time
 * it spent preempted does not count). A system call. */
static inline uint64_t wp_self_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return wp_ts_ns(&ts);
}

#endif
