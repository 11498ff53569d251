/* Loading a profile, building its one model (symbolized and filtered, model/resolve.h) and
 * its figures (model/summary.h), and handing both to the report the user asked for; where
 * the report goes; the report at the end of a recorded run. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

struct wp_filter wp_opts_filter(const struct wp_opts *o)
{
	return (struct wp_filter){ .thread = o->thread };
}

typedef int report_fn(const struct wp_opts *, const struct wp_resolved *,
		      const struct wp_summary *, FILE *);

static report_fn *const reports[] = {
	[WP_FMT_TEXT] = wp_report_text,
	[WP_FMT_FOLDED] = wp_report_folded,
	[WP_FMT_SVG] = wp_report_svg,
	[WP_FMT_CSV] = wp_report_csv,
	[WP_FMT_PPROF] = wp_report_pprof,
	[WP_FMT_SPEEDSCOPE] = wp_report_speedscope,
};

int wp_report(const struct wp_opts *o, const struct wp_resolved *r, const struct wp_run *run,
	      FILE *out)
{
	if (r->filter.thread && !r->nthreads) {
		fprintf(stderr, "wallprof: no thread named or numbered '%s' in this profile; "
				"`--per-thread` lists them\n", r->filter.thread);
		return 1;
	}
	struct wp_summary s;
	wp_summarize(r->p, r, &s);
	s.run = run && (run->n > 1 || run->skipped) ? run : NULL;
	int rc = -1;
	if ((size_t)o->format < sizeof(reports) / sizeof(reports[0]) && reports[o->format])
		rc = reports[o->format](o, r, &s, out);
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
	/* the other processes of its run, for the header (their samples are in their files) */
	struct wp_run run;
	if (wp_run_find(path, p, stderr, &run) != 0) {
		wp_profile_free(p);
		return 1;
	}
	struct wp_filter f = wp_opts_filter(o);
	struct wp_resolved *r = wp_resolve(p, &f);
	if (!r) {
		wp_run_free(&run);
		wp_profile_free(p);
		return 1;
	}
	int rc = wp_report(o, r, &run, out);
	wp_resolved_free(r);
	wp_run_free(&run);
	wp_profile_free(p);
	return rc;
}

FILE *wp_open_report(const struct wp_opts *o)
{
	if (!o->report_out)
		return stdout;
	FILE *f = fopen(o->report_out, "w");
	if (!f)
		fprintf(stderr, "wallprof: cannot write %s: %s\n", o->report_out, strerror(errno));
	return f;
}

int wp_close_report(const struct wp_opts *o, FILE *f, int rc)
{
	if (f != stdout && fclose(f) != 0 && !rc) {
		fprintf(stderr, "wallprof: cannot write %s: %s\n", o->report_out, strerror(errno));
		return 1;
	}
	return rc;
}

/* Why a run left no profile, as far as its exit status tells. */
static void say_no_profile(const struct wp_opts *o, const char *path)
{
	int st = o->exit_status;
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
		fprintf(stderr, "wallprof: the program was killed by SIGKILL before its first "
				"checkpoint, so no profile was written (WALLPROF_CHECKPOINT sets the "
				"interval, 10 s by default)\n");
	else if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		fprintf(stderr, "wallprof: no profile: the command could not be run\n");
	else
		fprintf(stderr, "wallprof: the program left no profile at %s (it may have cleared "
				"LD_PRELOAD from its environment, or called _exit before the agent's "
				"first checkpoint)\n", path);
}

int wp_report_after_run(const struct wp_opts *o, const char *path)
{
	if (access(path, R_OK) != 0) {
		say_no_profile(o, path);
		wp_record_print_messages(stderr);
	} else {
		FILE *out = wp_open_report(o);
		if (out) {
			if (o->format != WP_FMT_TEXT)
				wp_record_print_messages(stderr); /* the text report shows them */
			/* A report that could not be written is said; the exit status stays the
			 * program's, as the shell would see it without wallprof. */
			wp_close_report(o, out, wp_report_file(o, path, out));
			if (!o->quiet)
				fprintf(stderr, "wallprof: profile saved to %s (wallprof --report %s)\n",
					path, path);
		}
	}
	return wp_exit_like(o->exit_status);
}
