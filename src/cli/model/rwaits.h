/* SPDX-License-Identifier: MIT */
/* The model's waits: what a kept stack's waiting samples waited in (waits.h's kinds and
 * objects, attached to resolve.h's stacks when the model is built: wait_attach.c), how every
 * report shows and counts them (a stack's share per wait, the leaf frame, the totals per
 * object and per kind), and who waited on each object and who held it. */
#ifndef WP_RWAITS_H
#define WP_RWAITS_H

#include <stddef.h>
#include <stdint.h>

#include "resolve.h"
#include "waits.h"

/* One kind and object of some of a kept stack's waiting samples. */
struct wp_rwait {
	enum wp_wait_kind kind;
	const char *object; /* owned by the model */
	uint32_t holder;    /* lock, rwlock: the holder's tid (a mutex's owner, an rwlock's
			     * writer) when it is a thread of the profile, else 0 */
	const char *waiter; /* the program's function nearest the leaf (the caller of libc's
			     * waiting code), NULL when the stack has none */
	/* lock, rwlock: the holder's stack sampled in the same tick, ROOT FIRST (owned by the
	 * model), holder_n frames; none (NULL, 0) when the agent sampled none. Shown whatever
	 * the filter: a holder of a thread the filter leaves out still shows under the waits of
	 * the threads it keeps (it is what they waited for). */
	const struct wp_rframe *holder_frames;
	uint32_t holder_n;
	uint64_t count, weight_ns;
};

/* The samples of s->waits[k]: a stack's waits add up to at most its count (the agent counts
 * a WAIT record's samples apart from its stack's, and a record cut short by a checkpoint can
 * say more), so the model caps them when it is built, the waits after those that fill the
 * stack taking what is left. Every count per wait object (the text report's WAITS,
 * --compare, the live view, the flame graph, the exports) is of these. */
uint64_t wp_rwait_samples(const struct wp_rstack *s, uint32_t k);
/* The samples of s in none of its waits (its count less every wp_rwait_samples). */
uint64_t wp_rstack_unwaited(const struct wp_rstack *s);
/* The frame a wait is shown by, "[wait KIND OBJECT]" (wp_rwait_adds_frame below says
 * when): in buf, at most cap bytes (WP_WAIT_LEAF_MAX holds any). */
void wp_wait_frame_name(const struct wp_rwait *w, char *buf, size_t cap);

/* The samples and time that waited in one object (kind and object text) over a model. */
struct wp_wait_total {
	enum wp_wait_kind kind;
	const char *object; /* the model's (one of its waits') */
	uint64_t count, weight_ns;
};

/* Per wait object, over the stacks of r that keep(stack, arg) keeps (keep NULL: every one),
 * counting wp_rwait_samples: most samples first, then by object and kind. Objects are matched
 * by kind and text (the model keeps one copy per WAIT record). Returns a malloc'ed array of
 * *n totals (NULL when none). With `of`, *of is a malloc'ed array of r->nwaits indexes: the
 * total each of r's waits went to (UINT32_MAX: none), for a report to add its own columns.
 * Exits when out of memory, as the model's build does. */
struct wp_wait_total *wp_wait_totals(const struct wp_resolved *r,
				     int (*keep)(const struct wp_rstack *, void *), void *arg,
				     size_t *n, uint32_t **of);

/* Whether stack `s` already ends in its wait's leaf frame "[wait KIND OBJECT]" (module
 * "[wait]": --wait-leaves=on split it off): a report adds no second one. */
int wp_rstack_wait_leaf(const struct wp_resolved *r, const struct wp_rstack *s);

/* How every export shows a stack's waits (docs/profile-format.md, "Waits in reports"): its
 * samples are split into one part per wait (wp_rwait_samples) and the rest
 * (wp_rstack_unwaited); a wait's part ends with the frame "[wait KIND OBJECT]"
 * (wp_wait_frame_name), once: the stack's own leaf when --wait-leaves=on made one, else a
 * frame added after the stack. Every kind has its frame, a wait for a CPU too: the share of
 * a running stack that waited for a CPU ends in "[wait cpu runqueue]" (it never gets a leaf
 * of its own, the thread runs there). pprof gives waits as labels, and its frames are the
 * stacks' own (leaves included). Returns whether the part of s's wait adds that frame. */
int wp_rwait_adds_frame(const struct wp_resolved *r, const struct wp_rstack *s);

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

/* A waiting sample, the one definition every report and format uses (STATS, WAITS, the
 * threads' lines, --compare, --live, the exports): a sample of a stack flagged waiting
 * (blocked), or of a running stack's share that waited for a CPU (runnable, not on one: its
 * wait of kind cpu). Such a share is waiting, never running, wherever a report splits the
 * two, and the reports say so. wp_rstack_waiting is of one stack; wp_rstack_waiting_cpu the
 * part of it that waited for a CPU. */
uint64_t wp_rstack_waiting(const struct wp_rstack *s);
uint64_t wp_rstack_waiting_cpu(const struct wp_rstack *s);

/* The waiting samples (wp_rstack_waiting) of every stack of r (the text report's WAITS
 * heading, STATS). */
uint64_t wp_waiting_samples(const struct wp_resolved *r);

#endif
