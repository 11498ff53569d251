/* SPDX-License-Identifier: MIT */
/* The wait-for graph's loops (deadlock.h). Each thread has at most one edge out, so a walk
 * from any thread either ends (a running thread, an unknown target) or comes back to a thread
 * it met: colouring each thread with the walk that first reached it finds every loop once, in
 * time linear in the threads (after sorting them for the lookups). */
#include "deadlock.h"

#include <stdlib.h>

#include "alloc.h"

/* The list sorted by (proc, tid), for the edges' lookups. */
struct by_id {
	uint32_t proc, tid;
	size_t at;
};

static int cmp_id(const void *a, const void *b)
{
	const struct by_id *x = a, *y = b;
	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The index of the thread `v[i]` waits for, or n (none, or not in the list). */
static size_t next_of(const struct wp_dl_thread *v, size_t n, const struct by_id *ids, size_t i)
{
	if (v[i].kind == WP_DL_NONE)
		return n;
	struct by_id key = { v[i].proc, v[i].target, 0 };
	const struct by_id *f = bsearch(&key, ids, n, sizeof(*ids), cmp_id);
	return f ? f->at : n;
}

/* Records the loop through `start` (v's indices, in wait order), first at its lowest index. */
static void add_cycle(const size_t *next, size_t start, struct wp_dl_cycle **out, size_t *nout)
{
	size_t len = 1, low = start;
	for (size_t j = next[start]; j != start; j = next[j], len++)
		low = j < low ? j : low;
	struct wp_dl_cycle c = { len, wp_xmalloc(len * sizeof(size_t)) };
	size_t j = low;
	for (size_t k = 0; k < len; k++, j = next[j])
		c.members[k] = j;
	*out = wp_xrealloc(*out, (*nout + 1) * sizeof(**out));
	(*out)[(*nout)++] = c;
}

static int by_first(const void *a, const void *b)
{
	const struct wp_dl_cycle *x = a, *y = b;
	return x->members[0] < y->members[0] ? -1 : x->members[0] > y->members[0];
}

size_t wp_dl_find(const struct wp_dl_thread *v, size_t n, struct wp_dl_cycle **out)
{
	*out = NULL;
	if (!n)
		return 0;
	struct by_id *ids = wp_xmalloc(n * sizeof(*ids));
	for (size_t i = 0; i < n; i++)
		ids[i] = (struct by_id){ v[i].proc, v[i].tid, i };
	qsort(ids, n, sizeof(*ids), cmp_id);
	size_t *next = wp_xmalloc(n * sizeof(*next));
	for (size_t i = 0; i < n; i++)
		next[i] = next_of(v, n, ids, i);
	/* walk[i]: 0 not reached yet, else 1 + the walk that reached it */
	size_t *walk = wp_xcalloc(n, sizeof(*walk)), nout = 0;
	for (size_t s = 0; s < n; s++) {
		size_t j = s;
		while (j < n && !walk[j]) {
			walk[j] = s + 1;
			j = next[j];
		}
		if (j < n && walk[j] == s + 1) /* came back to a thread of this walk: a loop */
			add_cycle(next, j, out, &nout);
	}
	if (nout > 1)
		qsort(*out, nout, sizeof(**out), by_first);
	free(walk);
	free(next);
	free(ids);
	return nout;
}

void wp_dl_cycles_free(struct wp_dl_cycle *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(c[i].members);
	free(c);
}
