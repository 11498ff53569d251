/* SPDX-License-Identifier: MIT */
/* Lookups in a profile the reader (profile_read.c) built: META by key, how the process ended,
 * a stack by id, the module at an address, a thread by tid (over the indexes the reader
 * made), and the totals of its stacks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "profile_impl.h"

const char *wp_profile_meta(const struct wp_profile *p, const char *key)
{
	if (!p || !key)
		return NULL;
	for (size_t i = p->nmeta; i-- > 0;) /* the last one wins */
		if (strcmp(p->meta[i].key, key) == 0)
			return p->meta[i].value;
	return NULL;
}

long long wp_profile_meta_ll(const struct wp_profile *p, const char *key, long long dflt)
{
	const char *v = wp_profile_meta(p, key);
	if (!v || !*v)
		return dflt;
	char *end;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	if (errno || end == v || *end != '\0')
		return dflt;
	return x;
}

enum wp_end wp_profile_end(const struct wp_profile *p, int *code)
{
	long long sig = wp_profile_meta_ll(p, "died_of_signal", 0);
	long long st = wp_profile_meta_ll(p, "exit_status", -1);
	*code = 0;
	if (wp_profile_meta(p, "exec"))
		return WP_END_EXEC;
	if (sig > 0 && sig < 65) {
		*code = (int)sig;
		return WP_END_SIGNAL;
	}
	if (st >= 0 && st <= 255) {
		*code = (int)st;
		return WP_END_EXIT;
	}
	if (wp_profile_meta(p, "checkpoint") || wp_profile_meta(p, "flush"))
		return WP_END_NO_WORD;
	return WP_END_ENDED;
}

/* How many of the n elements, sorted by key(p, i), have a key at or below k. */
static size_t count_at_or_below(const struct wp_profile *p, size_t n,
				uint64_t (*key)(const struct wp_profile *p, size_t i), uint64_t k)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (key(p, mid) <= k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint64_t stack_id(const struct wp_profile *p, size_t i)
{
	return p->stacks[i].id;
}

static uint64_t module_start(const struct wp_profile *p, size_t i)
{
	return p->modules[i].start;
}

/* The i-th thread in tid order (file order among equal tids). */
static uint64_t thread_tid(const struct wp_profile *p, size_t i)
{
	return p->threads[((const struct profile_impl *)p)->thread_by_tid[i]].tid;
}

const struct wp_stack *wp_profile_stack(const struct wp_profile *p, uint32_t id)
{
	if (!p)
		return NULL;
	size_t n = count_at_or_below(p, p->nstacks, stack_id, id); /* ids are unique */
	return n && p->stacks[n - 1].id == id ? &p->stacks[n - 1] : NULL;
}

const struct wp_module *wp_profile_module_at(const struct wp_profile *p, uint64_t pc)
{
	if (!p || p->nmodules == 0)
		return NULL;
	const struct profile_impl *im = (const struct profile_impl *)p;
	/* the nearest start at or below pc first; further back only while some module there
	 * still reaches past pc (overlaps happen with unloaded modules) */
	for (size_t i = count_at_or_below(p, p->nmodules, module_start, pc); i-- > 0;) {
		if (im->module_max_end[i] <= pc)
			break;
		if (pc < p->modules[i].end)
			return &p->modules[i];
	}
	return NULL;
}

const struct wp_thread *wp_profile_thread(const struct wp_profile *p, uint32_t tid)
{
	if (!p || p->nthreads == 0)
		return NULL;
	/* the last record of that tid in file order */
	size_t n = count_at_or_below(p, p->nthreads, thread_tid, tid);
	if (n == 0 || thread_tid(p, n - 1) != tid)
		return NULL;
	return &p->threads[((const struct profile_impl *)p)->thread_by_tid[n - 1]];
}

/* a + b, or UINT64_MAX when that overflows */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

uint64_t wp_profile_total_samples(const struct wp_profile *p)
{
	uint64_t total = 0;
	for (size_t i = 0; p && i < p->nstacks; i++)
		total = sat_add(total, p->stacks[i].count);
	return total;
}

uint64_t wp_profile_total_weight_ns(const struct wp_profile *p)
{
	uint64_t total = 0;
	for (size_t i = 0; p && i < p->nstacks; i++)
		total = sat_add(total, p->stacks[i].weight_ns);
	return total;
}

static uint64_t meta_u(const struct wp_profile *p, const char *key)
{
	long long v = wp_profile_meta_ll(p, key, 0);
	return v > 0 ? (uint64_t)v : 0;
}

void wp_profile_fill_info(struct wp_profile *p)
{
	struct wp_profile_info *in = &p->info;
	in->command = wp_profile_meta(p, "command");
	in->mode = wp_profile_meta(p, "mode");
	in->run = wp_profile_meta(p, "run");
	in->version = wp_profile_meta(p, "wallprof_version");
	in->pid = wp_profile_meta_ll(p, "pid", -1);
	in->ppid = wp_profile_meta_ll(p, "ppid", -1);
	in->threads_per_tick = wp_profile_meta_ll(p, "threads_per_tick", -1);
	in->threads_seen = wp_profile_meta_ll(p, "threads_seen", -1);
	in->hz = meta_u(p, "hz");
	in->ncpus = meta_u(p, "ncpus");
	in->samples = meta_u(p, "samples");
	in->ticks = meta_u(p, "ticks");
	in->ticks_late = meta_u(p, "ticks_late");
	in->start_unix_ns = meta_u(p, "start_unix_ns");
	in->duration_ns = meta_u(p, "duration_ns");
	in->cpu_user_ns = meta_u(p, "cpu_user_ns");
	in->cpu_sys_ns = meta_u(p, "cpu_sys_ns");
	in->sampler_cpu_ns = meta_u(p, "sampler_cpu_ns");
	in->window_n = meta_u(p, "window_n");
	in->window_sum_ns = meta_u(p, "window_sum_ns");
	in->window_p50_ns = meta_u(p, "window_p50_ns");
	in->window_p99_ns = meta_u(p, "window_p99_ns");
	in->window_max_ns = meta_u(p, "window_max_ns");
	in->has_sampler_cpu = wp_profile_meta(p, "sampler_cpu_ns") != NULL;
	in->checkpoint = wp_profile_meta(p, "checkpoint") != NULL;
	in->timeline_truncated = wp_profile_meta_ll(p, "timeline_truncated", 0) != 0;
	in->messages_dropped = meta_u(p, "messages_dropped");
}
