#include "resolve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uthash.h>

#include "alloc.h"
#include "funcids.h"
#include "tally.h"

#define NO_LOC UINT32_MAX /* an address of the agent's own code: in no stack */

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
	uint32_t idx; /* in r->locs, or NO_LOC */
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

static void oom(void)
{
	fprintf(stderr, "wallprof: out of memory\n");
	exit(1);
}

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

/* The program's name in a command line: its first word without the directory. */
static const char *program_name(const char *cmd, char *buf, size_t cap)
{
	if (!cmd || !*cmd)
		return "?";
	size_t n = strcspn(cmd, " ");
	const char *w = cmd;
	for (size_t i = 0; i < n; i++)
		if (cmd[i] == '/')
			w = cmd + i + 1;
	size_t l = (size_t)(cmd + n - w);
	if (l >= cap)
		l = cap - 1;
	memcpy(buf, w, l);
	buf[l] = 0;
	return buf;
}

/* A pid ("4242") or a program's name, against p's META. */
static int process_matches(const struct wp_profile *p, const char *sel)
{
	char *end, buf[256];
	unsigned long v = strtoul(sel, &end, 10);
	if (*sel && !*end)
		return wp_profile_meta_ll(p, "pid", -1) == (long long)v;
	return !strcmp(program_name(wp_profile_meta(p, "command"), buf, sizeof(buf)), sel);
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
		oom();
	if (added) {
		if (wp_grow(&r->funcs, &pv->capfuncs, r->nfuncs + 1, sizeof(*r->funcs)))
			oom();
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

/* The location of `pc` in its role, symbolized on first use; NO_LOC for the agent's own code
 * (the one place where it is left out). */
static uint32_t location(struct wp_resolved *r, uint32_t proc, uint64_t pc, int leaf)
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
	lk = calloc(1, sizeof(*lk));
	if (!lk)
		oom();
	lk->k = probe.k;
	HASH_ADD(hh, pv->memo, k, sizeof(lk->k), lk);

	struct wp_frame fr[WP_MAX_INLINE];
	int n = wp_symbolize(pv->syms[proc], pc, !leaf, fr, WP_MAX_INLINE);
	if (n < 1 || wp_frame_is_agent(&fr[0])) {
		lk->idx = NO_LOC;
		return NO_LOC;
	}
	if (r->nlocs == pv->caplocs) {
		pv->caplocs = pv->caplocs ? pv->caplocs * 2 : 1024;
		r->locs = realloc(r->locs, pv->caplocs * sizeof(*r->locs));
		pv->use = realloc(pv->use, pv->caplocs * sizeof(*pv->use));
		if (!r->locs || !pv->use)
			oom();
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
		lc = calloc(1, sizeof(*lc));
		if (!lc)
			oom();
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
		oom();
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
		oom();
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
	if (rs->frames)
		return; /* the same stack in the last build: its frames and locations reused */
	uint32_t n = 0;
	for (uint32_t j = 0; j < nlocs; j++)
		n += r->locs[locs[j]].n;
	rs->frames = malloc((n ? n : 1) * sizeof(*rs->frames) +
			    (nlocs ? nlocs : 1) * sizeof(uint32_t));
	if (!rs->frames)
		oom();
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
				uint32_t li = location(r, proc, s->pcs[j], j == 0);
				if (li != NO_LOC)
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
		oom();
	for (size_t k = 0; k < r->nprocs; k++)
		match[k] = (char)process_matches(r->procs[k], r->filter.process);
	for (size_t k = 0; k < r->nprocs; k++)
		pv->tree_keep[k] = match[k] || wp_procs_descends(r->ids, r->nprocs, k, match);
	free(match);
}

static void drop_waits(struct wp_resolved *r)
{
	for (size_t i = 0; i < r->nwaits; i++) {
		free((char *)r->waits[i].object);
		free((void *)r->waits[i].holder_frames);
	}
	free(r->waits);
	r->waits = NULL;
	r->nwaits = 0;
}

/* The symbol naming data address `a`, looked up once per address (a linear scan of symbol
 * tables each time would cost a profile with many waits). */
struct data_name {
	UT_hash_handle hh;
	uint64_t addr;
	const char *name;
};

static const char *data_name(struct wp_symbolizer *sym, struct data_name **memo, uint64_t a)
{
	struct data_name *d;
	HASH_FIND(hh, *memo, &a, sizeof(a), d);
	if (d)
		return d->name;
	const char *name = wp_symbolize_data(sym, a);
	if ((d = malloc(sizeof(*d)))) {
		d->addr = a;
		d->name = name;
		HASH_ADD(hh, *memo, addr, sizeof(d->addr), d);
	}
	return name;
}

/* The frames of wait `w`'s holder stack (its STACK record, kept by the filter or not), root
 * first, as keep_stack lays a kept stack's out; none when the record names none or another
 * thread's stack than the holder's. */
static void holder_frames(struct wp_resolved *r, uint32_t proc, const struct wp_wait *w,
			  struct wp_rwait *out)
{
	const struct wp_stack *hs = w->holder_stack == WP_WAIT_NO_HOLDER_STACK ? NULL :
		wp_profile_stack(r->procs[proc], w->holder_stack);
	if (!hs || hs->tid != out->holder || !hs->nframes)
		return;
	uint32_t locs[WP_MAX_FRAMES], nl = 0, n = 0;
	for (uint32_t j = 0; j < hs->nframes && j < WP_MAX_FRAMES; j++) {
		uint32_t li = location(r, proc, hs->pcs[j], j == 0);
		if (li != NO_LOC) {
			locs[nl++] = li;
			n += r->locs[li].n;
		}
	}
	struct wp_rframe *f = malloc((n ? n : 1) * sizeof(*f));
	if (!f)
		oom();
	uint32_t at = 0;
	for (uint32_t j = nl; j-- > 0;) {
		const struct wp_loc *l = &r->locs[locs[j]];
		for (uint32_t k = l->n; k-- > 0;)
			f[at++] = l->frames[k];
	}
	out->holder_frames = f;
	out->holder_n = n;
}

/* The pipe ends the WAIT records of one process wait on, sorted by inode: the other end's
 * threads of a pipe end are looked up in it (a scan of every record for each would be
 * quadratic in a long profile of a program that churns pipes). Built by attach_waits for the
 * process it is attaching, and passed down to pipe_peers: a local of that build, not global
 * state (two models built one after the other, or interleaved, keep their own). */
struct pipe_end {
	uint64_t ino;
	int end; /* 1 read, 2 write */
	uint32_t tid;
};
struct pipe_index {
	struct pipe_end *v;
	size_t n;
};

static int pipe_end_cmp(const void *a, const void *b)
{
	const struct pipe_end *x = a, *y = b;
	return x->ino < y->ino ? -1 : x->ino > y->ino ? 1 : x->end - y->end;
}

static void index_pipe_ends(const struct wp_profile *p, struct pipe_index *x)
{
	free(x->v);
	x->v = NULL;
	x->n = 0;
	for (size_t i = 0; i < p->nwaits; i++) {
		uint64_t ino;
		int end = wp_wait_pipe_end(&p->waits[i], &ino);
		const struct wp_stack *s = end ? wp_profile_stack(p, p->waits[i].stack_id) : NULL;
		if (!s)
			continue;
		if (!x->v && !(x->v = malloc(p->nwaits * sizeof(*x->v))))
			oom();
		x->v[x->n++] = (struct pipe_end){ ino, end, s->tid };
	}
	if (x->n)
		qsort(x->v, x->n, sizeof(*x->v), pipe_end_cmp);
}

/* A pipe end's other end: the threads of this process seen blocked on it at any time of the
 * run (a pipe's reader blocks only when it is empty, its writer only when it is full, so
 * both are never blocked at the same moment), at most 3 named. */
static void pipe_peers(const struct wp_profile *p, const struct pipe_index *x,
		       const struct wp_wait *w, char *buf, size_t cap)
{
	const struct pipe_end *pipe_ends = x->v;
	size_t npipe_ends = x->n;
	uint64_t ino;
	int end = wp_wait_pipe_end(w, &ino);
	const struct wp_stack *me = end ? wp_profile_stack(p, w->stack_id) : NULL;
	if (!me || !npipe_ends)
		return;
	struct pipe_end key = { ino, 3 - end, 0 };
	size_t lo = 0, hi = npipe_ends; /* the first >= key */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (pipe_end_cmp(&pipe_ends[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	char who[256] = "";
	uint32_t named[3];
	int n = 0;
	for (size_t i = lo; i < npipe_ends && n < 3 && pipe_ends[i].ino == ino &&
			    pipe_ends[i].end == 3 - end; i++) {
		uint32_t tid = pipe_ends[i].tid;
		int dup = tid == me->tid;
		for (int j = 0; j < n; j++)
			dup |= named[j] == tid;
		if (dup)
			continue;
		const struct wp_thread *t = wp_profile_thread(p, tid);
		size_t at = strlen(who);
		snprintf(who + at, sizeof(who) - at, "%s%s tid=%u", n ? ", " : "",
			 t && t->name && *t->name ? t->name : "?", (unsigned)tid);
		named[n++] = tid;
	}
	if (n)
		wp_wait_pipe_used_by(buf, cap, who);
}

/* Whether `file` is a system header: a frame inlined from it (std::mutex::lock's
 * __gthread_mutex_lock, condition_variable::wait's template) is the library's code compiled
 * into the program, not the program's function that waits. */
static int system_header(const char *file)
{
	return file && !strncmp(file, "/usr/include/", 13);
}

/* Whether module `m` is the C runtime whose waiting code every wait goes through (the C
 * library, the loader, libstdc++'s condition_variable and thread). */
static int runtime_module(const char *m)
{
	static const char *const pre[] = { "libc.so", "libc-", "libpthread", "ld-linux",
					   "libstdc++", "libgcc_s" };
	for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++)
		if (m && !strncmp(m, pre[i], strlen(pre[i])))
			return 1;
	return 0;
}

/* The waiter of a stack without a program function nearer its leaf than _start: a thread a
 * library started (liblzma's workers, GLib's pools), a program whose code lives in its
 * libraries (a shared libpython's interpreter): the named library function nearest the leaf
 * outside the C runtime, or NULL. */
static const char *library_waiter(struct wp_resolved *r, const struct wp_rstack *rs)
{
	for (uint32_t j = rs->n; j-- > 0;) {
		const struct wp_func *f = &r->funcs[rs->frames[j].func];
		if (f->kind == WP_KIND_LIBRARY && !runtime_module(f->module))
			return f->name;
	}
	return NULL;
}

/* Kind, object and holder of one WAIT record of kept stack `rs` of process `proc`, into
 * `out`. */
static void describe_wait(struct wp_resolved *r, uint32_t proc, struct data_name **memo,
			  const struct pipe_index *pipes, const struct wp_wait *w, const struct wp_rstack *rs, struct wp_rwait *out)
{
	struct priv *pv = r->priv;
	const struct wp_profile *p = r->procs[proc];
	const char *funcs[64], *waiter = NULL;
	size_t nf = 0;
	for (uint32_t j = rs->n; j-- > 0;) {
		const struct wp_func *f = &r->funcs[rs->frames[j].func];
		if (nf < 64)
			funcs[nf++] = f->name;
		if (!waiter && f->kind == WP_KIND_PROGRAM && strcmp(f->name, "_start") != 0 &&
		    !system_header(rs->frames[j].file))
			waiter = f->name;
	}
	if (!waiter)
		waiter = library_waiter(r, rs);
	enum wp_wait_kind k = wp_wait_classify(w->nr, funcs, nf);
	const char *dn = NULL, *joined = NULL;
	if (k == WP_WAIT_LOCK || k == WP_WAIT_RWLOCK || k == WP_WAIT_CONDITION ||
	    k == WP_WAIT_SEMAPHORE || k == WP_WAIT_FUTEX)
		dn = data_name(pv->syms[proc], memo, w->a0);
	if (k == WP_WAIT_JOIN) {
		const struct wp_thread *t = w->a2 <= UINT32_MAX ?
			wp_profile_thread(p, (uint32_t)w->a2) : NULL;
		joined = t ? t->name : NULL;
	}
	char buf[WP_WAIT_OBJECT_MAX];
	wp_wait_describe(w, k, dn, waiter, joined, buf, sizeof(buf));
	if (k == WP_WAIT_CONDITION && w->cond_mutex)
		wp_wait_add_mutex(buf, sizeof(buf), data_name(pv->syms[proc], memo, w->cond_mutex),
				  w->cond_mutex);
	if (k == WP_WAIT_IO)
		pipe_peers(p, pipes, w, buf, sizeof(buf));
	out->kind = k;
	out->waiter = waiter;
	out->object = strdup(buf);
	if (!out->object)
		oom();
	out->holder = 0;
	out->holder_frames = NULL;
	out->holder_n = 0;
	if ((k == WP_WAIT_LOCK || k == WP_WAIT_RWLOCK) && w->aux && w->aux <= UINT32_MAX &&
	    wp_profile_thread(p, (uint32_t)w->aux)) {
		out->holder = (uint32_t)w->aux;
		holder_frames(r, proc, w, out);
	}
	out->count = w->count;
	out->weight_ns = w->weight_ns;
}

/* Whether WAIT record `w` describes samples of kept stack `rs`: a waiting stack's, or the
 * share of a runnable thread's samples that waited for a CPU, which any stack may have. */
static int waits_on(const struct wp_rstack *rs, const struct wp_wait *w)
{
	return (rs->flags & WP_STACK_WAITING) || w->nr == WP_WAIT_NR_CPU;
}

/* A stack's waits take no more than its samples: the agent counts a WAIT record's samples
 * apart from its stack's (a record cut short by a checkpoint can say more), so the waits
 * after those that fill the stack are capped, here, once for every report. */
static void cap_waits(struct wp_resolved *r)
{
	for (size_t i = 0; i < r->nstacks; i++) {
		struct wp_rstack *s = &r->stacks[i];
		struct wp_rwait *ws = (struct wp_rwait *)s->waits;
		uint64_t rest = s->count;
		for (uint32_t k = 0; k < s->nwaits; k++) {
			ws[k].count = ws[k].count < rest ? ws[k].count : rest;
			rest -= ws[k].count;
		}
	}
}

/* Attaches the WAIT records of every process to the kept stacks they describe. */
static void attach_waits(struct wp_resolved *r)
{
	drop_waits(r);
	for (size_t i = 0; i < r->nstacks; i++) {
		r->stacks[i].waits = NULL;
		r->stacks[i].nwaits = 0;
	}
	/* per kept stack, how many: then each stack's range of r->waits */
	uint32_t *at = calloc(r->nstacks + 1, sizeof(*at));
	if (!at)
		oom();
	size_t n = 0;
	for (uint32_t k = 0; k < r->nprocs; k++)
		for (size_t i = 0; i < r->procs[k]->nwaits; i++) {
			const struct wp_rstack *rs =
				wp_resolved_stack_of(r, k, r->procs[k]->waits[i].stack_id);
			if (rs && waits_on(rs, &r->procs[k]->waits[i])) {
				at[rs - r->stacks + 1]++;
				n++;
			}
		}
	if (!n) {
		free(at);
		return;
	}
	for (size_t i = 0; i < r->nstacks; i++)
		at[i + 1] += at[i];
	r->waits = calloc(n, sizeof(*r->waits));
	if (!r->waits)
		oom();
	struct pipe_index pipes = { NULL, 0 };
	for (uint32_t k = 0; k < r->nprocs; k++) {
		/* addresses are per process: a memo per process */
		struct data_name *memo = NULL, *d, *tmp;
		const struct wp_profile *p = r->procs[k];
		index_pipe_ends(p, &pipes);
		for (size_t i = 0; i < p->nwaits; i++) {
			const struct wp_rstack *rs = wp_resolved_stack_of(r, k, p->waits[i].stack_id);
			if (!rs || !waits_on(rs, &p->waits[i]))
				continue;
			size_t si = (size_t)(rs - r->stacks);
			struct wp_rstack *ms = &r->stacks[si];
			describe_wait(r, k, &memo, &pipes, &p->waits[i], rs,
				      &r->waits[at[si] + ms->nwaits]);
			ms->waits = &r->waits[at[si]];
			ms->nwaits++;
		}
		HASH_ITER(hh, memo, d, tmp) {
			HASH_DEL(memo, d);
			free(d);
		}
	}
	free(pipes.v);
	r->nwaits = n;
	free(at);
	cap_waits(r);
}

/* Whether function `f` is the C library's waiting code (libc, libpthread, the loader, the
 * vDSO, libstdc++'s condition variables and threads): what a wait leaf replaces. */
static int wait_plumbing(const struct wp_func *f)
{
	static const char *const libs[] = { "libc.so", "libc-", "libpthread", "ld-linux", "[vdso]",
					    "libstdc++" };
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (!strncmp(f->module, libs[i], strlen(libs[i])))
			return 1;
	return 0;
}

/* Whether wait `w` gets a leaf of its own: a wait in a call or in state D; not a wait for a
 * CPU, whose stack is where the thread runs and stays its own. */
static int leaf_wait(const struct wp_rwait *w)
{
	return w->kind != WP_WAIT_CPU && w->count;
}

/* One stack for the samples of wait `w` of stack `s`: s's frames from the root to the
 * program's function that waited (the C library's waiting code left out), then the frame
 * "[wait KIND OBJECT]" (module "[wait]"). Its locations are those of the frames kept. */
static void wait_leaf(struct wp_resolved *r, const struct wp_rstack *s, const struct wp_rwait *w,
		      struct wp_rstack *out)
{
	uint32_t keep = s->n;
	while (keep > 0 && wait_plumbing(&r->funcs[s->frames[keep - 1].func]))
		keep--;
	uint32_t nlocs = 0, covered = 0; /* the root-side locations whose frames are all kept */
	for (uint32_t j = s->nlocs; j-- > 0;) {
		covered += r->locs[s->locs[j]].n;
		if (covered > keep)
			break;
		nlocs++;
	}
	char name[WP_WAIT_LEAF_MAX];
	wp_wait_frame_name(w, name, sizeof(name));
	uint32_t fid = wp_resolved_func(r, name, "[wait]");
	*out = *s;
	out->frames = malloc((keep + 1) * sizeof(*out->frames) + (nlocs ? nlocs : 1) * sizeof(uint32_t));
	if (!out->frames)
		oom();
	memcpy(out->frames, s->frames, keep * sizeof(*out->frames));
	out->frames[keep] = (struct wp_rframe){ .func = fid, .line = 0, .file = NULL };
	out->n = keep + 1;
	out->locs = (uint32_t *)(out->frames + keep + 1);
	memcpy(out->locs, s->locs + (s->nlocs - nlocs), nlocs * sizeof(*out->locs));
	out->nlocs = nlocs;
	out->count = w->count < s->count ? w->count : s->count;
	out->weight_ns = w->weight_ns < s->weight_ns ? w->weight_ns : s->weight_ns;
	out->waits = w;
	out->nwaits = 1;
	out->leaf0 = out->nleaves = 0;
}

/* The filter's wait_leaves: every wait that gets a leaf (leaf_wait) of a wall-mode profile
 * becomes a stack of its own, appended after the profile's (wp_resolved_stack still finds the stack it came from,
 * which keeps the samples no such wait names: the rest, and its waits for a CPU). */
static void split_waits(struct wp_resolved *r)
{
	size_t extra = 0, n = r->nstacks;
	for (size_t i = 0; i < r->nwaits; i++)
		extra += leaf_wait(&r->waits[i]);
	if (!extra)
		return;
	struct wp_rstack *st = realloc(r->stacks, (n + extra) * sizeof(*st));
	if (!st)
		oom();
	r->stacks = st;
	for (size_t i = 0; i < n; i++) {
		struct wp_rstack *s = &r->stacks[i];
		struct wp_rwait *ws = (struct wp_rwait *)s->waits;
		uint32_t stay = 0;
		const char *mode = wp_profile_meta(r->procs[s->proc], "mode");
		if (mode && !strcmp(mode, "cpu"))
			continue; /* a cpu profile's samples are CPU time, whatever call they were in */
		/* the waits that stay with s first, those that leave after */
		for (uint32_t k = 0; k < s->nwaits; k++)
			if (!leaf_wait(&ws[k])) {
				struct wp_rwait tmp = ws[stay];
				ws[stay++] = ws[k];
				ws[k] = tmp;
			}
		s->leaf0 = (uint32_t)r->nstacks;
		s->nleaves = s->nwaits - stay;
		for (uint32_t k = stay; k < s->nwaits; k++) {
			struct wp_rstack *o = &r->stacks[r->nstacks++];
			wait_leaf(r, s, &ws[k], o);
			s->count -= o->count;
			s->weight_ns -= o->weight_ns;
		}
		s->nwaits = stay;
		if (!stay)
			s->waits = NULL;
	}
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
		oom();
	pv->nstack_at = nstacks;
	for (size_t k = 1; k < r->nprocs; k++)
		pv->stack_base[k] = pv->stack_base[k - 1] + r->procs[k - 1]->nstacks;
	keep_tree(r);
	for (size_t k = 0; k < r->nprocs; k++)
		build_proc(r, (uint32_t)k, k == 0 ? last : NULL);
	count_lines(r);
	count_funcs(r);
	pick_lines(r);
	attach_waits(r);
	if (r->filter.wait_leaves) {
		split_waits(r);
		count_funcs(r);
	}
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
	snprintf(jit, sizeof(jit), "/tmp/perf-%lld.map", wp_profile_meta_ll(ps[k], "pid", 0));
	if (access(jit, F_OK) == 0)
		return k;
	for (size_t j = 0; j < k; j++) {
		if (sigs[j] != sigs[k])
			continue;
		snprintf(jit, sizeof(jit), "/tmp/perf-%lld.map", wp_profile_meta_ll(ps[j], "pid", 0));
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
		drop_waits(r);
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
	return proc < r->nprocs ? program_name(wp_profile_meta(r->procs[proc], "command"), buf, cap)
				: "?";
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
