/* Loading a profile and dispatching to the report the user asked for. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

int wp_report(const struct wp_opts *o, const struct wp_profile *p, struct wp_resolved *r,
	      FILE *out)
{
	struct wp_opts local = *o;
	local.profile_for_filters = p;
	if (o->thread) {
		int any = 0;
		for (size_t i = 0; i < p->nthreads && !any; i++)
			any = wp_thread_matches(p, p->threads[i].tid, o->thread);
		if (!any) {
			fprintf(stderr, "wallprof: no thread named or numbered '%s' in this profile; "
					"`--per-thread` lists them\n", o->thread);
			return 1;
		}
	}
	int rc;
	switch (o->format) {
	case WP_FMT_FOLDED: rc = wp_report_folded(&local, r, out); break;
	case WP_FMT_TEXT: rc = wp_report_text(&local, p, r, out); break;
	case WP_FMT_CSV: rc = wp_report_csv(&local, r, out); break;
	case WP_FMT_SVG: rc = wp_report_svg(&local, p, r, out); break;
	case WP_FMT_PPROF: rc = wp_report_pprof(&local, p, r, out); break;
	case WP_FMT_SPEEDSCOPE: rc = wp_report_speedscope(&local, p, r, out); break;
	default: rc = -1;
	}
	if (fflush(out) != 0 || rc != 0) {
		fprintf(stderr, "wallprof: could not write the report: %s\n",
			ferror(out) ? strerror(errno) : "error");
		return 1;
	}
	return 0;
}

int wp_report_file(const struct wp_opts *o, const char *path, FILE *out)
{
	char err[256];
	struct wp_profile *p;
	if (wp_profile_read(path, &p, err, sizeof(err)) != 0) {
		fprintf(stderr, "wallprof: %s: %s\n", path, err);
		return 1;
	}
	struct wp_resolved *r = wp_resolve(p);
	if (!r) {
		wp_profile_free(p);
		return 1;
	}
	int rc = wp_report(o, p, r, out);
	wp_resolved_free(r);
	wp_profile_free(p);
	return rc;
}
