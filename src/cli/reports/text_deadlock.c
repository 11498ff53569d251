/* SPDX-License-Identifier: MIT */
/* The text report's DEADLOCK section (issue 21), first after the header when the model found
 * threads that wait for each other as the run ended (model/deadlock_model.h): it is what the
 * user most needs to see. Each loop gives each thread, what it waits for (the lock by its
 * symbol, or the thread it joins), who holds it, and the thread's stack as last sampled, leaf
 * first. Nothing is printed when there is none, so other reports are as they were. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "deadlock_model.h"
#include "textfmt.h"

#define STACK_FRAMES 16 /* frames shown per thread, from the leaf */
#define WIDTH 100       /* no line is longer */

static const char rule[] =
	"================================================================================";

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : path;
}

void wp_text_stack_frame(const struct wp_resolved *r, const struct wp_rframe *f, FILE *out)
{
	const struct wp_func *fn = &r->funcs[f->func];
	char name[64], src[64];
	if (!f->file)
		snprintf(src, sizeof(src), "-");
	else if (f->line > 0)
		snprintf(src, sizeof(src), "%s:%d", base_name(f->file), f->line);
	else
		snprintf(src, sizeof(src), "%s", base_name(f->file));
	fprintf(out, "      %-40s  %-26s  %s\n", wp_fit_name(fn->name, 40, name, sizeof(name)), src,
		fn->module ? fn->module : "?");
}


static void member(const struct wp_resolved *r, const struct wp_dl_member *m, FILE *out)
{
	char pid[32] = "", head[3 * WP_WAIT_OBJECT_MAX];
	if (r->nprocs > 1)
		snprintf(pid, sizeof(pid), ", pid %lld", r->procs[m->proc]->info.pid);
	int n = snprintf(head, sizeof(head), "%s (tid %u%s) ", m->name, (unsigned)m->tid, pid);
	size_t at = n > 0 && (size_t)n < sizeof(head) ? (size_t)n : 0;
	if (m->kind == WP_WAIT_JOIN)
		snprintf(head + at, sizeof(head) - at, "joins %s (tid %u)", m->target_name,
			 (unsigned)m->target);
	else if (m->target == m->tid)
		snprintf(head + at, sizeof(head) - at, "waits for %s %s, which it holds itself",
			 wp_wait_kind_name(m->kind), m->object);
	else
		snprintf(head + at, sizeof(head) - at, "waits for %s %s, held by %s (tid %u)",
			 wp_wait_kind_name(m->kind), m->object, m->target_name, (unsigned)m->target);
	at = strlen(head);
	if (m->waiter)
		snprintf(head + at, sizeof(head) - at, ", in %s", m->waiter);
	wp_wrap(out, "", 4, head, (int)strlen(head), WIDTH); /* within 100 columns */
	for (uint32_t j = 0; j < m->nframes && j < STACK_FRAMES; j++)
		wp_text_stack_frame(r, &m->frames[j], out);
	if (m->nframes > STACK_FRAMES)
		fprintf(out, "      ... %u frames more\n", (unsigned)(m->nframes - STACK_FRAMES));
}

void wp_text_deadlocks(const struct wp_resolved *r, FILE *out)
{
	for (size_t i = 0; i < r->ndeadlocks; i++) {
		const struct wp_deadlock *d = &r->deadlocks[i];
		char title[128];
		if (d->n == 1)
			snprintf(title, sizeof(title), "DEADLOCK: a thread waits for itself, for good");
		else
			snprintf(title, sizeof(title), "DEADLOCK: %zu threads wait for each other, for good",
				 d->n);
		int pad = (int)(sizeof(rule) - 1 - strlen(title)) / 2;
		fprintf(out, "\n%s\n%*s%s\n%s\n", rule, pad > 0 ? pad : 0, "", title, rule);
		/* (a --dump's profile is one snapshot: src/outside/dump.h) */
		fprintf(out, "%s, %s:\n",
			wp_profile_meta_ll(r->procs[d->m[0].proc], "dump", 0) == 1 ?
			"At the snapshot" : "As the profile was last written",
			d->n == 1 ? "this thread was blocked on a lock it holds"
				  : "each thread was blocked on the next, the last on the first");
		for (size_t j = 0; j < d->n; j++)
			member(r, &d->m[j], out);
	}
}
