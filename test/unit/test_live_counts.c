/* SPDX-License-Identifier: MIT */
/* The live view's counts (src/cli/model/live_counts.c) over checkpoints of two processes of
 * the fixture profile (model_fixture.h): each stack's leaf counted per thread and per
 * function, the same function of both processes one function, the last interval as the
 * difference between a process's last two checkpoints, a process settled (no checkpoint for
 * a while) out of the interval, a released process's counts kept, and a new model for a
 * released process's path (its pid exec'd). */
#include <stdlib.h>

#include "check.h"
#include "live_counts.h"
#include "model_fixture.h"

static const struct wp_live_func *func(const struct wp_live_counts *m, const char *name)
{
	for (size_t i = 0; i < m->nfuncs; i++)
		if (!strcmp(m->funcs[i].name, name))
			return &m->funcs[i];
	return NULL;
}

static void test_counts(void)
{
	struct wp_live_counts m;
	CHECK(wp_live_counts_init(&m, NULL) == 0);
	uint32_t a = wp_live_proc_at(&m, "/nonexistent/a.prof", 100, 1);
	uint32_t b = wp_live_proc_at(&m, "/nonexistent/a.200.prof", 200, 0);
	CHECK_INT(a, 0);
	CHECK_INT(b, 1);
	CHECK_INT(wp_live_proc_at(&m, "/nonexistent/a.200.prof", 200, 0), 1); /* known */

	wp_live_absorb(&m, a, fx_profile("checkpoint=1\npid=100\nthreads_per_tick=16\n"));
	wp_live_absorb(&m, b, fx_profile("checkpoint=1\npid=200\n"));
	wp_live_tally(&m);
	CHECK_INT(m.nprocs_loaded, 2);
	CHECK_INT(m.nprocs_live, 2);
	CHECK_EQ_U(m.total_now, 30);
	CHECK_EQ_U(m.total_ivl, 30); /* a first checkpoint: all of it is new */
	CHECK_STR(m.command, "fixture");
	CHECK_STR(m.mode, "wall");
	CHECK_INT(m.hz, 100);
	CHECK_INT(m.per_tick, 16);

	/* leaves: t_leaf (stacks 1 and 5), t_mid (2, whose agent frame goes, and 4), and the
	 * stack of agent frames only; the same functions in both processes are one each */
	CHECK_EQ_U(m.nfuncs, 3);
	const struct wp_live_func *leaf = func(&m, "t_leaf"), *mid = func(&m, "t_mid");
	const struct wp_live_func *none = func(&m, "(no stack)");
	CHECK(leaf && mid && none);
	if (leaf && mid && none) {
		CHECK_EQ_U(leaf->now, 12);
		CHECK_EQ_U(leaf->ivl, 12);
		CHECK_EQ_U(mid->now, 14);
		CHECK_EQ_U(none->now, 4);
		CHECK_STR(leaf->module, strrchr(fx_exe, '/') + 1);
	}
	struct wp_live_thread *main_b = wp_live_thread(&m, (uint64_t)b << 32 | 10);
	struct wp_live_thread *worker_a = wp_live_thread(&m, (uint64_t)a << 32 | 11);
	CHECK(main_b && worker_a);
	if (main_b && worker_a) {
		CHECK_STR(main_b->name, "main");
		CHECK_EQ_U(main_b->now, 10);
		CHECK(main_b->top_ivl >= 0 && !strcmp(m.funcs[main_b->top_ivl].name, "t_leaf"));
		CHECK_EQ_U(worker_a->now, 5);
		CHECK_EQ_U(worker_a->wait_now, 3);
		CHECK(worker_a->exited);
	}
	CHECK(wp_live_thread(&m, (uint64_t)b << 32 | 99) == NULL);
	CHECK_INT(m.nthreads_live, 4); /* main and idle of each: worker exited */
	char label[64];
	CHECK_STR(wp_live_proc_label(&m, b, label, sizeof(label)), "fixture 200");

	/* process a's next checkpoint, the same counts: nothing new from it; b's first
	 * checkpoint is still its last interval */
	wp_live_absorb(&m, a, fx_profile("checkpoint=1\npid=100\n"));
	wp_live_tally(&m);
	CHECK_EQ_U(m.total_now, 30);
	CHECK_EQ_U(m.total_ivl, 15);
	if (leaf) {
		leaf = func(&m, "t_leaf");
		CHECK_EQ_U(leaf->now, 12);
		CHECK_EQ_U(leaf->ivl, 6);
	}

	/* b has had nothing for a while: out of the interval */
	wp_live_settle(&m, b);
	wp_live_tally(&m);
	CHECK_EQ_U(m.total_ivl, 0);
	CHECK_EQ_U(func(&m, "t_leaf")->ivl, 0);
	CHECK_EQ_U(func(&m, "t_leaf")->now, 12);

	/* a's final word: it ended; released, its counts stay */
	wp_live_absorb(&m, a, fx_profile("pid=100\n"));
	wp_live_tally(&m);
	CHECK_INT(m.nprocs_live, 1);
	wp_live_release(&m, a);
	CHECK(m.procs[a]->model == NULL && m.procs[a]->prof == NULL);
	wp_live_tally(&m);
	CHECK_EQ_U(m.total_now, 30);
	CHECK_EQ_U(func(&m, "t_mid")->now, 14);

	/* a's pid exec'd: the new image's first checkpoint at the same path builds a new model,
	 * with no more functions than the released one had room for in its map of function ids
	 * (that map must start over with the model, capacity and all: test_live's exec case
	 * died of SIGSEGV writing through the NULL the release left) */
	wp_live_absorb(&m, a, fx_profile("checkpoint=1\npid=100\n"));
	CHECK(m.procs[a]->model != NULL && m.procs[a]->fmap != NULL);
	CHECK(m.procs[a]->nfmap <= m.procs[a]->capfmap);
	wp_live_tally(&m);
	CHECK_INT(m.nprocs_live, 2); /* a runs again */
	CHECK_EQ_U(m.nfuncs, 3); /* the same functions: the same rows */
	CHECK_EQ_U(func(&m, "t_leaf")->now, 12);
	CHECK_EQ_U(func(&m, "t_mid")->now, 14);
	wp_live_counts_free(&m);
}

int main(void)
{
	test_counts();
	printf("live_counts: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
