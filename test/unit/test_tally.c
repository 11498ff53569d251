/* SPDX-License-Identifier: MIT */
/* The counts the reports show, computed in the model (model/tally.c, callgraph.c, rwaits.c):
 * per thread and per name, per pid, the call graph of the fixture profile
 * (model_fixture.h), and who waited on a lock and held it. */
#include <stdlib.h>

#include "callgraph.h"
#include "check.h"
#include "model_fixture.h"
#include "resolve.h"
#include "rwaits.h"
#include "tally.h"

static uint32_t fid(const struct wp_resolved *r, const char *name)
{
	for (size_t i = 0; i < r->nfuncs; i++)
		if (!strcmp(r->funcs[i].name, name))
			return (uint32_t)i;
	return WP_NO_FUNC;
}

static uint64_t calls(const struct wp_callgraph *g, uint32_t from, uint32_t to)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->calls[i].from == from && g->calls[i].to == to)
			return g->calls[i].count;
	return 0;
}

/* stacks, root first: 1 t_root t_mid t_leaf (5, main), 2 t_root t_mid (3, worker, its agent
 * frame gone), 3 none (2, worker), 4 t_root t_mid t_mid (4, main), 5 t_root t_leaf t_leaf
 * (1, main) */
static void test_threads_and_graph(void)
{
	struct wp_profile *p = fx_profile("pid=300\n");
	struct wp_resolved *r = wp_resolve(p, NULL);
	CHECK(r != NULL);
	if (!r)
		return;
	size_t n, unsampled;
	struct wp_thread_count *tc = wp_thread_counts(r, &n, &unsampled);
	CHECK_EQ_U(n, 2);
	CHECK_EQ_U(unsampled, 1); /* idle */
	if (n == 2) {
		CHECK_INT(tc[0].tid, 10);
		CHECK_EQ_U(tc[0].samples, 10);
		CHECK_EQ_U(tc[0].waiting, 0);
		CHECK_INT(tc[0].pid, 300);
		CHECK_INT(tc[1].tid, 11);
		CHECK_EQ_U(tc[1].samples, 5);
		CHECK_EQ_U(tc[1].waiting, 3);
	}
	size_t ng;
	struct wp_thread_name *names = wp_thread_names(r, tc, n, &ng);
	CHECK_EQ_U(ng, 2);
	if (names && ng == 2) {
		CHECK_STR(names[0].name, "main");
		CHECK_EQ_U(names[1].samples, 5);
	}
	free(names);

	struct wp_stack_sel sel = { r, 300, 11 };
	struct wp_tally t;
	CHECK(wp_tally(r, wp_stack_of_thread, &sel, &t) == 0);
	CHECK_EQ_U(t.samples, 5);
	wp_tally_free(&t);
	size_t head[1], last;
	uint64_t per[1];
	CHECK_EQ_U(wp_pid_samples(r, head, per), 1);
	CHECK_EQ_U(per[0], 15);
	CHECK_EQ_U(wp_pid_images(r, 0, &last), 1);
	int several;
	CHECK_INT(wp_func_main_pid(r, fid(r, "t_leaf"), 0, &several), 300);
	CHECK(!several);

	struct wp_callgraph g;
	CHECK(wp_callgraph_build(r, &g) == 0);
	uint32_t root = fid(r, "t_root"), mid = fid(r, "t_mid"), leaf = fid(r, "t_leaf");
	CHECK_EQ_U(calls(&g, WP_NO_FUNC, root), 13);
	CHECK_EQ_U(calls(&g, root, mid), 12);
	CHECK_EQ_U(calls(&g, mid, leaf), 5);
	CHECK_EQ_U(calls(&g, root, leaf), 1);
	CHECK_EQ_U(calls(&g, mid, mid), 0); /* recursion is no call */
	CHECK_EQ_U(calls(&g, leaf, leaf), 0);
	size_t nl;
	struct wp_call *l = wp_callgraph_links(r, &g, mid, 1, &nl);
	CHECK_EQ_U(nl, 2); /* t_leaf, and its own self time */
	if (l && nl == 2) {
		CHECK(l[0].to == WP_NO_FUNC && l[0].count == 7); /* most first */
		CHECK(l[1].to == leaf && l[1].count == 5);
	}
	free(l);
	uint32_t pick[10];
	long np = wp_callgraph_pick(r, &g, pick, 10);
	CHECK(np == 3 && pick[0] == root, "t_root, t_mid, t_leaf: %ld", np);
	wp_callgraph_free(&g);
	free(tc);
	wp_resolved_free(r);
	wp_profile_free(p);
}

/* A function whose name says "a mutex lock is waited for here" (wp_wait_classify). */
__attribute__((noipa, used)) static void t_pthread_mutex_lock(void)
{
	t_mid();
}

/* Two threads wait on one lock, 5 and 2 samples, held by a third. */
static void test_wait_people(void)
{
	struct buf b;
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "mode=wall\nhz=100\nduration_ns=1000000000\nsamples=7\ncommand=fixture\n");
	if (fx_self_modules(&b) != 0) {
		CHECK(0, "cannot read this program's mappings");
		return;
	}
	rec_thread(&b, 10, 0, 0, 0, 0, 0, 900000000, "holder");
	rec_thread(&b, 11, 0, 5, 0, 5, 0, 900000000, "waiter");
	rec_thread(&b, 12, 0, 2, 0, 2, 0, 900000000, "waiter");
	const uint64_t hs[] = { fx_addr(t_leaf), fx_ret(t_mid), fx_ret(t_root) };
	const uint64_t ws[] = { fx_addr(t_pthread_mutex_lock), fx_ret(t_root) };
	rec_stack(&b, 1, 10, 0, 0, 0, hs, 3);
	rec_stack(&b, 2, 11, WP_STACK_WAITING, 5, 50000000, ws, 2);
	rec_stack(&b, 3, 12, WP_STACK_WAITING, 2, 20000000, ws, 2);
	rec_wait_holder(&b, 2, 0x5000, 10, 5, 1);
	rec_wait_holder(&b, 3, 0x5000, 10, 2, 1);
	rec_end_marker(&b);
	struct wp_profile *p = NULL;
	char err[256];
	CHECK(wp_profile_parse(b.d, b.len, &p, err, sizeof(err)) == 0, "%s", err);
	buf_free(&b);
	struct wp_resolved *r = p ? wp_resolve(p, NULL) : NULL;
	CHECK(r != NULL);
	if (!r) {
		wp_profile_free(p);
		return;
	}
	size_t n;
	uint32_t *of;
	struct wp_wait_total *tot = wp_wait_totals(r, NULL, NULL, &n, &of);
	CHECK_EQ_U(n, 1);
	struct wp_wait_people *who = n == 1 ? wp_wait_people(r, of, n) : NULL;
	if (who) {
		CHECK_EQ_U(tot[0].count, 7);
		CHECK_EQ_U(who->tids[0], 11 + 1);
		CHECK_EQ_U(who->tid_n[0], 5);
		CHECK_EQ_U(who->tids[1], 12 + 1);
		CHECK_EQ_U(who->tids[2], 0);
		CHECK(!who->more_tids);
		CHECK(who->funcs[0] && who->func_n[0] == 7 && !who->funcs[1]);
		CHECK_EQ_U(who->holders[0].key, 10 + 1);
		CHECK_EQ_U(who->holders[0].n, 7);
		CHECK(who->holders[0].at && !strcmp(r->funcs[who->holders[0].at->func].name, "t_leaf"));
		CHECK_EQ_U(who->holder_known, 7);
		uint64_t count[WP_WAIT__N], ns[WP_WAIT__N];
		CHECK_EQ_U(wp_wait_kind_totals(tot, n, count, ns), 7);
		CHECK_EQ_U(count[WP_WAIT_LOCK], 7);
	}
	CHECK_EQ_U(wp_waiting_samples(r), 7);
	free(who);
	free(of);
	free(tot);
	wp_resolved_free(r);
	wp_profile_free(p);
}

int main(void)
{
	test_threads_and_graph();
	test_wait_people();
	printf("tally: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
