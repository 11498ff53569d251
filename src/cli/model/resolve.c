#include "resolve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#define MAX_INLINE 16

struct func_key {
	UT_hash_handle hh;
	uint32_t id;
	char key[]; /* name '\0' module */
};

/* Per function: how often each (file, line) was where it executed, to name its hottest line. */
struct line_count {
	UT_hash_handle hh;
	struct {
		const char *file; /* interned by the symbolizer: pointer identity is string identity */
		int line;
		uint32_t func;
	} k;
	uint64_t self, total;
};

struct priv {
	struct func_key *by_key;
	struct line_count *lines;
	size_t capfuncs;
	/* one pc's frames, memoized: profiles repeat the same pcs across many stacks */
	struct pc_memo *memo;
};

struct pc_memo {
	UT_hash_handle hh;
	uint64_t pc;  /* with bit 0 of `leaf` folded into the key below */
	int leaf;
	int n;
	struct wp_rframe frames[MAX_INLINE]; /* innermost first */
};

static enum wp_frame_kind kind_of(const struct wp_profile *p, uint64_t pc, const struct wp_frame *f)
{
	if (!f->known)
		return WP_KIND_UNKNOWN;
	const struct wp_module *m = wp_profile_module_at(p, pc);
	return m && (m->flags & WP_MODULE_MAIN) ? WP_KIND_PROGRAM : WP_KIND_LIBRARY;
}

static uint32_t intern(struct wp_resolved *r, const struct wp_frame *f, enum wp_frame_kind kind)
{
	struct priv *pv = r->priv;
	size_t ln = strlen(f->function), lm = strlen(f->module);
	char buf[1024];
	char *key = ln + lm + 2 <= sizeof(buf) ? buf : malloc(ln + lm + 2);
	if (!key)
		return 0;
	memcpy(key, f->function, ln + 1);
	memcpy(key + ln + 1, f->module, lm + 1);
	struct func_key *fk;
	HASH_FIND(hh, pv->by_key, key, ln + lm + 2, fk);
	if (!fk) {
		fk = malloc(sizeof(*fk) + ln + lm + 2);
		if (!fk) {
			fprintf(stderr, "wallprof: out of memory\n");
			exit(1);
		}
		memcpy(fk->key, key, ln + lm + 2);
		if (r->nfuncs == pv->capfuncs) {
			pv->capfuncs = pv->capfuncs ? pv->capfuncs * 2 : 1024;
			r->funcs = realloc(r->funcs, pv->capfuncs * sizeof(*r->funcs));
			if (!r->funcs) {
				fprintf(stderr, "wallprof: out of memory\n");
				exit(1);
			}
		}
		fk->id = (uint32_t)r->nfuncs++;
		struct wp_func *fn = &r->funcs[fk->id];
		memset(fn, 0, sizeof(*fn));
		fn->name = fk->key;
		fn->module = fk->key + ln + 1;
		fn->kind = kind;
		HASH_ADD(hh, pv->by_key, key, ln + lm + 2, fk);
	}
	if (f->inlined)
		r->funcs[fk->id].inlined = 1;
	if (key != buf)
		free(key);
	return fk->id;
}

static struct pc_memo *frames_of(struct wp_resolved *r, const struct wp_profile *p, uint64_t pc,
				 int leaf)
{
	struct priv *pv = r->priv;
	uint64_t key = pc ^ (leaf ? 0x8000000000000000ull : 0);
	struct pc_memo *m;
	HASH_FIND(hh, pv->memo, &key, sizeof(key), m);
	if (m)
		return m;
	m = calloc(1, sizeof(*m));
	if (!m) {
		fprintf(stderr, "wallprof: out of memory\n");
		exit(1);
	}
	m->pc = key;
	m->leaf = leaf;
	struct wp_frame fr[MAX_INLINE];
	int n = wp_symbolize(r->sym, pc, !leaf, fr, MAX_INLINE);
	if (n < 1)
		n = 0;
	if (n > 0 && wp_frame_is_agent(&fr[0]))
		n = 0;
	for (int i = 0; i < n; i++) {
		m->frames[i].func = intern(r, &fr[i], kind_of(p, pc, &fr[i]));
		m->frames[i].line = fr[i].line;
		m->frames[i].file = fr[i].file;
	}
	m->n = n;
	HASH_ADD(hh, pv->memo, pc, sizeof(m->pc), m);
	return m;
}

static void count_line(struct priv *pv, const struct wp_rframe *f, uint64_t n, int self)
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
			return;
		lc->k = probe.k;
		HASH_ADD(hh, pv->lines, k, sizeof(lc->k), lc);
	}
	lc->total += n;
	if (self)
		lc->self += n;
}

/* Each function's file:line is where most of its own samples were; for a function that is
 * never a leaf, where most of its calls out were made. */
static void pick_lines(struct wp_resolved *r)
{
	struct priv *pv = r->priv;
	uint64_t *best_self = calloc(r->nfuncs + 1, sizeof(uint64_t));
	uint64_t *best_total = calloc(r->nfuncs + 1, sizeof(uint64_t));
	if (!best_self || !best_total) {
		free(best_self);
		free(best_total);
		return;
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

struct wp_resolved *wp_resolve(const struct wp_profile *p)
{
	struct wp_resolved *r = calloc(1, sizeof(*r));
	struct priv *pv = calloc(1, sizeof(*pv));
	if (!r || !pv)
		goto oom;
	r->priv = pv;
	r->sym = wp_symbolizer_new(p);
	r->stacks = calloc(p->nstacks ? p->nstacks : 1, sizeof(*r->stacks));
	if (!r->sym || !r->stacks)
		goto oom;
	r->nstacks = p->nstacks;
	struct wp_rframe tmp[WP_MAX_FRAMES * 4];
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct wp_stack *s = &p->stacks[i];
		struct wp_rstack *rs = &r->stacks[i];
		rs->src = s;
		rs->tid = s->tid;
		rs->flags = s->flags;
		rs->count = s->count;
		rs->weight_ns = s->weight_ns;
		/* leaf first in the file; build leaf-first here, reverse below */
		uint32_t n = 0;
		for (uint32_t j = 0; j < s->nframes; j++) {
			struct pc_memo *m = frames_of(r, p, s->pcs[j], j == 0);
			for (int k = 0; k < m->n && n < sizeof(tmp) / sizeof(tmp[0]); k++)
				tmp[n++] = m->frames[k];
		}
		rs->frames = malloc((n ? n : 1) * sizeof(*rs->frames));
		if (!rs->frames)
			goto oom;
		for (uint32_t j = 0; j < n; j++)
			rs->frames[j] = tmp[n - 1 - j];
		rs->n = n;
		for (uint32_t j = 0; j < n; j++)
			count_line(pv, &rs->frames[j], s->count, j == n - 1);
	}
	wp_resolved_count(r, NULL, NULL);
	pick_lines(r);
	return r;
oom:
	fprintf(stderr, "wallprof: out of memory while symbolizing\n");
	wp_resolved_free(r);
	return NULL;
}

void wp_resolved_count(struct wp_resolved *r, int (*keep)(const struct wp_rstack *, void *),
		       void *arg)
{
	/* A recursive function appears several times in one stack but must be counted once per
	 * sample in `total`: remember the last stack that counted it. */
	size_t *seen = calloc(r->nfuncs + 1, sizeof(size_t));
	if (!seen)
		return;
	for (size_t i = 0; i < r->nfuncs; i++)
		r->funcs[i].self = r->funcs[i].total = 0;
	r->total = 0;
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (keep && !keep(s, arg))
			continue;
		r->total += s->count;
		for (uint32_t j = 0; j < s->n; j++) {
			uint32_t f = s->frames[j].func;
			if (seen[f] != i + 1) {
				seen[f] = i + 1;
				r->funcs[f].total += s->count;
			}
		}
		if (s->n)
			r->funcs[s->frames[s->n - 1].func].self += s->count;
	}
	free(seen);
}

void wp_resolved_free(struct wp_resolved *r)
{
	if (!r)
		return;
	struct priv *pv = r->priv;
	if (pv) {
		struct func_key *fk, *t1;
		HASH_ITER(hh, pv->by_key, fk, t1) {
			HASH_DEL(pv->by_key, fk);
			free(fk);
		}
		struct line_count *lc, *t2;
		HASH_ITER(hh, pv->lines, lc, t2) {
			HASH_DEL(pv->lines, lc);
			free(lc);
		}
		struct pc_memo *m, *t3;
		HASH_ITER(hh, pv->memo, m, t3) {
			HASH_DEL(pv->memo, m);
			free(m);
		}
		free(pv);
	}
	for (size_t i = 0; i < r->nstacks; i++)
		free(r->stacks[i].frames);
	free(r->stacks);
	free(r->funcs);
	if (r->sym)
		wp_symbolizer_free(r->sym);
	free(r);
}

int wp_func_by_self(const void *a, const void *b, void *arg)
{
	const struct wp_func *f = arg, *x = &f[*(const uint32_t *)a], *y = &f[*(const uint32_t *)b];
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

int wp_thread_matches(const struct wp_profile *p, uint32_t tid, const char *sel)
{
	if (!sel)
		return 1;
	char *end;
	unsigned long v = strtoul(sel, &end, 10);
	if (*sel && !*end)
		return v == tid;
	const struct wp_thread *t = wp_profile_thread(p, tid);
	return t && t->name && !strcmp(t->name, sel);
}
