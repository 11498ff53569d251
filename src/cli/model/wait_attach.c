/* SPDX-License-Identifier: MIT */
/* The model's waits, attached when it is built (build.h): each WAIT record of a process goes
 * to the kept stack it describes, named with that process's symbolizer and THREAD records
 * (waits.h classifies and describes it); a stack's waits are capped at its samples; with
 * --wait-leaves=on each wait in a call gets a stack of its own ending in its leaf. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "uthash_cfg.h"

#include "alloc.h"
#include "build.h"
#include "resolve.h"
#include "rwaits.h"

void wp_waits_drop(struct wp_resolved *r)
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
 * first, as resolve.c's keep_stack lays a kept stack's out; none when the record names none
 * or another thread's stack than the holder's. */
static void holder_frames(struct wp_resolved *r, uint32_t proc, const struct wp_wait *w,
			  struct wp_rwait *out)
{
	const struct wp_stack *hs = w->holder_stack == WP_WAIT_NO_HOLDER_STACK ? NULL :
		wp_profile_stack(r->procs[proc], w->holder_stack);
	if (!hs || hs->tid != out->holder || !hs->nframes)
		return;
	uint32_t locs[WP_MAX_FRAMES], nl = 0, n = 0;
	for (uint32_t j = 0; j < hs->nframes && j < WP_MAX_FRAMES; j++) {
		uint32_t li = wp_model_location(r, proc, hs->pcs[j], j == 0);
		if (li != WP_NO_LOC) {
			locs[nl++] = li;
			n += r->locs[li].n;
		}
	}
	struct wp_rframe *f = wp_xmalloc((n ? n : 1) * sizeof(*f));
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
 * quadratic in a long profile of a program that churns pipes). Built by wp_waits_attach for the
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
		if (!x->v)
			x->v = wp_xmalloc(p->nwaits * sizeof(*x->v));
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

/* The waiter of a stack without a program function nearer its leaf than _start: a thread a
 * library started (liblzma's workers, GLib's pools), a program whose code lives in its
 * libraries (a shared libpython's interpreter): the named library function nearest the leaf
 * outside the C runtime, or NULL. */
static const char *library_waiter(struct wp_resolved *r, const struct wp_rstack *rs)
{
	for (uint32_t j = rs->n; j-- > 0;) {
		const struct wp_func *f = &r->funcs[rs->frames[j].func];
		if (f->kind == WP_KIND_LIBRARY && !wp_runtime_module(f->module))
			return f->name;
	}
	return NULL;
}

/* Kind, object and holder of one WAIT record of kept stack `rs` of process `proc`, into
 * `out`. */
static void describe_wait(struct wp_resolved *r, uint32_t proc, struct data_name **memo,
			  const struct pipe_index *pipes, const struct wp_wait *w,
			  const struct wp_rstack *rs, struct wp_rwait *out)
{
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
	enum wp_wait_kind k = wp_wait_kind_of(w, funcs, nf);
	const char *dn = NULL, *joined = NULL;
	if (k == WP_WAIT_LOCK || k == WP_WAIT_RWLOCK || k == WP_WAIT_CONDITION ||
	    k == WP_WAIT_SEMAPHORE || k == WP_WAIT_FUTEX)
		dn = data_name(wp_model_symbolizer(r, proc), memo, w->a0);
	if (k == WP_WAIT_JOIN) {
		const struct wp_thread *t = w->a2 <= UINT32_MAX ?
			wp_profile_thread(p, (uint32_t)w->a2) : NULL;
		joined = t ? t->name : NULL;
	}
	char buf[WP_WAIT_OBJECT_MAX];
	wp_wait_describe(w, k, dn, waiter, joined, buf, sizeof(buf));
	if (k == WP_WAIT_CONDITION && w->cond_mutex)
		wp_wait_add_mutex(buf, sizeof(buf), data_name(wp_model_symbolizer(r, proc), memo, w->cond_mutex),
				  w->cond_mutex);
	if (k == WP_WAIT_IO)
		pipe_peers(p, pipes, w, buf, sizeof(buf));
	out->kind = k;
	out->waiter = waiter;
	out->object = wp_xstrdup(buf);
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

void wp_waits_attach(struct wp_resolved *r)
{
	wp_waits_drop(r);
	for (size_t i = 0; i < r->nstacks; i++) {
		r->stacks[i].waits = NULL;
		r->stacks[i].nwaits = 0;
	}
	/* per kept stack, how many: then each stack's range of r->waits */
	uint32_t *at = wp_xcalloc(r->nstacks + 1, sizeof(*at));
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
	r->waits = wp_xcalloc(n, sizeof(*r->waits));
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

/* Whether wait `w` gets a leaf of its own: every wait with samples. A wait for a CPU too
 * (issue 20): the share of a running stack that waited for one is waiting by the one
 * definition (rwaits.h's wp_rstack_waiting), and as its stack's self time it showed as time
 * spent in the function it was preempted in, or the call it was woken from (ninja's ppoll:
 * 3.8% of a build's flat profile). Its leaf, [wait cpu runqueue], is under the program's
 * function, as the other waits'. */
static int leaf_wait(const struct wp_rwait *w)
{
	return w->count != 0;
}

/* One stack for the samples of wait `w` of stack `s`: s's frames from the root to the
 * program's function that waited (the C library's waiting code left out), then the frame
 * "[wait KIND OBJECT]" (module "[wait]"). Its locations are those of the frames kept. */
static void wait_leaf(struct wp_resolved *r, const struct wp_rstack *s, const struct wp_rwait *w,
		      struct wp_rstack *out)
{
	uint32_t keep = s->n;
	while (keep > 0 && wp_runtime_module(r->funcs[s->frames[keep - 1].func].module))
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
	out->frames = wp_xmalloc((keep + 1) * sizeof(*out->frames) + (nlocs ? nlocs : 1) * sizeof(uint32_t));
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

/* Every wait that gets a leaf (leaf_wait) of a wall-mode profile becomes a stack of its own,
 * appended after the profile's (wp_resolved_stack still finds the stack it came from, which
 * keeps the samples no such wait names: its running samples, and waiting ones of no known
 * call). */
void wp_waits_split(struct wp_resolved *r)
{
	size_t extra = 0, n = r->nstacks;
	for (size_t i = 0; i < r->nwaits; i++)
		extra += leaf_wait(&r->waits[i]);
	if (!extra)
		return;
	r->stacks = wp_xrealloc(r->stacks, (n + extra) * sizeof(*r->stacks));
	for (size_t i = 0; i < n; i++) {
		struct wp_rstack *s = &r->stacks[i];
		struct wp_rwait *ws = (struct wp_rwait *)s->waits;
		uint32_t stay = 0;
		const char *mode = r->procs[s->proc]->info.mode;
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
			assert(o->count <= s->count); /* a leaf takes at most its stack's samples */
			s->count -= o->count;
			s->weight_ns -= o->weight_ns;
		}
		s->nwaits = stay;
		if (!stay)
			s->waits = NULL;
	}
}

