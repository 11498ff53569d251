/* The SVG flame graph of a profile: the resolved stacks handed to the flame graph writer, each
 * frame coloured by what it is (program, library, unknown), with a "[NAME tid=N]" root per
 * thread under --per-thread. --thread keeps one thread's stacks. */
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
		int extra = (o->per_thread ? 1 : 0) + (s->n ? 0 : 1);
		struct wp_flame_frame *f = malloc((s->n + (size_t)extra) * sizeof(*f));
		if (!f)
			goto oom;
		frames[n] = f;
		int k = 0;
		if (o->per_thread) {
			const struct wp_thread *t = wp_resolved_thread(r, s->tid);
			if (asprintf(&roots[n], "[%s tid=%u]", t && t->name && *t->name ? t->name : "?",
				     s->tid) < 0) {
				roots[n] = NULL;
				goto oom;
			}
			f[k++] = (struct wp_flame_frame){ roots[n], WP_KIND_THREAD };
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
