/* SPDX-License-Identifier: MIT */
/* The call graph of a model: for each call between two functions (adjacent frames of a kept
 * stack, caller first), the samples that went through it, once per sample; a thread's first
 * frame is called by WP_NO_FUNC, the thread root. Recursion (a function calling itself) is
 * not a call. The text report's CALL GRAPH formats it. */
#ifndef WP_CALLGRAPH_H
#define WP_CALLGRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "idmap.h"

struct wp_resolved;

#define WP_NO_FUNC UINT32_MAX /* the thread's root (a caller), or self time (a callee) */

struct wp_call {
	uint32_t from, to;
	uint64_t count;
};

struct wp_callgraph {
	struct wp_call *calls; /* in the order first met */
	size_t n;
	struct wp_u64map at;   /* from << 32 | to -> index in calls */
	uint32_t *nin, *nout;  /* per function: its callers (the thread root one of them) and
				* callees */
};

/* Builds the graph over every kept stack of r. Returns 0, -1 when out of memory (g freed). */
int wp_callgraph_build(const struct wp_resolved *r, struct wp_callgraph *g);
void wp_callgraph_free(struct wp_callgraph *g);

/* The `max` hottest functions by total time (wp_funcs_ranked's WP_RANK_TOTAL), leaving out
 * the plumbing of libraries and thread roots when it is a plain link of a chain (no self
 * time, one caller, one callee: _start -> __libc_start_main -> main, nanosleep ->
 * clock_nanosleep), whose entry would repeat its neighbours'; the program's own functions
 * always count, unless a thread root. Into pick; returns how many, or -1 when out of memory. */
long wp_callgraph_pick(const struct wp_resolved *r, const struct wp_callgraph *g,
		       uint32_t *pick, size_t max);

/* One function's callers (callees 0: `from` WP_NO_FUNC is the thread root) or callees
 * (callees 1, its self time last as WP_NO_FUNC when it has some), most samples first, then
 * by function id. Returns a malloc'ed array of *n (*n may be 0), NULL when out of memory. */
struct wp_call *wp_callgraph_links(const struct wp_resolved *r, const struct wp_callgraph *g,
				   uint32_t f, int callees, size_t *n);

#endif
