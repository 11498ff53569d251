/* SPDX-License-Identifier: MIT */
/* wallprof --dump's text (model/dump_model.h): a header with how long the snapshot took and
 * how long the process was stopped, the DEADLOCK sections first when there are any (the
 * text report's, reports/text_deadlock.c), then the threads, alike ones grouped, the biggest
 * groups first: each group's state, the call it is blocked in, what it waits for (as a
 * recorded run names it) and for how long, and its stack, leaf first, with file:line. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "dump_model.h"
#include "textfmt.h"
#include "waits.h"

#define STACK_FRAMES 24 /* frames shown per group, from the leaf */
#define NAMED 8         /* threads named in a group's head; the rest are counted */

static const char rule[] =
	"================================================================================";


/* "blocked in futex, waiting for lock abba_lock_b held by abba-2 (tid 8)" */
static void what(const struct wp_resolved *r, const struct wp_dump_thread *t, FILE *out)
{
	switch (t->state) {
	case WP_DS_RUNNING:
		fputs("running", out);
		break;
	case WP_DS_RUNNABLE:
		fputs("runnable, waiting for a CPU", out);
		break;
	case WP_DS_BLOCKED:
		fputs("blocked", out);
		break;
	case WP_DS_DISK:
		fputs("in uninterruptible sleep (disk or another kernel wait)", out);
		break;
	case WP_DS_STOPPED:
		fputs(t->letter == 't' ? "stopped by a debugger" : "stopped by a signal", out);
		break;
	default:
		fprintf(out, "in state %c", t->letter);
	}
	if (t->call)
		fprintf(out, " in %s", t->call);
	if (t->wait && t->wait->kind != WP_WAIT_CPU) {
		fprintf(out, ", waiting for %s %s", wp_wait_kind_name(t->wait->kind), t->wait->object);
		if (t->wait->holder == t->tid)
			fputs(", which it holds itself", out);
		else if (t->wait->holder) {
			const struct wp_thread *h = wp_profile_thread(r->p, t->wait->holder);
			fprintf(out, ", held by %s (tid %u)", h && h->name && *h->name ? h->name : "?",
				(unsigned)t->wait->holder);
		}
	}
}

/* How long the group's threads have waited: "for 1.204 s", "for 1.1 s to 1.3 s",
 * "for an unknown time" (nothing when they do not wait). */
static void how_long(const struct wp_dump *d, const struct wp_dump_group *g, FILE *out)
{
	const struct wp_dump_thread *t0 = &d->threads[g->members[0]];
	if (t0->state == WP_DS_RUNNING || t0->state == WP_DS_RUNNABLE) {
		/* what schedstat saw it queue for during the snapshot */
		uint64_t q = 0;
		for (size_t k = 0; k < g->n; k++)
			if (d->threads[g->members[k]].queued_ns > q)
				q = d->threads[g->members[k]].queued_ns;
		if (q) {
			char snap[32];
			snprintf(snap, sizeof(snap), "%s", wp_dur(d->snapshot_ns));
			/* (a wait is added to schedstat when it ends: one begun before the
			 * snapshot may make it longer than the snapshot) */
			fprintf(out, ", also waited for a CPU (runqueue time grew by %s%s during the "
				"%s snapshot)", g->n > 1 ? "up to " : "", wp_dur(q), snap);
		}
		return;
	}
	if (t0->state != WP_DS_BLOCKED && t0->state != WP_DS_DISK && t0->state != WP_DS_STOPPED)
		return;
	int64_t lo = -1, hi = -1;
	for (size_t k = 0; k < g->n; k++) {
		int64_t w = d->threads[g->members[k]].waited_ns;
		if (w < 0) {
			fputs(", for an unknown time", out);
			return;
		}
		lo = lo < 0 || w < lo ? w : lo;
		hi = w > hi ? w : hi;
	}
	char a[32], b[32];
	snprintf(a, sizeof(a), "%s", wp_dur((uint64_t)lo));
	snprintf(b, sizeof(b), "%s", wp_dur((uint64_t)hi));
	if (!strcmp(a, b))
		fprintf(out, ", for %s", b);
	else
		fprintf(out, ", for %s to %s", a, b);
}

static void group(const struct wp_resolved *r, const struct wp_dump *d,
		  const struct wp_dump_group *g, FILE *out)
{
	const struct wp_dump_thread *t0 = &d->threads[g->members[0]];
	fputc('\n', out);
	if (g->n > 1)
		fprintf(out, "%zu threads alike: ", g->n);
	for (size_t k = 0; k < g->n && k < NAMED; k++) {
		const struct wp_dump_thread *t = &d->threads[g->members[k]];
		fprintf(out, "%s%s (tid %u)", k ? ", " : "", t->name, (unsigned)t->tid);
	}
	if (g->n > NAMED) {
		fprintf(out, " and %zu more (tids", g->n - NAMED);
		for (size_t k = NAMED; k < g->n; k++)
			fprintf(out, " %u", (unsigned)d->threads[g->members[k]].tid);
		fputc(')', out);
	}
	fputs("\n    ", out);
	what(r, t0, out);
	how_long(d, g, out);
	fputc('\n', out);
	const struct wp_rstack *s = t0->stack;
	if (!s) {
		fprintf(out, "      (no stack: %s)\n", t0->state == WP_DS_RUNNING ||
			t0->state == WP_DS_RUNNABLE ? "its clock gave no sample during the snapshot "
			"(it ran in the kernel, or waited for a CPU, all along)" :
			"its stack could not be read (it ran while it was copied)");
		return;
	}
	if (t0->state == WP_DS_RUNNING)
		fputs("      (as sampled by its clock during the snapshot)\n", out);
	for (uint32_t j = 0; j < s->n && j < STACK_FRAMES; j++)
		wp_text_stack_frame(r, &s->frames[s->n - 1 - j], out);
	if (s->n > STACK_FRAMES)
		fprintf(out, "      ... %u frames more\n", (unsigned)(s->n - STACK_FRAMES));
	else if (s->flags & WP_STACK_TRUNCATED)
		fputs("      ... (the unwind stopped here)\n", out);
}

static void header(const struct wp_dump *d, FILE *out)
{
	size_t counts[WP_DS_OTHER + 1] = { 0 };
	for (size_t i = 0; i < d->nthreads; i++)
		counts[d->threads[i].state]++;
	fprintf(out, "%s\n%*sWALLPROF DUMP\n%s\n", rule, 34, "", rule);
	fprintf(out, "[PROCESS] pid %lld: %s\n", d->pid, d->command);
	fprintf(out, "[SNAPSHOT] took %s; the process was stopped for %s", wp_dur(d->snapshot_ns),
		d->stopped_ns ? wp_dur(d->stopped_ns) : "0 s");
	if (!d->stopped_ns)
		fputs("\n           (nothing was stopped: blocked threads are read from /proc and a\n"
		      "           copy of their stacks, running ones from their perf clocks)", out);
	fprintf(out, "\n[THREADS] %zu:", d->nthreads);
	const char *sep = " ";
	for (int s = 0; s <= WP_DS_OTHER; s++)
		if (counts[s]) {
			fprintf(out, "%s%zu %s", sep, counts[s], wp_dump_state_name((enum wp_dump_state)s));
			sep = ", ";
		}
	fprintf(out, "; %zu groups of alike threads\n", d->ngroups);
}

int wp_report_dump_text(const struct wp_resolved *r, const struct wp_dump *d, FILE *out)
{
	header(d, out);
	wp_text_deadlocks(r, out);
	int pad = (int)(sizeof(rule) - 1 - strlen("THREADS")) / 2;
	fprintf(out, "\n%s\n%*sTHREADS\n%s\n", rule, pad, "", rule);
	fputs("Each thread's state, what it waits for and since when, and its stack (leaf first);\n"
	      "threads alike (same state, wait and stack) are one group, the biggest first.\n", out);
	for (size_t g = 0; g < d->ngroups; g++)
		group(r, d, &d->groups[g], out);
	return ferror(out) ? -1 : 0;
}
