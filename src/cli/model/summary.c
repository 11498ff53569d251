/* SPDX-License-Identifier: MIT */
#include "summary.h"

#include <math.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "jit_hint.h"

/* A count or time of p's META (profile.h's struct wp_profile_info), by its field: INFO(hz). */
#define INFO(field) offsetof(struct wp_profile_info, field)
static uint64_t info_u(const struct wp_profile *p, size_t at)
{
	uint64_t v;
	memcpy(&v, (const char *)&p->info + at, sizeof(v));
	return v;
}

/* Every thread's lifetime added up, in ns: the time during which it could be sampled. A
 * thread that did not exit lived until the end of the run. */
static uint64_t thread_life(const struct wp_profile *p, uint64_t duration)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct wp_thread *t = &p->threads[i];
		uint64_t end = (t->flags & WP_THREAD_EXITED) || !duration ? t->last_ns : duration;
		if (end > t->first_ns)
			sum += end - t->first_ns;
	}
	if (!sum)
		sum = duration * (p->nthreads ? p->nthreads : 1);
	return sum;
}

/* The agent's missed_<cause> keys, in file order; a key repeated later counts once, with its
 * last value. */
static void missed(const struct wp_profile *p, struct wp_summary *s)
{
	for (size_t i = 0; i < p->nmeta; i++) {
		const char *k = p->meta[i].key;
		if (strncmp(k, "missed_", 7))
			continue;
		long long v = wp_profile_meta_ll(p, k, 0);
		if (v <= 0 || wp_profile_meta(p, k) != p->meta[i].value)
			continue;
		s->missed += (uint64_t)v;
		int j = 0;
		while (j < s->nmissed_by && strcmp(s->missed_by[j].cause, k + 7))
			j++;
		if (j < s->nmissed_by) { /* the same cause in another process */
			s->missed_by[j].n += (uint64_t)v;
			continue;
		}
		if (s->nmissed_by < WP_MISSED_CAUSES) {
			s->missed_by[s->nmissed_by].cause = k + 7;
			s->missed_by[s->nmissed_by++].n = (uint64_t)v;
		}
	}
}

/* What the filter kept. */
static void kept(const struct wp_resolved *r, struct wp_summary *s)
{
	s->samples = r->total;
	s->threads = r->nthreads;
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *st = &r->stacks[i];
		if (!st->count)
			continue;
		s->stacks++;
		s->waiting += wp_rstack_waiting(st);
		s->waiting_cpu += wp_rstack_waiting_cpu(st);
		if (st->flags & WP_STACK_TRUNCATED)
			s->truncated += st->count;
		if (!st->n)
			s->no_stack += st->count;
	}
}

/* A META figure over the model's processes (added up), or p's alone. */
static uint64_t sum_u(const struct wp_profile *p, const struct wp_resolved *r, size_t at)
{
	if (!r || r->nprocs < 2)
		return info_u(p, at);
	uint64_t v = 0;
	for (size_t k = 0; k < r->nprocs; k++)
		v += info_u(r->procs[k], at);
	return v;
}

/* CPU time (META key, user or system) over the model's processes: a process's figure
 * counts every image of its pid up to then (the kernel keeps it across exec), so each pid
 * counts once, by its last image. */
static uint64_t sum_cpu(const struct wp_profile *p, const struct wp_resolved *r, size_t at)
{
	if (!r || r->nprocs < 2)
		return info_u(p, at);
	uint64_t v = 0;
	for (size_t k = 0; k < r->nprocs; k++)
		if (wp_procs_last_image(r->ids, r->nprocs, k))
			v += info_u(r->procs[k], at);
	return v;
}

/* Several processes: from the first start to the last end. */
static uint64_t span(const struct wp_resolved *r)
{
	uint64_t first = UINT64_MAX, last = 0;
	for (size_t k = 0; k < r->nprocs; k++) {
		uint64_t st = r->procs[k]->info.start_unix_ns;
		uint64_t end = st + r->procs[k]->info.duration_ns;
		if (st && st < first)
			first = st;
		if (end > last)
			last = end;
	}
	return first != UINT64_MAX && last > first ? last - first : r->procs[0]->info.duration_ns;
}

void wp_summarize(const struct wp_profile *p, const struct wp_resolved *r, struct wp_summary *s)
{
	memset(s, 0, sizeof(*s));
	const char *mode = p->info.mode;
	s->cpu_mode = mode && !strcmp(mode, "cpu");
	s->duration_ns = r && r->nprocs > 1 ? span(r) : p->info.duration_ns;
	s->cpu_user_ns = sum_cpu(p, r, INFO(cpu_user_ns));
	s->cpu_sys_ns = sum_cpu(p, r, INFO(cpu_sys_ns));
	s->sampler_cpu_ns = sum_u(p, r, INFO(sampler_cpu_ns));
	s->hz = p->info.hz;
	s->interval_ns = s->hz ? 1000000000ull / s->hz : 0;
	s->ticks = sum_u(p, r, INFO(ticks));
	s->ticks_late = sum_u(p, r, INFO(ticks_late));
	s->window_sum_ns = sum_u(p, r, INFO(window_sum_ns));
	s->ncpus = (long)p->info.ncpus;
	if (s->ncpus <= 0)
		s->ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (s->ncpus <= 0)
		s->ncpus = 1;

	s->samples_all = wp_profile_total_samples(p);
	for (size_t k = 1; r && k < r->nprocs; k++)
		s->samples_all += wp_profile_total_samples(r->procs[k]);
	if (r)
		kept(r, s);
	else {
		s->samples = s->samples_all;
		s->threads = p->nthreads;
	}
	uint64_t taken = sum_u(p, r, INFO(samples));
	s->units = taken && s->samples_all > taken ? (double)s->samples_all / (double)taken : 1.0;
	for (size_t k = 0; r && k < r->nprocs; k++)
		missed(r->procs[k], s);
	if (!r)
		missed(p, s);

	uint64_t cpu = s->cpu_user_ns + s->cpu_sys_ns;
	s->program_cpu_ns = cpu > s->sampler_cpu_ns ? cpu - s->sampler_cpu_ns : 0;
	if (r && r->nprocs > 1)
		for (size_t k = 0; k < r->nprocs; k++)
			s->thread_life_ns += thread_life(r->procs[k],
							 r->procs[k]->info.duration_ns);
	else
		s->thread_life_ns = thread_life(p, s->duration_ns);
	uint64_t budget = s->cpu_mode ? s->program_cpu_ns : s->thread_life_ns;
	if (s->samples_all && budget)
		s->ns_per_sample = (double)budget / (double)s->samples_all;

	if (s->duration_ns)
		s->ticks_per_s = (double)s->ticks * 1e9 / (double)s->duration_ns;
	if (s->thread_life_ns)
		s->samples_per_thread_s = (double)s->samples_all * 1e9 / (double)s->thread_life_ns;
	if (s->program_cpu_ns)
		s->samples_per_cpu_s = (double)s->samples_all * 1e9 / (double)s->program_cpu_ns;

	s->held_pct = wp_pct(s->window_sum_ns, s->thread_life_ns);
	s->sampler_core_pct = wp_pct(s->sampler_cpu_ns, s->duration_ns);
	if (s->duration_ns)
		s->sampler_pct = 100.0 * (double)s->sampler_cpu_ns /
				 ((double)s->duration_ns * (double)s->ncpus);
	s->overhead_pct = s->held_pct + s->sampler_pct;
	if (r) {
		struct wp_jit_use u;
		wp_jit_use(r, &u);
		wp_jit_hint(&u, s->jit_hint, sizeof(s->jit_hint));
	}
}

/* ---- statistics ---- */

void wp_wilson(double k, double n, double z, double *lo, double *hi)
{
	if (n <= 0) {
		*lo = *hi = 0;
		return;
	}
	double p = k / n, z2 = z * z;
	double c = (p + z2 / (2 * n)) / (1 + z2 / n);
	double h = z * sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n);
	*lo = c - h < 0 ? 0 : c - h;
	*hi = c + h > 1 ? 1 : c + h;
}

void wp_share_ci(const struct wp_summary *s, uint64_t part, uint64_t whole, double *lo,
		 double *hi)
{
	wp_wilson((double)part / s->units, (double)whole / s->units, WP_Z95, lo, hi);
	*lo *= 100.0;
	*hi *= 100.0;
}

double wp_z_two_proportions(double k1, double n1, double k2, double n2)
{
	if (n1 <= 0 || n2 <= 0)
		return 0;
	double pool = (k1 + k2) / (n1 + n2);
	double se = sqrt(pool * (1 - pool) * (1 / n1 + 1 / n2));
	return se > 0 ? (k2 / n2 - k1 / n1) / se : 0;
}

double wp_share_z(const struct wp_summary *a, uint64_t k1, uint64_t n1,
		  const struct wp_summary *b, uint64_t k2, uint64_t n2)
{
	return wp_z_two_proportions((double)k1 / a->units, (double)n1 / a->units,
				    (double)k2 / b->units, (double)n2 / b->units);
}

double wp_z_critical(double alpha)
{
	/* bisection on erfc: P(|Z| > z) = erfc(z / sqrt 2) falls as z grows */
	double lo = 0, hi = 40;
	for (int i = 0; i < 200; i++) {
		double mid = (lo + hi) / 2;
		if (erfc(mid / M_SQRT2) > alpha)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

int wp_thread_unseen(const struct wp_resolved *r, uint32_t proc, uint32_t tid,
		     uint64_t *unseen_ns, double *share, const char **why)
{
	const struct wp_thread *th = wp_resolved_thread_of(r, proc, tid);
	if (!th || !th->unseen_ns || !th->unseen_why || !*th->unseen_why)
		return 0;
	struct wp_budget b;
	wp_thread_budget(r, proc, tid, &b);
	*unseen_ns = th->unseen_ns;
	*share = (double)th->unseen_ns / (double)(b.total_ns + th->unseen_ns);
	*why = th->unseen_why;
	return 1;
}

void wp_thread_budget(const struct wp_resolved *r, uint32_t proc, uint32_t tid,
		      struct wp_budget *b)
{
	memset(b, 0, sizeof(*b));
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (s->tid != tid || s->proc != proc)
			continue;
		uint64_t known = 0;
		for (uint32_t k = 0; k < s->nwaits; k++) {
			const struct wp_rwait *w = &s->waits[k];
			uint64_t ns = w->weight_ns < s->weight_ns - known ? w->weight_ns
									   : s->weight_ns - known;
			b->kind_ns[w->kind] += ns;
			known += ns;
		}
		b->total_ns += s->weight_ns;
		if (s->flags & WP_STACK_WAITING)
			b->unknown_ns += s->weight_ns - known;
		else
			b->running_ns += s->weight_ns - known;
	}
}
