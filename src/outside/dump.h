/* SPDX-License-Identifier: MIT */
/* The outside sampler's --once (wallprof --dump): one snapshot of every thread of a running
 * process, stopping nothing. Each thread is sampled once, as the wall mode samples it (a
 * blocked one from /proc and a copy of its stack, a running one from its perf clock's first
 * record); ticks come every interval until every thread has its sample or DUMP_BOUND_NS has
 * passed (a thread on no CPU in that time, or running only in the kernel, has none). The
 * profile gets each live thread's LAST record, as any profile does, and META lines the dump
 * report reads (docs/profile-format.md, "Dump"):
 *   dump=1, stopped_ns=0 (nothing is ever stopped), dump_bound_ns,
 *   dump_thread.TID=STATE RAN_NS QUEUED_NS WAITED_NS
 * STATE /proc's letter right after its sample (at the snapshot's end for a thread not
 * sampled); RAN_NS and QUEUED_NS what schedstat's run and runqueue times grew by from the
 * snapshot's start to then (a thread that only queued waited for a CPU); WAITED_NS how long
 * it had not run then (waited.h), -1 unknown. */
#ifndef WP_DUMP_H
#define WP_DUMP_H

#include <stdint.h>
#include <sys/types.h>

/* The snapshot's bound: a running thread gets this long for its clock to give a record. */
#define DUMP_BOUND_NS (100 * 1000000ull)

/* Takes the snapshot (wp_osample_begin done, with once set), ticking at `hz`; *end the time
 * it ended (CLOCK_MONOTONIC). */
void wp_dump_take(pid_t pid, int hz, uint64_t *end);
/* wp_osettings's on_sampled for the snapshot: looks at thread `tid` right after its sample
 * (its state and how long it had not run then, not at the snapshot's end, up to 100 ms later,
 * by which time a thread sleeping 10 ms at a time has woken and slept again). */
void wp_dump_sampled(pid_t tid);
/* The META lines above for process `pid`, malloc'ed (NULL when out of memory). */
char *wp_dump_meta(pid_t pid);

#endif
