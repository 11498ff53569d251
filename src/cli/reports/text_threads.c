/* SPDX-License-Identifier: MIT */
/* The text report's sections per thread and, over several processes, per process: each
 * one's share, where its time went (running, waiting for a CPU, each kind of wait), its top
 * functions; the threads past the limit summed up by name. Counts are model/tally.h's,
 * the time budget and unseen time model/summary.h's; this file only lays them out. */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rwaits.h"
#include "tally.h"
#include "text.h"
#include "textfmt.h"

/* The threads past the first `skip` of the n in tc, grouped by name: thread pools show up as
 * one line. */
static void hidden_by_name(struct text *t, const struct wp_thread_count *tc, size_t n,
			   size_t skip)
{
	size_t groups;
	struct wp_thread_name *names = wp_thread_names(t->r, tc + skip, n - skip, &groups);
	if (!names)
		return;
	for (size_t i = 0; i < groups && i < 8; i++)
		fprintf(t->out, "    %-24s %6s thread%s  %9s samples  %5.1f%%\n", names[i].name,
			wp_num(names[i].threads), names[i].threads == 1 ? " " : "s",
			wp_num(names[i].samples), wp_pct(names[i].samples, t->s->samples_all));
	if (groups > 8)
		fprintf(t->out, "    (%s more names)\n", wp_num(groups - 8));
	free(names);
}

/* ---------------------------------------------------------------------------------------- */
/* Processes (a report over several): each one's share and its top functions */

/* The heading of process `k`'s section (the first image of its pid): its share and its top
 * functions over every image; its threads follow. */
static void process_head(struct text *t, size_t k)
{
	const struct wp_resolved *r = t->r;
	char b1[512], b2[256], b3[256], b4[256], prog[256];
	long pid = wp_resolved_pid(r, (uint32_t)k);
	struct wp_stack_sel arg = { r, pid, 0 };
	struct wp_tally tally;
	if (wp_tally(r, wp_stack_of_pid, &arg, &tally) != 0)
		return;
	long long ppid = r->procs[k]->info.ppid;
	size_t last, images = wp_pid_images(r, k, &last);
	char first[256], from[300] = "";
	if (images > 1)
		snprintf(from, sizeof(from), ", exec'd from %s",
			 wp_resolved_program(r, (uint32_t)k, first, sizeof(first)));
	/* how it ended: its last image's row of the run */
	const char *end = NULL;
	for (size_t j = 0; t->s->run && j < t->s->run->n; j++)
		if (t->s->run->procs[j].pid == pid)
			end = t->s->run->procs[j].end;
	fprintf(t->out, "\n%s\n%s (pid %ld, parent %lld%s%s%s): %s sample%s, %.1f%% of all\n",
		wp_text_dashes, wp_resolved_program(r, (uint32_t)last, prog, sizeof(prog)), pid, ppid, from,
		end ? ", " : "", end ? end : "",
		wp_num(tally.samples), tally.samples == 1 ? "" : "s",
		wp_pct(tally.samples, t->total));
	size_t n;
	uint32_t *ids = wp_funcs_ranked(r, &tally, WP_RANK_SELF, &n);
	for (size_t i = 0; ids && i < n && i < THREAD_FUNCS; i++) {
		const struct wp_func *f = &r->funcs[ids[i]];
		uint64_t self = tally.self[ids[i]];
		fprintf(t->out, "    %5.1f%%  %8s  %-36s  %-24s  %s\n",
			wp_pct(self, tally.samples), wp_num(self),
			wp_fit_name(f->name, 36, b1, sizeof(b1)),
			wp_fit_name(wp_text_source(f->file, f->line, b2, sizeof(b2)), 24, b3, sizeof(b3)),
			wp_fit_head(f->module, 14, b4, sizeof(b4)));
	}
	if (ids && n > THREAD_FUNCS)
		fprintf(t->out, "    %s more function%s\n", wp_num(n - THREAD_FUNCS),
			n - THREAD_FUNCS == 1 ? "" : "s");
	free(ids);
	wp_tally_free(&tally);
}

/* One line, when the thread ran unseen (it blocked the sampling signal and no perf clock
 * could sample it: summary.h): the share of its time no sample saw, and why. Returns 1 when
 * printed. */
static int unseen_line(struct text *t, uint32_t proc, uint32_t tid)
{
	uint64_t ns;
	double share;
	const char *why;
	if (!wp_thread_unseen(t->r, proc, tid, &ns, &share, &why))
		return 0;
	fprintf(t->out, "    unseen: %.1f%% of its %stime (%s it ran with the sampling signal "
			"blocked): %s\n", 100.0 * share, t->wall ? "" : "CPU ", wp_dur(ns), why);
	return 1;
}

/* A part of a time budget line ("sleep 99.6%"), after a comma, or on a line of its own
 * (indented 6) when it would take the line past the report's 100 columns. */
static void budget_part(struct text *t, int *col, const char *name, uint64_t ns,
			uint64_t total_ns)
{
	char part[64];
	int n = snprintf(part, sizeof(part), "%s %.1f%%", name, wp_pct(ns, total_ns));
	if (*col + 2 + n > 100) {
		fprintf(t->out, ",\n      %s", part);
		*col = 6 + n;
	} else {
		fprintf(t->out, ", %s", part);
		*col += 2 + n;
	}
}

/* Where the thread's wall time went, parts adding up to 100%: running, waiting for a CPU,
 * then each kind of wait, then waiting in no known call (summary.h's budget). */
static void time_budget(struct text *t, uint32_t proc, uint32_t tid)
{
	struct wp_budget b;
	wp_thread_budget(t->r, proc, tid, &b);
	if (!b.total_ns)
		return;
	int col = fprintf(t->out, "    time (%s sampled): running %.1f%%", wp_dur(b.total_ns),
			  wp_pct(b.running_ns, b.total_ns));
	if (b.kind_ns[WP_WAIT_CPU])
		budget_part(t, &col, "waiting for a CPU", b.kind_ns[WP_WAIT_CPU], b.total_ns);
	for (int k = 0; k < WP_WAIT__N; k++)
		if (k != WP_WAIT_CPU && b.kind_ns[k])
			budget_part(t, &col, wp_wait_kind_name((enum wp_wait_kind)k), b.kind_ns[k],
				    b.total_ns);
	if (b.unknown_ns)
		budget_part(t, &col, "waiting in no known call", b.unknown_ns, b.total_ns);
	fputc('\n', t->out);
	if (unseen_line(t, proc, tid))
		return; /* it says what was missing, and why */
	const struct wp_thread *th = wp_resolved_thread_of(t->r, proc, tid);
	if (th && (th->flags & WP_THREAD_UNSAMPLEABLE) && th->last_ns > th->first_ns)
		fprintf(t->out, "    (it blocked the sampling signal at times, and was then sampled "
				"only while blocked in the kernel: %s sampled of the %s it was seen, "
				"its running time missing)\n",
			wp_dur(b.total_ns), wp_dur(th->last_ns - th->first_ns));
}

/* One thread's section: its samples, and the functions it spent them in. Returns -1 when out
 * of memory. */
static int thread_section(struct text *t, const struct wp_thread_count *c, uint64_t all)
{
	char b1[512], b2[256], b3[256], b4[256];
	const struct wp_thread *th = wp_resolved_thread_of(t->r, c->proc, c->tid);
	char in[64] = "";
	if (t->r->nprocs > 1)
		snprintf(in, sizeof(in), ", pid %ld", c->pid);
	fprintf(t->out, "\n%s (tid %u%s%s): %s sample%s, %.1f%% of the %s",
		th && th->name && *th->name ? th->name : "?", c->tid, in,
		th && (th->flags & WP_THREAD_EXITED) ? ", exited" : "", wp_num(c->samples),
		c->samples == 1 ? "" : "s", wp_pct(c->samples, all),
		t->r->nprocs > 1 ? "run" : "process");
	assert(c->waiting <= c->samples); /* running is what is left */
	if (t->wall)
		fprintf(t->out, "; running %.1f%%, waiting %.1f%%",
			wp_pct(c->samples - c->waiting, c->samples), wp_pct(c->waiting, c->samples));
	fputc('\n', t->out);
	if (t->wall)
		time_budget(t, c->proc, c->tid);
	else
		unseen_line(t, c->proc, c->tid);
	struct wp_tally tally;
	struct wp_stack_sel arg = { t->r, c->pid, c->tid };
	if (wp_tally(t->r, wp_stack_of_thread, &arg, &tally) != 0)
		return -1;
	size_t n;
	uint32_t *ids = wp_funcs_ranked(t->r, &tally, WP_RANK_SELF, &n);
	if (!ids) {
		wp_tally_free(&tally);
		return -1;
	}
	int nw = (int)strlen(wp_num(c->samples)), fw = 8, sw = 8;
	for (size_t i = 0; i < n && i < THREAD_FUNCS; i++) {
		const struct wp_func *f = &t->r->funcs[ids[i]];
		int l1 = (int)strlen(f->name), l2 = (int)strlen(wp_text_source(f->file, f->line, b2,
								      sizeof(b2)));
		fw = l1 > fw ? l1 : fw;
		sw = l2 > sw ? l2 : sw;
	}
	sw = sw > 24 ? 24 : sw;
	int room = WIDTH - (4 + 6 + 2 + nw + 2 + 2 + sw + 2) - 14;
	fw = fw > room ? room : fw;
	for (size_t i = 0; i < n && i < THREAD_FUNCS; i++) {
		const struct wp_func *f = &t->r->funcs[ids[i]];
		const char *src = wp_fit_name(wp_text_source(f->file, f->line, b2, sizeof(b2)), sw, b3,
					   sizeof(b3));
		uint64_t self = tally.self[ids[i]];
		fprintf(t->out, "    %5.1f%%  %*s  %-*s  %-*s  %s\n", wp_pct(self, c->samples),
			nw, wp_num(self), fw, wp_fit_name(f->name, fw, b1, sizeof(b1)), sw, src,
			wp_fit_head(f->module, 14, b4, sizeof(b4)));
	}
	if (n > THREAD_FUNCS)
		fprintf(t->out, "    %s more function%s\n", wp_num(n - THREAD_FUNCS),
			n - THREAD_FUNCS == 1 ? "" : "s");
	free(ids);
	wp_tally_free(&tally);
	return 0;
}

/* The threads of process `pid` (every thread when pid < 0), most sampled first, at most
 * `limit`; the rest summed up, by name. */
static void threads_of(struct text *t, const struct wp_thread_count *tc, size_t ntc, long pid,
		       size_t limit, uint64_t all)
{
	const struct wp_thread_count *only = NULL;
	size_t shown = 0, mine = 0;
	uint64_t rest = 0;
	for (size_t i = 0; i < ntc; i++)
		if (pid >= 0 && tc[i].pid == pid && !mine++)
			only = &tc[i];
	if (pid >= 0 && mine == 1) { /* its functions are the process's, just above */
		const struct wp_thread *th = wp_resolved_thread_of(t->r, only->proc, only->tid);
		fprintf(t->out, "    (one thread sampled: %s, tid %u%s)\n",
			th && th->name && *th->name ? th->name : "?", only->tid,
			!t->wall ? "" : only->waiting * 2 > only->samples ? ", mostly waiting"
									    : ", mostly running");
		return;
	}
	for (size_t i = 0; i < ntc; i++) {
		const struct wp_thread_count *c = &tc[i];
		if (pid >= 0 && c->pid != pid)
			continue;
		if (shown++ >= limit) {
			rest += c->samples;
			continue;
		}
		if (thread_section(t, c, all) != 0)
			break;
	}
	if (shown > limit) {
		fprintf(t->out, "\n(%s more threads with %s samples, %.1f%%; --thread=NAME|TID shows "
				"one)\n", wp_num(shown - limit), wp_num(rest), wp_pct(rest, all));
		if (pid < 0)
			hidden_by_name(t, tc, ntc, limit);
	}
}

static int by_u64_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* Over several processes: a section per process (the first image of each pid, in the order
 * they started) with its threads within; the MAX_PROCS most sampled (all with --process),
 * the rest summed up. */
static void process_sections(struct text *t, const struct wp_thread_count *tc, size_t ntc,
			     size_t limit, uint64_t all)
{
	const struct wp_resolved *r = t->r;
	uint64_t *per = calloc(r->nprocs, sizeof(*per)), *sorted = calloc(r->nprocs, sizeof(*per));
	size_t *head = calloc(r->nprocs, sizeof(*head)); /* each image's pid's first image */
	if (!per || !sorted || !head)
		goto done;
	size_t np = wp_pid_samples(r, head, per);
	size_t ns = 0;
	for (size_t k = 0; k < r->nprocs; k++)
		if (head[k] == k)
			sorted[ns++] = per[k];
	qsort(sorted, ns, sizeof(*sorted), by_u64_desc);
	size_t cap = r->filter.process ? SIZE_MAX : MAX_PROCS;
	uint64_t floor = ns > cap ? sorted[cap - 1] : 0;
	wp_text_banner(t, "PROCESSES (%zu) AND THEIR THREADS (%zu with samples)", np, ntc);
	size_t shown = 0, rest = 0;
	uint64_t rest_samples = 0;
	for (size_t k = 0; k < r->nprocs; k++) {
		if (head[k] != k)
			continue; /* an earlier image of this pid has the section */
		if (ns > cap && (per[k] < floor || shown >= cap || !per[k])) {
			rest++;
			rest_samples += per[k];
			continue;
		}
		shown++;
		process_head(t, k);
		threads_of(t, tc, ntc, wp_resolved_pid(r, (uint32_t)k), limit, all);
	}
	if (rest)
		fprintf(t->out, "\n(%s more process%s with %s samples, %.1f%%; --process=PID|NAME "
				"shows one)\n", wp_num(rest), rest == 1 ? "" : "es",
			wp_num(rest_samples), wp_pct(rest_samples, t->total));
done:
	free(per);
	free(sorted);
	free(head);
}

void wp_text_unseen_unsampled(struct text *t, const struct wp_thread_count *tc, size_t ntc)
{
	const struct wp_resolved *r = t->r;
	for (size_t i = 0; i < r->nthreads; i++) {
		const struct wp_thread *th = r->threads[i];
		uint32_t proc = r->thread_procs[i];
		long pid = wp_resolved_pid(r, proc);
		uint64_t ns;
		double share;
		const char *why;
		size_t j = 0;
		while (j < ntc && !(tc[j].tid == th->tid && tc[j].pid == pid))
			j++;
		if (j < ntc || !wp_thread_unseen(r, proc, th->tid, &ns, &share, &why))
			continue;
		fprintf(t->out, "\n%s (tid %u%s): no samples\n", th->name && *th->name ? th->name : "?",
			th->tid, th->flags & WP_THREAD_EXITED ? ", exited" : "");
		unseen_line(t, proc, th->tid);
	}
}

void wp_text_threads(struct text *t)
{
	const struct wp_resolved *r = t->r;
	size_t ntc, idle;
	struct wp_thread_count *tc = wp_thread_counts(r, &ntc, &idle);
	if (ntc == SIZE_MAX)
		return;
	uint64_t all = t->s->samples_all;
	size_t limit = r->filter.thread ? SIZE_MAX : MAX_THREADS;
	if (r->nprocs > 1) {
		process_sections(t, tc, ntc, limit, all);
	} else {
		wp_text_banner(t, "THREADS (%zu with samples, most sampled first)", ntc);
		threads_of(t, tc, ntc, -1, limit, all);
	}
	if (idle)
		fprintf(t->out, "\n(%s thread%s seen but never sampled)\n", wp_num(idle),
			idle == 1 ? "" : "s");
	wp_text_unseen_unsampled(t, tc, ntc);
	free(tc);
}

