/* The SVG flame graph of a profile, or of the processes of a run: the resolved stacks handed
 * to the flame graph writer, each frame coloured by what it is (program, library, unknown),
 * with a "[PROGRAM pid=N]" root per process under --per-process and a "[NAME tid=N]" root
 * per thread under --per-thread (below its process's root with both), as in folded output.
 * --thread, --process keep some of the stacks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "flame.h"

static const char *meta_or(const struct wp_profile *p, const char *key, const char *dflt)
{
	const char *v = wp_profile_meta(p, key);
	return v && *v ? v : dflt;
}

int wp_report_svg(const struct wp_opts *o, const struct wp_resolved *r,
		  const struct wp_summary *sum, FILE *out)
{
	const struct wp_profile *p = r->p;
	struct wp_flame_stack *stacks = calloc(r->nstacks + 1, sizeof(*stacks));
	struct wp_flame_frame **frames = calloc(r->nstacks + 1, sizeof(*frames));
	char **roots = calloc(r->nstacks + 1, sizeof(*roots));
	size_t n = 0;
	int rc = -1;
	if (!stacks || !frames || !roots)
		goto oom;
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct wp_rstack *s = &r->stacks[i];
		if (!s->count)
			continue;
		int extra = (o->per_process ? 1 : 0) + (o->per_thread ? 1 : 0) + (s->n ? 0 : 1);
		struct wp_flame_frame *f = malloc((s->n + (size_t)extra) * sizeof(*f));
		if (!f)
			goto oom;
		frames[n] = f;
		int k = 0;
		if (o->per_process || o->per_thread) {
			/* the roots' names in one string: "[prog pid=N]\0[thread tid=M]" */
			char pr[300] = "", th[300] = "", prog[256];
			const struct wp_thread *t = wp_resolved_thread_of(r, s->proc, s->tid);
			int lp = 0;
			if (o->per_process)
				lp = snprintf(pr, sizeof(pr), "[%s pid=%ld]",
					      wp_resolved_program(r, s->proc, prog, sizeof(prog)),
					      wp_resolved_pid(r, s->proc));
			if (o->per_thread)
				snprintf(th, sizeof(th), "[%s tid=%u]",
					 t && t->name && *t->name ? t->name : "?", s->tid);
			if (lp < 0 || lp >= (int)sizeof(pr))
				lp = (int)strlen(pr);
			size_t lt = strlen(th);
			if (!(roots[n] = malloc((size_t)lp + lt + 2)))
				goto oom;
			memcpy(roots[n], pr, (size_t)lp + 1);
			memcpy(roots[n] + lp + 1, th, lt + 1);
			if (o->per_process)
				f[k++] = (struct wp_flame_frame){ roots[n], WP_KIND_THREAD };
			if (o->per_thread)
				f[k++] = (struct wp_flame_frame){ roots[n] + lp + 1, WP_KIND_THREAD };
		}
		if (!s->n)
			f[k++] = (struct wp_flame_frame){ "[no stack]", WP_KIND_UNKNOWN };
		for (uint32_t j = 0; j < s->n; j++) {
			const struct wp_func *fn = &r->funcs[s->frames[j].func];
			f[k++] = (struct wp_flame_frame){ fn->name, fn->kind };
		}
		stacks[n] = (struct wp_flame_stack){ f, k, s->count, 0 };
		n++;
	}

	char title[512], sub[512];
	const char *cmd = meta_or(p, "command", "(command unknown)");
	snprintf(title, sizeof(title), "%.200s%s (%s time)", cmd, strlen(cmd) > 200 ? "..." : "",
		 meta_or(p, "mode", "wall"));
	int sl = snprintf(sub, sizeof(sub), "wallprof: %llu samples at %s Hz over %.2f s",
			  (unsigned long long)sum->samples, meta_or(p, "hz", "?"),
			  (double)sum->duration_ns / 1e9);
	if (r->nprocs > 1 && sl > 0 && (size_t)sl < sizeof(sub))
		sl += snprintf(sub + sl, sizeof(sub) - (size_t)sl, ", %zu profiles of one run",
			       r->nprocs);
	if (r->filter.process && sl > 0 && (size_t)sl < sizeof(sub))
		sl += snprintf(sub + sl, sizeof(sub) - (size_t)sl, ", process %s%s",
			       r->filter.process, r->filter.descendants ? " and its descendants" : "");
	if (r->filter.thread && sl > 0 && (size_t)sl < sizeof(sub))
		snprintf(sub + sl, sizeof(sub) - (size_t)sl, ", thread %s", r->filter.thread);
	struct wp_flame_opts fo = { .title = title, .subtitle = sub };
	int e = wp_flame_write(out, stacks, n, &fo);
	if (e)
		fprintf(stderr, "wallprof: could not write the flame graph: %s\n", strerror(-e));
	rc = e ? -1 : 0;
	goto done;
oom:
	fprintf(stderr, "wallprof: out of memory\n");
done:
	for (size_t i = 0; i < n + 1 && frames && roots; i++) {
		free(frames[i]);
		free(roots[i]);
	}
	free(frames);
	free(roots);
	free(stacks);
	return rc;
}
