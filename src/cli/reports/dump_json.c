/* SPDX-License-Identifier: MIT */
/* wallprof --dump --format=json (model/dump_model.h): the text's content for tools, in the
 * shape docs/profile-format.md documents ("The dump's JSON"), stable: keys are only ever
 * added. One object:
 *   {"wallprof_dump": 1, "pid", "command", "snapshot_ns", "stopped_ns", "bound_ns",
 *    "deadlocks": [{"threads": [{"tid", "name", "waits_for": {"kind", "object"},
 *                                "holder_tid", "holder_name", "waiter", "stack"}]}],
 *    "groups": [{"count", "threads": [{"tid", "name", "waited_ns", "queued_ns", "ran_ns"}],
 *                "state", "proc_state",
 *                "call", "wait": {"kind", "object", "holder_tid", "holder_name"} | null,
 *                "stack": [{"function", "file", "line", "module"}] (leaf first)}]}
 * waited_ns is null when unknown or when the thread does not wait; call null when none. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "deadlock_model.h"
#include "dump_model.h"
#include "textfmt.h"
#include "waits.h"

static const char *thread_name(const struct wp_resolved *r, uint32_t tid)
{
	const struct wp_thread *t = wp_profile_thread(r->p, tid);
	return t && t->name && *t->name ? t->name : "?";
}

static void frame(const struct wp_resolved *r, const struct wp_rframe *f, int first, FILE *out)
{
	const struct wp_func *fn = &r->funcs[f->func];
	fputs(first ? "{\"function\":" : ",{\"function\":", out);
	wp_json_str(out, fn->name);
	fputs(",\"file\":", out);
	if (f->file)
		wp_json_str(out, f->file);
	else
		fputs("null", out);
	fprintf(out, ",\"line\":%d,\"module\":", f->line);
	wp_json_str(out, fn->module ? fn->module : "?");
	fputc('}', out);
}

static void deadlocks(const struct wp_resolved *r, FILE *out)
{
	fputs("\"deadlocks\":[", out);
	for (size_t i = 0; i < r->ndeadlocks; i++) {
		const struct wp_deadlock *d = &r->deadlocks[i];
		fputs(i ? ",\n{\"threads\":[" : "\n{\"threads\":[", out);
		for (size_t j = 0; j < d->n; j++) {
			const struct wp_dl_member *m = &d->m[j];
			fprintf(out, "%s{\"tid\":%u,\"name\":", j ? "," : "", (unsigned)m->tid);
			wp_json_str(out, m->name);
			fputs(",\"waits_for\":{\"kind\":", out);
			wp_json_str(out, wp_wait_kind_name(m->kind));
			fputs(",\"object\":", out);
			wp_json_str(out, m->object);
			fprintf(out, "},\"holder_tid\":%u,\"holder_name\":", (unsigned)m->target);
			wp_json_str(out, m->target_name);
			fputs(",\"waiter\":", out);
			if (m->waiter)
				wp_json_str(out, m->waiter);
			else
				fputs("null", out);
			fputs(",\"stack\":[", out);
			for (uint32_t k = 0; k < m->nframes; k++)
				frame(r, &m->frames[k], k == 0, out);
			fputs("]}", out);
		}
		fputs("]}", out);
	}
	fputs("],\n", out);
}

static void wait(const struct wp_resolved *r, const struct wp_dump_thread *t, FILE *out)
{
	if (!t->wait) {
		fputs("null", out);
		return;
	}
	fputs("{\"kind\":", out);
	wp_json_str(out, wp_wait_kind_name(t->wait->kind));
	fputs(",\"object\":", out);
	wp_json_str(out, t->wait->object);
	if (t->wait->holder) {
		fprintf(out, ",\"holder_tid\":%u,\"holder_name\":", (unsigned)t->wait->holder);
		wp_json_str(out, thread_name(r, t->wait->holder));
	} else {
		fputs(",\"holder_tid\":null,\"holder_name\":null", out);
	}
	fputc('}', out);
}

static void group(const struct wp_resolved *r, const struct wp_dump *d,
		  const struct wp_dump_group *g, int first, FILE *out)
{
	const struct wp_dump_thread *t0 = &d->threads[g->members[0]];
	fprintf(out, "%s{\"count\":%zu,\"threads\":[", first ? "\n" : ",\n", g->n);
	for (size_t k = 0; k < g->n; k++) {
		const struct wp_dump_thread *t = &d->threads[g->members[k]];
		fprintf(out, "%s{\"tid\":%u,\"name\":", k ? "," : "", (unsigned)t->tid);
		wp_json_str(out, t->name);
		if (t->waited_ns >= 0)
			fprintf(out, ",\"waited_ns\":%lld", (long long)t->waited_ns);
		else
			fputs(",\"waited_ns\":null", out);
		fprintf(out, ",\"queued_ns\":%llu,\"ran_ns\":%llu}",
			(unsigned long long)t->queued_ns, (unsigned long long)t->ran_ns);
	}
	fputs("],\"state\":", out);
	wp_json_str(out, wp_dump_state_name(t0->state));
	fprintf(out, ",\"proc_state\":\"%c\",\"call\":", t0->letter > ' ' && t0->letter < 127 ?
		t0->letter : '?');
	if (t0->call)
		wp_json_str(out, t0->call);
	else
		fputs("null", out);
	fputs(",\"wait\":", out);
	wait(r, t0, out);
	fputs(",\"stack\":[", out);
	const struct wp_rstack *s = t0->stack;
	for (uint32_t j = 0; s && j < s->n; j++)
		frame(r, &s->frames[s->n - 1 - j], j == 0, out);
	fputs("]}", out);
}

int wp_report_dump_json(const struct wp_resolved *r, const struct wp_dump *d, FILE *out)
{
	fprintf(out, "{\"wallprof_dump\":1,\"pid\":%lld,\"command\":", d->pid);
	wp_json_str(out, d->command);
	fprintf(out, ",\"snapshot_ns\":%llu,\"stopped_ns\":%llu,\"bound_ns\":%llu,\n",
		(unsigned long long)d->snapshot_ns, (unsigned long long)d->stopped_ns,
		(unsigned long long)d->bound_ns);
	deadlocks(r, out);
	fputs("\"groups\":[", out);
	for (size_t g = 0; g < d->ngroups; g++)
		group(r, d, &d->groups[g], g == 0, out);
	fputs("]}\n", out);
	return ferror(out) ? -1 : 0;
}
