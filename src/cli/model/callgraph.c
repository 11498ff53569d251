/* SPDX-License-Identifier: MIT */
#include "callgraph.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "resolve.h"
#include "tally.h"

/* Counts `count` samples of stack number `stack` through the call from -> to, once per
 * sample (`last`: the stack that last counted each call, + 1). */
static int add_call(struct wp_callgraph *g, size_t **last, size_t *cap, uint32_t from,
		    uint32_t to, uint64_t count, size_t stack)
{
	uint32_t k;
	int added = wp_u64map_get_or_add(&g->at, (uint64_t)from << 32 | to, (uint32_t)g->n, &k);
	if (added < 0)
		return -1;
	if (added) {
		size_t c = *cap;
		if (wp_grow(&g->calls, cap, g->n + 1, sizeof(*g->calls)) ||
		    wp_grow(last, &c, g->n + 1, sizeof(**last)))
			return -1;
		g->calls[g->n] = (struct wp_call){ from, to, 0 };
		(*last)[g->n++] = 0;
	}
	if ((*last)[k] == stack + 1)
		return 0;
	(*last)[k] = stack + 1;
	g->calls[k].count += count;
	return 0;
}

int wp_callgraph_build(const struct wp_resolved *r, struct wp_callgraph *g)
{
	memset(g, 0, sizeof(*g));
	size_t *last = NULL, cap = 0;
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (!s->count || !s->n)
			continue;
		if (add_call(g, &last, &cap, WP_NO_FUNC, s->frames[0].func, s->count, i))
			goto oom;
		for (uint32_t j = 0; j + 1 < s->n; j++)
			if (s->frames[j].func != s->frames[j + 1].func && /* recursion: no call */
			    add_call(g, &last, &cap, s->frames[j].func, s->frames[j + 1].func,
				     s->count, i))
				goto oom;
	}
	free(last);
	last = NULL;
	g->nin = calloc(r->nfuncs + 1, sizeof(*g->nin));
	g->nout = calloc(r->nfuncs + 1, sizeof(*g->nout));
	if (!g->nin || !g->nout)
		goto oom;
	for (size_t i = 0; i < g->n; i++) {
		if (g->calls[i].from != WP_NO_FUNC)
			g->nout[g->calls[i].from]++;
		g->nin[g->calls[i].to]++;
	}
	return 0;
oom:
	free(last);
	wp_callgraph_free(g);
	return -1;
}

void wp_callgraph_free(struct wp_callgraph *g)
{
	free(g->calls);
	wp_u64map_free(&g->at);
	free(g->nin);
	free(g->nout);
	memset(g, 0, sizeof(*g));
}

long wp_callgraph_pick(const struct wp_resolved *r, const struct wp_callgraph *g,
		       uint32_t *pick, size_t max)
{
	size_t n, npick = 0;
	uint32_t *ids = wp_funcs_ranked(r, NULL, WP_RANK_TOTAL, &n);
	if (!ids)
		return -1;
	for (size_t i = 0; i < n && npick < max; i++) {
		const struct wp_func *f = &r->funcs[ids[i]];
		uint32_t k;
		int root = wp_u64map_get(&g->at, (uint64_t)WP_NO_FUNC << 32 | ids[i], &k);
		if (!f->self && g->nin[ids[i]] <= 1 && g->nout[ids[i]] == 1 &&
		    (f->kind != WP_KIND_PROGRAM || root))
			continue;
		pick[npick++] = ids[i];
	}
	free(ids);
	return (long)npick;
}

static int by_count(const void *a, const void *b, void *arg)
{
	const struct wp_call *x = a, *y = b;
	int callees = *(const int *)arg;
	uint32_t fx = callees ? x->to : x->from, fy = callees ? y->to : y->from;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return fx < fy ? -1 : fx > fy;
}

struct wp_call *wp_callgraph_links(const struct wp_resolved *r, const struct wp_callgraph *g,
				   uint32_t f, int callees, size_t *n)
{
	struct wp_call *v = malloc((g->n + 2) * sizeof(*v));
	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < g->n; i++)
		if ((callees ? g->calls[i].from : g->calls[i].to) == f)
			v[(*n)++] = g->calls[i];
	if (callees && r->funcs[f].self)
		v[(*n)++] = (struct wp_call){ f, WP_NO_FUNC, r->funcs[f].self };
	qsort_r(v, *n, sizeof(*v), by_count, &callees);
	return v;
}
