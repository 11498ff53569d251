/* SPDX-License-Identifier: MIT */
/* Unit tests of the model (src/cli/model/resolve.c): a profile of this program
 * (model_fixture.h) symbolized for real, then checked stack by stack: frames root first,
 * locations leaf first and shared, one address in two roles, the agent's frames left out,
 * counts (a recursive function once per sample), the filter applied once (threads, stacks,
 * counts; function ids and lines unchanged), the ranking, tallies, inline chains expanded,
 * and the live view's incremental update (function ids kept, locations reused, rebuilt when
 * the module map changes). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli/model/resolve.h"
#include "cli/model/rwaits.h" /* the model's waits */
#include "model_fixture.h"

static const char *fname(const struct wp_resolved *r, uint32_t id)
{
	return id < r->nfuncs ? r->funcs[id].name : "(bad id)";
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);
	return s && a >= b && !strcmp(s + a - b, suffix);
}

/* The function named `name`, or UINT32_MAX. */
static uint32_t func_id(const struct wp_resolved *r, const char *name)
{
	for (size_t i = 0; i < r->nfuncs; i++)
		if (!strcmp(r->funcs[i].name, name))
			return (uint32_t)i;
	return UINT32_MAX;
}

/* Whether stack s reads `names` root first (n names). */
static int reads(const struct wp_resolved *r, const struct wp_rstack *s, const char *const *names,
		 uint32_t n)
{
	if (s->n != n) {
		fprintf(stderr, "  stack %u has %u frames, not %u\n", s->src->id, s->n, n);
		return 0;
	}
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(fname(r, s->frames[i].func), names[i])) {
			fprintf(stderr, "  stack %u frame %u is %s, not %s\n", s->src->id, i,
				fname(r, s->frames[i].func), names[i]);
			return 0;
		}
	return 1;
}

/* The profile built in `b` (ended and freed here), parsed; NULL, with a failed check, when
 * it does not parse. */
static struct wp_profile *parse_built(struct buf *b)
{
	struct wp_profile *p = NULL;
	char err[256];
	rec_end_marker(b);
	CHECK(wp_profile_parse(b->d, b->len, &p, err, sizeof(err)) == 0, "%s", err);
	buf_free(b);
	return p;
}

static void test_stacks(void)
{
	struct wp_profile *p = fx_profile("");
	struct wp_resolved *r = wp_resolve(p, NULL);
	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_U(r->nstacks, 6);
	CHECK_EQ_U(r->nthreads, 3);
	CHECK(r->p == p);
	for (size_t i = 0; i < r->nstacks; i++)
		CHECK(r->stacks[i].src == &p->stacks[i], "stacks in the profile's order");

	const struct wp_rstack *s1 = &r->stacks[0], *s2 = &r->stacks[1], *s3 = &r->stacks[2];
	const struct wp_rstack *s4 = &r->stacks[3], *s5 = &r->stacks[4], *s6 = &r->stacks[5];
	CHECK(reads(r, s1, (const char *const[]){ "t_root", "t_mid", "t_leaf" }, 3));
	CHECK_EQ_U(s1->count, 5);
	CHECK_EQ_U(s1->weight_ns, 50000000);
	CHECK_EQ_U(s1->tid, 10);
	/* the agent's leaf frame is gone: t_mid is the leaf */
	CHECK(reads(r, s2, (const char *const[]){ "t_root", "t_mid" }, 2));
	CHECK_EQ_U(s2->flags, WP_STACK_WAITING);
	CHECK_EQ_U(s3->n, 0);
	CHECK_EQ_U(s3->nlocs, 0);
	CHECK(reads(r, s4, (const char *const[]){ "t_root", "t_mid", "t_mid" }, 3));
	CHECK(reads(r, s5, (const char *const[]){ "t_root", "t_leaf", "t_leaf" }, 3));
	CHECK(reads(r, s6, (const char *const[]){ "(unknown)" }, 1));
	for (size_t i = 0; i < r->nfuncs; i++)
		CHECK(strcmp(r->funcs[i].module, "libwallprof.so"), "no agent function: %s",
		      r->funcs[i].name);

	/* locations: leaf first, one per address and role, shared between stacks */
	CHECK_EQ_U(s1->nlocs, 3);
	CHECK_EQ_U(s2->nlocs, 2);
	if (s1->nlocs == 3 && s2->nlocs == 2) {
		const struct wp_loc *leaf = &r->locs[s1->locs[0]];
		CHECK_EQ_U(leaf->pc, fx_addr(t_leaf));
		CHECK_INT(leaf->leaf, 1);
		CHECK_EQ_U(leaf->n, 1);
		CHECK_STR(fname(r, leaf->frames[0].func), "t_leaf");
		CHECK(leaf->module >= 0 && p->modules[leaf->module].flags & WP_MODULE_MAIN);
		CHECK_EQ_U(r->locs[s1->locs[1]].pc, fx_ret(t_mid));
		CHECK_INT(r->locs[s1->locs[1]].leaf, 0);
		CHECK_EQ_U(s2->locs[0], s1->locs[1]); /* t_mid's return address, shared */
		CHECK_EQ_U(s2->locs[1], s1->locs[2]);
	}
	if (s4->nlocs == 3) {
		/* one pc, two roles, two locations, one function */
		const struct wp_loc *a = &r->locs[s4->locs[0]], *b = &r->locs[s4->locs[1]];
		CHECK_EQ_U(a->pc, b->pc);
		CHECK(s4->locs[0] != s4->locs[1]);
		CHECK(a->leaf && !b->leaf);
		CHECK_EQ_U(a->frames[0].func, b->frames[0].func);
	}
	const struct wp_loc *unk = s6->nlocs ? &r->locs[s6->locs[0]] : NULL;
	CHECK(unk && unk->module == -1);
	for (size_t i = 0; i < r->nlocs; i++)
		CHECK(r->locs[i].module < 0 ||
		      !ends_with(p->modules[r->locs[i].module].path, "libwallprof.so"),
		      "no location in the agent");

	/* counts: every kept sample; a recursive function once per sample in total */
	CHECK_EQ_U(r->total, 15);
	uint32_t root = func_id(r, "t_root"), mid = func_id(r, "t_mid"), leaf = func_id(r, "t_leaf");
	CHECK(root != UINT32_MAX && mid != UINT32_MAX && leaf != UINT32_MAX);
	if (root != UINT32_MAX && mid != UINT32_MAX && leaf != UINT32_MAX) {
		CHECK_EQ_U(r->funcs[root].total, 13);
		CHECK_EQ_U(r->funcs[root].self, 0);
		CHECK_EQ_U(r->funcs[mid].total, 12);
		CHECK_EQ_U(r->funcs[mid].self, 7);
		CHECK_EQ_U(r->funcs[leaf].total, 6);
		CHECK_EQ_U(r->funcs[leaf].self, 6);
		CHECK_INT(r->funcs[leaf].kind, WP_KIND_PROGRAM);
		CHECK_STR(r->funcs[leaf].module, strrchr(fx_exe, '/') + 1);
		CHECK(ends_with(r->funcs[leaf].file, "model_fixture.h"), "%s",
		      r->funcs[leaf].file ? r->funcs[leaf].file : "(no file)");
		CHECK(r->funcs[leaf].line > 0);
	}
	uint32_t unknown = func_id(r, "(unknown)");
	CHECK(unknown != UINT32_MAX && r->funcs[unknown].kind == WP_KIND_UNKNOWN);

	/* lookups */
	CHECK(wp_resolved_stack(r, 3) == s3);
	CHECK(wp_resolved_stack(r, 99) == NULL);
	CHECK_STR(wp_resolved_thread(r, 11)->name, "worker");
	CHECK(wp_resolved_thread(r, 77) == NULL);

	/* ranking: one order for every report */
	size_t n;
	uint32_t *ids = wp_funcs_ranked(r, NULL, WP_RANK_SELF, &n);
	CHECK_EQ_U(n, 2);
	if (ids && n == 2) {
		CHECK_STR(fname(r, ids[0]), "t_mid");
		CHECK_STR(fname(r, ids[1]), "t_leaf");
	}
	free(ids);
	ids = wp_funcs_ranked(r, NULL, WP_RANK_ANY_SELF, &n);
	CHECK_EQ_U(n, 3);
	if (ids && n == 3)
		CHECK_STR(fname(r, ids[2]), "t_root");
	free(ids);
	ids = wp_funcs_ranked(r, NULL, WP_RANK_TOTAL, &n);
	CHECK_EQ_U(n, 3);
	if (ids && n == 3) {
		CHECK_STR(fname(r, ids[0]), "t_root");
		CHECK_STR(fname(r, ids[1]), "t_mid");
		CHECK_STR(fname(r, ids[2]), "t_leaf");
	}
	free(ids);

	/* pseudo-functions of a view */
	size_t before = r->nfuncs;
	uint32_t ns = wp_resolved_func(r, "(no stack)", "");
	CHECK_EQ_U(ns, before);
	CHECK_EQ_U(wp_resolved_func(r, "(no stack)", ""), ns);
	CHECK_EQ_U(wp_resolved_func(r, "t_leaf", r->funcs[leaf].module), leaf);
	wp_resolved_free(r);
	wp_profile_free(p);
}

static int of_tid(const struct wp_rstack *s, void *tid)
{
	return s->tid == *(uint32_t *)tid;
}

static void test_tally(void)
{
	struct wp_profile *p = fx_profile("");
	struct wp_resolved *r = wp_resolve(p, NULL);
	if (!r)
		return;
	uint32_t tid = 11;
	struct wp_tally t;
	CHECK_INT(wp_tally(r, of_tid, &tid, &t), 0);
	uint32_t root = func_id(r, "t_root"), mid = func_id(r, "t_mid");
	CHECK_EQ_U(t.samples, 5);
	CHECK_EQ_U(t.self[mid], 3);
	CHECK_EQ_U(t.total[root], 3);
	/* the model itself is untouched */
	CHECK_EQ_U(r->funcs[mid].self, 7);
	CHECK_EQ_U(r->total, 15);
	size_t n;
	uint32_t *ids = wp_funcs_ranked(r, &t, WP_RANK_SELF, &n);
	CHECK_EQ_U(n, 1);
	if (ids && n == 1)
		CHECK_EQ_U(ids[0], mid);
	free(ids);
	wp_tally_free(&t);
	wp_resolved_free(r);
	wp_profile_free(p);
}

/* The filter is applied once, when the model is built: only the kept threads and stacks,
 * every count over them; functions (ids, lines) as without a filter. */
static void test_filter(void)
{
	struct wp_profile *p = fx_profile("");
	struct wp_resolved *all = wp_resolve(p, NULL);
	struct wp_filter f = { .thread = "worker" };
	struct wp_resolved *r = wp_resolve(p, &f);
	CHECK(all && r);
	if (!all || !r)
		return;
	CHECK_STR(r->filter.thread, "worker");
	CHECK_EQ_U(r->nthreads, 1);
	CHECK_EQ_U(r->threads[0]->tid, 11);
	CHECK_EQ_U(r->nstacks, 2);
	CHECK_EQ_U(r->total, 5);
	for (size_t i = 0; i < r->nstacks; i++)
		CHECK_EQ_U(r->stacks[i].tid, 11);
	CHECK(wp_resolved_stack(r, 1) == NULL);
	CHECK(wp_resolved_stack(r, 2) == &r->stacks[0]);
	CHECK(wp_resolved_stack(r, 3) == &r->stacks[1]);
	CHECK_EQ_U(r->nfuncs, all->nfuncs);
	for (size_t i = 0; i < r->nfuncs && i < all->nfuncs; i++) {
		CHECK_STR(r->funcs[i].name, all->funcs[i].name);
		const struct wp_func *a = &r->funcs[i], *b = &all->funcs[i];
		CHECK((a->file ? b->file && !strcmp(a->file, b->file) : !b->file) &&
		      a->line == b->line, "%s: the same hottest line whatever the filter", a->name);
	}
	uint32_t root = func_id(r, "t_root"), mid = func_id(r, "t_mid"), leaf = func_id(r, "t_leaf");
	CHECK_EQ_U(r->funcs[root].total, 3);
	CHECK_EQ_U(r->funcs[mid].self, 3);
	CHECK_EQ_U(r->funcs[leaf].total, 0);
	wp_resolved_free(r);

	/* by tid */
	f.thread = "10";
	r = wp_resolve(p, &f);
	CHECK(r && r->nstacks == 4 && r->total == 10 && r->nthreads == 1);
	wp_resolved_free(r);
	/* a thread never sampled: kept, without samples */
	f.thread = "idle";
	r = wp_resolve(p, &f);
	CHECK(r && r->nthreads == 1 && r->nstacks == 0 && r->total == 0);
	wp_resolved_free(r);
	/* nothing matches */
	f.thread = "nosuch";
	r = wp_resolve(p, &f);
	CHECK(r && r->nthreads == 0 && r->nstacks == 0 && r->total == 0);
	CHECK(!wp_filter_keeps_thread(p, &f, 10));
	CHECK(!wp_filter_keeps_stack(p, &f, &p->stacks[0]));
	CHECK(wp_filter_keeps_thread(p, NULL, 10));
	f.thread = "main";
	CHECK(wp_filter_keeps_stack(p, &f, &p->stacks[0]));
	CHECK(!wp_filter_keeps_stack(p, &f, &p->stacks[1]));
	wp_resolved_free(r);
	wp_resolved_free(all);
	wp_profile_free(p);
}

/* A thread renamed, or a tid reused: the name of its last THREAD record is the one matched. */
static void test_filter_last_name(void)
{
	struct buf b;
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "mode=wall\n");
	rec_thread(&b, 5, WP_THREAD_EXITED, 1, 1, 0, 0, 10, "first");
	rec_thread(&b, 5, 0, 1, 1, 0, 20, 30, "second");
	const uint64_t pcs[] = { FX_UNKNOWN_PC };
	rec_stack(&b, 1, 5, 0, 2, 0, pcs, 1);
	struct wp_profile *p = parse_built(&b);
	if (!p)
		return;
	struct wp_filter f = { .thread = "second" };
	struct wp_resolved *r = wp_resolve(p, &f);
	CHECK(r && r->nthreads == 2 && r->total == 2, "both records of tid 5, by its last name");
	wp_resolved_free(r);
	f.thread = "first";
	r = wp_resolve(p, &f);
	CHECK(r && r->nthreads == 0 && r->total == 0);
	wp_resolved_free(r);
	wp_profile_free(p);
}

/* ---- inline chains ---- */

static inline __attribute__((always_inline)) void t_inlined(int k)
{
	for (int i = 0; i < k; i++)
		fx_sink += i * 7;
}

__attribute__((noipa, used)) static void t_inl_outer(int k)
{
	fx_sink += 1;
	t_inlined(k);
	fx_sink += 2;
}

/* An address in t_inl_outer where the symbolizer sees the inlined t_inlined, or 0. */
static uint64_t inlined_pc(struct wp_symbolizer *sym)
{
	uint64_t start = (uint64_t)(uintptr_t)t_inl_outer;
	for (uint64_t pc = start; pc < start + 4096; pc++) {
		struct wp_frame fr[WP_MAX_INLINE];
		int n = wp_symbolize(sym, pc, 0, fr, WP_MAX_INLINE);
		if (n >= 1 && strcmp(fr[n - 1].function, "t_inl_outer"))
			break; /* past its end */
		if (n >= 2 && !strcmp(fr[0].function, "t_inlined"))
			return pc;
	}
	return 0;
}

static void test_inline(void)
{
	struct wp_profile *p = fx_profile("");
	struct wp_resolved *r = wp_resolve(p, NULL);
	uint64_t pc = r ? inlined_pc(r->sym) : 0;
	wp_resolved_free(r);
	wp_profile_free(p);
	if (!pc) {
		fprintf(stderr, "note: the compiler left no inlined code in t_inl_outer; inline "
				"chains not checked\n");
		return;
	}
	struct buf b;
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "mode=wall\n");
	fx_self_modules(&b);
	rec_thread(&b, 1, 0, 1, 1, 0, 0, 10, "t");
	const uint64_t pcs[] = { pc, fx_ret(t_root) };
	rec_stack(&b, 1, 1, 0, 3, 0, pcs, 2);
	p = parse_built(&b);
	r = wp_resolve(p, NULL);
	const struct wp_rstack *s = &r->stacks[0];
	/* root first: t_root, then the chain outermost first: t_inl_outer, t_inlined (leaf) */
	CHECK(reads(r, s, (const char *const[]){ "t_root", "t_inl_outer", "t_inlined" }, 3));
	CHECK_EQ_U(s->nlocs, 2);
	CHECK_EQ_U(r->locs[s->locs[0]].n, 2); /* one location, two frames, innermost first */
	CHECK_STR(fname(r, r->locs[s->locs[0]].frames[0].func), "t_inlined");
	uint32_t inl = func_id(r, "t_inlined"), outer = func_id(r, "t_inl_outer");
	CHECK(inl != UINT32_MAX && r->funcs[inl].inlined && r->funcs[inl].self == 3);
	CHECK(outer != UINT32_MAX && r->funcs[outer].self == 0 && r->funcs[outer].total == 3);
	wp_resolved_free(r);
	wp_profile_free(p);
}

/* ---- the live view's incremental update ---- */

/* A later checkpoint: stack 1 counted further; stacks 2 and 4 are other stacks under the same
 * ids (as after an exec): 2 with a new function, 4 of the same thread and length; 3, 5, 6
 * gone. With `more_modules`, the module map changed too (a dlopen). */
static struct wp_profile *later(int more_modules)
{
	struct buf b;
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "mode=wall\nhz=100\n");
	rec_module(&b, 1, 0, FX_AGENT_START, FX_AGENT_START + 0x1000, 0, NULL, 0,
		   "/nonexistent/libwallprof.so");
	if (more_modules)
		rec_module(&b, 9, 0, 0x30000, 0x31000, 0, NULL, 0, "/nonexistent/libnew.so");
	fx_self_modules(&b);
	rec_thread(&b, 10, 0, 10, 6, 4, 0, 900000000, "main");
	const uint64_t s1[] = { fx_addr(t_leaf), fx_ret(t_mid), fx_ret(t_root) };
	const uint64_t s2[] = { fx_addr(t_other), fx_ret(t_root) };
	const uint64_t s4[] = { fx_addr(t_leaf), fx_ret(t_leaf), fx_ret(t_mid) };
	rec_stack(&b, 1, 10, 0, 9, 0, s1, 3);
	rec_stack(&b, 2, 10, 0, 2, 0, s2, 2);
	rec_stack(&b, 4, 10, 0, 1, 0, s4, 3);
	rec_end_marker(&b);
	struct wp_profile *p = NULL;
	char err[256];
	if (wp_profile_parse(b.d, b.len, &p, err, sizeof(err)) != 0) {
		fprintf(stderr, "later profile: %s\n", err);
		exit(2);
	}
	buf_free(&b);
	return p;
}

static void test_update(void)
{
	struct wp_profile *p1 = fx_profile("");
	struct wp_resolved *r = wp_resolve(p1, NULL);
	if (!r)
		return;
	uint32_t root = func_id(r, "t_root"), leaf = func_id(r, "t_leaf");
	size_t nfuncs = r->nfuncs, nlocs = r->nlocs;
	uint32_t leaf_loc = r->stacks[0].locs[0];
	const struct wp_rframe *frames1 = r->stacks[0].frames;

	struct wp_profile *p2 = later(0);
	CHECK_INT(wp_resolve_update(r, p2), 0);
	wp_profile_free(p1);
	CHECK(r->p == p2);
	CHECK_EQ_U(r->nstacks, 3);
	CHECK_EQ_U(r->nthreads, 1);
	CHECK_EQ_U(r->total, 12);
	/* stack 1 is the same stack: reused; 2 and 4 are new under old ids: resolved afresh */
	CHECK(r->stacks[0].frames == frames1);
	CHECK(reads(r, &r->stacks[0], (const char *const[]){ "t_root", "t_mid", "t_leaf" }, 3));
	CHECK(reads(r, &r->stacks[1], (const char *const[]){ "t_root", "t_other" }, 2));
	CHECK(reads(r, &r->stacks[2], (const char *const[]){ "t_mid", "t_leaf", "t_leaf" }, 3));
	CHECK_EQ_U(r->stacks[1].tid, 10);
	CHECK_EQ_U(func_id(r, "t_root"), root);
	CHECK_EQ_U(func_id(r, "t_leaf"), leaf);
	CHECK_EQ_U(r->nfuncs, nfuncs + 1);
	CHECK_EQ_U(func_id(r, "t_other"), nfuncs);
	CHECK_EQ_U(r->funcs[root].total, 11);
	CHECK_EQ_U(r->funcs[leaf].self, 10);
	CHECK_EQ_U(r->funcs[func_id(r, "t_mid")].self, 0); /* p1's counts are gone */
	CHECK(r->funcs[leaf].line > 0);
	/* the same module map: locations reused, not symbolized again */
	CHECK_EQ_U(r->stacks[0].locs[0], leaf_loc);
	CHECK_EQ_U(r->nlocs, nlocs + 1); /* t_other's, the only new address */
	CHECK(wp_resolved_stack(r, 2) == &r->stacks[1]);
	CHECK(wp_resolved_stack(r, 3) == NULL);

	/* a new module map: symbolized afresh, function ids kept */
	struct wp_profile *p3 = later(1);
	CHECK_INT(wp_resolve_update(r, p3), 0);
	wp_profile_free(p2);
	CHECK_EQ_U(func_id(r, "t_root"), root);
	CHECK_EQ_U(r->nfuncs, nfuncs + 1);
	CHECK_EQ_U(r->nlocs, 5); /* this profile's: t_leaf, t_mid+1, t_root+1, t_other, t_leaf+1 */
	CHECK_EQ_U(r->funcs[leaf].self, 10);
	CHECK(r->funcs[leaf].file && r->funcs[leaf].line > 0);
	CHECK(reads(r, &r->stacks[0], (const char *const[]){ "t_root", "t_mid", "t_leaf" }, 3));
	CHECK(reads(r, &r->stacks[1], (const char *const[]){ "t_root", "t_other" }, 2));
	wp_resolved_free(r);
	wp_profile_free(p3);
}

/* A function whose name says "a mutex lock is waited for here" (wp_wait_classify). */
__attribute__((noipa, used)) static void t_pthread_mutex_lock(void)
{
	t_mid();
}

/* A lock's holder stack (WAIT holder_stack): attached to the wait root first, whatever the
 * filter (the holder's thread filtered out, its stack still shows under the waiter's wait);
 * none when the record names none, or a stack of another thread than the holder's. */
static void test_holder(void)
{
	struct buf b;
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "mode=wall\nhz=100\nduration_ns=1000000000\nsamples=5\ncommand=fixture\n");
	if (fx_self_modules(&b) != 0) {
		CHECK(0, "cannot read this program's mappings");
		return;
	}
	rec_thread(&b, 10, 0, 0, 0, 0, 0, 900000000, "holder");
	rec_thread(&b, 11, 0, 5, 0, 5, 0, 900000000, "waiter");
	const uint64_t hs[] = { fx_addr(t_leaf), fx_ret(t_mid), fx_ret(t_root) };
	const uint64_t ws[] = { fx_addr(t_pthread_mutex_lock), fx_ret(t_root) };
	rec_stack(&b, 1, 10, 0, 0, 0, hs, 3); /* sampled only as a holder: count 0 */
	rec_stack(&b, 2, 11, WP_STACK_WAITING, 5, 50000000, ws, 2);
	rec_wait_holder(&b, 2, 0x5000, 10, 3, 1);
	rec_wait_holder(&b, 2, 0x5000, 10, 1, WP_WAIT_NO_HOLDER_STACK);
	rec_wait_holder(&b, 2, 0x5000, 10, 1, 2); /* the waiter's own stack: not the holder's */
	struct wp_profile *p = parse_built(&b);
	if (!p)
		return;
	struct wp_filter only_waiter = { .thread = "waiter" };
	for (int k = 0; k < 2; k++) {
		struct wp_resolved *r = wp_resolve(p, k ? &only_waiter : NULL);
		const struct wp_rstack *w = r ? wp_resolved_stack(r, 2) : NULL;
		CHECK(w && w->nwaits == 3, "the waiter's stack has its 3 waits");
		if (!w || w->nwaits != 3) {
			wp_resolved_free(r);
			continue;
		}
		CHECK(k == 0 ? wp_resolved_stack(r, 1) != NULL : wp_resolved_stack(r, 1) == NULL,
		      "the holder's own stack is kept only without the filter");
		const struct wp_rwait *h = &w->waits[0];
		CHECK(h->kind == WP_WAIT_LOCK && h->holder == 10, "a lock held by tid 10");
		CHECK_EQ_U(h->holder_n, 3);
		static const char *const want[] = { "t_root", "t_mid", "t_leaf" };
		for (uint32_t i = 0; i < h->holder_n && i < 3; i++)
			CHECK_STR(fname(r, h->holder_frames[i].func), want[i]);
		CHECK(w->waits[1].holder == 10 && w->waits[1].holder_n == 0, "no holder stack named");
		CHECK(w->waits[2].holder == 10 && w->waits[2].holder_n == 0,
		      "a stack of another thread is not the holder's");
		wp_resolved_free(r);
	}
	wp_profile_free(p);
}

/* One process of a tree: pid, ppid, when it started, its command; one sample of thread tid. */
static struct wp_profile *tree_proc(long pid, long ppid, uint64_t start, const char *cmd,
				    uint64_t cpu)
{
	struct buf b;
	char meta[512];
	header(&b, WP_FORMAT_VERSION);
	snprintf(meta, sizeof(meta),
		 "mode=wall\nhz=100\nduration_ns=500\nsamples=1\npid=%ld\nppid=%ld\n"
		 "start_unix_ns=%" PRIu64 "\ncpu_user_ns=%" PRIu64 "\ncommand=%s\n",
		 pid, ppid, start, cpu, cmd);
	rec_meta(&b, meta);
	rec_thread(&b, (uint32_t)pid, 0, 1, 1, 0, 0, 500, "main");
	const uint64_t pcs[] = { 0x1000 };
	rec_stack(&b, 1, (uint32_t)pid, 0, 1, 10000000, pcs, 1);
	struct wp_profile *p = parse_built(&b);
	return p;
}

/* --process-tree is by the image that was running when a child started (proctree.h): pid
 * 100 ran sh, which started 101, then exec'd tool, which started 102. --process-tree=tool
 * keeps tool and 102, not sh's child 101 (the files' ppid says 100 for both); a process's
 * CPU counts once, by its last image, and each image's own is its figure less the one
 * before. */
static void test_tree_images(void)
{
	const struct wp_profile *ps[4] = {
		tree_proc(100, 1, 1000, "/bin/sh -c tool", 10),
		tree_proc(101, 100, 2000, "/bin/child", 5),
		tree_proc(100, 1, 3000, "/usr/bin/tool x", 40),
		tree_proc(102, 100, 4000, "/bin/grandchild", 7),
	};
	if (!ps[0] || !ps[1] || !ps[2] || !ps[3])
		return;
	struct wp_filter f = { .process = "tool", .descendants = 1 };
	struct wp_resolved *r = wp_resolve_many(ps, 4, &f);
	CHECK(r != NULL);
	if (r) {
		int kept[4] = { 0 };
		for (size_t i = 0; i < r->nthreads; i++)
			kept[r->thread_procs[i]] = 1;
		CHECK(!kept[0] && !kept[1] && kept[2] && kept[3],
		      "kept: sh %d, sh's child %d, tool %d, tool's child %d", kept[0], kept[1],
		      kept[2], kept[3]);
		CHECK_INT(wp_procs_parent(r->ids, r->nprocs, 1), 0);
		CHECK_INT(wp_procs_parent(r->ids, r->nprocs, 3), 2);
		CHECK_INT(wp_procs_parent(r->ids, r->nprocs, 0), -1);
		CHECK(!wp_procs_last_image(r->ids, r->nprocs, 0) &&
		      wp_procs_last_image(r->ids, r->nprocs, 2), "tool is pid 100's last image");
		CHECK_EQ_U(wp_procs_own_cpu(r->ids, r->nprocs, 2), 30);
		CHECK_EQ_U(wp_procs_own_cpu(r->ids, r->nprocs, 0), 10);
		wp_resolved_free(r);
	}
	for (int i = 0; i < 4; i++)
		wp_profile_free((struct wp_profile *)ps[i]);
}

/* A wait object as long as the model keeps one (WP_WAIT_OBJECT_MAX, its NUL aside) is its
 * wait leaf's name whole: "[wait io OBJECT]", not cut shorter than the object. */
static void test_long_leaf(void)
{
	struct buf b;
	static char target[WP_WAIT_OBJECT_MAX];
	memset(target, 'x', sizeof(target) - 1);
	memcpy(target, "pipe:[7] ", 9);
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "mode=wall\nhz=100\nduration_ns=500\nsamples=3\ncommand=fixture\n");
	rec_thread(&b, 7, 0, 3, 0, 3, 0, 500, "reader");
	const uint64_t pcs[] = { 0x1000 };
	rec_stack(&b, 1, 7, WP_STACK_WAITING, 3, 30000000, pcs, 1);
	rec_wait(&b, 1, 0 /* read */, 3, 0, 3, target, sizeof(target) - 1, sizeof(target) - 1);
	struct wp_profile *p = parse_built(&b);
	if (!p)
		return;
	struct wp_filter f = { .wait_leaves = 1 };
	struct wp_resolved *r = wp_resolve(p, &f);
	const struct wp_rstack *leaf = NULL;
	for (size_t i = 0; r && i < r->nstacks; i++)
		if (wp_rstack_wait_leaf(r, &r->stacks[i]))
			leaf = &r->stacks[i];
	CHECK(leaf != NULL, "a wait leaf");
	if (leaf) {
		const char *name = fname(r, leaf->frames[leaf->n - 1].func);
		CHECK_EQ_U(strlen(name), strlen("[wait io ]") + sizeof(target) - 1);
		CHECK(!strncmp(name, "[wait io pipe:[7] x", 19) && name[strlen(name) - 1] == ']',
		      "the whole object, then ]");
	}
	wp_resolved_free(r);
	wp_profile_free(p);
}

int main(void)
{
	test_stacks();
	test_tally();
	test_filter();
	test_filter_last_name();
	test_inline();
	test_update();
	test_holder();
	test_tree_images();
	test_long_leaf();
	printf("resolve: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
