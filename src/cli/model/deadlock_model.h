/* SPDX-License-Identifier: MIT */
/* The deadlocks of a model (issue 21): each process's threads as its profile's LAST records
 * left them (format.h: what each thread was blocked in at the profile's write, the final one
 * of a program killed while stuck), checked for loops (deadlock.h) and named for the reports:
 * each thread, the lock it waits for (by its symbol, as the WAITS section names it) or the
 * thread it joins, and its stack. Built with the model (resolve.c); reports read
 * r->deadlocks. */
#ifndef WP_DEADLOCK_MODEL_H
#define WP_DEADLOCK_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "resolve.h"
#include "waits.h"

/* One thread of a loop, waiting for the next one (the last for the first). */
struct wp_dl_member {
	uint32_t proc, tid;
	const char *name;         /* its THREAD record's name, "?" when it has none */
	enum wp_wait_kind kind;   /* WP_WAIT_LOCK, WP_WAIT_RWLOCK or WP_WAIT_JOIN */
	char *object;             /* what it waits on, as the WAITS section names it */
	uint32_t target;          /* the holder's or the joined thread's tid */
	const char *target_name;  /* that thread's name, "?" when it has none */
	const char *waiter;       /* the program function that waits, or NULL */
	struct wp_rframe *frames; /* its stack as last sampled, LEAF FIRST, inlined frames
				   * included */
	uint32_t nframes;
	uint64_t at_ns;           /* when that sample was taken, since its process's start */
};

struct wp_deadlock {
	size_t n;
	struct wp_dl_member *m;
};

/* Finds and names the loops of every process of r (resolve.c calls it last in a build; a
 * model's earlier deadlocks are dropped first). A process with no thread blocked on another
 * costs a pass over its LAST records, and symbolizes nothing. */
void wp_deadlocks_build(struct wp_resolved *r);
void wp_deadlocks_drop(struct wp_resolved *r);

/* One loop in one line, as every format but text gives it: "deadlock: abba-1 tid=7 in
 * take_ab waits for lock lock_b held by abba-2 tid=8; abba-2 tid=8 in take_ba waits for lock
 * lock_a held by abba-1 tid=7" (a join: "joins NAME tid=N"; a lock of its own: "held by
 * itself"). Cut at cap bytes. */
void wp_deadlock_line(const struct wp_deadlock *d, char *buf, size_t cap);

#endif
