#include "rwaits.h"

#include <stdlib.h>
#include <string.h>

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

uint64_t wp_waiting_samples(const struct wp_resolved *r)
{
	uint64_t waiting = 0;
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (s->flags & WP_STACK_WAITING) {
			waiting += s->count;
			continue;
		}
		for (uint32_t k = 0; k < s->nwaits; k++)
			waiting += wp_rwait_samples(s, k); /* a runnable thread's wait for a CPU */
	}
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
