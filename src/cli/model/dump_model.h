/* SPDX-License-Identifier: MIT */
/* wallprof --dump (issue 21): what each thread of a running process was doing at one
 * snapshot, from the profile the outside sampler's --once wrote (src/outside/dump.h): each
 * thread's LAST record (its stack, the call it was blocked in), the wait the model named for
 * that stack (rwaits.h: the same kinds and objects as a recorded run's: the lock and its
 * holder, the descriptor and its other end, the sleep and its length, the join), and the
 * dump_thread META lines (its state, what schedstat says it did during the snapshot, how long
 * it had not run). Threads with the same stack, state and wait are one group. The deadlocks
 * are the model's (deadlock_model.h). The dump reports (reports/dump_text.c, dump_json.c)
 * format this and compute nothing. */
#ifndef WP_DUMP_MODEL_H
#define WP_DUMP_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "resolve.h"
#include "rwaits.h"

enum wp_dump_state {
	WP_DS_RUNNING,  /* on a CPU (its clock gave a record during the snapshot), or ready and
			 * not sampled but it ran during the snapshot */
	WP_DS_RUNNABLE, /* ready, waiting for a CPU: not sampled, it queued and did not run */
	WP_DS_BLOCKED,  /* asleep in a system call (state S) */
	WP_DS_DISK,     /* uninterruptible sleep (state D) */
	WP_DS_STOPPED,  /* stopped by a signal or a debugger (T, t) */
	WP_DS_OTHER,    /* anything else /proc says (a zombie thread...) */
};

/* "running", "runnable", "blocked", "disk", "stopped", "other": the JSON's state names. */
const char *wp_dump_state_name(enum wp_dump_state s);

struct wp_dump_thread {
	uint32_t tid;
	const char *name;           /* "?" when none */
	enum wp_dump_state state;
	char letter;                /* /proc's state letter */
	const char *call;           /* the system call it is blocked in, NULL when none or unknown */
	const struct wp_rwait *wait; /* what it waits for (the model's), NULL when nothing known */
	int64_t waited_ns;          /* blocked, disk, stopped: how long it has not run; -1 unknown */
	uint64_t queued_ns, ran_ns; /* schedstat's runqueue and run time during the snapshot (a
				     * running thread's run time may lag by a scheduler tick) */
	const struct wp_rstack *stack; /* its stack (ROOT FIRST), NULL when none was sampled */
};

/* Threads alike: same state, call, wait object, holder and stack. */
struct wp_dump_group {
	size_t n;
	size_t *members; /* indexes into the dump's threads, by tid */
};

struct wp_dump {
	long long pid;
	const char *command;
	uint64_t stopped_ns;  /* how long any thread was stopped (0: none ever is) */
	uint64_t snapshot_ns; /* how long the snapshot took */
	uint64_t bound_ns;    /* how long a running thread was given for its sample */
	struct wp_dump_thread *threads;
	size_t nthreads;
	struct wp_dump_group *groups; /* the biggest first, then by first tid */
	size_t ngroups;
};

/* The dump of model r (of one profile written by --once, wait leaves off). Returns 0, or -1
 * when the profile is no dump (no dump=1 META). */
int wp_dump_build(const struct wp_resolved *r, struct wp_dump *d);
void wp_dump_free(struct wp_dump *d);

#endif
