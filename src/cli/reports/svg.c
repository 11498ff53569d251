/* SPDX-License-Identifier: MIT */
/* The SVG flame graph of a profile, or of the processes of a run: the resolved stacks handed
 * to the flame graph writer, each frame coloured by what it is (program, library, unknown),
 * with a "[PROGRAM pid=N]" root per process under --per-process and a "[NAME tid=N]" root
 * per thread under --per-thread (below its process's root with both), as in folded output.
 * --thread, --process keep some of the stacks.
 *
 * Wall mode is hot/cold (flame.h): a running sample's frames warm, a waiting sample's cool,
 * and a waiting sample the agent read a wait for ends with the wait as a leaf frame "[wait
 * KIND OBJECT]", then for a lock with a known holder "[held by NAME tid=N]" and the holder's
 * stack from the same tick, root first, in its own colour (the frames of folded --waits). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cli.h"
#include "deadlock_model.h"
#include "flame.h"

static const char *or(const char *v, const char *dflt)
{
	return v && *v ? v : dflt;
}

/* What the graph is built from: its stacks, their frame arrays and the frame names made here
 * (thread roots, wait frames), all freed together. */
struct build {
	struct wp_flame_stack *stacks;
	size_t n, cap;
	void **owned;
	size_t nowned, owned_cap;
};

static int own(struct build *b, void *p)
{
	if (!p)
		return -1;
	if (wp_grow(&b->owned, &b->owned_cap, b->nowned + 1, sizeof(*b->owned))) {
		free(p);
		return -1;
	}
	b->owned[b->nowned++] = p;
	return 0;
}

/* "[PREFIX NAME tid=N]", kept in b. */
static char *own_tid(struct build *b, const char *prefix, const char *name, unsigned tid)
{
	char *out;
	if (asprintf(&out, "[%s%s tid=%u]", prefix, name, tid) < 0)
		return NULL;
	return own(b, out) ? NULL : out;
}

/* Adds stack `s` (with `count` samples), then wait `w`'s frames when not NULL. */
static int add_stack(struct build *b, const struct wp_opts *o, const struct wp_resolved *r,
		     const struct wp_rstack *s, const struct wp_rwait *w, uint64_t count,
		     int hotcold)
{
	/* waiting: blocked, or the share that waited for a CPU (rwaits.h's one definition) */
	int waiting = (s->flags & WP_STACK_WAITING) || (w && w->kind == WP_WAIT_CPU);
	enum wp_flame_state st = hotcold && waiting ? WP_FLAME_WAITING : WP_FLAME_RUNNING;
	size_t extra = (o->per_process ? 1 : 0) + (o->per_thread ? 1 : 0) + (s->n ? 0 : 1) +
		       (w ? 2 + w->holder_n : 0);
	struct wp_flame_frame *f = malloc((s->n + extra) * sizeof(*f));
	if (own(b, f))
		return -1;
	int k = 0;
	if (o->per_process) {
		char prog[256], *root = NULL;
		if (asprintf(&root, "[%s pid=%ld]", wp_resolved_program(r, s->proc, prog, sizeof(prog)),
			     wp_resolved_pid(r, s->proc)) < 0 || own(b, root))
			return -1;
		f[k++] = (struct wp_flame_frame){ root, WP_KIND_THREAD, WP_FLAME_RUNNING };
	}
	if (o->per_thread) {
		const struct wp_thread *t = wp_resolved_thread_of(r, s->proc, s->tid);
		char *root = own_tid(b, "", t && t->name && *t->name ? t->name : "?",
				     s->tid);
		if (!root)
			return -1;
		f[k++] = (struct wp_flame_frame){ root, WP_KIND_THREAD, WP_FLAME_RUNNING };
	}
	if (!s->n)
		f[k++] = (struct wp_flame_frame){ "[no stack]", WP_KIND_UNKNOWN, st };
	for (uint32_t j = 0; j < s->n; j++) {
		const struct wp_func *fn = &r->funcs[s->frames[j].func];
		f[k++] = (struct wp_flame_frame){ fn->name, fn->kind, st };
	}
	if (w && !wp_rwait_adds_frame(r, s)) {
		f[k - 1].state = WP_FLAME_WAIT; /* the model's leaf is that frame already */
	} else if (w) {
		char name[WP_WAIT_LEAF_MAX], *wf;
		wp_wait_frame_name(w, name, sizeof(name));
		if (!(wf = strdup(name)) || own(b, wf))
			return -1;
		f[k++] = (struct wp_flame_frame){ wf, WP_KIND_UNKNOWN, WP_FLAME_WAIT };
	}
	if (w) {
		if (w->holder) {
			const struct wp_thread *t = wp_resolved_thread_of(r, s->proc, w->holder);
			char *hf = own_tid(b, "held by ",
					   t && t->name && *t->name ? t->name : "?", w->holder);
			if (!hf)
				return -1;
			f[k++] = (struct wp_flame_frame){ hf, WP_KIND_UNKNOWN, WP_FLAME_HELD_BY };
			for (uint32_t j = 0; j < w->holder_n; j++) {
				const struct wp_func *fn = &r->funcs[w->holder_frames[j].func];
				f[k++] = (struct wp_flame_frame){ fn->name, fn->kind, WP_FLAME_HOLDER };
			}
		}
	}
	if (wp_grow(&b->stacks, &b->cap, b->n + 1, sizeof(*b->stacks)))
		return -1;
	b->stacks[b->n++] = (struct wp_flame_stack){ f, k, count, 0 };
	return 0;
}

int wp_report_svg(const struct wp_opts *o, const struct wp_resolved *r,
		  const struct wp_summary *sum, FILE *out)
{
	const struct wp_profile *p = r->p;
	struct build b = { 0 };
	int rc = -1;
	int hotcold = !strcmp(or(p->info.mode, "wall"), "wall");
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (!s->count)
			continue;
		uint64_t rest = hotcold ? wp_rstack_unwaited(s) : s->count;
		for (uint32_t k = 0; hotcold && k < s->nwaits; k++) {
			uint64_t c = wp_rwait_samples(s, k);
			if (!c)
				continue;
			if (add_stack(&b, o, r, s, &s->waits[k], c, hotcold))
				goto oom;
		}
		if (rest && add_stack(&b, o, r, s, NULL, rest, hotcold))
			goto oom;
	}

	char title[512], sub[512];
	const char *cmd = or(p->info.command, "(command unknown)");
	snprintf(title, sizeof(title), "%.200s%s (%s time)", cmd, strlen(cmd) > 200 ? "..." : "",
		 or(p->info.mode, "wall"));
	char hz[24] = "?";
	if (p->info.hz)
		snprintf(hz, sizeof(hz), "%llu", (unsigned long long)p->info.hz);
	int sl = snprintf(sub, sizeof(sub), "wallprof: %llu samples at %s Hz over %.2f s",
			  (unsigned long long)sum->samples, hz, (double)sum->duration_ns / 1e9);
	if (r->nprocs > 1 && sl > 0 && (size_t)sl < sizeof(sub))
		sl += snprintf(sub + sl, sizeof(sub) - (size_t)sl, ", %zu profiles of one run",
			       r->nprocs);
	if (r->filter.process && sl > 0 && (size_t)sl < sizeof(sub))
		sl += snprintf(sub + sl, sizeof(sub) - (size_t)sl, ", process %s%s",
			       r->filter.process, r->filter.descendants ? " and its descendants" : "");
	if (r->filter.thread && sl > 0 && (size_t)sl < sizeof(sub))
		sl += snprintf(sub + sl, sizeof(sub) - (size_t)sl, ", thread %s", r->filter.thread);
	/* a deadlock first: the graph of a stuck program is mostly its waits */
	char dl[512], with_dl[sizeof(dl) + sizeof(sub) + 2];
	if (r->ndeadlocks) {
		wp_deadlock_line(&r->deadlocks[0], dl, sizeof(dl) - 40);
		if (r->ndeadlocks > 1)
			snprintf(dl + strlen(dl), 40, " (and %zu more)", r->ndeadlocks - 1);
		snprintf(with_dl, sizeof(with_dl), "%s. %s", dl, sub);
	}
	struct wp_flame_opts fo = { .title = title, .subtitle = r->ndeadlocks ? with_dl : sub,
				    .hotcold = hotcold };
	int e = wp_flame_write(out, b.stacks, b.n, &fo);
	if (e)
		fprintf(stderr, "wallprof: could not write the flame graph: %s\n", strerror(-e));
	rc = e ? -1 : 0;
	goto done;
oom:
	fprintf(stderr, "wallprof: out of memory\n");
done:
	for (size_t i = 0; i < b.nowned; i++)
		free(b.owned[i]);
	free(b.owned);
	free(b.stacks);
	return rc;
}
