/* SPDX-License-Identifier: MIT */
/* Unit tests of the summary module (src/cli/model/summary.c): thread lifetimes (threads that
 * exited, threads alive at the end, no duration, the duration x threads fallback), rates,
 * units per sample, what one sample stands for, missed samples, the overhead estimate, the
 * counts of what a filter kept; and the statistics against values computed by hand: Wilson
 * intervals (Newcombe 1998's 5/10 example, the closed forms at 0/n and n/n, the normal
 * approximation for large n), the two-proportion z and its critical values. Profiles are
 * built in memory (profile_build.h); their stacks lie outside every module. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli/model/jit_hint.h"
#include "cli/model/resolve.h"
#include "cli/model/rwaits.h"
#include "cli/model/summary.h"
#include "cli/model/tally.h"
#include "profile_build.h"

#define S 1000000000ull /* ns */

#define CHECK_NEAR(a, b, eps)                                                               \
	do {                                                                                \
		double a_ = (a), b_ = (b);                                                  \
		check_(fabs(a_ - b_) <= (eps), __FILE__, __LINE__, #a " ~ " #b, "%.9g != %.9g", \
		       a_, b_);                                                             \
	} while (0)

static struct wp_profile *parse(struct buf *b)
{
	rec_end_marker(b);
	struct wp_profile *p = NULL;
	char err[256];
	if (wp_profile_parse(b->d, b->len, &p, err, sizeof(err)) != 0) {
		fprintf(stderr, "test profile: %s\n", err);
		exit(2);
	}
	buf_free(b);
	return p;
}

static const uint64_t pc[] = { 0x5000 };

/* A wall-mode run of 10 s on 2 CPUs: main alive to the end (10 s), a worker that exited
 * (2 s -> 5 s: 3 s), a late thread alive at the end (4 s -> 10 s: 6 s): 19 s of lifetimes.
 * 1,900 samples counted for 1,000 taken. */
static struct wp_profile *wall_run(void)
{
	struct buf b;
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "mode=wall\nhz=100\nduration_ns=10000000000\nticks=950\nticks_late=10\n"
		     "samples=1000\ncpu_user_ns=3000000000\ncpu_sys_ns=1000000000\n"
		     "sampler_cpu_ns=500000000\nwindow_sum_ns=190000000\nncpus=2\n"
		     "missed_exited=3\nmissed_late=2\nmissed_timeout=0\n");
	rec_thread(&b, 1, 0, 1000, 1000, 0, 0, 9 * S, "main");
	rec_thread(&b, 2, WP_THREAD_EXITED, 500, 0, 500, 2 * S, 5 * S, "worker");
	rec_thread(&b, 3, 0, 400, 400, 0, 4 * S, 6 * S, "late");
	rec_stack(&b, 1, 1, 0, 900, 9 * S, pc, 1);
	rec_stack(&b, 2, 2, WP_STACK_WAITING, 500, 5 * S, pc, 1);
	rec_stack(&b, 3, 3, WP_STACK_TRUNCATED, 400, 4 * S, pc, 1);
	rec_stack(&b, 4, 1, 0, 100, S, NULL, 0); /* no frame */
	rec_meta(&b, "missed_late=5\n");           /* a later value replaces the first */
	return parse(&b);
}

static void test_wall(void)
{
	struct wp_profile *p = wall_run();
	struct wp_resolved *r = wp_resolve(p, NULL);
	struct wp_summary s;
	wp_summarize(p, r, &s);
	CHECK_INT(s.cpu_mode, 0);
	CHECK_EQ_U(s.duration_ns, 10 * S);
	CHECK_EQ_U(s.interval_ns, 10000000);
	CHECK_EQ_U(s.thread_life_ns, 19 * S);
	CHECK_EQ_U(s.samples_all, 1900);
	CHECK_EQ_U(s.samples, 1900);
	CHECK_EQ_U(s.waiting, 500);
	CHECK_EQ_U(s.truncated, 400);
	CHECK_EQ_U(s.no_stack, 100);
	CHECK_EQ_U(s.stacks, 4);
	CHECK_EQ_U(s.threads, 3);
	CHECK_NEAR(s.units, 1.9, 1e-12);
	CHECK_NEAR(s.ticks_per_s, 95.0, 1e-9);
	CHECK_NEAR(s.samples_per_thread_s, 100.0, 1e-9);   /* 1,900 in 19 thread-seconds */
	CHECK_EQ_U(s.program_cpu_ns, 3500000000ull);        /* 3 + 1 - 0.5 s */
	CHECK_NEAR(s.samples_per_cpu_s, 1900 / 3.5, 1e-9);
	CHECK_NEAR(s.ns_per_sample, 1e7, 1e-3);             /* 19 s / 1,900 */
	CHECK_EQ_U(s.missed, 8);
	CHECK_INT(s.nmissed_by, 2);
	CHECK_STR(s.missed_by[0].cause, "exited");
	CHECK_EQ_U(s.missed_by[0].n, 3);
	CHECK_STR(s.missed_by[1].cause, "late");
	CHECK_EQ_U(s.missed_by[1].n, 5);
	CHECK_INT(s.ncpus, 2);
	CHECK_NEAR(s.held_pct, 1.0, 1e-9);          /* 0.19 s of 19 s */
	CHECK_NEAR(s.sampler_core_pct, 5.0, 1e-9);  /* 0.5 s of 10 s */
	CHECK_NEAR(s.sampler_pct, 2.5, 1e-9);       /* 0.5 s of 10 s x 2 CPUs */
	CHECK_NEAR(s.overhead_pct, 3.5, 1e-9);
	wp_resolved_free(r);

	/* a filter changes the kept counts, never the whole-run figures */
	struct wp_filter f = { .thread = "worker" };
	r = wp_resolve(p, &f);
	struct wp_summary k;
	wp_summarize(p, r, &k);
	CHECK_EQ_U(k.samples, 500);
	CHECK_EQ_U(k.waiting, 500);
	CHECK_EQ_U(k.truncated, 0);
	CHECK_EQ_U(k.no_stack, 0);
	CHECK_EQ_U(k.stacks, 1);
	CHECK_EQ_U(k.threads, 1);
	CHECK_EQ_U(k.samples_all, 1900);
	CHECK_EQ_U(k.thread_life_ns, s.thread_life_ns);
	CHECK_NEAR(k.units, s.units, 0);
	CHECK_NEAR(k.samples_per_thread_s, s.samples_per_thread_s, 0);
	CHECK_NEAR(k.overhead_pct, s.overhead_pct, 0);
	CHECK_NEAR(k.ns_per_sample, s.ns_per_sample, 0);
	wp_resolved_free(r);

	/* without a model: the whole run */
	wp_summarize(p, NULL, &k);
	CHECK_EQ_U(k.samples, 1900);
	CHECK_EQ_U(k.threads, 3);
	CHECK_NEAR(k.samples_per_thread_s, 100.0, 1e-9);
	wp_profile_free(p);
}

/* No duration recorded: a thread alive at the end lived to its last sample. */
static void test_no_duration(void)
{
	struct buf b;
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "mode=wall\nsampler_cpu_ns=7\n");
	rec_thread(&b, 1, 0, 1, 1, 0, 0, 9 * S, "main");
	rec_thread(&b, 2, WP_THREAD_EXITED, 1, 1, 0, 2 * S, 5 * S, "worker");
	rec_stack(&b, 1, 1, 0, 12, 0, pc, 1);
	struct wp_profile *p = parse(&b);
	struct wp_summary s;
	wp_summarize(p, NULL, &s);
	CHECK_EQ_U(s.thread_life_ns, 12 * S);
	CHECK_NEAR(s.ns_per_sample, 1e9, 1e-3);
	CHECK_NEAR(s.ticks_per_s, 0, 0);
	CHECK_EQ_U(s.interval_ns, 0); /* no rate */
	CHECK_NEAR(s.sampler_core_pct, 0, 0);
	CHECK_NEAR(s.sampler_pct, 0, 0);
	CHECK_NEAR(s.units, 1.0, 0); /* no "samples" key */
	wp_profile_free(p);
}

/* Lifetimes that come to nothing: the duration for each thread (for one, without threads). */
static void test_fallback(void)
{
	struct buf b;
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "mode=wall\nduration_ns=10000000000\nwindow_sum_ns=200000000\n"
		     "samples=5000\n");
	rec_thread(&b, 1, WP_THREAD_EXITED, 1, 1, 0, 3 * S, 3 * S, "a");
	rec_thread(&b, 2, WP_THREAD_EXITED, 1, 1, 0, 3 * S, 2 * S, "b");
	rec_stack(&b, 1, 1, 0, 4000, 0, pc, 1);
	struct wp_profile *p = parse(&b);
	struct wp_summary s;
	wp_summarize(p, NULL, &s);
	CHECK_EQ_U(s.thread_life_ns, 20 * S);
	CHECK_NEAR(s.held_pct, 1.0, 1e-9);
	CHECK_NEAR(s.samples_per_thread_s, 200.0, 1e-9);
	CHECK_NEAR(s.units, 1.0, 0); /* fewer counted than taken: never below 1 */
	CHECK(s.ncpus >= 1);         /* no "ncpus": this machine's */
	wp_profile_free(p);

	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "mode=wall\nduration_ns=3000000000\n");
	p = parse(&b);
	wp_summarize(p, NULL, &s);
	CHECK_EQ_U(s.thread_life_ns, 3 * S);
	CHECK_NEAR(s.ns_per_sample, 0, 0); /* no samples */
	wp_profile_free(p);
}

/* cpu mode: a sample stands for the program's CPU time over the samples. */
static void test_cpu(void)
{
	struct buf b;
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "mode=cpu\nhz=100\nduration_ns=2000000000\ncpu_user_ns=1500000000\n"
		     "cpu_sys_ns=600000000\nsampler_cpu_ns=100000000\n");
	rec_thread(&b, 1, 0, 1, 1, 0, 0, S, "main");
	rec_stack(&b, 1, 1, 0, 400, 0, pc, 1);
	struct wp_profile *p = parse(&b);
	struct wp_summary s;
	wp_summarize(p, NULL, &s);
	CHECK_INT(s.cpu_mode, 1);
	CHECK_EQ_U(s.program_cpu_ns, 2 * S);
	CHECK_NEAR(s.samples_per_cpu_s, 200.0, 1e-9);
	CHECK_NEAR(s.ns_per_sample, 5e6, 1e-6);
	wp_profile_free(p);

	/* the sampler's time above the process's (a broken META): no CPU left, no estimate */
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "mode=cpu\ncpu_user_ns=10\nsampler_cpu_ns=20\nduration_ns=-5\n");
	rec_thread(&b, 1, 0, 1, 1, 0, 0, S, "main");
	rec_stack(&b, 1, 1, 0, 400, 0, pc, 1);
	p = parse(&b);
	wp_summarize(p, NULL, &s);
	CHECK_EQ_U(s.program_cpu_ns, 0);
	CHECK_NEAR(s.samples_per_cpu_s, 0, 0);
	CHECK_NEAR(s.ns_per_sample, 0, 0);
	CHECK_EQ_U(s.duration_ns, 0);
	wp_profile_free(p);
}

static void test_statistics(void)
{
	double lo, hi;
	/* Newcombe (1998), Statistics in Medicine 17:857, table I: 5/10 -> 0.2366-0.7634 */
	wp_wilson(5, 10, WP_Z95, &lo, &hi);
	CHECK_NEAR(lo, 0.2366, 5e-5);
	CHECK_NEAR(hi, 0.7634, 5e-5);
	/* closed forms at the edges: 0/n -> [0, z^2/(n+z^2)], n/n -> [n/(n+z^2), 1] */
	double z2 = WP_Z95 * WP_Z95;
	wp_wilson(0, 10, WP_Z95, &lo, &hi);
	CHECK_NEAR(lo, 0, 0);
	CHECK_NEAR(hi, z2 / (10 + z2), 1e-12);
	wp_wilson(10, 10, WP_Z95, &lo, &hi);
	CHECK_NEAR(lo, 10 / (10 + z2), 1e-12);
	CHECK_NEAR(hi, 1, 1e-12);
	/* large n: the normal approximation p +- z sqrt(p(1-p)/n) */
	wp_wilson(5000, 10000, WP_Z95, &lo, &hi);
	CHECK_NEAR(lo, 0.5 - WP_Z95 * 0.005, 1e-5);
	CHECK_NEAR(hi, 0.5 + WP_Z95 * 0.005, 1e-5);
	wp_wilson(3, 0, WP_Z95, &lo, &hi);
	CHECK(lo == 0 && hi == 0);

	/* share intervals are of samples taken: 10 of 40 counts at 2 counts a sample is 5/20 */
	struct wp_summary s = { .units = 2.0 };
	double l2, h2;
	wp_share_ci(&s, 10, 40, &lo, &hi);
	wp_wilson(5, 20, WP_Z95, &l2, &h2);
	CHECK_NEAR(lo, 100 * l2, 1e-9);
	CHECK_NEAR(hi, 100 * h2, 1e-9);
	CHECK_NEAR(lo, 11.186, 5e-4);
	CHECK_NEAR(hi, 46.870, 5e-4);

	/* two proportions, 30/100 -> 50/100: pooled 0.4, se sqrt(0.4*0.6*0.02) = 0.069282 */
	CHECK_NEAR(wp_z_two_proportions(30, 100, 50, 100), 0.2 / sqrt(0.0048), 1e-12);
	CHECK_NEAR(wp_z_two_proportions(30, 100, 50, 100), 2.886751, 1e-6);
	CHECK_NEAR(wp_z_two_proportions(50, 100, 30, 100), -2.886751, 1e-6);
	CHECK_NEAR(wp_z_two_proportions(15, 50, 25, 50), 2.041241, 1e-6);
	CHECK_NEAR(wp_z_two_proportions(0, 100, 0, 100), 0, 0);   /* no variance */
	CHECK_NEAR(wp_z_two_proportions(1, 0, 1, 10), 0, 0);      /* no samples */
	/* with units: counts scaled back to samples taken on each side */
	struct wp_summary a = { .units = 1.0 }, b = { .units = 2.0 };
	CHECK_NEAR(wp_share_z(&a, 30, 100, &b, 100, 200), 2.886751, 1e-6);

	/* two-sided critical values */
	CHECK_NEAR(wp_z_critical(0.05), 1.959964, 1e-6);
	CHECK_NEAR(wp_z_critical(0.01), 2.575829, 1e-6);
	CHECK_NEAR(wp_z_critical(0.05 / 20), 3.023341, 1e-6); /* Bonferroni, 10 functions */

	CHECK_NEAR(wp_pct(1, 4), 25.0, 0);
	CHECK_NEAR(wp_pct(1, 0), 0, 0);
}

/* A thread's time budget (wp_thread_budget): a running stack of 100 samples, 40 of them a
 * wait for a CPU; a waiting stack of 50, 30 of them in read() on fd 4, 20 in no known call.
 * Weights are 1 µs a sample (rec_wait's). With wait leaves the read's 30 samples become a
 * stack of their own ending in "[wait io fd 4]", the CPU wait's 40 one ending in "[wait cpu
 * runqueue]": the budget and the total stay the same. */
static struct wp_profile *budget_run(void)
{
	struct buf b;
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "mode=wall\nhz=100\nduration_ns=1000000\n");
	rec_thread(&b, 7, 0, 150, 100, 50, 0, 1000000, "t");
	rec_stack(&b, 1, 7, 0, 100, 100000, pc, 1);
	rec_stack(&b, 2, 7, WP_STACK_WAITING, 50, 50000, pc, 1);
	rec_wait(&b, 1, WP_WAIT_NR_CPU, 0, 0, 40, "", 0, 0);
	rec_wait(&b, 2, 0 /* read */, 4, 0, 30, "", 0, 0);
	return parse(&b);
}

static void test_budget(void)
{
	struct wp_profile *p = budget_run();
	for (int leaves = 0; leaves < 2; leaves++) {
		struct wp_filter f = { .wait_leaves = leaves };
		struct wp_resolved *r = wp_resolve(p, &f);
		struct wp_budget b;
		wp_thread_budget(r, 0, 7, &b);
		CHECK_EQ_U(b.total_ns, 150000);
		CHECK_EQ_U(b.running_ns, 60000);
		CHECK_EQ_U(b.kind_ns[WP_WAIT_CPU], 40000);
		CHECK_EQ_U(b.kind_ns[WP_WAIT_IO], 30000);
		CHECK_EQ_U(b.unknown_ns, 20000);
		CHECK_EQ_U(r->total, 150);
		CHECK_EQ_U(r->nstacks, leaves ? 4u : 2u);
		uint32_t leaf = wp_resolved_func(r, "[wait io fd 4]", "[wait]");
		uint32_t cpu = wp_resolved_func(r, "[wait cpu runqueue]", "[wait]");
		CHECK_EQ_U(r->funcs[leaf].self, leaves ? 30u : 0u);
		CHECK_EQ_U(r->funcs[cpu].self, leaves ? 40u : 0u);
		if (leaves) {
			/* the cpu wait leaves its running stack as a leaf of its own (issue 20: it
			 * was that stack's self time), the read's leaves the waiting one */
			CHECK_EQ_U(r->stacks[0].count, 60u);
			CHECK_EQ_U(r->stacks[0].nwaits, 0u);
			CHECK_EQ_U(r->stacks[1].count, 20u);
			CHECK_EQ_U(r->stacks[1].nwaits, 0u);
			CHECK_EQ_U(r->stacks[2].count, 40u);
			CHECK_EQ_U(r->stacks[2].frames[r->stacks[2].n - 1].func, cpu);
			CHECK_INT(r->stacks[2].waits[0].kind, WP_WAIT_CPU);
			CHECK_EQ_U(r->stacks[3].count, 30u);
			CHECK_EQ_U(r->stacks[3].frames[r->stacks[3].n - 1].func, leaf);
		}
		wp_resolved_free(r);
	}
	wp_profile_free(p);
}

/* One definition of a waiting sample (issue 20, "figures that agree"): a stack flagged
 * waiting, and a running stack's share that waited for a CPU. STATS (wp_summarize), the WAITS
 * heading (wp_waiting_samples), the threads' counts (wp_thread_counts) and the time budget
 * count the same 90 samples of budget_run: 50 blocked, 40 waiting for a CPU. */
static void test_waiting_agrees(void)
{
	struct wp_profile *p = budget_run();
	for (int leaves = 0; leaves < 2; leaves++) {
		struct wp_filter f = { .wait_leaves = leaves };
		struct wp_resolved *r = wp_resolve(p, &f);
		struct wp_summary s;
		wp_summarize(p, r, &s);
		CHECK_EQ_U(s.samples, 150);
		CHECK_EQ_U(wp_waiting_samples(r), 90);
		CHECK_EQ_U(s.waiting, 90);
		CHECK_EQ_U(s.waiting_cpu, 40);
		size_t n = 0, unsampled = 0;
		struct wp_thread_count *tc = wp_thread_counts(r, &n, &unsampled);
		CHECK_EQ_U(n, 1u);
		if (n == 1) {
			CHECK_EQ_U(tc[0].samples, 150);
			CHECK_EQ_U(tc[0].waiting, 90);
		}
		free(tc);
		struct wp_budget b;
		wp_thread_budget(r, 0, 7, &b);
		CHECK_EQ_U(b.total_ns - b.running_ns, 90000); /* 1 µs a sample */
		wp_resolved_free(r);
	}
	wp_profile_free(p);
}

/* What a thread ran unseen (wp_thread_unseen): its share is of its samples' weight plus the
 * unseen time; nothing to say without a reason, or without unseen time. */
static void test_unseen(void)
{
	struct buf b;
	header(&b, WP_FORMAT_VERSION);
	rec_meta(&b, "mode=cpu\nhz=100\nduration_ns=4000000000\n");
	rec_thread_unseen(&b, 7, 10, "masked", 3 * S, "perf_event_open refused: EACCES");
	rec_thread_unseen(&b, 8, 10, "early", 10000000, ""); /* before its clock opened */
	rec_thread_unseen(&b, 9, 0, "blind", 2 * S, "perf events turned off");
	rec_stack(&b, 1, 7, 0, 10, S, pc, 1);
	rec_stack(&b, 2, 8, 0, 10, S, pc, 1);
	struct wp_profile *p = parse(&b);
	struct wp_resolved *r = wp_resolve(p, NULL);
	uint64_t ns = 0;
	double share = 0;
	const char *why = NULL;
	CHECK(wp_thread_unseen(r, 0, 7, &ns, &share, &why));
	CHECK_EQ_U(ns, 3 * S);
	CHECK_NEAR(share, 0.75, 1e-12);
	CHECK_STR(why, "perf_event_open refused: EACCES");
	CHECK(!wp_thread_unseen(r, 0, 8, &ns, &share, &why));
	CHECK(wp_thread_unseen(r, 0, 9, &ns, &share, &why));
	CHECK_NEAR(share, 1.0, 1e-12);
	wp_resolved_free(r);
	wp_profile_free(p);
}

/* The JIT hint (jit_hint.h): only from 20% of the samples not blocked in a call, and 20
 * samples; the runtime's own flag named. */
static void test_jit_hint(void)
{
	char buf[512];
	struct wp_jit_use u = { .unknown = 19, .base = 19, .pid = 7, .runtime = "node" };
	CHECK_INT(wp_jit_hint(&u, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "");
	u.unknown = 20;
	u.base = 101;
	CHECK_INT(wp_jit_hint(&u, buf, sizeof(buf)), 0);
	u.base = 100;
	CHECK_INT(wp_jit_hint(&u, buf, sizeof(buf)), 1);
	CHECK(strstr(buf, "20.0% of the samples") && strstr(buf, "node with --perf-basic-prof") &&
	      strstr(buf, "/tmp/perf-PID.map"));
	u.runtime = "java";
	wp_jit_hint(&u, buf, sizeof(buf));
	CHECK(strstr(buf, "-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit") != NULL);
	u.runtime = "python";
	wp_jit_hint(&u, buf, sizeof(buf));
	CHECK(strstr(buf, "3.12 or later with -X perf") != NULL);
	u.runtime = NULL;
	wp_jit_hint(&u, buf, sizeof(buf));
	CHECK(strstr(buf, "node --perf-basic-prof") && strstr(buf, "-X perf"));
}

int main(void)
{
	test_jit_hint();
	test_budget();
	test_waiting_agrees();
	test_unseen();
	test_wall();
	test_no_duration();
	test_fallback();
	test_cpu();
	test_statistics();
	printf("summary: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
