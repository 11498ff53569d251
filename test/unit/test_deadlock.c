/* SPDX-License-Identifier: MIT */
/* Unit tests for the wait-for graph's loops (src/cli/model/deadlock.c): loops of one (a thread
 * relocking its own mutex), two (ABBA), three (a ring), a join in a loop, chains that end in a
 * running thread or an unknown one, two loops at once, a chain leading into a loop, the same
 * tid in two processes. */
#include "cli/model/deadlock.h"

#include <stdio.h>
#include <stdlib.h>

#include "check.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define LOCK(tid, obj, holder) { 0, tid, WP_DL_LOCK, obj, holder, tid }
#define JOIN(tid, joined) { 0, tid, WP_DL_JOIN, 0x7000 + joined, joined, tid }
#define RUN(tid) { 0, tid, WP_DL_NONE, 0, 0, tid }

/* The loops found, as "tid tid;tid tid tid;" (each from its first member). */
static const char *loops(const struct wp_dl_thread *v, size_t n)
{
	static char buf[512];
	struct wp_dl_cycle *c;
	size_t nc = wp_dl_find(v, n, &c), at = 0;
	buf[0] = 0;
	for (size_t i = 0; i < nc; i++) {
		for (size_t k = 0; k < c[i].n; k++)
			at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%u", k ? " " : "",
					       (unsigned)v[c[i].members[k]].tid);
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, ";");
	}
	CHECK(nc ? c != NULL : c == NULL);
	wp_dl_cycles_free(c, nc);
	return buf;
}

int main(void)
{
	/* a thread relocking the normal mutex it holds: glibc's lock waits for its own tid */
	const struct wp_dl_thread self[] = { RUN(10), LOCK(11, 0xa0, 11) };
	CHECK_STR(loops(self, N(self)), "11;");

	/* ABBA: each holds one and waits for the other's */
	const struct wp_dl_thread abba[] = { RUN(1), LOCK(2, 0xa0, 3), LOCK(3, 0xb0, 2) };
	CHECK_STR(loops(abba, N(abba)), "2 3;");

	/* a ring of three, listed out of order: found once, from its first thread in the list */
	const struct wp_dl_thread ring[] = { LOCK(7, 0xc0, 5), LOCK(5, 0xa0, 6), LOCK(6, 0xb0, 7) };
	CHECK_STR(loops(ring, N(ring)), "7 5 6;");

	/* the main thread joins a thread waiting for a lock main holds */
	const struct wp_dl_thread join[] = { JOIN(1, 2), LOCK(2, 0xa0, 1) };
	CHECK_STR(loops(join, N(join)), "1 2;");

	/* contention, no deadlock: a chain ending in a running holder */
	const struct wp_dl_thread chain[] = { LOCK(1, 0xa0, 2), LOCK(2, 0xb0, 3), RUN(3),
					      LOCK(4, 0xa0, 2), JOIN(5, 1) };
	CHECK_STR(loops(chain, N(chain)), "");

	/* a holder that is no thread of the list (ended, or never sampled) ends the chain */
	const struct wp_dl_thread gone[] = { LOCK(1, 0xa0, 99), LOCK(2, 0xa0, 1) };
	CHECK_STR(loops(gone, N(gone)), "");

	/* two separate loops, and threads waiting on them from outside (not in either) */
	const struct wp_dl_thread two[] = { LOCK(1, 0xa0, 2), LOCK(2, 0xb0, 1), LOCK(3, 0xa0, 1),
					    LOCK(4, 0xc0, 5), LOCK(5, 0xd0, 6), LOCK(6, 0xe0, 4),
					    JOIN(8, 3), RUN(9) };
	CHECK_STR(loops(two, N(two)), "1 2;4 5 6;");

	/* a chain entering a loop, the chain walked first */
	const struct wp_dl_thread into[] = { LOCK(1, 0xa0, 2), LOCK(2, 0xa0, 3), LOCK(3, 0xb0, 4),
					     LOCK(4, 0xc0, 3) };
	CHECK_STR(loops(into, N(into)), "3 4;");

	/* the same tids in two processes: a lock of one is not held in the other */
	const struct wp_dl_thread procs[] = { { 0, 1, WP_DL_LOCK, 0xa0, 2, 0 },
					      { 1, 2, WP_DL_LOCK, 0xb0, 1, 0 },
					      { 1, 1, WP_DL_NONE, 0, 0, 0 },
					      { 0, 2, WP_DL_NONE, 0, 0, 0 } };
	CHECK_STR(loops(procs, N(procs)), "");

	CHECK_STR(loops(NULL, 0), "");
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
