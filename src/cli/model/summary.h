/* SPDX-License-Identifier: MIT */
/* The figures every report shows about a run, computed once: how long the threads lived,
 * the sampling rates delivered, what one sample stands for, the overhead estimate, and the
 * statistics (confidence intervals, the two-proportion test of --compare). A report prints
 * these and computes none of its own, so that two reports never disagree.
 *
 * Whole-run figures (rates, lifetimes, overhead) are over the whole profile whatever the
 * filter: they describe the sampling, not a selection. Sample counts are given both ways. */
#ifndef WP_SUMMARY_H
#define WP_SUMMARY_H

#include <stdint.h>

#include "common/profile.h"
#include "resolve.h"
#include "run.h"
#include "rwaits.h" /* wp_thread_budget: time per kind of wait */
#include "textfmt.h" /* wp_pct */

#define WP_MISSED_CAUSES 16

struct wp_summary {
	int cpu_mode;            /* mode=cpu; else wall */
	const struct wp_run *run; /* the processes of the profile's run (run.h), when the report
				  * is of a file and the run has more than this one; else NULL.
				  * Set by the report command, not by wp_summarize */

	/* what the agent recorded (META), 0 when missing or negative */
	uint64_t duration_ns, cpu_user_ns, cpu_sys_ns, sampler_cpu_ns;
	uint64_t hz, ticks, ticks_late, window_sum_ns;
	long ncpus;              /* of the machine that ran it ("ncpus"), else this one's, >= 1 */
	uint64_t interval_ns;    /* between ticks: 1e9 / hz; 0 when the rate is unknown */

	/* samples */
	uint64_t samples_all;    /* every stack's count: the whole run */
	uint64_t samples;        /* those the filter kept (the model's total) */
	uint64_t waiting;        /* kept waiting samples (rwaits.h's wp_rstack_waiting): of
				  * blocked threads, and of runnable ones waiting for a CPU */
	uint64_t waiting_cpu;    /* those of them that waited for a CPU */
	uint64_t truncated;      /* kept samples whose unwind stopped early */
	uint64_t no_stack;       /* kept samples without a frame */
	uint64_t stacks;         /* distinct kept stacks with samples */
	uint64_t threads;        /* kept THREAD records */
	double units;            /* stack counts per sample taken (>= 1): a late tick's sample
				  * counts for the intervals it covers */
	uint64_t missed;         /* samples missed, all causes */
	struct {
		const char *cause;   /* "exited", "late"...: the META key past "missed_" */
		uint64_t n;
	} missed_by[WP_MISSED_CAUSES];
	int nmissed_by;

	/* time */
	uint64_t thread_life_ns; /* every thread's lifetime added up: first seen to exit, or to
				  * the end of the run (to its last sample when the duration is
				  * unknown); duration x threads when that comes to nothing */
	uint64_t program_cpu_ns; /* the program's CPU time: user + system - the sampler's */
	double ns_per_sample;    /* what one sample stands for: program_cpu_ns (cpu mode) or
				  * thread_life_ns (wall) over samples_all; 0 when unknown */

	/* rates, 0 when unknown */
	double ticks_per_s;
	double samples_per_thread_s; /* samples_all per second of thread lifetime */
	double samples_per_cpu_s;    /* samples_all per second of program_cpu_ns */

	/* Overhead estimate, in percent, two parts:
	 *   held    = window_sum_ns / thread_life_ns: the share of its life a thread spent held
	 *             by the sampler (an upper bound: a thread held while it was blocked anyway
	 *             lost nothing);
	 *   sampler = sampler_cpu_ns / (duration_ns x ncpus): the share of the machine the
	 *             sampler thread used, which the program could not use when it wanted every
	 *             CPU. */
	double held_pct;
	double sampler_core_pct; /* the sampler's CPU time, of one core over the run */
	double sampler_pct;
	double overhead_pct;     /* held_pct + sampler_pct */

	/* code in anonymous executable memory (jit_hint.h): what it likely is and how to name
	 * it, "" when its share is small */
	char jit_hint[512];
};

/* Fills s from p and the model r built from it (NULL: the sample counts are the whole run's,
 * stacks, waiting, truncated and no_stack are left 0). */
void wp_summarize(const struct wp_profile *p, const struct wp_resolved *r, struct wp_summary *s);

/* Where one thread's wall time went (wall mode), from the weights of its kept samples, in ns:
 * the parts add up to total_ns. */
struct wp_budget {
	uint64_t total_ns;            /* its samples' weight: the wall time they stand for */
	uint64_t running_ns;          /* on a CPU */
	uint64_t kind_ns[WP_WAIT__N]; /* waiting, by what for (waits.h; WP_WAIT_CPU: for a CPU) */
	uint64_t unknown_ns;          /* waiting in no known call: blocked where the agent read no
				       * call (signalled inside one; a first look over the ration) */
};

/* The budget of thread `tid` of process `proc` (an index in r->procs) over r's kept stacks. */
void wp_thread_budget(const struct wp_resolved *r, uint32_t proc, uint32_t tid,
		      struct wp_budget *b);

/* What thread `tid` of process `proc` ran unseen: it blocked the sampling signal and no perf
 * clock could sample it instead (its THREAD record's unseen_ns and why). `share` is of the
 * thread's time: its kept samples' weight (CPU time in cpu mode, its wall-time budget in wall
 * mode) plus the unseen time. Returns 0 when there is nothing to say (nothing failed, or no
 * time unseen); `why` is then left alone. */
int wp_thread_unseen(const struct wp_resolved *r, uint32_t proc, uint32_t tid,
		     uint64_t *unseen_ns, double *share, const char **why);

/* ---- statistics ---- */

#define WP_Z95 1.959964 /* two-sided 95% */

/* Wilson score interval for k successes in n trials at z, as fractions in [0, 1]. It stays in
 * range and is honest for small counts, where the normal approximation p +- z*sqrt(p(1-p)/n)
 * (the same for large n) would reach below zero. n <= 0 gives [0, 0]. */
void wp_wilson(double k, double n, double z, double *lo, double *hi);

/* The 95% interval of the share `part` of `whole` samples, in percent: counts are first
 * scaled back to samples taken (s->units), since the interval wants independent samples. */
void wp_share_ci(const struct wp_summary *s, uint64_t part, uint64_t whole, double *lo,
		 double *hi);

/* Two-proportion z statistic of k2/n2 against k1/n1 (pooled standard error); 0 when it is
 * undefined (n1 or n2 <= 0, or both shares 0 or 1). */
double wp_z_two_proportions(double k1, double n1, double k2, double n2);

/* The same for share k1 of n1 samples of run a against k2 of n2 of run b, counts scaled back
 * to samples taken (each run's units). */
double wp_share_z(const struct wp_summary *a, uint64_t k1, uint64_t n1,
		  const struct wp_summary *b, uint64_t k2, uint64_t n2);

/* z such that P(|Z| > z) = alpha for a standard normal Z (two-sided critical value). */
double wp_z_critical(double alpha);

#endif
