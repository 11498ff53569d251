/* The model's waits (resolve.h's stacks, waits.h's kinds and objects): who waited on each
 * wait object and who held it. The text report's WAITS and the live view read these. */
#ifndef WP_RWAITS_H
#define WP_RWAITS_H

#include <stddef.h>
#include <stdint.h>

#include "resolve.h"
#include "waits.h"

#define WP_WAIT_NAMES 4 /* threads, waiting functions and holders kept per wait object */

/* A lock's holder: its thread, and where its stack in the same tick was. */
struct wp_wait_holder {
	uint64_t key; /* process << 32 | tid, + 1; 0: an empty slot */
	const struct wp_rframe *at; /* the program's function nearest the leaf (else the leaf) of
				     * the holder stack that brought the most samples; NULL: no
				     * holder stack known */
	uint64_t n, best;
};

/* Who waited on one wait object (a wp_wait_totals entry) and who held it: the WP_WAIT_NAMES
 * with most samples of each, most first (ties: the first met first); more_*: there were
 * others. Counts are wp_rwait_samples. */
struct wp_wait_people {
	uint64_t tids[WP_WAIT_NAMES]; /* process << 32 | tid, + 1; 0: an empty slot */
	uint64_t tid_n[WP_WAIT_NAMES];
	int more_tids;
	const char *funcs[WP_WAIT_NAMES]; /* the waiters (struct wp_rwait's waiter) */
	uint64_t func_n[WP_WAIT_NAMES];
	int more_funcs;
	struct wp_wait_holder holders[WP_WAIT_NAMES];
	int more_holders;
	uint64_t holder_known; /* samples whose holder is known */
};

/* Per wait object of wp_wait_totals(r, NULL, NULL, &ntotals, &of): a calloc'ed array of
 * ntotals, NULL when out of memory. */
struct wp_wait_people *wp_wait_people(const struct wp_resolved *r, const uint32_t *of,
				      size_t ntotals);

/* The samples and time of the n totals `tot` per kind, into count[] and ns[] (WP_WAIT__N
 * each). Returns the samples of all of them. */
uint64_t wp_wait_kind_totals(const struct wp_wait_total *tot, size_t n, uint64_t *count,
			     uint64_t *ns);

/* The samples that waited: of the stacks flagged waiting, and the waits for a CPU of the
 * others (the text report's WAITS heading). */
uint64_t wp_waiting_samples(const struct wp_resolved *r);

#endif
