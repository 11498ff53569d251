/* SPDX-License-Identifier: MIT */
#include "live_counts.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "deadlock_model.h"
#include "rwaits.h"
#include "summary.h"

static void oom(const struct wp_live_counts *m)
{
	if (m->oom)
		m->oom();
	fprintf(stderr, "wallprof: out of memory\n");
	exit(1);
}

int wp_live_counts_init(struct wp_live_counts *m, void (*oom_fn)(void))
{
	memset(m, 0, sizeof(*m));
	m->oom = oom_fn;
	m->symcache = wp_symcache_new();
	return m->symcache ? 0 : -1;
}

/* The counts' function (name, module), added when new. */
static uint32_t func_id(struct wp_live_counts *m, const char *name, const char *module)
{
	const char *kname, *kmodule;
	int added;
	int64_t id = wp_func_ids_get(&m->ids, name, module, &kname, &kmodule, &added);
	if (id < 0)
		oom(m);
	if (added) {
		assert((size_t)id == m->nfuncs); /* the counts' ids are the interner's: funcs[id] */
		if (wp_grow(&m->funcs, &m->capfuncs, m->nfuncs + 1, sizeof(*m->funcs)))
			oom(m);
		m->funcs[m->nfuncs++] = (struct wp_live_func){ .name = kname, .module = kmodule };
	}
	return (uint32_t)id;
}

/* The counts' id of function `mf` of process P's model. */
static uint32_t proc_func(struct wp_live_counts *m, struct wp_live_proc *P, uint32_t mf)
{
	const struct wp_resolved *r = P->model;
	if (mf >= P->nfmap) {
		size_t n = r->nfuncs > mf ? r->nfuncs : mf + 1;
		if (wp_grow(&P->fmap, &P->capfmap, n, sizeof(*P->fmap)))
			oom(m);
		for (size_t i = P->nfmap; i < n; i++)
			P->fmap[i] = UINT32_MAX;
		P->nfmap = n;
	}
	if (P->fmap[mf] == UINT32_MAX)
		P->fmap[mf] = func_id(m, r->funcs[mf].name, r->funcs[mf].module);
	return P->fmap[mf];
}

static struct wp_live_thread *thread_of(struct wp_live_counts *m, uint32_t proc, uint32_t tid)
{
	uint64_t key = (uint64_t)proc << 32 | tid;
	struct wp_live_thread *t;
	HASH_FIND(hh, m->threads, &key, sizeof(key), t);
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			oom(m);
		t->key = key;
		t->proc = proc;
		t->tid = tid;
		t->top_ivl = -1;
		HASH_ADD(hh, m->threads, key, sizeof(t->key), t);
	}
	return t;
}

struct wp_live_thread *wp_live_thread(const struct wp_live_counts *m, uint64_t key)
{
	struct wp_live_thread *t;
	HASH_FIND(hh, m->threads, &key, sizeof(key), t);
	return t;
}

static void tf_add(struct wp_live_counts *m, uint32_t proc, uint32_t tid, uint32_t func,
		   uint64_t n)
{
	struct wp_live_tfkey key = { proc, tid, func };
	struct wp_live_tf *c;
	HASH_FIND(hh, m->tf, &key, sizeof(key), c);
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			oom(m);
		c->key = key;
		HASH_ADD(hh, m->tf, key, sizeof(c->key), c);
	}
	c->now += n;
}

static struct wp_live_wait *wait_of(struct wp_live_counts *m, uint32_t proc,
				    enum wp_wait_kind kind, const char *object)
{
	size_t lo = strlen(object), len = 5 + lo + 1;
	char stackbuf[512], *k = len <= sizeof(stackbuf) ? stackbuf : malloc(len);
	if (!k)
		oom(m);
	memcpy(k, &proc, 4);
	k[4] = (char)kind;
	memcpy(k + 5, object, lo + 1);
	struct wp_live_wait *w;
	HASH_FIND(hh, m->wait_by_key, k, len, w);
	if (!w) {
		w = calloc(1, sizeof(*w) + len);
		if (!w)
			oom(m);
		memcpy(w->key, k, len);
		w->object = w->key + 5;
		w->proc = proc;
		w->kind = kind;
		w->id = (uint32_t)m->nwaits;
		if (wp_grow(&m->waits, &m->capwaits, m->nwaits + 1, sizeof(*m->waits)))
			oom(m);
		m->waits[m->nwaits++] = w;
		HASH_ADD(hh, m->wait_by_key, key[0], len, w);
	}
	if (k != stackbuf)
		free(k);
	return w;
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* What process k counted becomes its previous checkpoint's (fresh: a new image, nothing
 * before), and its counts start over. */
static void roll(struct wp_live_counts *m, uint32_t k, int fresh)
{
	struct wp_live_tf *c, *ct;
	HASH_ITER(hh, m->tf, c, ct) {
		if (c->key.proc != k)
			continue;
		c->before = fresh ? 0 : c->now;
		c->now = 0;
	}
	struct wp_live_thread *t, *tt;
	HASH_ITER(hh, m->threads, t, tt) {
		if (t->proc != k)
			continue;
		t->before = fresh ? 0 : t->now;
		t->wait_before = fresh ? 0 : t->wait_now;
		t->now = t->wait_now = 0;
		t->seen = 0;
	}
	for (size_t i = 0; i < m->nwaits; i++) {
		struct wp_live_wait *w = m->waits[i];
		if (w->proc != k)
			continue;
		w->before = fresh ? 0 : w->now;
		w->ns_before = fresh ? 0 : w->ns_now;
		w->now = w->ns_now = 0;
		w->nthreads = 0;
		w->holder = 0;
		w->top_tid = 0;
	}
	struct wp_live_proc *P = m->procs[k];
	P->total_before = fresh ? 0 : P->total;
	P->dur_before = fresh ? 0 : P->dur_now;
}

void wp_live_settle(struct wp_live_counts *m, uint32_t k)
{
	struct wp_live_tf *c, *ct;
	HASH_ITER(hh, m->tf, c, ct)
		if (c->key.proc == k)
			c->before = c->now;
	struct wp_live_thread *t, *tt;
	HASH_ITER(hh, m->threads, t, tt)
		if (t->proc == k) {
			t->before = t->now;
			t->wait_before = t->wait_now;
		}
	for (size_t i = 0; i < m->nwaits; i++)
		if (m->waits[i]->proc == k) {
			m->waits[i]->before = m->waits[i]->now;
			m->waits[i]->ns_before = m->waits[i]->ns_now;
		}
	struct wp_live_proc *P = m->procs[k];
	P->total_before = P->total;
	P->dur_before = P->dur_now;
	P->settled = 1;
}

/* The waits of process k's model r: per object its samples and time (the model's totals,
 * wp_wait_totals), who waited on it and who held it (wp_wait_people, as the text report). */
static void count_waits(struct wp_live_counts *m, uint32_t k, const struct wp_resolved *r)
{
	size_t n;
	uint32_t *of;
	struct wp_wait_total *tot = wp_wait_totals(r, NULL, NULL, &n, &of);
	struct wp_wait_people *who = wp_wait_people(r, of, n);
	if (!who)
		oom(m);
	for (size_t i = 0; i < n; i++) {
		struct wp_live_wait *w = wait_of(m, k, tot[i].kind, tot[i].object);
		w->now += tot[i].count;
		w->ns_now += tot[i].weight_ns;
		w->nthreads = 0;
		while (w->nthreads < WP_WAIT_NAMES && who[i].tids[w->nthreads])
			w->nthreads++;
		w->nthreads += who[i].more_tids;
		w->top_tid = who[i].tids[0] ? (uint32_t)(who[i].tids[0] - 1) : 0;
		w->holder = who[i].holders[0].key ? (uint32_t)(who[i].holders[0].key - 1) : 0;
	}
	free(who);
	free(of);
	free(tot);
}

void wp_live_absorb(struct wp_live_counts *m, uint32_t k, struct wp_profile *p)
{
	struct wp_live_proc *P = m->procs[k];
	uint64_t start = p->info.start_unix_ns;
	uint64_t total = wp_profile_total_samples(p);
	/* A new program image (exec) starts counting afresh: no interval to take. */
	int fresh = !P->loaded || start != P->start_unix || total < P->total;
	/* the text report's leaves: a waiting sample's C-library frames (futex_wait,
	 * __GI___libc_read...) are one [wait KIND OBJECT] leaf, so both read the same rows */
	static const struct wp_filter leaves = { .wait_leaves = 1 };
	if (!P->model)
		P->model = wp_resolve_cached(p, &leaves, m->symcache);
	else if (wp_resolve_update(P->model, p) != 0)
		oom(m);
	if (!P->model)
		oom(m);
	roll(m, k, fresh);

	const struct wp_resolved *r = P->model;
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (!s->count)
			continue;
		uint32_t f;
		if (s->n) {
			f = proc_func(m, P, s->frames[s->n - 1].func);
		} else { /* only the agent's frames, or none */
			if (P->nostack == UINT32_MAX)
				P->nostack = func_id(m, "(no stack)", "");
			f = P->nostack;
		}
		tf_add(m, k, s->tid, f, s->count);
		struct wp_live_thread *th = thread_of(m, k, s->tid);
		th->now += s->count;
		th->wait_now += wp_rstack_waiting(s);
	}
	count_waits(m, k, r);
	P->deadlock[0] = 0;
	if (r->ndeadlocks)
		wp_deadlock_line(&r->deadlocks[0], P->deadlock, sizeof(P->deadlock));
	P->threads_live = 0;
	for (size_t i = 0; i < p->nthreads; i++) {
		struct wp_live_thread *th = thread_of(m, k, p->threads[i].tid);
		const char *name = p->threads[i].name;
		snprintf(th->name, sizeof(th->name), "%s", name && *name ? name : "?");
		th->exited = !!(p->threads[i].flags & WP_THREAD_EXITED);
		th->seen = 1;
	}
	struct wp_live_thread *t, *tt;
	HASH_ITER(hh, m->threads, t, tt)
		if (t->proc == k && t->seen && !t->exited)
			P->threads_live++;

	P->total = total;
	P->dur_now = p->info.duration_ns;
	P->start_unix = start;
	P->loaded = 1;
	P->settled = 0;
	P->ended = !p->info.checkpoint; /* the final write */
	wp_resolved_program(r, 0, P->prog, sizeof(P->prog));
	P->threads_seen = p->info.threads_seen >= 0 ? p->info.threads_seen : (long long)p->nthreads;
	struct wp_summary sum;
	wp_summarize(p, r, &sum);
	P->sampler_pct = sum.sampler_core_pct;
	P->held_pct = sum.held_pct; /* threads held by the sampler, of their lifetimes */
	if (P->is_main) {
		const char *v = p->info.command;
		if (v && *v)
			snprintf(m->command, sizeof(m->command), "%s", v);
		v = p->info.mode;
		snprintf(m->mode, sizeof(m->mode), "%s", v && *v ? v : "wall");
		m->hz = (long long)p->info.hz;
		m->per_tick = p->info.threads_per_tick;
	}
	const char *w = wp_symbolizer_warnings(r->sym);
	if (w && *w && !m->warning[0]) {
		const char *nl = strchr(w, '\n');
		snprintf(m->warning, sizeof(m->warning), "%.*s", nl ? (int)(nl - w) : (int)strlen(w),
			 w);
	}
	/* the model points into the checkpoint it was built from: keep that one */
	if (P->prof)
		wp_profile_free(P->prof);
	P->prof = p;
}

void wp_live_tally(struct wp_live_counts *m)
{
	for (size_t i = 0; i < m->nfuncs; i++)
		m->funcs[i].now = m->funcs[i].before = m->funcs[i].ivl = 0;
	struct wp_live_thread *t, *tt;
	HASH_ITER(hh, m->threads, t, tt) {
		t->ivl = sub0(t->now, t->before);
		t->wait_ivl = sub0(t->wait_now, t->wait_before);
		t->top_ivl = -1;
		t->top_ivl_n = 0;
	}
	struct wp_live_tf *c, *ct;
	HASH_ITER(hh, m->tf, c, ct) {
		c->ivl = sub0(c->now, c->before);
		struct wp_live_func *f = &m->funcs[c->key.func];
		f->now += c->now;
		f->ivl += c->ivl;
	}
	HASH_ITER(hh, m->tf, c, ct) {
		struct wp_live_thread *th = thread_of(m, c->key.proc, c->key.tid);
		uint32_t f = c->key.func;
		if (c->ivl > th->top_ivl_n ||
		    (c->ivl && c->ivl == th->top_ivl_n &&
		     m->funcs[f].now > m->funcs[th->top_ivl].now)) {
			th->top_ivl = (int32_t)f;
			th->top_ivl_n = c->ivl;
		}
	}
	memset(m->kind_now, 0, sizeof(m->kind_now));
	memset(m->kind_ivl, 0, sizeof(m->kind_ivl));
	memset(m->kind_ns_now, 0, sizeof(m->kind_ns_now));
	memset(m->kind_ns_ivl, 0, sizeof(m->kind_ns_ivl));
	for (size_t i = 0; i < m->nwaits; i++) {
		struct wp_live_wait *w = m->waits[i];
		w->ivl = sub0(w->now, w->before);
		w->ns_ivl = sub0(w->ns_now, w->ns_before);
		m->kind_now[w->kind] += w->now;
		m->kind_ivl[w->kind] += w->ivl;
		m->kind_ns_now[w->kind] += w->ns_now;
		m->kind_ns_ivl[w->kind] += w->ns_ivl;
	}
	m->total_now = m->total_ivl = m->ivl_ns = 0;
	m->threads_seen = m->nthreads_live = m->nprocs_live = m->nprocs_loaded = 0;
	m->sampler_pct = m->held_pct = 0;
	m->deadlock[0] = 0;
	for (size_t k = 0; k < m->nprocs; k++) {
		struct wp_live_proc *P = m->procs[k];
		if (!P->loaded)
			continue;
		if (!m->deadlock[0] && !P->ended && P->deadlock[0])
			snprintf(m->deadlock, sizeof(m->deadlock), "%s", P->deadlock);
		m->nprocs_loaded++;
		m->nprocs_live += !P->ended;
		m->total_now += P->total;
		m->total_ivl += sub0(P->total, P->total_before);
		uint64_t d = sub0(P->dur_now, P->dur_before);
		if (d > m->ivl_ns)
			m->ivl_ns = d;
		m->threads_seen += P->threads_seen;
		m->nthreads_live += P->ended ? 0 : P->threads_live;
		/* a sampler per process: of one core, summed over those running now */
		m->sampler_pct += P->ended ? 0 : P->sampler_pct;
		m->held_pct += P->held_pct * (double)P->total; /* weighted by samples, below */
	}
	m->held_pct = m->total_now ? m->held_pct / (double)m->total_now : 0;
	m->loaded = m->nprocs_loaded > 0;
}

uint32_t wp_live_proc_at(struct wp_live_counts *m, const char *path, long pid, int is_main)
{
	for (size_t k = 0; k < m->nprocs; k++)
		if (!strcmp(m->procs[k]->path, path))
			return (uint32_t)k;
	struct wp_live_proc *P = calloc(1, sizeof(*P));
	if (!P)
		oom(m);
	snprintf(P->path, sizeof(P->path), "%s", path);
	P->pid = pid;
	P->is_main = is_main;
	P->nostack = UINT32_MAX;
	if (wp_grow(&m->procs, &m->capprocs, m->nprocs + 1, sizeof(*m->procs)))
		oom(m);
	m->procs[m->nprocs++] = P;
	return (uint32_t)(m->nprocs - 1);
}

void wp_live_release(struct wp_live_counts *m, uint32_t k)
{
	struct wp_live_proc *P = m->procs[k];
	wp_resolved_free(P->model);
	P->model = NULL;
	if (P->prof)
		wp_profile_free(P->prof);
	P->prof = NULL;
	/* the map of its model's function ids goes with the model, capacity and all: a later
	 * model (its pid exec'd) grows a new one from nothing (a capacity left behind, wp_grow
	 * would not allocate, and proc_func would write through NULL) */
	free(P->fmap);
	P->fmap = NULL;
	P->nfmap = P->capfmap = 0;
}

const char *wp_live_proc_label(const struct wp_live_counts *m, uint32_t k, char *buf,
			       size_t cap)
{
	const struct wp_live_proc *P = m->procs[k];
	snprintf(buf, cap, "%s %ld", P->prog[0] ? P->prog : "?", P->pid);
	return buf;
}

void wp_live_counts_free(struct wp_live_counts *m)
{
	struct wp_live_tf *c, *c2;
	HASH_ITER(hh, m->tf, c, c2) {
		HASH_DEL(m->tf, c);
		free(c);
	}
	struct wp_live_thread *t, *t2;
	HASH_ITER(hh, m->threads, t, t2) {
		HASH_DEL(m->threads, t);
		free(t);
	}
	wp_func_ids_free(&m->ids);
	free(m->funcs);
	HASH_CLEAR(hh, m->wait_by_key);
	for (size_t i = 0; i < m->nwaits; i++)
		free(m->waits[i]);
	free(m->waits);
	for (size_t k = 0; k < m->nprocs; k++) {
		wp_live_release(m, (uint32_t)k);
		free(m->procs[k]);
	}
	free(m->procs);
	wp_symcache_free(m->symcache); /* after the models that used it */
}
