/* SPDX-License-Identifier: MIT */
#include "resolve.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "uthash_cfg.h"

#include "alloc.h"
#include "build.h"
#include "deadlock_model.h"
#include "funcids.h"
#include "procinfo.h"
#include "rwaits.h"
#include "tally.h"


/* Per function: how often each (file, line) was where it executed, to name its hottest line. */
struct line_count {
	UT_hash_handle hh;
	struct {
		const char *file; /* interned by the symbolizer: the pointer is the string */
		int line;
		uint32_t func;
	} k;
	uint64_t self, total;
};

/* One address in one role, symbolized once: profiles repeat the same pcs across many stacks,
 * and the live view across checkpoints. */
struct loc_key {
	UT_hash_handle hh;
	struct {
		uint64_t pc;
		uint64_t leaf; /* 1: looked up as a leaf, 0: as a return address */
		uint64_t proc; /* whose address space */
	} k;
	uint32_t idx; /* in r->locs, or WP_NO_LOC */
};

/* Per location, during a build: how often it occurs in the stacks (once per occurrence) and
 * as the leaf, to count source lines per location rather than per frame of every stack. */
struct loc_use {
	uint64_t total, self;
	int seen;
};

struct priv {
	struct wp_func_ids funcs; /* (name, module) -> id */
	size_t capfuncs;
	struct loc_key *memo;
	struct loc_use *use; /* parallel to r->locs */
	size_t caplocs;
	uint64_t modsig;    /* the module map the symbolizer and the locations are for */
	struct line_count *lines;
	uint32_t *stack_at; /* per stack index (process k's from stack_base[k]): its kept stack's
			     * index + 1, 0 if none */
	size_t nstack_at;
	size_t *stack_base; /* per process */
	char *tree_keep;    /* --process-tree: per process, whether it is kept (else NULL) */
	struct wp_symbolizer **syms; /* per process; syms[0] is r->sym */
	char *sym_shared;   /* per process: its symbolizer is an earlier process's (not freed) */
	struct wp_symcache *symcache; /* several processes: the module files they share */
	struct wp_symcache *ext_cache; /* wp_resolve_cached: the caller's (not freed) */
};

/* ---- filter ---- */

/* A tid ("4242"), or a thread name matched against the tid's last THREAD record. */
static int thread_matches(const struct wp_profile *p, uint32_t tid, const char *sel)
{
	char *end;
	unsigned long v = strtoul(sel, &end, 10);
	if (*sel && !*end)
		return v == tid;
	const struct wp_thread *t = wp_profile_thread(p, tid);
	return t && t->name && !strcmp(t->name, sel);
}

/* A pid ("4242"), or a program's or process's name (procinfo.h), against p's META. */
static int process_matches(const struct wp_profile *p, const char *sel)
{
	char *end;
	unsigned long v = strtoul(sel, &end, 10);
	if (*sel && !*end)
		return p->info.pid == (long long)v;
	return wp_proc_named(p, sel);
}

int wp_filter_keeps_thread(const struct wp_profile *p, const struct wp_filter *f, uint32_t tid)
{
	if (!f)
		return 1;
	/* with descendants, the model decided per process (tree_keep) before asking */
	if (f->process && !f->descendants && !process_matches(p, f->process))
		return 0;
	if (f->thread && !thread_matches(p, tid, f->thread))
		return 0;
	return 1;
}

int wp_filter_keeps_stack(const struct wp_profile *p, const struct wp_filter *f,
			  const struct wp_stack *s)
{
	return wp_filter_keeps_thread(p, f, s->tid);
}

/* ---- functions and locations ---- */

static enum wp_frame_kind kind_of(const struct wp_profile *p, uint64_t pc, const struct wp_frame *f)
{
	if (!f->known)
		return WP_KIND_UNKNOWN;
	const struct wp_module *m = wp_profile_module_at(p, pc);
	return m && (m->flags & WP_MODULE_MAIN) ? WP_KIND_PROGRAM : WP_KIND_LIBRARY;
}

static uint32_t intern(struct wp_resolved *r, const char *name, const char *module,
		       enum wp_frame_kind kind)
{
	struct priv *pv = r->priv;
	const char *kname, *kmodule;
	int added;
	int64_t id = wp_func_ids_get(&pv->funcs, name, module, &kname, &kmodule, &added);
	if (id < 0)
		wp_oom();
	if (added) {
		/* the model's function ids are the interner's: funcs[id] */
		assert((size_t)id == r->nfuncs);
		wp_xgrow(&r->funcs, &pv->capfuncs, r->nfuncs + 1, sizeof(*r->funcs));
		struct wp_func *fn = &r->funcs[r->nfuncs++];
		memset(fn, 0, sizeof(*fn));
		fn->name = kname;
		fn->module = kmodule;
		fn->kind = kind;
	}
	return (uint32_t)id;
}

uint32_t wp_resolved_func(struct wp_resolved *r, const char *name, const char *module)
{
	return intern(r, name, module, WP_KIND_UNKNOWN);
}

/* The location of `pc` in its role, symbolized on first use; WP_NO_LOC for the agent's own code
 * (the one place where it is left out). */
uint32_t wp_model_location(struct wp_resolved *r, uint32_t proc, uint64_t pc, int leaf)
{
	struct priv *pv = r->priv;
	const struct wp_profile *p = r->procs[proc];
	struct loc_key probe, *lk;
	memset(&probe.k, 0, sizeof(probe.k));
	probe.k.pc = pc;
	probe.k.leaf = leaf != 0;
	probe.k.proc = proc;
	HASH_FIND(hh, pv->memo, &probe.k, sizeof(probe.k), lk);
	if (lk)
		return lk->idx;
	lk = wp_xcalloc(1, sizeof(*lk));
	lk->k = probe.k;
	HASH_ADD(hh, pv->memo, k, sizeof(lk->k), lk);

	struct wp_frame fr[WP_MAX_INLINE];
	int n = wp_symbolize(pv->syms[proc], pc, !leaf, fr, WP_MAX_INLINE);
	if (n < 1 || wp_frame_is_agent(&fr[0])) {
		lk->idx = WP_NO_LOC;
		return WP_NO_LOC;
	}
	if (r->nlocs == pv->caplocs) {
		size_t cap = pv->caplocs; /* both arrays grow together */
		wp_xgrow(&r->locs, &cap, r->nlocs + 1, sizeof(*r->locs));
		wp_xgrow(&pv->use, &pv->caplocs, r->nlocs + 1, sizeof(*pv->use));
		assert(cap == pv->caplocs);
	}
	memset(&pv->use[r->nlocs], 0, sizeof(pv->use[0]));
	struct wp_loc *l = &r->locs[r->nlocs];
	const struct wp_module *m = wp_profile_module_at(p, pc);
	l->pc = pc;
	l->leaf = leaf != 0;
	l->proc = proc;
	l->module = m ? (int32_t)(m - p->modules) : -1;
	l->n = (uint32_t)n;
	for (int i = 0; i < n; i++) {
		l->frames[i].func = intern(r, fr[i].function, fr[i].module, kind_of(p, pc, &fr[i]));
		if (fr[i].inlined)
			r->funcs[l->frames[i].func].inlined = 1;
		l->frames[i].line = fr[i].line;
		l->frames[i].file = fr[i].file;
	}
	lk->idx = (uint32_t)r->nlocs++;
	return lk->idx;
}

struct wp_symbolizer *wp_model_symbolizer(const struct wp_resolved *r, uint32_t proc)
{
	const struct priv *pv = r->priv;
	return pv->syms[proc];
}

/* ---- counting ---- */

static struct line_count *line_entry(struct priv *pv, const struct wp_rframe *f)
{
	struct line_count probe, *lc;
	memset(&probe.k, 0, sizeof(probe.k));
	probe.k.file = f->file;
	probe.k.line = f->line;
	probe.k.func = f->func;
	HASH_FIND(hh, pv->lines, &probe.k, sizeof(probe.k), lc);
	if (!lc) {
		lc = wp_xcalloc(1, sizeof(*lc));
		lc->k = probe.k;
		HASH_ADD(hh, pv->lines, k, sizeof(lc->k), lc);
	}
	return lc;
}

/* Notes one stack's locations (leaf first) for the line counts. A (function, file, line) is
 * entered when first met in reading the stacks in order, each root first: pick_lines breaks
 * ties by that order, the same whoever builds the model. */
static void use_locations(struct wp_resolved *r, const uint32_t *locs, uint32_t nl,
			  uint64_t count)
{
	struct priv *pv = r->priv;
	for (uint32_t j = nl; j-- > 0;) {
		struct loc_use *u = &pv->use[locs[j]];
		if (!u->seen) {
			const struct wp_loc *l = &r->locs[locs[j]];
			u->seen = 1;
			for (uint32_t k = l->n; k-- > 0;)
				line_entry(pv, &l->frames[k]);
		}
		u->total += count;
	}
	if (nl)
		pv->use[locs[0]].self += count; /* its innermost frame is the stack's leaf */
}

/* The line counts: each frame of a location counts that location's occurrences. */
static void count_lines(struct wp_resolved *r)
{
	struct priv *pv = r->priv;
	for (size_t i = 0; i < r->nlocs; i++) {
		const struct loc_use *u = &pv->use[i];
		if (!u->seen)
			continue;
		for (uint32_t k = 0; k < r->locs[i].n; k++) {
			struct line_count *lc = line_entry(pv, &r->locs[i].frames[k]);
			lc->total += u->total;
			if (k == 0)
				lc->self += u->self;
		}
	}
}

/* Each function's file:line is where most of its own samples were; for a function that is
 * never a leaf, where most of its calls out were made. Over every stack of the profile. */
static void pick_lines(struct wp_resolved *r)
{
	struct priv *pv = r->priv;
	uint64_t *best_self = calloc(r->nfuncs + 1, sizeof(uint64_t));
	uint64_t *best_total = calloc(r->nfuncs + 1, sizeof(uint64_t));
	if (!best_self || !best_total)
		wp_oom();
	for (size_t i = 0; i < r->nfuncs; i++) {
		r->funcs[i].file = NULL; /* an earlier build's, when updating */
		r->funcs[i].line = 0;
	}
	struct line_count *lc, *tmp;
	HASH_ITER(hh, pv->lines, lc, tmp) {
		struct wp_func *fn = &r->funcs[lc->k.func];
		if (!lc->k.file)
			continue;
		if (lc->self > best_self[lc->k.func] ||
		    (!best_self[lc->k.func] && lc->total > best_total[lc->k.func])) {
			fn->file = lc->k.file;
			fn->line = lc->k.line;
		}
		if (lc->self > best_self[lc->k.func])
			best_self[lc->k.func] = lc->self;
		if (lc->total > best_total[lc->k.func])
			best_total[lc->k.func] = lc->total;
	}
	free(best_self);
	free(best_total);
}

/* The model's own counts: every kept stack. */
static void count_funcs(struct wp_resolved *r)
{
	struct wp_tally t;
	if (wp_tally(r, NULL, NULL, &t) != 0)
		wp_oom();
	for (size_t i = 0; i < r->nfuncs; i++) {
		r->funcs[i].self = t.self[i];
		r->funcs[i].total = t.total[i];
	}
	r->total = t.samples;
	wp_tally_free(&t);
}

/* ---- building ---- */

/* A fingerprint of the module map: the symbolizer and the locations are for one map. */
static uint64_t modules_sig(const struct wp_profile *p)
{
	uint64_t h = 1469598103934665603ull;
#define MIX(v) (h = (h ^ (uint64_t)(v)) * 1099511628211ull)
	for (size_t i = 0; i < p->nmodules; i++) {
		const struct wp_module *m = &p->modules[i];
		MIX(m->start);
		MIX(m->end);
		MIX(m->file_offset);
		MIX(m->flags);
		for (uint32_t j = 0; j < m->build_id_len && j < WP_MAX_BUILD_ID; j++)
			MIX(m->build_id[j]);
		for (const char *c = m->path ? m->path : ""; *c; c++)
			MIX((unsigned char)*c);
	}
	MIX(p->nmodules);
#undef MIX
	return h;
}

static void drop_locations(struct wp_resolved *r)
{
	struct priv *pv = r->priv;
	struct loc_key *lk, *tmp;
	HASH_ITER(hh, pv->memo, lk, tmp) {
		HASH_DEL(pv->memo, lk);
		free(lk);
	}
	r->nlocs = 0;
}

static void free_stacks(struct wp_rstack *stacks, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(stacks[i].frames); /* the locs share the allocation */
	free(stacks);
}

/* Forgets the line counts of the last build. */
static void drop_lines(struct wp_resolved *r)
{
	struct priv *pv = r->priv;
	struct line_count *lc, *tmp;
	HASH_ITER(hh, pv->lines, lc, tmp) {
		HASH_DEL(pv->lines, lc);
		free(lc);
	}
	for (size_t i = 0; i < r->nlocs; i++)
		memset(&pv->use[i], 0, sizeof(pv->use[i]));
}

/* Fills in the kept stack `rs` from profile stack `s`: frames (root first, inline chains
 * expanded) and locations (leaf first). A new dimension of a sample is copied from `s` here. */
static void keep_stack(const struct wp_resolved *r, struct wp_rstack *rs, uint32_t proc,
		       const struct wp_stack *s, const uint32_t *locs, uint32_t nlocs)
{
	rs->src = s;
	rs->proc = proc;
	rs->tid = s->tid;
	rs->flags = s->flags;
	rs->count = s->count;
	rs->weight_ns = s->weight_ns;
	rs->leaf0 = rs->nleaves = 0; /* a build with wait leaves says again (wp_waits_split) */
	if (rs->frames)
		return; /* the same stack in the last build: its frames and locations reused */
	uint32_t n = 0;
	for (uint32_t j = 0; j < nlocs; j++)
		n += r->locs[locs[j]].n;
	rs->frames = wp_xmalloc((n ? n : 1) * sizeof(*rs->frames) +
			    (nlocs ? nlocs : 1) * sizeof(uint32_t));
	/* root first: the last location's outermost frame first */
	uint32_t at = 0;
	for (uint32_t j = nlocs; j-- > 0;) {
		const struct wp_loc *l = &r->locs[locs[j]];
		for (uint32_t k = l->n; k-- > 0;)
			rs->frames[at++] = l->frames[k];
	}
	rs->n = n;
	rs->locs = (uint32_t *)(rs->frames + (n ? n : 1));
	memcpy(rs->locs, locs, nlocs * sizeof(*locs));
	rs->nlocs = nlocs;
}

/* The last build, when its frames and locations can be reused (same module map). */
struct last {
	const struct wp_profile *p;
	struct wp_rstack *stacks;
	uint32_t *stack_at;
	size_t nstack_at;
};

/* The kept stack of the last build that `s` repeats (same id, thread and addresses), or NULL. */
static struct wp_rstack *same_as_last(const struct last *last, const struct wp_stack *s)
{
	if (!last || !last->p)
		return NULL;
	const struct wp_stack *o = wp_profile_stack(last->p, s->id);
	if (!o)
		return NULL;
	size_t i = (size_t)(o - last->p->stacks);
	if (i >= last->nstack_at || !last->stack_at[i])
		return NULL;
	struct wp_rstack *rs = &last->stacks[last->stack_at[i] - 1];
	if (!rs->frames || o->tid != s->tid || o->nframes != s->nframes ||
	    memcmp(o->pcs, s->pcs, s->nframes * sizeof(*s->pcs)))
		return NULL;
	return rs;
}

/* The stacks of process `proc` (its threads and stacks appended to the model's); `last` is
 * the last build of the same process, when there was one. */
static void build_proc(struct wp_resolved *r, uint32_t proc, struct last *last)
{
	struct priv *pv = r->priv;
	const struct wp_profile *p = r->procs[proc];
	int out = pv->tree_keep && !pv->tree_keep[proc];
	for (size_t i = 0; i < p->nthreads && !out; i++)
		if (wp_filter_keeps_thread(p, &r->filter, p->threads[i].tid)) {
			r->thread_procs[r->nthreads] = proc;
			r->threads[r->nthreads++] = &p->threads[i];
		}

	uint32_t locs[WP_MAX_FRAMES];
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct wp_stack *s = &p->stacks[i];
		int keep = !out && wp_filter_keeps_stack(p, &r->filter, s);
		struct wp_rstack *rs = &r->stacks[r->nstacks];
		struct wp_rstack *old = keep ? same_as_last(last, s) : NULL;
		const uint32_t *l = locs;
		uint32_t nl = 0;
		if (old) {
			*rs = *old;
			old->frames = NULL; /* moved */
			l = rs->locs;
			nl = rs->nlocs;
		} else {
			for (uint32_t j = 0; j < s->nframes && j < WP_MAX_FRAMES; j++) {
				uint32_t li = wp_model_location(r, proc, s->pcs[j], j == 0);
				if (li != WP_NO_LOC)
					locs[nl++] = li;
			}
		}
		use_locations(r, l, nl, s->count);
		if (!keep)
			continue;
		keep_stack(r, rs, proc, s, l, nl);
		pv->stack_at[pv->stack_base[proc] + i] = (uint32_t)++r->nstacks;
	}
}

/* --process-tree: the processes that match, and those that descend from one. */
static void keep_tree(struct wp_resolved *r)
{
	struct priv *pv = r->priv;
	free(pv->tree_keep);
	pv->tree_keep = NULL;
	if (!r->filter.process || !r->filter.descendants)
		return;
	char *match = calloc(r->nprocs, 1);
	if (!match || !(pv->tree_keep = calloc(r->nprocs, 1)))
		wp_oom();
	for (size_t k = 0; k < r->nprocs; k++)
		match[k] = (char)process_matches(r->procs[k], r->filter.process);
	for (size_t k = 0; k < r->nprocs; k++)
		pv->tree_keep[k] = match[k] || wp_procs_descends(r->ids, r->nprocs, k, match);
	free(match);
}

/* The model over r->procs: their threads and stacks (none at entry: the last build's are
 * `last`'s, of procs[0]), their counts and every function's hottest line. */
static void build(struct wp_resolved *r, struct last *last)
{
	struct priv *pv = r->priv;
	const struct wp_profile *p = r->procs[0];
	size_t nthreads = 0, nstacks = 0;
	for (size_t k = 0; k < r->nprocs; k++) {
		nthreads += r->procs[k]->nthreads;
		nstacks += r->procs[k]->nstacks;
	}
	drop_lines(r);
	free(r->threads);
	free(r->thread_procs);
	r->nthreads = 0;
	r->p = p;
	for (size_t k = 0; k < r->nprocs; k++)
		r->ids[k] = wp_proc_id_of(r->procs[k]);
	r->threads = malloc((nthreads ? nthreads : 1) * sizeof(*r->threads));
	r->thread_procs = malloc((nthreads ? nthreads : 1) * sizeof(*r->thread_procs));
	r->stacks = calloc(nstacks ? nstacks : 1, sizeof(*r->stacks));
	pv->stack_at = calloc(nstacks ? nstacks : 1, sizeof(*pv->stack_at));
	free(pv->stack_base);
	pv->stack_base = calloc(r->nprocs, sizeof(*pv->stack_base));
	if (!r->threads || !r->thread_procs || !r->stacks || !pv->stack_at || !pv->stack_base)
		wp_oom();
	pv->nstack_at = nstacks;
	for (size_t k = 1; k < r->nprocs; k++)
		pv->stack_base[k] = pv->stack_base[k - 1] + r->procs[k - 1]->nstacks;
	keep_tree(r);
	for (size_t k = 0; k < r->nprocs; k++)
		build_proc(r, (uint32_t)k, k == 0 ? last : NULL);
	count_lines(r);
	count_funcs(r);
	pick_lines(r);
	wp_waits_attach(r);
	if (r->filter.wait_leaves) {
		wp_waits_split(r);
		count_funcs(r);
	}
	wp_deadlocks_build(r);
}

/* Whether process k of ps can use an earlier process's symbolizer: the same module map (a
 * fork child of an earlier process, before any exec or dlopen), and no JIT map of either pid
 * (the symbolizer reads /tmp/perf-PID.map by the profile's pid). Returns that process, or k.
 * Symbolizing a library once rather than once per process is what keeps a fork-heavy tree
 * fast. */
static size_t shares_symbolizer(const struct wp_profile *const *ps, const uint64_t *sigs,
				size_t k)
{
	char jit[64];
	snprintf(jit, sizeof(jit), "/tmp/perf-%lld.map", ps[k]->info.pid > 0 ? ps[k]->info.pid : 0);
	if (access(jit, F_OK) == 0)
		return k;
	for (size_t j = 0; j < k; j++) {
		if (sigs[j] != sigs[k])
			continue;
		snprintf(jit, sizeof(jit), "/tmp/perf-%lld.map",
			 ps[j]->info.pid > 0 ? ps[j]->info.pid : 0);
		if (access(jit, F_OK) != 0)
			return j;
	}
	return k;
}

static struct wp_resolved *resolve(const struct wp_profile *const *ps, size_t n,
				   const struct wp_filter *f, struct wp_symcache *ext);

struct wp_resolved *wp_resolve_many(const struct wp_profile *const *ps, size_t n,
				    const struct wp_filter *f)
{
	return resolve(ps, n, f, NULL);
}

struct wp_resolved *wp_resolve_cached(const struct wp_profile *p, const struct wp_filter *f,
				      struct wp_symcache *c)
{
	return resolve(&p, 1, f, c);
}

static struct wp_resolved *resolve(const struct wp_profile *const *ps, size_t n,
				   const struct wp_filter *f, struct wp_symcache *ext)
{
	struct wp_resolved *r = calloc(1, sizeof(*r));
	struct priv *pv = calloc(1, sizeof(*pv));
	if (!r || !pv || !n) {
		free(r);
		free(pv);
		fprintf(stderr, "wallprof: out of memory while symbolizing\n");
		return NULL;
	}
	r->priv = pv;
	if (f)
		r->filter = *f;
	r->procs = calloc(n, sizeof(*r->procs));
	r->ids = calloc(n, sizeof(*r->ids));
	pv->syms = calloc(n, sizeof(*pv->syms));
	if (!r->procs || !r->ids || !pv->syms) {
		fprintf(stderr, "wallprof: out of memory while symbolizing\n");
		wp_resolved_free(r);
		return NULL;
	}
	r->nprocs = n;
	pv->sym_shared = calloc(n, 1);
	uint64_t *sigs = calloc(n, sizeof(*sigs));
	pv->ext_cache = ext;
	if (n > 1 && !ext)
		pv->symcache = wp_symcache_new();
	if (!pv->sym_shared || !sigs || (n > 1 && !pv->symcache)) {
		free(sigs);
		fprintf(stderr, "wallprof: out of memory while symbolizing\n");
		wp_resolved_free(r);
		return NULL;
	}
	for (size_t k = 0; k < n; k++) {
		r->procs[k] = ps[k];
		sigs[k] = modules_sig(ps[k]);
		size_t j = shares_symbolizer(ps, sigs, k);
		if (j < k) {
			pv->syms[k] = pv->syms[j];
			pv->sym_shared[k] = 1;
			continue;
		}
		struct wp_symcache *c = ext ? ext : pv->symcache;
		pv->syms[k] = c ? wp_symbolizer_new_shared(ps[k], c) : wp_symbolizer_new(ps[k]);
		if (!pv->syms[k]) {
			free(sigs);
			fprintf(stderr, "wallprof: out of memory while symbolizing\n");
			wp_resolved_free(r);
			return NULL;
		}
	}
	free(sigs);
	r->sym = pv->syms[0];
	pv->modsig = modules_sig(ps[0]);
	build(r, NULL);
	return r;
}

struct wp_resolved *wp_resolve(const struct wp_profile *p, const struct wp_filter *f)
{
	return wp_resolve_many(&p, 1, f);
}

int wp_resolve_update(struct wp_resolved *r, const struct wp_profile *p)
{
	struct priv *pv = r->priv;
	if (r->nprocs != 1) {
		fprintf(stderr, "wallprof: internal error: updating a model of several processes\n");
		return -1;
	}
	uint64_t sig = modules_sig(p);
	struct last last = { r->p, r->stacks, pv->stack_at, pv->nstack_at };
	size_t nlast = r->nstacks;
	r->stacks = NULL;
	r->nstacks = 0;
	pv->stack_at = NULL;
	pv->nstack_at = 0;
	if (sig != pv->modsig) {
		last.p = NULL; /* its locations are gone */
		free_stacks(last.stacks, nlast);
		last.stacks = NULL;
		nlast = 0;
		drop_lines(r);
		drop_locations(r);
		wp_symbolizer_free(r->sym);
		r->sym = pv->syms[0] = pv->ext_cache ? wp_symbolizer_new_shared(p, pv->ext_cache)
						     : wp_symbolizer_new(p);
		if (!r->sym) {
			fprintf(stderr, "wallprof: out of memory while symbolizing\n");
			free(last.stack_at);
			return -1;
		}
		pv->modsig = sig;
	}
	r->procs[0] = p;
	build(r, &last);
	free_stacks(last.stacks, nlast);
	free(last.stack_at);
	return 0;
}

void wp_resolved_free(struct wp_resolved *r)
{
	if (!r)
		return;
	struct priv *pv = r->priv;
	if (pv) {
		drop_lines(r);
		drop_locations(r);
		free_stacks(r->stacks, r->nstacks);
		wp_waits_drop(r);
		wp_deadlocks_drop(r);
		free(r->threads);
		free(r->thread_procs);
		free(pv->stack_at);
		free(pv->stack_base);
		free(pv->tree_keep);
		free(pv->use);
		for (size_t k = 0; pv->syms && k < r->nprocs; k++)
			if (pv->syms[k] && !(pv->sym_shared && pv->sym_shared[k]))
				wp_symbolizer_free(pv->syms[k]);
		free(pv->syms);
		free(pv->sym_shared);
		wp_symcache_free(pv->symcache); /* after the symbolizers that used it */
		r->sym = NULL; /* syms[0] */
		wp_func_ids_free(&pv->funcs);
		free(pv);
	}
	free(r->funcs);
	free(r->locs);
	free(r->procs);
	free(r->ids);
	free(r);
}

const struct wp_rstack *wp_resolved_stack_of(const struct wp_resolved *r, uint32_t proc,
					     uint32_t stack_id)
{
	const struct priv *pv = r->priv;
	if (proc >= r->nprocs)
		return NULL;
	const struct wp_stack *s = wp_profile_stack(r->procs[proc], stack_id);
	if (!s)
		return NULL;
	size_t i = pv->stack_base[proc] + (size_t)(s - r->procs[proc]->stacks);
	return i < pv->nstack_at && pv->stack_at[i] ? &r->stacks[pv->stack_at[i] - 1] : NULL;
}

const struct wp_rstack *wp_resolved_stack(const struct wp_resolved *r, uint32_t stack_id)
{
	return wp_resolved_stack_of(r, 0, stack_id);
}

const struct wp_thread *wp_resolved_thread(const struct wp_resolved *r, uint32_t tid)
{
	return wp_profile_thread(r->p, tid);
}

const struct wp_thread *wp_resolved_thread_of(const struct wp_resolved *r, uint32_t proc,
					      uint32_t tid)
{
	return proc < r->nprocs ? wp_profile_thread(r->procs[proc], tid) : NULL;
}

long wp_resolved_pid(const struct wp_resolved *r, uint32_t proc)
{
	return proc < r->nprocs ? r->ids[proc].pid : -1;
}

const char *wp_resolved_program(const struct wp_resolved *r, uint32_t proc, char *buf,
				size_t cap)
{
	return proc < r->nprocs ? wp_proc_name(r->procs[proc], buf, cap) : "?";
}
