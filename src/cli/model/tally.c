/* SPDX-License-Identifier: MIT */
#include "tally.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "idmap.h"
#include "resolve.h"
#include "rwaits.h"

int wp_tally(const struct wp_resolved *r, int (*keep)(const struct wp_rstack *, void *),
	     void *arg, struct wp_tally *t)
{
	/* A recursive function appears several times in one stack but must be counted once per
	 * sample in `total`: remember the last stack that counted it. */
	size_t *seen = calloc(r->nfuncs + 1, sizeof(size_t));
	t->self = calloc(r->nfuncs + 1, sizeof(uint64_t));
	t->total = calloc(r->nfuncs + 1, sizeof(uint64_t));
	t->samples = 0;
	if (!seen || !t->self || !t->total) {
		free(seen);
		wp_tally_free(t);
		return -1;
	}
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (keep && !keep(s, arg))
			continue;
		t->samples += s->count;
		for (uint32_t j = 0; j < s->n; j++) {
			uint32_t f = s->frames[j].func;
			if (seen[f] != i + 1) {
				seen[f] = i + 1;
				t->total[f] += s->count;
			}
		}
		if (s->n)
			t->self[s->frames[s->n - 1].func] += s->count;
	}
	free(seen);
	return 0;
}

void wp_tally_free(struct wp_tally *t)
{
	free(t->self);
	free(t->total);
	t->self = t->total = NULL;
}

struct rank_arg {
	const struct wp_func *funcs;
	const uint64_t *self, *total;
};

static int by_self(const void *a, const void *b, void *arg)
{
	const struct rank_arg *k = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	if (k->self[x] != k->self[y])
		return k->self[x] > k->self[y] ? -1 : 1;
	if (k->total[x] != k->total[y])
		return k->total[x] > k->total[y] ? -1 : 1;
	return strcmp(k->funcs[x].name, k->funcs[y].name);
}

static int by_total(const void *a, const void *b, void *arg)
{
	const struct rank_arg *k = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	if (k->total[x] != k->total[y])
		return k->total[x] > k->total[y] ? -1 : 1;
	return by_self(a, b, arg);
}

uint32_t *wp_funcs_ranked(const struct wp_resolved *r, const struct wp_tally *t,
			  enum wp_rank order, size_t *n)
{
	uint32_t *ids = malloc((r->nfuncs + 1) * sizeof(*ids));
	uint64_t *self = NULL, *total = NULL;
	*n = 0;
	if (!ids)
		return NULL;
	if (!t) {
		self = malloc((r->nfuncs + 1) * sizeof(*self));
		total = malloc((r->nfuncs + 1) * sizeof(*total));
		if (!self || !total) {
			free(self);
			free(total);
			free(ids);
			return NULL;
		}
		for (size_t i = 0; i < r->nfuncs; i++) {
			self[i] = r->funcs[i].self;
			total[i] = r->funcs[i].total;
		}
	}
	struct rank_arg k = { r->funcs, t ? t->self : self, t ? t->total : total };
	for (size_t i = 0; i < r->nfuncs; i++)
		if (order == WP_RANK_SELF ? k.self[i] : k.total[i])
			ids[(*n)++] = (uint32_t)i;
	qsort_r(ids, *n, sizeof(*ids), order == WP_RANK_TOTAL ? by_total : by_self, &k);
	free(self);
	free(total);
	return ids;
}

int wp_stack_of_thread(const struct wp_rstack *s, void *arg)
{
	const struct wp_stack_sel *a = arg;
	return s->tid == a->tid && wp_resolved_pid(a->r, s->proc) == a->pid;
}

int wp_stack_of_pid(const struct wp_rstack *s, void *arg)
{
	const struct wp_stack_sel *a = arg;
	return wp_resolved_pid(a->r, s->proc) == a->pid;
}

/* Whether function f is anywhere in stack s. */
static int in_stack(const struct wp_rstack *s, uint32_t f)
{
	for (uint32_t j = 0; j < s->n; j++)
		if (s->frames[j].func == f)
			return 1;
	return 0;
}

long wp_func_main_pid(const struct wp_resolved *r, uint32_t f, int total, int *several)
{
	*several = 0;
	uint64_t *per = calloc(r->nprocs, sizeof(*per));
	if (!per)
		return wp_resolved_pid(r, 0);
	size_t best = 0, with = 0;
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (total ? in_stack(s, f) : s->n && s->frames[s->n - 1].func == f)
			per[s->proc] += s->count;
	}
	/* the images of one pid are one process */
	for (size_t k = 0; k < r->nprocs; k++)
		for (size_t j = 0; j < k; j++)
			if (per[k] && wp_resolved_pid(r, (uint32_t)j) == wp_resolved_pid(r, (uint32_t)k)) {
				per[j] += per[k];
				per[k] = 0;
			}
	for (size_t k = 0; k < r->nprocs; k++) {
		with += per[k] > 0;
		if (per[k] > per[best])
			best = k;
	}
	free(per);
	*several = with > 1;
	return wp_resolved_pid(r, (uint32_t)best);
}

static uint64_t thread_key(const struct wp_resolved *r, uint32_t proc, uint32_t tid)
{
	return (uint64_t)(uint32_t)wp_resolved_pid(r, proc) << 32 | tid;
}

/* Most samples first, then by tid, then the first met (the index, kept in `proc`'s place
 * while sorting would lose it: compared by address in the array being sorted is not
 * stable, so the order met is an explicit key). */
struct tc_sort {
	struct wp_thread_count c;
	size_t met;
};

static int by_samples(const void *a, const void *b)
{
	const struct tc_sort *x = a, *y = b;
	if (x->c.samples != y->c.samples)
		return x->c.samples > y->c.samples ? -1 : 1;
	if (x->c.tid != y->c.tid)
		return x->c.tid < y->c.tid ? -1 : 1;
	return x->met < y->met ? -1 : x->met > y->met;
}

struct wp_thread_count *wp_thread_counts(const struct wp_resolved *r, size_t *n,
					 size_t *unsampled)
{
	struct wp_u64map at = { 0 }; /* thread key -> index */
	struct tc_sort *v = NULL;
	size_t nv = 0, cap = 0;
	*n = 0;
	*unsampled = 0;
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (!s->count)
			continue;
		uint32_t k;
		int added = wp_u64map_get_or_add(&at, thread_key(r, s->proc, s->tid),
						 (uint32_t)nv, &k);
		if (added < 0)
			goto oom;
		if (added) {
			if (wp_grow(&v, &cap, nv + 1, sizeof(*v)))
				goto oom;
			v[nv] = (struct tc_sort){ { s->proc, s->tid, wp_resolved_pid(r, s->proc), 0, 0 },
						  nv };
			nv++;
		}
		v[k].c.samples += s->count;
		v[k].c.waiting += wp_rstack_waiting(s);
	}
	for (size_t i = 0; i < r->nthreads; i++) {
		uint32_t k;
		*unsampled += !wp_u64map_get(&at, thread_key(r, r->thread_procs[i],
							     r->threads[i]->tid), &k);
	}
	wp_u64map_free(&at);
	if (!nv) {
		free(v);
		return NULL;
	}
	qsort(v, nv, sizeof(*v), by_samples);
	struct wp_thread_count *out = malloc(nv * sizeof(*out));
	if (!out) {
		free(v);
		*n = SIZE_MAX;
		return NULL;
	}
	for (size_t i = 0; i < nv; i++)
		out[i] = v[i].c;
	free(v);
	*n = nv;
	return out;
oom:
	wp_u64map_free(&at);
	free(v);
	*n = SIZE_MAX;
	return NULL;
}

static int by_name_samples(const void *a, const void *b)
{
	const struct wp_thread_name *x = a, *y = b;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(x->name, y->name);
}

struct wp_thread_name *wp_thread_names(const struct wp_resolved *r,
				       const struct wp_thread_count *tc, size_t n,
				       size_t *ngroups)
{
	struct wp_interner names = { 0 };
	struct wp_thread_name *v = calloc(n ? n : 1, sizeof(*v));
	*ngroups = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const struct wp_thread *th = wp_resolved_thread_of(r, tc[i].proc, tc[i].tid);
		const char *name = th && th->name && *th->name ? th->name : "?";
		int64_t id = wp_intern(&names, name);
		if (id < 0) {
			wp_interner_free(&names);
			free(v);
			return NULL;
		}
		if ((size_t)id == *ngroups)
			v[(*ngroups)++].name = wp_interned(&names, (uint32_t)id);
		v[id].threads++;
		v[id].samples += tc[i].samples;
	}
	wp_interner_free(&names);
	qsort(v, *ngroups, sizeof(*v), by_name_samples);
	return v;
}

size_t wp_pid_samples(const struct wp_resolved *r, size_t *head, uint64_t *samples)
{
	size_t np = 0;
	for (size_t k = 0; k < r->nprocs; k++) {
		size_t j = 0;
		while (j < k && wp_resolved_pid(r, (uint32_t)j) != wp_resolved_pid(r, (uint32_t)k))
			j++;
		head[k] = j;
		np += j == k;
		samples[k] = 0;
	}
	for (size_t i = 0; i < r->nstacks; i++) /* samples per pid, on its first image */
		samples[head[r->stacks[i].proc]] += r->stacks[i].count;
	return np;
}

size_t wp_pid_images(const struct wp_resolved *r, size_t k, size_t *last)
{
	long pid = wp_resolved_pid(r, (uint32_t)k);
	size_t images = 0;
	*last = k;
	for (size_t j = 0; j < r->nprocs; j++)
		if (wp_resolved_pid(r, (uint32_t)j) == pid) {
			images++;
			*last = j; /* procs are in the order they started */
		}
	return images;
}
