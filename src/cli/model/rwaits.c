/* SPDX-License-Identifier: MIT */
#include "rwaits.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "uthash_cfg.h"

#include "alloc.h"

uint64_t wp_rwait_samples(const struct wp_rstack *s, uint32_t k)
{
	return s->waits[k].count; /* capped when the model was built (wait_attach.c) */
}

uint64_t wp_rstack_unwaited(const struct wp_rstack *s)
{
	uint64_t rest = s->count;
	for (uint32_t k = 0; k < s->nwaits; k++) {
		/* the build capped a stack's waits at its samples (wait_attach.c's cap_waits) */
		assert(wp_rwait_samples(s, k) <= rest);
		rest -= wp_rwait_samples(s, k);
	}
	return rest;
}

void wp_wait_frame_name(const struct wp_rwait *w, char *buf, size_t cap)
{
	snprintf(buf, cap, "[wait %s %s]", wp_wait_kind_name(w->kind), w->object ? w->object : "?");
}

struct total_key {
	UT_hash_handle hh;
	size_t at; /* index in the totals */
	char key[]; /* the kind's letter, then the object */
};

/* The index of the total of (kind, object) in *v, added when new. */
static size_t total_of(struct total_key **tab, struct wp_wait_total **v, size_t *n,
		       size_t *cap, const struct wp_rwait *w)
{
	const char *obj = w->object ? w->object : "?";
	size_t len = 1 + strlen(obj);
	struct total_key *t;
	char small[256], *key = len + 1 <= sizeof(small) ? small : wp_xmalloc(len + 1);
	key[0] = (char)('a' + w->kind);
	memcpy(key + 1, obj, len);
	HASH_FIND(hh, *tab, key, len, t);
	if (!t) {
		t = wp_xmalloc(sizeof(*t) + len + 1);
		memcpy(t->key, key, len + 1);
		t->at = *n;
		HASH_ADD_KEYPTR(hh, *tab, t->key, len, t);
		wp_xgrow(v, cap, *n + 1, sizeof(**v));
		(*v)[(*n)++] = (struct wp_wait_total){ .kind = w->kind, .object = obj };
	}
	if (key != small)
		free(key);
	return t->at;
}

struct ranked {
	struct wp_wait_total t;
	size_t was; /* its index before the sort */
};

static int by_total(const void *a, const void *b)
{
	const struct wp_wait_total *x = &((const struct ranked *)a)->t;
	const struct wp_wait_total *y = &((const struct ranked *)b)->t;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	int c = strcmp(x->object, y->object);
	return c ? c : (int)x->kind - (int)y->kind;
}

/* Sorts the n totals, and makes `of` (nof indexes into them) follow. */
static void sort_totals(struct wp_wait_total *v, size_t n, uint32_t *of, size_t nof)
{
	struct ranked *rk = wp_xmalloc((n ? n : 1) * sizeof(*rk));
	uint32_t *moved = wp_xmalloc((n ? n : 1) * sizeof(*moved));
	for (size_t i = 0; i < n; i++)
		rk[i] = (struct ranked){ v[i], i };
	qsort(rk, n, sizeof(*rk), by_total);
	for (size_t i = 0; i < n; i++) {
		v[i] = rk[i].t;
		moved[rk[i].was] = (uint32_t)i;
	}
	for (size_t i = 0; of && i < nof; i++)
		if (of[i] != UINT32_MAX)
			of[i] = moved[of[i]];
	free(moved);
	free(rk);
}

struct wp_wait_total *wp_wait_totals(const struct wp_resolved *r,
				     int (*keep)(const struct wp_rstack *, void *), void *arg,
				     size_t *n, uint32_t **of)
{
	struct total_key *tab = NULL, *t, *tmp;
	struct wp_wait_total *v = NULL;
	size_t cap = 0;
	uint32_t *at = wp_xmalloc((r->nwaits + 1) * sizeof(*at));
	*n = 0;
	for (size_t i = 0; i < r->nwaits; i++)
		at[i] = UINT32_MAX;
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (keep && !keep(s, arg))
			continue;
		for (uint32_t k = 0; k < s->nwaits; k++) {
			uint64_t c = wp_rwait_samples(s, k);
			if (!c)
				continue;
			size_t j = total_of(&tab, &v, n, &cap, &s->waits[k]);
			v[j].count += c;
			v[j].weight_ns += s->waits[k].weight_ns;
			at[&s->waits[k] - r->waits] = (uint32_t)j;
		}
	}
	HASH_ITER(hh, tab, t, tmp) {
		HASH_DEL(tab, t);
		free(t);
	}
	sort_totals(v, *n, at, r->nwaits);
	if (of)
		*of = at;
	else
		free(at);
	return v;
}

int wp_rstack_wait_leaf(const struct wp_resolved *r, const struct wp_rstack *s)
{
	const char *m = s->n ? r->funcs[s->frames[s->n - 1].func].module : NULL;
	return m && !strcmp(m, "[wait]");
}

int wp_rwait_adds_frame(const struct wp_resolved *r, const struct wp_rstack *s)
{
	return !wp_rstack_wait_leaf(r, s);
}

/* ---- who waited and who held ---- */

/* Counts `n` samples of thread `tid` of process `proc` in the small table tids/tn
 * (WP_WAIT_NAMES slots; 0 is free). */
static void tally_tid(uint64_t *tids, uint64_t *tn, int *more, uint32_t proc, uint32_t tid,
		      uint64_t n)
{
	uint64_t key = ((uint64_t)proc << 32 | tid) + 1;
	for (int i = 0; i < WP_WAIT_NAMES; i++)
		if (tids[i] == key || !tids[i]) {
			tids[i] = key;
			tn[i] += n;
			return;
		}
	*more = 1;
}

/* The same for the waiting function `f` (names are interned: the pointer is the name). */
static void tally_func(struct wp_wait_people *w, const char *f, uint64_t n)
{
	if (!f)
		return;
	for (int i = 0; i < WP_WAIT_NAMES; i++)
		if (w->funcs[i] == f || !w->funcs[i]) {
			w->funcs[i] = f;
			w->func_n[i] += n;
			return;
		}
	w->more_funcs = 1;
}

/* The frame a holder stack is shown by: the program's function nearest the leaf, else the
 * leaf; NULL when there is no stack. */
static const struct wp_rframe *holder_at(const struct wp_resolved *r, const struct wp_rwait *rw)
{
	for (uint32_t j = rw->holder_n; j-- > 0;)
		if (r->funcs[rw->holder_frames[j].func].kind == WP_KIND_PROGRAM)
			return &rw->holder_frames[j];
	return rw->holder_n ? &rw->holder_frames[rw->holder_n - 1] : NULL;
}

/* Counts `n` samples held by rw's holder (thread and place) in w's holder slots. */
static void tally_holder(const struct wp_resolved *r, struct wp_wait_people *w, uint32_t proc,
			 const struct wp_rwait *rw, uint64_t n)
{
	uint64_t key = ((uint64_t)proc << 32 | rw->holder) + 1;
	const struct wp_rframe *at = holder_at(r, rw);
	for (int i = 0; i < WP_WAIT_NAMES; i++) {
		struct wp_wait_holder *h = &w->holders[i];
		if (!h->key || h->key == key) {
			h->key = key;
			if (at && (!h->at || n > h->best)) {
				h->at = at;
				h->best = n;
			}
			h->n += n;
			return;
		}
	}
	w->more_holders = 1;
}

/* Sorts the WP_WAIT_NAMES slots of a name table (keys, with their counts), most samples
 * first, stably: they fill in the order the stacks come. */
static void sort_slots(uint64_t *keys, uint64_t *n)
{
	for (int i = 1; i < WP_WAIT_NAMES; i++)
		for (int j = i; j > 0 && n[j] > n[j - 1]; j--) {
			uint64_t k = keys[j], c = n[j];
			keys[j] = keys[j - 1];
			n[j] = n[j - 1];
			keys[j - 1] = k;
			n[j - 1] = c;
		}
}

static void sort_people(struct wp_wait_people *w)
{
	sort_slots(w->tids, w->tid_n);
	uint64_t fk[WP_WAIT_NAMES];
	for (int i = 0; i < WP_WAIT_NAMES; i++)
		fk[i] = (uint64_t)(uintptr_t)w->funcs[i];
	sort_slots(fk, w->func_n);
	for (int i = 0; i < WP_WAIT_NAMES; i++)
		w->funcs[i] = (const char *)(uintptr_t)fk[i];
	for (int i = 1; i < WP_WAIT_NAMES; i++)
		for (int j = i; j > 0 && w->holders[j].n > w->holders[j - 1].n; j--) {
			struct wp_wait_holder tmp = w->holders[j];
			w->holders[j] = w->holders[j - 1];
			w->holders[j - 1] = tmp;
		}
}

struct wp_wait_people *wp_wait_people(const struct wp_resolved *r, const uint32_t *of,
				      size_t ntotals)
{
	struct wp_wait_people *v = calloc(ntotals + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		for (uint32_t k = 0; k < s->nwaits; k++) {
			const struct wp_rwait *rw = &s->waits[k];
			uint64_t c = wp_rwait_samples(s, k);
			if (!c)
				continue;
			/* a wait with samples went to a total (wp_wait_totals) */
			assert(of[rw - r->waits] < ntotals);
			struct wp_wait_people *w = &v[of[rw - r->waits]];
			tally_tid(w->tids, w->tid_n, &w->more_tids, s->proc, s->tid, c);
			tally_func(w, rw->waiter, c);
			if (rw->holder) {
				w->holder_known += c;
				tally_holder(r, w, s->proc, rw, c);
			}
		}
	}
	for (size_t i = 0; i < ntotals; i++)
		sort_people(&v[i]);
	return v;
}

uint64_t wp_rstack_waiting(const struct wp_rstack *s)
{
	if (s->flags & WP_STACK_WAITING)
		return s->count;
	uint64_t waiting = 0;
	for (uint32_t k = 0; k < s->nwaits; k++) {
		/* a running stack's waits are its waits for a CPU (wait_attach.c) */
		assert(s->waits[k].kind == WP_WAIT_CPU);
		waiting += wp_rwait_samples(s, k);
	}
	assert(waiting <= s->count);
	return waiting;
}

uint64_t wp_rstack_waiting_cpu(const struct wp_rstack *s)
{
	uint64_t cpu = 0;
	for (uint32_t k = 0; k < s->nwaits; k++)
		if (s->waits[k].kind == WP_WAIT_CPU)
			cpu += wp_rwait_samples(s, k);
	return cpu;
}

uint64_t wp_waiting_samples(const struct wp_resolved *r)
{
	uint64_t waiting = 0;
	for (size_t i = 0; i < r->nstacks; i++)
		waiting += wp_rstack_waiting(&r->stacks[i]);
	return waiting;
}

uint64_t wp_wait_kind_totals(const struct wp_wait_total *tot, size_t n, uint64_t *count,
			     uint64_t *ns)
{
	uint64_t all = 0;
	memset(count, 0, WP_WAIT__N * sizeof(*count));
	memset(ns, 0, WP_WAIT__N * sizeof(*ns));
	for (size_t i = 0; i < n; i++) {
		count[tot[i].kind] += tot[i].count;
		ns[tot[i].kind] += tot[i].weight_ns;
		all += tot[i].count;
	}
	return all;
}
